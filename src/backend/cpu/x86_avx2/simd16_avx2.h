/* ggml's 16-lane float arithmetic, spelled with AVX2, and its horizontal
 * sums. Only for the files of x86_avx2/ (compiled with -mavx2 -mfma -mf16c)
 * and x86_avx512/.
 *
 * llama.cpp built for an AVX-512 CPU (the reference's -march=native build)
 * runs its float vector code in 16-lane registers: dot products keep four
 * 16-lane accumulators (ggml-cpu/simd-mappings.h, GGML_F32_STEP 64), reduce
 * them with _mm512_reduce_add_ps, and compute exp with the AVX-512 variant of
 * ggml_v_expf (ggml-cpu/vec.h). All of that is lane-wise except the final
 * reduction, so a pair of 8-lane registers reproduces it bit for bit on any
 * AVX2 CPU; hearth does that rather than require AVX-512. */
#ifndef HEARTH_BACKEND_CPU_SIMD16_AVX2_H
#define HEARTH_BACKEND_CPU_SIMD16_AVX2_H

#include <immintrin.h>
#include <math.h>

#include "quant/quant.h"

/* One 16-lane register of ggml's: lanes 0..7 in lo, 8..15 in hi. */
typedef struct v16 {
    __m256 lo, hi;
} v16;

static inline v16 v16_zero(void) { return (v16){_mm256_setzero_ps(), _mm256_setzero_ps()}; }

static inline v16 v16_set1(float x) { return (v16){_mm256_set1_ps(x), _mm256_set1_ps(x)}; }

static inline v16 v16_load(const float *p) { return (v16){_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }

static inline v16 v16_load_f16(const hl_half *p) {
    return (v16){_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)),
                 _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 8)))};
}

static inline void v16_store(float *p, v16 v) {
    _mm256_storeu_ps(p, v.lo);
    _mm256_storeu_ps(p + 8, v.hi);
}

static inline v16 v16_add(v16 a, v16 b) { return (v16){_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }

static inline v16 v16_mul(v16 a, v16 b) { return (v16){_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }

/* a * b + c, one rounding */
static inline v16 v16_fma(v16 a, v16 b, v16 c) {
    return (v16){_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
}

/* ggml's hsum_float_8 (ggml-cpu/arch/x86/quants.c), also the 8-lane tail of
 * _mm512_reduce_add_ps: ((v0+v4) + (v2+v6)) + ((v1+v5) + (v3+v7)). */
static inline float hsum8_ggml(__m256 v) {
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    x = _mm_add_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
}

/* Eight results at once, for panels whose lane r is row r: lane r of
 * acc[k] is lane k of row r's 8-lane accumulator; lane r of the result is
 * hsum8_ggml of row r's, with hsum8_ggml's order of additions. */
static inline __m256 hsum8_ggml_rows(const __m256 acc[8]) {
    return _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(acc[0], acc[4]), _mm256_add_ps(acc[2], acc[6])),
                         _mm256_add_ps(_mm256_add_ps(acc[1], acc[5]), _mm256_add_ps(acc[3], acc[7])));
}

/* [hsum8_ggml(a), hsum8_ggml(b), hsum8_ggml(c), hsum8_ggml(d)], each with
 * hsum8_ggml's order of additions: fold the halves, transpose, then
 * (0+2) + (1+3). */
static inline __m128 hsum4_ps(__m256 a, __m256 b, __m256 c, __m256 d) {
    __m128 ta = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    __m128 tb = _mm_add_ps(_mm256_castps256_ps128(b), _mm256_extractf128_ps(b, 1));
    __m128 tc = _mm_add_ps(_mm256_castps256_ps128(c), _mm256_extractf128_ps(c, 1));
    __m128 td = _mm_add_ps(_mm256_castps256_ps128(d), _mm256_extractf128_ps(d, 1));
    _MM_TRANSPOSE4_PS(ta, tb, tc, td); /* ta = lane 0 of each, tb lane 1 ... */
    return _mm_add_ps(_mm_add_ps(ta, tc), _mm_add_ps(tb, td));
}

/* [sum(a), sum(b), sum(c), sum(d)] of int32 lanes (exact: any order). */
static inline __m128i hsum4_epi32(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i t = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
    return _mm_add_epi32(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
}

/* _mm512_reduce_add_ps as GCC defines it (avx512fintrin.h, __MM512_REDUCE_OP):
 * lanes i + (i+8), then i + (i+4), then (0+2) + (1+3). */
static inline float v16_reduce(v16 v) { return hsum8_ggml(_mm256_add_ps(v.lo, v.hi)); }

/* ggml_vec_dot_f16 / ggml_vec_dot_f32 (ggml-cpu/vec.cpp) as an AVX-512 build
 * runs them: per 64 elements, four 16-lane FMA accumulators; then
 * (acc0 + acc2) + (acc1 + acc3) reduced by _mm512_reduce_add_ps; the tail of
 * n % 64 one product at a time, for F16 in double (ggml adds
 * (ggml_float)(x*y)), for F32 in float (GCC vectorises ggml's loop into
 * products and in-order sums, so no FMA there). ggml_dot_f16_ahead also
 * prefetches x `ahead` elements ahead (a constant; 0: not at all). */
static inline __attribute__((always_inline)) float ggml_dot_f16_ahead(int64_t n, const hl_half *x, const hl_half *y,
                                                                      int64_t ahead) {
    v16 acc[4] = {v16_zero(), v16_zero(), v16_zero(), v16_zero()};
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        if (ahead) _mm_prefetch((const char *)(x + i + ahead), _MM_HINT_T0);
        if (ahead) _mm_prefetch((const char *)(x + i + ahead + 32), _MM_HINT_T0);
        for (int k = 0; k < 4; k++) {
            acc[k] = v16_fma(v16_load_f16(x + i + 16 * k), v16_load_f16(y + i + 16 * k), acc[k]);
        }
    }
    double sum = v16_reduce(v16_add(v16_add(acc[0], acc[2]), v16_add(acc[1], acc[3])));
    for (; i < n; i++) sum += (double)(hl_fp16_to_fp32(x[i]) * hl_fp16_to_fp32(y[i]));
    return (float)sum;
}

static inline float ggml_dot_f16(int64_t n, const hl_half *x, const hl_half *y) {
    return ggml_dot_f16_ahead(n, x, y, 0);
}

static inline float ggml_dot_f32(int64_t n, const float *x, const float *y) {
    v16 acc[4] = {v16_zero(), v16_zero(), v16_zero(), v16_zero()};
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        for (int k = 0; k < 4; k++) acc[k] = v16_fma(v16_load(x + i + 16 * k), v16_load(y + i + 16 * k), acc[k]);
    }
    float sum = v16_reduce(v16_add(v16_add(acc[0], acc[2]), v16_add(acc[1], acc[3])));
    for (; i < n; i++) sum += x[i] * y[i];
    return sum;
}

/* x * 2^n for integer-valued n with |n| <= 192 and x in [0.5, 2], rounded
 * once, as _mm512_scalef_ps rounds it: 2^n may not be a float, but 2^(n/2)
 * and 2^(n - n/2) are, and x * 2^(n/2) is exact. */
static inline __m256 scalef8(__m256 x, __m256 n) {
    const __m256i ni = _mm256_cvtps_epi32(n);
    const __m256i n1 = _mm256_srai_epi32(ni, 1);
    const __m256i n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 p1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    const __m256 p2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(x, p1), p2);
}

/* exp(x) on 8 lanes, ggml_v_expf's AVX-512 variant (ggml-cpu/vec.h, "adapted
 * from arm limited optimized routine"; the constants are its): n = round(x /
 * ln 2), b = x - n ln 2 in two steps, a degree-5 polynomial j ~ exp(b), result
 * j * 2^n; |n| > 192 gives 0 or inf. The AVX2 variant of ggml_v_expf rounds
 * differently (it forms 2^n * (1 + (j - 1))), so this is not it. */
static inline __m256 expf8_ggml(__m256 x) {
    const __m256 r = _mm256_set1_ps(0x1.8p23f);
    const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
    const __m256 n = _mm256_sub_ps(z, r);
    const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f),
                                      _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
    const __m256 u = _mm256_mul_ps(b, b);
    const __m256 hi = _mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f));
    const __m256 mid = _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f));
    const __m256 lo = _mm256_fmadd_ps(_mm256_set1_ps(0x1.ffffecp-1f), b, _mm256_set1_ps(1.0f));
    const __m256 j = _mm256_fmadd_ps(_mm256_fmadd_ps(hi, u, mid), u, lo);
    const __m256 res = scalef8(j, n);
    const __m256 abs_n = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), n);
    const __m256 out_of_range = _mm256_cmp_ps(abs_n, _mm256_set1_ps(192), _CMP_GT_OQ);
    if (_mm256_testz_ps(out_of_range, out_of_range)) return res;
    const __m256 n_le_0 = _mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_LE_OQ);
    const __m256 alt = _mm256_andnot_ps(n_le_0, _mm256_set1_ps(INFINITY));
    return _mm256_blendv_ps(res, alt, out_of_range);
}

static inline v16 v16_expf(v16 x) { return (v16){expf8_ggml(x.lo), expf8_ggml(x.hi)}; }

/* silu(x) = x / (1 + exp(0 - x)), ggml_v_silu's AVX-512 variant (vec.h). */
static inline __m256 silu8_ggml(__m256 x) {
    const __m256 e = expf8_ggml(_mm256_sub_ps(_mm256_setzero_ps(), x));
    return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

#endif
