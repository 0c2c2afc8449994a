/* The gptj architecture (GPT-J-6B, Wang & Komatsuzaki 2021; Hugging Face
 * transformers' modeling_gptj.py is the reference, as llama.cpp 0.3.36 has
 * no gptj graph): attention and feed-forward side by side on the output of
 * one LayerNorm (weight and bias, epsilon attention.layer_norm_epsilon),
 * x + (attn(ln(x)) + mlp(ln(x))) in GPT-J's order of adds; separate q, k, v
 * and output projections without biases; rotary embeddings on the first
 * rope.dimension_count dimensions of each head (GPT-J's rotary_dim) turning
 * adjacent pairs (rotate_every_two: ggml's normal mode), base
 * rope.freq_base (GPT-J's fixed 10000 when absent); a feed-forward of fc_in
 * (ffn_up, bias), tanh GELU (gelu_new), fc_out (ffn_down, bias); a final
 * LayerNorm with bias; lm_head with its own matrix and a bias (output,
 * output.bias). The tensor names are gguf-py's for MODEL_ARCH.GPTJ (no
 * converter writes gptj files; docs/design.md has the layout). gpt2's block
 * (hl_gpt2_layer) runs it, with falcon's order of adds; the feed-forward's
 * norm is attn_norm again (bound as ffn_norm too). */
#include "model/model.h"

static hearth_status gptj_hparams(hearth_model *m) {
    HL_TRY(hl_layer_norm_hparams(m, HL_ROPE_NORMAL));
    m->hp.residual = HL_RESIDUAL_PARALLEL_BRANCHES_FIRST;
    return HEARTH_OK;
}

static const hl_weight_decl gptj_input[] = {HL_DECL_TOKEN_EMBD, HL_DECL_END};
static const hl_weight_decl gptj_output[] = {
    HL_DECL_LN_OUTPUT(0),
    HL_M("output.bias", output_b, VOCAB, NONE, ADD, 0), /* lm_head's */
    HL_DECL_END,
};
static const hl_weight_decl gptj_block[] = {
    HL_W("attn_norm.weight", attn_norm, EMBD, NONE, LAYER_NORM, 0),
    HL_W("attn_norm.bias", attn_norm_b, EMBD, NONE, LAYER_NORM, 0),
    HL_W("attn_norm.weight", ffn_norm, EMBD, NONE, LAYER_NORM, 0),
    HL_W("attn_norm.bias", ffn_norm_b, EMBD, NONE, LAYER_NORM, 0),
    HL_DECL_QKV,
    HL_W("attn_output.weight", wo, Q, EMBD, MATMUL, 0),
    HL_DECL_GELU_FFN(0),
    HL_DECL_END,
};

const hl_arch hl_arch_gptj = {
    .name = "gptj",
    .norm = HL_OP_LAYER_NORM,
    .input = gptj_input,
    .block = gptj_block,
    .output = gptj_output,
    .hparams = gptj_hparams,
    .layer = hl_gpt2_layer,
};
