/* Generic AVX-512 kernels of the K-quants, specialised by a constant type
 * argument (inlining folds the branches on it away): the integer part of
 * decode (one token) and the panels (vec_dot.h), for all five types; their
 * entry points are in vec_dot_k_avx512.c (compiled with -mavx512f
 * -mavx512bw -mavx512vl -mavx512vnni).
 *
 * Decode. A super-block is eight chunks of 32 elements; one 512-bit vector
 * holds two chunks, a low one in its low 256 bits and a high one in its high
 * 256 bits (for Q4_K/Q5_K chunks 4g + h and 4g + h + 2, the low and high
 * nibbles of the 64 bytes qs[64g ..] as h = 0, 1; for Q6_K chunks 4g + 2h
 * and 4g + 2h + 1, the nibbles of ql[64g ..]; for Q2_K/Q3_K chunks k and
 * k + 4, bits 2k of qs[0 .. 63]), with the activations put in the same
 * order. maddubs adds neighbouring products into int16 and vpdpwssd
 * multiplies those by the sub-block scales and adds pairs into int32 lanes:
 * lane m of each half receives elements 4m .. 4m + 3 of its chunk, and
 * adding the halves gives ggml's AVX2 layout (vec_dot_k_avx2.c), lane m
 * holding elements 4m .. 4m + 3 of every chunk, each lane exact. Q6_K's
 * quants go in unsigned (0..63) and its -32 comes off lane m as 32 * (sc *
 * bsums of sub-blocks 2m and 2m + 1), as ggml's AVX2 kernel takes it off.
 *
 * Panels. Per super-block of 16 rows (lane r = row r everywhere):
 * - 64 vectors of quants: vector v holds elements 4v .. 4v + 3 of each row
 *   as unsigned bytes u: Q2_K sc * q (its 4-bit scale times the 2-bit
 *   quant: at most 45, so the scales need no multiply), Q3_K q + 4, Q4_K,
 *   Q5_K, Q6_K the stored quant q;
 * - the sub-block scales as int32, one vector per sub-block (16 of 16
 *   elements, Q4_K/Q5_K 8 of 32; none for Q2_K);
 * - for the types with mins (Q2_K, Q4_K, Q5_K), the min pairs (m_2i,
 *   m_2i+1) as two int16 per lane, one vector per pair;
 * - d, then dmin for the types with mins, as floats.
 * Per sub-block j of a row, with a the activation quants, vpdpbusd gives
 * sum(u * a) exactly, and the weight quant being u - bias (Q3_K 4, Q6_K 32,
 * else 0), sum((u - bias) * a) = sum(u * a) - bias * bsums_j.
 *
 * Float orders (vec_dot_k_avx2.c has them for one output at a time; here a
 * lane holds one):
 * - Q2_K, Q4_K: llama.cpp's repacked kernels, per part of a super-block
 *   acc = fma(float(isum), d * d_a, acc), accm = fma(float(imin), dmin *
 *   d_a, accm), result acc - accm, isum = sum(sc * q * a) and imin =
 *   sum(m * bsums) exact over the part. A call with 4 tokens follows gemm
 *   (parts of 64 elements for Q4_K, 128 for Q2_K), one with fewer gemv (the
 *   whole super-block), as the matmul hands out tokens in the same groups.
 * - Q3_K, Q5_K, Q6_K (their batch kernels, from 8 tokens on): llama.cpp's
 *   tiled kernels, per super-block r = float(s1) * d, for Q5_K r = fma(-dmin,
 *   float(s2), r), then acc = fma(r, d_a, acc), s1 = sum(sc * q * a) and
 *   s2 = sum(m * a) exact. */
#ifndef HEARTH_BACKEND_CPU_K_KERNELS_AVX512_H
#define HEARTH_BACKEND_CPU_K_KERNELS_AVX512_H

#include <immintrin.h>
#include <stdbool.h>

#include "backend/cpu/vec_dot.h"
#include "backend/cpu/x86_avx2/k_scales_avx2.h"
#include "backend/cpu/x86_avx2/k_unpack_avx2.h"
#include "backend/cpu/x86_avx2/simd16_avx2.h"
#include "backend/cpu/x86_avx512/simd_avx512.h"

/* Byte offsets in a super-block of a panel. */
#define PK_SCALES (64 * 64)
static ALWAYS_INLINE size_t pk_mins_at(uint32_t type) {
    return PK_SCALES + (type == GGML_TYPE_Q2_K ? 0 : 64 * (size_t)pk_n_sub(type));
}
static ALWAYS_INLINE size_t pk_d_at(uint32_t type) {
    return pk_mins_at(type) + (pk_has_min(type) ? 32 * (size_t)pk_n_sub(type) : 0);
}
static ALWAYS_INLINE size_t pk_bytes(uint32_t type) { return pk_d_at(type) + (pk_has_min(type) ? 128 : 64); }
_Static_assert(PK_SCALES + 16 * 64 + 64 <= 21 * HL_QK_K, "the largest panel (Q3_K, Q6_K) fits HL_PANEL_BYTES");
_Static_assert(PK_SCALES + 8 * 64 + 4 * 64 + 128 <= 21 * HL_QK_K, "a Q4_K/Q5_K panel fits HL_PANEL_BYTES");

/* --------------------------------------------------------------- decode -- */

/* One super-block of a token's activations as decode uses them: av[i] the
 * quants of the chunks that the weight vector i holds, in the same order;
 * Q3_K: a4[i] = 4 * (sums of neighbouring pairs of av[i]) as int16, the
 * bias of its weight quants; Q2_K, Q6_K: bsums; Q4_K/Q5_K: q8s the sums of
 * its eight sub-blocks. */
typedef struct kd_act {
    __m512i av[4], a4[4];
    __m256i bsums;
    __m128i q8s;
} kd_act;

/* The chunks of weight vector i (0..3), low and high half. */
static ALWAYS_INLINE int kd_lo(uint32_t type, int i) {
    if (type == GGML_TYPE_Q6_K) return 4 * (i / 2) + 2 * (i % 2);
    return type == GGML_TYPE_Q4_K || type == GGML_TYPE_Q5_K ? 4 * (i / 2) + i % 2 : i;
}
static ALWAYS_INLINE int kd_hi(uint32_t type, int i) {
    if (type == GGML_TYPE_Q6_K) return kd_lo(type, i) + 1;
    return kd_lo(type, i) + (type == GGML_TYPE_Q4_K || type == GGML_TYPE_Q5_K ? 2 : 4);
}

static ALWAYS_INLINE __m512i kd_pair(__m256i lo, __m256i hi) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

static ALWAYS_INLINE void kd_act_load(uint32_t type, const block_q8_K *a, kd_act *x) {
    for (int i = 0; i < 4; i++) {
        x->av[i] = kd_pair(_mm256_loadu_si256((const __m256i *)(a->qs + 32 * kd_lo(type, i))),
                           _mm256_loadu_si256((const __m256i *)(a->qs + 32 * kd_hi(type, i))));
        if (type == GGML_TYPE_Q3_K) x->a4[i] = _mm512_maddubs_epi16(_mm512_set1_epi8(4), x->av[i]);
    }
    if (type == GGML_TYPE_Q2_K || type == GGML_TYPE_Q6_K) x->bsums = _mm256_loadu_si256((const __m256i *)a->bsums);
    if (type == GGML_TYPE_Q4_K || type == GGML_TYPE_Q5_K) {
        x->q8s = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)a->bsums),
                                _mm_loadu_si128((const __m128i *)(a->bsums + 8)));
    }
}

/* A vector of bytes: `lo` in the low 256 bits, `hi` in the high ones. */
static ALWAYS_INLINE __m512i kd_bytes2(int lo, int hi) {
    return kd_pair(_mm256_set1_epi8((char)lo), _mm256_set1_epi8((char)hi));
}

/* The int16 scales of weight vector i: sub-blocks 2 lo, 2 lo + 1, 2 hi,
 * 2 hi + 1 in its four 128-bit lanes (chunks lo and hi of kd_lo, kd_hi),
 * from the 16 scales sc16 of a super-block. */
static ALWAYS_INLINE __m512i kd_scales16(uint32_t type, int i, __m256i sc16) {
    const int lo = 2 * kd_lo(type, i), hi = 2 * kd_hi(type, i);
    const __m512i idx = kd_pair(_mm256_set_m128i(_mm_set1_epi16((short)(lo + 1)), _mm_set1_epi16((short)lo)),
                                _mm256_set_m128i(_mm_set1_epi16((short)(hi + 1)), _mm_set1_epi16((short)hi)));
    return _mm512_permutexvar_epi16(idx, _mm512_castsi256_si512(sc16));
}

/* One super-block of a Q2_K .. Q6_K row with a token's activations: the
 * sums of scale * q * a in ggml's 8-lane layout (file comment), and in
 * *imin lanes that add up to sum(m * bsums) (Q2_K, Q4_K, Q5_K). Q3_K's
 * quant low - 4 * !hbit goes in as u = low + 4 * hbit (0..7), and 4 * a comes
 * off the int16 pair sums (kd_act.a4), which stay exact. */
static ALWAYS_INLINE __m256i kd_sumi(uint32_t type, const void *blk, const kd_act *x, __m256i *imin) {
    __m512i sumi = _mm512_setzero_si512();
    if (type == GGML_TYPE_Q4_K || type == GGML_TYPE_Q5_K) {
        const block_q4_K *w4 = blk;
        const block_q5_K *w5 = blk;
        const __m128i sm = k4_scales_mins(type == GGML_TYPE_Q4_K ? w4->scales : w5->scales);
        const __m512i scb = _mm512_broadcast_i32x4(sm);
        const uint8_t *qs = type == GGML_TYPE_Q4_K ? w4->qs : w5->qs;
        __m512i qh = _mm512_setzero_si512();
        if (type == GGML_TYPE_Q5_K) qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)w5->qh));
        for (int i = 0; i < 4; i++) {
            const int lo = kd_lo(type, i), hi = kd_hi(type, i);
            const __m512i z = _mm512_loadu_si512(qs + 64 * (i / 2));
            __m512i q = _mm512_and_si512(i % 2 ? _mm512_srli_epi16(z, 4) : z, _mm512_set1_epi8(0x0f));
            if (type == GGML_TYPE_Q5_K) { /* + 16 where bit c of qh[b] */
                const __mmask64 h = _mm512_test_epi8_mask(qh, kd_bytes2(1 << lo, 1 << hi));
                q = _mm512_mask_add_epi8(q, h, q, _mm512_set1_epi8(16));
            }
            /* the chunk's scale as int16: byte lo (hi) then a zero byte */
            const __m512i pick = kd_pair(_mm256_set1_epi16((short)(0xff00 | lo)),
                                         _mm256_set1_epi16((short)(0xff00 | hi)));
            sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q, x->av[i]), _mm512_shuffle_epi8(scb, pick));
        }
        *imin = _mm256_zextsi128_si256(_mm_madd_epi16(_mm_cvtepu8_epi16(_mm_srli_si128(sm, 8)), x->q8s));
    } else if (type == GGML_TYPE_Q6_K) { /* element 128h + 32k + b: nibble k / 2 of ql[64h + 32 (k % 2) + b],
                                          * bits 2k of qh[32h + b] */
        const block_q6_K *w = blk;
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)w->scales));
        /* the 2 high bits, at bits 4n and 4n + 2 in the low and high half, to bit 4 */
        const __m512i up = kd_pair(_mm256_set1_epi16(4), _mm256_set1_epi16(2));
        for (int i = 0; i < 4; i++) {
            const int h = i / 2, nib = i % 2;
            const __m512i z = _mm512_loadu_si512(w->ql + 64 * h);
            const __m512i low = _mm512_and_si512(nib ? _mm512_srli_epi16(z, 4) : z, _mm512_set1_epi8(0x0f));
            const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(w->qh + 32 * h)));
            const __m512i hb = _mm512_and_si512(nib ? _mm512_srli_epi16(qh, 4) : qh, kd_bytes2(0x03, 0x0c));
            const __m512i q = _mm512_or_si512(low, _mm512_sllv_epi16(hb, up));
            sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q, x->av[i]), kd_scales16(type, i, sc16));
        }
        const __m256i bias = _mm256_slli_epi32(_mm256_madd_epi16(x->bsums, sc16), 5);
        return _mm256_sub_epi32(_mm256_add_epi32(_mm512_castsi512_si256(sumi), _mm512_extracti64x4_epi64(sumi, 1)),
                                bias);
    } else { /* Q2_K, Q3_K: 16 scales, the 2 low bits of chunk c at bits 2 (c % 4) of qs[32 (c / 4) + b] */
        const block_q2_K *w2 = blk;
        const block_q3_K *w3 = blk;
        __m256i sc16;
        if (type == GGML_TYPE_Q2_K) {
            const __m128i raw = _mm_loadu_si128((const __m128i *)w2->scales);
            sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(raw, _mm_set1_epi8(15)));
            const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), _mm_set1_epi8(15)));
            *imin = _mm256_madd_epi16(mins, x->bsums);
        } else {
            sc16 = _mm256_cvtepi8_epi16(q3_K_scales(w3->scales));
        }
        const __m512i z = _mm512_loadu_si512(type == GGML_TYPE_Q2_K ? w2->qs : w3->qs);
        __m512i hm = _mm512_setzero_si512();
        if (type == GGML_TYPE_Q3_K) hm = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)w3->hmask));
        for (int k = 0; k < 4; k++) {
            __m512i q = _mm512_and_si512(_mm512_srli_epi16(z, 2 * k), _mm512_set1_epi8(3));
            if (type == GGML_TYPE_Q3_K) { /* + 4 where bit c of hmask[b] */
                const __mmask64 h = _mm512_test_epi8_mask(hm, kd_bytes2(1 << k, 1 << (k + 4)));
                q = _mm512_mask_add_epi8(q, h, q, _mm512_set1_epi8(4));
            }
            __m512i p16 = _mm512_maddubs_epi16(q, x->av[k]);
            if (type == GGML_TYPE_Q3_K) p16 = _mm512_sub_epi16(p16, x->a4[k]);
            sumi = _mm512_dpwssd_epi32(sumi, p16, kd_scales16(type, k, sc16));
        }
    }
    return _mm256_add_epi32(_mm512_castsi512_si256(sumi), _mm512_extracti64x4_epi64(sumi, 1));
}

/* A row's super-block b, its d and dmin (0 where none). */
static ALWAYS_INLINE const void *kd_block(uint32_t type, const void *row, int64_t b) {
    const size_t size = type == GGML_TYPE_Q2_K   ? sizeof(block_q2_K)
                        : type == GGML_TYPE_Q3_K ? sizeof(block_q3_K)
                        : type == GGML_TYPE_Q4_K ? sizeof(block_q4_K)
                        : type == GGML_TYPE_Q5_K ? sizeof(block_q5_K)
                                                 : sizeof(block_q6_K);
    return (const uint8_t *)row + (size_t)b * size;
}

static ALWAYS_INLINE void kd_d(uint32_t type, const void *blk, float *d, float *dmin) {
    const block_q2_K *w2 = blk;
    const block_q3_K *w3 = blk;
    const block_q4_K *w4 = blk; /* Q5_K: the same d and dmin */
    const block_q6_K *w6 = blk;
    *d = _cvtsh_ss(type == GGML_TYPE_Q2_K   ? w2->d
                   : type == GGML_TYPE_Q3_K ? w3->d
                   : type == GGML_TYPE_Q6_K ? w6->d
                                            : w4->d);
    *dmin = !pk_has_min(type) ? 0.0f : _cvtsh_ss(type == GGML_TYPE_Q2_K ? w2->dmin : w4->dmin);
}

/* 4 rows x 1 token of Q2_K or Q4_K in llama.cpp's repacked gemv order
 * (vec_dot_k_avx2.c, r_dot_4r): lane r of acc and accm for row r, per
 * super-block acc = fma(float(isum), d * d_a, acc), accm = fma(float(imin),
 * dmin * d_a, accm); the result acc - accm. */
static ALWAYS_INLINE void kd_repacked_4r(uint32_t type, int64_t n, float s[4], const void *w, size_t w_stride,
                                         const void *act_row) {
    const block_q8_K *a = act_row;
    __m128 acc = _mm_setzero_ps(), accm = _mm_setzero_ps();
    for (int64_t b = 0; b < n / HL_QK_K; b++) {
        kd_act x;
        kd_act_load(type, &a[b], &x);
        __m256i v[8]; /* sumi of rows 0..3, then their imin */
        float d[4], dmin[4];
        for (int r = 0; r < 4; r++) {
            const void *blk = kd_block(type, (const uint8_t *)w + (size_t)r * w_stride, b);
            v[r] = kd_sumi(type, blk, &x, &v[4 + r]);
            kd_d(type, blk, &d[r], &dmin[r]);
        }
        const __m128 da = _mm_set1_ps(a[b].d);
        const __m128i isum = hsum4_epi32(v[0], v[1], v[2], v[3]), imin = hsum4_epi32(v[4], v[5], v[6], v[7]);
        acc = _mm_fmadd_ps(_mm_cvtepi32_ps(isum), _mm_mul_ps(_mm_loadu_ps(d), da), acc);
        accm = _mm_fmadd_ps(_mm_cvtepi32_ps(imin), _mm_mul_ps(_mm_loadu_ps(dmin), da), accm);
    }
    _mm_storeu_ps(s, _mm_sub_ps(acc, accm));
}

/* ------------------------------------------------------------- packing -- */

/* The panel of the 16 rows at w, w + w_stride, ... */
static ALWAYS_INLINE void pk_pack(uint32_t type, int64_t n, void *panel, const void *w, size_t w_stride) {
    const size_t blk_size = hl_row_size(type, HL_QK_K);
    const int n_sub = pk_n_sub(type);
    uint8_t *p = panel;
    for (int64_t b = 0; b < n / HL_QK_K; b++, p += pk_bytes(type)) {
        __m256i quads[8][HL_PANEL_ROWS]; /* chunk c of row r */
        int32_t *sc = (int32_t *)(p + PK_SCALES);
        int16_t *mins = (int16_t *)(p + pk_mins_at(type));
        float *d = (float *)(p + pk_d_at(type)), *dmin = d + HL_PANEL_ROWS;
        for (int r = 0; r < HL_PANEL_ROWS; r++) {
            __m256i chunk[8];
            pk_row row;
            pk_unpack(type, (const uint8_t *)w + (size_t)r * w_stride + (size_t)b * blk_size, chunk, &row);
            for (int c = 0; c < 8; c++) quads[c][r] = chunk[c];
            for (int j = 0; j < n_sub; j++) {
                if (type != GGML_TYPE_Q2_K) sc[16 * j + r] = row.sc[j];
                if (pk_has_min(type)) mins[2 * (16 * (j / 2) + r) + j % 2] = row.m[j];
            }
            d[r] = row.d;
            if (pk_has_min(type)) dmin[r] = row.dmin;
        }
        for (int c = 0; c < 8; c++) transpose_16x8(quads[c], p + 64 * 8 * c); /* vector 8c + k: dword k */
    }
}

/* ------------------------------------------------------------ products -- */

/* n_tok tokens (a constant after inlining), lane r of acc[t] for row r. */
static ALWAYS_INLINE void pk_panel_t(uint32_t type, pk_order order, int n_tok, int64_t n, float *y, size_t y_stride,
                                     const uint8_t *p, const void *act, size_t act_stride) {
    const int n_sub = pk_n_sub(type), vecs = 64 / n_sub; /* quant vectors per sub-block */
    const int part = pk_part(type, order);
    const int bias = pk_bias(type);
    const bool has_min = pk_has_min(type);
    __m512 acc[4], accm[4];
    for (int t = 0; t < n_tok; t++) acc[t] = accm[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < n / HL_QK_K; b++, p += pk_bytes(type)) {
        const block_q8_K *a[4];
        int32_t msum[4][8]; /* per token, the int16 pairs of activation sums that min pair i multiplies */
        for (int t = 0; t < n_tok; t++) {
            a[t] = (const block_q8_K *)((const char *)act + (size_t)t * act_stride) + b;
            if (has_min) pk_act_pairs(type, a[t], msum[t]);
        }
        const __m512 d = _mm512_loadu_ps(p + pk_d_at(type));
        const __m512 dmin = has_min ? _mm512_loadu_ps(p + pk_d_at(type) + 64) : _mm512_setzero_ps();
        __m512i isum[4], imin[4];
        for (int t = 0; t < n_tok; t++) isum[t] = imin[t] = _mm512_setzero_si512();
        for (int j = 0; j < n_sub; j++) {
            __m512i s[4];
            for (int t = 0; t < n_tok; t++) s[t] = _mm512_set1_epi32(-bias * a[t]->bsums[j]);
            for (int k = 0; k < vecs; k++) {
                const __m512i u = _mm512_loadu_si512(p + 64 * (vecs * j + k));
                for (int t = 0; t < n_tok; t++)
                    s[t] = _mm512_dpbusd_epi32(s[t], u, bcast32(a[t]->qs + 4 * (vecs * j + k)));
            }
            if (type == GGML_TYPE_Q2_K) { /* the scales are in the quants */
                for (int t = 0; t < n_tok; t++) isum[t] = _mm512_add_epi32(isum[t], s[t]);
            } else {
                const __m512i sc = _mm512_loadu_si512(p + PK_SCALES + 64 * j);
                for (int t = 0; t < n_tok; t++) isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(s[t], sc));
            }
            if (has_min && j % 2 == 1) {
                const __m512i mins = _mm512_loadu_si512(p + pk_mins_at(type) + 64 * (j / 2));
                for (int t = 0; t < n_tok; t++) {
                    imin[t] = _mm512_dpwssd_epi32(imin[t], mins, _mm512_set1_epi32(msum[t][j / 2]));
                }
            }
            if (order == PK_TILED || (j + 1) % part != 0) continue;
            for (int t = 0; t < n_tok; t++) { /* the end of a part */
                const __m512 da = _mm512_set1_ps(a[t]->d);
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(d, da), acc[t]);
                accm[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(imin[t]), _mm512_mul_ps(dmin, da), accm[t]);
                isum[t] = imin[t] = _mm512_setzero_si512();
            }
        }
        for (int t = 0; order == PK_TILED && t < n_tok; t++) {
            __m512 r = _mm512_mul_ps(_mm512_cvtepi32_ps(isum[t]), d);
            if (has_min) r = _mm512_fnmadd_ps(dmin, _mm512_cvtepi32_ps(imin[t]), r);
            acc[t] = _mm512_fmadd_ps(r, _mm512_set1_ps(a[t]->d), acc[t]);
        }
    }
    for (int t = 0; t < n_tok; t++) {
        _mm512_storeu_ps(y + (size_t)t * y_stride, order == PK_TILED ? acc[t] : _mm512_sub_ps(acc[t], accm[t]));
    }
}

/* hl_panel_dot_fn for `type`; K-quant panels need no hl_act_aux. */
static ALWAYS_INLINE void pk_panel_dot(uint32_t type, int64_t n, float *y, size_t y_stride, const void *panel,
                                       const void *act, size_t act_stride, int n_tok) {
    PK_DISPATCH(pk_panel_t, type, n_tok, n, y, y_stride, panel, act, act_stride);
}

#endif
