/* The llama architecture (Touvron et al. 2023, arXiv:2302.13971), as laid out
 * in GGUF by llama.cpp: pre-norm blocks with RMSNorm, rotary position
 * embeddings (normal mode), grouped-query attention and a SwiGLU feed-forward;
 * the output matrix may be tied to the token embeddings. Also covers
 * Mistral-style files, which use the same names. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/model.h"

#define MAX_LAYERS 4096
#define MAX_HEAD_DIM 512 /* the CPU attention keeps one head on the stack */

static hearth_status get_u32(const gguf_file *f, const char *key, bool required, int32_t *out) {
    uint32_t v = (uint32_t)*out;
    HL_TRY(gguf_get_u32(f, key, required, &v));
    if (v > INT32_MAX) return hl_fail(HEARTH_ERR_FORMAT, "GGUF: '%s' = %u is too large", key, v);
    *out = (int32_t)v;
    return HEARTH_OK;
}

static hearth_status read_rope_scaling(const gguf_file *f, hl_rope_params *rope) {
    gguf_str type = {"none", 4};
    HL_TRY(gguf_get_str(f, "llama.rope.scaling.type", false, &type));
    float factor = 1.0f;
    HL_TRY(gguf_get_f32(f, "llama.rope.scaling.factor", false, &factor));
    if (gguf_str_eq(type, "none") || factor == 1.0f || factor == 0.0f) return HEARTH_OK;
    if (!gguf_str_eq(type, "linear"))
        return hl_fail(HEARTH_ERR_UNSUPPORTED, "rope scaling type '%.*s' is not supported yet (supported: none, linear)",
                       (int)(type.len > 32 ? 32 : type.len), type.data);
    if (!(factor > 0.0f) || !isfinite(factor))
        return hl_fail(HEARTH_ERR_FORMAT, "GGUF: llama.rope.scaling.factor = %g must be > 0", factor);
    rope->freq_scale = 1.0f / factor;
    return HEARTH_OK;
}

static hearth_status read_hparams(const gguf_file *f, hl_hparams *hp) {
    HL_TRY(get_u32(f, "llama.context_length", true, &hp->n_ctx_train));
    HL_TRY(get_u32(f, "llama.embedding_length", true, &hp->n_embd));
    HL_TRY(get_u32(f, "llama.block_count", true, &hp->n_layer));
    HL_TRY(get_u32(f, "llama.feed_forward_length", true, &hp->n_ff));
    HL_TRY(get_u32(f, "llama.attention.head_count", true, &hp->n_head));
    hp->n_head_kv = hp->n_head;
    HL_TRY(get_u32(f, "llama.attention.head_count_kv", false, &hp->n_head_kv));
    hp->norm_eps = 1e-5f;
    hp->embd_scale = 1.0f;
    HL_TRY(gguf_get_f32(f, "llama.attention.layer_norm_rms_epsilon", false, &hp->norm_eps));

    if (hp->n_embd < 1 || hp->n_layer < 1 || hp->n_layer > MAX_LAYERS || hp->n_ff < 1 || hp->n_head < 1 ||
        hp->n_head_kv < 1 || hp->n_ctx_train < 1)
        return hl_fail(HEARTH_ERR_FORMAT,
                       "GGUF: llama hyperparameters out of range (n_embd %d, n_layer %d, n_ff %d, n_head %d, "
                       "n_head_kv %d, context_length %d)",
                       hp->n_embd, hp->n_layer, hp->n_ff, hp->n_head, hp->n_head_kv, hp->n_ctx_train);
    if (hp->n_embd % hp->n_head || hp->n_head % hp->n_head_kv)
        return hl_fail(HEARTH_ERR_FORMAT, "GGUF: n_embd %d must divide by n_head %d, and n_head by n_head_kv %d",
                       hp->n_embd, hp->n_head, hp->n_head_kv);
    /* both default to n_embd / n_head, as in llama.cpp */
    hp->head_dim = hp->n_embd / hp->n_head;
    int32_t v_dim = hp->head_dim;
    HL_TRY(get_u32(f, "llama.attention.key_length", false, &hp->head_dim));
    HL_TRY(get_u32(f, "llama.attention.value_length", false, &v_dim));
    if (hp->head_dim < 2 || hp->head_dim > MAX_HEAD_DIM || hp->head_dim % 2 || v_dim != hp->head_dim)
        return hl_fail(HEARTH_ERR_UNSUPPORTED, "head size %d (keys) / %d (values) is not supported (even, 2..%d, equal)",
                       hp->head_dim, v_dim, MAX_HEAD_DIM);
    if (!(hp->norm_eps > 0.0f) || !isfinite(hp->norm_eps))
        return hl_fail(HEARTH_ERR_FORMAT, "GGUF: llama.attention.layer_norm_rms_epsilon = %g must be > 0", hp->norm_eps);

    hp->rope = (hl_rope_params){.n_rot = hp->head_dim, .mode = HL_ROPE_NORMAL, .freq_base = 10000.0f, .freq_scale = 1.0f};
    HL_TRY(get_u32(f, "llama.rope.dimension_count", false, &hp->rope.n_rot));
    HL_TRY(gguf_get_f32(f, "llama.rope.freq_base", false, &hp->rope.freq_base));
    if (hp->rope.n_rot < 2 || hp->rope.n_rot > hp->head_dim || hp->rope.n_rot % 2)
        return hl_fail(HEARTH_ERR_FORMAT, "GGUF: llama.rope.dimension_count = %d must be even and in 2..%d",
                       hp->rope.n_rot, hp->head_dim);
    if (!(hp->rope.freq_base > 0.0f) || !isfinite(hp->rope.freq_base))
        return hl_fail(HEARTH_ERR_FORMAT, "GGUF: llama.rope.freq_base = %g must be > 0", hp->rope.freq_base);
    return read_rope_scaling(f, &hp->rope);
}

static hearth_status bind_layer(hearth_model *m, int32_t il, hl_layer *l) {
    const hl_hparams *hp = &m->hp;
    const int64_t q_dim = (int64_t)hp->n_head * hp->head_dim, kv_dim = (int64_t)hp->n_head_kv * hp->head_dim;
    char name[96];
#define BIND(field, suffix, ne0, ne1)                                                                   \
    do {                                                                                                \
        snprintf(name, sizeof name, "blk.%d.%s.weight", (int)il, suffix);                               \
        HL_TRY(hl_model_tensor(m, name, ne0, ne1, &l->field));                                          \
    } while (0)
    BIND(attn_norm, "attn_norm", hp->n_embd, 1);
    BIND(wq, "attn_q", hp->n_embd, q_dim);
    BIND(wk, "attn_k", hp->n_embd, kv_dim);
    BIND(wv, "attn_v", hp->n_embd, kv_dim);
    BIND(wo, "attn_output", q_dim, hp->n_embd);
    BIND(ffn_norm, "ffn_norm", hp->n_embd, 1);
    BIND(ffn_gate, "ffn_gate", hp->n_embd, hp->n_ff);
    BIND(ffn_up, "ffn_up", hp->n_embd, hp->n_ff);
    BIND(ffn_down, "ffn_down", hp->n_ff, hp->n_embd);
#undef BIND
    return HEARTH_OK;
}

static hearth_status llama_load(hearth_model *m) {
    hl_hparams *hp = &m->hp;
    HL_TRY(read_hparams(m->gguf, hp));
    hp->n_vocab = hl_vocab_n_tokens(m->vocab);
    HL_TRY(hl_model_tensor(m, "token_embd.weight", hp->n_embd, hp->n_vocab, &m->tok_embd));
    HL_TRY(hl_model_tensor(m, "output_norm.weight", hp->n_embd, 1, &m->output_norm));
    if (gguf_find_tensor(m->gguf, "output.weight"))
        HL_TRY(hl_model_tensor(m, "output.weight", hp->n_embd, hp->n_vocab, &m->output));
    else
        m->output = m->tok_embd; /* tied embeddings */
    m->layers = hl_calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (!m->layers) return HEARTH_ERR_OUT_OF_MEMORY;
    for (int32_t il = 0; il < hp->n_layer; il++) HL_TRY(bind_layer(m, il, &m->layers[il]));
    return HEARTH_OK;
}

static void llama_layer(const hearth_model *m, hl_backend *b, hl_work *w, int32_t il, int32_t pos0) {
    const hl_hparams *hp = &m->hp;
    const hl_backend_i *op = b->iface;
    const hl_layer *l = &m->layers[il];
    /* attention block */
    op->rms_norm(b, &w->x, &l->attn_norm, hp->norm_eps, &w->xb);
    op->matmul(b, &l->wq, &w->xb, &w->q);
    op->matmul(b, &l->wk, &w->xb, &w->k);
    op->matmul(b, &l->wv, &w->xb, &w->v);
    op->rope(b, &w->q, hp->n_head, pos0, &hp->rope, NULL);
    op->rope(b, &w->k, hp->n_head_kv, pos0, &hp->rope, NULL);
    op->store_rows(b, &w->k, &w->k_cache[il], pos0);
    op->store_rows(b, &w->v, &w->v_cache[il], pos0);
    hl_attn_args args = {
        .q = &w->q, .k_cache = &w->k_cache[il], .v_cache = &w->v_cache[il], .out = &w->att,
        .n_head = hp->n_head, .n_head_kv = hp->n_head_kv, .head_dim = hp->head_dim,
        .pos0 = pos0, .n_swa = 0, .scale = 1.0f / sqrtf((float)hp->head_dim),
    };
    op->attention(b, &args);
    op->matmul(b, &l->wo, &w->att, &w->xb);
    op->add(b, &w->x, &w->xb);
    /* feed-forward block */
    op->rms_norm(b, &w->x, &l->ffn_norm, hp->norm_eps, &w->xb);
    op->matmul(b, &l->ffn_gate, &w->xb, &w->gate);
    op->matmul(b, &l->ffn_up, &w->xb, &w->up);
    op->swiglu(b, &w->gate, &w->up);
    op->matmul(b, &l->ffn_down, &w->gate, &w->xb);
    op->add(b, &w->x, &w->xb);
}

const hl_arch hl_arch_llama = {
    .name = "llama",
    .load = llama_load,
    .layer = llama_layer,
};
