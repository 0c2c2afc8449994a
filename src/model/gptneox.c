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

static hearth_status gptneox_hparams(hearth_model *m) {
    HL_TRY(hl_layer_norm_hparams(m, HL_ROPE_NEOX));
    bool parallel = false;
    HL_TRY(hl_gguf_get_bool(m->gguf, "gptneox.use_parallel_residual", true, &parallel));
    m->hp.residual = parallel ? HL_RESIDUAL_PARALLEL : HL_RESIDUAL_SEQUENTIAL;
    return HEARTH_OK;
}

static const hl_weight_decl gptneox_input[] = {HL_DECL_TOKEN_EMBD, HL_DECL_END};
static const hl_weight_decl gptneox_output[] = {HL_DECL_LN_OUTPUT(0), HL_DECL_END};
static const hl_weight_decl gptneox_block[] = {HL_DECL_LN_BLOCK(0), HL_DECL_END};

const hl_arch hl_arch_gptneox = {
    .name = "gptneox",
    .norm = HL_OP_LAYER_NORM,
    .input = gptneox_input,
    .block = gptneox_block,
    .output = gptneox_output,
    .hparams = gptneox_hparams,
    .layer = hl_gpt2_layer,
};
