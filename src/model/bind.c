/* Binding of weights by declaration: each hl_weight_decl of the model's
 * architecture (arch.h) is looked up under its tensor name, its shape
 * checked against the hyperparameters, its type against what the host
 * computes, and bound to its field (or, for a fused tensor, its parts to
 * their fields as views). */
#include <stdio.h>
#include <string.h>

#include "backend/ops.h"
#include "base/log.h"
#include "gguf/ggml_types.h"
#include "model/model.h"
#include "quant/quant.h"

static int64_t dim_size(const hl_hparams *hp, hl_dim d) {
    switch (d) {
    case HL_DIM_NONE: return 1;
    case HL_DIM_EMBD: return hp->n_embd;
    case HL_DIM_Q: return (int64_t)hp->n_head * hp->head_dim;
    case HL_DIM_KV: return (int64_t)hp->n_head_kv * hp->head_dim;
    case HL_DIM_HEAD: return hp->head_dim;
    case HL_DIM_FF: return hp->n_ff;
    case HL_DIM_VOCAB: return hp->n_vocab;
    case HL_DIM_CTX_TRAIN: return hp->n_ctx_train;
    case HL_DIM_ROT_HALF: return hp->rope.n_rot / 2;
    case HL_DIM_EXPERT: return hp->n_expert;
    case HL_DIM_TOKEN_TYPES: return hp->n_token_types;
    case HL_DIM_CLS_OUT: return hp->n_cls_out;
    case HL_DIM_PARTS: break;
    }
    return 0;
}

/* Whether the host computes weight t as the op it feeds uses it: the type
 * is one hearth dequantizes, and a matrix (stacked experts) has a matmul
 * (matmul_id) kernel. */
static bool host_computes(const hearth_model *m, const hl_tensor *t) {
    if (!hl_quant_get(t->type)) return false;
    const hl_tensor x = {.type = GGML_TYPE_F32, .ne = {t->ne[0], 1, 1, 1}};
    const hl_tensor y = {.type = GGML_TYPE_F32, .ne = {t->ne[1], 1, 1, 1}};
    const hl_tensor ids = {.type = GGML_TYPE_I32, .ne = {1, 1, 1, 1}};
    if (t->ne[2] > 1) return hl_supports_op(m->host, &(hl_op_desc){.op = HL_OP_MATMUL_ID, .t = {t, &x, &ids, &y}});
    if (t->ne[1] > 1) return hl_supports_op(m->host, &(hl_op_desc){.op = HL_OP_MATMUL, .t = {t, &x, &y}});
    return true;
}

/* Binds tensor `name` of shape ne into *t; a tensor the file lacks is an
 * error where `required`, else leaves *t as it is and sets *found false. A
 * declared vector (a norm's weight, a bias) must be F32; a matrix of one
 * row (a reranker's cls.output.weight {n_embd, 1}) may have any type. */
static hearth_status bind_tensor(hearth_model *m, const char *name, const int64_t ne[3], bool vector, bool required,
                                 hl_tensor *t, bool *found) {
    const gguf_tensor *gt = hl_gguf_find_tensor(m->gguf, name);
    *found = gt != NULL;
    if (!gt && !required) return HEARTH_OK;
    if (!gt)
        return hl_fail(HEARTH_ERR_FORMAT, "GGUF: tensor '%s' is missing: the file is incomplete or not a %s model",
                       name, m->arch->name);
    if (gt->ne[0] != ne[0] || gt->ne[1] != ne[1] || gt->ne[2] != ne[2] || gt->ne[3] != 1)
        return hl_fail(HEARTH_ERR_FORMAT,
                       "GGUF: tensor '%s' has shape {%lld, %lld, %lld, %lld}, expected {%lld, %lld, "
                       "%lld}",
                       name, (long long)gt->ne[0], (long long)gt->ne[1], (long long)gt->ne[2], (long long)gt->ne[3],
                       (long long)ne[0], (long long)ne[1], (long long)ne[2]);
    const ggml_type_info *ti = hl_ggml_type_get(gt->type);
    if (vector && gt->type != GGML_TYPE_F32)
        return hl_fail(HEARTH_ERR_UNSUPPORTED, "tensor '%s' is %s; hearth expects norm weights in F32", name, ti->name);
    const hl_tensor w = {
        .type = gt->type, .ne = {ne[0], ne[1], ne[2], 1}, .data = (void *)gt->data, .backend = m->host};
    if (!host_computes(m, &w))
        return hl_fail(HEARTH_ERR_UNSUPPORTED, "tensor '%s' has type %s, which hearth cannot compute yet", name,
                       ti->name);
    *t = w;
    return HEARTH_OK;
}

/* Binds declaration d into the fields of `base` (an hl_layer or the
 * model); il >= 0 names a block's tensor "blk.<il>.<name>". *bound says
 * whether the file had it. */
static hearth_status bind_decl(hearth_model *m, const hl_weight_decl *d, void *base, int32_t il, bool *bound) {
    const hl_hparams *hp = &m->hp;
    hl_tensor *field = (hl_tensor *)((uint8_t *)base + d->field[0]);
    *bound = false;
    if (((d->flags & HL_W_DENSE) && hp->n_expert > 0) || ((d->flags & HL_W_MOE) && hp->n_expert == 0) ||
        ((d->flags & HL_W_UNLESS_BOUND) && field->data))
        return HEARTH_OK;
    char name[96];
    if (il >= 0 && !(d->flags & HL_W_SHARED)) snprintf(name, sizeof name, "blk.%d.%s", (int)il, d->name);
    else snprintf(name, sizeof name, "%s", d->name);
    int64_t ne[3], parts[3] = {0}, total = 0;
    int n_parts = 0;
    for (; n_parts < 3 && d->part[n_parts] != HL_DIM_NONE; n_parts++)
        total += parts[n_parts] = dim_size(hp, d->part[n_parts]);
    for (int i = 0; i < 3; i++) ne[i] = d->ne[i] == HL_DIM_PARTS ? total : dim_size(hp, d->ne[i]);
    hl_tensor whole = {0};
    HL_TRY(bind_tensor(m, name, ne, d->ne[1] == HL_DIM_NONE, !(d->flags & HL_W_OPTIONAL), n_parts ? &whole : field,
                       bound));
    if (!*bound || n_parts == 0) return HEARTH_OK;
    /* views of the parts' rows (a vector's elements): whole quantization
     * blocks, so each is a weight of its own type */
    const int split = ne[1] == 1 ? 0 : 1;
    const size_t unit = hl_tensor_nbytes(&whole) / (size_t)total;
    int64_t at = 0;
    for (int i = 0; i < n_parts; i++) {
        hl_tensor *t = (hl_tensor *)((uint8_t *)base + d->field[i]);
        *t = whole;
        t->data = (uint8_t *)whole.data + (size_t)at * unit;
        t->ne[split] = parts[i];
        at += parts[i];
    }
    return HEARTH_OK;
}

/* Binds a list of declarations in order. */
static hearth_status bind_list(hearth_model *m, const hl_weight_decl *list, void *base, int32_t il) {
    bool prev = true;
    for (const hl_weight_decl *d = list; d && d->name; d++) {
        if ((d->flags & HL_W_WITH_PREV) && !prev) continue;
        hl_weight_decl with = *d;
        if ((d->flags & HL_W_WITH_PREV)) with.flags &= ~(unsigned)HL_W_OPTIONAL;
        HL_TRY(bind_decl(m, &with, base, il, &prev));
    }
    return HEARTH_OK;
}

hearth_status hl_model_bind(hearth_model *m) {
    HL_TRY(bind_list(m, m->arch->input, m, -1));
    HL_TRY(bind_list(m, m->arch->output, m, -1));
    m->layers = hl_calloc((size_t)m->hp.n_layer, sizeof *m->layers);
    if (!m->layers) return HEARTH_ERR_OUT_OF_MEMORY;
    for (int32_t il = 0; il < m->hp.n_layer; il++) HL_TRY(bind_list(m, m->arch->block, &m->layers[il], il));
    return HEARTH_OK;
}
