/* The SIMD tile kernels of the tiled attention (flash_kernels.h), written
 * once over a float vector of FV_W lanes: an instruction set's
 * flash_kernels_<isa>.c (x86_avx2/: 8 lanes, x86_avx512/: 16) defines FV,
 * FV_W and the fv_* operations, then includes this file, which defines the
 * static functions of its table. FV_W
 * divides FA_KEY_PAD and FA_HD_ALIGN, so every loop runs whole vectors.
 *
 * qk: 2 query rows x 4 keys per step, 8 accumulators, the 4 K rows loaded
 * once for both queries; each accumulator folded to 8 lanes and the eight
 * reduced together by horizontal adds. pv: 2 rows x FA_HD_ALIGN output
 * floats kept in registers over the whole tile, one broadcast of p per row
 * and key. */
#ifndef HEARTH_BACKEND_CPU_FLASH_SIMD_H
#define HEARTH_BACKEND_CPU_FLASH_SIMD_H

#include <math.h>

#include "backend/cpu/flash_kernels.h"

#define PV_VECS (FA_HD_ALIGN / FV_W)

static void load_tile(int32_t n, int32_t n_pad, const hl_half *src, size_t stride, int32_t hd, int32_t hd_pad,
                      float *dst) {
    for (int32_t j = 0; j < n_pad; j++) {
        float *out = dst + (size_t)j * hd_pad;
        int32_t d = 0;
        if (j < n) {
            const hl_half *row = (const hl_half *)((const char *)src + (size_t)j * stride);
            for (; d + FV_W <= hd; d += FV_W) fv_store(out + d, fv_load_f16(row + d));
            for (; d < hd; d++) out[d] = hl_fp16_to_fp32(row[d]);
        }
        for (; d < hd_pad; d++) out[d] = 0.0f;
    }
}

static void load_q(int32_t hd, int32_t hd_pad, const float *src, float scale, float *dst) {
    const FV vs = fv_set1(scale);
    int32_t d = 0;
    for (; d + FV_W <= hd; d += FV_W) fv_store(dst + d, fv_mul(fv_round_f16(fv_load(src + d)), vs));
    for (; d < hd; d++) dst[d] = hl_fp16_to_fp32(hl_fp32_to_fp16(src[d])) * scale;
    for (; d < hd_pad; d++) dst[d] = 0.0f;
}

/* [sum a, sum b, sum c, sum d] of 8-lane vectors */
static inline __m128 hsum4_8(__m256 a, __m256 b, __m256 c, __m256 d) {
    const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

static void qk(int32_t rows, int32_t nk, int32_t hd_pad, const float *q, const float *k, float *s) {
    for (int32_t r = 0; r < rows; r += 2) {
        const float *q0 = q + (size_t)r * hd_pad, *q1 = q0 + hd_pad;
        for (int32_t j = 0; j < nk; j += 4) {
            const float *k0 = k + (size_t)j * hd_pad;
            FV a[8];
            for (int i = 0; i < 8; i++) a[i] = fv_zero();
            for (int32_t d = 0; d < hd_pad; d += FV_W) {
                const FV x0 = fv_load(q0 + d), x1 = fv_load(q1 + d);
                for (int i = 0; i < 4; i++) {
                    const FV y = fv_load(k0 + (size_t)i * hd_pad + d);
                    a[i] = fv_fma(x0, y, a[i]);
                    a[4 + i] = fv_fma(x1, y, a[4 + i]);
                }
            }
            _mm_storeu_ps(s + r * FA_TILE + j, hsum4_8(fv_fold8(a[0]), fv_fold8(a[1]), fv_fold8(a[2]), fv_fold8(a[3])));
            _mm_storeu_ps(s + (r + 1) * FA_TILE + j,
                          hsum4_8(fv_fold8(a[4]), fv_fold8(a[5]), fv_fold8(a[6]), fv_fold8(a[7])));
        }
    }
}

/* Milakov & Gimelshein 2018, algorithm 3 (online normalizer), one tile at a time. */
static float softmax(int32_t n, float *s, float *m, float *l) {
    FV vmax = fv_set1(*m);
    for (int32_t j = 0; j < n; j += FV_W) vmax = fv_max(vmax, fv_load(s + j));
    const float mx = fv_hmax(vmax);
    const float c = expf(*m - mx); /* exp(-inf) = 0 on the first tile */
    const FV vm = fv_set1(mx);
    FV sum = fv_zero();
    for (int32_t j = 0; j < n; j += FV_W) {
        const FV e = fv_exp(fv_sub(fv_load(s + j), vm));
        fv_store(s + j, e);
        sum = fv_add(sum, e);
    }
    *l = *l * c + fv_hsum(sum);
    *m = mx;
    return c;
}

static void pv(int32_t rows, int32_t nk, int32_t hd_pad, const float *p, const float *v, const float *c, float *o) {
    for (int32_t r = 0; r < rows; r += 2) {
        const float *p0 = p + r * FA_TILE, *p1 = p0 + FA_TILE;
        float *o0 = o + (size_t)r * hd_pad, *o1 = o0 + hd_pad;
        const FV c0 = fv_set1(c[r]), c1 = fv_set1(c[r + 1]);
        for (int32_t d0 = 0; d0 < hd_pad; d0 += FA_HD_ALIGN) {
            FV a0[PV_VECS], a1[PV_VECS];
            for (int i = 0; i < PV_VECS; i++) {
                a0[i] = fv_mul(fv_load(o0 + d0 + i * FV_W), c0);
                a1[i] = fv_mul(fv_load(o1 + d0 + i * FV_W), c1);
            }
            for (int32_t j = 0; j < nk; j++) {
                const FV x0 = fv_set1(p0[j]), x1 = fv_set1(p1[j]);
                const float *vj = v + (size_t)j * hd_pad + d0;
                for (int i = 0; i < PV_VECS; i++) {
                    const FV y = fv_load(vj + i * FV_W);
                    a0[i] = fv_fma(x0, y, a0[i]);
                    a1[i] = fv_fma(x1, y, a1[i]);
                }
            }
            for (int i = 0; i < PV_VECS; i++) {
                fv_store(o0 + d0 + i * FV_W, a0[i]);
                fv_store(o1 + d0 + i * FV_W, a1[i]);
            }
        }
    }
}

#define FLASH_SIMD_TABLE                                                                                               \
    { .load_tile = load_tile, .load_q = load_q, .qk = qk, .softmax = softmax, .pv = pv }

#endif
