/* The falcon architecture (Falcon-7B/40B, Almazrouei et al. 2023,
 * arXiv:2311.16867), as llama.cpp builds it (src/models/falcon.cpp and its
 * tensor loading): gpt2's block (hl_gpt2_layer) with attention and
 * feed-forward side by side on the same input, x + (ffn + attn) in
 * llama.cpp's order of adds; LayerNorm with weight and bias (attn_norm);
 * Falcon-40B's files add a second one, attn_norm_2, whose output the
 * attention reads while the feed-forward reads attn_norm's (Falcon-7B's
 * both read attn_norm's); the fused attn_qkv (separate attn_q/k/v are taken
 * too, by the binding phi3 shares, where llama.cpp's loader asks for the
 * fused one) with multi-query (7B: one KV head) or grouped (40B) attention;
 * rotary embeddings in NEOX mode over whole heads (llama.cpp refuses
 * another rope.dimension_count); no projection biases; a feed-forward of
 * up, tanh GELU, down; a final LayerNorm with bias; the output matrix tied
 * to the token embeddings unless the file has output.weight.
 *
 * Falcon-7B's 71 query heads share one KV head: where a GPU's attention
 * cannot take a group that large (the CUDA kernel takes at most 4096 query
 * dimensions per KV head, hl_cuda_attention_runs; 71 x 64 = 4544), placement
 * keeps those layers on the CPU with a warning. */
#include "model/model.h"

static hearth_status falcon_hparams(hearth_model *m) {
    HL_TRY(hl_layer_norm_hparams(m, HL_ROPE_NEOX));
    HL_TRY(hl_hparams_full_rope("falcon", &m->hp)); /* llama.cpp: "invalid n_rot" */
    m->hp.residual = HL_RESIDUAL_PARALLEL_BRANCHES_FIRST;
    return HEARTH_OK;
}

static const hl_weight_decl falcon_input[] = {HL_DECL_TOKEN_EMBD, HL_DECL_END};
static const hl_weight_decl falcon_output[] = {HL_DECL_LN_OUTPUT(0), HL_DECL_END};
/* The attention reads attn_norm_2's output where the file has it (40B),
 * else attn_norm's (7B); the feed-forward always reads attn_norm's. */
static const hl_weight_decl falcon_block[] = {
    HL_W("attn_norm_2.weight", attn_norm, EMBD, NONE, LAYER_NORM, HL_W_OPTIONAL),
    HL_W("attn_norm_2.bias", attn_norm_b, EMBD, NONE, LAYER_NORM, HL_W_WITH_PREV),
    HL_W("attn_norm.weight", attn_norm, EMBD, NONE, LAYER_NORM, HL_W_UNLESS_BOUND),
    HL_W("attn_norm.bias", attn_norm_b, EMBD, NONE, LAYER_NORM, HL_W_UNLESS_BOUND),
    HL_W("attn_norm.weight", ffn_norm, EMBD, NONE, LAYER_NORM, 0),
    HL_W("attn_norm.bias", ffn_norm_b, EMBD, NONE, LAYER_NORM, 0),
    HL_DECL_QKV_FUSED,
    HL_W("attn_output.weight", wo, Q, EMBD, MATMUL, 0),
    HL_W("ffn_up.weight", ffn_up, EMBD, FF, MATMUL, 0),
    HL_W("ffn_down.weight", ffn_down, FF, EMBD, MATMUL, 0),
    HL_DECL_END,
};

const hl_arch hl_arch_falcon = {
    .name = "falcon",
    .norm = HL_OP_LAYER_NORM,
    .input = falcon_input,
    .block = falcon_block,
    .output = falcon_output,
    .hparams = falcon_hparams,
    .layer = hl_gpt2_layer,
};
