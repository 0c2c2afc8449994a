/* Scalar K-quant kernels: the Q8_K activation quantizer and the dot products
 * of Q2_K .. Q6_K weights with Q8_K activations, the oracle that the SIMD
 * levels are tested against. Each kernel is written from its block formula
 * (quant/quant_k.h): exact integer sums per super-block, then a few float
 * operations per super-block. The activation sums come from the quants
 * themselves, not from bsums, so that a wrong bsums shows up as a SIMD
 * kernel disagreeing with this one. */
#include <math.h>

#include "backend/cpu/vec_dot.h"

/* ------------------------------------------------ activation quantizer -- */

/* One block of llama.cpp's quantize_row_q8_K_ref (ggml-quants.c), which is
 * also what its x86 build runs (arch/x86/quants.c calls it). nearbyintf
 * rounds halves to even in the default rounding mode, as ggml's nearest_int
 * (adding 1.5 * 2^23) does; |x * iscale| <= 127 up to one rounding, so the
 * clamp of the reference never changes a value and is kept only for form. */
static void act_q8_K_block(const float x[HL_QK_K], block_q8_K *y) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < HL_QK_K; j++) {
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    memset(y, 0, sizeof *y);
    if (amax == 0.0f) return;
    const float iscale = -127.0f / max;
    for (int j = 0; j < HL_QK_K; j++) {
        const float q = nearbyintf(iscale * x[j]);
        y->qs[j] = (int8_t)(q < 127.0f ? q : 127.0f);
        y->bsums[j / 16] = (int16_t)(y->bsums[j / 16] + y->qs[j]);
    }
    y->d = 1.0f / iscale;
}

void hl_act_q8_K_from_float(const float *x, void *dst, int64_t n) {
    block_q8_K *y = dst;
    for (int64_t b = 0; b < n / HL_QK_K; b++) act_q8_K_block(x + b * HL_QK_K, &y[b]);
}

/* ------------------------------------------------------ block formulas -- */

/* The 2 low bits of element e of a Q2_K or Q3_K super-block. */
static int low2(const uint8_t qs[HL_QK_K / 4], int e) {
    return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}

/* The 4 low bits of element e of a Q4_K or Q5_K super-block. */
static int low4(const uint8_t qs[HL_QK_K / 2], int e) {
    const uint8_t byte = qs[32 * (e / 64) + e % 32];
    return e % 64 < 32 ? byte & 15 : byte >> 4;
}

/* Element e of a Q6_K super-block, 0..63 (unbiased by 32 later). */
static int q6_K_quant(const block_q6_K *w, int e) {
    const int h = e / 128, r = e % 128;
    const uint8_t l = w->ql[64 * h + r % 64];
    const int lo = r < 64 ? l & 15 : l >> 4;
    const int hi = (w->qh[32 * h + r % 32] >> (2 * (r / 32))) & 3;
    return lo | hi << 4;
}

/* ------------------------------------------------------- dot products -- */

/* x[e] = d * (s & 15) * q[e] - dmin * (s >> 4), s = scales[e/16]:
 * dot = d_a * (d * sum_e sc*q*a - dmin * sum_e m*a). */
static void dot_q2_K(int64_t n, float *s, const void *w_row, const void *act_row) {
    const block_q2_K *w = w_row;
    const block_q8_K *a = act_row;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / HL_QK_K; b++) {
        int32_t sumi = 0, summ = 0;
        for (int e = 0; e < HL_QK_K; e++) {
            const int sc = w[b].scales[e / 16];
            sumi += (sc & 15) * low2(w[b].qs, e) * a[b].qs[e];
            summ += (sc >> 4) * a[b].qs[e];
        }
        sum += a[b].d * (hl_fp16_to_fp32(w[b].d) * (float)sumi - hl_fp16_to_fp32(w[b].dmin) * (float)summ);
    }
    *s = sum;
}

/* x[e] = d * sc[e/16] * (q[e] - 4 * !hbit[e]). */
static void dot_q3_K(int64_t n, float *s, const void *w_row, const void *act_row) {
    const block_q3_K *w = w_row;
    const block_q8_K *a = act_row;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / HL_QK_K; b++) {
        int32_t sumi = 0;
        for (int e = 0; e < HL_QK_K; e++) {
            const int hbit = (w[b].hmask[e % 32] >> (e / 32)) & 1;
            sumi += (hl_q3_K_scale(w[b].scales, e / 16) - 32) * (low2(w[b].qs, e) - 4 * !hbit) * a[b].qs[e];
        }
        sum += a[b].d * hl_fp16_to_fp32(w[b].d) * (float)sumi;
    }
    *s = sum;
}

/* x[e] = d * sc[e/32] * q[e] - dmin * m[e/32], q[e] = low4 + 16 * hbit[e]
 * (hbits: Q5_K only). */
static float k4_block(const uint8_t scales[HL_K_SCALE_SIZE], const uint8_t qs[HL_QK_K / 2], const uint8_t *qh,
                      hl_half d, hl_half dmin, const block_q8_K *a) {
    int32_t sumi = 0, summ = 0;
    for (int e = 0; e < HL_QK_K; e++) {
        uint8_t sc, m;
        hl_q4_K_scale_min(scales, e / 32, &sc, &m);
        const int q = low4(qs, e) + (qh ? 16 * ((qh[e % 32] >> (e / 32)) & 1) : 0);
        sumi += sc * q * a->qs[e];
        summ += m * a->qs[e];
    }
    return a->d * (hl_fp16_to_fp32(d) * (float)sumi - hl_fp16_to_fp32(dmin) * (float)summ);
}

static void dot_q4_K(int64_t n, float *s, const void *w_row, const void *act_row) {
    const block_q4_K *w = w_row;
    const block_q8_K *a = act_row;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / HL_QK_K; b++) sum += k4_block(w[b].scales, w[b].qs, NULL, w[b].d, w[b].dmin, &a[b]);
    *s = sum;
}

static void dot_q5_K(int64_t n, float *s, const void *w_row, const void *act_row) {
    const block_q5_K *w = w_row;
    const block_q8_K *a = act_row;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / HL_QK_K; b++) sum += k4_block(w[b].scales, w[b].qs, w[b].qh, w[b].d, w[b].dmin, &a[b]);
    *s = sum;
}

/* x[e] = d * scales[e/16] * (q[e] - 32). */
static void dot_q6_K(int64_t n, float *s, const void *w_row, const void *act_row) {
    const block_q6_K *w = w_row;
    const block_q8_K *a = act_row;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / HL_QK_K; b++) {
        int32_t sumi = 0;
        for (int e = 0; e < HL_QK_K; e++) sumi += w[b].scales[e / 16] * (q6_K_quant(&w[b], e) - 32) * a[b].qs[e];
        sum += a[b].d * hl_fp16_to_fp32(w[b].d) * (float)sumi;
    }
    *s = sum;
}

/* ----------------------------------------------------------------- table -- */

static const hl_cpu_type_ops scalar_k_ops[] = {
    {GGML_TYPE_Q2_K, GGML_TYPE_Q8_K, hl_act_q8_K_from_float, dot_q2_K, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {GGML_TYPE_Q3_K, GGML_TYPE_Q8_K, hl_act_q8_K_from_float, dot_q3_K, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {GGML_TYPE_Q4_K, GGML_TYPE_Q8_K, hl_act_q8_K_from_float, dot_q4_K, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {GGML_TYPE_Q5_K, GGML_TYPE_Q8_K, hl_act_q8_K_from_float, dot_q5_K, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {GGML_TYPE_Q6_K, GGML_TYPE_Q8_K, hl_act_q8_K_from_float, dot_q6_K, NULL, NULL, NULL, NULL, NULL, NULL, false},
};

const hl_cpu_type_ops *hl_cpu_ops_scalar_k_find(uint32_t type) {
    return hl_cpu_ops_in(scalar_k_ops, sizeof scalar_k_ops / sizeof scalar_k_ops[0], type);
}
