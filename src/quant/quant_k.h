/* Block layouts of ggml's K-quants (Q2_K ... Q6_K) and of Q8_K, the
 * activation type of their dot products. A super-block holds QK_K = 256
 * elements in sub-blocks of 16 or 32, each sub-block with its own quantized
 * scale (and min); the super-block stores fp16 factors for those. Layouts and
 * formulas: ggml/src/ggml-common.h (block_q*_K) and dequantize_row_q*_K in
 * ggml/src/ggml-quants.c; the GGUF spec lists the same types.
 *
 * In the formulas, e (0 <= e < 256) is an element's index in its super-block.
 * Included by quant/quant.h (which it includes for hl_half). */
#ifndef HEARTH_QUANT_K_H
#define HEARTH_QUANT_K_H

#include "quant/quant.h"

/* Elements per super-block (ggml's QK_K). */
#define HL_QK_K 256
/* Bytes of the packed 6-bit scales and mins of Q4_K/Q5_K (ggml's K_SCALE_SIZE). */
#define HL_K_SCALE_SIZE 12

/* 16 sub-blocks of 16. s = scales[e/16]:
 *   x[e] = d * (s & 15) * q[e] - dmin * (s >> 4),
 *   q[e] = (qs[32*(e/128) + e%32] >> (2 * ((e%128) / 32))) & 3.
 * 84 bytes, 2.625 bits per weight. */
typedef struct block_q2_K {
    uint8_t scales[HL_QK_K / 16];
    uint8_t qs[HL_QK_K / 4];
    hl_half d;
    hl_half dmin;
} block_q2_K;

/* 16 sub-blocks of 16 with 6-bit scales sc[i] (0 <= i < 16):
 *   sc[i] = (i < 8 ? scales[i] & 15 : scales[i-8] >> 4)
 *           | ((scales[8 + i%4] >> (2 * (i/4))) & 3) << 4,
 *   x[e] = d * (sc[e/16] - 32) * (q[e] - 4 * !hbit[e]),
 *   q[e] = 2 low bits as in block_q2_K, hbit[e] = (hmask[e%32] >> (e/32)) & 1.
 * 110 bytes, 3.4375 bits per weight. */
typedef struct block_q3_K {
    uint8_t hmask[HL_QK_K / 8];
    uint8_t qs[HL_QK_K / 4];
    uint8_t scales[12];
    hl_half d;
} block_q3_K;

/* 8 sub-blocks of 32 with 6-bit scales sc[j] and mins m[j] (0 <= j < 8),
 * packed in `scales` (ggml's get_scale_min_k4):
 *   j < 4:  sc[j] = scales[j] & 63,  m[j] = scales[j+4] & 63,
 *   j >= 4: sc[j] = (scales[j+4] & 15) | (scales[j-4] >> 6) << 4,
 *           m[j]  = (scales[j+4] >> 4) | (scales[j] >> 6) << 4.
 *   x[e] = d * sc[e/32] * q[e] - dmin * m[e/32],
 *   q[e] = qs[32*(e/64) + e%32] & 15 if e%64 < 32, else >> 4.
 * 144 bytes, 4.5 bits per weight. */
typedef struct block_q4_K {
    hl_half d;
    hl_half dmin;
    uint8_t scales[HL_K_SCALE_SIZE];
    uint8_t qs[HL_QK_K / 2];
} block_q4_K;

/* As block_q4_K with a fifth bit:
 *   x[e] = d * sc[e/32] * (q4[e] + 16 * hbit[e]) - dmin * m[e/32],
 *   q4[e] as q[e] of block_q4_K, hbit[e] = (qh[e%32] >> (e/32)) & 1.
 * 176 bytes, 5.5 bits per weight. */
typedef struct block_q5_K {
    hl_half d;
    hl_half dmin;
    uint8_t scales[HL_K_SCALE_SIZE];
    uint8_t qh[HL_QK_K / 8];
    uint8_t qs[HL_QK_K / 2];
} block_q5_K;

/* 16 sub-blocks of 16 with signed 8-bit scales. With h = e/128, r = e%128:
 *   x[e] = d * scales[e/16] * (q[e] - 32),
 *   q[e] = lo | hi << 4,
 *   lo = ql[64*h + r%64] & 15 if r < 64, else >> 4,
 *   hi = (qh[32*h + r%32] >> (2 * (r/32))) & 3.
 * 210 bytes, 6.5625 bits per weight. */
typedef struct block_q6_K {
    uint8_t ql[HL_QK_K / 2];
    uint8_t qh[HL_QK_K / 4];
    int8_t scales[HL_QK_K / 16];
    hl_half d;
} block_q6_K;

/* x[e] = d * qs[e], d in fp32; bsums[i] = sum of qs[16*i .. 16*i + 15], which
 * the K-quant dot products use to apply the mins. 292 bytes. */
typedef struct block_q8_K {
    float d;
    int8_t qs[HL_QK_K];
    int16_t bsums[HL_QK_K / 16];
} block_q8_K;

_Static_assert(sizeof(block_q2_K) == 84, "block_q2_K layout");
_Static_assert(sizeof(block_q3_K) == 110, "block_q3_K layout");
_Static_assert(sizeof(block_q4_K) == 144, "block_q4_K layout");
_Static_assert(sizeof(block_q5_K) == 176, "block_q5_K layout");
_Static_assert(sizeof(block_q6_K) == 210, "block_q6_K layout");
_Static_assert(sizeof(block_q8_K) == 292, "block_q8_K layout");

/* The 6-bit scale sc[i] (0 <= i < 16) of a block_q3_K, unsigned (0 .. 63). */
static inline int hl_q3_K_scale(const uint8_t scales[12], int i) {
    const int lo = i < 8 ? scales[i] & 15 : scales[i - 8] >> 4;
    return lo | ((scales[8 + i % 4] >> (2 * (i / 4))) & 3) << 4;
}

/* The 6-bit scale sc[j] and min m[j] (0 <= j < 8) of a block_q4_K/q5_K. */
static inline void hl_q4_K_scale_min(const uint8_t scales[HL_K_SCALE_SIZE], int j, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = scales[j] & 63;
        *m = scales[j + 4] & 63;
    } else {
        *sc = (uint8_t)((scales[j + 4] & 15) | (scales[j - 4] >> 6) << 4);
        *m = (uint8_t)((scales[j + 4] >> 4) | (scales[j] >> 6) << 4);
    }
}

/* Reference conversions of rows of n elements, n a multiple of HL_QK_K.
 * The quantizers are llama.cpp's quantize_row_*_ref (no importance matrix):
 * the same searches and roundings, so the same bytes. */
void hl_q2_K_to_float(const void *src, float *dst, int64_t n);
void hl_q2_K_from_float(const float *src, void *dst, int64_t n);
void hl_q3_K_to_float(const void *src, float *dst, int64_t n);
void hl_q3_K_from_float(const float *src, void *dst, int64_t n);
void hl_q4_K_to_float(const void *src, float *dst, int64_t n);
void hl_q4_K_from_float(const float *src, void *dst, int64_t n);
void hl_q5_K_to_float(const void *src, float *dst, int64_t n);
void hl_q5_K_from_float(const float *src, void *dst, int64_t n);
void hl_q6_K_to_float(const void *src, float *dst, int64_t n);
void hl_q6_K_from_float(const float *src, void *dst, int64_t n);
void hl_q8_K_to_float(const void *src, float *dst, int64_t n);
void hl_q8_K_from_float(const float *src, void *dst, int64_t n);

#endif
