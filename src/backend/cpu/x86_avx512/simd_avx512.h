/* Helpers shared by the AVX-512 kernel files (x86_avx512/, compiled with
 * -mavx512f -mavx512bw -mavx512vl -mavx512vnni): the dword transpose that
 * builds panels (vec_dot.h), a 4-byte broadcast and the unpacking of 4- and
 * 5-bit quants. */
#ifndef HEARTH_BACKEND_CPU_SIMD_AVX512_H
#define HEARTH_BACKEND_CPU_SIMD_AVX512_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

/* rows[r] holds 8 dwords of row r (r < 16); writes 8 vectors of 64 bytes,
 * out + 64 k = [dword k of rows 0, 1, ..., 15]. The classic 8 x 8 transpose
 * (unpack, shuffle, then 128-bit lanes) on rows 0-7 and 8-15 at once, one
 * per 256-bit half. */
static inline void transpose_16x8(const __m256i rows[16], uint8_t *out) {
    __m512 a[8], t[8], u[8];
    for (int i = 0; i < 8; i++) {
        a[i] = _mm512_castsi512_ps(_mm512_inserti64x4(_mm512_castsi256_si512(rows[i]), rows[i + 8], 1));
    }
    for (int i = 0; i < 8; i += 2) { /* pairs of rows: dwords 0,1 (4,5) and 2,3 (6,7) interleaved */
        t[i] = _mm512_unpacklo_ps(a[i], a[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(a[i], a[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) { /* four rows: u[i + j] holds dword j (and j + 4) of each */
        u[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xee);
        u[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    const __m512i lo = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13), hi = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
    for (int j = 0; j < 4; j++) {
        const __m512i x = _mm512_castps_si512(u[j]), y = _mm512_castps_si512(u[j + 4]);
        _mm512_storeu_si512(out + 64 * j, _mm512_permutex2var_epi64(x, lo, y));
        _mm512_storeu_si512(out + 64 * (j + 4), _mm512_permutex2var_epi64(x, hi, y));
    }
}

/* The 4 bytes at p as a 16-lane broadcast. */
static inline __m512i bcast32(const void *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm512_set1_epi32(v);
}

/* The 32 quants of a Q4 block (Q4_0, Q4_1: 16 bytes qs, element j < 16 the
 * low nibble of qs[j], j + 16 its high nibble) as bytes 0..15 in element
 * order. */
static inline __m256i nibbles32(const uint8_t qs[16]) {
    const __m128i q = _mm_loadu_si128((const __m128i *)qs);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0f));
}

/* The 32 quants of a Q5 block (Q5_0, Q5_1: the nibbles of qs, bit 4 of
 * element j bit j of the little-endian word qh) as bytes 0..31. */
static inline __m256i quants5_32(const uint8_t qh[4], const uint8_t qs[16]) {
    uint32_t bits;
    memcpy(&bits, qh, sizeof bits);
    return _mm256_or_si256(nibbles32(qs), _mm256_maskz_mov_epi8(bits, _mm256_set1_epi8(16)));
}

#endif
