/* The llama architecture (Touvron et al. 2023, arXiv:2302.13971), as laid out
 * in GGUF by llama.cpp (src/models/llama.cpp): pre-norm blocks with RMSNorm,
 * rotary position embeddings (normal mode), grouped-query attention and a
 * SwiGLU feed-forward; the output matrix may be tied to the token embeddings.
 * Llama 3's rope scaling comes as frequency factors (the rope_freqs tensor).
 * Mistral-style files use the same names; like llama.cpp for this
 * architecture, hearth ignores their sliding-window metadata, and takes a
 * head size other than n_embd / n_head from attention.key_length.
 *
 * Its block is shared with qwen2, qwen3 and phi3, which add optional parts:
 * q/k/v biases, per-head QK-norm, LongRoPE factors, the scale on the
 * queries. */
#include "backend/ops.h"
#include "model/model.h"

static hearth_status llama_load(hearth_model *m) {
    hl_hparams *hp = &m->hp;
    HL_TRY(hl_hparams_read(m->gguf, "llama", HL_ROPE_NORMAL, hp));
    HL_TRY(hl_hparams_full_rope("llama", hp));
    return hl_model_bind(m, HL_BIND_ROPE_FREQS);
}

hearth_status hl_llama_layer(const hearth_model *m, hl_backend *b, hl_work *w, int32_t il) {
    const hl_hparams *hp = &m->hp;
    const hl_layer *l = &m->layers[il];
    const hl_tensor *freq_factors = hl_layer_freq_factors(l, w);
    /* attention block */
    HL_TRY(hl_rms_norm(b, &w->x, &l->attn_norm, hp->norm_eps, &w->xb));
    HL_TRY(hl_attn_qkv(m, b, w, l));
    HL_TRY(hl_rope(b, &w->q, hp->n_head, &w->rope, freq_factors));
    HL_TRY(hl_rope(b, &w->k, hp->n_head_kv, &w->rope, freq_factors));
    if (hp->scale_q) HL_TRY(hl_scale(b, &w->q, hp->attn_scale));
    HL_TRY(hl_store_rows(b, &w->k, &w->k_cache[il]));
    HL_TRY(hl_store_rows(b, &w->v, &w->v_cache[il]));
    hl_attn_args args = {
        .q = &w->q, .k_cache = &w->k_cache[il], .v_cache = &w->v_cache[il], .out = &w->att,
        .n_head = hp->n_head, .n_head_kv = hp->n_head_kv, .head_dim = hp->head_dim,
        .n_swa = 0, .scale = hp->scale_q ? 1.0f : hp->attn_scale,
    };
    HL_TRY(hl_attention(b, &args));
    HL_TRY(hl_matmul(b, &l->wo, &w->att, &w->xb));
    HL_TRY(hl_add(b, &w->x, &w->xb));
    /* feed-forward block */
    HL_TRY(hl_rms_norm(b, &w->x, &l->ffn_norm, hp->norm_eps, &w->xb));
    HL_TRY(hl_matmul(b, &l->ffn_gate, &w->xb, &w->gate));
    HL_TRY(hl_matmul(b, &l->ffn_up, &w->xb, &w->up));
    HL_TRY(hl_swiglu(b, &w->gate, &w->up));
    HL_TRY(hl_matmul(b, &l->ffn_down, &w->gate, &w->xb));
    return hl_add(b, &w->x, &w->xb);
}

const hl_arch hl_arch_llama = {
    .name = "llama",
    .load = llama_load,
    .layer = hl_llama_layer,
};
