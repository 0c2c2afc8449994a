/* AVX-512 VNNI kernels for Q4_1 and Q5_1 weights against Q8_1 activations:
 * decode (vec_dot_4r) and panels (vec_dot.h); put into the AVX-512 table by
 * vec_dot_avx512.c. Compiled with -mavx512f -mavx512bw -mavx512vl
 * -mavx512vnni; called only after hl_cpu_level_best() says the CPU has them.
 *
 * The float order is that of the AVX2 kernels (vec_dot_avx2.c, q8_1_dot =
 * ggml_vec_dot_q4_1_q8_1 / q5_1_q8_1, which llama.cpp runs for these types
 * at every batch size): per result one 8-lane accumulator, lane k summing
 * group k (elements 4k..4k+3) of each block, acc = fma(d_w * d_a,
 * float(isum), acc) per block; m_w * s_a in a separate chain ms = fma(m_w,
 * s_a, ms); the result hsum8_ggml(acc) + ms. The quants are unsigned (Q4_1
 * 0..15, Q5_1 0..31), as vpdpbusd takes them, so the integer sums need no
 * correction.
 *
 * Decode: 4 rows x 1 token, rows two by two in a 512-bit vector, [row r's
 * 32 quants | row r + 1's] against the block's activations twice: one
 * vpdpbusd gives both rows' eight lanes, and one 512-bit FMA adds them to
 * the two rows' accumulators.
 *
 * Panels: panel_avx512.h's layout with two scale vectors (d, m) and its
 * eight-lane kernel on Q8_1 activations. */
#include <immintrin.h>

#include "backend/cpu/panel_avx512.h"
#include "backend/cpu/simd16_avx2.h"
#include "backend/cpu/simd_avx512.h"
#include "backend/cpu/vec_dot.h"

/* ------------------------------------------------------------ decode -- */

/* The quants of two Q4 blocks (16 bytes qs each) as [block 0's 32 | block
 * 1's 32] bytes 0..15 in element order: the 128-bit lanes hold qs0, qs0 >> 4,
 * qs1, qs1 >> 4, masked to nibbles. */
static inline __m512i nibbles32_x2(const uint8_t qs0[16], const uint8_t qs1[16]) {
    const __m256i q0 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs0));
    const __m256i q1 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs1));
    const __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(q0), q1, 1);
    return _mm512_and_si512(_mm512_mask_srli_epi16(z, 0xff00ff00, z, 4), _mm512_set1_epi8(0x0f));
}

/* The fp16 pair (d, m) at the start of a Q4_1 or Q5_1 block, as 32 bits. */
static inline int dm_bits(const void *block) {
    int32_t v;
    memcpy(&v, block, sizeof v);
    return v;
}

/* Lanes 8-15 (without AVX512DQ's extractf32x8). */
static inline __m256 upper_ps(__m512 v) {
    return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

/* Block b of rows w0 and w1 as [w0's 32 quants | w1's 32], unsigned. */
static ALWAYS_INLINE __m512i quants_x2(uint32_t type, const void *w0, const void *w1, int64_t b) {
    if (type == GGML_TYPE_Q4_1) return nibbles32_x2(((const block_q4_1 *)w0)[b].qs, ((const block_q4_1 *)w1)[b].qs);
    const block_q5_1 *b0 = (const block_q5_1 *)w0 + b, *b1 = (const block_q5_1 *)w1 + b;
    uint32_t h0, h1;
    memcpy(&h0, b0->qh, sizeof h0);
    memcpy(&h1, b1->qh, sizeof h1);
    const __m512i hi = _mm512_maskz_mov_epi8(h0 | (uint64_t)h1 << 32, _mm512_set1_epi8(16));
    return _mm512_or_si512(nibbles32_x2(b0->qs, b1->qs), hi);
}

/* Rows 0-3 of w, w_stride bytes apart: acc01 holds rows 0 and 1's 8-lane
 * accumulators (lanes 0-7, 8-15), acc23 rows 2 and 3's; lane 2r + 1 of ms
 * row r's chain of m * s (the even lanes take d_w * d_a products, unused). */
static ALWAYS_INLINE void q8_1_dot_4r(uint32_t type, int64_t n, float s[4], const void *w, size_t w_stride,
                                      const void *act_row) {
    const block_q8_1 *a = act_row;
    const size_t bsize = type == GGML_TYPE_Q4_1 ? sizeof(block_q4_1) : sizeof(block_q5_1);
    const char *row[4];
    for (int r = 0; r < 4; r++) row[r] = (const char *)w + (size_t)r * w_stride;
    const __m512i pick01 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2);
    const __m512i pick23 = _mm512_setr_epi32(4, 4, 4, 4, 4, 4, 4, 4, 6, 6, 6, 6, 6, 6, 6, 6);
    __m512 acc01 = _mm512_setzero_ps(), acc23 = _mm512_setzero_ps();
    __m256 ms = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / HL_QK; b++) {
        const __m512i qa = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)a[b].qs));
        const __m512i i01 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), quants_x2(type, row[0], row[1], b), qa);
        const __m512i i23 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), quants_x2(type, row[2], row[3], b), qa);
        const size_t off = (size_t)b * bsize;
        /* [d0 m0 d1 m1 d2 m2 d3 m3] times [d_a s_a] four times */
        const __m256 dm = _mm256_cvtph_ps(_mm_setr_epi32(dm_bits(row[0] + off), dm_bits(row[1] + off),
                                                         dm_bits(row[2] + off), dm_bits(row[3] + off)));
        const __m256 ds = _mm256_cvtph_ps(_mm_set1_epi32(dm_bits(&a[b].d)));
        const __m512 scale = _mm512_castps256_ps512(_mm256_mul_ps(dm, ds));
        ms = _mm256_fmadd_ps(dm, ds, ms);
        acc01 = _mm512_fmadd_ps(_mm512_permutexvar_ps(pick01, scale), _mm512_cvtepi32_ps(i01), acc01);
        acc23 = _mm512_fmadd_ps(_mm512_permutexvar_ps(pick23, scale), _mm512_cvtepi32_ps(i23), acc23);
    }
    const __m128 sums = hsum4_ps(_mm512_castps512_ps256(acc01), upper_ps(acc01), _mm512_castps512_ps256(acc23),
                                 upper_ps(acc23));
    const __m128 m = _mm_shuffle_ps(_mm256_castps256_ps128(ms), _mm256_extractf128_ps(ms, 1), _MM_SHUFFLE(3, 1, 3, 1));
    _mm_storeu_ps(s, _mm_add_ps(sums, m));
}

static void dot_4r_q4_1(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {
    q8_1_dot_4r(GGML_TYPE_Q4_1, n, s, w, w_stride, act_row);
}

static void dot_4r_q5_1(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {
    q8_1_dot_4r(GGML_TYPE_Q5_1, n, s, w, w_stride, act_row);
}

/* ------------------------------------------------------------ panels -- */

static inline __m256i quants_q4_1(const void *row, int64_t b, float *s) {
    const block_q4_1 *w = (const block_q4_1 *)row + b;
    s[0] = _cvtsh_ss(w->d);
    s[HL_PANEL_ROWS] = _cvtsh_ss(w->m);
    return nibbles32(w->qs);
}

static inline __m256i quants_q5_1(const void *row, int64_t b, float *s) {
    const block_q5_1 *w = (const block_q5_1 *)row + b;
    s[0] = _cvtsh_ss(w->d);
    s[HL_PANEL_ROWS] = _cvtsh_ss(w->m);
    return quants5_32(w->qh, w->qs);
}

static void pack_q4_1(int64_t n, void *panel, const void *w, size_t w_stride) {
    panel32_pack(quants_q4_1, 2, n, panel, w, w_stride);
}

static void pack_q5_1(int64_t n, void *panel, const void *w, size_t w_stride) {
    panel32_pack(quants_q5_1, 2, n, panel, w, w_stride);
}

static void panel_dot_q8_1(int64_t n, float *y, size_t y_stride, const void *panel, const void *act,
                           size_t act_stride, const hl_act_aux *aux, size_t aux_stride, int n_tok) {
    panel32_ggml8(true, n, y, y_stride, panel, act, act_stride, aux, aux_stride, n_tok);
}

void hl_cpu_ops_avx512_q1_patch(hl_cpu_type_ops *ops) {
    if (ops->type == GGML_TYPE_Q4_1) {
        ops->vec_dot_4r = dot_4r_q4_1;
        ops->pack_panel = pack_q4_1;
        ops->panel_dot = panel_dot_q8_1;
    } else if (ops->type == GGML_TYPE_Q5_1) {
        ops->vec_dot_4r = dot_4r_q5_1;
        ops->pack_panel = pack_q5_1;
        ops->panel_dot = panel_dot_q8_1;
    }
}
