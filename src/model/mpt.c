/* The mpt architecture (MosaicML's MPT, 2023), as llama.cpp builds it
 * (src/models/mpt.cpp and its tensor loading): no position embedding,
 * positions through ALiBi in the attention (Press, Smith & Lewis 2022,
 * arXiv:2108.12409) with attention.max_alibi_bias (none when absent, as
 * llama.cpp reads it); pre-norm blocks with LayerNorm (epsilon
 * attention.layer_norm_epsilon) whose biases, like those of every projection,
 * are bound where the file has them (MPT-7B has none); attention from the
 * fused attn_qkv, its output clamped to [-c, c] when attention.clamp_kqv is
 * set; a feed-forward of up, tanh GELU, down; a final LayerNorm; the output
 * matrix tied to the token embeddings unless the file has output.weight.
 * gpt2's block (hl_gpt2_layer) runs it.
 *
 * Not here: the optional learned position embeddings (position_embd) and
 * q/k LayerNorms (attn_q_norm, attn_k_norm) llama.cpp also loads, and AWQ's
 * ffn_act scales; a file with them is refused by name (hl_model_load's
 * check that every tensor is bound). Without rope a context shift refuses,
 * as for gpt2. */
#include <math.h>

#include "model/model.h"

static hearth_status mpt_hparams(hearth_model *m) {
    HL_TRY(hl_layer_norm_hparams(m, HL_ROPE_NONE));
    HL_TRY(hl_arch_f32(m->gguf, "mpt", "attention.clamp_kqv", false, &m->hp.clamp_kqv));
    HL_TRY(hl_arch_f32(m->gguf, "mpt", "attention.max_alibi_bias", false, &m->hp.max_alibi_bias));
    if (!(m->hp.clamp_kqv >= 0.0f) || !isfinite(m->hp.clamp_kqv) || !(m->hp.max_alibi_bias >= 0.0f) ||
        !isfinite(m->hp.max_alibi_bias))
        return hl_fail(HEARTH_ERR_FORMAT,
                       "GGUF: mpt.attention.clamp_kqv = %g and max_alibi_bias = %g must be finite "
                       "and >= 0",
                       m->hp.clamp_kqv, m->hp.max_alibi_bias);
    return HEARTH_OK;
}

static const hl_weight_decl mpt_input[] = {HL_DECL_TOKEN_EMBD, HL_DECL_END};
/* every bias where the file has it */
static const hl_weight_decl mpt_output[] = {HL_DECL_LN_OUTPUT(HL_W_OPTIONAL), HL_DECL_END};
static const hl_weight_decl mpt_block[] = {HL_DECL_LN_BLOCK(HL_W_OPTIONAL), HL_DECL_END};

const hl_arch hl_arch_mpt = {
    .name = "mpt",
    .norm = HL_OP_LAYER_NORM,
    .input = mpt_input,
    .block = mpt_block,
    .output = mpt_output,
    .hparams = mpt_hparams,
    .layer = hl_gpt2_layer,
};
