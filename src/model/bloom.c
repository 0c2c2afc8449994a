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

static hearth_status bloom_load(hearth_model *m) {
    HL_TRY(hl_layer_norm_hparams(m, "bloom", HL_ROPE_NONE));
    m->hp.max_alibi_bias = BLOOM_MAX_ALIBI_BIAS;
    HL_TRY(hl_model_tensor(m, "token_embd_norm.weight", m->hp.n_embd, 1, true, &m->tok_norm));
    HL_TRY(hl_model_tensor(m, "token_embd_norm.bias", m->hp.n_embd, 1, true, &m->tok_norm_b));
    return hl_model_bind(m, HL_BIND_FUSED_QKV | HL_BIND_LAYER_NORM);
}

const hl_arch hl_arch_bloom = {
    .name = "bloom",
    .load = bloom_load,
    .layer = hl_gpt2_layer,
};
