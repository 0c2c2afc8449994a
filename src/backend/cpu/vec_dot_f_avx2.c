/* AVX2 + FMA + F16C kernels for float weights (F32, F16, BF16): activation
 * conversion and dot products, the float part of the AVX2 table
 * (vec_dot_avx2.c). Compiled with -mavx2 -mfma -mf16c and called only after
 * hl_cpu_level_best() says the CPU has them.
 *
 * Like the rest of the level they reproduce llama.cpp's AVX-512 build
 * (vec_dot.h), whose 16-lane registers are pairs of 8-lane ones here
 * (simd16_avx2.h):
 * - one token: ggml's vec_dot (ggml-cpu/vec.cpp), F32 and F16 in its
 *   AVX-512 layout; BF16 in its AVX2 layout (the AVX-512 build uses
 *   AVX512-BF16's vdpbf16ps there, whose rounding this does not reproduce);
 * - batches, the kernels of hl_cpu_type_ops.batch (from 2 tokens, see
 *   hl_cpu_batch_applies): llamafile's tinyBLAS<16, __m512>
 *   (ggml-cpu/llamafile/sgemm.cpp), which llama.cpp runs for F32 and F16
 *   weights from 2 tokens on: per output ONE 16-lane accumulator, acc =
 *   fma(w[l .. l+15], a[l .. l+15], acc) for l = 0, 16, 32, ..., then
 *   _mm512_reduce_add_ps (v16_reduce). Its register tiles only choose which
 *   outputs are computed together. Where n % 16 != 0 tinyBLAS declines and
 *   ggml's vec_dot runs (hl_cpu_batch_applies says no). BF16 gets the same
 *   order (what tinyBLAS runs on AVX-512 CPUs without AVX512-BF16). The
 *   activations of a batch are converted once per matmul to F16 (BF16), as
 *   llama.cpp converts them, and held as the floats those values are, so
 *   that no kernel converts them again.
 * (llama.cpp's AVX2-only build runs tinyBLAS<8, __m256> instead: 8 lanes,
 * another order, which this level does not follow.) */
#include <immintrin.h>

#include "backend/cpu/simd16_avx2.h"
#include "backend/cpu/vec_dot.h"

/* ------------------------------------------------ activation conversion -- */

/* Same bytes as hl_fp32_to_fp16 except for NaN payloads. */
static void act_f16(const float *x, void *dst, int64_t n) {
    hl_half *y = dst;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(y + i), h);
    }
    for (; i < n; i++) y[i] = hl_fp32_to_fp16(x[i]);
}

/* hl_fp32_to_bf16 on 8 lanes: round to nearest even, NaN -> quiet NaN. */
static void act_bf16(const float *x, void *dst, int64_t n) {
    hl_bf16 *y = dst;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i u = _mm256_loadu_si256((const __m256i *)(x + i));
        const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
        const __m256i rounded = _mm256_srli_epi32(
            _mm256_add_epi32(u, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff))), 16);
        const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
        const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                                  _mm256_set1_epi32(0x7f800000));
        const __m256i r = _mm256_blendv_epi8(rounded, quiet, is_nan);
        /* packus works within 128-bit lanes; permute restores element order */
        const __m256i packed =
            _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), _MM_SHUFFLE(3, 1, 2, 0));
        _mm_storeu_si128((__m128i *)(y + i), _mm256_castsi256_si128(packed));
    }
    for (; i < n; i++) y[i] = hl_fp32_to_bf16(x[i]);
}

/* The batch activations: x rounded to F16 (BF16) as act_f16 (act_bf16)
 * rounds it, stored as floats (exact). */
static void act_f16_f32(const float *x, void *dst, int64_t n) {
    float *y = dst;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT)));
    for (; i < n; i++) y[i] = hl_fp16_to_fp32(hl_fp32_to_fp16(x[i]));
}

static void act_bf16_f32(const float *x, void *dst, int64_t n) {
    float *y = dst;
    for (int64_t i = 0; i < n; i++) y[i] = hl_bf16_to_fp32(hl_fp32_to_bf16(x[i]));
}

/* ------------------------------------------------ one token: ggml's order -- */

/* F32 and F16 in ggml's AVX-512 order (simd16_avx2.h). */
static void dot_f32(int64_t n, float *s, const void *w_row, const void *act_row) {
    *s = ggml_dot_f32(n, w_row, act_row);
}

static void dot_f16(int64_t n, float *s, const void *w_row, const void *act_row) {
    *s = ggml_dot_f16(n, w_row, act_row);
}

/* Elements i..i+7 of a BF16 row as floats. */
static inline __m256 load8_bf16(const hl_bf16 *row, int64_t i) {
    const __m128i h = _mm_loadu_si128((const __m128i *)(row + i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* BF16: four 8-lane accumulators, the tail of n % 8 scalar; s[r] for rows r
 * < nr (1 or 4, a constant after inlining) of rows w_stride bytes apart.
 * llama.cpp's AVX-512 build uses AVX512-BF16 dpbf16 here, whose rounding of
 * pairs this does not reproduce. */
static ALWAYS_INLINE void bf16_rows(int nr, int64_t n, float *s, const void *w, size_t w_stride,
                                    const void *act_row) {
    const hl_bf16 *a = act_row;
    __m256 acc[4][4];
    for (int r = 0; r < nr; r++)
        for (int k = 0; k < 4; k++) acc[r][k] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        for (int k = 0; k < 4; k++) {
            const __m256 y = load8_bf16(a, i + 8 * k);
            for (int r = 0; r < nr; r++) acc[r][k] = _mm256_fmadd_ps(load8_bf16(row_at(w, w_stride, r), i + 8 * k), y, acc[r][k]);
        }
    }
    for (int r = 0; r < nr; r++) {
        const hl_bf16 *x = row_at(w, w_stride, r);
        int64_t j = i;
        for (; j + 8 <= n; j += 8) acc[r][0] = _mm256_fmadd_ps(load8_bf16(x, j), load8_bf16(a, j), acc[r][0]);
        float sum = hsum8_ggml(_mm256_add_ps(_mm256_add_ps(acc[r][0], acc[r][1]), _mm256_add_ps(acc[r][2], acc[r][3])));
        for (; j < n; j++) sum += hl_bf16_to_fp32(x[j]) * hl_bf16_to_fp32(a[j]);
        s[r] = sum;
    }
}

static void dot_bf16(int64_t n, float *s, const void *w_row, const void *act_row) {
    bf16_rows(1, n, s, w_row, 0, act_row);
}

/* Four rows far apart (vec_dot.h) for decode. */
static void dot_4r_bf16(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {
    bf16_rows(4, n, s, w, w_stride, act_row);
}

/* --------------------------------------------- batches: tinyBLAS order -- */

/* Elements i .. i+15 of a row of `type` as floats. */
static ALWAYS_INLINE v16 load16(uint32_t type, const void *row, int64_t i) {
    if (type == GGML_TYPE_F32) return v16_load((const float *)row + i);
    if (type == GGML_TYPE_F16) return v16_load_f16((const hl_half *)row + i);
    return (v16){load8_bf16(row, i), load8_bf16(row, i + 8)};
}

/* s[r * nc + c] = dot(weight row r, activation row c) for r < nr, c < nc
 * (nr * nc <= 4; constants after inlining), each in tinyBLAS's order;
 * n % 16 == 0. */
static ALWAYS_INLINE void tb_tile(uint32_t type, int nr, int nc, int64_t n, float *s, const void *w,
                                  size_t w_stride, const void *act, size_t act_stride) {
    v16 acc[4] = {v16_zero(), v16_zero(), v16_zero(), v16_zero()};
    for (int64_t i = 0; i < n; i += 16) {
        v16 a[4];
        for (int c = 0; c < nc; c++) a[c] = v16_load((const float *)row_at(act, act_stride, c) + i);
        for (int r = 0; r < nr; r++) {
            const v16 x = load16(type, row_at(w, w_stride, r), i);
            for (int c = 0; c < nc; c++) acc[r * nc + c] = v16_fma(x, a[c], acc[r * nc + c]);
        }
    }
    for (int k = 0; k < nr * nc; k++) s[k] = v16_reduce(acc[k]);
}

/* Panels (vec_dot.h), laid out as the AVX-512 ones (vec_dot_f_avx512.c):
 * per step j of 16 elements the 16 rows' 16 floats, row r's at 256 j + 16 r. */
static ALWAYS_INLINE void pack_t(uint32_t type, int64_t n, void *panel, const void *w, size_t w_stride) {
    float *p = panel;
    for (int64_t i = 0; i < n; i += 16, p += 16 * HL_PANEL_ROWS)
        for (int r = 0; r < HL_PANEL_ROWS; r++) v16_store(p + 16 * r, load16(type, row_at(w, w_stride, r), i));
}

/* Panel products are blocked over the row length, PANEL_KB elements at a
 * time, so that a block of the panel (16 rows: 16 KiB) and of the
 * activations (4 tokens: 4 KiB) stay in L1 while every tile runs over them.
 * tinyBLAS's 16-lane accumulator of a result is two independent 8-lane
 * ones, elements 16j .. 16j+7 (half 0) and 16j+8 .. 16j+15 (half 1), each
 * added in order of j: a tile runs one half at a time and keeps its
 * accumulators in acc between blocks, which changes no rounding. */
#define PANEL_KB 256

/* Half h of the tile rows r0 .. r0+3 x tokens c0 .. c0+nc-1 (nc 1 to 3, a
 * constant after inlining) over the kb elements from k0; p: the panel from
 * step k0 / 16 on. */
static ALWAYS_INLINE void panel_tile(int nc, int64_t k0, int64_t kb, const float *p, const void *act,
                                     size_t act_stride, int r0, int c0, int h, __m256 acc[2][HL_PANEL_ROWS][4]) {
    __m256 s[4][3];
    const float *a[3];
    for (int c = 0; c < nc; c++) a[c] = (const float *)row_at(act, act_stride, c0 + c) + k0 + 8 * h;
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < nc; c++) s[r][c] = acc[h][r0 + r][c0 + c];
    p += 16 * r0 + 8 * h;
    for (int64_t i = 0; i < kb; i += 16, p += 16 * HL_PANEL_ROWS) {
        __m256 x[3];
        for (int c = 0; c < nc; c++) x[c] = _mm256_loadu_ps(a[c] + i);
        for (int r = 0; r < 4; r++) {
            __m256 w = _mm256_loadu_ps(p + 16 * r);
            __asm__("" : "+x"(w)); /* one load for nc FMAs: keeps GCC from folding it into each */
            for (int c = 0; c < nc; c++) s[r][c] = _mm256_fmadd_ps(w, x[c], s[r][c]);
        }
    }
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < nc; c++) acc[h][r0 + r][c0 + c] = s[r][c];
}

/* The same for every type: the panel and the activations hold floats. */
static ALWAYS_INLINE void panel_dot_t(uint32_t type, int64_t n, float *y, size_t y_stride, const void *panel,
                                      const void *act, size_t act_stride, int n_tok) {
    (void)type;
    __m256 acc[2][HL_PANEL_ROWS][4];
    for (int h = 0; h < 2; h++)
        for (int r = 0; r < HL_PANEL_ROWS; r++)
            for (int c = 0; c < 4; c++) acc[h][r][c] = _mm256_setzero_ps();
    for (int64_t k0 = 0; k0 < n; k0 += PANEL_KB) {
        const int64_t kb = n - k0 < PANEL_KB ? n - k0 : PANEL_KB;
        const float *p = (const float *)panel + k0 * HL_PANEL_ROWS;
        for (int r0 = 0; r0 < HL_PANEL_ROWS; r0 += 4)
            for (int h = 0; h < 2; h++) {
                int c0 = 0;
                if (n_tok >= 3) panel_tile(3, k0, kb, p, act, act_stride, r0, c0, h, acc), c0 = 3;
                else if (n_tok == 2) panel_tile(2, k0, kb, p, act, act_stride, r0, c0, h, acc), c0 = 2;
                if (c0 < n_tok) panel_tile(1, k0, kb, p, act, act_stride, r0, c0, h, acc);
            }
    }
    for (int c = 0; c < n_tok; c++)
        for (int r = 0; r < HL_PANEL_ROWS; r++)
            y[(size_t)c * y_stride + r] = hsum8_ggml(_mm256_add_ps(acc[0][r][c], acc[1][r][c]));
}

HL_FLOAT_BATCH_KERNELS(GGML_TYPE_F32, f32)
HL_FLOAT_BATCH_KERNELS(GGML_TYPE_F16, f16)
HL_FLOAT_BATCH_KERNELS(GGML_TYPE_BF16, bf16)

/* ----------------------------------------------------------------- table -- */

static const hl_cpu_type_ops avx2_f_batch_ops[] = {
    {GGML_TYPE_F32, GGML_TYPE_F32, hl_f32_from_float, tb_dot_f32, tb_4r_f32, tb_4c_f32, NULL, pack_f32, panel_dot_f32, NULL},
    {GGML_TYPE_F16, GGML_TYPE_F32, act_f16_f32, tb_dot_f16, tb_4r_f16, tb_4c_f16, NULL, pack_f16, panel_dot_f16, NULL},
    {GGML_TYPE_BF16, GGML_TYPE_F32, act_bf16_f32, tb_dot_bf16, tb_4r_bf16, tb_4c_bf16, NULL, pack_bf16, panel_dot_bf16, NULL},
};

static const hl_cpu_type_ops avx2_f_ops[] = {
    {GGML_TYPE_F32, GGML_TYPE_F32, hl_f32_from_float, dot_f32, NULL, NULL, &avx2_f_batch_ops[0], NULL, NULL, NULL},
    {GGML_TYPE_F16, GGML_TYPE_F16, act_f16, dot_f16, NULL, NULL, &avx2_f_batch_ops[1], NULL, NULL, NULL},
    {GGML_TYPE_BF16, GGML_TYPE_BF16, act_bf16, dot_bf16, dot_4r_bf16, NULL, &avx2_f_batch_ops[2], NULL, NULL, NULL},
};

const hl_cpu_type_ops *hl_cpu_ops_avx2_f_find(uint32_t type) {
    return hl_cpu_ops_in(avx2_f_ops, sizeof avx2_f_ops / sizeof avx2_f_ops[0], type);
}
