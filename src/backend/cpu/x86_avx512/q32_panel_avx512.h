/* Panels (vec_dot.h) of the 32-element block types, shared by the AVX-512
 * kernel files: vec_dot_avx512.c (Q4_0, Q5_0, Q8_0 weights against Q8_0
 * activations) and vec_dot_q1_avx512.c (Q4_1, Q5_1 against Q8_1). Only for
 * x86_avx512/'s files.
 *
 * Layout, per block of 32 elements: 8 vectors of 64 bytes, vector k holding
 * elements 4k..4k+3 of row r as unsigned bytes in dword r, then n_scales
 * vectors of 16 floats, the rows' d (and, for Q4_1 and Q5_1, their m). One
 * vpdpbusd per vector with the activations' 4 bytes broadcast gives lane r
 * that group's dot product for row r, with no horizontal sums. */
#ifndef HEARTH_BACKEND_CPU_Q32_PANEL_AVX512_H
#define HEARTH_BACKEND_CPU_Q32_PANEL_AVX512_H

#include <immintrin.h>
#include <stdbool.h>

#include "backend/cpu/x86_avx512/simd_avx512.h"
#include "backend/cpu/vec_dot.h"

#define PANEL32_QUANTS (8 * 64)
#define PANEL32_BYTES(n_scales) (PANEL32_QUANTS + 64 * (n_scales))
_Static_assert(PANEL32_BYTES(2) <= 21 * HL_QK, "a panel fits HL_PANEL_BYTES");

/* The 32 quants of block b of a weight row as unsigned bytes; writes the
 * block's scales to s[0] (d) and s[HL_PANEL_ROWS] (m, where the type has
 * one). */
typedef __m256i (*panel32_quants_fn)(const void *row, int64_t b, float *s);

/* pack_panel for a type whose blocks `quants` reads (a constant after
 * inlining) and that has n_scales scales per block. */
static ALWAYS_INLINE void panel32_pack(panel32_quants_fn quants, int n_scales, int64_t n, void *panel, const void *w,
                                       size_t w_stride) {
    uint8_t *p = panel;
    for (int64_t b = 0; b < n / HL_QK; b++, p += PANEL32_BYTES(n_scales)) {
        __m256i rows[HL_PANEL_ROWS];
        float s[2 * HL_PANEL_ROWS];
        for (int r = 0; r < HL_PANEL_ROWS; r++) rows[r] = quants((const char *)w + (size_t)r * w_stride, b, s + r);
        transpose_16x8(rows, p); /* vector k = quad k of rows 0..15 */
        memcpy(p + PANEL32_QUANTS, s, sizeof(float) * HL_PANEL_ROWS * (size_t)n_scales);
    }
}

/* ggml's 8-lane accumulator per result (vec_dot_avx2.c: q8_dot for Q5_0
 * and Q8_0, q8_1_dot for Q4_1 and Q5_1), lane k summing group k of each
 * block, kept here as eight vectors acc[t][k] (lane r: row r): per block
 * acc[k] = fma(d_w * d_a, float(isum_k), acc[k]); at the end hsum8_ggml's
 * order across the eight. n_tok (1 or 2) tokens, q8_1 constant after
 * inlining.
 * - Q8_0 activations (q8_1 false): the panel holds the weights + 128 and
 *   isum_k starts from aux's -128 * (sum of group k); d_a is aux's.
 * - Q8_1 activations: the panel holds the unsigned quants (no correction),
 *   d_a is the block's, and m_w * s_a goes into a separate FMA chain, ms =
 *   fma(m_w, s_a, ms), added to the result at the end. */
static ALWAYS_INLINE void panel32_ggml8_t(bool q8_1, int n_tok, int64_t n, float *y, size_t y_stride, const uint8_t *p,
                                          const void *act, size_t act_stride, const hl_act_aux *aux,
                                          size_t aux_stride) {
    __m512 acc[2][8], ms[2];
    for (int t = 0; t < n_tok; t++) {
        ms[t] = _mm512_setzero_ps();
        for (int k = 0; k < 8; k++) acc[t][k] = _mm512_setzero_ps();
    }
    for (int64_t b = 0; b < n / HL_QK; b++, p += PANEL32_BYTES(q8_1 ? 2 : 1)) {
        const __m512 dw = _mm512_loadu_ps(p + PANEL32_QUANTS);
        const __m512 mw = q8_1 ? _mm512_loadu_ps(p + PANEL32_QUANTS + 64) : dw;
        const int8_t *qs[2];
        __m512 scale[2];
        for (int t = 0; t < n_tok; t++) {
            const char *row = (const char *)act + (size_t)t * act_stride;
            if (q8_1) {
                const block_q8_1 *a = (const block_q8_1 *)row + b;
                qs[t] = a->qs;
                scale[t] = _mm512_mul_ps(dw, _mm512_set1_ps(_cvtsh_ss(a->d)));
                ms[t] = _mm512_fmadd_ps(mw, _mm512_set1_ps(_cvtsh_ss(a->s)), ms[t]);
            } else {
                qs[t] = ((const block_q8_0 *)row + b)->qs;
                scale[t] = _mm512_mul_ps(dw, _mm512_set1_ps(aux[(size_t)t * aux_stride + b].d));
            }
        }
        for (int k = 0; k < 8; k++) {
            const __m512i u = _mm512_loadu_si512(p + 64 * k);
            for (int t = 0; t < n_tok; t++) {
                const __m512i c = q8_1 ? _mm512_setzero_si512()
                                       : _mm512_set1_epi32(aux[(size_t)t * aux_stride + b].quad128[k]);
                const __m512i isum = _mm512_dpbusd_epi32(c, u, bcast32(qs[t] + 4 * k));
                acc[t][k] = _mm512_fmadd_ps(scale[t], _mm512_cvtepi32_ps(isum), acc[t][k]);
            }
        }
    }
    for (int t = 0; t < n_tok; t++) {
        const __m512 *v = acc[t];
        __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(v[0], v[4]), _mm512_add_ps(v[2], v[6])),
                                 _mm512_add_ps(_mm512_add_ps(v[1], v[5]), _mm512_add_ps(v[3], v[7])));
        if (q8_1) s = _mm512_add_ps(s, ms[t]);
        _mm512_storeu_ps(y + (size_t)t * y_stride, s);
    }
}

/* panel_dot in that order, two tokens at a time (16 accumulators). */
static ALWAYS_INLINE void panel32_ggml8(bool q8_1, int64_t n, float *y, size_t y_stride, const void *panel,
                                        const void *act, size_t act_stride, const hl_act_aux *aux, size_t aux_stride,
                                        int n_tok) {
    for (int t = 0; t < n_tok; t += 2) {
        float *yt = y + (size_t)t * y_stride;
        const void *at = (const char *)act + (size_t)t * act_stride;
        const hl_act_aux *xt = q8_1 ? NULL : aux + (size_t)t * aux_stride;
        if (n_tok - t >= 2) panel32_ggml8_t(q8_1, 2, n, yt, y_stride, panel, at, act_stride, xt, aux_stride);
        else panel32_ggml8_t(q8_1, 1, n, yt, y_stride, panel, at, act_stride, xt, aux_stride);
    }
}

#endif
