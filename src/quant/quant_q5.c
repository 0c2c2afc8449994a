/* Reference (de)quantizers of ggml's 5-bit 32-element block types Q5_0 and
 * Q5_1. Each follows its ggml counterpart in ggml/src/ggml-quants.c
 * (quantize_row_q5_*_ref, dequantize_row_q5_*) operation for operation, so
 * that the results are bit-exact with ggml and gguf-py; as in quant_legacy.c,
 * that needs float arithmetic done as written (no FMA contraction, no
 * -ffast-math). The fifth bits of a block are the little-endian uint32 qh:
 * bit i belongs to element i. */
#include <float.h>
#include <math.h>

#include "quant/quant.h"

static uint32_t q5_high_bits(const uint8_t qh[4]) {
    return (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
}

/* Packs 32 five-bit quants: low nibbles as in Q4_0, bit 4 of q[i] into bit i of qh. */
static void q5_pack(const int q[HL_QK], uint8_t qs[HL_QK / 2], uint8_t qh[4]) {
    uint32_t h = 0;
    for (int j = 0; j < HL_QK / 2; j++) {
        qs[j] = (uint8_t)((q[j] & 0x0f) | (q[j + HL_QK / 2] & 0x0f) << 4);
        h |= (uint32_t)(q[j] >> 4 & 1) << j;
        h |= (uint32_t)(q[j + HL_QK / 2] >> 4 & 1) << (j + HL_QK / 2);
    }
    for (int k = 0; k < 4; k++) qh[k] = (uint8_t)(h >> (8 * k));
}

/* The 5-bit quants of a block, unsigned (0 .. 31). */
static void q5_unpack(const uint8_t qs[HL_QK / 2], const uint8_t qh[4], int q[HL_QK]) {
    const uint32_t h = q5_high_bits(qh);
    for (int j = 0; j < HL_QK / 2; j++) {
        q[j] = (qs[j] & 0x0f) | (int)(h >> j & 1) << 4;
        q[j + HL_QK / 2] = (qs[j] >> 4) | (int)(h >> (j + HL_QK / 2) & 1) << 4;
    }
}

void hl_q5_0_to_float(const void *src, float *dst, int64_t n) {
    const block_q5_0 *x = src;
    int q[HL_QK];
    for (int64_t b = 0; b < n / HL_QK; b++, dst += HL_QK) {
        const float d = hl_fp16_to_fp32(x[b].d);
        q5_unpack(x[b].qs, x[b].qh, q);
        for (int j = 0; j < HL_QK; j++) dst[j] = (float)(q[j] - 16) * d;
    }
}

/* d = -max/16 where max is the element of largest magnitude (the first one on
 * ties), so that max maps to q = 0; q = min(31, trunc(x/d + 16.5)). */
void hl_q5_0_from_float(const float *src, void *dst, int64_t n) {
    block_q5_0 *y = dst;
    int q[HL_QK];
    for (int64_t b = 0; b < n / HL_QK; b++, src += HL_QK) {
        const float max = hl_signed_absmax(src, HL_QK);
        const float d = max / -16;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = hl_fp32_to_fp16(d);
        for (int j = 0; j < HL_QK; j++) {
            const int v = (int)(src[j] * id + 16.5f);
            q[j] = v > 31 ? 31 : v;
        }
        q5_pack(q, y[b].qs, y[b].qh);
    }
}

void hl_q5_1_to_float(const void *src, float *dst, int64_t n) {
    const block_q5_1 *x = src;
    int q[HL_QK];
    for (int64_t b = 0; b < n / HL_QK; b++, dst += HL_QK) {
        const float d = hl_fp16_to_fp32(x[b].d);
        const float m = hl_fp16_to_fp32(x[b].m);
        q5_unpack(x[b].qs, x[b].qh, q);
        for (int j = 0; j < HL_QK; j++) dst[j] = (float)q[j] * d + m;
    }
}

/* m = min, d = (max - min)/31, q = min(31, trunc((x - m)/d + 0.5)). */
void hl_q5_1_from_float(const float *src, void *dst, int64_t n) {
    block_q5_1 *y = dst;
    int q[HL_QK];
    for (int64_t b = 0; b < n / HL_QK; b++, src += HL_QK) {
        float min = FLT_MAX, max = -FLT_MAX;
        for (int j = 0; j < HL_QK; j++) {
            if (src[j] < min) min = src[j];
            if (src[j] > max) max = src[j];
        }
        const float d = (max - min) / 31;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = hl_fp32_to_fp16(d);
        y[b].m = hl_fp32_to_fp16(min);
        for (int j = 0; j < HL_QK; j++) {
            const int v = (int)((src[j] - min) * id + 0.5f);
            q[j] = v > 31 ? 31 : v;
        }
        q5_pack(q, y[b].qs, y[b].qh);
    }
}
