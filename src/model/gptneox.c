/* The gptneox architecture (GPT-NeoX-20B, Black et al. 2022,
 * arXiv:2204.06745; also Pythia), as llama.cpp builds it
 * (src/models/gptneox.cpp and its tensor loading): gpt2's block
 * (hl_gpt2_layer: LayerNorm with bias, fused attn_qkv with bias, output and
 * feed-forward biases, tanh GELU) with rotary embeddings in NEOX mode over
 * the first rope.dimension_count dimensions of each head (partial rotary:
 * 25% in Pythia), and, where use_parallel_residual says so (required, as
 * llama.cpp reads it), attention and feed-forward side by side on the same
 * input: x + attn(ln1(x)) + ffn(ln2(x)). */
#include "model/model.h"

static hearth_status gptneox_load(hearth_model *m) {
    HL_TRY(hl_layer_norm_hparams(m, "gptneox", HL_ROPE_NEOX));
    HL_TRY(hl_gguf_get_bool(m->gguf, "gptneox.use_parallel_residual", true, &m->hp.parallel_residual));
    return hl_model_bind(m, HL_BIND_FUSED_QKV | HL_BIND_LAYER_NORM);
}

const hl_arch hl_arch_gptneox = {
    .name = "gptneox",
    .load = gptneox_load,
    .layer = hl_gpt2_layer,
};
