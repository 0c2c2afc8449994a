/* Reference (de)quantizers of ggml's 32-element block types Q4_0, Q4_1, Q8_0
 * and Q8_1. Each follows its ggml counterpart in ggml/src/ggml-quants.c
 * (quantize_row_*_ref, dequantize_row_*) operation for operation, so that the
 * results are bit-exact with ggml and gguf-py. That rests on float arithmetic
 * done exactly as written: no fused multiply-add contraction (GCC's default in
 * ISO C mode, -std=c11) and no -ffast-math. */
#include <float.h>
#include <math.h>

#include "quant/quant.h"

void hl_q4_0_to_float(const void *src, float *dst, int64_t n) {
    const block_q4_0 *x = src;
    for (int64_t b = 0; b < n / HL_QK; b++, dst += HL_QK) {
        const float d = hl_fp16_to_fp32(x[b].d);
        for (int j = 0; j < HL_QK / 2; j++) {
            dst[j] = (float)((x[b].qs[j] & 0x0f) - 8) * d;
            dst[j + HL_QK / 2] = (float)((x[b].qs[j] >> 4) - 8) * d;
        }
    }
}

/* d = -max/8 where max is the element of largest magnitude (the first one on
 * ties), so that max itself maps to q = 0 exactly; q = min(15, trunc(x/d + 8.5)). */
void hl_q4_0_from_float(const float *src, void *dst, int64_t n) {
    block_q4_0 *y = dst;
    for (int64_t b = 0; b < n / HL_QK; b++, src += HL_QK) {
        const float max = hl_signed_absmax(src, HL_QK);
        const float d = max / -8;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = hl_fp32_to_fp16(d);
        for (int j = 0; j < HL_QK / 2; j++) {
            int q0 = (int)(src[j] * id + 8.5f);
            int q1 = (int)(src[j + HL_QK / 2] * id + 8.5f);
            q0 = q0 > 15 ? 15 : q0;
            q1 = q1 > 15 ? 15 : q1;
            y[b].qs[j] = (uint8_t)(q0 | q1 << 4);
        }
    }
}

void hl_q4_1_to_float(const void *src, float *dst, int64_t n) {
    const block_q4_1 *x = src;
    for (int64_t b = 0; b < n / HL_QK; b++, dst += HL_QK) {
        const float d = hl_fp16_to_fp32(x[b].d);
        const float m = hl_fp16_to_fp32(x[b].m);
        for (int j = 0; j < HL_QK / 2; j++) {
            dst[j] = (float)(x[b].qs[j] & 0x0f) * d + m;
            dst[j + HL_QK / 2] = (float)(x[b].qs[j] >> 4) * d + m;
        }
    }
}

/* m = min, d = (max - min)/15, q = min(15, trunc((x - m)/d + 0.5)). */
void hl_q4_1_from_float(const float *src, void *dst, int64_t n) {
    block_q4_1 *y = dst;
    for (int64_t b = 0; b < n / HL_QK; b++, src += HL_QK) {
        float min = FLT_MAX, max = -FLT_MAX;
        for (int j = 0; j < HL_QK; j++) {
            if (src[j] < min) min = src[j];
            if (src[j] > max) max = src[j];
        }
        const float d = (max - min) / 15;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = hl_fp32_to_fp16(d);
        y[b].m = hl_fp32_to_fp16(min);
        for (int j = 0; j < HL_QK / 2; j++) {
            int q0 = (int)((src[j] - min) * id + 0.5f);
            int q1 = (int)((src[j + HL_QK / 2] - min) * id + 0.5f);
            q0 = q0 > 15 ? 15 : q0;
            q1 = q1 > 15 ? 15 : q1;
            y[b].qs[j] = (uint8_t)(q0 | q1 << 4);
        }
    }
}

void hl_q8_0_to_float(const void *src, float *dst, int64_t n) {
    const block_q8_0 *x = src;
    for (int64_t b = 0; b < n / HL_QK; b++, dst += HL_QK) {
        const float d = hl_fp16_to_fp32(x[b].d);
        for (int j = 0; j < HL_QK; j++) dst[j] = (float)x[b].qs[j] * d;
    }
}

/* The scale of a Q8 block, amax/127, and the quants roundf(x * (1/d)):
 * rounding half away from zero, with the reciprocal computed once. Returns d
 * in full precision (ggml stores it as fp16 but forms s = sum*d from it). */
static float q8_block_from_float(const float *x, int8_t *qs) {
    float amax = 0.0f;
    for (int j = 0; j < HL_QK; j++) amax = fmaxf(amax, fabsf(x[j]));
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < HL_QK; j++) qs[j] = (int8_t)roundf(x[j] * id);
    return d;
}

void hl_q8_0_from_float(const float *src, void *dst, int64_t n) {
    block_q8_0 *y = dst;
    for (int64_t b = 0; b < n / HL_QK; b++, src += HL_QK) {
        y[b].d = hl_fp32_to_fp16(q8_block_from_float(src, y[b].qs));
    }
}

void hl_q8_1_to_float(const void *src, float *dst, int64_t n) {
    const block_q8_1 *x = src;
    for (int64_t b = 0; b < n / HL_QK; b++, dst += HL_QK) {
        const float d = hl_fp16_to_fp32(x[b].d);
        for (int j = 0; j < HL_QK; j++) dst[j] = (float)x[b].qs[j] * d;
    }
}

void hl_q8_1_from_float(const float *src, void *dst, int64_t n) {
    block_q8_1 *y = dst;
    for (int64_t b = 0; b < n / HL_QK; b++, src += HL_QK) {
        const float d = q8_block_from_float(src, y[b].qs);
        int sum = 0;
        for (int j = 0; j < HL_QK; j++) sum += y[b].qs[j];
        y[b].d = hl_fp32_to_fp16(d);
        y[b].s = hl_fp32_to_fp16((float)sum * d);
    }
}
