/* The weights of the model's blocks and output layer: hl_layer with one
 * tensor per weight a block may have, and the X-macro lists of the block's and
 * the output layer's weights for the code that visits them all (placement,
 * upload to a device, sizes, checks). */
#ifndef HEARTH_MODEL_LAYER_H
#define HEARTH_MODEL_LAYER_H

#include "backend/backend.h"

/* Weights of one transformer block. Shapes (ggml order, ne0 first):
 *   attn_norm, ffn_norm                F32 {n_embd}
 *   wq {n_embd, n_head*hd}   wk, wv {n_embd, n_head_kv*hd}   wo {n_head*hd, n_embd}
 *   ffn_gate, ffn_up {n_embd, n_ff}    ffn_down {n_ff, n_embd}
 * and, where the architecture has them (data NULL when absent):
 *   bq {n_head*hd}, bk, bv {n_head_kv*hd}  F32 biases (qwen2)
 *   attn_q_norm, attn_k_norm {hd}          F32 per-head RMSNorm (qwen3, gemma3)
 *   attn_post_norm, ffn_post_norm {n_embd} F32 norms after each block (gemma3; bert's LayerNorms after
 *                                          each residual add, with their biases attn_post_norm_b, ffn_post_norm_b)
 *   rope_freqs {n_rot/2}                   F32 rope frequency factors (llama 3)
 *   rope_long, rope_short {n_rot/2}        F32 LongRoPE frequency factors (phi3)
 *   attn_norm_b, ffn_norm_b, bo {n_embd}, ffn_up_b {n_ff}, ffn_down_b {n_embd}
 *                                          F32 LayerNorm and projection biases (the LayerNorm families)
 *   ffn_gate_inp {n_embd, n_expert}       the router of a mixture of experts (hp.n_expert > 0),
 *   ffn_gate_exps, ffn_up_exps {n_embd, n_ff, n_expert}, ffn_down_exps {n_ff, n_embd, n_expert}
 *                                          its stacked experts, in place of ffn_gate, ffn_up, ffn_down
 * Which of them a model has, under which tensor names, is what its
 * architecture declares (arch.h hl_weight_decl). A fused weight of the file
 * (attn_qkv, phi3's ffn_up holding gate and up) is bound as views of its row
 * ranges: wq, wk, wv (bq, bk, bv) and ffn_gate, ffn_up point into it, each a
 * weight of its own to the backends; one tensor may be bound to two fields
 * (falcon's and gptj's attn_norm is also their ffn_norm).
 * HL_LAYER_TENSORS lists every field, so code that moves whole layers
 * (placement, upload to a device) visits each without naming them. */
// clang-format off
#define HL_LAYER_TENSORS(X)                                                                              \
    X(attn_norm) X(wq) X(wk) X(wv) X(wo) X(bq) X(bk) X(bv) X(attn_q_norm) X(attn_k_norm) X(attn_post_norm) \
    X(attn_post_norm_b) X(ffn_post_norm_b)                                                                    \
    X(ffn_norm) X(ffn_gate) X(ffn_up) X(ffn_down) X(ffn_post_norm) X(rope_freqs) X(rope_long) X(rope_short)   \
    X(attn_norm_b) X(bo) X(ffn_norm_b) X(ffn_up_b) X(ffn_down_b) X(ffn_gate_inp) X(ffn_gate_exps) X(ffn_up_exps)     \
    X(ffn_down_exps)
// clang-format on

/* The output layer's weights, which sit on one device together (fields of
 * hearth_model), listed once for the code that places, sizes, uploads and
 * checks them. */
#define HL_OUTPUT_TENSORS(X) X(output_norm) X(output_norm_b) X(output) X(output_b)

typedef struct hl_layer {
#define HL_LAYER_FIELD(name) hl_tensor name;
    HL_LAYER_TENSORS(HL_LAYER_FIELD)
#undef HL_LAYER_FIELD
} hl_layer;

#endif
