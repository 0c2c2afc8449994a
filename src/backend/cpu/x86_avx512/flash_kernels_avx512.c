/* AVX-512 tile kernels of the tiled attention: flash_simd.h over 16-lane
 * vectors, with the AVX-512 variant of ggml's polynomial exp (ggml_v_expf,
 * ggml-cpu/vec.h; the constants are its). Compiled with -mavx512f
 * -mavx512bw -mavx512vl -mavx512vnni; used only after hl_cpu_level_best()
 * says the CPU has them. */
#include <immintrin.h>
#include <math.h>

#include "quant/quant.h"

typedef __m512 FV;
#define FV_W 16

static inline FV fv_zero(void) { return _mm512_setzero_ps(); }
static inline FV fv_set1(float x) { return _mm512_set1_ps(x); }
static inline FV fv_load(const float *p) { return _mm512_loadu_ps(p); }
static inline FV fv_load_f16(const hl_half *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }
static inline void fv_store(float *p, FV v) { _mm512_storeu_ps(p, v); }
static inline FV fv_round_f16(FV v) { return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)); }
static inline FV fv_add(FV a, FV b) { return _mm512_add_ps(a, b); }
static inline FV fv_sub(FV a, FV b) { return _mm512_sub_ps(a, b); }
static inline FV fv_mul(FV a, FV b) { return _mm512_mul_ps(a, b); }
static inline FV fv_max(FV a, FV b) { return _mm512_max_ps(a, b); }
static inline FV fv_fma(FV a, FV b, FV c) { return _mm512_fmadd_ps(a, b, c); }
static inline float fv_hsum(FV v) { return _mm512_reduce_add_ps(v); }
static inline float fv_hmax(FV v) { return _mm512_reduce_max_ps(v); }

static inline __m256 fv_fold8(FV v) {
    return _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

/* n = round(x / ln 2), b = x - n ln 2 in two steps, a degree-5 polynomial
 * j ~ exp(b), j * 2^n; |n| > 192 gives 0 or inf. */
static inline FV fv_exp(FV x) {
    const __m512 r = _mm512_set1_ps(0x1.8p23f);
    const __m512 z = _mm512_fmadd_ps(x, _mm512_set1_ps(0x1.715476p+0f), r);
    const __m512 n = _mm512_sub_ps(z, r);
    const __m512 b = _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.7f7d1cp-20f),
                                      _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e4p-1f), x));
    const __mmask16 d = _mm512_cmp_ps_mask(_mm512_abs_ps(n), _mm512_set1_ps(192), _CMP_GT_OQ);
    const __m512 u = _mm512_mul_ps(b, b);
    const __m512 hi = _mm512_fmadd_ps(_mm512_set1_ps(0x1.0e4020p-7f), b, _mm512_set1_ps(0x1.573e2ep-5f));
    const __m512 mid = _mm512_fmadd_ps(_mm512_set1_ps(0x1.555e66p-3f), b, _mm512_set1_ps(0x1.fffdb6p-2f));
    const __m512 lo = _mm512_fmadd_ps(_mm512_set1_ps(0x1.ffffecp-1f), b, _mm512_set1_ps(1.0f));
    const __m512 j = _mm512_fmadd_ps(_mm512_fmadd_ps(hi, u, mid), u, lo);
    const __m512 res = _mm512_scalef_ps(j, n);
    if (_mm512_kortestz(d, d)) return res;
    const __m512 zero = _mm512_setzero_ps();
    const __m512 alt = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(n, zero, _CMP_LE_OQ), _mm512_set1_ps(INFINITY), zero);
    return _mm512_mask_blend_ps(d, res, alt);
}

#include "backend/cpu/flash_simd.h"

const hl_flash_kernels hl_flash_kernels_avx512 = FLASH_SIMD_TABLE;
