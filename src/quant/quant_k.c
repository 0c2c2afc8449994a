/* Reference dequantizers of the K-quants Q2_K ... Q6_K, and both directions
 * of Q8_K. The formulas are those of quant_k.h (from ggml-common.h); each
 * value is computed with ggml's operations in ggml's order (dequantize_row_*
 * in ggml/src/ggml-quants.c), so the floats are bit-exact with ggml and with
 * gguf-py's numpy versions: e.g. Q4_K's x = (d*sc)*q - (dmin*m), never
 * d*(sc*q). No FMA contraction, no -ffast-math (see quant_legacy.c). The
 * K-quant quantizers are in quant_k_quantize.c. */
#include <math.h>

#include "quant/quant.h"
#include "quant/quant_k_search.h"

/* The 2-bit level of element e (0 .. 255) of a Q2_K/Q3_K block's qs. */
static int q2_level(const uint8_t qs[HL_QK_K / 4], int e) {
    return qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32)) & 3;
}

void hl_q2_K_to_float(const void *src, float *dst, int64_t n) {
    const block_q2_K *x = src;
    for (int64_t b = 0; b < n / HL_QK_K; b++, dst += HL_QK_K) {
        const float d = hl_fp16_to_fp32(x[b].d), dmin = hl_fp16_to_fp32(x[b].dmin);
        for (int s = 0; s < HL_QK_K / 16; s++) {
            const float dl = d * (float)(x[b].scales[s] & 15);
            const float ml = dmin * (float)(x[b].scales[s] >> 4);
            for (int e = 16 * s; e < 16 * s + 16; e++) dst[e] = dl * (float)q2_level(x[b].qs, e) - ml;
        }
    }
}

void hl_q3_K_to_float(const void *src, float *dst, int64_t n) {
    const block_q3_K *x = src;
    for (int64_t b = 0; b < n / HL_QK_K; b++, dst += HL_QK_K) {
        const float d = hl_fp16_to_fp32(x[b].d);
        for (int s = 0; s < HL_QK_K / 16; s++) {
            const float dl = d * (float)(hl_q3_K_scale(x[b].scales, s) - 32);
            for (int e = 16 * s; e < 16 * s + 16; e++) {
                const int high = x[b].hmask[e % 32] >> (e / 32) & 1;
                dst[e] = dl * (float)(q2_level(x[b].qs, e) - (high ? 0 : 4));
            }
        }
    }
}

/* The 4-bit level of element e of a Q4_K/Q5_K block's qs. */
static int q4_level(const uint8_t qs[HL_QK_K / 2], int e) {
    const uint8_t byte = qs[32 * (e / 64) + e % 32];
    return e % 64 < 32 ? byte & 15 : byte >> 4;
}

void hl_q4_K_to_float(const void *src, float *dst, int64_t n) {
    const block_q4_K *x = src;
    for (int64_t b = 0; b < n / HL_QK_K; b++, dst += HL_QK_K) {
        const float d = hl_fp16_to_fp32(x[b].d), dmin = hl_fp16_to_fp32(x[b].dmin);
        for (int s = 0; s < HL_QK_K / 32; s++) {
            uint8_t sc, m;
            hl_q4_K_scale_min(x[b].scales, s, &sc, &m);
            const float dl = d * (float)sc, ml = dmin * (float)m;
            for (int e = 32 * s; e < 32 * s + 32; e++) dst[e] = dl * (float)q4_level(x[b].qs, e) - ml;
        }
    }
}

void hl_q5_K_to_float(const void *src, float *dst, int64_t n) {
    const block_q5_K *x = src;
    for (int64_t b = 0; b < n / HL_QK_K; b++, dst += HL_QK_K) {
        const float d = hl_fp16_to_fp32(x[b].d), dmin = hl_fp16_to_fp32(x[b].dmin);
        for (int s = 0; s < HL_QK_K / 32; s++) {
            uint8_t sc, m;
            hl_q4_K_scale_min(x[b].scales, s, &sc, &m);
            const float dl = d * (float)sc, ml = dmin * (float)m;
            for (int e = 32 * s; e < 32 * s + 32; e++) {
                const int q = q4_level(x[b].qs, e) + 16 * (x[b].qh[e % 32] >> (e / 32) & 1);
                dst[e] = dl * (float)q - ml;
            }
        }
    }
}

void hl_q6_K_to_float(const void *src, float *dst, int64_t n) {
    const block_q6_K *x = src;
    for (int64_t b = 0; b < n / HL_QK_K; b++, dst += HL_QK_K) {
        const float d = hl_fp16_to_fp32(x[b].d);
        for (int e = 0; e < HL_QK_K; e++) {
            const int h = e / 128, r = e % 128;
            const uint8_t lo_byte = x[b].ql[64 * h + r % 64];
            const int lo = r < 64 ? lo_byte & 15 : lo_byte >> 4;
            const int hi = x[b].qh[32 * h + r % 32] >> (2 * (r / 32)) & 3;
            dst[e] = d * (float)x[b].scales[e / 16] * (float)((lo | hi << 4) - 32);
        }
    }
}

void hl_q8_K_to_float(const void *src, float *dst, int64_t n) {
    const block_q8_K *x = src;
    for (int64_t b = 0; b < n / HL_QK_K; b++, dst += HL_QK_K) {
        for (int e = 0; e < HL_QK_K; e++) dst[e] = x[b].d * (float)x[b].qs[e];
    }
}

/* quantize_row_q8_K_ref: with max the element of largest magnitude (the first
 * on ties), iscale = -127/max, q = min(127, round(iscale * x)) ties to even,
 * d = 1/iscale in fp32, and bsums the sums of 16 quants. An all-zero block
 * gets d = 0 and zero quants; unlike ggml, which leaves them as they were,
 * its bsums are set to 0 as well. */
void hl_q8_K_from_float(const float *src, void *dst, int64_t n) {
    block_q8_K *y = dst;
    for (int64_t b = 0; b < n / HL_QK_K; b++, src += HL_QK_K) {
        float amax = 0.0f, max = 0.0f;
        for (int e = 0; e < HL_QK_K; e++) {
            if (fabsf(src[e]) > amax) {
                amax = fabsf(src[e]);
                max = src[e];
            }
        }
        memset(&y[b], 0, sizeof y[b]);
        if (amax == 0.0f) continue;
        const float iscale = -127.0f / max;
        for (int e = 0; e < HL_QK_K; e++) {
            const int v = hl_nearest_int(iscale * src[e]);
            y[b].qs[e] = (int8_t)(v < 127 ? v : 127);
            y[b].bsums[e / 16] = (int16_t)(y[b].bsums[e / 16] + y[b].qs[e]);
        }
        y[b].d = 1.0f / iscale;
    }
}
