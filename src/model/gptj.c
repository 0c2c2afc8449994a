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
 * (hl_gpt2_layer) runs it, with falcon's order of adds and without
 * ffn_norm: the feed-forward's norm is attn_norm again. */
#include "model/model.h"

static hearth_status gptj_load(hearth_model *m) {
    HL_TRY(hl_layer_norm_hparams(m, "gptj", HL_ROPE_NORMAL));
    m->hp.parallel_residual = true;
    m->hp.sum_branches_first = true;
    return hl_model_bind(m, HL_BIND_LAYER_NORM | HL_BIND_ONE_NORM | HL_BIND_OUTPUT_BIAS);
}

const hl_arch hl_arch_gptj = {
    .name = "gptj",
    .load = gptj_load,
    .layer = hl_gpt2_layer,
};
