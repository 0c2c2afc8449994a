/* AVX2 + FMA + F16C tile kernels of the tiled attention: flash_simd.h over
 * 8-lane vectors, with ggml's polynomial exp (expf8_ggml, simd16_avx2.h).
 * Compiled with -mavx2 -mfma -mf16c; used only after hl_cpu_level_best()
 * says the CPU has them. */
#include <immintrin.h>

#include "backend/cpu/x86_avx2/simd16_avx2.h"

typedef __m256 FV;
#define FV_W 8

static inline FV fv_zero(void) { return _mm256_setzero_ps(); }
static inline FV fv_set1(float x) { return _mm256_set1_ps(x); }
static inline FV fv_load(const float *p) { return _mm256_loadu_ps(p); }
static inline FV fv_load_f16(const hl_half *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }
static inline void fv_store(float *p, FV v) { _mm256_storeu_ps(p, v); }
static inline FV fv_round_f16(FV v) { return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)); }
static inline FV fv_add(FV a, FV b) { return _mm256_add_ps(a, b); }
static inline FV fv_sub(FV a, FV b) { return _mm256_sub_ps(a, b); }
static inline FV fv_mul(FV a, FV b) { return _mm256_mul_ps(a, b); }
static inline FV fv_max(FV a, FV b) { return _mm256_max_ps(a, b); }
static inline FV fv_fma(FV a, FV b, FV c) { return _mm256_fmadd_ps(a, b, c); }
static inline FV fv_exp(FV x) { return expf8_ggml(x); }
static inline __m256 fv_fold8(FV v) { return v; }
static inline float fv_hsum(FV v) { return hsum8_ggml(v); }

static inline float fv_hmax(FV v) {
    __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_max_ps(x, _mm_movehl_ps(x, x));
    x = _mm_max_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
}

#include "backend/cpu/flash_simd.h"

const hl_flash_kernels hl_flash_kernels_avx2 = FLASH_SIMD_TABLE;
