/* What an architecture is and what it is built from: the hl_arch table
 * (load, block) and the architectures hearth knows; the shared blocks
 * (hl_llama_layer, hl_gpt2_layer) and the LayerNorm families' hyperparameters
 * other architectures reuse; and the binding of weights by tensor name
 * (hl_model_tensor, hl_model_experts in model.c; hl_model_bind with its
 * HL_BIND_* groups in hparams.c). */
#ifndef HEARTH_MODEL_ARCH_H
#define HEARTH_MODEL_ARCH_H

#include "backend/backend.h"
#include "model/forward.h"

typedef struct hl_arch {
    const char *name; /* general.architecture */
    /* Reads hyperparameters and binds weights. Errors: FORMAT, UNSUPPORTED. */
    hearth_status (*load)(hearth_model *m);
    /* Runs block `il` on the residual stream w->x {n_embd, n} of the pass's
     * tokens (their positions set on b with set_positions), in place,
     * writing their keys and values into the layer's KV cache. Every tensor
     * it touches lives on backend b; every op goes through the checked
     * calls of backend/ops.h, whose refusal (INVALID_ARG, UNSUPPORTED) it
     * returns at once. */
    hearth_status (*layer)(const hearth_model *m, hl_backend *b, hl_work *w, int32_t il);
} hl_arch;

/* The architectures hearth knows, for lookup by name. */
extern const hl_arch hl_arch_llama, hl_arch_qwen2, hl_arch_qwen3, hl_arch_gemma3, hl_arch_phi3, hl_arch_gpt2,
    hl_arch_starcoder2, hl_arch_gptneox, hl_arch_mpt,
    hl_arch_bloom, hl_arch_falcon, hl_arch_gptj;

/* The block of the LayerNorm families (gpt2.c), shared by starcoder2,
 * gptneox, falcon, mpt, bloom and gptj: LayerNorm with bias, attention with the q/k/v biases
 * the layer has and rope where the model has one (hp.rope.mode), output
 * projection with its bias where the layer has one, LayerNorm, GELU
 * feed-forward with the biases it has; sequential residuals, or a parallel
 * one (hp.parallel_residual) in gptneox's or falcon's order of adds
 * (hp.sum_branches_first), the feed-forward reading attn_norm's output where
 * the layer has no ffn_norm (falcon, gptj). */
hearth_status hl_gpt2_layer(const hearth_model *m, hl_backend *b, hl_work *w, int32_t il);

/* The hyperparameters of the LayerNorm families: hl_hparams_read with
 * hp.layer_norm set (epsilon from attention.layer_norm_epsilon) and
 * `rope_mode`, and n_head * head size = n_embd, as their {n_embd, n_embd}
 * attn_output needs. Errors: as hl_hparams_read; FORMAT. */
hearth_status hl_layer_norm_hparams(hearth_model *m, const char *arch, hl_rope_mode rope_mode);

/* The pre-norm block of llama (llama.c), shared by qwen2, qwen3 and phi3:
 * RMSNorm, attention with the optional q/k/v biases, per-head QK-norm and
 * rope frequency factors the layer has (hl_layer_freq_factors), the scale on
 * the queries where hp->scale_q says so, RMSNorm, SwiGLU feed-forward. */
hearth_status hl_llama_layer(const hearth_model *m, hl_backend *b, hl_work *w, int32_t il);

/* Binds tensor `name` to *t after checking its shape is {ne0, ne1} (ne1 = 1 for
 * vectors) and that the host can compute its type (m->host's supports_op for
 * a matmul with a matrix). With `required` false a
 * missing tensor leaves *t zeroed (data NULL) and returns OK. Errors: FORMAT
 * (missing tensor, wrong shape), UNSUPPORTED (type). */
hearth_status hl_model_tensor(hearth_model *m, const char *name, int64_t ne0, int64_t ne1, bool required, hl_tensor *t);

/* Binds the stacked expert weights `name` {ne0, ne1, n_expert} to *t (as
 * hl_model_tensor, with the host's supports_op asked for matmul_id).
 * Errors: FORMAT (missing tensor, wrong shape), UNSUPPORTED (type). */
hearth_status hl_model_experts(hearth_model *m, const char *name, int64_t ne0, int64_t ne1, int64_t n_expert,
                               hl_tensor *t);

/* Which optional groups of block weights an architecture has. */
enum {
    HL_BIND_QK_NORM = 1,    /* attn_q_norm, attn_k_norm {head_dim} (qwen3, gemma3) */
    HL_BIND_POST_NORMS = 2, /* post_attention_norm, post_ffw_norm {n_embd} (gemma3) */
    HL_BIND_ROPE_FREQS = 4, /* optional rope_freqs {n_rot/2}, shared by all layers (llama 3) */
    HL_BIND_FUSED_QKV = 8,  /* attn_qkv {n_embd, q_dim + 2 kv_dim} (and attn_qkv.bias) where the file has it
                               instead of attn_q/k/v (phi3) */
    HL_BIND_FUSED_UP = 16,  /* ffn_up {n_embd, 2 n_ff}: the gate's rows, then up's; no ffn_gate (phi3) */
    HL_BIND_LONGROPE = 32,  /* optional rope_factors_long/short {n_rot/2}, shared by all layers (phi3) */
    HL_BIND_LAYER_NORM = 64, /* LayerNorm families: attn_norm.bias, ffn_norm.bias, attn_output.bias,
                                ffn_up.bias, ffn_down.bias, output_norm.bias; no ffn_gate (gpt2, starcoder2, gptneox) */
    HL_BIND_POS_EMBD = 128, /* position_embd {n_embd, n_ctx_train} (gpt2) */
    HL_BIND_ATTN_NORM_2 = 256, /* with HL_BIND_LAYER_NORM, falcon's: no ffn_norm and no projection biases; where
                                  the file has attn_norm_2 (and .bias), it is bound as attn_norm (the attention's
                                  input) and attn_norm as ffn_norm (the feed-forward's); else ffn_norm is absent
                                  and the feed-forward reads attn_norm's output too */
    HL_BIND_OPTIONAL_BIASES = 512, /* with HL_BIND_LAYER_NORM, mpt's: each LayerNorm and projection bias (and
                                      output_norm.bias) bound where the file has it, absent where not */
    HL_BIND_ONE_NORM = 1024, /* with HL_BIND_LAYER_NORM, gptj's: one LayerNorm per block (no ffn_norm: the
                                feed-forward reads attn_norm's output) and no attn_output.bias; the
                                feed-forward biases stay required */
    HL_BIND_OUTPUT_BIAS = 2048, /* output.bias {n_vocab}, required (gptj's lm_head) */
};

/* Binds token_embd, output_norm, output (tied to token_embd when absent) and
 * every block's attention and feed-forward weights under llama.cpp's tensor
 * names (llama-arch.cpp), the q/k/v biases where the file has them, and the
 * groups in `flags` (HL_BIND_*). Errors: as hl_model_tensor, OUT_OF_MEMORY. */
hearth_status hl_model_bind(hearth_model *m, unsigned flags);

#endif
