/* The qwen2 architecture (Qwen2 / Qwen2.5, Yang et al. 2024, arXiv:2407.10671;
 * also DeepSeek-R1's Qwen distillations), as llama.cpp builds it
 * (src/models/qwen2.cpp): llama's block with biases on the q, k and v
 * projections and rope in NEOX mode (halves of the head rotate together). */
#include "model/model.h"

static hearth_status qwen2_hparams(hearth_model *m) {
    HL_TRY(hl_hparams_read(m, HL_ROPE_NEOX));
    return hl_hparams_full_rope("qwen2", &m->hp);
}

static const hl_weight_decl qwen2_input[] = {HL_DECL_TOKEN_EMBD, HL_DECL_END};
static const hl_weight_decl qwen2_output[] = {HL_DECL_OUTPUT(RMS_NORM), HL_DECL_END};
static const hl_weight_decl qwen2_block[] = {
    HL_W("attn_norm.weight", attn_norm, EMBD, NONE, RMS_NORM, 0),
    HL_DECL_QKV, /* the biases are optional, as in llama.cpp */
    HL_W("attn_output.weight", wo, Q, EMBD, MATMUL, 0),
    HL_W("ffn_norm.weight", ffn_norm, EMBD, NONE, RMS_NORM, 0),
    HL_DECL_GLU_FFN,
    HL_DECL_END,
};

const hl_arch hl_arch_qwen2 = {
    .name = "qwen2",
    .norm = HL_OP_RMS_NORM,
    .input = qwen2_input,
    .block = qwen2_block,
    .output = qwen2_output,
    .hparams = qwen2_hparams,
    .layer = hl_llama_layer,
};
