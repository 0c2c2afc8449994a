/* A model's hyperparameters (hl_hparams): sizes, norms, residual layout,
 * attention scale, sliding window and rope, as the architectures read them
 * from the GGUF metadata; the shared readers of hparams.c that fill them
 * from "<arch>.*" keys with llama.cpp's defaults; and rope.c's resolution of
 * the rope a context runs from them and its overrides. */
#ifndef HEARTH_MODEL_HPARAMS_H
#define HEARTH_MODEL_HPARAMS_H

#include "backend/backend.h"
#include "gguf/gguf.h"

#define HL_MAX_LAYERS 4096
#define HL_MAX_HEAD_DIM 512 /* the CPU attention keeps one head on the stack */

/* How a block's attention and feed-forward join the residual stream x. */
typedef enum hl_residual {
    HL_RESIDUAL_SEQUENTIAL,              /* x += attn(norm1(x)); x += ffn(norm2(x)) */
    HL_RESIDUAL_PARALLEL,                /* x + attn(norm1(x)) + ffn(norm2(x)), added as (x + ffn) + attn (gptneox's
                               use_parallel_residual) */
    HL_RESIDUAL_PARALLEL_BRANCHES_FIRST, /* the same added as x + (ffn + attn) (falcon's, gptj's) */
} hl_residual;

typedef struct hl_hparams {
    int32_t n_vocab;
    int32_t n_ctx_train;
    int32_t n_embd;
    int32_t n_layer;
    int32_t n_head;
    int32_t n_head_kv;
    int32_t head_dim; /* n_embd / n_head unless the file says otherwise */
    int32_t n_ff;
    int32_t n_expert; /* mixture of experts (Mixtral-style llama): experts per block, 0 = a dense
                             feed-forward; n_expert_used of them (top-k) run for each token */
    int32_t n_expert_used;
    int32_t n_token_types; /* rows of the token-type embeddings (bert's token_type_count), 0 = none */
    int32_t pooling_type;  /* hearth_pooling_type the file gives (<arch>.pooling_type), NONE when absent */
    int32_t n_cls_out;     /* outputs of the classification head pooling RANK runs (hl_bert_hparams), 0 = none */
    float norm_eps;        /* the norm's epsilon: RMSNorm's, or LayerNorm's where the architecture's norm is
                             HL_OP_LAYER_NORM (hl_arch.norm) */
    hl_residual residual;  /* how a block adds its attention and feed-forward to the residual stream */
    float embd_scale;      /* token embeddings are multiplied by it (gemma: sqrt(n_embd)); 1 = none */
    float max_alibi_bias;  /* ALiBi's (hl_attn_args.max_bias: mpt's attention.max_alibi_bias, bloom's 8); 0 = none */
    float clamp_kqv;       /* q, k and v clamped to [-c, c] after their biases (mpt's attention.clamp_kqv); 0 = none */
    float attn_scale;      /* multiplies K.q in attention; 1/sqrt(head_dim) unless the architecture says otherwise */
    bool scale_q;          /* hl_llama_layer puts attn_scale on the queries (in F32, after rope) and runs
                             attention with scale 1, as llama.cpp's phi3 graph does; false unless set */
    hl_rope_params rope;   /* rope of the full-attention layers */
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

/* Reads "<arch>.<suffix>" as an int32 (from any integer type that fits);
 * absent and not required leaves *out as preset. Errors: FORMAT. */
hearth_status hl_arch_u32(const gguf_file *f, const char *arch, const char *suffix, bool required, int32_t *out);
hearth_status hl_arch_f32(const gguf_file *f, const char *arch, const char *suffix, bool required, float *out);

/* Reads the hyperparameters every transformer architecture has, from the keys
 * "<arch>.*" with llama.cpp's defaults (llama-model.cpp load_hparams):
 * context_length, embedding_length, block_count, feed_forward_length,
 * attention.head_count[_kv], attention.layer_norm_rms_epsilon (required, as
 * each of llama.cpp's llama/qwen2/qwen3/gemma3 loaders asks; attention.
 * layer_norm_epsilon instead where m->arch->norm is LayerNorm), attention.
 * key_length / value_length (head size, default n_embd / n_head),
 * rope.dimension_count (default the head size), rope.freq_base (10000) and
 * rope.scaling.{type,factor,original_context_length,attn_factor} (none,
 * linear or yarn; llama.cpp reads the yarn_* keys only for architectures
 * hearth does not run). Sets the rope mode to `rope_mode`,
 * attn_scale to 1/sqrt(head_dim), embd_scale to 1, no sliding window.
 * Errors: FORMAT (missing or out-of-range values), UNSUPPORTED (head sizes or
 * rope scaling hearth does not run). */
hearth_status hl_hparams_read(hearth_model *m, hl_rope_mode rope_mode);

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

#endif
