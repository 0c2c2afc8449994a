/* The nomic-bert architecture (Nomic Embed, Nussbaum et al. 2024,
 * arXiv:2402.01613: nomic-embed-text-v1 and v1.5), as llama.cpp builds
 * LLM_ARCH_NOMIC_BERT (src/models/nomic-bert.cpp's tensors, the graph of
 * src/models/bert.cpp): bert's post-norm encoder (hl_bert_layer) with
 * rotary embeddings in place of learned positions. The input is the token
 * embeddings plus token-type row 0, then a LayerNorm; each block computes
 * q, k, v from a fused attn_qkv without bias, rotates q and k in NEOX mode
 * (rope.dimension_count, the whole head by default; rope.freq_base from the
 * file, 1000 in v1.5), attends bidirectionally, projects without bias,
 * x = LN(x + attn); then x = LN(x + down(silu(gate(x)) * up(x))), a SwiGLU
 * feed-forward without biases. llama.cpp loads an
 * attn_output bias where the file has one, and ignores feed-forward biases
 * for this architecture; hearth declares the first and refuses a file
 * with the others rather than leave them out. */
#include "model/model.h"

static hearth_status nomic_bert_hparams(hearth_model *m) { return hl_bert_hparams(m, HL_ROPE_NEOX); }

static const hl_weight_decl nomic_bert_input[] = {
    HL_DECL_TOKEN_EMBD,
    HL_M("token_types.weight", tok_types, EMBD, TOKEN_TYPES, GET_ROWS, HL_W_OPTIONAL),
    HL_M("token_embd_norm.weight", tok_norm, EMBD, NONE, LAYER_NORM, 0),
    HL_M("token_embd_norm.bias", tok_norm_b, EMBD, NONE, LAYER_NORM, 0),
    HL_DECL_END,
};
static const hl_weight_decl nomic_bert_block[] = {
    HL_DECL_QKV_FUSED,
    HL_W("attn_output.weight", wo, Q, EMBD, MATMUL, 0),
    HL_W("attn_output.bias", bo, EMBD, NONE, ADD, HL_W_OPTIONAL),
    HL_W("attn_output_norm.weight", attn_post_norm, EMBD, NONE, LAYER_NORM, 0),
    HL_W("attn_output_norm.bias", attn_post_norm_b, EMBD, NONE, LAYER_NORM, 0),
    HL_W("ffn_gate.weight", ffn_gate, EMBD, FF, MATMUL, 0),
    HL_W("ffn_up.weight", ffn_up, EMBD, FF, MATMUL, 0),
    HL_W("ffn_down.weight", ffn_down, FF, EMBD, MATMUL, 0),
    HL_W("layer_output_norm.weight", ffn_post_norm, EMBD, NONE, LAYER_NORM, 0),
    HL_W("layer_output_norm.bias", ffn_post_norm_b, EMBD, NONE, LAYER_NORM, 0),
    HL_DECL_END,
};
static const hl_weight_decl nomic_bert_output[] = {HL_DECL_CLS_HEAD, HL_DECL_END};

const hl_arch hl_arch_nomic_bert = {
    .name = "nomic-bert",
    .norm = HL_OP_LAYER_NORM,
    .bidirectional = true,
    .input = nomic_bert_input,
    .block = nomic_bert_block,
    .output = nomic_bert_output,
    .hparams = nomic_bert_hparams,
    .layer = hl_bert_layer,
};
