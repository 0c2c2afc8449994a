/* Scalar tile kernels of the tiled attention (flash_kernels.h), written
 * plainly, and the choice of kernels by CPU level. */
#include "backend/cpu/flash_kernels.h"

#include <math.h>

static void load_tile(int32_t n, int32_t n_pad, const hl_half *src, size_t stride, int32_t hd, int32_t hd_pad,
                      float *dst) {
    for (int32_t j = 0; j < n_pad; j++) {
        const hl_half *row = (const hl_half *)((const char *)src + (size_t)j * stride);
        for (int32_t d = 0; d < hd_pad; d++)
            dst[(size_t)j * hd_pad + d] = j < n && d < hd ? hl_fp16_to_fp32(row[d]) : 0.0f;
    }
}

static void load_q(int32_t hd, int32_t hd_pad, const float *src, float scale, float *dst) {
    for (int32_t d = 0; d < hd_pad; d++) dst[d] = d < hd ? hl_fp16_to_fp32(hl_fp32_to_fp16(src[d])) * scale : 0.0f;
}

static void qk(int32_t rows, int32_t nk, int32_t hd_pad, const float *q, const float *k, float *s) {
    for (int32_t r = 0; r < rows; r++)
        for (int32_t j = 0; j < nk; j++) {
            float sum = 0.0f;
            for (int32_t d = 0; d < hd_pad; d++) sum += q[(size_t)r * hd_pad + d] * k[(size_t)j * hd_pad + d];
            s[r * FA_TILE + j] = sum;
        }
}

/* Milakov & Gimelshein 2018, algorithm 3 (online normalizer), one tile at a time. */
static float softmax(int32_t n, float *s, float *m, float *l) {
    float mx = *m;
    for (int32_t j = 0; j < n; j++) mx = s[j] > mx ? s[j] : mx;
    const float c = expf(*m - mx); /* exp(-inf) = 0 on the first tile */
    float sum = 0.0f;
    for (int32_t j = 0; j < n; j++) {
        s[j] = expf(s[j] - mx);
        sum += s[j];
    }
    *l = *l * c + sum;
    *m = mx;
    return c;
}

static void pv(int32_t rows, int32_t nk, int32_t hd_pad, const float *p, const float *v, const float *c, float *o) {
    for (int32_t r = 0; r < rows; r++) {
        float *out = o + (size_t)r * hd_pad;
        for (int32_t d = 0; d < hd_pad; d++) out[d] *= c[r];
        for (int32_t j = 0; j < nk; j++)
            for (int32_t d = 0; d < hd_pad; d++) out[d] += p[r * FA_TILE + j] * v[(size_t)j * hd_pad + d];
    }
}

const hl_flash_kernels hl_flash_kernels_scalar = {
    .load_tile = load_tile,
    .load_q = load_q,
    .qk = qk,
    .softmax = softmax,
    .pv = pv,
};

const hl_flash_kernels *hl_flash_kernels_at(hl_cpu_level level) {
    if (level > hl_cpu_level_best()) return NULL;
    switch (level) {
    case HL_CPU_SCALAR: return &hl_flash_kernels_scalar;
#if defined(__x86_64__) || defined(__i386__)
    case HL_CPU_AVX2: return &hl_flash_kernels_avx2;
    case HL_CPU_AVX512: return &hl_flash_kernels_avx512;
#endif
    default: return NULL;
    }
}
