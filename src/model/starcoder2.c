/* The starcoder2 architecture (StarCoder 2, Lozhkov et al. 2024,
 * arXiv:2402.19173), as llama.cpp builds it (src/models/starcoder2.cpp and
 * its tensor loading): gpt2's block (hl_gpt2_layer: LayerNorm with bias,
 * q/k/v and output biases, a GELU feed-forward with biases) with rotary
 * embeddings in NEOX mode over whole heads instead of learned positions, and
 * q, k, v fused (attn_qkv) or separate. The models are trained with a
 * sliding window: where the file sets starcoder2.attention.sliding_window,
 * every layer attends over it (hl_hparams_sliding_window), as Hugging Face
 * transformers' Starcoder2 does; llama.cpp's starcoder2 graph ignores the
 * key and attends over the whole context, so hearth equals it up to the
 * window's length only. */
#include "model/model.h"

static hearth_status starcoder2_hparams(hearth_model *m) {
    HL_TRY(hl_layer_norm_hparams(m, HL_ROPE_NEOX));
    HL_TRY(hl_hparams_full_rope("starcoder2", &m->hp)); /* llama.cpp asserts n_rot == head size */
    return hl_hparams_sliding_window(m->gguf, "starcoder2", &m->hp);
}

static const hl_weight_decl starcoder2_input[] = {HL_DECL_TOKEN_EMBD, HL_DECL_END};
static const hl_weight_decl starcoder2_output[] = {HL_DECL_LN_OUTPUT(0), HL_DECL_END};
static const hl_weight_decl starcoder2_block[] = {HL_DECL_LN_BLOCK(0), HL_DECL_END};

const hl_arch hl_arch_starcoder2 = {
    .name = "starcoder2",
    .norm = HL_OP_LAYER_NORM,
    .input = starcoder2_input,
    .block = starcoder2_block,
    .output = starcoder2_output,
    .hparams = starcoder2_hparams,
    .layer = hl_gpt2_layer,
};
