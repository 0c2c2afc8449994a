/* AVX-512 kernels (F, BW, VL and VNNI: Ice Lake, Zen 4 and later) for the
 * matmul types where they beat the AVX2 ones. The level's table is the AVX2
 * table with these kernels put in; every result keeps the float operations
 * of the AVX2 kernel it replaces (the order llama.cpp runs, vec_dot.h), so
 * the levels give the same bits. Compiled with -mavx512f -mavx512bw
 * -mavx512vl -mavx512vnni and called only after hl_cpu_level_best() says
 * the CPU has them.
 *
 * Integer dot products use VNNI's vpdpbusd, which multiplies unsigned by
 * signed bytes and adds groups of four into int32 lanes. The weight quants
 * go in unsigned (Q4_0: the nibble q, the weight being q - 8; Q5_0 and Q8_0:
 * the weight + 128), and the bias comes off through the activations' sums:
 * sum((q - 8) * a) = sum(q * a) - 8 * sum(a), all exact integers.
 *
 * Panels (vec_dot.h) of Q4_0, Q5_0 and Q8_0, in q32_panel_avx512.h's layout
 * (lane r = row r, one vpdpbusd per group of four quants): Q4_0 adds the
 * eight groups of a block (llama.cpp's repacked order keeps one total per
 * block); Q5_0 and Q8_0 keep ggml's eight lanes apart, as eight
 * accumulators (panel32_ggml8).
 *
 * Decode (one token): Q4_0 four rows at a time, two blocks per vpdpbusd;
 * Q5_0 and Q8_0 four rows at a time, two rows per vpdpbusd
 * (q32_decode_avx512.h).
 * The kernels of the K-quants (vec_dot_k_avx512.c), of Q4_1 and Q5_1
 * (vec_dot_q1_avx512.c) and of the float types (vec_dot_f_avx512.c) are put
 * in by table_init. */
#include <immintrin.h>
#include <pthread.h>

#include "backend/cpu/vec_dot.h"
#include "backend/cpu/x86_avx2/simd16_avx2.h"
#include "backend/cpu/x86_avx512/q32_decode_avx512.h"
#include "backend/cpu/x86_avx512/q32_panel_avx512.h"
#include "backend/cpu/x86_avx512/simd_avx512.h"

/* hl_act_q8_0_aux: the group sums of four through one vpdpbusd with ones. */
static void act_aux_q8_0(int64_t n, hl_act_aux *aux, const void *act_row) {
    const block_q8_0 *a = act_row;
    for (int64_t b = 0; b < n / HL_QK; b++) {
        const __m256i quad = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1),
                                                 _mm256_loadu_si256((const __m256i *)a[b].qs));
        aux[b].d = _cvtsh_ss(a[b].d);
        _mm256_storeu_si256((__m256i *)aux[b].quad128, _mm256_mullo_epi32(quad, _mm256_set1_epi32(-128)));
        const __m128i h = _mm_add_epi32(_mm256_castsi256_si128(quad), _mm256_extracti128_si256(quad, 1));
        const __m128i h2 = _mm_add_epi32(h, _mm_unpackhi_epi64(h, h));
        aux[b].sum = _mm_cvtsi128_si32(_mm_add_epi32(h2, _mm_shuffle_epi32(h2, 1)));
    }
}

/* ------------------------------------------------------ Q4_0 decode -- */

/* 4 rows x 1 token in llama.cpp's repacked order (vec_dot_avx2.c): lane r
 * of the result is row r. Blocks go two at a time through one 512-bit
 * vpdpbusd per row: the weight vector holds [b0 low nibbles, b1 low, b0
 * high, b1 high], i.e. elements 0-15 of block b0, 0-15 of b1, 16-31 of b0,
 * 16-31 of b1, and the activations are put in the same order. */

/* The quants of blocks b and b + 1 of a Q4_0 row in that order (0..15). */
static inline __m512i q4_0_pair(const block_q4_0 *w) {
    const __m256i t = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)w[0].qs)),
                                              _mm_loadu_si128((const __m128i *)w[1].qs), 1);
    const __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(t), _mm256_srli_epi16(t, 4), 1);
    return _mm512_and_si512(z, _mm512_set1_epi8(0x0f));
}

/* The 8 int32 lanes of v as [sum over lanes 0-3 of a, of b, of c, of d |
 * sum over lanes 4-7 of a, b, c, d]. */
static inline __m256i hsum4x2_epi32(__m256i a, __m256i b, __m256i c, __m256i d) {
    return _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
}

/* The lanes of a 512-bit vpdpbusd result in q4_0_pair's order folded to
 * [block b0 lanes 0-3 | block b1 lanes 0-3]. */
static inline __m256i fold_pair(__m512i v) {
    return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

static void dot_4r_q4_0(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {
    const block_q8_0 *a = act_row;
    const block_q4_0 *row[4];
    for (int r = 0; r < 4; r++) row[r] = row_at(w, w_stride, r);
    const int64_t nb = n / HL_QK;
    __m128 acc = _mm_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const __m512i qa = _mm512_permutex2var_epi64(
            _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a[b].qs)),
            _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11),
            _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a[b + 1].qs)));
        __m256i v[4];
        for (int r = 0; r < 4; r++)
            v[r] = fold_pair(_mm512_dpbusd_epi32(_mm512_setzero_si512(), q4_0_pair(row[r] + b), qa));
        /* 8 * sum(a) of each block: the bias of the nibbles */
        const __m256i c = fold_pair(_mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(8), qa));
        const __m256i c2 = _mm256_hadd_epi32(c, c);
        const __m256i isum = _mm256_sub_epi32(hsum4x2_epi32(v[0], v[1], v[2], v[3]), _mm256_hadd_epi32(c2, c2));
        const __m128i dh = _mm_setr_epi16((short)row[0][b].d, (short)row[1][b].d, (short)row[2][b].d,
                                          (short)row[3][b].d, (short)row[0][b + 1].d, (short)row[1][b + 1].d,
                                          (short)row[2][b + 1].d, (short)row[3][b + 1].d);
        const __m256 da = _mm256_set_m128(_mm_set1_ps(_cvtsh_ss(a[b + 1].d)), _mm_set1_ps(_cvtsh_ss(a[b].d)));
        const __m256 scale = _mm256_mul_ps(_mm256_cvtph_ps(dh), da);
        const __m256 f = _mm256_cvtepi32_ps(isum);
        acc = _mm_fmadd_ps(_mm256_castps256_ps128(f), _mm256_castps256_ps128(scale), acc);
        acc = _mm_fmadd_ps(_mm256_extractf128_ps(f, 1), _mm256_extractf128_ps(scale, 1), acc);
    }
    for (; b < nb; b++) { /* an odd last block */
        const __m256i qa = _mm256_loadu_si256((const __m256i *)a[b].qs);
        const __m256i c = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(8), qa);
        __m256i v[4];
        float dw[4];
        for (int r = 0; r < 4; r++) {
            v[r] = _mm256_sub_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), nibbles32(row[r][b].qs), qa), c);
            dw[r] = _cvtsh_ss(row[r][b].d);
        }
        const __m128 scale = _mm_mul_ps(_mm_loadu_ps(dw), _mm_set1_ps(_cvtsh_ss(a[b].d)));
        acc = _mm_fmadd_ps(_mm_cvtepi32_ps(hsum4_epi32(v[0], v[1], v[2], v[3])), scale, acc);
    }
    _mm_storeu_ps(s, acc);
}

/* ------------------------------------------- Q4_0, Q5_0, Q8_0 panels -- */

/* The 32 quants of block b of a row as unsigned bytes (q32_panel_avx512.h) and
 * the scale: Q4_0 the nibble (weight u - 8); Q5_0 and Q8_0 the weight +
 * 128, so that one correction, -128 * sum(a) (hl_act_aux.quad128), serves
 * both. */
static inline __m256i quants_q4_0(const void *row, int64_t b, float *s) {
    const block_q4_0 *w = (const block_q4_0 *)row + b;
    s[0] = _cvtsh_ss(w->d);
    return nibbles32(w->qs);
}

static inline __m256i quants_q5_0(const void *row, int64_t b, float *s) { /* 5-bit q, weight q - 16 */
    const block_q5_0 *w = (const block_q5_0 *)row + b;
    s[0] = _cvtsh_ss(w->d);
    return _mm256_add_epi8(quants5_32(w->qh, w->qs), _mm256_set1_epi8(112));
}

static inline __m256i quants_q8_0(const void *row, int64_t b, float *s) {
    const block_q8_0 *w = (const block_q8_0 *)row + b;
    s[0] = _cvtsh_ss(w->d);
    return _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)w->qs), _mm256_set1_epi8((char)0x80));
}

/* Q4_0: n_tok tokens (a constant after inlining), lane r of acc[t] for row
 * r; per block acc = fma(float(isum), d_w * d_a, acc) as dot_4r. */
static ALWAYS_INLINE void q4_0_panel_t(int n_tok, int64_t n, float *y, size_t y_stride, const uint8_t *p,
                                       const void *act, size_t act_stride, const hl_act_aux *aux, size_t aux_stride) {
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t b = 0; b < n / HL_QK; b++, p += PANEL32_BYTES(1)) {
        __m512i isum[4];
        const block_q8_0 *a[4];
        for (int t = 0; t < n_tok; t++) {
            a[t] = (const block_q8_0 *)row_at(act, act_stride, t) + b;
            isum[t] = _mm512_set1_epi32(-8 * aux[(size_t)t * aux_stride + b].sum);
        }
        for (int k = 0; k < 8; k++) {
            const __m512i u = _mm512_loadu_si512(p + 64 * k);
            for (int t = 0; t < n_tok; t++) isum[t] = _mm512_dpbusd_epi32(isum[t], u, bcast32(a[t]->qs + 4 * k));
        }
        const __m512 dw = _mm512_loadu_ps(p + PANEL32_QUANTS);
        for (int t = 0; t < n_tok; t++) {
            const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(aux[(size_t)t * aux_stride + b].d));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), scale, acc[t]);
        }
    }
    for (int t = 0; t < n_tok; t++) _mm512_storeu_ps(y + (size_t)t * y_stride, acc[t]);
}

static void pack_q4_0(int64_t n, void *panel, const void *w, size_t w_stride) {
    panel32_pack(quants_q4_0, 1, n, panel, w, w_stride);
}

static void pack_q5_0(int64_t n, void *panel, const void *w, size_t w_stride) {
    panel32_pack(quants_q5_0, 1, n, panel, w, w_stride);
}

static void pack_q8_0(int64_t n, void *panel, const void *w, size_t w_stride) {
    panel32_pack(quants_q8_0, 1, n, panel, w, w_stride);
}

static void panel_dot_q4_0(int64_t n, float *y, size_t y_stride, const void *panel, const void *act, size_t act_stride,
                           const hl_act_aux *aux, size_t aux_stride, int n_tok) {
    switch (n_tok) {
    case 1: q4_0_panel_t(1, n, y, y_stride, panel, act, act_stride, aux, aux_stride); break;
    case 2: q4_0_panel_t(2, n, y, y_stride, panel, act, act_stride, aux, aux_stride); break;
    case 3: q4_0_panel_t(3, n, y, y_stride, panel, act, act_stride, aux, aux_stride); break;
    default: q4_0_panel_t(4, n, y, y_stride, panel, act, act_stride, aux, aux_stride); break;
    }
}

/* Q5_0, Q8_0: ggml's order (q32_panel_avx512.h). */
static void panel_dot_q8(int64_t n, float *y, size_t y_stride, const void *panel, const void *act, size_t act_stride,
                         const hl_act_aux *aux, size_t aux_stride, int n_tok) {
    panel32_ggml8(false, n, y, y_stride, panel, act, act_stride, aux, aux_stride, n_tok);
}

/* ---------------------------------------------------- Q5_0, Q8_0 decode -- */

static void dot_4r_q5_0(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {
    q32_dot_4r(GGML_TYPE_Q5_0, n, s, w, w_stride, act_row);
}

static void dot_4r_q8_0(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {
    q32_dot_4r(GGML_TYPE_Q8_0, n, s, w, w_stride, act_row);
}

/* ----------------------------------------------------------------- table -- */

/* The AVX2 kernels of these types, with the AVX-512 ones put in. */
static const uint32_t table_types[] = {
    GGML_TYPE_F32,  GGML_TYPE_F16,  GGML_TYPE_BF16, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q8_0, GGML_TYPE_Q5_0,
    GGML_TYPE_Q5_1, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K,
};
#define N_TABLE (sizeof table_types / sizeof table_types[0])

static hl_cpu_type_ops avx512_ops[N_TABLE], avx512_batch_ops[N_TABLE];
static size_t n_avx512_ops;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void) {
    for (size_t i = 0; i < N_TABLE; i++) {
        const hl_cpu_type_ops *base = hl_cpu_ops_avx2_find(table_types[i]);
        if (!base) continue;
        hl_cpu_type_ops ops = *base;
        ops.panel_block = false; /* this level's panel kernels take up to 4 tokens (below too) */
        if (ops.type == GGML_TYPE_Q4_0) {
            ops.vec_dot_4r = dot_4r_q4_0;
            ops.pack_panel = pack_q4_0;
            ops.panel_dot = panel_dot_q4_0;
            ops.act_aux = act_aux_q8_0;
        } else if (ops.type == GGML_TYPE_Q5_0) {
            ops.vec_dot_4r = dot_4r_q5_0;
            ops.pack_panel = pack_q5_0;
            ops.panel_dot = panel_dot_q8;
            ops.act_aux = act_aux_q8_0;
        } else if (ops.type == GGML_TYPE_Q8_0) {
            ops.vec_dot_4r = dot_4r_q8_0;
            ops.pack_panel = pack_q8_0;
            ops.panel_dot = panel_dot_q8;
            ops.act_aux = act_aux_q8_0;
        }
        hl_cpu_ops_avx512_q1_patch(&ops);
        hl_cpu_ops_avx512_k_patch(&ops, false);
        hl_cpu_ops_avx512_f_patch(&ops, false);
        if (ops.batch) {
            avx512_batch_ops[n_avx512_ops] = *ops.batch;
            avx512_batch_ops[n_avx512_ops].panel_block = false;
            hl_cpu_ops_avx512_k_patch(&avx512_batch_ops[n_avx512_ops], true);
            hl_cpu_ops_avx512_f_patch(&avx512_batch_ops[n_avx512_ops], true);
            ops.batch = &avx512_batch_ops[n_avx512_ops];
        }
        avx512_ops[n_avx512_ops++] = ops;
    }
}

const hl_cpu_type_ops *hl_cpu_ops_avx512_find(uint32_t type) {
    pthread_once(&table_once, table_init);
    return hl_cpu_ops_in(avx512_ops, n_avx512_ops, type);
}
