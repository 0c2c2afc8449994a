/* The bloom architecture (BigScience's BLOOM, arXiv:2211.05100), as
 * llama.cpp builds it (src/models/bloom.cpp and its tensor loading): no
 * position embedding, positions through ALiBi in the attention (Press, Smith
 * & Lewis 2022, arXiv:2108.12409) with a max_bias of 8, which llama.cpp sets
 * for bloom rather than reading it from the file; a LayerNorm of the token
 * embeddings (token_embd_norm, weight and bias); pre-norm blocks with
 * LayerNorm with bias (epsilon attention.layer_norm_epsilon), the fused
 * attn_qkv with its bias, an output projection with bias, a feed-forward of
 * up (bias), tanh GELU, down (bias); a final LayerNorm with bias; the output
 * matrix tied to the token embeddings unless the file has output.weight.
 * gpt2's block (hl_gpt2_layer) runs it; without rope a context shift
 * refuses, as for gpt2. */
#include "model/model.h"

#define BLOOM_MAX_ALIBI_BIAS 8.0f /* llama.cpp's llama_model_bloom::load_arch_hparams ("TODO: become GGUF KV") */

static hearth_status bloom_hparams(hearth_model *m) {
    HL_TRY(hl_layer_norm_hparams(m, HL_ROPE_NONE));
    m->hp.max_alibi_bias = BLOOM_MAX_ALIBI_BIAS;
    return HEARTH_OK;
}

static const hl_weight_decl bloom_input[] = {
    HL_DECL_TOKEN_EMBD,
    HL_M("token_embd_norm.weight", tok_norm, EMBD, NONE, LAYER_NORM, 0),
    HL_M("token_embd_norm.bias", tok_norm_b, EMBD, NONE, LAYER_NORM, 0),
    HL_DECL_END,
};
static const hl_weight_decl bloom_output[] = {HL_DECL_LN_OUTPUT(0), HL_DECL_END};
static const hl_weight_decl bloom_block[] = {HL_DECL_LN_BLOCK(0), HL_DECL_END};

const hl_arch hl_arch_bloom = {
    .name = "bloom",
    .norm = HL_OP_LAYER_NORM,
    .input = bloom_input,
    .block = bloom_block,
    .output = bloom_output,
    .hparams = bloom_hparams,
    .layer = hl_gpt2_layer,
};
