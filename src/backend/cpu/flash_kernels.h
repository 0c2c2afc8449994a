/* Tile kernels of the CPU's tiled attention (flash_attn.c, the path
 * --flash-attn on runs): FlashAttention's blocks (Dao et al. 2022,
 * arXiv:2205.14135) with the online softmax of Milakov & Gimelshein 2018
 * (arXiv:1805.02867), in F32. A tile is FA_TILE keys; a task's query rows
 * (token, head) are scaled queries of hd_pad floats, zero past the head
 * size, an even number of them. K and V tiles are converted from the F16
 * cache once and then read by every row. One table per level, as
 * row_kernels.h: the scalar one is plain C; the SIMD ones
 * (x86_avx2/flash_kernels_avx2.c, x86_avx512/flash_kernels_avx512.c) are
 * one text, flash_simd.h, compiled per level. Their sums differ from the
 * scalar ones' by float rounding only. */
#ifndef HEARTH_BACKEND_CPU_FLASH_KERNELS_H
#define HEARTH_BACKEND_CPU_FLASH_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "backend/cpu/device.h"
#include "quant/quant.h"

#define FA_TILE 64     /* keys per tile (a multiple of FA_KEY_PAD) */
#define FA_KEY_PAD 16  /* a tile's keys are padded to a multiple of this many */
#define FA_ROWS 64     /* most query rows (token, head) of one task; even */
#define FA_HD_ALIGN 32 /* rows are padded with zeros to a multiple of this many floats */

typedef struct hl_flash_kernels {
    /* dst[j][d] = src_j[d] as floats for j < n, d < hd, src_j the F16 row at
     * src + j * stride bytes; zeros for hd <= d < hd_pad and for the rows
     * n <= j < n_pad. dst is [n_pad][hd_pad]. */
    void (*load_tile)(int32_t n, int32_t n_pad, const hl_half *src, size_t stride, int32_t hd, int32_t hd_pad,
                      float *dst);
    /* dst[d] = f16(src[d]) * scale for d < hd (the query rounded to F16,
     * as llama.cpp's flash attention converts Q to K's type, then scaled),
     * zeros for hd <= d < hd_pad. Every level gives the same bits. */
    void (*load_q)(int32_t hd, int32_t hd_pad, const float *src, float scale, float *dst);
    /* s[r * FA_TILE + j] = q_r . k_j for r < rows (even), j < nk (a
     * multiple of FA_KEY_PAD); q [rows][hd_pad], k [nk][hd_pad]. */
    void (*qk)(int32_t rows, int32_t nk, int32_t hd_pad, const float *q, const float *k, float *s);
    /* One row's online-softmax step over a tile: m' = max(*m, max_j s[j]),
     * s[j] = exp(s[j] - m') in place for j < n (a multiple of FA_KEY_PAD;
     * -inf gives 0), *l = *l * exp(*m - m') + sum_j s[j], *m = m'; returns
     * the factor exp(*m - m') the row's output must be scaled by (0 while
     * *m was -inf). At least one s[j] must be finite. */
    float (*softmax)(int32_t n, float *s, float *m, float *l);
    /* o_r = c[r] * o_r + sum_{j < nk} p[r * FA_TILE + j] * v_j for r < rows
     * (even); o [rows][hd_pad], v [nk][hd_pad], hd_pad a multiple of
     * FA_HD_ALIGN. */
    void (*pv)(int32_t rows, int32_t nk, int32_t hd_pad, const float *p, const float *v, const float *c, float *o);
} hl_flash_kernels;

/* The kernels of one level; NULL if this CPU or build lacks it. */
const hl_flash_kernels *hl_flash_kernels_at(hl_cpu_level level);

extern const hl_flash_kernels hl_flash_kernels_scalar;
extern const hl_flash_kernels hl_flash_kernels_avx2;
extern const hl_flash_kernels hl_flash_kernels_avx512;

#endif
