/* Row kernels of the CPU ops other than the matmul: SwiGLU, the exponentials
 * of softmax, the two products of attention and rope's rotation. As with
 * vec_dot.h there is a table per level (device.h): the scalar kernels
 * are the oracle, written plainly; the AVX2 ones reproduce, bit for bit,
 * what llama.cpp's x86 CPU backend computes in its AVX-512 build (the
 * reference's), including its order of additions and its polynomial exp
 * (see simd16_avx2.h).
 *
 * Attention in llama.cpp without flash attention is two F16 matmuls around a
 * softmax (src/llama-graph.cpp, build_attn_mha): KQ = K * Q with Q rounded to
 * F16, softmax(KQ * scale + mask) over the whole padded cache (n_kv, a
 * multiple of 256, masked entries -inf), then KQV = V^T * P with P rounded to
 * F16. A one-token batch runs both as ggml_vec_dot_f16; a larger batch runs
 * them through llamafile's tinyBLAS (ggml-cpu/llamafile/sgemm.cpp), whose
 * order of additions differs. Masked positions contribute exact zeros, so the
 * kernels skip them but keep the positions of the others in the order. */
#ifndef HEARTH_BACKEND_CPU_ROW_KERNELS_H
#define HEARTH_BACKEND_CPU_ROW_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/cpu/device.h"
#include "quant/quant.h"

/* Which of llama.cpp's two attention paths a product follows. */
typedef enum hl_attn_order {
    HL_ATTN_VEC_DOT = 0, /* ggml_vec_dot_f16: one-token batches */
    HL_ATTN_TINYBLAS = 1 /* tinyBLAS: batches of two or more tokens */
} hl_attn_order;

/* Largest head size pv accepts. */
#define HL_KERNELS_MAX_HEAD_DIM 512

typedef struct hl_cpu_kernels {
    /* y[i] = silu(x[i]) * g[i] for i < n, one row (ggml_vec_swiglu_f32); y
     * may alias x. */
    void (*swiglu)(int64_t n, float *y, const float *x, const float *g);

    /* x[i] = GELU(x[i]) for i < n, in place, as llama.cpp's CPU backend
     * computes it (GGML_GELU_FP16): 0 from -10 down, x from 10 up, else
     * table[fp16(x)] (table: the 65536 F16 results, ops.c). Every level
     * gives the same bits. */
    void (*gelu)(int64_t n, float *x, const hl_half *table);

    /* s[i] = exp(s[i] - max) for i < n, in place; returns the sum of the
     * results in double (ggml_vec_soft_max_f32). Entries past n are taken as
     * exp(-inf) = 0, as llama.cpp's masked padding. */
    double (*softmax_exp)(int64_t n, float *s, float max);

    /* Dot product of two F16 rows of n elements, in the order `order`
     * (HL_ATTN_TINYBLAS needs n % 16 == 0). */
    float (*dot_f16)(int64_t n, const hl_half *x, const hl_half *y, hl_attn_order order);

    /* out[d] = sum_{j < n} p[j] * v_j[d] for d < hd (hd <= 512), v_j the F16
     * row at v + j * v_stride bytes; in the order `order` (llama.cpp's V^T
     * dot P over the cache positions). */
    void (*pv)(int64_t n, const hl_half *p, const void *v, size_t v_stride, int32_t hd, float *out,
               hl_attn_order order);

    /* Rope of one head in place (rope_rotate.h hl_rope_rotate: n_rot / 2
     * pairs, normal or NEOX, cos_sin [n_rot] as cos, sin per pair); every
     * level gives the same bits. */
    void (*rope_rotate)(float *v, int32_t n_rot, bool neox, const float *cos_sin);
} hl_cpu_kernels;

/* The fastest kernels on this CPU. Thread-safe. */
const hl_cpu_kernels *hl_cpu_kernels_get(void);

/* The kernels of one level; NULL if this CPU or build lacks it. For tests. */
const hl_cpu_kernels *hl_cpu_kernels_at(hl_cpu_level level);

/* The per-level tables (row_kernels.c, row_kernels_avx2.c). */
extern const hl_cpu_kernels hl_cpu_kernels_scalar;
extern const hl_cpu_kernels hl_cpu_kernels_avx2;

#endif
