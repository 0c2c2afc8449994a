/* The phi3 architecture (Phi-3, Abdin et al. 2024, arXiv:2404.14219; also
 * Phi-3.5-mini and Phi-4-mini), as llama.cpp builds it (src/models/phi3.cpp
 * and its tensor loading): llama's pre-norm block with RMSNorm, rope in NEOX
 * mode (on part of the head where rope.dimension_count says so, as
 * Phi-4-mini's), the queries scaled by 1/sqrt(head_dim) before attention,
 * and a SwiGLU feed-forward. The files fuse weights: attn_qkv holds the q, k
 * and v rows (separate attn_q/k/v are taken too) and ffn_up the gate's rows
 * followed by up's; hl_model_bind binds their row ranges as views, so every
 * backend multiplies them as three (two) weights of their own.
 *
 * The long-context variants carry LongRoPE (Ding et al. 2024,
 * arXiv:2402.13753): two sets of per-pair frequency factors,
 * rope_factors_short and rope_factors_long; a context longer than
 * rope.scaling.original_context_length runs the long ones
 * (hl_rope_long_factors), and the converter's attention factor comes as
 * rope.scaling.attn_factor, which hl_rope_resolve applies as for every
 * architecture. Sliding-window metadata is ignored: llama.cpp 0.3.36
 * disables Phi's sliding window (n_swa = 0, "Phi SWA is currently
 * disabled", llama.cpp PR 13676) and hearth computes what it computes. */
#include "base/log.h"
#include "model/model.h"

static hearth_status phi3_load(hearth_model *m) {
    hl_hparams *hp = &m->hp;
    HL_TRY(hl_hparams_read(m->gguf, "phi3", HL_ROPE_NEOX, hp));
    /* llama.cpp's attn_output is {n_embd, n_embd} */
    if ((int64_t)hp->n_head * hp->head_dim != hp->n_embd)
        return hl_fail(HEARTH_ERR_FORMAT, "GGUF: phi3 needs n_head * head size = n_embd (here %d * %d != %d)",
                       hp->n_head, hp->head_dim, hp->n_embd);
    hp->scale_q = true;
    int32_t n_swa = 0;
    HL_TRY(hl_arch_u32(m->gguf, "phi3", "attention.sliding_window", false, &n_swa));
    if (n_swa > 0)
        HL_WARN("phi3.attention.sliding_window = %d is ignored, as llama.cpp does (its Phi sliding window is "
                "disabled): every layer attends to the whole context", (int)n_swa);
    return hl_model_bind(m, HL_BIND_FUSED_QKV | HL_BIND_FUSED_UP | HL_BIND_LONGROPE);
}

const hl_arch hl_arch_phi3 = {
    .name = "phi3",
    .load = phi3_load,
    .layer = hl_llama_layer,
};
