/* A loaded model: the GGUF file, hyperparameters, weights bound as tensors,
 * the vocabulary, and the architecture that runs them. Architectures (one file
 * each: llama.c, qwen2.c, qwen3.c, gemma3.c, phi3.c, gpt2.c, starcoder2.c,
 * gptneox.c, mpt.c, bloom.c, falcon.c) fill the hyperparameters and
 * weights from the GGUF metadata with the shared readers of hparams.c and
 * implement a transformer block over backend ops. */
#ifndef HEARTH_MODEL_H
#define HEARTH_MODEL_H

#include <stdatomic.h>

#include "backend/backend.h"
#include "backend/gpu.h"
#include "gguf/gguf.h"
#include "grammar/grammar.h"
#include "text/vocab.h"

#define HL_MAX_LAYERS 4096
#define HL_MAX_HEAD_DIM 512 /* the CPU attention keeps one head on the stack */

typedef struct hl_hparams {
    int32_t n_vocab;
    int32_t n_ctx_train;
    int32_t n_embd;
    int32_t n_layer;
    int32_t n_head;
    int32_t n_head_kv;
    int32_t head_dim;     /* n_embd / n_head unless the file says otherwise */
    int32_t n_ff;
    int32_t n_expert;     /* mixture of experts (Mixtral-style llama): experts per block, 0 = a dense
                             feed-forward; n_expert_used of them (top-k) run for each token */
    int32_t n_expert_used;
    float norm_eps;       /* RMSNorm epsilon, or LayerNorm's where layer_norm is set */
    bool layer_norm;      /* LayerNorm with bias instead of RMSNorm (gpt2, starcoder2, gptneox): set before
                             hl_hparams_read, which then reads attention.layer_norm_epsilon */
    bool parallel_residual; /* gptneox's use_parallel_residual: x + attn(ln1(x)) + ffn(ln2(x)) */
    bool sum_branches_first; /* with parallel_residual, falcon's order of adds x + (ffn + attn) instead of
                                gptneox's (x + ffn) + attn */
    float embd_scale;     /* token embeddings are multiplied by it (gemma: sqrt(n_embd)); 1 = none */
    float max_alibi_bias; /* ALiBi's (hl_attn_args.max_bias: mpt's attention.max_alibi_bias, bloom's 8); 0 = none */
    float clamp_kqv;      /* q, k and v clamped to [-c, c] after their biases (mpt's attention.clamp_kqv); 0 = none */
    float attn_scale;     /* multiplies K.q in attention; 1/sqrt(head_dim) unless the architecture says otherwise */
    bool scale_q;         /* hl_llama_layer puts attn_scale on the queries (in F32, after rope) and runs
                             attention with scale 1, as llama.cpp's phi3 graph does; false unless set */
    hl_rope_params rope;  /* rope of the full-attention layers */
    /* Sliding-window attention: layers whose bit is set in swa_layers see
     * the last n_swa positions only (each query the n_swa keys up to its own
     * position) and use rope_swa. n_swa 0 = none. swa_own_rope: rope_swa's
     * base and scale are the file's own for those layers whatever a context
     * asks (gemma3's rope.freq_base_swa, as llama.cpp's
     * rope_freq_base_train_swa); otherwise rope_swa is the full layers' rope
     * with the context's overrides (Mistral-style llama and starcoder2). */
    int32_t n_swa;
    bool swa_own_rope;
    hl_rope_params rope_swa;
    uint8_t swa_layers[HL_MAX_LAYERS / 8];
    /* RoPE as the file gives it, with llama.cpp's defaults (llama-model.cpp
     * load_hparams): a context resolves its rope from these and its
     * overrides (hl_rope_resolve); rope and rope_swa above are what a
     * context without overrides runs. */
    int32_t rope_scaling;        /* hearth_rope_scaling of rope.scaling.type: NONE, LINEAR (default), YARN */
    float rope_freq_base_train;  /* rope.freq_base (10000) */
    float rope_freq_scale_train; /* 1 / rope.scaling.factor, 1 when absent */
    int32_t n_ctx_orig_yarn;     /* rope.scaling.original_context_length (context_length) */
    float rope_attn_factor;      /* rope.scaling.attn_factor (1) */
} hl_hparams;

static inline bool hl_layer_is_swa(const hl_hparams *hp, int32_t il) {
    return hp->n_swa > 0 && (hp->swa_layers[il / 8] >> (il % 8) & 1);
}

/* The window layer il attends over (hl_attn_args.n_swa): 0 = the whole context. */
static inline int32_t hl_layer_window(const hl_hparams *hp, int32_t il) {
    return hl_layer_is_swa(hp, il) ? hp->n_swa : 0;
}

/* Weights of one transformer block. Shapes (ggml order, ne0 first):
 *   attn_norm, ffn_norm                F32 {n_embd}
 *   wq {n_embd, n_head*hd}   wk, wv {n_embd, n_head_kv*hd}   wo {n_head*hd, n_embd}
 *   ffn_gate, ffn_up {n_embd, n_ff}    ffn_down {n_ff, n_embd}
 * and, where the architecture has them (data NULL when absent):
 *   bq {n_head*hd}, bk, bv {n_head_kv*hd}  F32 biases (qwen2)
 *   attn_q_norm, attn_k_norm {hd}          F32 per-head RMSNorm (qwen3, gemma3)
 *   attn_post_norm, ffn_post_norm {n_embd} F32 norms after each block (gemma3)
 *   rope_freqs {n_rot/2}                   F32 rope frequency factors (llama 3)
 *   rope_long, rope_short {n_rot/2}        F32 LongRoPE frequency factors (phi3)
 *   attn_norm_b, ffn_norm_b, bo {n_embd}, ffn_up_b {n_ff}, ffn_down_b {n_embd}
 *                                          F32 LayerNorm and projection biases (gpt2, starcoder2, gptneox;
 *                                          falcon's LayerNorm biases only, its ffn_norm as HL_BIND_ATTN_NORM_2 says;
 *                                          gptj's attn_norm_b and feed-forward biases, HL_BIND_ONE_NORM)
 *   ffn_gate_inp {n_embd, n_expert}       the router of a mixture of experts (hp.n_expert > 0),
 *   ffn_gate_exps, ffn_up_exps {n_embd, n_ff, n_expert}, ffn_down_exps {n_ff, n_embd, n_expert}
 *                                          its stacked experts, in place of ffn_gate, ffn_up, ffn_down
 * A fused weight of the file (phi3's attn_qkv, ffn_up holding gate and up)
 * is bound as views of its row ranges: wq, wk, wv (bq, bk, bv) and ffn_gate,
 * ffn_up point into it, each a weight of its own to the backends.
 * HL_LAYER_TENSORS lists every field, so code that moves whole layers
 * (placement, upload to a device) visits each without naming them. */
#define HL_LAYER_TENSORS(X)                                                                              \
    X(attn_norm) X(wq) X(wk) X(wv) X(wo) X(bq) X(bk) X(bv) X(attn_q_norm) X(attn_k_norm) X(attn_post_norm) \
    X(ffn_norm) X(ffn_gate) X(ffn_up) X(ffn_down) X(ffn_post_norm) X(rope_freqs) X(rope_long) X(rope_short)   \
    X(attn_norm_b) X(bo) X(ffn_norm_b) X(ffn_up_b) X(ffn_down_b) X(ffn_gate_inp) X(ffn_gate_exps) X(ffn_up_exps)     \
    X(ffn_down_exps)

/* The output layer's weights, which sit on one device together (fields of
 * hearth_model), listed once for the code that places, sizes, uploads and
 * checks them. */
#define HL_OUTPUT_TENSORS(X) X(output_norm) X(output_norm_b) X(output) X(output_b)

typedef struct hl_layer {
#define HL_LAYER_FIELD(name) hl_tensor name;
    HL_LAYER_TENSORS(HL_LAYER_FIELD)
#undef HL_LAYER_FIELD
} hl_layer;

/* Activations of one forward pass and the KV cache, allocated by the context
 * for at most n_batch tokens and n_out outputs (tokens whose logits a pass
 * keeps). ne[1] of each activation is set to the tokens (outputs) of the
 * current pass. */
/* The per-token activations, each F32 {width, n}, with their widths named
 * as hl_work_widths' fields: x, the residual stream; xb, the normed input and
 * the attention output projection; q, k, v; att, attention's output; gate and
 * up, the feed-forward's. HL_WORK_ACTIVATIONS lists them once for the code
 * that plans, sizes and views them all. */
#define HL_WORK_ACTIVATIONS(X) X(x, n_embd) X(xb, n_embd) X(q, q_dim) X(k, kv_dim) X(v, kv_dim) X(att, q_dim) \
    X(gate, n_ff) X(up, n_ff) X(moe_logits, n_expert) X(moe_ids, n_expert_used) X(moe_w, n_expert_used)          \
    X(moe_gate, ff_exp) X(moe_up, ff_exp) X(moe_out, embd_exp)

typedef struct hl_work_widths {
    int64_t n_embd, q_dim, kv_dim, n_ff; /* q_dim = n_head * head_dim, kv_dim = n_head_kv * head_dim */
    /* a mixture of experts' (0 without): the router's logits, each token's
     * experts (moe_ids, I32) and their weights, the experts' gate and up
     * {n_ff, n_expert_used} (ff_exp = n_ff * n_expert_used) and outputs
     * {n_embd, n_expert_used} (embd_exp) */
    int64_t n_expert, n_expert_used, ff_exp, embd_exp;
} hl_work_widths;

typedef struct hl_work {
#define HL_WORK_FIELD(name, width) hl_tensor name;
    HL_WORK_ACTIVATIONS(HL_WORK_FIELD)
#undef HL_WORK_FIELD
    hl_tensor last;      /* F32 {n_embd, n_out}: final norm of the output tokens */
    hl_tensor logits;    /* F32 {n_vocab, n_out} */
    hl_tensor *k_cache;  /* per layer, F16 {n_head_kv*hd, n_ctx}: n_seq_max runs of n_ctx_seq cells */
    hl_tensor *v_cache;
    hl_rope_params rope, rope_swa; /* the context's rope of full and sliding-window layers (hl_rope_resolve) */
    bool rope_long;      /* LongRoPE: the context runs the long factors (hl_rope_long_factors) */
    int32_t out_tail;    /* the pass's first output row where its outputs are its last rows and not all of
                            them (hl_work_outputs), else 0; set per pass by hl_model_forward */
} hl_work;

/* What block il works on from its attention output on (after the output
 * projection and its bias). In the last block llama.cpp carries on only
 * with the rows whose logits the pass asks for (ggml_get_rows(cur,
 * inp_out_ids) in each model's graph), so the feed-forward of a prompt runs
 * for its last token alone: there, where those rows are the pass's last
 * ones (w->out_tail > 0), writes into *view the activations of *w from that
 * row on (the same buffers: results land in the rows the output layer
 * reads) and returns view; otherwise returns w. Every op after the switch
 * works row by row, so the kept rows get what llama.cpp computes for them,
 * batch size included. */
hl_work *hl_work_outputs(const hearth_model *m, int32_t il, hl_work *w, hl_work *view);

/* The rope of block il in a context: the sliding-window layers' or the others'. */
static inline const hl_rope_params *hl_layer_rope(const hl_hparams *hp, const hl_work *w, int32_t il) {
    return hl_layer_is_swa(hp, il) ? &w->rope_swa : &w->rope;
}

/* The rope frequency factors of block l in a context, or NULL when it has
 * none: rope_freqs where the file has it, else LongRoPE's long or short
 * factors as the context chose (llama.cpp llama_model::get_rope_factors). */
static inline const hl_tensor *hl_layer_freq_factors(const hl_layer *l, const hl_work *w) {
    const hl_tensor *t = l->rope_freqs.data ? &l->rope_freqs : w->rope_long ? &l->rope_long : &l->rope_short;
    return t->data ? t : NULL;
}

typedef struct hearth_model hearth_model;

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

struct hearth_model {
    gguf_file *gguf;
    void *file_copy;       /* the file read into memory when use_mmap is false */
    hl_vocab *vocab;
    const hl_arch *arch;
    hl_hparams hp;
    hl_tensor tok_embd;    /* {n_embd, n_vocab} */
    hl_tensor output_norm; /* F32 {n_embd} */
    hl_tensor output_norm_b; /* F32 {n_embd}: the final LayerNorm's bias (hp.layer_norm), else absent */
    hl_tensor pos_embd;    /* {n_embd, n_ctx_train}: learned position embeddings (gpt2), or absent */
    hl_tensor tok_norm, tok_norm_b; /* F32 {n_embd}: LayerNorm of the token embeddings (bloom), or absent */
    hl_tensor output;      /* {n_embd, n_vocab}; tok_embd when tied */
    hl_tensor output_b;    /* F32 {n_vocab}: the output matrix's bias (gptj's lm_head), or absent */
    hl_layer *layers;      /* [n_layer] */
    /* a CPU instance that holds no scratch: load asks it (supports_op)
     * whether the host computes each weight */
    hl_backend *host;
    /* placement (model/placement.c): weights of offloaded layers live in
     * gpu_weights[d], held by the weight-only backend gpu[d] */
    int8_t *layer_dev;     /* [n_layer] GPU of each block, -1 = host */
    int32_t output_dev;    /* GPU of output_norm and output, -1 = host */
    int32_t n_gpu_layers;  /* blocks on GPUs, +1 when the output layer is */
    size_t gpu_bytes;      /* weights on GPUs */
    hl_backend *gpu[HL_MAX_GPUS];
    int32_t gpu_id[HL_MAX_GPUS]; /* device (gpu.h's number) of each gpu[d]: the selection, in order */
    void *gpu_weights[HL_MAX_GPUS];
    uint64_t n_params, n_bytes;
    char desc[128];
    size_t gpu_dev_bytes[HL_MAX_GPUS]; /* weights on each gpu[d] (placement's figures) */
    /* the vocabulary's token trie for grammars, built by the first sampler
     * that needs it (runtime/sampler_grammar.c) and published atomically */
    _Atomic(hl_token_trie *) trie;
};

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

/* A run of consecutive blocks [il0, il1) on one backend, with that
 * backend's activations; il0 == il1 for a stage that only runs the output. */
typedef struct hl_stage {
    hl_backend *b;
    hl_work *w;
    int32_t il0, il1;
} hl_stage;

#define HL_MAX_STAGES (HL_MAX_GPUS + 2)

/* How a context runs the model: the host (CPU backend and activations),
 * where the token embeddings are looked up and the logits end, then the
 * stages in order; the last runs the final norm and output matrix. */
typedef struct hl_pipeline {
    hl_backend *host;
    hl_work *host_work;
    int32_t n_stages;
    hl_stage stage[HL_MAX_STAGES];
} hl_pipeline;

/* The stages of the model's placement: blocks on the host use host/host_work,
 * blocks on GPU d use gpu[d]/gpu_work[d]. */
void hl_pipeline_init(const hearth_model *m, hl_backend *host, hl_work *host_work, hl_backend *const *gpu,
                      hl_work *gpu_work, hl_pipeline *out);

/* The tokens of one forward pass (n <= n_ubatch), each at its place in its
 * sequence: token t has position pos[t] and its sequence's KV cells start at
 * row row0[t]. out lists the tokens (indices into the pass) whose logits are
 * wanted, n_out of them (0: none); their logits take the output rows
 * [out_row0, out_row0 + n_out) (a batch split into passes keeps each pass's
 * outputs after the earlier ones'). */
typedef struct hl_pass {
    const int32_t *tokens, *pos, *row0; /* [n] */
    int32_t n;
    const int32_t *out;                 /* [n_out] */
    int32_t n_out;
    int32_t out_row0;
} hl_pass;

/* Runs a pass through the model: embedding lookup on the host (times
 * hp.embd_scale), every block by m->arch->layer on its stage's backend, the
 * hidden state {n_embd, n} copied across stage boundaries, and for the
 * output tokens the final norm and output matrix, their logits left in rows
 * out_row0... of host_work->logits {n_vocab, *} (a long prompt's earlier passes ask
 * for none and skip the output matrix). A one-token pass on a backend with
 * graph_run is recorded once and replayed. Returns after every backend has
 * finished, with the first error one of them reports (DEVICE, ...). */
hearth_status hl_model_forward(const hearth_model *m, const hl_pipeline *p, const hl_pass *pass);

/* The attention inputs of block l from its normed input w->xb {n_embd, n}:
 * q, k, v = wq, wk, wv times xb, plus the biases the layer has, then the
 * per-head RMSNorm of q and k where the layer has QK-norm weights (before
 * rope, as qwen3 and gemma3 do). */
hearth_status hl_attn_qkv(const hearth_model *m, hl_backend *b, hl_work *w, const hl_layer *l);

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

/* ---- hparams.c: metadata and weights shared by the architectures */

/* Reads "<arch>.<suffix>" as an int32 (from any integer type that fits);
 * absent and not required leaves *out as preset. Errors: FORMAT. */
hearth_status hl_arch_u32(const gguf_file *f, const char *arch, const char *suffix, bool required, int32_t *out);
hearth_status hl_arch_f32(const gguf_file *f, const char *arch, const char *suffix, bool required, float *out);

/* Reads the hyperparameters every transformer architecture has, from the keys
 * "<arch>.*" with llama.cpp's defaults (llama-model.cpp load_hparams):
 * context_length, embedding_length, block_count, feed_forward_length,
 * attention.head_count[_kv], attention.layer_norm_rms_epsilon (required, as
 * each of llama.cpp's llama/qwen2/qwen3/gemma3 loaders asks; attention.
 * layer_norm_epsilon instead where hp->layer_norm is set), attention.
 * key_length / value_length (head size, default n_embd / n_head),
 * rope.dimension_count (default the head size), rope.freq_base (10000) and
 * rope.scaling.{type,factor,original_context_length,attn_factor} (none,
 * linear or yarn; llama.cpp reads the yarn_* keys only for architectures
 * hearth does not run). Sets the rope mode to `rope_mode`,
 * attn_scale to 1/sqrt(head_dim), embd_scale to 1, no sliding window.
 * Errors: FORMAT (missing or out-of-range values), UNSUPPORTED (head sizes or
 * rope scaling hearth does not run). */
hearth_status hl_hparams_read(const gguf_file *f, const char *arch, hl_rope_mode rope_mode, hl_hparams *hp);

/* `<arch>.attention.sliding_window` when the file sets one (> 0): every
 * layer attends over that many positions, with the full layers' rope, as
 * Mistral 7B (Jiang et al. 2023, arXiv:2310.06825, section 2) and
 * StarCoder 2 were trained and as Hugging Face transformers runs them (each
 * query sees the window's keys up to its own position: q - k < n_swa).
 * llama.cpp 0.3.36 ignores the key for llama and starcoder2; hearth differs
 * from it past the window only. Errors: FORMAT (a window above INT32_MAX). */
hearth_status hl_hparams_sliding_window(const gguf_file *f, const char *arch, hl_hparams *hp);

/* The context length a context gets by default, per sequence: n_ctx_train,
 * at most 4096 tokens. */
uint32_t hl_default_n_ctx(const hl_hparams *hp);

/* The rope a context runs (full-attention layers, sliding-window layers):
 * the file's values in hp with the overrides of `cp`, as llama.cpp's
 * llama_context resolves its cparams (llama-context.cpp): the scaling type,
 * base, scale and YaRN's original context from cp when set; ext_factor 1
 * for YaRN; YaRN's attention factor; times rope.scaling.attn_factor. The
 * sliding-window layers keep their own base and scale (hp->rope_swa), as
 * llama.cpp's get_rope_freq_base/scale do. Errors: INVALID_ARG (an unknown
 * scaling type, a base or scale <= 0, YaRN values out of range). */
hearth_status hl_rope_resolve(const hl_hparams *hp, const hearth_context_params *cp, hl_rope_params *full,
                              hl_rope_params *swa);

/* Whether a context of n_ctx_seq cells a sequence runs LongRoPE's long
 * factors: llama.cpp's n_ctx_seq (padded to a multiple of 256) above
 * rope.scaling.original_context_length (llama_model::get_rope_factors). */
bool hl_rope_long_factors(const hl_hparams *hp, uint32_t n_ctx_seq);

/* FORMAT unless rope turns whole heads (n_rot == head_dim), which llama.cpp
 * requires of llama (load_hparams) and asserts for qwen2 and qwen3. */
hearth_status hl_hparams_full_rope(const char *arch, const hl_hparams *hp);

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
