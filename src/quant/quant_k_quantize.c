/* Reference quantizers of the K-quants Q2_K ... Q6_K: llama.cpp's
 * quantize_row_q*_K_ref (ggml/src/ggml-quants.c) without an importance
 * matrix, done the same way so that the bytes are llama.cpp's. Every type
 * works in three steps on a 256-element super-block:
 *   1. per sub-block, a scale (and min) and levels from a search
 *      (quant_k_search.c);
 *   2. those scales quantized against the largest one, which becomes the
 *      super-block's fp16 d (and dmin);
 *   3. the levels recomputed from the quantized scales, as the dequantizer
 *      will see them, round((x + dmin*m)/(d*sc)), and packed.
 * Sub-blocks whose quantized scale is 0 keep their step-1 levels. */
#include <math.h>

#include "quant/quant.h"
#include "quant/quant_k_search.h"

static int clamp_int(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Packs 2-bit levels as Q2_K/Q3_K store them: element e in bits
 * 2*((e%128)/32) of qs[32*(e/128) + e%32]. */
static void pack_2bit(const uint8_t L[HL_QK_K], uint8_t qs[HL_QK_K / 4]) {
    for (int h = 0; h < 2; h++) {
        const uint8_t *l = L + 128 * h;
        for (int i = 0; i < 32; i++) {
            qs[32 * h + i] = (uint8_t)(l[i] | l[i + 32] << 2 | l[i + 64] << 4 | l[i + 96] << 6);
        }
    }
}

/* ---------------------------------------------------------------- Q2_K -- */

/* Sub-blocks of 16: scale and min from make_qkx2_quants (nmax 3, weights |x|,
 * absolute error), each quantized to 4 bits against the largest: sc =
 * round(15 * scale / max_scale), d = max_scale/15, likewise the mins. */
static void q2_K_block(const float *x, block_q2_K *y) {
    static const hl_qkx2_grid grid = {-0.5f, 0.1f, 15, true};
    uint8_t L[HL_QK_K];
    float scales[16], mins[16], w[16], max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < 16; j++) {
        for (int i = 0; i < 16; i++) w[i] = fabsf(x[16 * j + i]);
        scales[j] = hl_make_qkx2_quants(16, 3, x + 16 * j, w, L + 16 * j, &mins[j], &grid);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    memset(y->scales, 0, sizeof y->scales);
    y->d = hl_fp32_to_fp16(max_scale > 0.0f ? max_scale / 15.0f : 0.0f);
    y->dmin = hl_fp32_to_fp16(max_min > 0.0f ? max_min / 15.0f : 0.0f);
    for (int j = 0; j < 16; j++) {
        if (max_scale > 0.0f) y->scales[j] = (uint8_t)hl_nearest_int(15.0f / max_scale * scales[j]);
        if (max_min > 0.0f) y->scales[j] |= (uint8_t)(hl_nearest_int(15.0f / max_min * mins[j]) << 4);
    }
    for (int j = 0; j < 16; j++) {
        const float d = hl_fp16_to_fp32(y->d) * (float)(y->scales[j] & 15);
        if (d == 0.0f) continue;
        const float dm = hl_fp16_to_fp32(y->dmin) * (float)(y->scales[j] >> 4);
        for (int i = 16 * j; i < 16 * j + 16; i++) L[i] = (uint8_t)clamp_int(hl_nearest_int((x[i] + dm) / d), 0, 3);
    }
    pack_2bit(L, y->qs);
}

void hl_q2_K_from_float(const float *src, void *dst, int64_t n) {
    block_q2_K *y = dst;
    for (int64_t b = 0; b < n / HL_QK_K; b++) q2_K_block(src + b * HL_QK_K, &y[b]);
}

/* ---------------------------------------------------------------- Q3_K -- */

/* Stores the 6-bit scale sc (0 .. 63) of sub-block j as hl_q3_K_scale reads it. */
static void q3_K_put_scale(uint8_t scales[12], int j, int sc) {
    scales[j % 8] |= (uint8_t)((sc & 15) << (j < 8 ? 0 : 4));
    scales[8 + j % 4] |= (uint8_t)((sc >> 4) << (2 * (j / 4)));
}

/* Sub-blocks of 16: signed scales from make_q3_quants (nmax 4), quantized to
 * 6 bits against the one of largest magnitude, max: sc = clamp(round(-32 *
 * scale / max), -32, 31) + 32, d = -max/32. Levels -4 .. 3 are stored + 4:
 * the low 2 bits in qs, bit 2 in hmask. */
static void q3_K_block(const float *x, block_q3_K *y) {
    int8_t L[HL_QK_K];
    float scales[16], amax = 0.0f, max_scale = 0.0f;
    for (int j = 0; j < 16; j++) {
        scales[j] = hl_make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
        if (fabsf(scales[j]) > amax) {
            amax = fabsf(scales[j]);
            max_scale = scales[j];
        }
    }
    memset(y->scales, 0, sizeof y->scales);
    y->d = 0;
    if (max_scale != 0.0f) {
        const float iscale = -32.0f / max_scale;
        for (int j = 0; j < 16; j++) {
            q3_K_put_scale(y->scales, j, clamp_int(hl_nearest_int(iscale * scales[j]), -32, 31) + 32);
        }
        y->d = hl_fp32_to_fp16(1.0f / iscale);
    }
    for (int j = 0; j < 16; j++) {
        const float d = hl_fp16_to_fp32(y->d) * (float)(hl_q3_K_scale(y->scales, j) - 32);
        if (d == 0.0f) continue;
        for (int i = 16 * j; i < 16 * j + 16; i++) L[i] = (int8_t)(clamp_int(hl_nearest_int(x[i] / d), -4, 3) + 4);
    }
    uint8_t low[HL_QK_K];
    memset(y->hmask, 0, sizeof y->hmask);
    for (int e = 0; e < HL_QK_K; e++) {
        if (L[e] > 3) y->hmask[e % 32] |= (uint8_t)(1 << (e / 32));
        low[e] = (uint8_t)(L[e] & 3);
    }
    pack_2bit(low, y->qs);
}

void hl_q3_K_from_float(const float *src, void *dst, int64_t n) {
    block_q3_K *y = dst;
    for (int64_t b = 0; b < n / HL_QK_K; b++) q3_K_block(src + b * HL_QK_K, &y[b]);
}

/* ------------------------------------------------------- Q4_K and Q5_K -- */

/* Stores the 6-bit scale and min of sub-block j as hl_q4_K_scale_min reads
 * them (the upper 2 bits of j >= 4 go to the top of bytes j-4 and j). */
static void q4_K_put_scale_min(uint8_t scales[HL_K_SCALE_SIZE], int j, uint8_t sc, uint8_t m) {
    if (j < 4) {
        scales[j] = sc;
        scales[j + 4] = m;
    } else {
        scales[j + 4] = (uint8_t)((sc & 15) | (m & 15) << 4);
        scales[j - 4] |= (uint8_t)((sc >> 4) << 6);
        scales[j] |= (uint8_t)((m >> 4) << 6);
    }
}

/* Steps 1 to 3 of Q4_K (nmax 15) and Q5_K (nmax 31): sub-blocks of 32,
 * scale and min from make_qkx2_quants with weights rms(x) + |x|, both
 * quantized to 6 bits against the largest (sc = min(63, round(63 * scale /
 * max_scale)), d = max_scale/63, likewise the mins). Fills d, dmin, scales
 * and the levels L (0 .. nmax). */
static void q45_K_block(const float *x, int nmax, const hl_qkx2_grid *grid, hl_half *dd, hl_half *dmin,
                        uint8_t scales[HL_K_SCALE_SIZE], uint8_t L[HL_QK_K]) {
    float sc[8], mins[8], w[32], max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < 8; j++) {
        const float *xj = x + 32 * j;
        float sum_x2 = 0.0f;
        for (int i = 0; i < 32; i++) sum_x2 += xj[i] * xj[i];
        const float av_x = sqrtf(sum_x2 / 32.0f);
        for (int i = 0; i < 32; i++) w[i] = av_x + fabsf(xj[i]);
        sc[j] = hl_make_qkx2_quants(32, nmax, xj, w, L + 32 * j, &mins[j], grid);
        if (sc[j] > max_scale) max_scale = sc[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
    const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
    memset(scales, 0, HL_K_SCALE_SIZE);
    for (int j = 0; j < 8; j++) {
        const uint8_t ls = (uint8_t)hl_nearest_int(inv_scale * sc[j]);
        const uint8_t lm = (uint8_t)hl_nearest_int(inv_min * mins[j]);
        q4_K_put_scale_min(scales, j, ls < 63 ? ls : 63, lm < 63 ? lm : 63);
    }
    *dd = hl_fp32_to_fp16(max_scale / 63.0f);
    *dmin = hl_fp32_to_fp16(max_min / 63.0f);
    for (int j = 0; j < 8; j++) {
        uint8_t s, m;
        hl_q4_K_scale_min(scales, j, &s, &m);
        const float d = hl_fp16_to_fp32(*dd) * (float)s;
        if (d == 0.0f) continue;
        const float dm = hl_fp16_to_fp32(*dmin) * (float)m;
        for (int i = 32 * j; i < 32 * j + 32; i++) {
            L[i] = (uint8_t)clamp_int(hl_nearest_int((x[i] + dm) / d), 0, nmax);
        }
    }
}

/* Element e's low 4 bits go to qs[32*(e/64) + e%32], low nibble if e%64 < 32. */
static void pack_4bit(const uint8_t L[HL_QK_K], uint8_t qs[HL_QK_K / 2]) {
    for (int c = 0; c < 4; c++) {
        const uint8_t *l = L + 64 * c;
        for (int i = 0; i < 32; i++) qs[32 * c + i] = (uint8_t)((l[i] & 15) | (l[i + 32] & 15) << 4);
    }
}

void hl_q4_K_from_float(const float *src, void *dst, int64_t n) {
    static const hl_qkx2_grid grid = {-1.0f, 0.1f, 20, false};
    block_q4_K *y = dst;
    uint8_t L[HL_QK_K];
    for (int64_t b = 0; b < n / HL_QK_K; b++) {
        q45_K_block(src + b * HL_QK_K, 15, &grid, &y[b].d, &y[b].dmin, y[b].scales, L);
        pack_4bit(L, y[b].qs);
    }
}

void hl_q5_K_from_float(const float *src, void *dst, int64_t n) {
    static const hl_qkx2_grid grid = {-0.5f, 0.1f, 15, false};
    block_q5_K *y = dst;
    uint8_t L[HL_QK_K];
    for (int64_t b = 0; b < n / HL_QK_K; b++) {
        q45_K_block(src + b * HL_QK_K, 31, &grid, &y[b].d, &y[b].dmin, y[b].scales, L);
        pack_4bit(L, y[b].qs);
        memset(y[b].qh, 0, sizeof y[b].qh);
        for (int e = 0; e < HL_QK_K; e++) y[b].qh[e % 32] |= (uint8_t)((L[e] >> 4) << (e / 32));
    }
}

/* ---------------------------------------------------------------- Q6_K -- */

/* Sub-blocks of 16: signed scales from make_qx_quants (nmax 32), quantized to
 * int8 against the one of largest magnitude, max: sc = min(127, round(-128 *
 * scale / max)), d = -max/128. Levels -32 .. 31 are stored + 32, the low 4
 * bits in ql and the upper 2 in qh (layout in quant_k.h). A block whose
 * scales are all below HL_GROUP_MAX_EPS is all zero bytes. */
static void q6_K_block(const float *x, block_q6_K *y) {
    int8_t L[HL_QK_K];
    float scales[16], amax = 0.0f, max_scale = 0.0f;
    for (int j = 0; j < 16; j++) {
        scales[j] = hl_make_qx_quants(16, 32, x + 16 * j, L + 16 * j);
        if (fabsf(scales[j]) > amax) {
            amax = fabsf(scales[j]);
            max_scale = scales[j];
        }
    }
    memset(y, 0, sizeof *y);
    if (amax < HL_GROUP_MAX_EPS) return;
    const float iscale = -128.0f / max_scale;
    y->d = hl_fp32_to_fp16(1.0f / iscale);
    for (int j = 0; j < 16; j++) {
        const int s = hl_nearest_int(iscale * scales[j]);
        y->scales[j] = (int8_t)(s < 127 ? s : 127);
    }
    for (int j = 0; j < 16; j++) {
        const float d = hl_fp16_to_fp32(y->d) * (float)y->scales[j];
        if (d == 0.0f) continue;
        for (int i = 16 * j; i < 16 * j + 16; i++) L[i] = (int8_t)(clamp_int(hl_nearest_int(x[i] / d), -32, 31) + 32);
    }
    for (int e = 0; e < HL_QK_K; e++) {
        const int h = e / 128, r = e % 128;
        y->ql[64 * h + r % 64] |= (uint8_t)((L[e] & 15) << (r < 64 ? 0 : 4));
        y->qh[32 * h + r % 32] |= (uint8_t)((L[e] >> 4) << (2 * (r / 32)));
    }
}

void hl_q6_K_from_float(const float *src, void *dst, int64_t n) {
    block_q6_K *y = dst;
    for (int64_t b = 0; b < n / HL_QK_K; b++) q6_K_block(src + b * HL_QK_K, &y[b]);
}
