/* The phi3 architecture (Phi-3, Abdin et al. 2024, arXiv:2404.14219; also
 * Phi-3.5-mini and Phi-4-mini), as llama.cpp builds it (src/models/phi3.cpp
 * and its tensor loading): llama's pre-norm block with RMSNorm, rope in NEOX
 * mode (on part of the head where rope.dimension_count says so, as
 * Phi-4-mini's), the queries scaled by 1/sqrt(head_dim) before attention,
 * and a SwiGLU feed-forward. The files fuse weights: attn_qkv holds the q, k
 * and v rows (separate attn_q/k/v are taken too) and ffn_up the gate's rows
 * followed by up's; they are declared as fused, so binding makes their row
 * ranges views that every backend multiplies as three (two) weights of
 * their own.
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

static hearth_status phi3_hparams(hearth_model *m) {
    hl_hparams *hp = &m->hp;
    HL_TRY(hl_hparams_read(m, HL_ROPE_NEOX));
    /* llama.cpp's attn_output is {n_embd, n_embd} */
    if ((int64_t)hp->n_head * hp->head_dim != hp->n_embd)
        return hl_fail(HEARTH_ERR_FORMAT, "GGUF: phi3 needs n_head * head size = n_embd (here %d * %d != %d)",
                       hp->n_head, hp->head_dim, hp->n_embd);
    hp->scale_q = true;
    int32_t n_swa = 0;
    HL_TRY(hl_arch_u32(m->gguf, "phi3", "attention.sliding_window", false, &n_swa));
    if (n_swa > 0)
        HL_WARN("phi3.attention.sliding_window = %d is ignored, as llama.cpp does (its Phi sliding window is "
                "disabled): every layer attends to the whole context",
                (int)n_swa);
    return HEARTH_OK;
}

static const hl_weight_decl phi3_input[] = {HL_DECL_TOKEN_EMBD, HL_DECL_END};
static const hl_weight_decl phi3_output[] = {HL_DECL_OUTPUT(RMS_NORM), HL_DECL_END};
static const hl_weight_decl phi3_block[] = {
    HL_W("attn_norm.weight", attn_norm, EMBD, NONE, RMS_NORM, 0),
    HL_DECL_QKV_FUSED,
    HL_W("attn_output.weight", wo, Q, EMBD, MATMUL, 0),
    HL_W("ffn_norm.weight", ffn_norm, EMBD, NONE, RMS_NORM, 0),
    {.name = "ffn_up.weight",
     .ne = {HL_DIM_EMBD, HL_DIM_PARTS},
     .feeds = HL_OP_MATMUL,
     .field = {offsetof(hl_layer, ffn_gate), offsetof(hl_layer, ffn_up)},
     .part = {HL_DIM_FF, HL_DIM_FF}},
    HL_W("ffn_down.weight", ffn_down, FF, EMBD, MATMUL, 0),
    /* LongRoPE's factors, one pair for all layers */
    HL_W("rope_factors_long.weight", rope_long, ROT_HALF, NONE, ROPE, HL_W_OPTIONAL | HL_W_SHARED),
    HL_W("rope_factors_short.weight", rope_short, ROT_HALF, NONE, ROPE, HL_W_OPTIONAL | HL_W_SHARED),
    HL_DECL_END,
};

const hl_arch hl_arch_phi3 = {
    .name = "phi3",
    .norm = HL_OP_RMS_NORM,
    .input = phi3_input,
    .block = phi3_block,
    .output = phi3_output,
    .hparams = phi3_hparams,
    .layer = hl_llama_layer,
};
