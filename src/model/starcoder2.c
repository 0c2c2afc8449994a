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

static hearth_status starcoder2_load(hearth_model *m) {
    HL_TRY(hl_layer_norm_hparams(m, "starcoder2", HL_ROPE_NEOX));
    HL_TRY(hl_hparams_full_rope("starcoder2", &m->hp)); /* llama.cpp asserts n_rot == head size */
    HL_TRY(hl_hparams_sliding_window(m->gguf, "starcoder2", &m->hp));
    return hl_model_bind(m, HL_BIND_FUSED_QKV | HL_BIND_LAYER_NORM);
}

const hl_arch hl_arch_starcoder2 = {
    .name = "starcoder2",
    .load = starcoder2_load,
    .layer = hl_gpt2_layer,
};
