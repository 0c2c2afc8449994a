/* The packed sub-block scales of Q3_K, Q4_K and Q5_K unpacked four bytes at a
 * time (SSE2), for the SIMD K-quant kernels of every level (vec_dot_k_avx2.c,
 * k_avx512.h). Layouts: quant/quant_k.h. */
#ifndef HEARTH_BACKEND_CPU_SIMD_K_SCALES_H
#define HEARTH_BACKEND_CPU_SIMD_K_SCALES_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "quant/quant.h"

/* The 12 bytes of Q4_K/Q5_K scales as 8 scales then 8 mins, 6 bits each
 * (ggml's get_scale_min_k4, four at a time). */
static inline __m128i k4_scales_mins(const uint8_t scales[HL_K_SCALE_SIZE]) {
    uint32_t u[3];
    memcpy(u, scales, sizeof u);
    const uint32_t sc_lo = u[0] & 0x3f3f3f3f, m_lo = u[1] & 0x3f3f3f3f;
    const uint32_t sc_hi = (u[2] & 0x0f0f0f0f) | ((u[0] >> 6) & 0x03030303) << 4;
    const uint32_t m_hi = ((u[2] >> 4) & 0x0f0f0f0f) | ((u[1] >> 6) & 0x03030303) << 4;
    return _mm_setr_epi32((int)sc_lo, (int)sc_hi, (int)m_lo, (int)m_hi);
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
