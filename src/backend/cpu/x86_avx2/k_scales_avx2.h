/* The packed sub-block scales of Q3_K, Q4_K and Q5_K unpacked four bytes at
 * a time (SSE2, AVX2), for the SIMD K-quant kernels of every x86 level
 * (vec_dot_k_avx2.c, x86_avx512/k_kernels_avx512.h). Layouts:
 * quant/quant_k.h. */
#ifndef HEARTH_BACKEND_CPU_K_SCALES_AVX2_H
#define HEARTH_BACKEND_CPU_K_SCALES_AVX2_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "quant/quant.h"

/* The 12 bytes of Q4_K/Q5_K scales as 8 scales then 8 mins, 6 bits each
 * (ggml's get_scale_min_k4, four at a time), in 32-bit lanes of u = the
 * words u0, u1, u2 of `scales`: sc 0-3 = u0 & 0x3f.., sc 4-7 = (u2 & 0x0f..)
 * | (u0 >> 2 & 0x30..), mins 0-3 = u1 & 0x3f.., mins 4-7 = (u2 >> 4 &
 * 0x0f..) | (u1 >> 2 & 0x30..). Reads 16 bytes: every block type with these
 * scales has more bytes after them (Q4_K's qs, Q5_K's qh). AVX2 (vpsrlvd). */
static inline __m128i k4_scales_mins(const uint8_t scales[HL_K_SCALE_SIZE]) {
    const __m128i u = _mm_loadu_si128((const __m128i *)scales);
    const __m128i low = _mm_and_si128(
        _mm_srlv_epi32(_mm_shuffle_epi32(u, _MM_SHUFFLE(2, 1, 2, 0)), _mm_setr_epi32(0, 0, 0, 4)),
        _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
    const __m128i high = _mm_and_si128(_mm_srli_epi32(_mm_shuffle_epi32(u, _MM_SHUFFLE(1, 1, 0, 0)), 2),
                                       _mm_setr_epi32(0, 0x30303030, 0, 0x30303030));
    return _mm_or_si128(low, high);
}

/* The 16 Q3_K sub-block scales, 6 bits minus 32, as int8: for sub-blocks
 * 4g .. 4g+3, the low nibbles are bytes 0..7 of `scales` (low, then high
 * nibbles) and the 2 high bits are bits 2g, 2g+1 of bytes 8..11. */
static inline __m128i q3_K_scales(const uint8_t scales[12]) {
    uint32_t u[3];
    memcpy(u, scales, sizeof u);
    const uint32_t lo[4] = {u[0], u[1], u[0] >> 4, u[1] >> 4};
    uint32_t w[4];
    for (int g = 0; g < 4; g++) w[g] = (lo[g] & 0x0f0f0f0f) | ((u[2] >> (2 * g)) & 0x03030303) << 4;
    const __m128i sc = _mm_setr_epi32((int)w[0], (int)w[1], (int)w[2], (int)w[3]);
    return _mm_sub_epi8(sc, _mm_set1_epi8(32));
}

#endif
