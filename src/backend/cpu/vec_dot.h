/* Dot products of a weight row with an activation row: the inner loop of
 * every CPU matmul, y[t][r] = dot(W[r], x[t]).
 *
 * As in ggml, the activation row x[t] (float[n]) is first converted once to
 * the weight type's vec_dot_type (Q4_0, Q5_0, Q8_0 -> Q8_0; Q4_1, Q5_1 ->
 * Q8_1; the K-quants Q2_K .. Q6_K -> Q8_K; F16 -> F16, BF16 -> BF16, F32 ->
 * F32); the dot product then runs on integers block by block and applies the
 * scales per block. BF16 keeps BF16 activations, as ggml does, so that
 * results track llama.cpp's; the batch kernels of F16 and BF16 hold those
 * F16 / BF16 values as floats (vec_dot_f_avx2.c), converted once. The
 * K-quant kernels live in vec_dot_k.c and <isa>/vec_dot_k_<isa>.c (the
 * generic AVX-512 parts in x86_avx512/k_kernels_avx512.h).
 *
 * Kernels exist per level (device.h): the scalar ones are the oracle;
 * the SIMD ones are tested against them. The AVX-512 level runs the AVX2
 * kernels except where vec_dot_avx512.c, vec_dot_k_avx512.c and
 * vec_dot_q1_avx512.c put in their own (for decode: every quantized type),
 * which keep the AVX2 kernels' float order. Every level's act_from_float
 * writes the same bytes as the scalar one (for finite input), so levels
 * differ only in the order of float additions.
 *
 * Bit-for-bit agreement with llama.cpp. Greedy decoding only reproduces
 * llama.cpp's tokens if hearth's float arithmetic is llama.cpp's, operation
 * for operation: a one-ulp difference flips the rounding of some 8-bit
 * activation quant, and 30 layers amplify that to logit differences of ~1.
 * So the SIMD kernels reproduce the x86 build of ggml-cpu (arch/x86/quants.c,
 * vec.cpp; -march=native on an AVX-512 machine, the reference's):
 * - activations are quantized with the CPU quantizer (hl_act_q8_*_from_float
 *   below), not the reference one of quant/quant.h;
 * - a quantized dot product keeps one 8-lane accumulator with one FMA per
 *   block, summed at the end in hsum_float_8's order; Q4_1's and Q5_1's
 *   m * s terms go into a separate scalar FMA chain (GCC contracts ggml's
 *   `summs += m * s`);
 * - F32 and F16 dot products of one token use ggml's AVX-512 layout: four
 *   16-lane accumulators, combined (0+2) + (1+3), then _mm512_reduce_add_ps;
 *   from 2 tokens on (hl_cpu_batch_applies) llamafile's tinyBLAS<16>: one
 *   16-lane accumulator per result (vec_dot_f_avx2.c).
 * The 4-row and 4-column kernels keep the per-row order of the 1x1 kernel,
 * so all three give the same bits; llama.cpp's batched path for Q8_0 and
 * Q5_0 (llamafile's tinyBLAS_Q0_AVX) has that per-result order too.
 * The exception: Q4_K and Q2_K follow llama.cpp's repacked kernels
 * (repack.cpp, q4_K_8x8 on AVX2 CPUs, q2_K_8x8 on AVX-512 ones), which it
 * runs for every weight matrix whose row count is a multiple of 8; their
 * gemv (vec_dot, vec_dot_4r here) and gemm (vec_dot_4c: tokens in groups
 * of 4) orders differ by rounding, and so do hearth's (vec_dot_k_avx2.c).
 * Q4_0 follows llama.cpp's repacked q4_0_8x8 kernels, whose gemv and gemm
 * share one order: per output one FMA chain, acc = fma(float(isum),
 * d_w * d_a, acc) per block.
 * And from 8 tokens on, llama.cpp multiplies Q3_K, Q5_K and Q6_K with its
 * tiled kernels, in yet another order: hl_cpu_type_ops.batch, which the
 * float types also use for tinyBLAS. Not reproduced: BF16, which llama.cpp
 * multiplies with AVX512-BF16 instructions, and the matrices whose row count
 * is not a multiple of 8, which it does not repack. */
#ifndef HEARTH_BACKEND_CPU_VEC_DOT_H
#define HEARTH_BACKEND_CPU_VEC_DOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/cpu/device.h"
#include "quant/quant.h"

/* For the kernel files: forced inlining of generic kernels specialised by
 * constant arguments (inlining folds the branches on them away), and row r
 * of rows `stride` bytes apart. */
#define ALWAYS_INLINE inline __attribute__((always_inline))

static inline const void *row_at(const void *rows, size_t stride, int r) {
    return (const char *)rows + (size_t)r * stride;
}

/* The entry points pack_NAME and panel_dot_NAME of type T's panels, given a
 * kernel file's generic pack(type, n, panel, w, w_stride) and
 * panel_dot(type, n, y, y_stride, panel, act, act_stride, n_tok), for panels
 * that need no hl_act_aux. */
#define HL_PANEL_ENTRIES(T, name, pack, panel_dot)                                                                     \
    static void pack_##name(int64_t n, void *panel, const void *w, size_t w_stride) {                                  \
        pack(T, n, panel, w, w_stride);                                                                                \
    }                                                                                                                  \
    static void panel_dot_##name(int64_t n, float *y, size_t y_stride, const void *panel, const void *act,             \
                                 size_t act_stride, const hl_act_aux *aux, size_t aux_stride, int n_tok) {             \
        (void)aux, (void)aux_stride;                                                                                   \
        panel_dot(T, n, y, y_stride, panel, act, act_stride, n_tok);                                                   \
    }

/* The batch kernels of float type T (suffix `name`) of a float kernel file
 * (vec_dot_f_avx2.c, vec_dot_f_avx512.c), which defines the generic
 * tb_tile (nr rows x nc tokens), pack_t and panel_dot_t they call:
 * tb_dot_NAME, tb_4r_NAME, tb_4c_NAME, pack_NAME, panel_dot_NAME. */
#define HL_FLOAT_BATCH_KERNELS(T, name)                                                                                \
    static void tb_dot_##name(int64_t n, float *s, const void *w_row, const void *act_row) {                           \
        tb_tile(T, 1, 1, n, s, w_row, 0, act_row, 0);                                                                  \
    }                                                                                                                  \
    static void tb_4r_##name(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {             \
        tb_tile(T, 4, 1, n, s, w, w_stride, act_row, 0);                                                               \
    }                                                                                                                  \
    static void tb_4c_##name(int64_t n, float s[4], const void *w_row, const void *act, size_t act_stride) {           \
        tb_tile(T, 1, 4, n, s, w_row, 0, act, act_stride);                                                             \
    }                                                                                                                  \
    HL_PANEL_ENTRIES(T, name, pack_t, panel_dot_t)

/* The activation quantizers of llama.cpp's x86 CPU backend
 * (ggml-cpu/arch/x86/quants.c, quantize_row_q8_0 / quantize_row_q8_1), the
 * scalar oracle of every level's act_from_float for Q8_0 / Q8_1: per block of
 * 32, amax = max |x|, d = amax / 127, q = round-half-even(x * (127 / amax)),
 * and for Q8_1 s = d * sum(q). The reference quantizer of quant/quant.h
 * (ggml's quantize_row_q8_*_ref, what gguf-py writes) differs: it multiplies
 * by 1 / d and rounds halves away from zero. n is a multiple of 32. */
void hl_act_q8_0_from_float(const float *x, void *dst, int64_t n);
void hl_act_q8_1_from_float(const float *x, void *dst, int64_t n);

/* The activation quantizer of the K-quants: llama.cpp's quantize_row_q8_K,
 * which on x86 is quantize_row_q8_K_ref (ggml-quants.c). Per block of 256,
 * max = the first x of largest |x|, iscale = -127 / max, q = x * iscale
 * rounded halves to even (ggml's nearest_int), d = 1 / iscale, bsums[i] =
 * sum of q[16i .. 16i + 15]; a block of zeros gets d = 0, q = 0, bsums = 0.
 * Unlike Q8_0's, this scale is signed and d is not amax / 127. n is a
 * multiple of 256. */
void hl_act_q8_K_from_float(const float *x, void *dst, int64_t n);

/* *s = dot(w_row, act_row) over n elements. w_row: n elements of the weight
 * type; act_row: n elements of its vec_dot_type as act_from_float writes them
 * (Q8 quants in [-127, 127], which the SIMD kernels rely on). n is a
 * multiple of the weight type's block size (32 for the quantized types, 256
 * for the K-quants, 1 for the float types). */
typedef void (*hl_vec_dot_fn)(int64_t n, float *s, const void *w_row, const void *act_row);

/* Four dot products with one activation row: s[r] = dot(W row r, act_row)
 * for r = 0..3, the weight rows w_stride bytes apart. For matrix-vector
 * products (decode): each activation block is loaded once for four rows.
 * Give rows far apart (a quarter of the rows in between: rows i, i + q,
 * i + 2q, i + 3q for i < q): four long sequential streams are what the
 * hardware prefetcher follows. Four adjacent rows are four short interleaved
 * streams it does not, and read far slower than rows far apart or vec_dot
 * row by row (bench/results/2026-12-02-kernel-comment-figures-cpu.md). */
typedef void (*hl_vec_dot_4r_fn)(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row);

/* Four dot products with one weight row: s[c] = dot(w_row, activation row c)
 * for c = 0..3, the activation rows act_stride bytes apart. For
 * matrix-matrix products (prompts): each weight block is unpacked once for
 * four tokens. */
typedef void (*hl_vec_dot_4c_fn)(int64_t n, float s[4], const void *w_row, const void *act, size_t act_stride);

/* Panels, for matrix-matrix products of at least HL_CPU_PANEL_MIN tokens:
 * HL_PANEL_ROWS consecutive weight rows are repacked once per matmul (or
 * per block of tokens, matmul.c) into a per-thread buffer (at most
 * HL_PANEL_BYTES(n) bytes), in a layout where one SIMD lane holds one row
 * (the quantized types) or converted to floats (the float types; F16 stays
 * halves at the AVX2 level on AMD Zen, vec_dot_f_avx2.c), and then
 * multiplied with every token of the batch (or block). pack_panel writes
 * the panel of the rows at w, w + w_stride, ...;
 * panel_dot computes y[t * y_stride + r] = dot(row r, activation row t) for
 * r < HL_PANEL_ROWS and t < n_tok, the activation rows act_stride
 * bytes apart with their per-block extras (hl_act_aux, n / 32 per row,
 * written by act_aux; NULL where act_aux is) aux_stride entries apart.
 * n_tok is 1..4, or any number from 1 where the kernel set says
 * panel_block. */
#define HL_PANEL_ROWS 16
#define HL_CPU_PANEL_MIN 8
#define HL_PANEL_BYTES(n) ((size_t)(n)*4 * HL_PANEL_ROWS) /* 16 rows of floats; 64-byte multiples */

/* Per block of 32 activation quants (a Q8_0 row; panels of types with
 * other activations get none), what panel kernels broadcast: the scale as a float, the sum of the quants, and -128 times
 * the sum of each group of four (elements 4k..4k+3 in quad128[k]). */
typedef struct hl_act_aux {
    float d;
    int32_t sum;
    int32_t quad128[8];
} hl_act_aux;

/* The hl_act_aux of each block of a Q8_0 row of n elements: the scalar
 * oracle of hl_cpu_type_ops.act_aux. */
void hl_act_q8_0_aux(int64_t n, hl_act_aux *aux, const void *act_row);

typedef void (*hl_pack_panel_fn)(int64_t n, void *panel, const void *w, size_t w_stride);
typedef void (*hl_panel_dot_fn)(int64_t n, float *y, size_t y_stride, const void *panel, const void *act,
                                size_t act_stride, const hl_act_aux *aux, size_t aux_stride, int n_tok);

typedef struct hl_cpu_type_ops {
    uint32_t type;                   /* weight type, GGML_TYPE_* */
    uint32_t vec_dot_type;           /* activation type of the dot product */
    hl_from_float_fn act_from_float; /* float[n] -> row of vec_dot_type */
    hl_vec_dot_fn vec_dot;
    /* Optional (NULL where a level has no faster way than four vec_dot
     * calls); each equals four vec_dot calls up to float rounding. */
    hl_vec_dot_4r_fn vec_dot_4r;
    hl_vec_dot_4c_fn vec_dot_4c;
    /* Optional: the kernels to use instead, activation conversion included,
     * for a whole matmul where hl_cpu_batch_applies; NULL where the batch
     * size does not matter. llama.cpp multiplies Q3_K, Q5_K and Q6_K weights
     * in another float order from 8 tokens on (its tiled path,
     * ggml-cpu/tiled/), and F32 and F16 from 2 tokens on (llamafile's
     * tinyBLAS), so a matmul reproduces its results only by switching too. */
    const struct hl_cpu_type_ops *batch;
    /* Optional (NULL where a level has none): panel kernels, each result
     * with the bits of vec_dot's. */
    hl_pack_panel_fn pack_panel;
    hl_panel_dot_fn panel_dot;
    /* The hl_act_aux of an activation row, for panel_dot; NULL where it
     * needs none. Writes what hl_act_q8_0_aux writes. */
    void (*act_aux)(int64_t n, hl_act_aux *aux, const void *act_row);
    /* Whether panel_dot takes any number of tokens at once (the matmul's
     * blocks, matmul.c; it blocks them further itself) rather than at
     * most 4. */
    bool panel_block;
} hl_cpu_type_ops;

/* The batch size from which hl_cpu_type_ops.batch applies to the K-quants (ggml_tiled_min_batch). */
#define HL_CPU_BATCH_MIN 8

/* Whether a matmul of n_tok tokens with weight rows of d_in elements and
 * d_out rows runs ops->batch (where ops has one), as llama.cpp switches
 * kernels: K-quants from HL_CPU_BATCH_MIN tokens; the float types (F32,
 * F16, BF16) from 2 tokens where d_out is a multiple of 4 and d_in of 16
 * (llamafile_sgemm and tinyBLAS::matmul in ggml-cpu/llamafile/sgemm.cpp).
 * The float types' batch kernels take rows of a multiple of 16 elements
 * only, and activations in their own act_from_float's format. */
bool hl_cpu_batch_applies(const hl_cpu_type_ops *ops, int64_t d_in, int64_t d_out, int64_t n_tok);

/* The fastest kernels for `type` on this CPU; NULL if hearth cannot multiply
 * with this weight type. Thread-safe. */
const hl_cpu_type_ops *hl_cpu_type_ops_get(uint32_t type);

/* The kernels of one level; NULL if this CPU or build lacks the level or the
 * level has no kernels of its own for `type`. For tests and benchmarks. */
const hl_cpu_type_ops *hl_cpu_type_ops_at(uint32_t type, hl_cpu_level level);

/* The scalar kernels: the oracle. */
const hl_cpu_type_ops *hl_cpu_type_ops_scalar(uint32_t type);

/* The per-level tables, implemented in vec_dot.c, vec_dot_avx2.c, ... Each
 * returns NULL for a type it has no kernels for. */
/* The entry of `type` in a table of n kernel sets, or NULL. */
const hl_cpu_type_ops *hl_cpu_ops_in(const hl_cpu_type_ops *table, size_t n, uint32_t type);

const hl_cpu_type_ops *hl_cpu_ops_scalar_find(uint32_t type);
const hl_cpu_type_ops *hl_cpu_ops_avx2_find(uint32_t type);
const hl_cpu_type_ops *hl_cpu_ops_avx512_find(uint32_t type);

/* The K-quant parts of those tables (vec_dot_k.c, vec_dot_k_avx2.c) and the
 * float part of the AVX2 one (vec_dot_f_avx2.c), which the finders above
 * consult. */
const hl_cpu_type_ops *hl_cpu_ops_scalar_k_find(uint32_t type);
const hl_cpu_type_ops *hl_cpu_ops_avx2_k_find(uint32_t type);
const hl_cpu_type_ops *hl_cpu_ops_avx2_f_find(uint32_t type);

/* The AVX2 level's F16 batch kernels with the panel layout asked for
 * (floats, or halves as AMD Zen gets them; vec_dot_f_avx2.c), whichever
 * this CPU gets: for tests. Call only where hl_cpu_level_best() >=
 * HL_CPU_AVX2. */
const hl_cpu_type_ops *hl_cpu_ops_avx2_f16_batch(bool halves);

/* Puts the AVX-512 K-quant kernels (vec_dot_k_avx512.c) into a copy of an
 * AVX2 entry, or of its batch entry. */
void hl_cpu_ops_avx512_k_patch(hl_cpu_type_ops *ops, bool batch);

/* Puts the AVX-512 Q4_1 and Q5_1 kernels (vec_dot_q1_avx512.c) into a copy
 * of an AVX2 entry. */
void hl_cpu_ops_avx512_q1_patch(hl_cpu_type_ops *ops);

/* Puts the AVX-512 float kernels (vec_dot_f_avx512.c) into a copy of an
 * AVX2 entry, or of its batch entry. */
void hl_cpu_ops_avx512_f_patch(hl_cpu_type_ops *ops, bool batch);

#endif
