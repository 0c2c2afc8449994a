/* AVX-512 kernels for float weights (F32, F16, BF16), put into the AVX-512
 * table by vec_dot_avx512.c over the AVX2 ones of vec_dot_f_avx2.c, whose
 * float orders they keep (that file says which: ggml's vec_dot for one
 * token, llamafile's tinyBLAS<16, __m512> for batches). Compiled with
 * -mavx512f -mavx512bw -mavx512vl -mavx512vnni; called only after
 * hl_cpu_level_best() says the CPU has them.
 *
 * One token (F32, F16): ggml's four 16-lane accumulators per row, 1 or 4
 * rows at a time (vec_dot_4r: rows far apart, vec_dot.h).
 *
 * Batches: panels (vec_dot.h) of 16 rows converted to floats once per
 * matmul, and the activations as floats (each an F16 / BF16 value for
 * those types) in element order, so that the inner loop converts
 * nothing: per step of 16 elements the panel holds the 16 rows' 16 floats
 * side by side (1 KiB). panel_dot runs tiles of 4 rows x up to 4 tokens, 16
 * accumulators, one FMA per row and token per step, each output in
 * tinyBLAS's order. Rows of n % 16 != 0 elements never reach these kernels
 * (hl_cpu_batch_applies). */
#include <immintrin.h>
#include <stdbool.h>

#include "backend/cpu/vec_dot.h"
#include "backend/cpu/x86_avx2/simd16_avx2.h"

/* _mm512_reduce_add_ps as GCC defines it (avx512fintrin.h), which tinyBLAS's
 * and ggml's hsum call: lanes i + (i+8), then hsum8_ggml's order. */
static inline float reduce16(__m512 v) {
    const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
    return hsum8_ggml(_mm256_add_ps(_mm512_castps512_ps256(v), hi));
}

/* reduce16 of 16 vectors at once, each sum in reduce16's order: lane 4q + j
 * of the result is the sum of v[j][q]. Per step two vectors' halves (then
 * quarters, pairs, lanes) are brought side by side and added, as reduce16
 * adds them within one vector. */
static inline __m512 reduce16_x16(const __m512 m[4][4]) {
    __m512 v[16], s1[8], s2[4], s3[2];
    for (int k = 0; k < 16; k++) v[k] = m[k / 4][k % 4];
    for (int k = 0; k < 8; k++) /* [v lanes i + (i+8) | w lanes i + (i+8)], i < 8 */
        s1[k] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], 0x44),
                              _mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], 0xee));
    for (int k = 0; k < 4; k++) /* quarter q: v[4k + q]'s i + (i+4), i < 4 */
        s2[k] = _mm512_add_ps(_mm512_shuffle_f32x4(s1[2 * k], s1[2 * k + 1], 0x88),
                              _mm512_shuffle_f32x4(s1[2 * k], s1[2 * k + 1], 0xdd));
    for (int k = 0; k < 2; k++) /* per quarter: [0+2, 1+3] of s2[2k], then of s2[2k + 1] */
        s3[k] = _mm512_add_ps(_mm512_shuffle_ps(s2[2 * k], s2[2 * k + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                              _mm512_shuffle_ps(s2[2 * k], s2[2 * k + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    return _mm512_add_ps(_mm512_shuffle_ps(s3[0], s3[1], _MM_SHUFFLE(2, 0, 2, 0)), /* (0+2) + (1+3) */
                         _mm512_shuffle_ps(s3[0], s3[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

/* Elements i .. i+15 of a row of `type` as floats. */
static ALWAYS_INLINE __m512 load16(uint32_t type, const void *row, int64_t i) {
    if (type == GGML_TYPE_F32) return _mm512_loadu_ps((const float *)row + i);
    const __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)row + i));
    if (type == GGML_TYPE_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* ------------------------------------------------ one token: ggml's order -- */

/* s[r] = dot(row r, act_row) for r < nr (1 or 4) in ggml_vec_dot_f16 /
 * ggml_vec_dot_f32's AVX-512 order (simd16_avx2.h, ggml_dot_f16). */
static ALWAYS_INLINE void ggml_rows(uint32_t type, int nr, int64_t n, float *s, const void *w, size_t w_stride,
                                    const void *act_row) {
    __m512 acc[4][4];
    for (int r = 0; r < nr; r++)
        for (int k = 0; k < 4; k++) acc[r][k] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m512 a[4];
        for (int k = 0; k < 4; k++) a[k] = load16(type, act_row, i + 16 * k);
        for (int r = 0; r < nr; r++)
            for (int k = 0; k < 4; k++)
                acc[r][k] = _mm512_fmadd_ps(load16(type, row_at(w, w_stride, r), i + 16 * k), a[k], acc[r][k]);
    }
    for (int r = 0; r < nr; r++) {
        const __m512 t = _mm512_add_ps(_mm512_add_ps(acc[r][0], acc[r][2]), _mm512_add_ps(acc[r][1], acc[r][3]));
        if (type == GGML_TYPE_F16) { /* the tail in double, as ggml */
            const hl_half *x = row_at(w, w_stride, r), *y = act_row;
            double sum = reduce16(t);
            for (int64_t j = i; j < n; j++) sum += (double)(hl_fp16_to_fp32(x[j]) * hl_fp16_to_fp32(y[j]));
            s[r] = (float)sum;
        } else {
            const float *x = row_at(w, w_stride, r), *y = act_row;
            float sum = reduce16(t);
            for (int64_t j = i; j < n; j++) sum += x[j] * y[j];
            s[r] = sum;
        }
    }
}

static void dot_f32(int64_t n, float *s, const void *w_row, const void *act_row) {
    ggml_rows(GGML_TYPE_F32, 1, n, s, w_row, 0, act_row);
}

static void dot_4r_f32(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {
    ggml_rows(GGML_TYPE_F32, 4, n, s, w, w_stride, act_row);
}

static void dot_f16(int64_t n, float *s, const void *w_row, const void *act_row) {
    ggml_rows(GGML_TYPE_F16, 1, n, s, w_row, 0, act_row);
}

static void dot_4r_f16(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {
    ggml_rows(GGML_TYPE_F16, 4, n, s, w, w_stride, act_row);
}

/* --------------------------------------------- batches: tinyBLAS order -- */

/* The batch activations: x rounded to F16 (BF16) as the AVX2 level rounds
 * it, stored as floats (exact), in element order (the AVX2 level splits
 * each row in halves, which 16-lane loads need not). */
static void act_f16_f32(const float *x, void *dst, int64_t n) {
    float *y = dst;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT)));
    for (; i < n; i++) y[i] = hl_fp16_to_fp32(hl_fp32_to_fp16(x[i]));
}

static void act_bf16_f32(const float *x, void *dst, int64_t n) {
    float *y = dst;
    for (int64_t i = 0; i < n; i++) y[i] = hl_bf16_to_fp32(hl_fp32_to_bf16(x[i]));
}

/* s[r * nc + c] = dot(weight row r, activation row c) for r < nr, c < nc
 * (nr * nc <= 4; constants after inlining), each in tinyBLAS's order. */
static ALWAYS_INLINE void tb_tile(uint32_t type, int nr, int nc, int64_t n, float *s, const void *w, size_t w_stride,
                                  const void *act, size_t act_stride) {
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t i = 0; i < n; i += 16) {
        __m512 a[4];
        for (int c = 0; c < nc; c++) a[c] = _mm512_loadu_ps((const float *)row_at(act, act_stride, c) + i);
        for (int r = 0; r < nr; r++) {
            const __m512 x = load16(type, row_at(w, w_stride, r), i);
            for (int c = 0; c < nc; c++) acc[r * nc + c] = _mm512_fmadd_ps(x, a[c], acc[r * nc + c]);
        }
    }
    for (int k = 0; k < nr * nc; k++) s[k] = reduce16(acc[k]);
}

/* The panel of rows w, w + w_stride, ...: for n % 16 == 0, per step j of 16
 * elements 16 x 16 floats, row r's at 256 j + 16 r. */
static ALWAYS_INLINE void pack_t(uint32_t type, int64_t n, void *panel, const void *w, size_t w_stride) {
    float *p = panel;
    for (int64_t i = 0; i < n; i += 16, p += 16 * HL_PANEL_ROWS)
        for (int r = 0; r < HL_PANEL_ROWS; r++) _mm512_storeu_ps(p + 16 * r, load16(type, row_at(w, w_stride, r), i));
}

/* Rows r0 .. r0+3 of a panel (n % 16 == 0) with nc tokens (a constant after
 * inlining): y[c * y_stride + r] for each. The same for every type: the
 * panel and the activations hold floats. */
static ALWAYS_INLINE void panel_tile(int nc, int64_t n, float *y, size_t y_stride, const float *p, int r0,
                                     const void *act, size_t act_stride) {
    __m512 acc[4][4];
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < nc; c++) acc[r][c] = _mm512_setzero_ps();
    p += 16 * r0;
    for (int64_t i = 0; i < n; i += 16, p += 16 * HL_PANEL_ROWS) {
        __m512 a[4];
        for (int c = 0; c < nc; c++) a[c] = _mm512_loadu_ps((const float *)row_at(act, act_stride, c) + i);
        for (int r = 0; r < 4; r++) {
            const __m512 x = _mm512_loadu_ps(p + 16 * r);
            for (int c = 0; c < nc; c++) acc[r][c] = _mm512_fmadd_ps(x, a[c], acc[r][c]);
        }
    }
    if (nc == 4) { /* lane 4c + r of the sums: row r, token c */
        const __m512 sums = reduce16_x16(acc);
        _mm_storeu_ps(y + r0, _mm512_castps512_ps128(sums));
        _mm_storeu_ps(y + y_stride + r0, _mm512_extractf32x4_ps(sums, 1));
        _mm_storeu_ps(y + 2 * y_stride + r0, _mm512_extractf32x4_ps(sums, 2));
        _mm_storeu_ps(y + 3 * y_stride + r0, _mm512_extractf32x4_ps(sums, 3));
        return;
    }
    for (int c = 0; c < nc; c++)
        for (int r = 0; r < 4; r++) y[(size_t)c * y_stride + r0 + r] = reduce16(acc[r][c]);
}

static ALWAYS_INLINE void panel_dot_t(uint32_t type, int64_t n, float *y, size_t y_stride, const void *panel,
                                      const void *act, size_t act_stride, int n_tok) {
    (void)type;
    for (int r0 = 0; r0 < HL_PANEL_ROWS; r0 += 4) {
        switch (n_tok) {
        case 1: panel_tile(1, n, y, y_stride, panel, r0, act, act_stride); break;
        case 2: panel_tile(2, n, y, y_stride, panel, r0, act, act_stride); break;
        case 3: panel_tile(3, n, y, y_stride, panel, r0, act, act_stride); break;
        default: panel_tile(4, n, y, y_stride, panel, r0, act, act_stride); break;
        }
    }
}

HL_FLOAT_BATCH_KERNELS(GGML_TYPE_F32, f32)
HL_FLOAT_BATCH_KERNELS(GGML_TYPE_F16, f16)
HL_FLOAT_BATCH_KERNELS(GGML_TYPE_BF16, bf16)

/* ----------------------------------------------------------------- table -- */

void hl_cpu_ops_avx512_f_patch(hl_cpu_type_ops *ops, bool batch) {
    if (!batch && ops->type == GGML_TYPE_F32) ops->vec_dot = dot_f32, ops->vec_dot_4r = dot_4r_f32;
    if (!batch && ops->type == GGML_TYPE_F16) ops->vec_dot = dot_f16, ops->vec_dot_4r = dot_4r_f16;
    if (batch && ops->type == GGML_TYPE_F32) {
        ops->act_from_float = hl_f32_from_float;
        ops->vec_dot = tb_dot_f32, ops->vec_dot_4r = tb_4r_f32, ops->vec_dot_4c = tb_4c_f32;
        ops->pack_panel = pack_f32, ops->panel_dot = panel_dot_f32;
    }
    if (batch && ops->type == GGML_TYPE_F16) {
        ops->act_from_float = act_f16_f32;
        ops->vec_dot = tb_dot_f16, ops->vec_dot_4r = tb_4r_f16, ops->vec_dot_4c = tb_4c_f16;
        ops->pack_panel = pack_f16, ops->panel_dot = panel_dot_f16;
    }
    if (batch && ops->type == GGML_TYPE_BF16) {
        ops->act_from_float = act_bf16_f32;
        ops->vec_dot = tb_dot_bf16, ops->vec_dot_4r = tb_4r_bf16, ops->vec_dot_4c = tb_4c_bf16;
        ops->pack_panel = pack_bf16, ops->panel_dot = panel_dot_bf16;
    }
}
