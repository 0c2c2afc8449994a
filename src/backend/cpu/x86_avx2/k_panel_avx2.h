/* AVX2 panels (vec_dot.h) of the K-quants, specialised by a constant type
 * argument; their entry points are in vec_dot_k_avx2.c. The AVX-512 panels
 * (x86_avx512/k_kernels_avx512.h) in 8-lane form: no vpdpbusd at this
 * level, so the integer sums are formed with maddubs and madd.
 *
 * Layout. The 16 rows of a panel are two halves of 8 (rows 8h .. 8h + 7),
 * all of half 0's super-blocks first, then half 1's. Per super-block of a
 * half, lane r for its row r everywhere:
 * - 64 vectors of quants: vector v holds elements 4v .. 4v + 3 of each row
 *   as the unsigned bytes u of k_unpack_avx2.h (Q2_K sc * q, Q3_K q + 4, Q6_K
 *   q + 32, else q);
 * - the sub-block scales (not Q2_K, whose scales are in its quants), one
 *   vector per sub-block, the scale as two equal int16 per lane;
 * - one vector per pair of sub-blocks (2i, 2i + 1), two int16 per lane: the
 *   mins (m_2i, m_2i+1) of Q2_K, Q4_K, Q5_K; the scales (sc_2i, sc_2i+1) of
 *   Q3_K and Q6_K, which multiply their bias;
 * - d, then dmin for the types with mins, as floats.
 *
 * Integers. Per sub-block j and token, maddubs of the quant vectors with the
 * token's broadcast quads gives int16 pair sums of at most 2 * umax * 127
 * (umax the largest u: Q2_K 45, Q3_K 7, Q4_K 15, Q5_K 31, Q6_K 63); up to
 * kp_group of them add in int16 without overflow; madd with the scale
 * vector (Q2_K: ones) turns them into int32 per row. The pair vectors madd
 * with the activation sums of the same two sub-blocks (bsums, or for Q4_K /
 * Q5_K sums of 32): imin = sum(m * bsums), or sum(sc * bsums), of which bias
 * times comes off sum(sc * u * a) (the weight quant being u - bias). All
 * exact, so the float operations on them follow k_kernels_avx512.h's
 * orders, the bits of the kernels of vec_dot_k_avx2.c. */
#ifndef HEARTH_BACKEND_CPU_K_PANEL_AVX2_H
#define HEARTH_BACKEND_CPU_K_PANEL_AVX2_H

#include <immintrin.h>

#include "backend/cpu/x86_avx2/k_unpack_avx2.h"
#include "backend/cpu/x86_avx2/simd_avx2.h"
#include "backend/cpu/vec_dot.h"

#define KP_ROWS 8 /* rows of a half */

/* Byte offsets in a super-block of a half. */
#define KP_SCALES (64 * 32)
static ALWAYS_INLINE size_t kp_pairs_at(uint32_t type) {
    return KP_SCALES + (type == GGML_TYPE_Q2_K ? 0 : 32 * (size_t)pk_n_sub(type));
}
static ALWAYS_INLINE size_t kp_d_at(uint32_t type) { return kp_pairs_at(type) + 16 * (size_t)pk_n_sub(type); }
static ALWAYS_INLINE size_t kp_bytes(uint32_t type) { return kp_d_at(type) + (pk_has_min(type) ? 64 : 32); }
_Static_assert(2 * (KP_SCALES + 16 * 32 + 8 * 32 + 32) <= HL_PANEL_BYTES(HL_QK_K), "the largest panel fits");

/* int16 pair sums of maddubs that add up without overflow (file comment). */
static ALWAYS_INLINE int kp_group(uint32_t type) {
    return type == GGML_TYPE_Q4_K ? 8 : type == GGML_TYPE_Q2_K || type == GGML_TYPE_Q6_K ? 2 : 4;
}

/* The panel of the 16 rows at w, w + w_stride, ... */
static ALWAYS_INLINE void kp_pack(uint32_t type, int64_t n, void *panel, const void *w, size_t w_stride) {
    const size_t blk_size = hl_row_size(type, HL_QK_K);
    const int n_sub = pk_n_sub(type);
    uint8_t *p = panel;
    for (int h = 0; h < HL_PANEL_ROWS / KP_ROWS; h++) {
        for (int64_t b = 0; b < n / HL_QK_K; b++, p += kp_bytes(type)) {
            __m256i quads[8][KP_ROWS]; /* chunk c of row r */
            int32_t *sc = (int32_t *)(p + KP_SCALES);
            int16_t *pairs = (int16_t *)(p + kp_pairs_at(type));
            float *d = (float *)(p + kp_d_at(type)), *dmin = d + KP_ROWS;
            for (int r = 0; r < KP_ROWS; r++) {
                __m256i chunk[8];
                pk_row row;
                const uint8_t *blk = (const uint8_t *)w + (size_t)(KP_ROWS * h + r) * w_stride + (size_t)b * blk_size;
                pk_unpack(type, blk, chunk, &row);
                for (int c = 0; c < 8; c++) quads[c][r] = chunk[c];
                for (int j = 0; j < n_sub; j++) {
                    if (type != GGML_TYPE_Q2_K) sc[KP_ROWS * j + r] = (int32_t)((uint16_t)row.sc[j] * 0x10001u);
                    pairs[2 * (KP_ROWS * (j / 2) + r) + j % 2] = pk_has_min(type) ? row.m[j] : (int16_t)row.sc[j];
                }
                d[r] = row.d;
                if (pk_has_min(type)) dmin[r] = row.dmin;
            }
            for (int c = 0; c < 8; c++) transpose_8x8(quads[c], p + 32 * 8 * c, 32); /* vector 8c + k: dword k */
        }
    }
}

/* n_tok tokens (a constant after inlining) against one half of a panel;
 * lane r of acc[t] for row r. */
static ALWAYS_INLINE void kp_half_t(uint32_t type, pk_order order, int n_tok, int64_t n, float *y, size_t y_stride,
                                    const uint8_t *p, const void *act, size_t act_stride) {
    const int n_sub = pk_n_sub(type), vecs = 64 / n_sub, group = kp_group(type), part = pk_part(type, order);
    const int bias_shift = pk_bias(type) == 32 ? 5 : 2; /* bias = 1 << bias_shift where there is one */
    const bool has_min = pk_has_min(type);
    __m256 acc[4], accm[4];
    for (int t = 0; t < n_tok; t++) acc[t] = accm[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / HL_QK_K; b++, p += kp_bytes(type)) {
        const block_q8_K *a[4];
        int32_t apair[4][8]; /* per token, the int16 pairs of activation sums that pair vector i multiplies */
        for (int t = 0; t < n_tok; t++) {
            a[t] = (const block_q8_K *)((const char *)act + (size_t)t * act_stride) + b;
            pk_act_pairs(type, a[t], apair[t]);
        }
        const __m256 d = _mm256_loadu_ps((const float *)(p + kp_d_at(type)));
        const __m256 dmin = has_min ? _mm256_loadu_ps((const float *)(p + kp_d_at(type) + 32)) : _mm256_setzero_ps();
        __m256i isum[4], ipair[4];
        for (int t = 0; t < n_tok; t++) isum[t] = ipair[t] = _mm256_setzero_si256();
        for (int j = 0; j < n_sub; j++) {
            const __m256i sc = type == GGML_TYPE_Q2_K ? _mm256_set1_epi16(1)
                                                      : _mm256_loadu_si256((const __m256i *)(p + KP_SCALES + 32 * j));
            for (int g = 0; g < vecs; g += group) {
                __m256i s16[4];
                for (int t = 0; t < n_tok; t++) s16[t] = _mm256_setzero_si256();
                for (int k = g; k < g + group; k++) {
                    const int v = vecs * j + k;
                    const __m256i u = _mm256_loadu_si256((const __m256i *)(p + 32 * v));
                    for (int t = 0; t < n_tok; t++) {
                        const __m256i m = _mm256_maddubs_epi16(u, bcast32x8(a[t]->qs + 4 * v));
                        s16[t] = _mm256_add_epi16(s16[t], m);
                        __asm__("" : "+x"(s16[t])); /* keeps GCC from regrouping the sums and spilling */
                    }
                }
                for (int t = 0; t < n_tok; t++) isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(s16[t], sc));
            }
            if (j % 2 == 1) {
                const __m256i pr = _mm256_loadu_si256((const __m256i *)(p + kp_pairs_at(type) + 32 * (j / 2)));
                for (int t = 0; t < n_tok; t++) {
                    ipair[t] = _mm256_add_epi32(ipair[t], _mm256_madd_epi16(pr, _mm256_set1_epi32(apair[t][j / 2])));
                }
            }
            if (order == PK_TILED || (j + 1) % part != 0) continue;
            for (int t = 0; t < n_tok; t++) { /* the end of a part */
                const __m256 da = _mm256_set1_ps(a[t]->d);
                acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_mul_ps(d, da), acc[t]);
                accm[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ipair[t]), _mm256_mul_ps(dmin, da), accm[t]);
                isum[t] = ipair[t] = _mm256_setzero_si256();
            }
        }
        for (int t = 0; order == PK_TILED && t < n_tok; t++) {
            __m256i s1 = isum[t];
            if (pk_bias(type)) s1 = _mm256_sub_epi32(s1, _mm256_slli_epi32(ipair[t], bias_shift));
            __m256 r = _mm256_mul_ps(_mm256_cvtepi32_ps(s1), d);
            if (has_min) r = _mm256_fnmadd_ps(dmin, _mm256_cvtepi32_ps(ipair[t]), r);
            acc[t] = _mm256_fmadd_ps(r, _mm256_set1_ps(a[t]->d), acc[t]);
        }
    }
    for (int t = 0; t < n_tok; t++) {
        _mm256_storeu_ps(y + (size_t)t * y_stride, order == PK_TILED ? acc[t] : _mm256_sub_ps(acc[t], accm[t]));
    }
}

/* Both halves of the panel. */
static ALWAYS_INLINE void kp_panel_t(uint32_t type, pk_order order, int n_tok, int64_t n, float *y, size_t y_stride,
                                     const uint8_t *p, const void *act, size_t act_stride) {
    const size_t half = (size_t)(n / HL_QK_K) * kp_bytes(type);
    for (int h = 0; h < HL_PANEL_ROWS / KP_ROWS; h++) {
        kp_half_t(type, order, n_tok, n, y + KP_ROWS * h, y_stride, p + half * h, act, act_stride);
    }
}

/* hl_panel_dot_fn for `type`; K-quant panels need no hl_act_aux. Any
 * number of tokens (panel_block), in groups of 4 from the first: the groups
 * a matmul of 4 tokens per call would make, so the same bits. */
static ALWAYS_INLINE void kp_panel_dot(uint32_t type, int64_t n, float *y, size_t y_stride, const void *panel,
                                       const void *act, size_t act_stride, int n_tok) {
    for (int t = 0; t < n_tok; t += 4) {
        const int nt = n_tok - t < 4 ? n_tok - t : 4;
        PK_DISPATCH(kp_panel_t, type, nt, n, y + (size_t)t * y_stride, y_stride, panel, row_at(act, act_stride, t),
                    act_stride);
    }
}

#endif
