/* AVX2 + FMA + F16C kernels for the K-quants: the Q8_K activation quantizer
 * and the dot products of Q2_K .. Q6_K weights with Q8_K activations, and
 * the entry points of their panels (k_panel_avx2.h), which prompts of 8
 * tokens or more run.
 * Compiled with -mavx2 -mfma -mf16c; called only after hl_cpu_level_best()
 * says the CPU has them.
 *
 * Integer part. A super-block of 256 elements is eight chunks of 32; chunk c
 * holds elements 32c .. 32c+31 and, for the types with 16-element
 * sub-blocks, sub-blocks 2c and 2c+1. Per chunk, _mm256_maddubs_epi16
 * multiplies 32 weight quants (unsigned bytes) by 32 activation quants
 * (signed) and adds neighbours into 16 int16, and _mm256_madd_epi16 with the
 * sub-block scales adds those into 8 int32: lane m receives elements 4m ..
 * 4m+3 of the chunk. Nothing saturates or overflows (weight quants are at
 * most 63, activation quants at most 127 in magnitude: 2 * 63 * 127 <
 * 32767), so every lane holds an exact integer, however it is formed.
 *
 * Float part: llama.cpp's x86 arithmetic, operation for operation (see
 * vec_dot.h), because a one-ulp difference in a matmul changes later 8-bit
 * activation quants and from there the logits. Which integer sums are
 * converted to float, and in which order they are added, depends on the path
 * llama.cpp takes on the reference machine (AVX-512, -march=native build):
 * - Q3_K, Q5_K, Q6_K: ggml_vec_dot_q*_K_q8_K (arch/x86/quants.c). The eight
 *   int32 lanes of each super-block, laid out as above, are converted to
 *   float and added into one 8-lane accumulator with one FMA per
 *   super-block, summed at the end in hsum_float_8's order: the lane layout
 *   matters, not only the total.
 * - Q2_K, Q4_K: llama.cpp repacks these weights (repack.cpp: q4_K_8x8 on
 *   AVX2 CPUs, q2_K_8x8 on AVX-512 ones) for every matrix with a multiple of
 *   8 rows, and its ggml_gemv/gemm_q*_K_8x8_q8_K keep one output per lane:
 *   exact integer totals per part of a super-block go into two FMA chains.
 *   gemv (a token alone, or the n % 4 last tokens of a batch) takes the
 *   whole super-block as one part, gemm (the other tokens, in groups of 4)
 *   64 elements (Q4_K) or 128 (Q2_K). So vec_dot and vec_dot_4r follow gemv
 *   and vec_dot_4c follows gemm, as hearth's matmul uses them on the same
 *   tokens; for these two types vec_dot_4c is not the 1x1 kernel's bits.
 *   ggml's vec_dot kernels for them (yet another order) only run for
 *   matrices whose row count is not a multiple of 8; hearth does not
 *   reproduce that case.
 * - Q3_K, Q5_K, Q6_K from 8 tokens on: ggml's tiled kernels, one output per
 *   lane and per super-block a few float operations on its exact totals;
 *   these are the hl_cpu_type_ops.batch kernels, which a matmul of 8 tokens
 *   or more must use instead. */
#include <immintrin.h>
#include <string.h>

#include "backend/cpu/vec_dot.h"
#include "backend/cpu/x86_avx2/k_panel_avx2.h"
#include "backend/cpu/x86_avx2/k_scales_avx2.h"
#include "backend/cpu/x86_avx2/simd16_avx2.h"

#define N_CHUNKS (HL_QK_K / 32)

/* The loops over the chunks of a super-block are unrolled so that the chunk
 * index, and with it every shift count and shuffle control, is a constant. */
#define UNROLL_CHUNKS _Pragma("GCC unroll 8")

/* --------------------------------------------------------------- helpers -- */

static inline __m256i load_256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

static inline __m128i load_128(const void *p) { return _mm_loadu_si128((const __m128i *)p); }

static inline float hmax_ps(__m256 v) {
    __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_max_ps(x, _mm_movehl_ps(x, x));
    x = _mm_max_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
}

/* [sum(a), sum(b), x, x]: exact integer sums of the lanes of a and b. */
static inline __m128i hsum2_epi32(__m256i a, __m256i b) {
    const __m256i t = _mm256_hadd_epi32(a, b); /* a01 a23 b01 b23 | a45 a67 b45 b67 */
    const __m128i u = _mm_add_epi32(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
    return _mm_hadd_epi32(u, u);
}

/* The lane sums of eight vectors: [sum(v[0]), ..., sum(v[7])]. */
static inline __m256i hsum8x8_epi32(const __m256i v[8]) {
    const __m256i a = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
    const __m256i b = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
    /* a = [v0..v3 summed over lanes 0-3 | over lanes 4-7], b likewise for v4..v7 */
    return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20), _mm256_permute2x128_si256(a, b, 0x31));
}

/* Lane 0 of each of four vectors. */
static inline __m128 lane0_x4(__m128 a, __m128 b, __m128 c, __m128 d) {
    return _mm_movelh_ps(_mm_unpacklo_ps(a, b), _mm_unpacklo_ps(c, d));
}

/* ------------------------------------------------ activation quantizer -- */

/* One block of quantize_row_q8_K_ref (vec_dot.h has the formula; vec_dot_k.c
 * the scalar form): the same float products and halves-to-even rounding, so
 * the same bytes. */
static void act_q8_K_block(const float *x, block_q8_K *y) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 amax8 = _mm256_setzero_ps();
    for (int k = 0; k < HL_QK_K / 8; k++)
        amax8 = _mm256_max_ps(amax8, _mm256_and_ps(_mm256_loadu_ps(x + 8 * k), abs_mask));
    const float amax = hmax_ps(amax8);
    memset(y, 0, sizeof *y);
    if (amax == 0.0f) return;
    int first = 0; /* the first element of magnitude amax gives the sign of the scale */
    for (int k = 0; k < HL_QK_K / 8; k++) {
        const __m256 hit = _mm256_cmp_ps(_mm256_and_ps(_mm256_loadu_ps(x + 8 * k), abs_mask), _mm256_set1_ps(amax),
                                         _CMP_EQ_OQ);
        const int mask = _mm256_movemask_ps(hit);
        if (mask) {
            first = 8 * k + __builtin_ctz((unsigned)mask);
            break;
        }
    }
    const float iscale = -127.0f / x[first];
    const __m256 vscale = _mm256_set1_ps(iscale);
    __m256i group[16]; /* the int32 quants of sub-block g, as 8 lanes to add */
    for (int c = 0; c < N_CHUNKS; c++) {
        __m256i q[4];
        for (int k = 0; k < 4; k++) {
            const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + 32 * c + 8 * k), vscale);
            q[k] = _mm256_cvtps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        }
        group[2 * c] = _mm256_add_epi32(q[0], q[1]);
        group[2 * c + 1] = _mm256_add_epi32(q[2], q[3]);
        /* packs interleave the 128-bit lanes; the permute restores element order.
         * |q| <= 127, so the saturating packs change nothing. */
        const __m256i q8 = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
        _mm256_storeu_si256((__m256i *)(y->qs + 32 * c),
                            _mm256_permutevar8x32_epi32(q8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    }
    for (int h = 0; h < 2; h++) {
        const __m256i sums = hsum8x8_epi32(group + 8 * h);
        const __m128i sums16 = _mm_packs_epi32(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1));
        _mm_storeu_si128((__m128i *)(y->bsums + 8 * h), sums16);
    }
    y->d = 1.0f / iscale;
}

static void act_q8_K(const float *x, void *dst, int64_t n) {
    block_q8_K *y = dst;
    for (int64_t b = 0; b < n / HL_QK_K; b++) act_q8_K_block(x + b * HL_QK_K, &y[b]);
}

/* ---------------------------------------------------- weight super-blocks -- */

/* A weight super-block with its scales unpacked, ready for its chunks. */
typedef struct kblock {
    const uint8_t *qs; /* low bits: qs (Q2_K .. Q5_K), ql (Q6_K) */
    const uint8_t *qh; /* Q6_K: the 2 high bits */
    __m256i hbits;     /* Q3_K: ~hmask, Q5_K: qh (bit c of byte b: element 32c + b) */
    __m256i sc16[2];   /* Q2/Q3/Q6_K: int16 scales of sub-blocks 8j .. 8j+7 in both
                        * 128-bit lanes of sc16[j]; Q4/Q5_K: sc16[0] = 8 scales, 8 mins
                        * as bytes, in both lanes */
    __m256i sc_all;    /* Q6_K: the 16 scales as int16 */
    __m256i mins16;    /* the mins as int16: 16 (Q2_K) or 8 (Q4/Q5_K, low half) */
    float d, dmin;
} kblock;

/* 16 int8 sub-block scales as sc16[0..1] of kblock. */
static inline void split_scales16(__m128i sc8, __m256i sc16[2], __m256i *all) {
    *all = _mm256_cvtepi8_epi16(sc8);
    sc16[0] = _mm256_permute2x128_si256(*all, *all, 0x00);
    sc16[1] = _mm256_permute2x128_si256(*all, *all, 0x11);
}

/* Super-blocks ahead that ggml's one-row kernel (v_dot) prefetches. Decode
 * runs it row after row through a matrix in memory (Q3_K, Q6_K: no
 * vec_dot_4r), one stream, which the hardware prefetcher alone does not
 * keep ahead of the kernel (measured on the 1B shape at Q4_K_M, whose
 * output matrix is Q6_K: bench/results/
 * 2026-12-02-kernel-comment-figures-cpu.md). With four streams
 * (vec_dot_4r) prefetching measured slower. */
#define ROW_PREFETCH 8

static ALWAYS_INLINE void prefetch_ahead(uint32_t type, const void *row, int64_t b) {
    /* a constant per kernel: hl_row_size, a call per super-block, slowed
     * decode (bench/results/2026-11-28-avx2-decode-cpu.md,
     * 2026-12-02-kernel-comment-figures-cpu.md) */
    const size_t size = type == GGML_TYPE_Q3_K   ? sizeof(block_q3_K)
                        : type == GGML_TYPE_Q5_K ? sizeof(block_q5_K)
                                                 : sizeof(block_q6_K);
    const char *ahead = (const char *)row + (size_t)(b + ROW_PREFETCH) * size;
    for (size_t i = 0; i < size; i += 64) _mm_prefetch(ahead + i, _MM_HINT_T0);
}

static ALWAYS_INLINE kblock k_decode(uint32_t type, const void *row, int64_t b) {
    kblock k;
    if (type == GGML_TYPE_Q2_K) {
        const block_q2_K *w = (const block_q2_K *)row + b;
        const __m128i raw = load_128(w->scales);
        k.qs = w->qs;
        split_scales16(_mm_and_si128(raw, _mm_set1_epi8(15)), k.sc16, &k.sc_all);
        k.mins16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), _mm_set1_epi8(15)));
        k.d = _cvtsh_ss(w->d);
        k.dmin = _cvtsh_ss(w->dmin);
    } else if (type == GGML_TYPE_Q3_K) {
        const block_q3_K *w = (const block_q3_K *)row + b;
        k.qs = w->qs;
        k.hbits = _mm256_xor_si256(load_256(w->hmask), _mm256_set1_epi8(-1));
        split_scales16(q3_K_scales(w->scales), k.sc16, &k.sc_all);
        k.d = _cvtsh_ss(w->d);
    } else if (type == GGML_TYPE_Q4_K || type == GGML_TYPE_Q5_K) {
        /* the same fields up to qh; Q5_K adds qh before qs */
        const block_q4_K *w4 = (const block_q4_K *)row + b;
        const block_q5_K *w5 = (const block_q5_K *)row + b;
        const __m128i sc8 = k4_scales_mins(type == GGML_TYPE_Q4_K ? w4->scales : w5->scales);
        k.qs = type == GGML_TYPE_Q4_K ? w4->qs : w5->qs;
        if (type == GGML_TYPE_Q5_K) k.hbits = load_256(w5->qh);
        k.sc16[0] = _mm256_broadcastsi128_si256(sc8);
        k.mins16 = _mm256_cvtepu8_epi16(_mm_srli_si128(sc8, 8));
        k.d = _cvtsh_ss(type == GGML_TYPE_Q4_K ? w4->d : w5->d);
        k.dmin = _cvtsh_ss(type == GGML_TYPE_Q4_K ? w4->dmin : w5->dmin);
    } else { /* Q6_K */
        const block_q6_K *w = (const block_q6_K *)row + b;
        k.qs = w->ql;
        k.qh = w->qh;
        split_scales16(load_128(w->scales), k.sc16, &k.sc_all);
        k.d = _cvtsh_ss(w->d);
    }
    return k;
}

/* Bits `bit` and up of each byte of v moved to bit `to` (shifts of 16-bit
 * lanes; bits that cross into the other byte are masked off by the caller). */
static inline __m256i move_bits(__m256i v, int bit, int to) {
    return bit < to ? _mm256_slli_epi16(v, to - bit) : bit > to ? _mm256_srli_epi16(v, bit - to) : v;
}

/* The 32 weight quants of chunk c as unsigned bytes; for Q3_K the low 2 bits
 * only, and in *sub 4 * !hbit, which the caller subtracts. */
static ALWAYS_INLINE __m256i k_quants(uint32_t type, const kblock *k, int c, __m256i *sub) {
    const __m256i m3 = _mm256_set1_epi8(3), m15 = _mm256_set1_epi8(15);
    if (type == GGML_TYPE_Q2_K || type == GGML_TYPE_Q3_K) { /* 2 bits: byte b of qs[32*(c/4)..], bits 2*(c%4) */
        const __m256i low = _mm256_and_si256(move_bits(load_256(k->qs + 32 * (c / 4)), 2 * (c % 4), 0), m3);
        if (type == GGML_TYPE_Q3_K) /* bit c of ~hmask to bit 2 */
            *sub = _mm256_and_si256(move_bits(k->hbits, c, 2), _mm256_set1_epi8(4));
        return low;
    }
    if (type == GGML_TYPE_Q4_K || type == GGML_TYPE_Q5_K) { /* nibbles of qs[32*(c/2)..], low for even c */
        const __m256i low = _mm256_and_si256(move_bits(load_256(k->qs + 32 * (c / 2)), 4 * (c % 2), 0), m15);
        if (type == GGML_TYPE_Q4_K) return low;
        return _mm256_or_si256(low, _mm256_and_si256(move_bits(k->hbits, c, 4), _mm256_set1_epi8(16)));
    }
    /* Q6_K: half h = c/4, r = 32 * (c%4) + b: low nibble of ql[64h + r%64] for r < 64,
     * high for r >= 64; bits 4-5 from bits 2*(c%4), +1 of qh[32h + b] */
    const int h = c / 4, k4 = c % 4;
    const __m256i ql = load_256(k->qs + 64 * h + 32 * (k4 % 2));
    const __m256i low = _mm256_and_si256(move_bits(ql, 4 * (k4 / 2), 0), m15);
    const __m256i qh = _mm256_and_si256(load_256(k->qh + 32 * h), _mm256_set1_epi8((char)(3 << (2 * k4))));
    return _mm256_or_si256(low, move_bits(qh, 2 * k4, 4));
}

/* The int16 scales of chunk c: sub-block 2c in the low 128 bits and 2c+1 in
 * the high ones, or Q4/Q5_K's one scale of the chunk throughout. */
static ALWAYS_INLINE __m256i k_scales(uint32_t type, const kblock *k, int c) {
    if (type == GGML_TYPE_Q4_K || type == GGML_TYPE_Q5_K) {
        const __m256i pick = _mm256_set1_epi16((short)(0xff00 | c)); /* byte c, then a zero byte */
        return _mm256_shuffle_epi8(k->sc16[0], pick);
    }
    const int lo = 4 * (c % 4); /* bytes of int16 element 2(c%4) in sc16[c/4], then of 2(c%4)+1 */
    const __m256i pick = _mm256_setr_epi8(
        (char)lo, (char)(lo + 1), (char)lo, (char)(lo + 1), (char)lo, (char)(lo + 1), (char)lo, (char)(lo + 1),
        (char)lo, (char)(lo + 1), (char)lo, (char)(lo + 1), (char)lo, (char)(lo + 1), (char)lo, (char)(lo + 1),
        (char)(lo + 2), (char)(lo + 3), (char)(lo + 2), (char)(lo + 3), (char)(lo + 2), (char)(lo + 3), (char)(lo + 2),
        (char)(lo + 3), (char)(lo + 2), (char)(lo + 3), (char)(lo + 2), (char)(lo + 3), (char)(lo + 2), (char)(lo + 3),
        (char)(lo + 2), (char)(lo + 3));
    return _mm256_shuffle_epi8(k->sc16[c / 4], pick);
}

/* sum over the chunk of scale * q * a, lane m holding elements 4m .. 4m+3
 * (for Q3_K, q = low - sub, as ggml forms it: two products in int16). */
static ALWAYS_INLINE __m256i k_chunk_dot(uint32_t type, __m256i q, __m256i sub, __m256i scales, __m256i a) {
    __m256i p16 = _mm256_maddubs_epi16(q, a);
    if (type == GGML_TYPE_Q3_K) p16 = _mm256_sub_epi16(p16, _mm256_maddubs_epi16(sub, a));
    return _mm256_madd_epi16(scales, p16);
}

/* sum(scale * q * a) over chunks c0 .. c1-1 of a super-block, in the lane
 * layout of the file comment. */
static ALWAYS_INLINE __m256i k_sumi(uint32_t type, const kblock *k, const int8_t *a_qs, int c0, int c1) {
    __m256i sumi = _mm256_setzero_si256();
    UNROLL_CHUNKS
    for (int c = c0; c < c1; c++) {
        __m256i sub = _mm256_setzero_si256();
        const __m256i q = k_quants(type, k, c, &sub);
        sumi = _mm256_add_epi32(sumi, k_chunk_dot(type, q, sub, k_scales(type, k, c), load_256(a_qs + 32 * c)));
    }
    return sumi;
}

/* sumi of four activation rows with one weight super-block, each weight
 * chunk unpacked once for the four. */
static ALWAYS_INLINE void k_sumi_4c(uint32_t type, const kblock *k, const block_q8_K *const a[4], int c0, int c1,
                                    __m256i sumi[4]) {
    for (int c = 0; c < 4; c++) sumi[c] = _mm256_setzero_si256();
    UNROLL_CHUNKS
    for (int ch = c0; ch < c1; ch++) {
        __m256i sub = _mm256_setzero_si256();
        const __m256i q = k_quants(type, k, ch, &sub), scales = k_scales(type, k, ch);
        for (int c = 0; c < 4; c++) {
            sumi[c] = _mm256_add_epi32(sumi[c], k_chunk_dot(type, q, sub, scales, load_256(a[c]->qs + 32 * ch)));
        }
    }
}

/* The sums over sub-blocks of min * (sum of the activations in it), the
 * integers that the mins multiply: Q2_K lane j for sub-blocks 2j, 2j+1 (of
 * 16 elements); Q4/Q5_K lane j (0..3) for sub-blocks 2j, 2j+1 (of 32). */
static ALWAYS_INLINE __m256i k_mins_dot(uint32_t type, const kblock *k, const block_q8_K *a) {
    const __m256i bsums = load_256(a->bsums);
    if (type == GGML_TYPE_Q2_K) return _mm256_madd_epi16(k->mins16, bsums);
    const __m128i q8s = _mm_hadd_epi16(_mm256_castsi256_si128(bsums), _mm256_extracti128_si256(bsums, 1));
    return _mm256_set_m128i(_mm_setzero_si128(), _mm_madd_epi16(_mm256_castsi256_si128(k->mins16), q8s));
}

/* --------------------------------- Q3_K, Q5_K, Q6_K: ggml_vec_dot_*_q8_K -- */

/* The running sums of one dot product: ggml's 8-lane accumulator, and
 * Q5_K's scalar sum of the mins (summs). */
typedef struct vacc {
    __m256 acc;
    __m128 summs; /* lane 0 */
} vacc;

static inline vacc vacc_zero(void) { return (vacc){_mm256_setzero_ps(), _mm_setzero_ps()}; }

/* One super-block, as ggml_vec_dot_q3_K/q5_K/q6_K_q8_K adds it: acc +=
 * (d_a * d) * float(sumi lanes), with Q6_K's -32 applied to the lanes as
 * 32 * sc * bsums of sub-blocks 2m, 2m+1 on lane m, and Q5_K's mins going
 * into summs += (-d_a * dmin) * float(imin), an FMA as GCC contracts it. */
static ALWAYS_INLINE void v_step(uint32_t type, const kblock *k, const block_q8_K *a, __m256i sumi, vacc *s) {
    if (type == GGML_TYPE_Q6_K) {
        const __m256i sub = _mm256_madd_epi16(load_256(a->bsums), k->sc_all);
        sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(sub, 5));
    }
    if (type == GGML_TYPE_Q5_K) {
        const __m128i imin = hsum2_epi32(k_mins_dot(type, k, a), _mm256_setzero_si256());
        s->summs = _mm_fmadd_ss(_mm_set_ss(-a->d * k->dmin), _mm_cvtepi32_ps(imin), s->summs);
    }
    s->acc = _mm256_fmadd_ps(_mm256_set1_ps(a->d * k->d), _mm256_cvtepi32_ps(sumi), s->acc);
}

/* hsum_float_8(acc) (+ summs): ggml's last step. */
static ALWAYS_INLINE float v_result(uint32_t type, vacc s) {
    const float sum = hsum8_ggml(s.acc);
    return type == GGML_TYPE_Q5_K ? sum + _mm_cvtss_f32(s.summs) : sum;
}

static ALWAYS_INLINE float v_dot(uint32_t type, int64_t n, const void *w_row, const block_q8_K *a) {
    vacc s = vacc_zero();
    for (int64_t b = 0; b < n / HL_QK_K; b++) {
        prefetch_ahead(type, w_row, b);
        const kblock k = k_decode(type, w_row, b);
        v_step(type, &k, &a[b], k_sumi(type, &k, a[b].qs, 0, N_CHUNKS), &s);
    }
    return v_result(type, s);
}

/* Four weight rows, super-block by super-block: four independent chains. */
static ALWAYS_INLINE void v_dot_4r(uint32_t type, int64_t n, float out[4], const void *w, size_t w_stride,
                                   const block_q8_K *a) {
    vacc s[4] = {vacc_zero(), vacc_zero(), vacc_zero(), vacc_zero()};
    for (int64_t b = 0; b < n / HL_QK_K; b++) {
        for (int r = 0; r < 4; r++) {
            const kblock k = k_decode(type, row_at(w, w_stride, r), b);
            v_step(type, &k, &a[b], k_sumi(type, &k, a[b].qs, 0, N_CHUNKS), &s[r]);
        }
    }
    for (int r = 0; r < 4; r++) out[r] = v_result(type, s[r]);
}

static ALWAYS_INLINE void v_dot_4c(uint32_t type, int64_t n, float out[4], const void *w_row, const void *act,
                                   size_t act_stride) {
    vacc s[4] = {vacc_zero(), vacc_zero(), vacc_zero(), vacc_zero()};
    for (int64_t b = 0; b < n / HL_QK_K; b++) {
        const kblock k = k_decode(type, w_row, b);
        const block_q8_K *a[4];
        for (int c = 0; c < 4; c++) a[c] = (const block_q8_K *)row_at(act, act_stride, c) + b;
        __m256i sumi[4];
        k_sumi_4c(type, &k, a, 0, N_CHUNKS, sumi);
        for (int c = 0; c < 4; c++) v_step(type, &k, a[c], sumi[c], &s[c]);
    }
    __m128 sum = hsum4_ps(s[0].acc, s[1].acc, s[2].acc, s[3].acc);
    if (type == GGML_TYPE_Q5_K) sum = _mm_add_ps(sum, lane0_x4(s[0].summs, s[1].summs, s[2].summs, s[3].summs));
    _mm_storeu_ps(out, sum);
}

/* -------------------- Q3_K, Q5_K, Q6_K in batches of 8+: ggml's tiled path -- */

/* From 8 tokens on, llama.cpp multiplies these types with its tiled kernels
 * (ggml-cpu/tiled/tiled-kernel.cpp, tiled_run_micro_vnni_8x16 on AVX-512),
 * one output per lane: per super-block the exact totals s1 = sum(sc * q * a)
 * (q unbiased: Q6_K's -32 and Q3_K's -4 * !hbit applied through bsums) and,
 * for Q5_K, s2 = sum(m * bsums) give r = float(s1) * d, then r -= dmin *
 * float(s2) (an FMA intrinsic), and acc += r * d_a, which GCC contracts into
 * an FMA. These are hl_cpu_type_ops.batch's kernels. */

/* [s1, s2, x, x] of one super-block. */
static ALWAYS_INLINE __m128i t_totals(uint32_t type, const kblock *k, const block_q8_K *a, __m256i sumi) {
    if (type == GGML_TYPE_Q6_K) {
        const __m256i sub = _mm256_madd_epi16(load_256(a->bsums), k->sc_all);
        sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(sub, 5));
    }
    return hsum2_epi32(sumi, type == GGML_TYPE_Q5_K ? k_mins_dot(type, k, a) : _mm256_setzero_si256());
}

/* The per-super-block term r in the lanes of s1 and s2 (vectors of lanes:
 * one output each): float(s1) * d - dmin * float(s2). */
static ALWAYS_INLINE __m128 t_term(uint32_t type, __m128i s1, __m128i s2, __m128 d, __m128 dmin) {
    const __m128 r = _mm_mul_ps(_mm_cvtepi32_ps(s1), d);
    return type == GGML_TYPE_Q5_K ? _mm_fnmadd_ps(dmin, _mm_cvtepi32_ps(s2), r) : r;
}

static ALWAYS_INLINE float t_dot(uint32_t type, int64_t n, const void *w_row, const block_q8_K *a) {
    __m128 acc = _mm_setzero_ps(); /* lane 0 */
    for (int64_t b = 0; b < n / HL_QK_K; b++) {
        const kblock k = k_decode(type, w_row, b);
        const __m128i tot = t_totals(type, &k, &a[b], k_sumi(type, &k, a[b].qs, 0, N_CHUNKS));
        const __m128 r = t_term(type, tot, _mm_srli_si128(tot, 4), _mm_set_ss(k.d), _mm_set_ss(k.dmin));
        acc = _mm_fmadd_ss(r, _mm_set_ss(a[b].d), acc);
    }
    return _mm_cvtss_f32(acc);
}

/* 4 rows x 1: lane r for row r. */
static ALWAYS_INLINE void t_dot_4r(uint32_t type, int64_t n, float out[4], const void *w, size_t w_stride,
                                   const block_q8_K *a) {
    __m128 acc = _mm_setzero_ps();
    for (int64_t b = 0; b < n / HL_QK_K; b++) {
        __m128i tot[4];
        float d[4], dmin[4];
        for (int r = 0; r < 4; r++) {
            const kblock k = k_decode(type, row_at(w, w_stride, r), b);
            tot[r] = t_totals(type, &k, &a[b], k_sumi(type, &k, a[b].qs, 0, N_CHUNKS));
            d[r] = k.d, dmin[r] = k.dmin;
        }
        const __m128i lo01 = _mm_unpacklo_epi32(tot[0], tot[1]), lo23 = _mm_unpacklo_epi32(tot[2], tot[3]);
        const __m128i s1 = _mm_unpacklo_epi64(lo01, lo23), s2 = _mm_unpackhi_epi64(lo01, lo23);
        const __m128 r = t_term(type, s1, s2, _mm_loadu_ps(d), _mm_loadu_ps(dmin));
        acc = _mm_fmadd_ps(r, _mm_set1_ps(a[b].d), acc);
    }
    _mm_storeu_ps(out, acc);
}

/* 1 x 4 columns: lane c for column c, each weight chunk unpacked once. */
static ALWAYS_INLINE void t_dot_4c(uint32_t type, int64_t n, float out[4], const void *w_row, const void *act,
                                   size_t act_stride) {
    __m128 acc = _mm_setzero_ps();
    for (int64_t b = 0; b < n / HL_QK_K; b++) {
        const kblock k = k_decode(type, w_row, b);
        const block_q8_K *a[4];
        for (int c = 0; c < 4; c++) a[c] = (const block_q8_K *)row_at(act, act_stride, c) + b;
        __m256i sumi[4];
        k_sumi_4c(type, &k, a, 0, N_CHUNKS, sumi);
        __m128i tot[4];
        for (int c = 0; c < 4; c++) tot[c] = t_totals(type, &k, a[c], sumi[c]);
        const __m128i lo01 = _mm_unpacklo_epi32(tot[0], tot[1]), lo23 = _mm_unpacklo_epi32(tot[2], tot[3]);
        const __m128i s1 = _mm_unpacklo_epi64(lo01, lo23), s2 = _mm_unpackhi_epi64(lo01, lo23);
        const __m128 r = t_term(type, s1, s2, _mm_set1_ps(k.d), _mm_set1_ps(k.dmin));
        const __m128 da = _mm_setr_ps(a[0]->d, a[1]->d, a[2]->d, a[3]->d);
        acc = _mm_fmadd_ps(r, da, acc);
    }
    _mm_storeu_ps(out, acc);
}

/* ------------------------------ Q2_K, Q4_K: ggml_gemv/gemm_q*_K_8x8_q8_K -- */

/* One output per lane, as the repacked kernels keep them: for each part of
 * a super-block, acc += float(isum) * (d * d_a) and accm += float(imin) *
 * (dmin * d_a), isum = sum(sc * q * a) and imin = sum(m * bsums) exact
 * integers over the part; the result is acc - accm. gemv's part is the
 * super-block. */

/* 1 x 1, gemv order: sc = [acc, accm, 0, 0]. */
static ALWAYS_INLINE float r_dot(uint32_t type, int64_t n, const void *w_row, const block_q8_K *a) {
    __m128 sc = _mm_setzero_ps();
    for (int64_t b = 0; b < n / HL_QK_K; b++) {
        const kblock k = k_decode(type, w_row, b);
        const __m256i sumi = k_sumi(type, &k, a[b].qs, 0, N_CHUNKS);
        const __m128i tot = hsum2_epi32(sumi, k_mins_dot(type, &k, &a[b])); /* [isum, imin, x, x] */
        const __m128 scales = _mm_mul_ps(_mm_setr_ps(k.d, k.dmin, 0.0f, 0.0f), _mm_set1_ps(a[b].d));
        sc = _mm_fmadd_ps(_mm_cvtepi32_ps(tot), scales, sc);
    }
    return _mm_cvtss_f32(_mm_sub_ss(sc, _mm_movehdup_ps(sc)));
}

/* [d, dmin, 0, 0] of super-block b of a Q2_K or Q4_K row: one conversion
 * of the two adjacent halves. */
static ALWAYS_INLINE __m128 k_d_dmin(uint32_t type, const void *row, int64_t b) {
    const hl_half *d = type == GGML_TYPE_Q2_K ? &((const block_q2_K *)row)[b].d : &((const block_q4_K *)row)[b].d;
    int32_t both;
    memcpy(&both, d, sizeof both);
    return _mm_cvtph_ps(_mm_cvtsi32_si128(both));
}

/* 4 rows x 1, gemv order: lane r for row r; one horizontal sum for all. */
static ALWAYS_INLINE void r_dot_4r(uint32_t type, int64_t n, float out[4], const void *w, size_t w_stride,
                                   const block_q8_K *a) {
    __m128 acc = _mm_setzero_ps(), accm = _mm_setzero_ps();
    for (int64_t b = 0; b < n / HL_QK_K; b++) {
        __m256i v[8]; /* sumi of rows 0..3, then their mins */
        __m128 dd[4]; /* [d, dmin, 0, 0] of each row */
        for (int r = 0; r < 4; r++) {
            const kblock k = k_decode(type, row_at(w, w_stride, r), b);
            v[r] = k_sumi(type, &k, a[b].qs, 0, N_CHUNKS);
            v[4 + r] = k_mins_dot(type, &k, &a[b]);
            dd[r] = k_d_dmin(type, row_at(w, w_stride, r), b);
        }
        const __m128 d01 = _mm_unpacklo_ps(dd[0], dd[1]), d23 = _mm_unpacklo_ps(dd[2], dd[3]);
        const __m128 d = _mm_movelh_ps(d01, d23), dmin = _mm_movehl_ps(d23, d01); /* rows 0..3 */
        const __m256i tot = hsum8x8_epi32(v);                                     /* [isum 0..3, imin 0..3] */
        const __m128 da = _mm_set1_ps(a[b].d);
        acc = _mm_fmadd_ps(_mm_cvtepi32_ps(_mm256_castsi256_si128(tot)), _mm_mul_ps(d, da), acc);
        accm = _mm_fmadd_ps(_mm_cvtepi32_ps(_mm256_extracti128_si256(tot, 1)), _mm_mul_ps(dmin, da), accm);
    }
    _mm_storeu_ps(out, _mm_sub_ps(acc, accm));
}

/* Parts of a super-block in llama.cpp's gemm kernels: 64 elements in
 * ggml_gemm_q4_K_8x8_q8_K, 128 in ggml_gemm_q2_K_8x8_q8_K. */
static ALWAYS_INLINE int gemm_parts(uint32_t type) { return type == GGML_TYPE_Q4_K ? 4 : 2; }

/* imin of each gemm part (p) and column (lane c), from k_mins_dot: Q4_K has
 * one lane per part, Q2_K four. */
static ALWAYS_INLINE void gemm_mins(uint32_t type, const kblock *k, const block_q8_K *const a[4], __m128i imin[4]) {
    __m256i m[4];
    for (int c = 0; c < 4; c++) m[c] = k_mins_dot(type, k, a[c]);
    if (type == GGML_TYPE_Q4_K) {
        __m128 t[4];
        for (int c = 0; c < 4; c++) t[c] = _mm_castsi128_ps(_mm256_castsi256_si128(m[c]));
        _MM_TRANSPOSE4_PS(t[0], t[1], t[2], t[3]);
        for (int p = 0; p < 4; p++) imin[p] = _mm_castps_si128(t[p]);
        return;
    }
    const __m256i t = _mm256_hadd_epi32(_mm256_hadd_epi32(m[0], m[1]), _mm256_hadd_epi32(m[2], m[3]));
    imin[0] = _mm256_castsi256_si128(t); /* lanes 0-3 of each column */
    imin[1] = _mm256_extracti128_si256(t, 1);
}

/* 1 x 4 columns, gemm order, not the 1x1 kernel's: ggml runs gemm on the
 * tokens of a batch in whole groups of 4 and gemv on the rest, and hearth's
 * matmul calls vec_dot_4c and vec_dot on the same tokens. Lane c: column c. */
static ALWAYS_INLINE void r_dot_4c(uint32_t type, int64_t n, float out[4], const void *w_row, const void *act,
                                   size_t act_stride) {
    const int n_parts = gemm_parts(type), part_chunks = N_CHUNKS / n_parts;
    __m128 acc = _mm_setzero_ps(), accm = _mm_setzero_ps();
    for (int64_t b = 0; b < n / HL_QK_K; b++) {
        const kblock k = k_decode(type, w_row, b);
        const block_q8_K *a[4];
        for (int c = 0; c < 4; c++) a[c] = (const block_q8_K *)row_at(act, act_stride, c) + b;
        __m128i imin[4];
        gemm_mins(type, &k, a, imin);
        const __m128 da = _mm_setr_ps(a[0]->d, a[1]->d, a[2]->d, a[3]->d);
        const __m128 d = _mm_mul_ps(_mm_set1_ps(k.d), da), dmin = _mm_mul_ps(_mm_set1_ps(k.dmin), da);
        UNROLL_CHUNKS
        for (int p = 0; p < n_parts; p++) {
            __m256i sumi[4];
            k_sumi_4c(type, &k, a, p * part_chunks, (p + 1) * part_chunks, sumi);
            acc = _mm_fmadd_ps(_mm_cvtepi32_ps(hsum4_epi32(sumi[0], sumi[1], sumi[2], sumi[3])), d, acc);
            accm = _mm_fmadd_ps(_mm_cvtepi32_ps(imin[p]), dmin, accm);
        }
    }
    _mm_storeu_ps(out, _mm_sub_ps(acc, accm));
}

/* --------------------------------------------------------- entry points -- */

/* vec_dot_4r only where it measured faster than vec_dot row by row: Q2_K
 * and Q4_K (one horizontal sum for four rows), Q5_K. */

static void dot_q2_K(int64_t n, float *s, const void *w_row, const void *act_row) {
    *s = r_dot(GGML_TYPE_Q2_K, n, w_row, act_row);
}

static void dot_4r_q2_K(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {
    r_dot_4r(GGML_TYPE_Q2_K, n, s, w, w_stride, act_row);
}

static void dot_4c_q2_K(int64_t n, float s[4], const void *w_row, const void *act, size_t act_stride) {
    r_dot_4c(GGML_TYPE_Q2_K, n, s, w_row, act, act_stride);
}

static void dot_q3_K(int64_t n, float *s, const void *w_row, const void *act_row) {
    *s = v_dot(GGML_TYPE_Q3_K, n, w_row, act_row);
}

static void dot_4c_q3_K(int64_t n, float s[4], const void *w_row, const void *act, size_t act_stride) {
    v_dot_4c(GGML_TYPE_Q3_K, n, s, w_row, act, act_stride);
}

static void dot_q4_K(int64_t n, float *s, const void *w_row, const void *act_row) {
    *s = r_dot(GGML_TYPE_Q4_K, n, w_row, act_row);
}

static void dot_4r_q4_K(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {
    r_dot_4r(GGML_TYPE_Q4_K, n, s, w, w_stride, act_row);
}

static void dot_4c_q4_K(int64_t n, float s[4], const void *w_row, const void *act, size_t act_stride) {
    r_dot_4c(GGML_TYPE_Q4_K, n, s, w_row, act, act_stride);
}

static void dot_q5_K(int64_t n, float *s, const void *w_row, const void *act_row) {
    *s = v_dot(GGML_TYPE_Q5_K, n, w_row, act_row);
}

static void dot_4r_q5_K(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {
    v_dot_4r(GGML_TYPE_Q5_K, n, s, w, w_stride, act_row);
}

static void dot_4c_q5_K(int64_t n, float s[4], const void *w_row, const void *act, size_t act_stride) {
    v_dot_4c(GGML_TYPE_Q5_K, n, s, w_row, act, act_stride);
}

static void dot_q6_K(int64_t n, float *s, const void *w_row, const void *act_row) {
    *s = v_dot(GGML_TYPE_Q6_K, n, w_row, act_row);
}

static void dot_4c_q6_K(int64_t n, float s[4], const void *w_row, const void *act, size_t act_stride) {
    v_dot_4c(GGML_TYPE_Q6_K, n, s, w_row, act, act_stride);
}

/* The batch (tiled-order) kernels of Q3_K, Q5_K, Q6_K; vec_dot_4r where it
 * measured faster than vec_dot row by row (Q5_K, Q6_K). */

static void tdot_q3_K(int64_t n, float *s, const void *w_row, const void *act_row) {
    *s = t_dot(GGML_TYPE_Q3_K, n, w_row, act_row);
}

static void tdot_4c_q3_K(int64_t n, float s[4], const void *w_row, const void *act, size_t act_stride) {
    t_dot_4c(GGML_TYPE_Q3_K, n, s, w_row, act, act_stride);
}

static void tdot_q5_K(int64_t n, float *s, const void *w_row, const void *act_row) {
    *s = t_dot(GGML_TYPE_Q5_K, n, w_row, act_row);
}

static void tdot_4r_q5_K(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {
    t_dot_4r(GGML_TYPE_Q5_K, n, s, w, w_stride, act_row);
}

static void tdot_4c_q5_K(int64_t n, float s[4], const void *w_row, const void *act, size_t act_stride) {
    t_dot_4c(GGML_TYPE_Q5_K, n, s, w_row, act, act_stride);
}

static void tdot_q6_K(int64_t n, float *s, const void *w_row, const void *act_row) {
    *s = t_dot(GGML_TYPE_Q6_K, n, w_row, act_row);
}

static void tdot_4r_q6_K(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {
    t_dot_4r(GGML_TYPE_Q6_K, n, s, w, w_stride, act_row);
}

static void tdot_4c_q6_K(int64_t n, float s[4], const void *w_row, const void *act, size_t act_stride) {
    t_dot_4c(GGML_TYPE_Q6_K, n, s, w_row, act, act_stride);
}

/* pack_panel and panel_dot of type T (k_panel_avx2.h; no hl_act_aux): Q2_K
 * and Q4_K in the repacked orders, the others in the tiled one (their batch
 * entries). */
#define PANELS(T, name) HL_PANEL_ENTRIES(T, name, kp_pack, kp_panel_dot)

PANELS(GGML_TYPE_Q2_K, q2_K)
PANELS(GGML_TYPE_Q3_K, q3_K)
PANELS(GGML_TYPE_Q4_K, q4_K)
PANELS(GGML_TYPE_Q5_K, q5_K)
PANELS(GGML_TYPE_Q6_K, q6_K)

/* ----------------------------------------------------------------- table -- */

static const hl_cpu_type_ops avx2_k_batch_ops[] = {
    {GGML_TYPE_Q3_K, GGML_TYPE_Q8_K, act_q8_K, tdot_q3_K, NULL, tdot_4c_q3_K, NULL, pack_q3_K, panel_dot_q3_K, NULL,
     true},
    {GGML_TYPE_Q5_K, GGML_TYPE_Q8_K, act_q8_K, tdot_q5_K, tdot_4r_q5_K, tdot_4c_q5_K, NULL, pack_q5_K, panel_dot_q5_K,
     NULL, true},
    {GGML_TYPE_Q6_K, GGML_TYPE_Q8_K, act_q8_K, tdot_q6_K, tdot_4r_q6_K, tdot_4c_q6_K, NULL, pack_q6_K, panel_dot_q6_K,
     NULL, true},
};

static const hl_cpu_type_ops avx2_k_ops[] = {
    {GGML_TYPE_Q2_K, GGML_TYPE_Q8_K, act_q8_K, dot_q2_K, dot_4r_q2_K, dot_4c_q2_K, NULL, pack_q2_K, panel_dot_q2_K,
     NULL, true},
    {GGML_TYPE_Q3_K, GGML_TYPE_Q8_K, act_q8_K, dot_q3_K, NULL, dot_4c_q3_K, &avx2_k_batch_ops[0], NULL, NULL, NULL,
     false},
    {GGML_TYPE_Q4_K, GGML_TYPE_Q8_K, act_q8_K, dot_q4_K, dot_4r_q4_K, dot_4c_q4_K, NULL, pack_q4_K, panel_dot_q4_K,
     NULL, true},
    {GGML_TYPE_Q5_K, GGML_TYPE_Q8_K, act_q8_K, dot_q5_K, dot_4r_q5_K, dot_4c_q5_K, &avx2_k_batch_ops[1], NULL, NULL,
     NULL, false},
    {GGML_TYPE_Q6_K, GGML_TYPE_Q8_K, act_q8_K, dot_q6_K, NULL, dot_4c_q6_K, &avx2_k_batch_ops[2], NULL, NULL, NULL,
     false},
};

const hl_cpu_type_ops *hl_cpu_ops_avx2_k_find(uint32_t type) {
    return hl_cpu_ops_in(avx2_k_ops, sizeof avx2_k_ops / sizeof avx2_k_ops[0], type);
}
