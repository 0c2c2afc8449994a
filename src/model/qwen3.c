/* The qwen3 architecture (Qwen3, Yang et al. 2025, arXiv:2505.09388), as
 * llama.cpp builds it (src/models/qwen3.cpp): llama's block with a per-head
 * RMSNorm of queries and keys before rope (QK-norm), rope in NEOX mode, and a
 * head size of its own (attention.key_length, e.g. 128 with n_embd 1024 and
 * 16 heads). */
#include "model/model.h"

static hearth_status qwen3_hparams(hearth_model *m) {
    HL_TRY(hl_hparams_read(m, HL_ROPE_NEOX));
    return hl_hparams_full_rope("qwen3", &m->hp);
}

static const hl_weight_decl qwen3_input[] = {HL_DECL_TOKEN_EMBD, HL_DECL_END};
static const hl_weight_decl qwen3_output[] = {HL_DECL_OUTPUT(RMS_NORM), HL_DECL_END};
static const hl_weight_decl qwen3_block[] = {
    HL_W("attn_norm.weight", attn_norm, EMBD, NONE, RMS_NORM, 0),
    HL_DECL_QKV,
    HL_W("attn_q_norm.weight", attn_q_norm, HEAD, NONE, RMS_NORM, 0),
    HL_W("attn_k_norm.weight", attn_k_norm, HEAD, NONE, RMS_NORM, 0),
    HL_W("attn_output.weight", wo, Q, EMBD, MATMUL, 0),
    HL_W("ffn_norm.weight", ffn_norm, EMBD, NONE, RMS_NORM, 0),
    HL_DECL_GLU_FFN,
    HL_DECL_END,
};

const hl_arch hl_arch_qwen3 = {
    .name = "qwen3",
    .norm = HL_OP_RMS_NORM,
    .input = qwen3_input,
    .block = qwen3_block,
    .output = qwen3_output,
    .hparams = qwen3_hparams,
    .layer = hl_llama_layer,
};
