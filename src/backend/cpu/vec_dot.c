/* Scalar activation quantizers and dot-product kernels (the oracle the SIMD
 * levels are tested against) and the choice of kernels by CPU level. The
 * quantizers write exactly llama.cpp's bytes; the dot products follow ggml's
 * generic kernels (ggml-cpu/quants.c, ggml_vec_dot_*_generic): integer sums
 * inside a block, one float multiply-add per block, in a plain order that
 * differs from the SIMD kernels' only by float rounding. */
#include "backend/cpu/vec_dot.h"

#include <math.h>

/* ------------------------------------------------ activation quantizers -- */

/* One block of llama.cpp's CPU quantizer (ggml-cpu/arch/x86/quants.c,
 * quantize_row_q8_0): id = 127 / amax rather than 1 / d, and
 * _mm256_round_ps(.., _MM_ROUND_NEAREST), i.e. halves to even, where the
 * reference quantizer uses roundf. Both choices change some quants by one,
 * and every later float in the model with them. nearbyintf rounds halves to
 * even in the default rounding mode. Returns d; *sum receives sum(qs). */
static float act_q8_block(const float x[HL_QK], int8_t qs[HL_QK], int32_t *sum) {
    float amax = 0.0f;
    for (int j = 0; j < HL_QK; j++) amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    *sum = 0;
    for (int j = 0; j < HL_QK; j++) {
        qs[j] = (int8_t)nearbyintf(x[j] * id); /* |x * id| <= 127 */
        *sum += qs[j];
    }
    return amax / 127.0f;
}

void hl_act_q8_0_from_float(const float *x, void *dst, int64_t n) {
    block_q8_0 *y = dst;
    int32_t sum;
    for (int64_t b = 0; b < n / HL_QK; b++, x += HL_QK) y[b].d = hl_fp32_to_fp16(act_q8_block(x, y[b].qs, &sum));
}

void hl_act_q8_1_from_float(const float *x, void *dst, int64_t n) {
    block_q8_1 *y = dst;
    int32_t sum;
    for (int64_t b = 0; b < n / HL_QK; b++, x += HL_QK) {
        const float d = act_q8_block(x, y[b].qs, &sum);
        y[b].d = hl_fp32_to_fp16(d);
        y[b].s = hl_fp32_to_fp16(d * (float)sum);
    }
}

void hl_act_q8_0_aux(int64_t n, hl_act_aux *aux, const void *act_row) {
    const block_q8_0 *a = act_row;
    for (int64_t b = 0; b < n / HL_QK; b++) {
        aux[b].d = hl_fp16_to_fp32(a[b].d);
        aux[b].sum = 0;
        for (int k = 0; k < 8; k++) {
            const int32_t quad = a[b].qs[4 * k] + a[b].qs[4 * k + 1] + a[b].qs[4 * k + 2] + a[b].qs[4 * k + 3];
            aux[b].quad128[k] = -128 * quad;
            aux[b].sum += quad;
        }
    }
}

/* ------------------------------------------------------- dot products -- */

static void dot_f32(int64_t n, float *s, const void *w_row, const void *act_row) {
    const float *w = w_row, *a = act_row;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) sum += (double)w[i] * a[i];
    *s = (float)sum;
}

static void dot_f16(int64_t n, float *s, const void *w_row, const void *act_row) {
    const hl_half *w = w_row, *a = act_row;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) sum += (double)hl_fp16_to_fp32(w[i]) * hl_fp16_to_fp32(a[i]);
    *s = (float)sum;
}

static void dot_bf16(int64_t n, float *s, const void *w_row, const void *act_row) {
    const hl_bf16 *w = w_row, *a = act_row;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) sum += (double)hl_bf16_to_fp32(w[i]) * hl_bf16_to_fp32(a[i]);
    *s = (float)sum;
}

/* sum_i d_w*(q_w[i] - 8) * d_a*q_a[i] */
static void dot_q4_0_q8_0(int64_t n, float *s, const void *w_row, const void *act_row) {
    const block_q4_0 *w = w_row;
    const block_q8_0 *a = act_row;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / HL_QK; b++) {
        int32_t sumi = 0;
        for (int j = 0; j < HL_QK / 2; j++) {
            sumi += ((w[b].qs[j] & 0x0f) - 8) * a[b].qs[j];
            sumi += ((w[b].qs[j] >> 4) - 8) * a[b].qs[j + HL_QK / 2];
        }
        sum += hl_fp16_to_fp32(w[b].d) * hl_fp16_to_fp32(a[b].d) * (float)sumi;
    }
    *s = sum;
}

/* sum_i (d_w*q_w[i] + m) * d_a*q_a[i] = d_w*d_a * sum_i q_w[i]*q_a[i] + m * s_a */
static void dot_q4_1_q8_1(int64_t n, float *s, const void *w_row, const void *act_row) {
    const block_q4_1 *w = w_row;
    const block_q8_1 *a = act_row;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / HL_QK; b++) {
        int32_t sumi = 0;
        for (int j = 0; j < HL_QK / 2; j++) {
            sumi += (w[b].qs[j] & 0x0f) * a[b].qs[j];
            sumi += (w[b].qs[j] >> 4) * a[b].qs[j + HL_QK / 2];
        }
        sum += hl_fp16_to_fp32(w[b].d) * hl_fp16_to_fp32(a[b].d) * (float)sumi +
               hl_fp16_to_fp32(w[b].m) * hl_fp16_to_fp32(a[b].s);
    }
    *s = sum;
}

/* The 5-bit quant j (0..31) of a Q5_0/Q5_1 block: the nibble as in Q4_0,
 * bit 4 from bit j of the little-endian word qh. */
static int q5_quant(const uint8_t qs[HL_QK / 2], const uint8_t qh[4], int j) {
    const uint32_t h = (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
    const int lo = j < HL_QK / 2 ? qs[j] & 0x0f : qs[j - HL_QK / 2] >> 4;
    return lo | (int)((h >> j) & 1) << 4;
}

/* sum_i d_w*(q_w[i] - 16) * d_a*q_a[i] */
static void dot_q5_0_q8_0(int64_t n, float *s, const void *w_row, const void *act_row) {
    const block_q5_0 *w = w_row;
    const block_q8_0 *a = act_row;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / HL_QK; b++) {
        int32_t sumi = 0;
        for (int j = 0; j < HL_QK; j++) sumi += (q5_quant(w[b].qs, w[b].qh, j) - 16) * a[b].qs[j];
        sum += hl_fp16_to_fp32(w[b].d) * hl_fp16_to_fp32(a[b].d) * (float)sumi;
    }
    *s = sum;
}

/* sum_i (d_w*q_w[i] + m) * d_a*q_a[i] = d_w*d_a * sum_i q_w[i]*q_a[i] + m * s_a */
static void dot_q5_1_q8_1(int64_t n, float *s, const void *w_row, const void *act_row) {
    const block_q5_1 *w = w_row;
    const block_q8_1 *a = act_row;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / HL_QK; b++) {
        int32_t sumi = 0;
        for (int j = 0; j < HL_QK; j++) sumi += q5_quant(w[b].qs, w[b].qh, j) * a[b].qs[j];
        sum += hl_fp16_to_fp32(w[b].d) * hl_fp16_to_fp32(a[b].d) * (float)sumi +
               hl_fp16_to_fp32(w[b].m) * hl_fp16_to_fp32(a[b].s);
    }
    *s = sum;
}

static void dot_q8_0_q8_0(int64_t n, float *s, const void *w_row, const void *act_row) {
    const block_q8_0 *w = w_row;
    const block_q8_0 *a = act_row;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / HL_QK; b++) {
        int32_t sumi = 0;
        for (int j = 0; j < HL_QK; j++) sumi += w[b].qs[j] * a[b].qs[j];
        sum += hl_fp16_to_fp32(w[b].d) * hl_fp16_to_fp32(a[b].d) * (float)sumi;
    }
    *s = sum;
}

static const hl_cpu_type_ops scalar_ops[] = {
    {GGML_TYPE_F32, GGML_TYPE_F32, hl_f32_from_float, dot_f32, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {GGML_TYPE_F16, GGML_TYPE_F16, hl_f16_from_float, dot_f16, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {GGML_TYPE_BF16, GGML_TYPE_BF16, hl_bf16_from_float, dot_bf16, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {GGML_TYPE_Q4_0, GGML_TYPE_Q8_0, hl_act_q8_0_from_float, dot_q4_0_q8_0, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {GGML_TYPE_Q4_1, GGML_TYPE_Q8_1, hl_act_q8_1_from_float, dot_q4_1_q8_1, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {GGML_TYPE_Q8_0, GGML_TYPE_Q8_0, hl_act_q8_0_from_float, dot_q8_0_q8_0, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {GGML_TYPE_Q5_0, GGML_TYPE_Q8_0, hl_act_q8_0_from_float, dot_q5_0_q8_0, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {GGML_TYPE_Q5_1, GGML_TYPE_Q8_1, hl_act_q8_1_from_float, dot_q5_1_q8_1, NULL, NULL, NULL, NULL, NULL, NULL, false},
};

bool hl_cpu_batch_applies(const hl_cpu_type_ops *ops, int64_t d_in, int64_t d_out, int64_t n_tok) {
    if (ops->type == GGML_TYPE_F32 || ops->type == GGML_TYPE_F16 || ops->type == GGML_TYPE_BF16)
        return n_tok >= 2 && d_out % 4 == 0 && d_in % 16 == 0;
    return n_tok >= HL_CPU_BATCH_MIN;
}

const hl_cpu_type_ops *hl_cpu_ops_in(const hl_cpu_type_ops *table, size_t n, uint32_t type) {
    for (size_t i = 0; i < n; i++)
        if (table[i].type == type) return &table[i];
    return NULL;
}

const hl_cpu_type_ops *hl_cpu_ops_scalar_find(uint32_t type) {
    const hl_cpu_type_ops *ops = hl_cpu_ops_in(scalar_ops, sizeof scalar_ops / sizeof scalar_ops[0], type);
    return ops ? ops : hl_cpu_ops_scalar_k_find(type);
}

const hl_cpu_type_ops *hl_cpu_type_ops_at(uint32_t type, hl_cpu_level level) {
    if (level > hl_cpu_level_best()) return NULL;
    switch (level) {
    case HL_CPU_SCALAR: return hl_cpu_ops_scalar_find(type);
#if defined(__x86_64__) || defined(__i386__)
    case HL_CPU_AVX2: return hl_cpu_ops_avx2_find(type);
    case HL_CPU_AVX512: return hl_cpu_ops_avx512_find(type);
#endif
    default: return NULL;
    }
}

const hl_cpu_type_ops *hl_cpu_type_ops_get(uint32_t type) {
    for (int level = (int)hl_cpu_level_best(); level >= HL_CPU_SCALAR; level--) {
        const hl_cpu_type_ops *ops = hl_cpu_type_ops_at(type, (hl_cpu_level)level);
        if (ops) return ops;
    }
    return NULL;
}

const hl_cpu_type_ops *hl_cpu_type_ops_scalar(uint32_t type) { return hl_cpu_ops_scalar_find(type); }
