/* Inference context: the KV cache and every activation buffer, planned at
 * creation for n_ubatch tokens per pass, n_seq_max sequences and n_ctx
 * cells, on the host (CPU backend) and on each GPU the model's placement
 * uses (a compute instance per device, holding the KV cache of that
 * device's layers). The plan (plan_work, hl_context_plan_dev) is the one
 * code that sizes both what creation allocates and what
 * hearth_context_memory_plan() reports (context_memory.c). Decoding and the
 * sequence calls are in batch.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/host.h"
#include "backend/ops.h"
#include "base/log.h"
#include "gguf/ggml_types.h"
#include "runtime/context_impl.h"

#define MAX_SEQ 256
#define GEMM_SCRATCH_CAP ((size_t)64 << 20) /* bytes of F16 weight tiles for GPU prompt matmuls */
#define MIB(b) ((double)(b) / (1 << 20))

hearth_context_params hearth_context_default_params(void) {
    return (hearth_context_params){.n_ctx = 0,
                                   .n_batch = 512,
                                   .n_threads = 0,
                                   .n_seq_max = 1,
                                   .flash_attn = HEARTH_FLASH_ATTN_AUTO,
                                   .n_ubatch = 512,
                                   .rope_scaling_type = HEARTH_ROPE_SCALING_UNSPECIFIED,
                                   .yarn_ext_factor = -1.0f,
                                   .yarn_attn_factor = -1.0f,
                                   .yarn_beta_fast = -1.0f,
                                   .yarn_beta_slow = -1.0f,
                                   .type_k = HEARTH_KV_F16,
                                   .type_v = HEARTH_KV_F16,
                                   .embeddings = false,
                                   .pooling_type = HEARTH_POOLING_UNSPECIFIED,
                                   .embd_normalize = true};
}

#define KV_TYPE_NAMES "f16, bf16, q8_0 or q4_0"

const char *hearth_kv_type_name(int32_t type) { return hl_kv_type_name(type); }

hearth_status hearth_kv_type_from_name(const char *name, int32_t *out) {
    hl_clear_error();
    if (!name || !out) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_kv_type_from_name: name or out is NULL");
    for (int k = 0; hl_kv_type_at(k) >= 0; k++)
        if (!strcmp(hl_kv_type_name(hl_kv_type_at(k)), name)) {
            *out = hl_kv_type_at(k);
            return HEARTH_OK;
        }
    return hl_fail(HEARTH_ERR_INVALID_ARG, "KV cache type \"%s\" is not one hearth has: use " KV_TYPE_NAMES, name);
}

/* Checks type_k or type_v (`which`) of a model with heads of head_dim. */
static hearth_status check_kv_type(const char *which, int32_t type, int32_t head_dim) {
    const char *name = hearth_kv_type_name(type);
    if (!name)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "%s %d is not a KV cache type: use %s (hearth_kv_type)", which,
                       (int)type, KV_TYPE_NAMES);
    const int64_t block = hl_ggml_type_get((uint32_t)type)->blck_size;
    if (head_dim % block)
        return hl_fail(HEARTH_ERR_INVALID_ARG,
                       "%s %s stores blocks of %lld elements and the model's heads have %d: "
                       "use f16 or bf16",
                       which, name, (long long)block, (int)head_dim);
    return HEARTH_OK;
}

/* Lays out F32 activations for n_ubatch tokens and the KV cache (types
 * c->type_k, c->type_v) of the layers on device `dev` (-1: host) in one
 * block at base, views in *w (or, with w NULL, only counts the bytes).
 * Returns the bytes used; *kv_bytes gets the KV cache's share. */
static size_t plan_work(const hearth_context *c, int dev, uint8_t *base, hl_work *w, size_t *kv_bytes) {
    const hl_hparams *hp = &c->model->hp;
    const int8_t *layer_dev = c->model->layer_dev;
    const uint32_t n_ubatch = c->params.n_ubatch, n_ctx = c->params.n_ctx;
    size_t off = 0;
    const int64_t kv_dim = (int64_t)hp->n_head_kv * hp->head_dim;
    const hl_work_widths wd = {.n_embd = hp->n_embd,
                               .q_dim = (int64_t)hp->n_head * hp->head_dim,
                               .kv_dim = kv_dim,
                               .n_ff = hp->n_ff,
                               .n_expert = hp->n_expert,
                               .n_expert_used = hp->n_expert_used,
                               .ff_exp = (int64_t)hp->n_ff * hp->n_expert_used,
                               .embd_exp = (int64_t)hp->n_embd * hp->n_expert_used};
/* n rows of d floats; each pass sets ne[1] to its tokens, and the checked
 * calls hold it to the planned capacity */
#define ACT(field, d, n)                                                                                               \
    do {                                                                                                               \
        const size_t bytes_ = (size_t)(d) * (size_t)(n) * sizeof(float);                                               \
        if (w)                                                                                                         \
            w->field = (hl_tensor){                                                                                    \
                .type = GGML_TYPE_F32, .ne = {(d), (n), 1, 1}, .data = base ? base + off : NULL, .capacity = bytes_};  \
        off += (bytes_ + 63) & ~(size_t)63;                                                                            \
    } while (0)
#define ACT_TOKENS(field, width) ACT(field, wd.width, n_ubatch);
    HL_WORK_ACTIVATIONS(ACT_TOKENS)
#undef ACT_TOKENS
    if (w) w->moe_ids.type = GGML_TYPE_I32; /* the experts each token is routed to */
    ACT(last, hp->n_embd, c->n_out_max);
    ACT(logits, hp->n_vocab, c->params.embeddings ? 0 : c->n_out_max);
#undef ACT
    const size_t act_bytes = off;
    for (int32_t il = 0; il < hp->n_layer; il++) {
        if (layer_dev[il] != dev) continue;
        for (int kv = 0; kv < 2; kv++) {
            const hl_tensor cache = {
                .type = kv ? c->type_v : c->type_k, .ne = {kv_dim, n_ctx, 1, 1}, .data = base ? base + off : NULL};
            if (w) (kv ? w->v_cache : w->k_cache)[il] = cache;
            off += (hl_tensor_nbytes(&cache) + 63) & ~(size_t)63;
        }
    }
    *kv_bytes = off - act_bytes;
    return off;
}

/* An embeddings context: every token of a batch is an output, and the
 * pooling resolved from the model's. */
static hearth_status resolve_embeddings(hearth_context *c, hearth_context_params *p) {
    if (p->pooling_type < HEARTH_POOLING_UNSPECIFIED || p->pooling_type > HEARTH_POOLING_RANK)
        return hl_fail(HEARTH_ERR_INVALID_ARG,
                       "pooling_type %d is not a hearth_pooling_type (-1 the model's, 0 none, "
                       "1 mean, 2 cls, 3 last, 4 rank)",
                       (int)p->pooling_type);
    if (!p->embeddings) {
        if (!hearth_model_can_generate(c->model))
            return hl_fail(HEARTH_ERR_INVALID_ARG,
                           "%s is an embedding model: it has no output layer and cannot "
                           "generate text; create the context with embeddings",
                           c->model->desc);
        return HEARTH_OK;
    }
    if (p->pooling_type == HEARTH_POOLING_UNSPECIFIED) p->pooling_type = c->model->hp.pooling_type;
    if (p->pooling_type == HEARTH_POOLING_RANK && c->model->hp.n_cls_out == 0)
        return hl_fail(HEARTH_ERR_INVALID_ARG,
                       "pooling rank needs a reranker: %s has no classification head (cls.weight, "
                       "cls.output.weight) to score with; use mean, cls or last for embeddings",
                       c->model->desc);
    c->n_out_max = p->n_batch;
    return HEARTH_OK;
}

hearth_status hl_context_resolve(hearth_context *c, const hearth_context_params *in) {
    const hearth_model *m = c->model;
    hearth_context_params *p = &c->params;
    *p = in ? *in : hearth_context_default_params();
    if (p->n_threads < 0) return hl_fail(HEARTH_ERR_INVALID_ARG, "n_threads must be >= 0 (got %d)", (int)p->n_threads);
    if (p->n_batch == 0) return hl_fail(HEARTH_ERR_INVALID_ARG, "n_batch must be >= 1");
    if (p->n_seq_max == 0) p->n_seq_max = 1;
    if (p->flash_attn < HEARTH_FLASH_ATTN_AUTO || p->flash_attn > HEARTH_FLASH_ATTN_ON)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "flash_attn %d is not a hearth_flash_attn (-1 auto, 0 off, 1 on)",
                       (int)p->flash_attn);
    if (p->flash_attn == HEARTH_FLASH_ATTN_AUTO) p->flash_attn = HEARTH_FLASH_ATTN_ON;
    if (p->n_seq_max > MAX_SEQ)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "n_seq_max %u is too large (at most %d)", p->n_seq_max, MAX_SEQ);
    if (p->n_threads == 0) p->n_threads = hearth_cpu_physical_cores();
    if (p->n_ctx == 0) p->n_ctx = hl_default_n_ctx(&m->hp) * p->n_seq_max;
    if (p->n_ctx > (1u << 24)) return hl_fail(HEARTH_ERR_INVALID_ARG, "n_ctx %u is too large (at most 16M)", p->n_ctx);
    c->n_ctx_seq = p->n_ctx / p->n_seq_max;
    if (c->n_ctx_seq == 0)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "n_ctx %u cannot give each of %u sequences a cell: raise n_ctx",
                       p->n_ctx, p->n_seq_max);
    p->n_ctx = c->n_ctx_seq * p->n_seq_max;
    if (p->n_batch > p->n_ctx) p->n_batch = p->n_ctx;
    if (p->n_ubatch == 0 || p->n_ubatch > p->n_batch) p->n_ubatch = p->n_batch; /* llama.cpp's rule */
    c->n_out_max = p->n_seq_max < p->n_batch ? p->n_seq_max : p->n_batch;
    HL_TRY(resolve_embeddings(c, p));
    HL_TRY(check_kv_type("type_k", p->type_k, m->hp.head_dim));
    HL_TRY(check_kv_type("type_v", p->type_v, m->hp.head_dim));
    if (p->flash_attn == HEARTH_FLASH_ATTN_OFF && hl_ggml_type_get((uint32_t)p->type_v)->blck_size > 1)
        return hl_fail(HEARTH_ERR_INVALID_ARG,
                       "a quantized V cache (type_v %s) needs flash_attn on or auto, as in "
                       "llama.cpp: use type_v f16 or bf16 with flash_attn off",
                       hearth_kv_type_name(p->type_v));
    c->type_k = (uint32_t)p->type_k;
    c->type_v = (uint32_t)p->type_v;
    return hl_rope_resolve(&m->hp, p, &c->rope, &c->rope_swa);
}

/* Longest matmul input row: the CPU and GPU scratch hold activations this long. */
static int64_t max_row(const hl_hparams *hp) {
    int64_t r = hp->n_embd > hp->n_ff ? hp->n_embd : hp->n_ff;
    return (int64_t)hp->n_head * hp->head_dim > r ? (int64_t)hp->n_head * hp->head_dim : r;
}

/* Elements of the largest weight matrix on device d. */
static int64_t max_matrix(const hearth_model *m, int d) {
    int64_t best = m->output_dev == d ? m->output.ne[0] * m->output.ne[1] : 0;
    for (int32_t il = 0; il < m->hp.n_layer; il++) {
        if (m->layer_dev[il] != d) continue;
        const hl_layer *l = &m->layers[il];
#define BIGGEST(name)                                                                                                  \
    if (l->name.data && l->name.ne[1] > 1 && l->name.ne[0] * l->name.ne[1] > best) best = l->name.ne[0] * l->name.ne[1];
        HL_LAYER_TENSORS(BIGGEST)
#undef BIGGEST
    }
    return best;
}

/* The scratch of the host's compute instance. */
static hl_cpu_limits host_limits(const hearth_context *c) {
    return (hl_cpu_limits){.n_threads = c->params.n_threads,
                           .max_tokens = c->params.n_ubatch,
                           .max_row = max_row(&c->model->hp),
                           .n_ctx = c->params.n_ctx,
                           .flash_attn = c->params.flash_attn == HEARTH_FLASH_ATTN_ON};
}

/* The scratch of GPU d's compute instance; *bytes gets its size. */
static hl_gpu_limits gpu_limits(const hearth_context *c, int d, size_t *bytes) {
    const hl_hparams *hp = &c->model->hp;
    size_t gemm = (size_t)max_matrix(c->model, d) * 2;
    if (gemm > GEMM_SCRATCH_CAP) gemm = GEMM_SCRATCH_CAP;
    if (gemm < (size_t)max_row(hp) * 2) gemm = (size_t)max_row(hp) * 2;
    *bytes = gemm + (size_t)c->params.n_ubatch * ((size_t)max_row(hp) * 2 + sizeof(int32_t));
    return (hl_gpu_limits){.max_tokens = c->params.n_ubatch, .max_row = max_row(hp), .gemm_scratch_bytes = gemm};
}

void hl_context_plan_dev(const hearth_context *c, int dev, hl_ctx_plan_dev *out) {
    size_t kv = 0;
    out->arena = plan_work(c, dev, NULL, NULL, &kv);
    out->kv = kv;
    if (dev < 0) {
        const hl_cpu_limits limits = host_limits(c);
        out->scratch = hl_cpu_scratch_bytes(&limits);
    } else {
        gpu_limits(c, dev, &out->scratch);
    }
}

/* UNSUPPORTED unless GPU backend b stores and attends over caches of the
 * context's types (placement, at load, asked about F16 ones). */
static hearth_status check_gpu_cache(const hearth_context *c, const hl_backend *b) {
    const hl_hparams *hp = &c->model->hp;
    const int64_t q_dim = (int64_t)hp->n_head * hp->head_dim, kv_dim = (int64_t)hp->n_head_kv * hp->head_dim;
    const hl_tensor q = {.type = GGML_TYPE_F32, .ne = {q_dim, 1, 1, 1}},
                    k = {.type = GGML_TYPE_F32, .ne = {kv_dim, 1, 1, 1}};
    const hl_tensor kc = {.type = c->type_k, .ne = {kv_dim, 1, 1, 1}},
                    vc = {.type = c->type_v, .ne = {kv_dim, 1, 1, 1}};
    hl_tensor out = q;
    const hl_attn_args a = {.q = &q,
                            .k_cache = &kc,
                            .v_cache = &vc,
                            .out = &out,
                            .n_head = hp->n_head,
                            .n_head_kv = hp->n_head_kv,
                            .head_dim = hp->head_dim,
                            .scale = hp->attn_scale};
    const hl_op_desc ops[] = {{.op = HL_OP_STORE_ROWS, .t = {&k, &kc}},
                              {.op = HL_OP_STORE_ROWS, .t = {&k, &vc}},
                              {.op = HL_OP_ATTENTION, .t = {&q, &kc, &vc, &out}, .attn = &a}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!hl_supports_op(b, &ops[i]))
            return hl_fail(HEARTH_ERR_UNSUPPORTED,
                           "%s has no %s kernel for a %s K / %s V cache: use type_k and type_v "
                           "f16 (-ctk f16 -ctv f16) with GPU layers, or n_gpu_layers 0",
                           hl_backend_name(b), hl_op_name(ops[i].op), hearth_kv_type_name((int32_t)c->type_k),
                           hearth_kv_type_name((int32_t)c->type_v));
    return HEARTH_OK;
}

/* What every work area of the context (the host's, each GPU's) reads of
 * it: the KV cache tensors and the rope the context resolved. */
static void share_context(const hearth_context *c, hl_work *w) {
    w->k_cache = c->k_cache;
    w->v_cache = c->v_cache;
    w->rope = c->rope;
    w->rope_swa = c->rope_swa;
    w->rope_long = hl_rope_long_factors(&c->model->hp, c->n_ctx_seq);
}

/* The compute instance and buffers of GPU d; checks the device's free
 * memory first so that a context too large for it fails with the figures. */
static hearth_status init_gpu(hearth_context *c, int d, size_t *kv_total) {
    const hearth_model *m = c->model;
    hl_work *w = &c->gpu_work[d];
    share_context(c, w);
    hl_ctx_plan_dev plan;
    hl_context_plan_dev(c, d, &plan);
    size_t scratch;
    const hl_gpu_limits limits = gpu_limits(c, d, &scratch);
    hl_gpu_device dev;
    HL_TRY(hl_gpu_device_get(m->gpu_id[d], &dev));
    if (plan.arena + scratch > dev.free_bytes)
        return hl_fail(HEARTH_ERR_OUT_OF_MEMORY,
                       "the context needs %.0f MiB on %s (%.0f MiB KV cache, %.0f MiB "
                       "buffers), %.0f MiB free: lower n_gpu_layers, n_ctx or n_ubatch",
                       MIB(plan.arena + scratch), dev.id, MIB(plan.kv), MIB(plan.arena + scratch - plan.kv),
                       MIB(dev.free_bytes));
    HL_TRY(hl_gpu_backend_init(m->gpu_id[d], &limits, &c->gpu[d]));
    if (plan.kv > 0) HL_TRY(check_gpu_cache(c, c->gpu[d])); /* a device with only the output layer keeps no cache */
    HL_TRY(hl_buffer_alloc(c->gpu[d], plan.arena, &c->gpu_arena[d]));
    size_t kv;
    plan_work(c, d, c->gpu_arena[d], w, &kv);
    *kv_total += kv;
    return HEARTH_OK;
}

static hearth_status init(hearth_context *c) {
    const hearth_model *m = c->model;
    const hl_hparams *hp = &m->hp;
    hl_work *w = &c->work;
    c->k_cache = hl_calloc((size_t)hp->n_layer, sizeof *c->k_cache);
    c->v_cache = hl_calloc((size_t)hp->n_layer, sizeof *c->v_cache);
    c->seq_len = hl_calloc(c->params.n_seq_max, sizeof *c->seq_len);
    /* a batch's layout, n_batch tokens, planned whole before its n_ubatch passes run */
    c->pos = hl_calloc(c->params.n_batch, sizeof *c->pos);
    c->row0 = hl_calloc(c->params.n_batch, sizeof *c->row0);
    c->out_row = hl_calloc(c->params.n_batch, sizeof *c->out_row);
    c->out = hl_calloc(c->n_out_max, sizeof *c->out);
    if (!c->k_cache || !c->v_cache || !c->seq_len || !c->pos || !c->row0 || !c->out_row || !c->out)
        return HEARTH_ERR_OUT_OF_MEMORY;
    if (c->params.embeddings) {
        /* a vector per sequence, n_embd floats or a reranker's n_cls_out where
         * that is more (embeddings.c's stride), and under pooling RANK
         * 2 * n_embd floats of scratch for the classification head */
        const hl_hparams *hp = &c->model->hp;
        const size_t stride = (size_t)(hp->n_cls_out > hp->n_embd ? hp->n_cls_out : hp->n_embd);
        const size_t scratch = c->params.pooling_type == HEARTH_POOLING_RANK ? 2 * (size_t)hp->n_embd : 0;
        c->embd_seq = hl_calloc((size_t)c->params.n_seq_max * stride + scratch, sizeof *c->embd_seq);
        c->embd_seq_ok = hl_calloc(c->params.n_seq_max, sizeof *c->embd_seq_ok);
        if (!c->embd_seq || !c->embd_seq_ok) return HEARTH_ERR_OUT_OF_MEMORY;
    }
    c->last_row = -1;
    share_context(c, w);
    size_t kv_host = 0, kv_gpu = 0;
    hl_ctx_plan_dev plan;
    hl_context_plan_dev(c, -1, &plan);
    const size_t bytes = plan.arena;
    HL_TRY(hl_context_check_host(c, &plan));
    const hl_cpu_limits limits = host_limits(c);
    HL_TRY(hl_backend_cpu_init(&limits, &c->backend));
    if (hl_buffer_alloc(c->backend, bytes, &c->arena) != HEARTH_OK)
        return hl_fail(
            HEARTH_ERR_OUT_OF_MEMORY,
            "context needs %zu MiB (KV cache and buffers) and the allocation failed: lower n_ctx or n_ubatch",
            bytes >> 20);
    plan_work(c, -1, c->arena, w, &kv_host);
    char devices[HL_MAX_GPUS * 26] = "";
    for (int d = 0, len = 0; d < HL_MAX_GPUS; d++) {
        if (!m->gpu[d]) continue;
        HL_TRY(init_gpu(c, d, &kv_gpu));
        len += snprintf(devices + len, sizeof devices - (size_t)len, "%s%s", len ? ", " : "",
                        hl_backend_name(c->gpu[d]));
    }
    if (m->n_gpu_layers > 0)
        HL_INFO("offloaded %d/%d layers to %s (%.1f MiB weights, %.1f MiB KV)", (int)m->n_gpu_layers,
                (int)hp->n_layer + 1, devices, MIB(m->gpu_bytes), MIB(kv_gpu));
    hl_pipeline_init(m, c->backend, &c->work, c->gpu, c->gpu_work, &c->pipe);
    if (c->n_ctx_seq > (uint32_t)hp->n_ctx_train)
        HL_WARN("n_ctx %u per sequence is larger than the %d tokens the model was trained on; quality may drop past it",
                c->n_ctx_seq, (int)hp->n_ctx_train);
    HL_INFO("context: n_ctx %u (%u sequences of %u), n_batch %u, n_ubatch %u, n_threads %d, flash_attn %s, KV cache "
            "%s/%s, %.1f MiB of buffers and KV cache",
            c->params.n_ctx, c->params.n_seq_max, c->n_ctx_seq, c->params.n_batch, c->params.n_ubatch,
            (int)c->params.n_threads, c->params.flash_attn == HEARTH_FLASH_ATTN_ON ? "on" : "off",
            hearth_kv_type_name((int32_t)c->type_k), hearth_kv_type_name((int32_t)c->type_v), MIB(bytes));
    return HEARTH_OK;
}

hearth_status hearth_context_init(hearth_model *model, const hearth_context_params *params, hearth_context **out) {
    hl_clear_error();
    if (!out) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_context_init: out is NULL");
    *out = NULL;
    if (!model) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_context_init: model is NULL");
    if (!model->layers)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "the model was loaded with vocab_only: it has no weights to run");
    hearth_context *c = hl_calloc(1, sizeof *c);
    if (!c) return HEARTH_ERR_OUT_OF_MEMORY;
    c->model = model;
    hearth_status st = hl_context_resolve(c, params);
    if (st == HEARTH_OK) st = init(c);
    if (st != HEARTH_OK) {
        hearth_context_free(c);
        return st;
    }
    *out = c;
    return HEARTH_OK;
}

void hearth_context_free(hearth_context *c) {
    if (!c) return;
    for (int d = 0; d < HL_MAX_GPUS; d++) {
        if (!c->gpu[d]) continue;
        hl_buffer_free(c->gpu[d], c->gpu_arena[d]);
        hl_gpu_backend_free(c->gpu[d]);
    }
    if (c->backend) {
        hl_buffer_free(c->backend, c->arena);
        hl_backend_cpu_free(c->backend);
    }
    free(c->k_cache);
    free(c->v_cache);
    free(c->seq_len);
    free(c->pos);
    free(c->row0);
    free(c->out_row);
    free(c->out);
    free(c->embd_seq);
    free(c->embd_seq_ok);
    free(c);
}
