// Shared by the CUDA backend's .cu files: the backend instance (hl_cuda),
// the checking macros that turn every failed CUDA / cuBLAS call into a
// hearth_status with file and line, warp reductions, and the op entry points
// the op table in backend.cu points to. Nothing here leaves the folder.
#pragma once

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdint.h>

extern "C" {
#include "backend/backend.h"
#include "backend/cuda/cuda_backend.h"
#include "base/status.h"
#include "gguf/ggml_types.h"
}

// One backend instance: a stream on one device with its scratch. Weights are
// plain device allocations, valid in every instance on the same device.
struct hl_cuda {
    int device; // CUDA ordinal
    int index;  // hearth's device number (cuda<index>)
    cudaStream_t stream;
    cublasHandle_t cublas; // NULL in a weight-only instance
    hl_gpu_limits limits;
    int32_t *d_pos;         // [2 * max_tokens] the pass's positions, then its rows0 (set_positions)
    int32_t *h_pos;         // pinned host copy d_pos is filled from
    int32_t one_seq_tokens; // the pass's token count when its tokens are one sequence at
                            // consecutive positions, else 0 (set_positions; attention_mma.cu)
    cudaEvent_t pos_copied; // the copy out of h_pos is done
    int32_t *d_ids;         // [max_tokens] row ids for get_rows
    __half *w16;            // [w16_elems] weight tile in F16 (prompt matmuls); between
                            // matmuls the attention's split partials (attention.cu)
    size_t w16_elems;
    int smem_optin; // shared memory a block may opt in to (bytes; hl_cuda_attention_mma_init)
    bool unfused;   // HEARTH_CUDA_FUSED=0: none of the fused decode ops, no Q8_1 written by
                    // the ops that produce activations, cuBLAS from HL_CUDA_MMV_MAX tokens
                    // (backend.cu; to measure and test what the fusions change)
    bool bf16_gemm; // cuBLAS multiplies BF16 in place here (compute capability 8.0 and up; on
                    // Turing BF16 weights go through the F16 tiles, as every quantized type)
    __half *x16;    // [max_tokens * max_row] activations in F16; in matvec
                    // their Q8_1 form (matvec.cu, 1.25 bytes per element)
    // The Q8_1 activations in x16 (q8_1.cuh): ops so far (hl_cuda_enter;
    // uploads and copies count too), and the activations (data, row length,
    // tokens) whose Q8_1 form op number q8_op wrote (a matvec that quantized
    // them, or the norm or GLU that produced them). The next op, when it is
    // a matvec of the same activations (Q, K and V of one input; gate and
    // up), uses them as they are instead of quantizing again.
    uint64_t op_count, q8_op;
    const void *q8_x;
    int64_t q8_d, q8_n;
    void *staging[2];      // pinned host buffers for uploads, HL_CUDA_STAGING bytes each
    cudaEvent_t staged[2]; // the copy out of staging[i] is done
    cudaGraphExec_t graph[HL_GRAPH_KEYS];
    bool graphs_off;      // recording failed once: run eagerly from then on
    hearth_status status; // first error since the last synchronize
    char err[384];
};

#define HL_CUDA_STAGING (8u << 20)

static inline hl_cuda *cuda_of(hl_backend *b) { return (hl_cuda *)b->impl; }

// Records the first error of an op (ops return void; synchronize reports it).
void hl_cuda_record(hl_cuda *cu, hearth_status st, const char *fmt, ...) HL_PRINTF(3, 4);

// In an op: a failed call records DEVICE with file, line and the call; the
// macros evaluate to true on success.
#define CU_OK(cu, expr) hl_cuda_ok((cu), (expr), #expr, __FILE__, __LINE__)
#define CU_LAUNCHED(cu) hl_cuda_ok((cu), cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
#define CUBLAS_OK(cu, expr) hl_cublas_ok((cu), (expr), #expr, __FILE__, __LINE__)
bool hl_cuda_ok(hl_cuda *cu, cudaError_t e, const char *what, const char *file, int line);
bool hl_cublas_ok(hl_cuda *cu, cublasStatus_t s, const char *what, const char *file, int line);

// In a function returning hearth_status: a failed call returns DEVICE.
#define CUDA_TRY(expr)                                                                                                 \
    do {                                                                                                               \
        cudaError_t e_ = (expr);                                                                                       \
        if (e_ != cudaSuccess)                                                                                         \
            return hl_fail(HEARTH_ERR_DEVICE, "%s:%d: %s failed: %s", __FILE__, __LINE__, #expr,                       \
                           cudaGetErrorString(e_));                                                                    \
    } while (0)

// Makes the instance's device current for the calling thread; false (error
// recorded) if that fails. Every op starts with it.
bool hl_cuda_enter(hl_cuda *cu);

// What position-dependent kernels read (device memory, written by
// set_positions before the ops, so a recorded graph reads the current pass):
// token t's position in its sequence, and the first cache row of its sequence.
static inline const int32_t *cuda_pos(const hl_cuda *cu) { return cu->d_pos; }
static inline const int32_t *cuda_row0(const hl_cuda *cu) { return cu->d_pos + cu->limits.max_tokens; }

static inline unsigned cuda_blocks(int64_t n, int threads) { return (unsigned)((n + threads - 1) / threads); }

// ALiBi's slope of query head h of n_head for max_bias > 0, as backend.h's
// hl_alibi_slope (ggml's m0/m1 rule; Press, Smith & Lewis 2022).
__device__ __forceinline__ float att_alibi_slope(int n_head, float max_bias, int h) {
    int n = 1; // the largest power of two <= n_head
    while (n * 2 <= n_head) n *= 2;
    return h < n ? powf(powf(2.0f, -max_bias / (float)n), (float)(h + 1))
                 : powf(powf(2.0f, -(max_bias / 2.0f) / (float)n), (float)(2 * (h - n) + 1));
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Ops (one file per family); signatures as in backend.h.
void hl_cuda_get_rows(hl_backend *b, const hl_tensor *table, const int32_t *ids, hl_tensor *out);
void hl_cuda_store_rows(hl_backend *b, const hl_tensor *src, hl_tensor *cache);
void hl_cuda_rms_norm(hl_backend *b, const hl_tensor *x, const hl_tensor *w, float eps, hl_tensor *y);
void hl_cuda_layer_norm(hl_backend *b, const hl_tensor *x, const hl_tensor *w, const hl_tensor *bias, float eps,
                        hl_tensor *y);
void hl_cuda_matmul(hl_backend *b, const hl_tensor *w, const hl_tensor *x, hl_tensor *y);
void hl_cuda_matmul_add(hl_backend *b, const hl_tensor *w, const hl_tensor *x, hl_tensor *y);
void hl_cuda_matmul_n(hl_backend *b, int n, const hl_tensor *const *w, const hl_tensor *x, hl_tensor *const *y);
void hl_cuda_rope(hl_backend *b, hl_tensor *x, int32_t n_head, const hl_rope_params *p, const hl_tensor *freq_factors);
void hl_cuda_rope_shift(hl_backend *b, hl_tensor *cache, int64_t row, int64_t n, int32_t n_head, int32_t delta,
                        const hl_rope_params *p, const hl_tensor *freq_factors);
void hl_cuda_rope_store(hl_backend *b, hl_tensor *q, hl_tensor *k, const hl_tensor *v, hl_tensor *k_cache,
                        hl_tensor *v_cache, int32_t n_head, const hl_rope_params *p, const hl_tensor *freq_factors);
void hl_cuda_attention(hl_backend *b, const hl_attn_args *args);
void hl_cuda_swiglu(hl_backend *b, hl_tensor *gate, const hl_tensor *up);
void hl_cuda_geglu(hl_backend *b, hl_tensor *gate, const hl_tensor *up);
void hl_cuda_gelu(hl_backend *b, hl_tensor *x);
void hl_cuda_add(hl_backend *b, hl_tensor *x, const hl_tensor *y);
void hl_cuda_scale(hl_backend *b, hl_tensor *x, float s);
void hl_cuda_clamp(hl_backend *b, hl_tensor *x, float lo, float hi);
void hl_cuda_moe_route(hl_backend *b, const hl_tensor *logits, hl_tensor *ids, hl_tensor *weights);
void hl_cuda_matmul_id(hl_backend *b, const hl_tensor *w, const hl_tensor *x, const hl_tensor *ids, hl_tensor *y);
void hl_cuda_moe_sum(hl_backend *b, const hl_tensor *y, const hl_tensor *weights, hl_tensor *out);

// What the kernels handle, for supports_op (backend.cu) and the ops' own
// refusals: the one place each answer is written.
bool hl_cuda_supports_type(uint32_t type);          // backend.cu: weights, tables
bool hl_cuda_attention_runs(const hl_attn_args *a); // attention.cu
bool hl_cuda_rope_runs(const hl_rope_params *p);    // rope.cu
bool hl_cuda_rope_shift_runs(const hl_rope_params *p, uint32_t cache_type, int64_t head_dim); // rope.cu
bool hl_cuda_rope_store_runs(const hl_rope_params *p, uint32_t k_type, uint32_t v_type, int64_t dk,
                             int64_t dv);                     // rope.cu: k and v rows of dk, dv elements
bool hl_cuda_store_rows_runs(uint32_t cache_type, int64_t d); // rows.cu: rows of d elements

// Prompt attention on tensor cores (attention_mma.cu): at instance start,
// the shared memory its blocks may take; whether it takes the pass (one
// sequence, consecutive positions, an F16 cache ...); the op.
hearth_status hl_cuda_attention_mma_init(hl_cuda *cu);
bool hl_cuda_attention_mma_runs(const hl_cuda *cu, const hl_attn_args *a);
void hl_cuda_attention_mma(hl_cuda *cu, const hl_attn_args *a);

// Matrix-vector products of up to HL_CUDA_MMV_MAX tokens (matvec.cu; gemm.cu
// sends decode steps, and batches of a few streams in launches of that
// many, there and prompts through cuBLAS). y[k] = W[k] x
// for k < n_mats (1 .. HL_CUDA_MV_MATS weights of one type and row length,
// one launch), or with `add` y[k] += W[k] x (matmul_add). Returns false if
// the type has no kernel.
#define HL_CUDA_MMV_MAX 8
#define HL_CUDA_MV_MATS HL_MATMUL_N_MAX // a matmul_n group fits one matvec launch
bool hl_cuda_matvec(hl_cuda *cu, int n_mats, const hl_tensor *const *w, const hl_tensor *x, hl_tensor *const *y,
                    bool add);

// y {d, n} F16 = rows of `src` {d, rows} (ggml type `type`, row stride
// `stride` bytes) dequantized (gemm.cu; get_rows has its own gather).
bool hl_cuda_dequant_f16(hl_cuda *cu, uint32_t type, const void *src, size_t stride, int64_t d, int64_t rows,
                         __half *y);
