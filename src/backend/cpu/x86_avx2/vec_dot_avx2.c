/* AVX2 + FMA + F16C kernels: activation quantizers and dot products for the
 * quantized weight types of vec_dot.h (the float types: vec_dot_f_avx2.c;
 * the K-quants: vec_dot_k_avx2.c). Compiled with -mavx2 -mfma -mf16c and
 * called only after hl_cpu_level_best() says the CPU has them.
 *
 * The quantized dot products work block by block like ggml's x86 kernels
 * (ggml-cpu/arch/x86/quants.c): the 32 weight quants are widened to 32 bytes,
 * _mm256_maddubs_epi16 multiplies unsigned by signed bytes and adds neighbours
 * into 16 int16, _mm256_madd_epi16 with ones adds those into 8 int32, and one
 * FMA per block applies d_w * d_a. maddubs saturates at +-32767, which the
 * operands here never reach: weight quants are at most 15 (Q4) or 128 in
 * magnitude (Q8), activation quants at most 127, so a pair sums to at most
 * 2 * 128 * 127 = 32512.
 *
 * The float arithmetic is llama.cpp's, operation for operation (see
 * vec_dot.h): one accumulator per dot product, ggml's order of the final
 * sum (hsum8_ggml), halves-to-even activation rounding. Integer sums are
 * exact, so how they are formed (maddubs + madd here, VNNI dpbusd in an
 * AVX-512 build of ggml) does not matter. */
#include <immintrin.h>

#include "backend/cpu/x86_avx2/simd16_avx2.h"
#include "backend/cpu/x86_avx2/simd_avx2.h"
#include "backend/cpu/vec_dot.h"

/* --------------------------------------------------------------- helpers -- */

static inline float hmax_ps(__m256 v) {
    __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_max_ps(x, _mm_movehl_ps(x, x));
    x = _mm_max_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
}

static inline int32_t hsum_epi32(__m256i v) {
    __m128i x = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    x = _mm_add_epi32(x, _mm_unpackhi_epi64(x, x));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(x);
}

static inline __m256i load_256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* Two adjacent fp16 values (a block's d and m, or d and s) as [x0, x1, 0, 0]. */
static inline __m128 load_half2(const void *p) {
    int32_t bits;
    memcpy(&bits, p, sizeof bits);
    return _mm_cvtph_ps(_mm_cvtsi32_si128(bits));
}

/* The 32 quants of a Q4 block, one per byte (0..15), in element order: byte j
 * < 16 is the low nibble of qs[j], byte j + 16 its high nibble. */
static inline __m256i unpack_nibbles(const uint8_t qs[16]) {
    const __m128i q = _mm_loadu_si128((const __m128i *)qs);
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(q, 4), q);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

/* Bit j of the little-endian word at p as byte j of the result: 0xff where
 * the bit is set, 0 where it is clear (ggml's bytes_from_bits_32). */
static inline __m256i bits_to_bytes(const uint8_t p[4]) {
    int32_t bits;
    memcpy(&bits, p, sizeof bits);
    const __m256i spread = _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303);
    const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(bits), spread); /* byte j = byte j/8 of bits */
    const __m256i bit = _mm256_set1_epi64x((int64_t)0x8040201008040201);        /* byte j: bit j % 8 */
    return _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
}

/* 8 int32 partial sums of u[i] * s[i]: u unsigned bytes, s signed bytes. */
static inline __m256i dot_u8_i8(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

/* 8 int32 partial sums of x[i] * y[i], both signed bytes, y != -128:
 * |x| * (y with the sign of x). */
static inline __m256i dot_i8_i8(__m256i x, __m256i y) {
    return dot_u8_i8(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

/* --------------------------------------------- activation quantization -- */

/* One Q8 block as llama.cpp's x86 quantize_row_q8_0 / q8_1 make it (the
 * scalar hl_act_q8_*_from_float spell out the formula): id = 127 / amax, q =
 * x * id rounded halves to even. Returns d = amax / 127; *sum receives
 * sum(qs). */
static float quantize_q8_block(const float x[32], int8_t qs[32], int32_t *sum) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 v[4], amax = _mm256_setzero_ps();
    for (int k = 0; k < 4; k++) {
        v[k] = _mm256_loadu_ps(x + 8 * k);
        amax = _mm256_max_ps(amax, _mm256_and_ps(v[k], abs_mask));
    }
    const float max = hmax_ps(amax);
    const __m256 id = _mm256_set1_ps(max != 0.0f ? 127.0f / max : 0.0f);
    __m256i q[4];
    for (int k = 0; k < 4; k++) {
        const __m256 r = _mm256_round_ps(_mm256_mul_ps(v[k], id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        q[k] = _mm256_cvtps_epi32(r);
    }
    *sum = hsum_epi32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
    /* packs interleave the 128-bit lanes: the 4-byte groups come out as
     * q0[0:4] q1[0:4] q2[0:4] q3[0:4] q0[4:8] q1[4:8] q2[4:8] q3[4:8]. */
    const __m256i q8 = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    _mm256_storeu_si256((__m256i *)qs, _mm256_permutevar8x32_epi32(q8, order));
    return max / 127.0f;
}

static void act_q8_0(const float *x, void *dst, int64_t n) {
    block_q8_0 *y = dst;
    int32_t sum;
    for (int64_t b = 0; b < n / HL_QK; b++, x += HL_QK) {
        y[b].d = _cvtss_sh(quantize_q8_block(x, y[b].qs, &sum), _MM_FROUND_TO_NEAREST_INT);
    }
}

static void act_q8_1(const float *x, void *dst, int64_t n) {
    block_q8_1 *y = dst;
    int32_t sum;
    for (int64_t b = 0; b < n / HL_QK; b++, x += HL_QK) {
        const float d = quantize_q8_block(x, y[b].qs, &sum);
        y[b].d = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
        y[b].s = _cvtss_sh((float)sum * d, _MM_FROUND_TO_NEAREST_INT);
    }
}

/* -------------------------------------------- quantized dot products -- */

/* Each weight type has a step that adds one block product into an
 * accumulator; the kernels below only arrange steps:
 * - vec_dot (1 x 1): one accumulator, as ggml's kernel, so each FMA waits on
 *   the one before (a second accumulator would be faster and change the
 *   order of additions, i.e. the bits);
 * - vec_dot_4r (4 weight rows x 1 activation row, for decode) loads each
 *   activation block once for four rows, whose four chains overlap;
 * - vec_dot_4c (1 weight row x 4 activation rows, for prompts) unpacks each
 *   weight block once for four tokens.
 * All three give each result the bits of ggml's 1 x 1 kernel. The tiles
 * take fewer cycles per block product than 1 x 1; larger tiles (2 x 4)
 * gained little (bench/results/2026-12-02-kernel-comment-figures-cpu.md). */

/* Lane 1 of each of four vectors: [a1, b1, c1, d1]. */
static inline __m128 lane1_x4(__m128 a, __m128 b, __m128 c, __m128 d) {
    return _mm_movehl_ps(_mm_unpacklo_ps(c, d), _mm_unpacklo_ps(a, b));
}

/* Q4_0 and Q8_0 weights against Q8_0 activations: q holds the 32 signed
 * weight quants of a block, dw its scale. */
static inline __m256 q8_step(__m256i q, float dw, const block_q8_0 *a, __m256 acc) {
    const __m256i sum = dot_i8_i8(q, load_256(a->qs));
    return _mm256_fmadd_ps(_mm256_set1_ps(dw * _cvtsh_ss(a->d)), _mm256_cvtepi32_ps(sum), acc);
}

/* The signed quants and the scale of block b of a Q4_0, Q5_0 or Q8_0 row:
 * the one difference between their kernels. Called with a constant type, so
 * inlining removes the branch. */
static ALWAYS_INLINE __m256i signed_quants(uint32_t type, const void *row, int64_t b, float *dw) {
    if (type == GGML_TYPE_Q4_0) {
        const block_q4_0 *w = (const block_q4_0 *)row + b;
        *dw = _cvtsh_ss(w->d);
        return _mm256_sub_epi8(unpack_nibbles(w->qs), _mm256_set1_epi8(8));
    }
    if (type == GGML_TYPE_Q5_0) { /* q - 16: the nibble, minus 16 (0xf0 as a byte) where bit 4 is clear */
        const block_q5_0 *w = (const block_q5_0 *)row + b;
        *dw = _cvtsh_ss(w->d);
        const __m256i minus16 = _mm256_andnot_si256(bits_to_bytes(w->qh), _mm256_set1_epi8((char)0xf0));
        return _mm256_or_si256(unpack_nibbles(w->qs), minus16);
    }
    const block_q8_0 *w = (const block_q8_0 *)row + b;
    *dw = _cvtsh_ss(w->d);
    return load_256(w->qs);
}

/* The unsigned quants and [d, m, 0, 0] of block b of a Q4_1 or Q5_1 row. */
static ALWAYS_INLINE __m256i unsigned_quants(uint32_t type, const void *row, int64_t b, __m128 *wdm) {
    if (type == GGML_TYPE_Q4_1) {
        const block_q4_1 *w = (const block_q4_1 *)row + b;
        *wdm = load_half2(&w->d);
        return unpack_nibbles(w->qs);
    }
    const block_q5_1 *w = (const block_q5_1 *)row + b;
    *wdm = load_half2(&w->d);
    const __m256i bit4 = _mm256_and_si256(bits_to_bytes(w->qh), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(unpack_nibbles(w->qs), bit4);
}

static ALWAYS_INLINE __m256 q8_block(uint32_t type, const void *w_row, const block_q8_0 *a, int64_t b, __m256 acc) {
    float dw;
    const __m256i q = signed_quants(type, w_row, b, &dw);
    return q8_step(q, dw, &a[b], acc);
}

static ALWAYS_INLINE void q8_dot(uint32_t type, int64_t n, float *s, const void *w_row, const void *act_row) {
    const block_q8_0 *a = act_row;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / HL_QK; b++) acc = q8_block(type, w_row, a, b, acc);
    *s = hsum8_ggml(acc);
}

static ALWAYS_INLINE void q8_dot_4r(uint32_t type, int64_t n, float s[4], const void *w, size_t w_stride,
                                    const void *act_row) {
    const block_q8_0 *a = act_row;
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t b = 0; b < n / HL_QK; b++) {
        for (int r = 0; r < 4; r++) acc[r] = q8_block(type, row_at(w, w_stride, r), a, b, acc[r]);
    }
    _mm_storeu_ps(s, hsum4_ps(acc[0], acc[1], acc[2], acc[3]));
}

static ALWAYS_INLINE void q8_dot_4c(uint32_t type, int64_t n, float s[4], const void *w_row, const void *act,
                                    size_t act_stride) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t b = 0; b < n / HL_QK; b++) {
        float dw;
        const __m256i q = signed_quants(type, w_row, b, &dw);
        for (int c = 0; c < 4; c++) {
            acc[c] = q8_step(q, dw, (const block_q8_0 *)row_at(act, act_stride, c) + b, acc[c]);
        }
    }
    _mm_storeu_ps(s, hsum4_ps(acc[0], acc[1], acc[2], acc[3]));
}

/* Q4_0 follows llama.cpp's repacked kernels (repack.cpp, q4_0_8x8, which
 * it uses for every matrix whose row count is a multiple of 8, at any batch
 * size): one output per lane, per block acc = fma(float(isum), d_w * d_a,
 * acc) with isum the block's exact integer dot product. */
static void dot_q4_0(int64_t n, float *s, const void *w_row, const void *act_row) {
    const block_q8_0 *a = act_row;
    __m128 acc = _mm_setzero_ps();
    for (int64_t b = 0; b < n / HL_QK; b++) {
        float dw;
        const __m256i q = signed_quants(GGML_TYPE_Q4_0, w_row, b, &dw);
        const __m128 isum = _mm_cvtsi32_ss(_mm_setzero_ps(), hsum_epi32(dot_i8_i8(q, load_256(a[b].qs))));
        acc = _mm_fmadd_ss(isum, _mm_set_ss(dw * _cvtsh_ss(a[b].d)), acc);
    }
    *s = _mm_cvtss_f32(acc);
}

static void dot_4r_q4_0(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {
    const block_q8_0 *a = act_row;
    __m128 acc = _mm_setzero_ps();
    for (int64_t b = 0; b < n / HL_QK; b++) {
        const __m256i qa = load_256(a[b].qs);
        __m256i v[4];
        float dw[4];
        for (int r = 0; r < 4; r++)
            v[r] = dot_i8_i8(signed_quants(GGML_TYPE_Q4_0, row_at(w, w_stride, r), b, &dw[r]), qa);
        const __m128 scale = _mm_mul_ps(_mm_loadu_ps(dw), _mm_set1_ps(_cvtsh_ss(a[b].d)));
        acc = _mm_fmadd_ps(_mm_cvtepi32_ps(hsum4_epi32(v[0], v[1], v[2], v[3])), scale, acc);
    }
    _mm_storeu_ps(s, acc);
}

static void dot_4c_q4_0(int64_t n, float s[4], const void *w_row, const void *act, size_t act_stride) {
    __m128 acc = _mm_setzero_ps();
    for (int64_t b = 0; b < n / HL_QK; b++) {
        float dw, da[4];
        const __m256i q = signed_quants(GGML_TYPE_Q4_0, w_row, b, &dw);
        __m256i v[4];
        for (int c = 0; c < 4; c++) {
            const block_q8_0 *a = (const block_q8_0 *)row_at(act, act_stride, c) + b;
            v[c] = dot_i8_i8(q, load_256(a->qs));
            da[c] = _cvtsh_ss(a->d);
        }
        const __m128 scale = _mm_mul_ps(_mm_set1_ps(dw), _mm_loadu_ps(da));
        acc = _mm_fmadd_ps(_mm_cvtepi32_ps(hsum4_epi32(v[0], v[1], v[2], v[3])), scale, acc);
    }
    _mm_storeu_ps(s, acc);
}

/* Panels (vec_dot.h) of Q4_0, Q4_1 and Q5_1, laid out as the AVX-512 ones
 * (q32_panel_avx512.h): per block, eight 64-byte vectors whose dword r holds
 * elements 4k..4k+3 of row r, then the 16 row scales (and for Q4_1/Q5_1
 * the 16 mins); each vector is two halves of 8 rows here. maddubs and madd
 * with ones stand in for vpdpbusd. Q4_0 stores the nibbles 0..15 and
 * Q4_1/Q5_1 their unsigned quants (at most 31), which cannot saturate
 * maddubs' int16 pairs. (Q5_0 and Q8_0, signed, have int16 panels: below.) */
static ALWAYS_INLINE bool has_min(uint32_t type) { return type == GGML_TYPE_Q4_1 || type == GGML_TYPE_Q5_1; }

/* Bytes per block of a panel: the quants, the 16 scales, for Q4_1/Q5_1 the
 * 16 mins. */
#define PANEL_BLOCK(type) (8 * 64 + (has_min(type) ? 2 : 1) * HL_PANEL_ROWS * 4)

static ALWAYS_INLINE void pack_t(uint32_t type, int64_t n, void *panel, const void *w, size_t w_stride) {
    uint8_t *p = panel;
    for (int64_t b = 0; b < n / HL_QK; b++, p += PANEL_BLOCK(type)) {
        __m256i rows[HL_PANEL_ROWS];
        float dm[2][HL_PANEL_ROWS]; /* the scales, the mins */
        for (int r = 0; r < HL_PANEL_ROWS; r++) {
            const void *row = row_at(w, w_stride, r);
            if (type == GGML_TYPE_Q4_0) {
                rows[r] = unpack_nibbles(((const block_q4_0 *)row)[b].qs);
                dm[0][r] = _cvtsh_ss(((const block_q4_0 *)row)[b].d);
            } else {
                __m128 wdm;
                rows[r] = unsigned_quants(type, row, b, &wdm);
                dm[0][r] = _mm_cvtss_f32(wdm);
                dm[1][r] = _mm_cvtss_f32(_mm_movehdup_ps(wdm));
            }
        }
        transpose_8x8(rows, p, 64);
        transpose_8x8(rows + 8, p + 32, 64);
        memcpy(p + 8 * 64, dm, (has_min(type) ? 2 : 1) * sizeof dm[0]);
    }
}

static void pack_q4_0(int64_t n, void *panel, const void *w, size_t w_stride) {
    pack_t(GGML_TYPE_Q4_0, n, panel, w, w_stride);
}

/* Q5_0 and Q8_0 have panels of their own, whose quants are widened to
 * int16 when the panel is packed, and the activation quants per chunk of
 * blocks in the kernel. The float order is q8_dot's (llama.cpp's
 * ggml_vec_dot_q8_0_q8_0, and tinyBLAS_Q0_AVX for batches): per result one
 * 8-lane accumulator, lane k summing group k (elements 4k .. 4k+3) of each
 * block, acc = fma(d_w * d_a, float(isum_k), acc) per block, hsum8_ggml at
 * the end, so every result has the bits of vec_dot. Only the exact
 * integer sums are formed another way: dot_i8_i8 takes four ops that all
 * need the FMA ports (psignb twice, pmaddubsw, pmaddwd) for 32 products,
 * beside the cvtdq2ps and the FMA of the float order; here each group's
 * sum is two pmaddwd of int16 pairs and a paddd (which any vector port
 * runs): 4 ops on those ports per group instead of 6, the operands read by
 * broadcasts and pmaddwd's memory operand. Measured in
 * bench/results/2026-11-28-avx2-q8_0-f16-prompt-cpu.md (an Intel Xeon)
 * and 2026-11-28-avx2-zen3-cpu.md (Zen 3, the broadcasts shared).
 *
 * The panel holds the 16 rows as two halves of 8 rows, one after the
 * other; a half is n / 32 blocks of HALF_BLOCK bytes: 16 vectors whose
 * dword r holds elements 2j and 2j+1 of row r as int16 (vector j, j < 16),
 * then the 8 rows' d_w as floats (34 bytes a row element, within
 * HL_PANEL_BYTES' 64). */
#define HALF_BLOCK (16 * 32 + 8 * 4)
/* The pack reads the panel's 8 rows of a half side by side, a block of
 * each at a time; prefetching PACK_AHEAD_Q bytes ahead in each row makes
 * the pack cheaper (256 and 1024 bytes do the same;
 * bench/results/2026-11-29-avx2-zen3-q8_0-order-cpu.md). */
#define PACK_AHEAD_Q 512

static ALWAYS_INLINE void pack_i16_t(uint32_t type, int64_t n, void *panel, const void *w, size_t w_stride) {
    const size_t w_block = hl_row_size(type, HL_QK);
    for (int h = 0; h < 2; h++) {
        uint8_t *p = (uint8_t *)panel + (size_t)h * (size_t)(n / HL_QK) * HALF_BLOCK;
        for (int64_t b = 0; b < n / HL_QK; b++, p += HALF_BLOCK) {
            __m256i lo[8], hi[8]; /* elements 0..15 and 16..31 of each row as int16 */
            float *dw = (float *)(p + 16 * 32);
            for (int r = 0; r < 8; r++) {
                const uint8_t *row = row_at(w, w_stride, 8 * h + r);
                _mm_prefetch((const char *)row + (size_t)b * w_block + PACK_AHEAD_Q, _MM_HINT_T0);
                const __m256i q = signed_quants(type, row, b, &dw[r]);
                lo[r] = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(q));
                hi[r] = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(q, 1));
            }
            transpose_8x8(lo, p, 32);
            transpose_8x8(hi, p + 8 * 32, 32);
        }
    }
}

static void pack_q5_0(int64_t n, void *panel, const void *w, size_t w_stride) {
    pack_i16_t(GGML_TYPE_Q5_0, n, panel, w, w_stride);
}

static void pack_q8_0(int64_t n, void *panel, const void *w, size_t w_stride) {
    pack_i16_t(GGML_TYPE_Q8_0, n, panel, w, w_stride);
}

/* The kernel takes TOKEN_GROUP tokens at a time and CHUNK blocks at a
 * time: the group's activations for the chunk widened into a buffer (16
 * KiB) and the chunk of the panel (17 KiB) stay in L1 while every token of
 * the group passes both halves at once, four of the eight lanes at a time;
 * the accumulators wait in memory between chunks (8 KiB). */
#define TOKEN_GROUP 16
#define CHUNK 16

typedef struct chunk_act {
    int16_t q[TOKEN_GROUP][CHUNK * HL_QK]; /* the quants of blocks b0 .. b0 + CHUNK - 1 */
    float d[TOKEN_GROUP][CHUNK];           /* and their scales */
} chunk_act;

static void widen(chunk_act *ca, int t, const block_q8_0 *a, int64_t nb) {
    for (int64_t b = 0; b < nb; b++) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)a[b].qs);
        _mm256_storeu_si256((__m256i *)&ca->q[t][b * HL_QK], _mm256_cvtepi8_epi16(_mm256_castsi256_si128(v)));
        _mm256_storeu_si256((__m256i *)&ca->q[t][b * HL_QK + 16], _mm256_cvtepi8_epi16(_mm256_extracti128_si256(v, 1)));
        ca->d[t][b] = _cvtsh_ss(a[b].d);
    }
}

/* nb blocks of both halves (p0, p1 at their first) against one token's
 * widened quants a and scales da, continuing lanes k0 .. k0+3 of its
 * accumulators: lane r of part[h][k] is lane k of row 8h + r's 8-lane
 * accumulator. Pausing a chain in memory does not change its bits. One
 * broadcast of an activation pair serves both halves (3 loads per two
 * pmaddwd instead of 4; the weight vectors are operands of pmaddwd
 * straight from L1): faster on Zen 3 than a half at a time with all eight
 * lanes, slightly slower on an Intel Xeon
 * (bench/results/2026-11-28-avx2-zen3-cpu.md). */
static ALWAYS_INLINE void halves_lanes(int k0, int64_t nb, const uint8_t *p0, const uint8_t *p1, const int16_t *a,
                                       const float *da, __m256 part[2][8]) {
    __m256 acc[2][4];
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 4; k++) acc[h][k] = part[h][k0 + k];
    for (int64_t b = 0; b < nb; b++, p0 += HALF_BLOCK, p1 += HALF_BLOCK, a += HL_QK) {
        const __m256 d = _mm256_set1_ps(da[b]);
        const __m256 scale[2] = {_mm256_mul_ps(_mm256_loadu_ps((const float *)(p0 + 16 * 32)), d),
                                 _mm256_mul_ps(_mm256_loadu_ps((const float *)(p1 + 16 * 32)), d)};
        for (int k = 0; k < 4; k++) {
            const __m256i x0 = bcast32x8(a + 4 * (k0 + k)), x1 = bcast32x8(a + 4 * (k0 + k) + 2);
            for (int h = 0; h < 2; h++) {
                const uint8_t *w = (h ? p1 : p0) + 64 * (k0 + k);
                const __m256i isum = _mm256_add_epi32(
                    _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)w), x0),
                    _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(w + 32)), x1));
                acc[h][k] = _mm256_fmadd_ps(scale[h], _mm256_cvtepi32_ps(isum), acc[h][k]);
            }
        }
    }
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 4; k++) part[h][k0 + k] = acc[h][k];
}

/* Any number of tokens (panel_block); per result hsum8_ggml's order at the
 * end. */
static void panel_dot_i16(int64_t n, float *y, size_t y_stride, const void *panel, const void *act, size_t act_stride,
                          const hl_act_aux *aux, size_t aux_stride, int n_tok) {
    (void)aux, (void)aux_stride;
    const int64_t nb = n / HL_QK;
    chunk_act ca;
    __m256 part[TOKEN_GROUP][2][8];
    for (int t0 = 0; t0 < n_tok; t0 += TOKEN_GROUP) {
        const int ng = n_tok - t0 < TOKEN_GROUP ? n_tok - t0 : TOKEN_GROUP;
        for (int t = 0; t < ng; t++)
            for (int k = 0; k < 16; k++) part[t][k / 8][k % 8] = _mm256_setzero_ps();
        for (int64_t b0 = 0; b0 < nb; b0 += CHUNK) {
            const int64_t cb = nb - b0 < CHUNK ? nb - b0 : CHUNK;
            for (int t = 0; t < ng; t++) widen(&ca, t, (const block_q8_0 *)row_at(act, act_stride, t0 + t) + b0, cb);
            const uint8_t *p0 = (const uint8_t *)panel + (size_t)b0 * HALF_BLOCK, *p1 = p0 + (size_t)nb * HALF_BLOCK;
            for (int t = 0; t < ng; t++)
                for (int k0 = 0; k0 < 8; k0 += 4) halves_lanes(k0, cb, p0, p1, ca.q[t], ca.d[t], part[t]);
        }
        for (int t = 0; t < ng; t++)
            for (int h = 0; h < 2; h++)
                _mm256_storeu_ps(y + (size_t)(t0 + t) * y_stride + 8 * h, hsum8_ggml_rows(part[t][h]));
    }
}

/* n_tok (1 or 2) tokens: per block and half, acc = fma(float(isum), d_w *
 * d_a, acc), lane r for row r, as dot_4r_q4_0. */
static ALWAYS_INLINE void q4_0_panel_t(int n_tok, int64_t n, float *y, size_t y_stride, const uint8_t *p,
                                       const void *act, size_t act_stride, const hl_act_aux *aux, size_t aux_stride) {
    __m256 acc[2][2] = {{_mm256_setzero_ps(), _mm256_setzero_ps()}, {_mm256_setzero_ps(), _mm256_setzero_ps()}};
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < n / HL_QK; b++, p += PANEL_BLOCK(GGML_TYPE_Q4_0)) {
        __m256i isum[2][2];
        const block_q8_0 *a[2];
        for (int t = 0; t < n_tok; t++) {
            a[t] = (const block_q8_0 *)row_at(act, act_stride, t) + b;
            isum[t][0] = isum[t][1] = _mm256_set1_epi32(-8 * aux[(size_t)t * aux_stride + b].sum);
        }
        for (int k = 0; k < 8; k++) {
            for (int h = 0; h < 2; h++) {
                const __m256i u = _mm256_loadu_si256((const __m256i *)(p + 64 * k + 32 * h));
                for (int t = 0; t < n_tok; t++) {
                    const __m256i dot = _mm256_madd_epi16(_mm256_maddubs_epi16(u, bcast32x8(a[t]->qs + 4 * k)), ones);
                    isum[t][h] = _mm256_add_epi32(isum[t][h], dot);
                }
            }
        }
        for (int h = 0; h < 2; h++) {
            const __m256 dw = _mm256_loadu_ps((const float *)(p + 8 * 64) + 8 * h);
            for (int t = 0; t < n_tok; t++) {
                const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(aux[(size_t)t * aux_stride + b].d));
                acc[t][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t][h]), scale, acc[t][h]);
            }
        }
    }
    for (int t = 0; t < n_tok; t++) {
        _mm256_storeu_ps(y + (size_t)t * y_stride, acc[t][0]);
        _mm256_storeu_ps(y + (size_t)t * y_stride + 8, acc[t][1]);
    }
}

/* Any number of tokens (panel_block), two at a time. */
static void panel_dot_q4_0(int64_t n, float *y, size_t y_stride, const void *panel, const void *act, size_t act_stride,
                           const hl_act_aux *aux, size_t aux_stride, int n_tok) {
    for (int t = 0; t < n_tok; t += 2) {
        float *yt = y + (size_t)t * y_stride;
        const void *at = row_at(act, act_stride, t);
        const hl_act_aux *xt = aux + (size_t)t * aux_stride;
        if (n_tok - t >= 2) q4_0_panel_t(2, n, yt, y_stride, panel, at, act_stride, xt, aux_stride);
        else q4_0_panel_t(1, n, yt, y_stride, panel, at, act_stride, xt, aux_stride);
    }
}

/* Q5_0: ggml_vec_dot_q5_0_q8_0, and tinyBLAS_Q0_AVX for batches, in the
 * order of Q4_0's kernel. */
static void dot_q5_0(int64_t n, float *s, const void *w_row, const void *act_row) {
    q8_dot(GGML_TYPE_Q5_0, n, s, w_row, act_row);
}

static void dot_4r_q5_0(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {
    q8_dot_4r(GGML_TYPE_Q5_0, n, s, w, w_stride, act_row);
}

static void dot_4c_q5_0(int64_t n, float s[4], const void *w_row, const void *act, size_t act_stride) {
    q8_dot_4c(GGML_TYPE_Q5_0, n, s, w_row, act, act_stride);
}

static void dot_q8_0(int64_t n, float *s, const void *w_row, const void *act_row) {
    q8_dot(GGML_TYPE_Q8_0, n, s, w_row, act_row);
}

static void dot_4r_q8_0(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {
    q8_dot_4r(GGML_TYPE_Q8_0, n, s, w, w_stride, act_row);
}

static void dot_4c_q8_0(int64_t n, float s[4], const void *w_row, const void *act, size_t act_stride) {
    q8_dot_4c(GGML_TYPE_Q8_0, n, s, w_row, act, act_stride);
}

/* Q4_1 and Q5_1 weights against Q8_1 activations: d_w*d_a * sum(q_w * q_a)
 * + m * s_a, as ggml_vec_dot_q4_1_q8_1 / q5_1_q8_1: the first term into the
 * 8-lane accumulator, the second into a separate scalar sum that ggml writes
 * `summs += m * s` and GCC contracts into an FMA; the result is hsum(acc) +
 * summs. wdm = [d_w, m, 0, 0] and ads = [d_a, s_a, 0, 0]: lane 0 of wdm * ads
 * is the block's scale, lane 1 of fma(wdm, ads, *acc_ms) the FMA of summs
 * (lane 0 there is unused). The unsigned quants are at most 31, so maddubs
 * cannot saturate. */
static inline __m256 q8_1_step(__m256i q, __m128 wdm, const block_q8_1 *a, __m256 acc, __m128 *acc_ms) {
    const __m128 ads = load_half2(&a->d);
    const __m128 scales = _mm_mul_ps(wdm, ads);
    *acc_ms = _mm_fmadd_ps(wdm, ads, *acc_ms);
    const __m256i sum = dot_u8_i8(q, load_256(a->qs));
    return _mm256_fmadd_ps(_mm256_broadcastss_ps(scales), _mm256_cvtepi32_ps(sum), acc);
}

static ALWAYS_INLINE __m256 q8_1_block(uint32_t type, const void *w_row, const block_q8_1 *a, int64_t b, __m256 acc,
                                       __m128 *acc_ms) {
    __m128 wdm;
    const __m256i q = unsigned_quants(type, w_row, b, &wdm);
    return q8_1_step(q, wdm, &a[b], acc, acc_ms);
}

static ALWAYS_INLINE void q8_1_dot(uint32_t type, int64_t n, float *s, const void *w_row, const void *act_row) {
    const block_q8_1 *a = act_row;
    __m256 acc = _mm256_setzero_ps();
    __m128 ms = _mm_setzero_ps();
    for (int64_t b = 0; b < n / HL_QK; b++) acc = q8_1_block(type, w_row, a, b, acc, &ms);
    *s = hsum8_ggml(acc) + _mm_cvtss_f32(_mm_movehdup_ps(ms));
}

static ALWAYS_INLINE void q8_1_dot_4r(uint32_t type, int64_t n, float s[4], const void *w, size_t w_stride,
                                      const void *act_row) {
    const block_q8_1 *a = act_row;
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    __m128 ms[4] = {_mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps()};
    for (int64_t b = 0; b < n / HL_QK; b++) {
        for (int r = 0; r < 4; r++) acc[r] = q8_1_block(type, row_at(w, w_stride, r), a, b, acc[r], &ms[r]);
    }
    const __m128 sums = hsum4_ps(acc[0], acc[1], acc[2], acc[3]);
    _mm_storeu_ps(s, _mm_add_ps(sums, lane1_x4(ms[0], ms[1], ms[2], ms[3])));
}

static ALWAYS_INLINE void q8_1_dot_4c(uint32_t type, int64_t n, float s[4], const void *w_row, const void *act,
                                      size_t act_stride) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    __m128 ms[4] = {_mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps()};
    for (int64_t b = 0; b < n / HL_QK; b++) {
        __m128 wdm;
        const __m256i q = unsigned_quants(type, w_row, b, &wdm);
        for (int c = 0; c < 4; c++) {
            acc[c] = q8_1_step(q, wdm, (const block_q8_1 *)row_at(act, act_stride, c) + b, acc[c], &ms[c]);
        }
    }
    const __m128 sums = hsum4_ps(acc[0], acc[1], acc[2], acc[3]);
    _mm_storeu_ps(s, _mm_add_ps(sums, lane1_x4(ms[0], ms[1], ms[2], ms[3])));
}

static void dot_q4_1(int64_t n, float *s, const void *w_row, const void *act_row) {
    q8_1_dot(GGML_TYPE_Q4_1, n, s, w_row, act_row);
}

static void dot_4r_q4_1(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {
    q8_1_dot_4r(GGML_TYPE_Q4_1, n, s, w, w_stride, act_row);
}

static void dot_4c_q4_1(int64_t n, float s[4], const void *w_row, const void *act, size_t act_stride) {
    q8_1_dot_4c(GGML_TYPE_Q4_1, n, s, w_row, act, act_stride);
}

static void dot_q5_1(int64_t n, float *s, const void *w_row, const void *act_row) {
    q8_1_dot(GGML_TYPE_Q5_1, n, s, w_row, act_row);
}

static void dot_4r_q5_1(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {
    q8_1_dot_4r(GGML_TYPE_Q5_1, n, s, w, w_stride, act_row);
}

static void dot_4c_q5_1(int64_t n, float s[4], const void *w_row, const void *act, size_t act_stride) {
    q8_1_dot_4c(GGML_TYPE_Q5_1, n, s, w_row, act, act_stride);
}

static void pack_q4_1(int64_t n, void *panel, const void *w, size_t w_stride) {
    pack_t(GGML_TYPE_Q4_1, n, panel, w, w_stride);
}

static void pack_q5_1(int64_t n, void *panel, const void *w, size_t w_stride) {
    pack_t(GGML_TYPE_Q5_1, n, panel, w, w_stride);
}

/* One token with the 8 rows of half h, in q8_1_dot's order: lane r of
 * acc[k] is lane k of row r's 8-lane accumulator, lane r of ms its summs
 * chain. (Two or four tokens per pass, sharing the weight loads, measured
 * no faster: their 16 or 32 accumulators spill.) */
static void q1_panel_half(int64_t n, float *y, const uint8_t *p, int h, const block_q8_1 *a) {
    __m256 acc[8], ms = _mm256_setzero_ps();
    for (int k = 0; k < 8; k++) acc[k] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / HL_QK; b++, p += PANEL_BLOCK(GGML_TYPE_Q4_1)) {
        const float *dm = (const float *)(p + 8 * 64);
        const __m256 scale = _mm256_mul_ps(_mm256_loadu_ps(dm + 8 * h), _mm256_set1_ps(_cvtsh_ss(a[b].d)));
        ms = _mm256_fmadd_ps(_mm256_loadu_ps(dm + HL_PANEL_ROWS + 8 * h), _mm256_set1_ps(_cvtsh_ss(a[b].s)), ms);
        for (int k = 0; k < 8; k++) {
            const __m256i u = _mm256_loadu_si256((const __m256i *)(p + 64 * k + 32 * h));
            acc[k] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(dot_u8_i8(u, bcast32x8(a[b].qs + 4 * k))), acc[k]);
        }
    }
    _mm256_storeu_ps(y + 8 * h, _mm256_add_ps(hsum8_ggml_rows(acc), ms));
}

/* Any number of tokens (panel_block), one after another. */
static void panel_dot_q8_1(int64_t n, float *y, size_t y_stride, const void *panel, const void *act, size_t act_stride,
                           const hl_act_aux *aux, size_t aux_stride, int n_tok) {
    (void)aux, (void)aux_stride;
    for (int t = 0; t < n_tok; t++) {
        for (int h = 0; h < 2; h++) q1_panel_half(n, y + (size_t)t * y_stride, panel, h, row_at(act, act_stride, t));
    }
}

/* ----------------------------------------------------------------- table -- */

static const hl_cpu_type_ops avx2_ops[] = {
    {GGML_TYPE_Q4_0, GGML_TYPE_Q8_0, act_q8_0, dot_q4_0, dot_4r_q4_0, dot_4c_q4_0, NULL, pack_q4_0, panel_dot_q4_0,
     hl_act_q8_0_aux, true},
    {GGML_TYPE_Q4_1, GGML_TYPE_Q8_1, act_q8_1, dot_q4_1, dot_4r_q4_1, dot_4c_q4_1, NULL, pack_q4_1, panel_dot_q8_1,
     NULL, true},
    {GGML_TYPE_Q8_0, GGML_TYPE_Q8_0, act_q8_0, dot_q8_0, dot_4r_q8_0, dot_4c_q8_0, NULL, pack_q8_0, panel_dot_i16, NULL,
     true},
    {GGML_TYPE_Q5_0, GGML_TYPE_Q8_0, act_q8_0, dot_q5_0, dot_4r_q5_0, dot_4c_q5_0, NULL, pack_q5_0, panel_dot_i16, NULL,
     true},
    {GGML_TYPE_Q5_1, GGML_TYPE_Q8_1, act_q8_1, dot_q5_1, dot_4r_q5_1, dot_4c_q5_1, NULL, pack_q5_1, panel_dot_q8_1,
     NULL, true},
};

const hl_cpu_type_ops *hl_cpu_ops_avx2_find(uint32_t type) {
    const hl_cpu_type_ops *ops = hl_cpu_ops_in(avx2_ops, sizeof avx2_ops / sizeof avx2_ops[0], type);
    if (!ops) ops = hl_cpu_ops_avx2_f_find(type);
    return ops ? ops : hl_cpu_ops_avx2_k_find(type);
}
