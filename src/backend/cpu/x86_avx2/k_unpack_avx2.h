/* What the K-quant panel kernels of every SIMD level (k_kernels_avx512.h,
 * k_panel_avx2.h) share: the types' constants, the float orders, and one
 * super-block of a weight row unpacked for the packers (its quants as one
 * byte each per chunk of 32 elements, biased to be unsigned, and its scales,
 * mins, d and dmin). AVX2 only, so that both levels use it. Layouts:
 * quant/quant_k.h. */
#ifndef HEARTH_BACKEND_CPU_K_UNPACK_AVX2_H
#define HEARTH_BACKEND_CPU_K_UNPACK_AVX2_H

#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu/vec_dot.h"
#include "quant/quant.h"

static ALWAYS_INLINE int pk_n_sub(uint32_t type) { /* sub-blocks per super-block */
    return type == GGML_TYPE_Q4_K || type == GGML_TYPE_Q5_K ? 8 : 16;
}

static ALWAYS_INLINE bool pk_has_min(uint32_t type) {
    return type == GGML_TYPE_Q2_K || type == GGML_TYPE_Q4_K || type == GGML_TYPE_Q5_K;
}

static ALWAYS_INLINE int pk_bias(uint32_t type) { return type == GGML_TYPE_Q3_K ? 4 : type == GGML_TYPE_Q6_K ? 32 : 0; }

static ALWAYS_INLINE bool pk_repacked(uint32_t type) { /* llama.cpp's repacked order, not the tiled one */
    return type == GGML_TYPE_Q2_K || type == GGML_TYPE_Q4_K;
}

/* The float order of a panel call (k_kernels_avx512.h's file comment):
 * llama.cpp's repacked gemv or gemm, or its tiled kernels. */
typedef enum pk_order { PK_GEMV, PK_GEMM, PK_TILED } pk_order;

/* Sub-blocks per part of a super-block, the unit of the float operations:
 * gemm's 64 elements (Q4_K) or 128 (Q2_K), else the super-block. */
static ALWAYS_INLINE int pk_part(uint32_t type, pk_order order) {
    return order == PK_GEMM ? (type == GGML_TYPE_Q4_K ? 2 : 8) : pk_n_sub(type);
}

/* Calls kernel(type, order, n_tok, ...) with constant arguments for the
 * n_tok (1..4) tokens of a panel_dot call: 4 tokens in gemm's order (the
 * repacked types), fewer in gemv's, as llama.cpp hands out a batch's tokens
 * in groups of 4 and the rest; the tiled order at any count. */
#define PK_DISPATCH(kernel, type, n_tok, ...)                                                                          \
    do {                                                                                                               \
        const pk_order few_ = pk_repacked(type) ? PK_GEMV : PK_TILED;                                                  \
        const pk_order four_ = pk_repacked(type) ? PK_GEMM : PK_TILED;                                                 \
        switch (n_tok) {                                                                                               \
        case 1: kernel(type, few_, 1, __VA_ARGS__); break;                                                             \
        case 2: kernel(type, few_, 2, __VA_ARGS__); break;                                                             \
        case 3: kernel(type, few_, 3, __VA_ARGS__); break;                                                             \
        default: kernel(type, four_, 4, __VA_ARGS__); break;                                                           \
        }                                                                                                              \
    } while (0)

/* The activation sums that a panel's pair vectors multiply, as int16 pairs
 * (pairs[i] for sub-blocks 2i and 2i + 1): the block's bsums (sub-blocks of
 * 16), or for Q4_K/Q5_K neighbouring bsums added (sub-blocks of 32; pairs[0
 * .. 3] only). */
static ALWAYS_INLINE void pk_act_pairs(uint32_t type, const block_q8_K *a, int32_t pairs[8]) {
    if (type == GGML_TYPE_Q4_K || type == GGML_TYPE_Q5_K) {
        const __m128i s = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)a->bsums),
                                         _mm_loadu_si128((const __m128i *)(a->bsums + 8)));
        _mm_storeu_si128((__m128i *)pairs, s);
    } else {
        memcpy(pairs, a->bsums, sizeof a->bsums);
    }
}

/* v where bit `bit` of the byte of `bits` is set, else 0, per byte. */
static ALWAYS_INLINE __m256i bit_as(__m256i bits, int bit, char v) {
    const __m256i m = _mm256_set1_epi8((char)(1 << bit));
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(bits, m), m), _mm256_set1_epi8(v));
}

/* The scales and mins of the sub-blocks of one super-block of a row, d and dmin. */
typedef struct pk_row {
    int32_t sc[16];
    int16_t m[16];
    float d, dmin;
} pk_row;

/* One super-block of a row: the quants of chunk c (elements 32c .. 32c + 31)
 * as the panel's bytes u into chunk[c], the rest into *row. */
static ALWAYS_INLINE void pk_unpack(uint32_t type, const void *blk, __m256i chunk[8], pk_row *row) {
    const __m256i m2 = _mm256_set1_epi8(0x03), m4 = _mm256_set1_epi8(0x0f);
    if (type == GGML_TYPE_Q2_K || type == GGML_TYPE_Q3_K) { /* 2 bits: bits 2 (c % 4) of qs[32 (c / 4) + b] */
        const uint8_t *qs = type == GGML_TYPE_Q2_K ? ((const block_q2_K *)blk)->qs : ((const block_q3_K *)blk)->qs;
        __m256i low[8];
        for (int c = 0; c < 8; c++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * (c / 4)));
            low[c] = _mm256_and_si256(_mm256_srli_epi16(q, 2 * (c % 4)), m2);
        }
        if (type == GGML_TYPE_Q2_K) {
            const block_q2_K *w = blk;
            for (int j = 0; j < 16; j++) row->sc[j] = w->scales[j] & 15, row->m[j] = (int16_t)(w->scales[j] >> 4);
            for (int c = 0; c < 8; c++) { /* u = sc * q by table: bytes 0, sc, 2 sc, 3 sc per sub-block */
                const __m256i tab = _mm256_set_m128i(_mm_cvtsi32_si128(row->sc[2 * c + 1] * 0x03020100),
                                                     _mm_cvtsi32_si128(row->sc[2 * c] * 0x03020100));
                chunk[c] = _mm256_shuffle_epi8(tab, low[c]);
            }
            row->d = _cvtsh_ss(w->d);
            row->dmin = _cvtsh_ss(w->dmin);
        } else { /* Q3_K: u = low + 4 hbit, hbit = bit c of hmask[b] */
            const block_q3_K *w = blk;
            const __m256i hm = _mm256_loadu_si256((const __m256i *)w->hmask);
            for (int c = 0; c < 8; c++) {
                chunk[c] = _mm256_add_epi8(low[c], bit_as(hm, c, 4));
            }
            for (int j = 0; j < 16; j++) row->sc[j] = hl_q3_K_scale(w->scales, j) - 32;
            row->d = _cvtsh_ss(w->d);
        }
    } else if (type == GGML_TYPE_Q4_K || type == GGML_TYPE_Q5_K) { /* nibbles of qs[32 (c / 2) ..], low for even c */
        const block_q4_K *w4 = blk;
        const block_q5_K *w5 = blk;
        const uint8_t *qs = type == GGML_TYPE_Q4_K ? w4->qs : w5->qs;
        for (int h = 0; h < 4; h++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * h));
            chunk[2 * h] = _mm256_and_si256(q, m4);
            chunk[2 * h + 1] = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
        }
        if (type == GGML_TYPE_Q5_K) { /* + 16 hbit, hbit = bit c of qh[b] */
            const __m256i qh = _mm256_loadu_si256((const __m256i *)w5->qh);
            for (int c = 0; c < 8; c++) {
                chunk[c] = _mm256_add_epi8(chunk[c], bit_as(qh, c, 16));
            }
        }
        for (int j = 0; j < 8; j++) {
            uint8_t s, m;
            hl_q4_K_scale_min(type == GGML_TYPE_Q4_K ? w4->scales : w5->scales, j, &s, &m);
            row->sc[j] = s, row->m[j] = m;
        }
        row->d = _cvtsh_ss(type == GGML_TYPE_Q4_K ? w4->d : w5->d);
        row->dmin = _cvtsh_ss(type == GGML_TYPE_Q4_K ? w4->dmin : w5->dmin);
    } else { /* Q6_K: elements 128h + 32i + b: nibble of ql, 2 bits of qh */
        const block_q6_K *w = blk;
        for (int h = 0; h < 2; h++) {
            const __m256i l0 = _mm256_loadu_si256((const __m256i *)(w->ql + 64 * h));
            const __m256i l1 = _mm256_loadu_si256((const __m256i *)(w->ql + 64 * h + 32));
            const __m256i hb = _mm256_loadu_si256((const __m256i *)(w->qh + 32 * h));
            const __m256i lo[4] = {_mm256_and_si256(l0, m4), _mm256_and_si256(l1, m4),
                                   _mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                   _mm256_and_si256(_mm256_srli_epi16(l1, 4), m4)};
            for (int i = 0; i < 4; i++) {
                const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(hb, 2 * i), m2);
                chunk[4 * h + i] = _mm256_or_si256(lo[i], _mm256_slli_epi16(hi, 4));
            }
        }
        for (int j = 0; j < 16; j++) row->sc[j] = w->scales[j];
        row->d = _cvtsh_ss(w->d);
    }
}

#endif
