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
 *   ggml's vec_dot runs; so do these kernels. BF16 gets the same order (what
 *   tinyBLAS runs on AVX-512 CPUs without AVX512-BF16).
 * (llama.cpp's AVX2-only build runs tinyBLAS<8, __m256> instead: 8 lanes,
 * another order, which this level does not follow.) */
#include <immintrin.h>
#include <string.h>

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

/* ggml's vec_dot of `type`: the order where n % 16 != 0. */
static ALWAYS_INLINE void ggml_dot(uint32_t type, int64_t n, float *s, const void *w_row, const void *act_row) {
    if (type == GGML_TYPE_F32) dot_f32(n, s, w_row, act_row);
    else if (type == GGML_TYPE_F16) dot_f16(n, s, w_row, act_row);
    else dot_bf16(n, s, w_row, act_row);
}

/* s[r * nc + c] = dot(weight row r, activation row c) for r < nr, c < nc
 * (nr * nc <= 4; constants after inlining), each in tinyBLAS's order. */
static ALWAYS_INLINE void tb_tile(uint32_t type, int nr, int nc, int64_t n, float *s, const void *w,
                                  size_t w_stride, const void *act, size_t act_stride) {
    if (n % 16 != 0) {
        for (int r = 0; r < nr; r++)
            for (int c = 0; c < nc; c++)
                ggml_dot(type, n, &s[r * nc + c], row_at(w, w_stride, r), row_at(act, act_stride, c));
        return;
    }
    v16 acc[4] = {v16_zero(), v16_zero(), v16_zero(), v16_zero()};
    for (int64_t i = 0; i < n; i += 16) {
        v16 a[4];
        for (int c = 0; c < nc; c++) a[c] = load16(type, row_at(act, act_stride, c), i);
        for (int r = 0; r < nr; r++) {
            const v16 x = load16(type, row_at(w, w_stride, r), i);
            for (int c = 0; c < nc; c++) acc[r * nc + c] = v16_fma(x, a[c], acc[r * nc + c]);
        }
    }
    for (int k = 0; k < nr * nc; k++) s[k] = v16_reduce(acc[k]);
}

/* Panels (vec_dot.h), laid out as the AVX-512 ones (vec_dot_f_avx512.c):
 * for n % 16 == 0, per step j of 16 elements the 16 rows' 16 floats, row r's
 * at 256 j + 16 r; else the rows as they are, one after the other. */
static ALWAYS_INLINE void pack_t(uint32_t type, int64_t n, void *panel, const void *w, size_t w_stride) {
    if (n % 16 != 0) {
        const size_t row = hl_row_size(type, n);
        for (int r = 0; r < HL_PANEL_ROWS; r++) memcpy((uint8_t *)panel + (size_t)r * row, row_at(w, w_stride, r), row);
        return;
    }
    float *p = panel;
    for (int64_t i = 0; i < n; i += 16, p += 16 * HL_PANEL_ROWS)
        for (int r = 0; r < HL_PANEL_ROWS; r++) v16_store(p + 16 * r, load16(type, row_at(w, w_stride, r), i));
}

/* Rows r0, r0 + 1 of a panel (n % 16 == 0) with nc (1 or 2, a constant
 * after inlining) tokens: y[c * y_stride + r] for each, in tinyBLAS's order. */
static ALWAYS_INLINE void panel_tile(uint32_t type, int nc, int64_t n, float *y, size_t y_stride, const float *p,
                                     int r0, const void *act, size_t act_stride) {
    v16 acc[2][2] = {{v16_zero(), v16_zero()}, {v16_zero(), v16_zero()}};
    p += 16 * r0;
    for (int64_t i = 0; i < n; i += 16, p += 16 * HL_PANEL_ROWS) {
        v16 a[2];
        for (int c = 0; c < nc; c++) a[c] = load16(type, row_at(act, act_stride, c), i);
        for (int r = 0; r < 2; r++) {
            const v16 x = v16_load(p + 16 * r);
            for (int c = 0; c < nc; c++) acc[r][c] = v16_fma(x, a[c], acc[r][c]);
        }
    }
    for (int c = 0; c < nc; c++)
        for (int r = 0; r < 2; r++) y[(size_t)c * y_stride + r0 + r] = v16_reduce(acc[r][c]);
}

static ALWAYS_INLINE void panel_dot_t(uint32_t type, int64_t n, float *y, size_t y_stride, const void *panel,
                                      const void *act, size_t act_stride, int n_tok) {
    if (n % 16 != 0) {
        const size_t row = hl_row_size(type, n);
        for (int c = 0; c < n_tok; c++)
            for (int r = 0; r < HL_PANEL_ROWS; r++)
                ggml_dot(type, n, &y[(size_t)c * y_stride + r], (const uint8_t *)panel + (size_t)r * row,
                         row_at(act, act_stride, c));
        return;
    }
    for (int c = 0; c < n_tok; c += 2) {
        const void *at = row_at(act, act_stride, c);
        for (int r0 = 0; r0 < HL_PANEL_ROWS; r0 += 2) {
            if (n_tok - c >= 2) panel_tile(type, 2, n, y + (size_t)c * y_stride, y_stride, panel, r0, at, act_stride);
            else panel_tile(type, 1, n, y + (size_t)c * y_stride, y_stride, panel, r0, at, act_stride);
        }
    }
}

HL_FLOAT_BATCH_KERNELS(GGML_TYPE_F32, f32)
HL_FLOAT_BATCH_KERNELS(GGML_TYPE_F16, f16)
HL_FLOAT_BATCH_KERNELS(GGML_TYPE_BF16, bf16)

/* ----------------------------------------------------------------- table -- */

static const hl_cpu_type_ops avx2_f_batch_ops[] = {
    {GGML_TYPE_F32, GGML_TYPE_F32, hl_f32_from_float, tb_dot_f32, tb_4r_f32, tb_4c_f32, NULL, pack_f32, panel_dot_f32, NULL},
    {GGML_TYPE_F16, GGML_TYPE_F16, act_f16, tb_dot_f16, tb_4r_f16, tb_4c_f16, NULL, pack_f16, panel_dot_f16, NULL},
    {GGML_TYPE_BF16, GGML_TYPE_BF16, act_bf16, tb_dot_bf16, tb_4r_bf16, tb_4c_bf16, NULL, pack_bf16, panel_dot_bf16, NULL},
};

static const hl_cpu_type_ops avx2_f_ops[] = {
    {GGML_TYPE_F32, GGML_TYPE_F32, hl_f32_from_float, dot_f32, NULL, NULL, &avx2_f_batch_ops[0], NULL, NULL, NULL},
    {GGML_TYPE_F16, GGML_TYPE_F16, act_f16, dot_f16, NULL, NULL, &avx2_f_batch_ops[1], NULL, NULL, NULL},
    {GGML_TYPE_BF16, GGML_TYPE_BF16, act_bf16, dot_bf16, dot_4r_bf16, NULL, &avx2_f_batch_ops[2], NULL, NULL, NULL},
};

const hl_cpu_type_ops *hl_cpu_ops_avx2_f_find(uint32_t type) {
    return hl_cpu_ops_in(avx2_f_ops, sizeof avx2_f_ops / sizeof avx2_f_ops[0], type);
}
