/* Helpers shared by the AVX2 kernel files (x86_avx2/, compiled with -mavx2
 * -mfma -mf16c): the dword transpose that builds panels (vec_dot.h) and the
 * 4-byte broadcast that panel kernels multiply them with. */
#ifndef HEARTH_BACKEND_CPU_SIMD_AVX2_H
#define HEARTH_BACKEND_CPU_SIMD_AVX2_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* rows[r] holds 8 dwords of row r (r < 8); writes 8 vectors of 32 bytes,
 * out + stride * k = [dword k of rows 0, 1, ..., 7]. The classic 8 x 8
 * transpose: unpack, shuffle, then the 128-bit lanes. */
static inline void transpose_8x8(const __m256i rows[8], uint8_t *out, size_t stride) {
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) { /* dwords 0,1 (4,5) and 2,3 (6,7) of a pair of rows interleaved */
        t[i] = _mm256_unpacklo_ps(_mm256_castsi256_ps(rows[i]), _mm256_castsi256_ps(rows[i + 1]));
        t[i + 1] = _mm256_unpackhi_ps(_mm256_castsi256_ps(rows[i]), _mm256_castsi256_ps(rows[i + 1]));
    }
    for (int i = 0; i < 8; i += 4) { /* four rows: u[i + j] holds dword j (low lane) and j + 4 (high) of each */
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int j = 0; j < 4; j++) {
        _mm256_storeu_ps((float *)(out + stride * j), _mm256_permute2f128_ps(u[j], u[j + 4], 0x20));
        _mm256_storeu_ps((float *)(out + stride * (j + 4)), _mm256_permute2f128_ps(u[j], u[j + 4], 0x31));
    }
}

/* The 4 bytes at p in every 32-bit lane. */
static inline __m256i bcast32x8(const void *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm256_set1_epi32(v);
}

#endif
