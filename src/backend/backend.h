/* The backend interface: one instance per device, a struct of function
 * pointers (modelled on ggml's ggml_backend_i). The model code issues the fused
 * ops a transformer needs through it and never branches on the device. Every
 * tensor handed to an op carries its type, shape and the backend that owns its
 * memory. Ops are asynchronous on devices that can be; synchronize() waits.
 * What a backend can run is a question to it (supports_op), never an include
 * of its headers; callers reach the table through the checked calls of
 * ops.h, which refuse a call that breaks the contracts below.
 *
 * Shapes follow ggml: ne[0] is the innermost (contiguous) dimension, so an
 * activation matrix of n tokens by d features has ne = {d, n, 1, 1} and a
 * weight matrix mapping d_in -> d_out has ne = {d_in, d_out, 1, 1}. */
#ifndef HEARTH_BACKEND_H
#define HEARTH_BACKEND_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef struct hl_backend hl_backend;

typedef struct hl_tensor {
    uint32_t type; /* ggml type id (gguf/ggml_types.h) */
    int64_t ne[4]; /* elements per dimension, ne[0] innermost */
    void *data;    /* in `backend`'s memory, rows contiguous */
    hl_backend *backend;
    size_t capacity; /* bytes `data` holds, for tensors whose shape changes
                           per pass (activations planned for n_batch tokens):
                           the checked calls (ops.h) refuse a larger shape;
                           0 = exactly the shape's bytes */
} hl_tensor;

/* How rotary embeddings pair dimensions, with ggml's mode numbers. */
typedef enum hl_rope_mode {
    HL_ROPE_NONE = -1,  /* no rotary embedding (learned positions: gpt2); no backend ropes it */
    HL_ROPE_NORMAL = 0, /* pairs (x[2i], x[2i+1]): llama, mistral */
    HL_ROPE_NEOX = 2,   /* pairs (x[i], x[i + n_rot/2]): GPT-NeoX, qwen2, qwen3, gemma3 */
} hl_rope_mode;

/* Rotary position embedding parameters (RoFormer, Su et al. 2021,
 * arXiv:2104.09864) as llama.cpp's ggml_rope_ext applies them (ggml-cpu
 * ops.cpp rope_yarn): pair i of a head has the angle
 *   theta_extrap = pos * base^(-2i/n_rot) / ff[i],
 *   theta_interp = freq_scale * theta_extrap,
 * where ff are the optional per-pair frequency factors (Llama 3 rope scaling
 * stores them in the GGUF as rope_freqs.weight; 1 when absent). Without
 * YaRN (ext_factor 0) the angle is theta_interp and cos, sin are multiplied
 * by attn_factor. With YaRN (Peng et al. 2023, arXiv:2309.00071; ext_factor
 * != 0) the angle mixes the two by ramp_mix = ext_factor * (1 - clamp((i -
 * lo) / max(0.001, hi - lo), 0, 1)), with [lo, hi] the correction dims of
 * hl_rope_yarn_corr_dims, and cos, sin are multiplied by attn_factor * (1 +
 * 0.1 ln(1 / freq_scale)). hl_rope_yarn_consts gives every backend the
 * same per-op numbers. */
typedef struct hl_rope_params {
    int32_t n_rot;              /* dimensions rotated per head (<= head_dim, even) */
    int32_t mode;               /* hl_rope_mode */
    float freq_base;            /* theta base, e.g. 10000 */
    float freq_scale;           /* 1 / linear scaling factor */
    int32_t n_ctx_orig;         /* YaRN: the context length the model was trained on, tokens */
    float ext_factor;           /* YaRN: extrapolation mix; 0 = no YaRN */
    float attn_factor;          /* magnitude scale of cos and sin (1 = none) */
    float beta_fast, beta_slow; /* YaRN: the ramp's ends, in rotations over n_ctx_orig (32, 1) */
} hl_rope_params;

/* The per-op numbers of a rope every backend uses (inline, so the CUDA
 * module has it too): theta_scale = base^(-2/n_rot); corr[0..1] the YaRN
 * ramp's ends in pairs (ggml.c ggml_rope_yarn_corr_dims); mscale the factor
 * of cos and sin. Float throughout, as ggml computes them. */
typedef struct hl_rope_consts {
    float theta_scale;
    float corr[2];
    float mscale;
} hl_rope_consts;

/* The pair where YaRN's ramp for `rotations` over n_ctx_orig tokens sits
 * (ggml.c ggml_rope_yarn_corr_dim; 3.14159265f is (float)M_PI). */
static inline float hl_rope_yarn_corr_dim(int32_t n_dims, int32_t n_ctx_orig, float rotations, float base) {
    return (float)n_dims * logf((float)n_ctx_orig / (rotations * 2 * 3.14159265358979323846f)) / (2 * logf(base));
}

static inline hl_rope_consts hl_rope_yarn_consts(const hl_rope_params *p) {
    hl_rope_consts k;
    k.theta_scale = powf(p->freq_base, -2.0f / (float)p->n_rot);
    /* the start floored, the end ceiled, clamped to [0, n_rot - 1] */
    const float start = floorf(hl_rope_yarn_corr_dim(p->n_rot, p->n_ctx_orig, p->beta_fast, p->freq_base));
    const float end = ceilf(hl_rope_yarn_corr_dim(p->n_rot, p->n_ctx_orig, p->beta_slow, p->freq_base));
    k.corr[0] = start > 0.0f ? start : 0.0f;
    k.corr[1] = (float)(p->n_rot - 1) < end ? (float)(p->n_rot - 1) : end;
    /* rope_yarn: mscale *= 1 + 0.1 ln(1 / freq_scale), which GCC contracts
     * into one FMA in llama.cpp's build */
    k.mscale = p->ext_factor != 0.0f ? p->attn_factor * fmaf(0.1f, logf(1.0f / p->freq_scale), 1.0f) : p->attn_factor;
    return k;
}

/* ramp_mix of pair i (see hl_rope_params), as ggml's rope_yarn_ramp times
 * ext_factor; 0 when ext_factor is 0. Shared by the host backends. */
static inline float hl_rope_ramp_mix(const hl_rope_consts *k, const hl_rope_params *p, int32_t i) {
    if (p->ext_factor == 0.0f) return 0.0f;
    const float span = k->corr[1] - k->corr[0] > 0.001f ? k->corr[1] - k->corr[0] : 0.001f;
    const float y = ((float)i - k->corr[0]) / span;
    return (1.0f - (y < 0.0f ? 0.0f : y > 1.0f ? 1.0f : y)) * p->ext_factor;
}

/* Attention of a batch of queries over the KV cache of one layer. K and V
 * rows are stored per cell: k_cache ne = {head_dim * n_head_kv, n_ctx},
 * each sequence owning a run of cells (see set_positions). Query token t, at
 * position pos[t] of the sequence whose cells start at row0[t], attends to
 * that sequence's cells [row0[t], row0[t] + pos[t]] (causal), or, where
 * `bidirectional` is set (an encoder's), to all of them up to the last
 * position of the sequence's tokens in the pass: the tokens of other
 * sequences are never seen. Grouped-query attention: query head h reads KV
 * head h / (n_head / n_head_kv) (Ainslie et al. 2023, arXiv:2305.13245). */
typedef struct hl_attn_args {
    const hl_tensor *q;       /* F32 {head_dim * n_head, n_tokens} */
    const hl_tensor *k_cache; /* {head_dim * n_head_kv, n_ctx}: F16, or what supports_op accepts */
    const hl_tensor *v_cache; /* {head_dim * n_head_kv, n_ctx}: F16, or what supports_op accepts */
    hl_tensor *out;           /* F32 {head_dim * n_head, n_tokens} */
    int32_t n_head, n_head_kv, head_dim;
    int32_t n_swa;      /* sliding window: query at position p sees keys at
                                 positions > p - n_swa; 0 = the whole causal past */
    float scale;        /* usually 1/sqrt(head_dim) */
    float max_bias;     /* ALiBi (hl_alibi_slope): > 0 adds slope(h) * -|p - j| to the
                                 score of a query at position p for the key at position j;
                                 0 = none */
    bool bidirectional; /* an encoder's attention: no causal mask (see above); a backend
                                 without it refuses in supports_op */
} hl_attn_args;

/* ALiBi's slope of query head h of n_head (Press, Smith & Lewis 2022,
 * arXiv:2108.12409) as ggml computes it (ggml-cpu ops.cpp soft_max and
 * flash_attn_ext): with n = the largest power of two <= n_head, m0 =
 * 2^(-max_bias / n) and m1 = 2^(-max_bias / 2 / n), head h < n has m0^(h+1)
 * and the others m1^(2 (h - n) + 1), the heads a power-of-two count leaves
 * out interleaved between the first ones' slopes. llama.cpp's mask holds
 * -|p - j| (llama-kv-cache.cpp set_input_kq_mask with use_alibi), times this
 * slope. 1 when max_bias is 0 (unused then). */
static inline float hl_alibi_slope(int32_t n_head, float max_bias, int32_t h) {
    if (max_bias <= 0.0f) return 1.0f;
    const uint32_t n_log2 = 1u << (uint32_t)floor(log2((double)n_head));
    const float m0 = powf(2.0f, -max_bias / (float)n_log2), m1 = powf(2.0f, -(max_bias / 2.0f) / (float)n_log2);
    return (uint32_t)h < n_log2 ? powf(m0, (float)(h + 1)) : powf(m1, (float)(2 * ((uint32_t)h - n_log2) + 1));
}

/* The ops of the interface, with the tensors each one takes in the order of
 * its slot's arguments (hl_op_desc.t): supports_op is asked about them,
 * ops.h checks calls of them, the op tests name them (-o). */
#define HL_OPS(X)                                                                                                      \
    X(GET_ROWS, get_rows)     /* table, out */                                                                         \
    X(RMS_NORM, rms_norm)     /* x, w, y */                                                                            \
    X(LAYER_NORM, layer_norm) /* x, w, b, y */                                                                         \
    X(MATMUL, matmul)         /* w, x, y */                                                                            \
    X(MATMUL_ADD, matmul_add) /* w, x, y (tmp) */                                                                      \
    X(ROPE, rope)             /* x, freq_factors */                                                                    \
    X(ROPE_SHIFT, rope_shift) /* cache, freq_factors */                                                                \
    X(ROPE_STORE, rope_store) /* q, k, v, k_cache, v_cache, freq_factors */                                            \
    X(STORE_ROWS, store_rows) /* src, cache */                                                                         \
    X(ATTENTION, attention)   /* q, k_cache, v_cache, out */                                                           \
    X(SWIGLU, swiglu)         /* gate, up */                                                                           \
    X(GEGLU, geglu)           /* gate, up */                                                                           \
    X(GELU, gelu)             /* x */                                                                                  \
    X(ADD, add)               /* x, y */                                                                               \
    X(SCALE, scale)           /* x */                                                                                  \
    X(CLAMP, clamp)           /* x */                                                                                  \
    X(MOE_ROUTE, moe_route)   /* logits, ids, weights */                                                               \
    X(MATMUL_ID, matmul_id)   /* w, x, ids, y */                                                                       \
    X(MOE_SUM, moe_sum)       /* y, weights, out */

typedef enum hl_op {
// clang-format off
#define HL_OP_ENUM(id, name) HL_OP_##id,
    HL_OPS(HL_OP_ENUM)
#undef HL_OP_ENUM
    HL_OP_COUNT
    // clang-format on
} hl_op;

#define HL_OP_MAX_TENSORS 6

/* Most weights one matmul_n takes. */
#define HL_MATMUL_N_MAX 3

/* Most experts a mixture-of-experts layer routes over (llama.cpp's LLAMA_MAX_EXPERTS). */
#define HL_MOE_MAX_EXPERTS 512

/* An op as supports_op sees it: its tensors (types and shapes; data is not
 * read and may be NULL) in the order HL_OPS lists, NULL past the last and
 * for an absent optional one (rope's freq_factors), and the parameters that
 * decide whether a kernel exists. */
typedef struct hl_op_desc {
    hl_op op;
    const hl_tensor *t[HL_OP_MAX_TENSORS];
    int32_t n_head;             /* ROPE, ROPE_SHIFT: heads in a row; ROPE_STORE: in q's row */
    const hl_rope_params *rope; /* ROPE, ROPE_SHIFT, ROPE_STORE */
    const hl_attn_args *attn;   /* ATTENTION */
} hl_op_desc;

/* "matmul", "rms_norm" ...; NULL for a value out of range. */
const char *hl_op_name(hl_op op);

/* The op named `name` (as hl_op_name spells it), or HL_OP_COUNT. */
hl_op hl_op_from_name(const char *name);

typedef struct hl_backend_i {
    const char *(*name)(const hl_backend *b);
    /* Frees the instance its backend's init made (registry.h, host.h) and
     * its scratch, after its ops finish; b is not NULL. */
    void (*free)(hl_backend *b);
    /* free and total memory of the device, bytes */
    void (*mem_info)(const hl_backend *b, size_t *free_bytes, size_t *total_bytes);

    /* Device memory. buffer_alloc errors: OUT_OF_MEMORY with the size in the message. */
    hearth_status (*buffer_alloc)(hl_backend *b, size_t bytes, void **out);
    void (*buffer_free)(hl_backend *b, void *ptr);
    hearth_status (*upload)(hl_backend *b, void *dst, const void *host_src, size_t bytes);
    hearth_status (*download)(hl_backend *b, void *host_dst, const void *src, size_t bytes);
    /* bytes from src to dst, both in this backend's memory (KV cells of one
     * sequence to another); ordered with the ops, may return before done */
    hearth_status (*copy)(hl_backend *b, void *dst, const void *src, size_t bytes);

    /* Where the tokens of the next ops sit: token t of a pass has position
     * pos[t] in its sequence, whose KV cache cells start at row row0[t] (a
     * sequence owns n_ctx_seq consecutive rows). rope, store_rows and
     * attention read them. Host arrays of n <= max_tokens entries, copied
     * (a device backend keeps them in device memory, where a recorded graph
     * reads them), so the caller may reuse them at once. */
    void (*set_positions)(hl_backend *b, const int32_t *pos, const int32_t *row0, int32_t n);

    /* out {d, n} F32 = rows ids[0..n) of table {d, n_rows} (any type) */
    void (*get_rows)(hl_backend *b, const hl_tensor *table, const int32_t *ids, hl_tensor *out);
    /* y = x / sqrt(mean(x^2) + eps) * w over each run of d = w->ne[0]
     * elements (Zhang & Sennrich 2019, arXiv:1910.07467); x, y F32 with
     * ne[0] a multiple of d (a row, or every head of a row for QK-norm);
     * w F32 {d}; y may alias x */
    void (*rms_norm)(hl_backend *b, const hl_tensor *x, const hl_tensor *w, float eps, hl_tensor *y);
    /* y = (x - mean(x)) / sqrt(var(x) + eps) * w + bias over each row of
     * d = w->ne[0] elements, var the mean of (x - mean)^2 (LayerNorm, Ba et
     * al. 2016, arXiv:1607.06450; ggml_norm then ggml_mul and ggml_add, as
     * llama.cpp's build_norm LLM_NORM); x, y F32 {d, n}; w, bias F32 {d},
     * bias NULL for none (mpt's: norm times w only); y may alias x */
    void (*layer_norm)(hl_backend *b, const hl_tensor *x, const hl_tensor *w, const hl_tensor *bias, float eps,
                       hl_tensor *y);
    /* y {d_out, n} F32 = x {d_in, n} F32 times w {d_in, d_out}^T (any supported type) */
    void (*matmul)(hl_backend *b, const hl_tensor *w, const hl_tensor *x, hl_tensor *y);
    /* Optional (NULL: the checked call, ops.h hl_matmul_add, runs matmul
     * into a scratch tensor and then add): y {d_out, n} F32 += x {d_in, n}
     * F32 times w {d_in, d_out}^T, each element y + (its product), as
     * matmul then add round it; y does not overlap x. A block's output
     * projection and its residual add in one op: one launch a step instead
     * of two on a GPU. */
    void (*matmul_add)(hl_backend *b, const hl_tensor *w, const hl_tensor *x, hl_tensor *y);
    /* Optional (NULL: the checked call, ops.h hl_matmul_n, runs the
     * matmuls one by one): y[i] = x w[i]^T for i < n (1 <= n <=
     * HL_MATMUL_N_MAX), each as matmul computes it: one input through the
     * weights that read it (a block's Q, K and V; gate and up) in one op,
     * one launch for the weights of one type on a GPU, one conversion of x
     * and one fork-join for them on the CPU. Each (w[i], x, y[i])
     * is a matmul the backend supports. */
    void (*matmul_n)(hl_backend *b, int n, const hl_tensor *const *w, const hl_tensor *x, hl_tensor *const *y);
    /* in place on x F32 {head_dim * n_head, n}; token t at position pos[t]
     * (set_positions); freq_factors F32 {n_rot / 2} or NULL */
    void (*rope)(hl_backend *b, hl_tensor *x, int32_t n_head, const hl_rope_params *p, const hl_tensor *freq_factors);
    /* Rows [row, row + n) of a KV cache {n_head * head_dim, n_ctx} (F16,
     * or what supports_op accepts) rotated in place as rope does with
     * position `delta` for every row: keys stored at position q then have
     * position q + delta (llama.cpp's K-shift, llama-kv-cache.cpp
     * build_rope_shift: each row converted to F32, rotated, converted back
     * to the cache's type; a quantized head requantized whole). */
    void (*rope_shift)(hl_backend *b, hl_tensor *cache, int64_t row, int64_t n, int32_t n_head, int32_t delta,
                       const hl_rope_params *p, const hl_tensor *freq_factors);
    /* writes row t of src F32 {d, n} into row row0[t] + pos[t] (set_positions)
     * of cache {d, n_ctx}, in the cache's type */
    void (*store_rows)(hl_backend *b, const hl_tensor *src, hl_tensor *cache);
    /* Optional (NULL: the checked call, ops.h hl_rope_store, runs rope on q
     * and on k, then store_rows of k and of v): a block's rotary embedding
     * and KV store in one op, one launch a step instead of four on a GPU.
     * q F32 {head_dim * n_head, n} roped in place as rope does; k F32
     * {head_dim * n_head_kv, n} roped as rope does into k_cache, as
     * store_rows writes it (k itself is left as it was, or roped); v F32
     * stored into v_cache. supports_op answers for the fused kernel where
     * the backend has one (CUDA's: both caches of one type), else for the
     * four ops; where the fused kernel does not take an op, the checked
     * call runs the four ops. */
    void (*rope_store)(hl_backend *b, hl_tensor *q, hl_tensor *k, const hl_tensor *v, hl_tensor *k_cache,
                       hl_tensor *v_cache, int32_t n_head, const hl_rope_params *p, const hl_tensor *freq_factors);
    void (*attention)(hl_backend *b, const hl_attn_args *args);
    /* gate = silu(gate) * up, elementwise over F32 tensors of equal shape
     * (SwiGLU, Shazeer 2020, arXiv:2002.05202) */
    void (*swiglu)(hl_backend *b, hl_tensor *gate, const hl_tensor *up);
    /* gate = gelu(gate) * up with GELU's tanh approximation (GeGLU, Shazeer
     * 2020; Hendrycks & Gimpel 2016, arXiv:1606.08415), as swiglu */
    void (*geglu)(hl_backend *b, hl_tensor *gate, const hl_tensor *up);
    /* x = gelu(x) in place, F32, with GELU's tanh approximation 0.5 x (1 +
     * tanh(sqrt(2/pi) (x + 0.044715 x^3))) (Hendrycks & Gimpel 2016; ggml_gelu,
     * the feed-forward of gpt2, starcoder2, gptneox) */
    void (*gelu)(hl_backend *b, hl_tensor *x);
    /* x += y; x F32 {d, n}; y F32 {d, n}, or {d} added to every column (a bias) */
    void (*add)(hl_backend *b, hl_tensor *x, const hl_tensor *y);
    /* x *= s, F32 */
    void (*scale)(hl_backend *b, hl_tensor *x, float s);
    /* x = min(max(x, lo), hi) in place, F32 (ggml_clamp: mpt's clamp_kqv on
     * the q, k and v projections, [-c, c]) */
    void (*clamp)(hl_backend *b, hl_tensor *x, float lo, float hi);
    /* Mixture-of-experts routing (Mixtral, Jiang et al. 2024,
     * arXiv:2401.04088), as llama.cpp's build_moe_ffn with softmax gating
     * and norm_w (llama-graph.cpp): for each token t, p = softmax(logits
     * F32 {n_expert, n} column t) (expf(x - max) times 1 / the sum taken in
     * double, ggml_soft_max); ids I32 {k, n} column t = the k experts of
     * highest p, highest first; weights F32 {k, n} column t = their p
     * divided by max(their sum (in double, rounded to float), 6.103515625e-5). */
    void (*moe_route)(hl_backend *b, const hl_tensor *logits, hl_tensor *ids, hl_tensor *weights);
    /* Expert matmul (ggml_mul_mat_id): y[:, j, t] = w[:, :, ids[j, t]]^T
     * times x[:, j mod n_x, t]; w {d_in, d_out, n_expert} (any type matmul
     * takes), x F32 {d_in, n_x, n} with n_x 1 or k, ids I32 {k, n}, y F32
     * {d_out, k, n}. Each product is the matmul of one expert's slice. */
    void (*matmul_id)(hl_backend *b, const hl_tensor *w, const hl_tensor *x, const hl_tensor *ids, hl_tensor *y);
    /* out[:, t] = y[:, 0, t] w[0, t] + y[:, 1, t] w[1, t] + ..., in F32 and
     * in that order (llama.cpp: ggml_mul by the weights, then ggml_add of
     * the expert views one by one); y F32 {d, k, n}, weights F32 {k, n},
     * out F32 {d, n} */
    void (*moe_sum)(hl_backend *b, const hl_tensor *y, const hl_tensor *weights, hl_tensor *out);
    /* Whether this backend runs `op` with the types and shapes of its
     * tensors: the weight, table and cache types it has kernels for, head
     * sizes, rope modes. What an instance was sized for (tokens, row
     * length, attention span) is not asked here: that is its limits, which
     * ops.h checks. Answers from the instance's kernels (a CPU instance
     * held to the scalar ones answers for those); reads no tensor data.
     * Never NULL. */
    bool (*supports_op)(const hl_backend *b, const hl_op_desc *op);

    /* Waits for every op issued so far. Returns the first error an op hit
     * since the last call (ops return nothing: a device backend records a
     * failed launch or fault with its file and line), with its message set;
     * the record is then cleared. */
    hearth_status (*synchronize)(hl_backend *b);

    /* Optional (NULL when the backend has none): runs the ops issue(ctx)
     * issues as one recorded unit (a CUDA graph). The first call with a
     * `key` records them: issue runs once and its ops are captured, not
     * executed, then the record is launched. Later calls with that key
     * launch the record without calling issue. So the ops issue makes must
     * be the same every time for a key, on the same tensors; positions
     * reach them only through set_positions (called before graph_run,
     * outside the record: kernels read them from device memory). If
     * recording fails the backend runs issue eagerly from then on. When
     * issue returns an error (a checked call refused an op), nothing is
     * kept for the key and graph_run returns that error; otherwise OK (the
     * ops' own errors come from synchronize). key < HL_GRAPH_KEYS. */
    hearth_status (*graph_run)(hl_backend *b, int key, hearth_status (*issue)(void *ctx), void *ctx);
} hl_backend_i;

/* Distinct records graph_run keeps per backend instance: forward.c keys
 * them by stage and by whether the stage computes logits, and one GPU can
 * run several stages of a pass (blocks kept on the host between its
 * runs), so 2 x HL_MAX_STAGES (model.h, 36) at most. */
#define HL_GRAPH_KEYS 40

/* What an instance's scratch was sized for when it was made; the checked
 * calls (ops.h) refuse larger ops. max_tokens 0: an instance that only
 * holds weights and runs no op. */
typedef struct hl_backend_limits {
    int64_t max_tokens; /* tokens in one op (n_batch) */
    int64_t max_row;    /* longest matmul input row */
    int64_t max_span;   /* most cache cells one query attends over; INT64_MAX: no limit */
} hl_backend_limits;

/* The tokens of the last hl_set_positions (ops.h keeps it, so rope,
 * store_rows and attention can be checked against the cache they touch). */
typedef struct hl_pass_extent {
    int64_t n;    /* tokens with a position */
    int64_t end;  /* one past the highest cache row they use (row0 + pos) */
    int64_t span; /* the most positions one of them attends over (pos + 1) */
} hl_pass_extent;

struct hl_backend {
    const hl_backend_i *iface; /* callers go through ops.h, not the table */
    void *impl;
    hl_backend_limits limits; /* set by the backend's init */
    hl_pass_extent pass;      /* set by hl_set_positions */
};

/* Number of elements and bytes of a tensor (its rows in its type). */
int64_t hl_tensor_nelements(const hl_tensor *t);
size_t hl_tensor_nbytes(const hl_tensor *t);

#endif
