/* AVX2 + FMA + F16C kernels for float weights (F32, F16, BF16): activation
 * conversion and dot products, the float part of the AVX2 table
 * (vec_dot_avx2.c). Compiled with -mavx2 -mfma -mf16c and called only after
 * hl_cpu_level_best() says the CPU has them.
 *
 * Like the rest of the level they reproduce llama.cpp's AVX-512 build
 * (vec_dot.h), whose 16-lane registers are pairs of 8-lane ones here
 * (simd16_avx2.h):
 * - one token: ggml's vec_dot (ggml-cpu/vec.cpp), F32 and F16 in its
 *   AVX-512 layout; BF16 in its AVX2 layout (the AVX-512 build uses
 *   AVX512-BF16's vdpbf16ps there, whose rounding this does not reproduce);
 * - batches, the kernels of hl_cpu_type_ops.batch (from 2 tokens, see
 *   hl_cpu_batch_applies): llamafile's tinyBLAS<16, __m512>
 *   (ggml-cpu/llamafile/sgemm.cpp), which llama.cpp runs for F32 and F16
 *   weights from 2 tokens on: per output ONE 16-lane accumulator, acc =
 *   fma(w[l .. l+15], a[l .. l+15], acc) for l = 0, 16, 32, ..., then
 *   _mm512_reduce_add_ps (v16_reduce). Its register tiles only choose which
 *   outputs are computed together. Where n % 16 != 0 tinyBLAS declines and
 *   ggml's vec_dot runs (hl_cpu_batch_applies says no). BF16 gets the same
 *   order (what tinyBLAS runs on AVX-512 CPUs without AVX512-BF16). The
 *   activations of a batch are converted once per matmul to F16 (BF16), as
 *   llama.cpp converts them, and held as the floats those values are, so
 *   that no kernel converts them again; each row split in the halves that
 *   the two 8-lane parts of the 16-lane accumulator read (act_split), so
 *   that every load reads 32 contiguous bytes.
 * (llama.cpp's AVX2-only build runs tinyBLAS<8, __m256> instead: 8 lanes,
 * another order, which this level does not follow; the panel kernels below
 * use its 4 x 3 register tile, one 8-lane half of the results at a time.) */
#include <immintrin.h>

#include "backend/cpu/x86_avx2/simd16_avx2.h"
#include "backend/cpu/vec_dot.h"

/* ------------------------------------------------ activation conversion -- */

/* Same bytes as hl_fp32_to_fp16 except for NaN payloads. */
static void act_f16(const float *x, void *dst, int64_t n) {
    hl_half *y = dst;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(y + i), h);
    }
    for (; i < n; i++) y[i] = hl_fp32_to_fp16(x[i]);
}

/* hl_fp32_to_bf16 on 8 lanes: round to nearest even, NaN -> quiet NaN;
 * the BF16 bits in the low half of each lane. */
static inline __m256i bf16_round8(__m256 x) {
    const __m256i u = _mm256_castps_si256(x);
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff))),
                                              16);
    const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                              _mm256_set1_epi32(0x7f800000));
    return _mm256_blendv_epi8(rounded, quiet, is_nan);
}

static void act_bf16(const float *x, void *dst, int64_t n) {
    hl_bf16 *y = dst;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i r = bf16_round8(_mm256_loadu_ps(x + i));
        /* packus works within 128-bit lanes; permute restores element order */
        const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), _MM_SHUFFLE(3, 1, 2, 0));
        _mm_storeu_si128((__m128i *)(y + i), _mm256_castsi256_si128(packed));
    }
    for (; i < n; i++) y[i] = hl_fp32_to_bf16(x[i]);
}

/* The batch activations (hl_cpu_type_ops.batch; n % 16 == 0, see
 * hl_cpu_batch_applies): x rounded to F16 (BF16) as act_f16 (act_bf16)
 * rounds it, F32 as it is, stored as floats (exact) in the split layout
 * that the batch kernels read: per step j of 16 elements, elements 16j ..
 * 16j+7 at 8j (the row's first half) and 16j+8 .. 16j+15 at n/2 + 8j (its
 * second), so that each of the two 8-lane accumulators of a tinyBLAS<16>
 * result (below) reads contiguous floats. */
static ALWAYS_INLINE void act_split(uint32_t type, const float *x, void *dst, int64_t n) {
    float *y = dst;
    for (int64_t j = 0; j < n / 16; j++)
        for (int h = 0; h < 2; h++) {
            __m256 v = _mm256_loadu_ps(x + 16 * j + 8 * h);
            if (type == GGML_TYPE_F16) v = _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
            if (type == GGML_TYPE_BF16) v = _mm256_castsi256_ps(_mm256_slli_epi32(bf16_round8(v), 16));
            _mm256_storeu_ps(y + h * (n / 2) + 8 * j, v);
        }
}

static void act_f32_split(const float *x, void *dst, int64_t n) { act_split(GGML_TYPE_F32, x, dst, n); }
static void act_f16_split(const float *x, void *dst, int64_t n) { act_split(GGML_TYPE_F16, x, dst, n); }
static void act_bf16_split(const float *x, void *dst, int64_t n) { act_split(GGML_TYPE_BF16, x, dst, n); }

/* ------------------------------------------------ one token: ggml's order -- */

/* F32 and F16 in ggml's AVX-512 order (simd16_avx2.h). */
static void dot_f32(int64_t n, float *s, const void *w_row, const void *act_row) {
    *s = ggml_dot_f32(n, w_row, act_row);
}

/* F16 decode runs row by row (four rows of ggml's AVX-512 layout would need
 * 32 accumulators): one stream per thread, which runs faster prefetching
 * F16_AHEAD elements (1 KiB) ahead, into the next row at the end of one
 * (bench/results/2026-11-27-avx2-panel-blocks-cpu.md,
 * 2026-12-02-kernel-comment-figures-cpu.md). */
#define F16_AHEAD 512
static void dot_f16(int64_t n, float *s, const void *w_row, const void *act_row) {
    *s = ggml_dot_f16_ahead(n, w_row, act_row, F16_AHEAD);
}

/* Elements i..i+7 of a BF16 row as floats. */
static inline __m256 load8_bf16(const hl_bf16 *row, int64_t i) {
    const __m128i h = _mm_loadu_si128((const __m128i *)(row + i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* BF16: four 8-lane accumulators, the tail of n % 8 scalar; s[r] for rows r
 * < nr (1 or 4, a constant after inlining) of rows w_stride bytes apart.
 * llama.cpp's AVX-512 build uses AVX512-BF16 dpbf16 here, whose rounding of
 * pairs this does not reproduce. */
static ALWAYS_INLINE void bf16_rows(int nr, int64_t n, float *s, const void *w, size_t w_stride, const void *act_row) {
    const hl_bf16 *a = act_row;
    __m256 acc[4][4];
    for (int r = 0; r < nr; r++)
        for (int k = 0; k < 4; k++) acc[r][k] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        for (int k = 0; k < 4; k++) {
            const __m256 y = load8_bf16(a, i + 8 * k);
            for (int r = 0; r < nr; r++)
                acc[r][k] = _mm256_fmadd_ps(load8_bf16(row_at(w, w_stride, r), i + 8 * k), y, acc[r][k]);
        }
    }
    for (int r = 0; r < nr; r++) {
        const hl_bf16 *x = row_at(w, w_stride, r);
        int64_t j = i;
        for (; j + 8 <= n; j += 8) acc[r][0] = _mm256_fmadd_ps(load8_bf16(x, j), load8_bf16(a, j), acc[r][0]);
        float sum = hsum8_ggml(_mm256_add_ps(_mm256_add_ps(acc[r][0], acc[r][1]), _mm256_add_ps(acc[r][2], acc[r][3])));
        for (; j < n; j++) sum += hl_bf16_to_fp32(x[j]) * hl_bf16_to_fp32(a[j]);
        s[r] = sum;
    }
}

static void dot_bf16(int64_t n, float *s, const void *w_row, const void *act_row) {
    bf16_rows(1, n, s, w_row, 0, act_row);
}

/* Four rows far apart (vec_dot.h) for decode. */
static void dot_4r_bf16(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {
    bf16_rows(4, n, s, w, w_stride, act_row);
}

/* --------------------------------------------- batches: tinyBLAS order -- */

/* Elements i .. i+15 of a row of `type` as floats. */
static ALWAYS_INLINE v16 load16(uint32_t type, const void *row, int64_t i) {
    if (type == GGML_TYPE_F32) return v16_load((const float *)row + i);
    if (type == GGML_TYPE_F16) return v16_load_f16((const hl_half *)row + i);
    return (v16){load8_bf16(row, i), load8_bf16(row, i + 8)};
}

/* s[r * nc + c] = dot(weight row r, activation row c) for r < nr, c < nc
 * (nr * nc <= 4; constants after inlining), each in tinyBLAS's order;
 * n % 16 == 0, the activations split (act_split). */
static ALWAYS_INLINE void tb_tile(uint32_t type, int nr, int nc, int64_t n, float *s, const void *w, size_t w_stride,
                                  const void *act, size_t act_stride) {
    v16 acc[4] = {v16_zero(), v16_zero(), v16_zero(), v16_zero()};
    for (int64_t i = 0; i < n; i += 16) {
        v16 a[4];
        for (int c = 0; c < nc; c++) {
            const float *row = row_at(act, act_stride, c);
            a[c] = (v16){_mm256_loadu_ps(row + i / 2), _mm256_loadu_ps(row + n / 2 + i / 2)};
        }
        for (int r = 0; r < nr; r++) {
            const v16 x = load16(type, row_at(w, w_stride, r), i);
            for (int c = 0; c < nc; c++) acc[r * nc + c] = v16_fma(x, a[c], acc[r * nc + c]);
        }
    }
    for (int k = 0; k < nr * nc; k++) s[k] = v16_reduce(acc[k]);
}

/* Panels (vec_dot.h) hold each weight type's values as floats, or F16 rows
 * as their halves on AMD Zen (hl_cpu_features.zen): `pt`, the panel's
 * element type, is GGML_TYPE_F32 or GGML_TYPE_F16. F16 as floats, converted
 * once per panel and block of tokens, leave the kernel FMAs and loads only:
 * on Intel cores vcvtph2ps from memory takes one of the two FMA ports (4
 * conversions per 12 FMAs: at most 75% of their peak), and the panel
 * kernel runs faster on floats
 * (bench/results/2026-11-28-avx2-q8_0-f16-prompt-cpu.md). On Zen the
 * halves win, the kernel and the prompt alike, the pack writing half the
 * bytes (bench/results/2026-11-28-avx2-f16-halves-zen3-cpu.md). */
static ALWAYS_INLINE size_t pe_size(uint32_t pt) { return pt == GGML_TYPE_F16 ? 2 : 4; }

/* The panel kernel's blocking: tokens TOK_BLOCK at a time, whose
 * accumulators wait in a 48 KiB stack buffer, and each half of the rows
 * k_block(pt) elements (1 KiB) at a time, so that the panel's block (16
 * rows of 1 KiB, contiguous: rows a power of two apart would fall in the
 * same few L1 sets) and a tile's activations (3 x 1 or 2 KiB) stay in L1
 * while the block's tokens pass: the panel comes from L2 once per
 * TOK_BLOCK tokens instead of once per 3. */
#define TOK_BLOCK 48
#define K_BLOCK_BYTES 1024
static ALWAYS_INLINE int64_t k_block(uint32_t pt) { return K_BLOCK_BYTES / (int64_t)pe_size(pt); }

/* The panel split as the activations are (act_split), in blocks: per half h
 * and per k_block elements from k0 of it, the 16 rows' len elements one
 * row after another, element h * 8n + 16 * k0 of the panel. */
static ALWAYS_INLINE size_t block_at(int64_t n, int h, int64_t k0) {
    return (size_t)h * 8 * (size_t)n + 16 * (size_t)k0;
}

/* Each row in order, prefetching PACK_AHEAD bytes ahead (the panel's rows
 * are one stream in the matrix, read from memory once per block of tokens;
 * the prefetchers alone left most of a row's misses exposed). */
#define PACK_AHEAD 1024
static ALWAYS_INLINE void pack_p(uint32_t type, uint32_t pt, int64_t n, void *panel, const void *w, size_t w_stride) {
    const size_t esize = hl_ggml_type_get(type)->type_size, pe = pe_size(pt);
    const int64_t kb = k_block(pt);
    for (int r = 0; r < HL_PANEL_ROWS; r++) {
        const uint8_t *row = row_at(w, w_stride, r);
        for (int64_t k0 = 0; k0 < n / 2; k0 += kb) {
            const int64_t len = n / 2 - k0 < kb ? n / 2 - k0 : kb;
            uint8_t *lo = (uint8_t *)panel + (block_at(n, 0, k0) + (size_t)r * len) * pe;
            uint8_t *hi = (uint8_t *)panel + (block_at(n, 1, k0) + (size_t)r * len) * pe;
            for (int64_t i = 0; i < len; i += 8) {
                _mm_prefetch((const char *)row + 2 * (k0 + i) * esize + PACK_AHEAD, _MM_HINT_T0);
                if (pt == GGML_TYPE_F16) { /* type F16 too: the halves as they are */
                    const hl_half *x = (const hl_half *)row + 2 * (k0 + i);
                    _mm_storeu_si128((__m128i *)(lo + i * pe), _mm_loadu_si128((const __m128i *)x));
                    _mm_storeu_si128((__m128i *)(hi + i * pe), _mm_loadu_si128((const __m128i *)(x + 8)));
                } else {
                    const v16 v = load16(type, row, 2 * (k0 + i));
                    _mm256_storeu_ps((float *)(lo + i * pe), v.lo);
                    _mm256_storeu_ps((float *)(hi + i * pe), v.hi);
                }
            }
        }
    }
}

/* Panel elements i .. i+7 from w as floats. */
static ALWAYS_INLINE __m256 panel_load8(uint32_t pt, const void *w, size_t i) {
    if (pt == GGML_TYPE_F16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const hl_half *)w + i)));
    return _mm256_loadu_ps((const float *)w + i);
}

/* Rows r0 .. r0+3 of the panel from element k0 of half h, len elements,
 * against the nc tokens a[c] (1 to 3, a constant after inlining): continue
 * the 8-lane accumulators acc[c][h][r0 + r] of elements 16j + 8h .. 16j +
 * 8h + 7, added in order of j (a chain paused in memory keeps its bits);
 * the first block starts them at zero. 12 accumulators in registers, 7
 * loads per 12 FMAs, every load 32 contiguous bytes (16 for halves)
 * (llamafile's tinyBLAS<8> tile on AVX2). */
static ALWAYS_INLINE void tile_block(uint32_t pt, int nc, int64_t len, const void *w, const float *const a[3],
                                     __m256 (*acc)[2][HL_PANEL_ROWS], int h, int r0, bool first) {
    __m256 s[4][3];
    if (first) {
        __m256 zero = _mm256_setzero_ps();
        __asm__ volatile(""
                         : "+x"(zero)); /* else GCC keeps a zero register through the loop and spills an accumulator */
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < nc; c++) s[r][c] = zero;
    } else {
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < nc; c++) s[r][c] = acc[c][h][r0 + r];
    }
    for (int64_t i = 0; i < len; i += 8) {
        __m256 x[3];
        for (int c = 0; c < nc; c++) {
            x[c] = _mm256_loadu_ps(a[c] + i);
            __asm__("" : "+x"(x[c])); /* one load for 4 FMAs: keeps GCC from folding it into each */
        }
        for (int r = 0; r < 4; r++) {
            __m256 v = panel_load8(pt, w, (size_t)r * len + i);
            __asm__("" : "+x"(v)); /* and one for nc */
            for (int c = 0; c < nc; c++) s[r][c] = _mm256_fmadd_ps(v, x[c], s[r][c]);
        }
    }
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < nc; c++) acc[c][h][r0 + r] = s[r][c];
}

/* The 16 rows' block (w, from element k0 of half h) with the nc tokens
 * from act. */
static ALWAYS_INLINE void block_tokens(uint32_t pt, int nc, int64_t n, int64_t k0, int64_t len, const void *w,
                                       const void *act, size_t act_stride, __m256 (*acc)[2][HL_PANEL_ROWS], int h) {
    const float *a[3];
    for (int c = 0; c < nc; c++) a[c] = (const float *)row_at(act, act_stride, c) + h * (n / 2) + k0;
    for (int r0 = 0; r0 < HL_PANEL_ROWS; r0 += 4)
        tile_block(pt, nc, len, (const uint8_t *)w + (size_t)r0 * (size_t)len * pe_size(pt), a, acc, h, r0, k0 == 0);
}

/* Any number of tokens (panel_block: a block of the batch, matmul.c),
 * per block of TOK_BLOCK in tiles of 3 (the rest as 2 + 2, 2 or 1); per
 * result the two halves' accumulators added and summed in v16_reduce's
 * order at the end. The weight type no longer matters (the panel holds
 * floats or halves). */
static ALWAYS_INLINE void panel_dot_p(uint32_t pt, int64_t n, float *y, size_t y_stride, const void *panel,
                                      const void *act, size_t act_stride, int n_tok) {
    const int64_t kb = k_block(pt);
    __m256 acc[TOK_BLOCK][2][HL_PANEL_ROWS];
    for (int t0 = 0; t0 < n_tok; t0 += TOK_BLOCK) {
        const int nt = n_tok - t0 < TOK_BLOCK ? n_tok - t0 : TOK_BLOCK;
        const int n3 = nt % 3 == 1 && nt > 3 ? nt - 4 : nt - nt % 3; /* tokens in tiles of 3 */
        const void *a = row_at(act, act_stride, t0);
        for (int h = 0; h < 2; h++)
            for (int64_t k0 = 0; k0 < n / 2; k0 += kb) {
                const int64_t len = n / 2 - k0 < kb ? n / 2 - k0 : kb;
                const void *w = (const uint8_t *)panel + block_at(n, h, k0) * pe_size(pt);
                int c = 0;
                for (; c < n3; c += 3)
                    block_tokens(pt, 3, n, k0, len, w, row_at(a, act_stride, c), act_stride, acc + c, h);
                for (; c + 2 <= nt; c += 2)
                    block_tokens(pt, 2, n, k0, len, w, row_at(a, act_stride, c), act_stride, acc + c, h);
                if (c < nt) block_tokens(pt, 1, n, k0, len, w, row_at(a, act_stride, c), act_stride, acc + c, h);
            }
        for (int t = 0; t < nt; t++)
            for (int r = 0; r < HL_PANEL_ROWS; r++)
                y[(size_t)(t0 + t) * y_stride + r] = hsum8_ggml(_mm256_add_ps(acc[t][0][r], acc[t][1][r]));
    }
}

/* Panels of floats for every type (HL_FLOAT_BATCH_KERNELS' names), and of
 * halves for F16 (pack_f16_halves, panel_dot_f16_halves). The weight type
 * matters to the pack only. */
static ALWAYS_INLINE void pack_t(uint32_t type, int64_t n, void *panel, const void *w, size_t w_stride) {
    pack_p(type, GGML_TYPE_F32, n, panel, w, w_stride);
}

static ALWAYS_INLINE void panel_dot_t(uint32_t type, int64_t n, float *y, size_t y_stride, const void *panel,
                                      const void *act, size_t act_stride, int n_tok) {
    (void)type;
    panel_dot_p(GGML_TYPE_F32, n, y, y_stride, panel, act, act_stride, n_tok);
}

static ALWAYS_INLINE void pack_halves_t(uint32_t type, int64_t n, void *panel, const void *w, size_t w_stride) {
    pack_p(type, GGML_TYPE_F16, n, panel, w, w_stride);
}

static ALWAYS_INLINE void panel_dot_halves_t(uint32_t type, int64_t n, float *y, size_t y_stride, const void *panel,
                                             const void *act, size_t act_stride, int n_tok) {
    (void)type;
    panel_dot_p(GGML_TYPE_F16, n, y, y_stride, panel, act, act_stride, n_tok);
}

HL_PANEL_ENTRIES(GGML_TYPE_F16, f16_halves, pack_halves_t, panel_dot_halves_t)
HL_FLOAT_BATCH_KERNELS(GGML_TYPE_F32, f32)
HL_FLOAT_BATCH_KERNELS(GGML_TYPE_F16, f16)
HL_FLOAT_BATCH_KERNELS(GGML_TYPE_BF16, bf16)

/* ----------------------------------------------------------------- table -- */

static const hl_cpu_type_ops avx2_f_batch_ops[] = {
    {GGML_TYPE_F32, GGML_TYPE_F32, act_f32_split, tb_dot_f32, tb_4r_f32, tb_4c_f32, NULL, pack_f32, panel_dot_f32, NULL,
     true},
    {GGML_TYPE_F16, GGML_TYPE_F32, act_f16_split, tb_dot_f16, tb_4r_f16, tb_4c_f16, NULL, pack_f16, panel_dot_f16, NULL,
     true},
    {GGML_TYPE_BF16, GGML_TYPE_F32, act_bf16_split, tb_dot_bf16, tb_4r_bf16, tb_4c_bf16, NULL, pack_bf16,
     panel_dot_bf16, NULL, true},
};

static const hl_cpu_type_ops avx2_f16_halves_batch_ops = {
    GGML_TYPE_F16, GGML_TYPE_F32,   act_f16_split,        tb_dot_f16, tb_4r_f16, tb_4c_f16,
    NULL,          pack_f16_halves, panel_dot_f16_halves, NULL,       true,
};

static const hl_cpu_type_ops avx2_f_ops[] = {
    {GGML_TYPE_F32, GGML_TYPE_F32, hl_f32_from_float, dot_f32, NULL, NULL, &avx2_f_batch_ops[0], NULL, NULL, NULL,
     false},
    {GGML_TYPE_F16, GGML_TYPE_F16, act_f16, dot_f16, NULL, NULL, &avx2_f_batch_ops[1], NULL, NULL, NULL, false},
    {GGML_TYPE_BF16, GGML_TYPE_BF16, act_bf16, dot_bf16, dot_4r_bf16, NULL, &avx2_f_batch_ops[2], NULL, NULL, NULL,
     false},
};

/* F16 on AMD Zen: the same but for panels of halves. */
static const hl_cpu_type_ops avx2_f16_zen_ops = {
    GGML_TYPE_F16, GGML_TYPE_F16, act_f16, dot_f16, NULL, NULL, &avx2_f16_halves_batch_ops, NULL, NULL, NULL, false,
};

const hl_cpu_type_ops *hl_cpu_ops_avx2_f_find(uint32_t type) {
    if (type == GGML_TYPE_F16 && hl_cpu_features_get().zen) return &avx2_f16_zen_ops;
    return hl_cpu_ops_in(avx2_f_ops, sizeof avx2_f_ops / sizeof avx2_f_ops[0], type);
}

const hl_cpu_type_ops *hl_cpu_ops_avx2_f16_batch(bool halves) {
    return halves ? &avx2_f16_halves_batch_ops : &avx2_f_batch_ops[1];
}
