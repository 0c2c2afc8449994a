/* Scalar row kernels (the oracle for the SIMD levels, see row_kernels.h) and
 * the choice of kernels by CPU level. Plain formulas: libm's expf, sums in
 * double; they agree with llama.cpp to float rounding, not bit for bit. */
#include "backend/cpu/row_kernels.h"
#include "backend/cpu/rope_rotate.h"

#include <math.h>

static void swiglu(int64_t n, float *y, const float *x, const float *g) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] / (1.0f + expf(-x[i])) * g[i];
}

static void gelu(int64_t n, float *x, const hl_half *table) {
    for (int64_t i = 0; i < n; i++)
        x[i] = x[i] <= -10.0f ? 0.0f : x[i] >= 10.0f ? x[i] : hl_fp16_to_fp32(table[hl_fp32_to_fp16(x[i])]);
}

static double softmax_exp(int64_t n, float *s, float max) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        s[i] = expf(s[i] - max);
        sum += s[i];
    }
    return sum;
}

static float dot_f16(int64_t n, const hl_half *x, const hl_half *y, hl_attn_order order) {
    (void)order;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) sum += (double)hl_fp16_to_fp32(x[i]) * hl_fp16_to_fp32(y[i]);
    return (float)sum;
}

static void pv(int64_t n, const hl_half *p, const void *v, size_t v_stride, int32_t hd, float *out,
               hl_attn_order order) {
    (void)order;
    double acc[HL_KERNELS_MAX_HEAD_DIM] = {0};
    for (int64_t j = 0; j < n; j++) {
        const hl_half *row = (const hl_half *)((const char *)v + (size_t)j * v_stride);
        const double pj = hl_fp16_to_fp32(p[j]);
        for (int32_t d = 0; d < hd; d++) acc[d] += pj * hl_fp16_to_fp32(row[d]);
    }
    for (int32_t d = 0; d < hd; d++) out[d] = (float)acc[d];
}

const hl_cpu_kernels hl_cpu_kernels_scalar = {
    .swiglu = swiglu,
    .gelu = gelu,
    .softmax_exp = softmax_exp,
    .dot_f16 = dot_f16,
    .pv = pv,
    .rope_rotate = hl_rope_rotate,
};

const hl_cpu_kernels *hl_cpu_kernels_at(hl_cpu_level level) {
    if (level > hl_cpu_level_best()) return NULL;
    switch (level) {
    case HL_CPU_SCALAR: return &hl_cpu_kernels_scalar;
#if defined(__x86_64__) || defined(__i386__)
    case HL_CPU_AVX2:
    case HL_CPU_AVX512: return &hl_cpu_kernels_avx2; /* no AVX-512 row kernels of their own */
#endif
    default: return NULL;
    }
}

const hl_cpu_kernels *hl_cpu_kernels_get(void) { return hl_cpu_kernels_at(hl_cpu_level_best()); }
