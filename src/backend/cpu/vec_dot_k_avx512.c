/* AVX-512 VNNI kernels for K-quant weights against Q8_K activations: Q4_K
 * panels (vec_dot.h) and decode, Q6_K batch panels; put into the AVX-512
 * table by vec_dot_avx512.c. Compiled
 * with -mavx512f -mavx512bw -mavx512vl -mavx512vnni; called only after
 * hl_cpu_level_best() says the CPU has them.
 *
 * llama.cpp multiplies Q4_K through its repacked kernels (repack.cpp,
 * q4_K_8x8; see vec_dot_k_avx2.c): per output, exact integer totals isum =
 * sum(sc * q * a) and imin = sum(m * bsums) over parts of a super-block go
 * into two FMA chains, acc += float(isum) * (d * d_a) and accm +=
 * float(imin) * (dmin * d_a), and the result is acc - accm. Its gemm takes
 * the tokens of a batch in groups of 4 with parts of 64 elements; its gemv
 * takes the other tokens with the whole super-block as the part. A panel
 * call with 4 tokens follows gemm, one with fewer gemv, as the matmul hands
 * out the tokens in the same groups.
 *
 * Panel layout, per super-block of 16 rows (lane r = row r everywhere):
 * 64 vectors of quants, vector 8j + k holding elements 32j + 4k .. + 3 of
 * each row as bytes 0..15; 8 vectors of the sub-block scales sc_j as int32;
 * 4 vectors of min pairs (m_2p, m_2p+1) as two int16 per lane; then d and
 * dmin of each row as floats.
 *
 * Q6_K from 8 tokens on (hl_cpu_type_ops.batch): llama.cpp's tiled kernels
 * (vec_dot_k_avx2.c), per super-block r = float(s1) * d and acc = fma(r,
 * d_a, acc), s1 = sum(sc * (q - 32) * a) exact, the same for any number of
 * tokens. Its panel holds the 64 vectors of quants (0..63), 16 vectors of
 * the sub-block scales as int32, and d. */
#include <immintrin.h>
#include <stdbool.h>

#include "backend/cpu/simd16_avx2.h"
#include "backend/cpu/simd_avx512.h"
#include "backend/cpu/vec_dot.h"

#define SB_QUANTS 0
#define SB_SCALES (64 * 64)
#define SB_MINS (SB_SCALES + 8 * 64)
#define SB_D (SB_MINS + 4 * 64)
#define SB_DMIN (SB_D + 64)
#define SB_BYTES (SB_DMIN + 64)
_Static_assert(SB_BYTES <= 21 * HL_QK_K, "a Q4_K panel fits HL_PANEL_BYTES");

static void pack_q4_K(int64_t n, void *panel, const void *w, size_t w_stride) {
    uint8_t *p = panel;
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    for (int64_t b = 0; b < n / HL_QK_K; b++, p += SB_BYTES) {
        __m256i quads[8][HL_PANEL_ROWS]; /* sub-block j of row r as bytes */
        int32_t *sc = (int32_t *)(p + SB_SCALES);
        int16_t *mins = (int16_t *)(p + SB_MINS);
        float *d = (float *)(p + SB_D), *dmin = (float *)(p + SB_DMIN);
        for (int r = 0; r < HL_PANEL_ROWS; r++) {
            const block_q4_K *wb = (const block_q4_K *)((const char *)w + (size_t)r * w_stride) + b;
            for (int h = 0; h < 4; h++) { /* bytes qs[32h ..]: sub-block 2h low nibbles, 2h + 1 high */
                const __m256i q = _mm256_loadu_si256((const __m256i *)(wb->qs + 32 * h));
                quads[2 * h][r] = _mm256_and_si256(q, m4);
                quads[2 * h + 1][r] = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            }
            for (int j = 0; j < 8; j++) {
                uint8_t s, m;
                hl_q4_K_scale_min(wb->scales, j, &s, &m);
                sc[16 * j + r] = s;
                mins[2 * (16 * (j / 2) + r) + j % 2] = m;
            }
            d[r] = _cvtsh_ss(wb->d);
            dmin[r] = _cvtsh_ss(wb->dmin);
        }
        for (int j = 0; j < 8; j++) transpose_16x8(quads[j], p + SB_QUANTS + 64 * 8 * j); /* vector v: dword v */
    }
}

/* n_tok tokens (constants after inlining); gemm: parts of 64 elements. */
static ALWAYS_INLINE void q4_K_panel_t(int n_tok, bool gemm, int64_t n, float *y, size_t y_stride, const uint8_t *p,
                                       const void *act, size_t act_stride) {
    __m512 acc[4], accm[4];
    for (int t = 0; t < n_tok; t++) acc[t] = accm[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < n / HL_QK_K; b++, p += SB_BYTES) {
        const block_q8_K *a[4];
        int32_t bs[4][4]; /* per token, the int16 pair (sum of sub-block 2p, of 2p + 1) of part p */
        for (int t = 0; t < n_tok; t++) {
            a[t] = (const block_q8_K *)((const char *)act + (size_t)t * act_stride) + b;
            const __m128i s = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)a[t]->bsums),
                                             _mm_loadu_si128((const __m128i *)(a[t]->bsums + 8)));
            _mm_storeu_si128((__m128i *)bs[t], s);
        }
        const __m512 d = _mm512_loadu_ps(p + SB_D), dmin = _mm512_loadu_ps(p + SB_DMIN);
        __m512i isum[4], imin[4];
        for (int t = 0; t < n_tok; t++) isum[t] = imin[t] = _mm512_setzero_si512();
        for (int j = 0; j < 8; j++) {
            __m512i s[4];
            for (int t = 0; t < n_tok; t++) s[t] = _mm512_setzero_si512();
            for (int k = 0; k < 8; k++) {
                const __m512i u = _mm512_loadu_si512(p + SB_QUANTS + 64 * (8 * j + k));
                for (int t = 0; t < n_tok; t++) s[t] = _mm512_dpbusd_epi32(s[t], u, bcast32(a[t]->qs + 32 * j + 4 * k));
            }
            const __m512i sc = _mm512_loadu_si512(p + SB_SCALES + 64 * j);
            for (int t = 0; t < n_tok; t++) isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(s[t], sc));
            if (j % 2 == 0) continue;
            const __m512i mins = _mm512_loadu_si512(p + SB_MINS + 64 * (j / 2));
            for (int t = 0; t < n_tok; t++) {
                const __m512i m = _mm512_dpwssd_epi32(_mm512_setzero_si512(), mins, _mm512_set1_epi32(bs[t][j / 2]));
                if (!gemm) {
                    imin[t] = _mm512_add_epi32(imin[t], m);
                    continue;
                }
                const __m512 da = _mm512_set1_ps(a[t]->d);
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(d, da), acc[t]);
                accm[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(m), _mm512_mul_ps(dmin, da), accm[t]);
                isum[t] = _mm512_setzero_si512();
            }
        }
        for (int t = 0; !gemm && t < n_tok; t++) {
            const __m512 da = _mm512_set1_ps(a[t]->d);
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(d, da), acc[t]);
            accm[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(imin[t]), _mm512_mul_ps(dmin, da), accm[t]);
        }
    }
    for (int t = 0; t < n_tok; t++) _mm512_storeu_ps(y + (size_t)t * y_stride, _mm512_sub_ps(acc[t], accm[t]));
}

static void panel_dot_q4_K(int64_t n, float *y, size_t y_stride, const void *panel, const void *act,
                           size_t act_stride, const hl_act_aux *aux, size_t aux_stride, int n_tok) {
    (void)aux, (void)aux_stride;
    switch (n_tok) {
    case 1: q4_K_panel_t(1, false, n, y, y_stride, panel, act, act_stride); break;
    case 2: q4_K_panel_t(2, false, n, y, y_stride, panel, act, act_stride); break;
    case 3: q4_K_panel_t(3, false, n, y, y_stride, panel, act, act_stride); break;
    default: q4_K_panel_t(4, true, n, y, y_stride, panel, act, act_stride); break;
    }
}

/* ---------------------------------------------------- Q4_K decode -- */

/* The 12 bytes of Q4_K scales as 8 scales then 8 mins, 6 bits each. */
static inline __m128i q4_K_scales_mins(const uint8_t scales[HL_K_SCALE_SIZE]) {
    uint32_t u[3];
    memcpy(u, scales, sizeof u);
    const uint32_t sc_lo = u[0] & 0x3f3f3f3f, m_lo = u[1] & 0x3f3f3f3f;
    const uint32_t sc_hi = (u[2] & 0x0f0f0f0f) | ((u[0] >> 6) & 0x03030303) << 4;
    const uint32_t m_hi = ((u[2] >> 4) & 0x0f0f0f0f) | ((u[1] >> 6) & 0x03030303) << 4;
    return _mm_setr_epi32((int)sc_lo, (int)sc_hi, (int)m_lo, (int)m_hi);
}

/* 4 rows x 1 token in the gemv order (vec_dot_k_avx2.c, r_dot_4r): lane r
 * of acc and accm for row r. The 64 bytes qs[64g ..] of a row hold
 * sub-blocks 4g and 4g + 2 in their low nibbles, 4g + 1 and 4g + 3 in the
 * high ones; the activations are put in that order, and one 512-bit
 * maddubs and madd (with each sub-block's scale) per 64 quants give exact
 * int32 lanes whose total is the super-block's isum. */
static void dot_4r_q4_K(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {
    const block_q8_K *a = act_row;
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    __m128 acc = _mm_setzero_ps(), accm = _mm_setzero_ps();
    for (int64_t b = 0; b < n / HL_QK_K; b++) {
        __m512i av[4]; /* [g][nibble half]: activations of sub-blocks 4g + h, 4g + h + 2 */
        for (int g = 0; g < 2; g++) {
            for (int h = 0; h < 2; h++) {
                const int8_t *q = a[b].qs + 128 * g + 32 * h;
                av[2 * g + h] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)q)),
                                                   _mm256_loadu_si256((const __m256i *)(q + 64)), 1);
            }
        }
        /* sums of the activations of each sub-block, as int16 */
        const __m128i q8s = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)a[b].bsums),
                                           _mm_loadu_si128((const __m128i *)(a[b].bsums + 8)));
        __m256i v[8];
        float d[4], dmin[4];
        for (int r = 0; r < 4; r++) {
            const block_q4_K *wb = (const block_q4_K *)((const char *)w + (size_t)r * w_stride) + b;
            const __m128i sm = q4_K_scales_mins(wb->scales);
            const __m512i sc = _mm512_broadcast_i32x4(sm);
            __m512i p = _mm512_setzero_si512();
            for (int i = 0; i < 4; i++) { /* i = 2g + h: sub-blocks j = 4g + h (low 256 bits), j + 2 (high) */
                const int j = 4 * (i / 2) + i % 2;
                const __m512i pick = _mm512_inserti64x4(_mm512_set1_epi16((short)(0xff00 | j)),
                                                        _mm256_set1_epi16((short)(0xff00 | (j + 2))), 1);
                const __m512i z = _mm512_loadu_si512(wb->qs + 64 * (i / 2));
                const __m512i q = _mm512_and_si512(i % 2 ? _mm512_srli_epi16(z, 4) : z, m4);
                p = _mm512_add_epi32(p, _mm512_madd_epi16(_mm512_shuffle_epi8(sc, pick), _mm512_maddubs_epi16(q, av[i])));
            }
            v[r] = _mm256_add_epi32(_mm512_castsi512_si256(p), _mm512_extracti64x4_epi64(p, 1));
            v[4 + r] = _mm256_zextsi128_si256(_mm_madd_epi16(_mm_cvtepu8_epi16(_mm_srli_si128(sm, 8)), q8s));
            d[r] = _cvtsh_ss(wb->d);
            dmin[r] = _cvtsh_ss(wb->dmin);
        }
        const __m128 da = _mm_set1_ps(a[b].d);
        const __m128i isum = hsum4_epi32(v[0], v[1], v[2], v[3]), imin = hsum4_epi32(v[4], v[5], v[6], v[7]);
        acc = _mm_fmadd_ps(_mm_cvtepi32_ps(isum), _mm_mul_ps(_mm_loadu_ps(d), da), acc);
        accm = _mm_fmadd_ps(_mm_cvtepi32_ps(imin), _mm_mul_ps(_mm_loadu_ps(dmin), da), accm);
    }
    _mm_storeu_ps(s, _mm_sub_ps(acc, accm));
}

/* ------------------------------------------------------ Q6_K (tiled) -- */

#define Q6_SCALES (64 * 64)
#define Q6_D (Q6_SCALES + 16 * 64)
#define Q6_BYTES (Q6_D + 64)
_Static_assert(Q6_BYTES <= 21 * HL_QK_K, "a Q6_K panel fits HL_PANEL_BYTES");

static void pack_q6_K(int64_t n, void *panel, const void *w, size_t w_stride) {
    uint8_t *p = panel;
    const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(0x03);
    for (int64_t b = 0; b < n / HL_QK_K; b++, p += Q6_BYTES) {
        __m256i quads[8][HL_PANEL_ROWS]; /* elements 32c .. 32c + 31 of row r */
        int32_t *sc = (int32_t *)(p + Q6_SCALES);
        float *d = (float *)(p + Q6_D);
        for (int r = 0; r < HL_PANEL_ROWS; r++) {
            const block_q6_K *wb = (const block_q6_K *)((const char *)w + (size_t)r * w_stride) + b;
            for (int h = 0; h < 2; h++) { /* elements 128h + 32i + j: nibble of ql, 2 bits of qh */
                const __m256i l0 = _mm256_loadu_si256((const __m256i *)(wb->ql + 64 * h));
                const __m256i l1 = _mm256_loadu_si256((const __m256i *)(wb->ql + 64 * h + 32));
                const __m256i hb = _mm256_loadu_si256((const __m256i *)(wb->qh + 32 * h));
                const __m256i lo[4] = {_mm256_and_si256(l0, m4), _mm256_and_si256(l1, m4),
                                       _mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                       _mm256_and_si256(_mm256_srli_epi16(l1, 4), m4)};
                for (int i = 0; i < 4; i++) {
                    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(hb, 2 * i), m2);
                    quads[4 * h + i][r] = _mm256_or_si256(lo[i], _mm256_slli_epi16(hi, 4));
                }
            }
            for (int j = 0; j < 16; j++) sc[16 * j + r] = wb->scales[j];
            d[r] = _cvtsh_ss(wb->d);
        }
        for (int c = 0; c < 8; c++) transpose_16x8(quads[c], p + 64 * 8 * c);
    }
}

static ALWAYS_INLINE void q6_K_panel_t(int n_tok, int64_t n, float *y, size_t y_stride, const uint8_t *p,
                                       const void *act, size_t act_stride) {
    __m512 acc[4];
    for (int t = 0; t < n_tok; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < n / HL_QK_K; b++, p += Q6_BYTES) {
        const block_q8_K *a[4];
        __m512i s1[4];
        for (int t = 0; t < n_tok; t++) {
            a[t] = (const block_q8_K *)((const char *)act + (size_t)t * act_stride) + b;
            s1[t] = _mm512_setzero_si512();
        }
        for (int j = 0; j < 16; j++) { /* sub-block j: 16 elements, quants - 32 through bsums */
            __m512i s[4];
            for (int t = 0; t < n_tok; t++) s[t] = _mm512_set1_epi32(-32 * a[t]->bsums[j]);
            for (int k = 0; k < 4; k++) {
                const __m512i u = _mm512_loadu_si512(p + 64 * (4 * j + k));
                for (int t = 0; t < n_tok; t++) s[t] = _mm512_dpbusd_epi32(s[t], u, bcast32(a[t]->qs + 16 * j + 4 * k));
            }
            const __m512i sc = _mm512_loadu_si512(p + Q6_SCALES + 64 * j);
            for (int t = 0; t < n_tok; t++) s1[t] = _mm512_add_epi32(s1[t], _mm512_mullo_epi32(s[t], sc));
        }
        const __m512 d = _mm512_loadu_ps(p + Q6_D);
        for (int t = 0; t < n_tok; t++) {
            const __m512 r = _mm512_mul_ps(_mm512_cvtepi32_ps(s1[t]), d);
            acc[t] = _mm512_fmadd_ps(r, _mm512_set1_ps(a[t]->d), acc[t]);
        }
    }
    for (int t = 0; t < n_tok; t++) _mm512_storeu_ps(y + (size_t)t * y_stride, acc[t]);
}

static void panel_dot_q6_K(int64_t n, float *y, size_t y_stride, const void *panel, const void *act,
                           size_t act_stride, const hl_act_aux *aux, size_t aux_stride, int n_tok) {
    (void)aux, (void)aux_stride;
    switch (n_tok) {
    case 1: q6_K_panel_t(1, n, y, y_stride, panel, act, act_stride); break;
    case 2: q6_K_panel_t(2, n, y, y_stride, panel, act, act_stride); break;
    case 3: q6_K_panel_t(3, n, y, y_stride, panel, act, act_stride); break;
    default: q6_K_panel_t(4, n, y, y_stride, panel, act, act_stride); break;
    }
}

void hl_cpu_ops_avx512_k_patch(hl_cpu_type_ops *ops, bool batch) {
    if (ops->type == GGML_TYPE_Q4_K && !batch) {
        ops->vec_dot_4r = dot_4r_q4_K;
        ops->pack_panel = pack_q4_K;
        ops->panel_dot = panel_dot_q4_K;
    }
    if (ops->type == GGML_TYPE_Q6_K && batch) {
        ops->pack_panel = pack_q6_K;
        ops->panel_dot = panel_dot_q6_K;
    }
}
