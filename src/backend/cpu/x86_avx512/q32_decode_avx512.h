/* The AVX-512 VNNI decode kernel (vec_dot_4r: 4 rows x 1 token) of the
 * 32-element block types that llama.cpp multiplies in ggml's 8-lane order:
 * Q5_0 and Q8_0 against Q8_0 activations (vec_dot_avx512.c), Q4_1 and Q5_1
 * against Q8_1 ones (vec_dot_q1_avx512.c). Specialised by a constant type
 * argument; included by files compiled with -mavx512f -mavx512bw
 * -mavx512vl -mavx512vnni.
 *
 * Float order: that of the AVX2 kernels (vec_dot_avx2.c, q8_dot and
 * q8_1_dot = ggml_vec_dot_q5_0_q8_0, q8_0_q8_0, q4_1_q8_1, q5_1_q8_1): per
 * result one 8-lane accumulator, lane k summing group k (elements 4k..4k+3)
 * of each block, acc = fma(d_w * d_a, float(isum), acc) per block; for
 * Q4_1/Q5_1 m_w * s_a in a separate chain ms = fma(m_w, s_a, ms); the
 * result hsum8_ggml(acc) (+ ms).
 *
 * Rows go two by two in a 512-bit vector, [row r's 32 quants | row r + 1's]
 * against the block's activations twice: one vpdpbusd gives both rows'
 * eight lanes, and one 512-bit FMA adds them to the two rows'
 * accumulators. vpdpbusd takes the weights unsigned: Q4_1 0..15 and Q5_1
 * 0..31 as stored, Q5_0 q + 16 (its stored 5-bit value), Q8_0 q + 128 (the
 * sign bit flipped); the bias comes off exactly through the integer
 * accumulator's start, -bias * (the activations' group sums). */
#ifndef HEARTH_BACKEND_CPU_Q32_DECODE_AVX512_H
#define HEARTH_BACKEND_CPU_Q32_DECODE_AVX512_H

#include <immintrin.h>
#include <stdbool.h>

#include "backend/cpu/x86_avx2/simd16_avx2.h"
#include "backend/cpu/x86_avx512/simd_avx512.h"
#include "backend/cpu/vec_dot.h"

static ALWAYS_INLINE bool q32_has_min(uint32_t type) { return type == GGML_TYPE_Q4_1 || type == GGML_TYPE_Q5_1; }

static ALWAYS_INLINE int q32_bias(uint32_t type) {
    return type == GGML_TYPE_Q8_0 ? 128 : type == GGML_TYPE_Q5_0 ? 16 : 0;
}

static ALWAYS_INLINE size_t q32_block_size(uint32_t type) {
    return type == GGML_TYPE_Q4_1   ? sizeof(block_q4_1)
           : type == GGML_TYPE_Q5_1 ? sizeof(block_q5_1)
           : type == GGML_TYPE_Q5_0 ? sizeof(block_q5_0)
                                    : sizeof(block_q8_0);
}

/* The quants of two Q4 blocks (16 bytes qs each) as [block 0's 32 | block
 * 1's 32] bytes 0..15 in element order: the 128-bit lanes hold qs0, qs0 >> 4,
 * qs1, qs1 >> 4, masked to nibbles. */
static inline __m512i nibbles32_x2(const uint8_t qs0[16], const uint8_t qs1[16]) {
    const __m256i q0 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs0));
    const __m256i q1 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs1));
    const __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(q0), q1, 1);
    return _mm512_and_si512(_mm512_mask_srli_epi16(z, 0xff00ff00, z, 4), _mm512_set1_epi8(0x0f));
}

/* Two Q5 blocks (Q5_0, Q5_1: bit 4 of element j bit j of qh) as bytes 0..31. */
static inline __m512i quants5_x2(const uint8_t qh0[4], const uint8_t qs0[16], const uint8_t qh1[4],
                                 const uint8_t qs1[16]) {
    uint32_t h0, h1;
    memcpy(&h0, qh0, sizeof h0);
    memcpy(&h1, qh1, sizeof h1);
    const __m512i hi = _mm512_maskz_mov_epi8(h0 | (uint64_t)h1 << 32, _mm512_set1_epi8(16));
    return _mm512_or_si512(nibbles32_x2(qs0, qs1), hi);
}

/* Block b of rows w0 and w1 as [w0's 32 quants | w1's 32], unsigned (q + bias). */
static ALWAYS_INLINE __m512i q32_quants_x2(uint32_t type, const void *w0, const void *w1, int64_t b) {
    if (type == GGML_TYPE_Q4_1) return nibbles32_x2(((const block_q4_1 *)w0)[b].qs, ((const block_q4_1 *)w1)[b].qs);
    if (type == GGML_TYPE_Q5_1) {
        const block_q5_1 *b0 = (const block_q5_1 *)w0 + b, *b1 = (const block_q5_1 *)w1 + b;
        return quants5_x2(b0->qh, b0->qs, b1->qh, b1->qs);
    }
    if (type == GGML_TYPE_Q5_0) {
        const block_q5_0 *b0 = (const block_q5_0 *)w0 + b, *b1 = (const block_q5_0 *)w1 + b;
        return quants5_x2(b0->qh, b0->qs, b1->qh, b1->qs);
    }
    const block_q8_0 *b0 = (const block_q8_0 *)w0 + b, *b1 = (const block_q8_0 *)w1 + b;
    const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)b0->qs)),
                                         _mm256_loadu_si256((const __m256i *)b1->qs), 1);
    return _mm512_xor_si512(q, _mm512_set1_epi8((char)0x80));
}

/* The 32 bits at the start of a block: the fp16 d (in the low 16 bits),
 * and m for Q4_1/Q5_1. */
static inline int q32_head(const void *block) {
    int32_t v;
    memcpy(&v, block, sizeof v);
    return v;
}

/* Lanes 8-15 (without AVX512DQ's extractf32x8). */
static inline __m256 upper_ps(__m512 v) { return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)); }

/* Rows 0-3 of w, w_stride bytes apart: acc01 holds rows 0 and 1's 8-lane
 * accumulators (lanes 0-7, 8-15), acc23 rows 2 and 3's. Q4_1/Q5_1: the
 * scales are [d0 m0 d1 m1 d2 m2 d3 m3] * [d_a s_a d_a s_a ...], and lane
 * 2r + 1 of ms holds row r's chain of m * s (the even lanes take d_w * d_a
 * products, unused); Q5_0/Q8_0: [d0 d1 d2 d3] * d_a. */
static ALWAYS_INLINE void q32_dot_4r(uint32_t type, int64_t n, float s[4], const void *w, size_t w_stride,
                                     const void *act_row) {
    const bool q1 = q32_has_min(type);
    const int bias = q32_bias(type);
    const size_t bsize = q32_block_size(type), asize = q1 ? sizeof(block_q8_1) : sizeof(block_q8_0);
    const char *a = act_row;
    const char *row[4];
    for (int r = 0; r < 4; r++) row[r] = (const char *)w + (size_t)r * w_stride;
    const int st = q1 ? 2 : 1; /* lane of row r's d_w * d_a: st * r */
    const __m512i pick01 = _mm512_inserti64x4(_mm512_set1_epi32(0), _mm256_set1_epi32(st), 1);
    const __m512i pick23 = _mm512_inserti64x4(_mm512_set1_epi32(2 * st), _mm256_set1_epi32(3 * st), 1);
    __m512 acc01 = _mm512_setzero_ps(), acc23 = _mm512_setzero_ps();
    __m256 ms = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / HL_QK; b++) {
        const char *ab = a + (size_t)b * asize;
        const __m256i qa256 = _mm256_loadu_si256((const __m256i *)(ab + asize - HL_QK));
        const __m512i qa = _mm512_broadcast_i64x4(qa256);
        __m512i isum0 = _mm512_setzero_si512();
        if (bias) { /* -bias * (sum of each group of four activations), both halves */
            const __m256i g = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8((char)bias), qa256);
            isum0 = _mm512_broadcast_i64x4(_mm256_sub_epi32(_mm256_setzero_si256(), g));
        }
        const __m512i i01 = _mm512_dpbusd_epi32(isum0, q32_quants_x2(type, row[0], row[1], b), qa);
        const __m512i i23 = _mm512_dpbusd_epi32(isum0, q32_quants_x2(type, row[2], row[3], b), qa);
        const size_t off = (size_t)b * bsize;
        __m512 scale;
        if (q1) {
            const __m256 dm = _mm256_cvtph_ps(_mm_setr_epi32(q32_head(row[0] + off), q32_head(row[1] + off),
                                                             q32_head(row[2] + off), q32_head(row[3] + off)));
            const __m256 ds = _mm256_cvtph_ps(_mm_set1_epi32(q32_head(ab)));
            scale = _mm512_castps256_ps512(_mm256_mul_ps(dm, ds));
            ms = _mm256_fmadd_ps(dm, ds, ms);
        } else {
            const __m128i d = _mm_setr_epi16((short)q32_head(row[0] + off), (short)q32_head(row[1] + off),
                                             (short)q32_head(row[2] + off), (short)q32_head(row[3] + off), 0, 0, 0, 0);
            scale = _mm512_castps128_ps512(_mm_mul_ps(_mm_cvtph_ps(d), _mm_set1_ps(_cvtsh_ss((hl_half)q32_head(ab)))));
        }
        acc01 = _mm512_fmadd_ps(_mm512_permutexvar_ps(pick01, scale), _mm512_cvtepi32_ps(i01), acc01);
        acc23 = _mm512_fmadd_ps(_mm512_permutexvar_ps(pick23, scale), _mm512_cvtepi32_ps(i23), acc23);
    }
    __m128 sums = hsum4_ps(_mm512_castps512_ps256(acc01), upper_ps(acc01), _mm512_castps512_ps256(acc23),
                           upper_ps(acc23));
    if (q1)
        sums = _mm_add_ps(
            sums, _mm_shuffle_ps(_mm256_castps256_ps128(ms), _mm256_extractf128_ps(ms, 1), _MM_SHUFFLE(3, 1, 3, 1)));
    _mm_storeu_ps(s, sums);
}

#endif
