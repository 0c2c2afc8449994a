/* The backend interface: one instance per device, a struct of function
 * pointers (modelled on ggml's ggml_backend_i). The model code issues the fused
 * ops a transformer needs through it and never branches on the device. Every
 * tensor handed to an op carries its type, shape and the backend that owns its
 * memory. Ops are asynchronous on devices that can be; synchronize() waits.
 *
 * Shapes follow ggml: ne[0] is the innermost (contiguous) dimension, so an
 * activation matrix of n tokens by d features has ne = {d, n, 1, 1} and a
 * weight matrix mapping d_in -> d_out has ne = {d_in, d_out, 1, 1}. */
#ifndef HEARTH_BACKEND_H
#define HEARTH_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef struct hl_backend hl_backend;

typedef struct hl_tensor {
    uint32_t type;      /* ggml type id (gguf/ggml_types.h) */
    int64_t ne[4];      /* elements per dimension, ne[0] innermost */
    void *data;         /* in `backend`'s memory, rows contiguous */
    hl_backend *backend;
} hl_tensor;

/* How rotary embeddings pair dimensions, with ggml's mode numbers. */
typedef enum hl_rope_mode {
    HL_ROPE_NORMAL = 0, /* pairs (x[2i], x[2i+1]): llama, mistral */
    HL_ROPE_NEOX = 2,   /* pairs (x[i], x[i + n_rot/2]): GPT-NeoX, qwen2, qwen3, gemma3 */
} hl_rope_mode;

/* Rotary position embedding parameters (RoFormer, Su et al. 2021,
 * arXiv:2104.09864) as llama.cpp applies them: pair i of a head is rotated by
 * theta_i = pos * freq_scale * base^(-2i/n_rot) / ff[i], where ff are the
 * optional per-pair frequency factors (Llama 3 rope scaling stores them in
 * the GGUF as rope_freqs.weight; 1 when absent). */
typedef struct hl_rope_params {
    int32_t n_rot;      /* dimensions rotated per head (<= head_dim, even) */
    int32_t mode;       /* hl_rope_mode */
    float freq_base;    /* theta base, e.g. 10000 */
    float freq_scale;   /* 1 / linear scaling factor */
} hl_rope_params;

/* Causal attention of a batch of queries over the KV cache of one layer.
 * K and V rows are stored per cell: k_cache ne = {head_dim * n_head_kv, n_ctx},
 * each sequence owning a run of cells (see set_positions). Query token t, at
 * position pos[t] of the sequence whose cells start at row0[t], attends to
 * that sequence's cells [row0[t], row0[t] + pos[t]]: the tokens of other
 * sequences are never seen. Grouped-query attention: query head h reads KV
 * head h / (n_head / n_head_kv) (Ainslie et al. 2023, arXiv:2305.13245). */
typedef struct hl_attn_args {
    const hl_tensor *q;       /* F32 {head_dim * n_head, n_tokens} */
    const hl_tensor *k_cache; /* F16 {head_dim * n_head_kv, n_ctx} */
    const hl_tensor *v_cache; /* F16 {head_dim * n_head_kv, n_ctx} */
    hl_tensor *out;           /* F32 {head_dim * n_head, n_tokens} */
    int32_t n_head, n_head_kv, head_dim;
    int32_t n_swa;            /* sliding window: query at position p sees keys at
                                 positions > p - n_swa; 0 = the whole causal past */
    float scale;              /* usually 1/sqrt(head_dim) */
} hl_attn_args;

typedef struct hl_backend_i {
    const char *(*name)(const hl_backend *b);
    /* free and total memory of the device, bytes */
    void (*mem_info)(const hl_backend *b, size_t *free_bytes, size_t *total_bytes);

    /* Device memory. alloc errors: OUT_OF_MEMORY with the size in the message. */
    hearth_status (*alloc)(hl_backend *b, size_t bytes, void **out);
    void (*free)(hl_backend *b, void *ptr);
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
    /* y {d_out, n} F32 = x {d_in, n} F32 times w {d_in, d_out}^T (any supported type) */
    void (*matmul)(hl_backend *b, const hl_tensor *w, const hl_tensor *x, hl_tensor *y);
    /* in place on x F32 {head_dim * n_head, n}; token t at position pos[t]
     * (set_positions); freq_factors F32 {n_rot / 2} or NULL */
    void (*rope)(hl_backend *b, hl_tensor *x, int32_t n_head, const hl_rope_params *p, const hl_tensor *freq_factors);
    /* writes row t of src F32 {d, n} into row row0[t] + pos[t] (set_positions)
     * of cache {d, n_ctx}, in the cache's type */
    void (*store_rows)(hl_backend *b, const hl_tensor *src, hl_tensor *cache);
    void (*attention)(hl_backend *b, const hl_attn_args *args);
    /* gate = silu(gate) * up, elementwise over F32 tensors of equal shape
     * (SwiGLU, Shazeer 2020, arXiv:2002.05202) */
    void (*swiglu)(hl_backend *b, hl_tensor *gate, const hl_tensor *up);
    /* gate = gelu(gate) * up with GELU's tanh approximation (GeGLU, Shazeer
     * 2020; Hendrycks & Gimpel 2016, arXiv:1606.08415), as swiglu */
    void (*geglu)(hl_backend *b, hl_tensor *gate, const hl_tensor *up);
    /* x += y; x F32 {d, n}; y F32 {d, n}, or {d} added to every column (a bias) */
    void (*add)(hl_backend *b, hl_tensor *x, const hl_tensor *y);
    /* x *= s, F32 */
    void (*scale)(hl_backend *b, hl_tensor *x, float s);
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
     * recording fails the backend runs issue eagerly from then on.
     * key < HL_GRAPH_KEYS. */
    void (*graph_run)(hl_backend *b, int key, void (*issue)(void *ctx), void *ctx);
} hl_backend_i;

/* Distinct records graph_run keeps per backend instance. */
#define HL_GRAPH_KEYS 2

struct hl_backend {
    const hl_backend_i *iface;
    void *impl;
};

/* Number of elements and bytes of a tensor (its rows in its type). */
int64_t hl_tensor_nelements(const hl_tensor *t);
size_t hl_tensor_nbytes(const hl_tensor *t);

#endif
