/* Tensor block formats: the byte layouts of ggml's quantized types, fp16/bf16
 * conversion, and scalar reference (de)quantizers. These are the ground truth
 * that the CPU and GPU kernels are tested against, and they are bit-exact with
 * ggml (ggml/src/ggml-quants.c) and gguf-py (gguf/quants.py).
 *
 * Layouts follow ggml/src/ggml-common.h and the GGUF spec
 * (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md): a row of n
 * elements is n / QK blocks stored back to back, with no padding. Multi-byte
 * fields are little-endian, which is also the host order hearth supports.
 *
 * Types are numbered as ggml numbers them (GGML_TYPE_* in gguf/ggml_types.h);
 * block size and bytes per block come from that table. */
#ifndef HEARTH_QUANT_H
#define HEARTH_QUANT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gguf/ggml_types.h"

/* ------------------------------------------------------- half floats -- */

typedef uint16_t hl_half; /* IEEE 754 binary16 bits (ggml_half) */
typedef uint16_t hl_bf16; /* bfloat16 bits: the top half of a binary32 */

static inline uint32_t hl_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float hl_f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Exact: every binary16 value is a binary32 value. NaN payloads are kept. */
static inline float hl_fp16_to_fp32(hl_half h) {
    const uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    const uint32_t exp = (h >> 10) & 0x1f;
    const uint32_t mant = h & 0x3ff;
    if (exp == 0x1f) return hl_f32_from_bits(sign | 0x7f800000 | mant << 13); /* inf, NaN */
    if (exp == 0) { /* zero or subnormal: mant * 2^-24, exact in binary32 */
        return hl_f32_from_bits(sign | hl_f32_bits((float)mant * 0x1p-24f));
    }
    return hl_f32_from_bits(sign | (exp + 127 - 15) << 23 | mant << 13);
}

/* Round to nearest, ties to even (as F16C's vcvtps2ph and ggml); values from
 * 65520 up become inf; NaN becomes the quiet NaN 0x7e00 with its sign. */
static inline hl_half hl_fp32_to_fp16(float f) {
    const uint32_t x = hl_f32_bits(f);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7fffffff;
    if (ax > 0x7f800000) return sign | 0x7e00;
    if (ax >= 0x47800000) return sign | 0x7c00; /* >= 2^16: inf */
    if (ax < 0x38800000) {
        /* Below 2^-14, the fp16 result is a multiple of 2^-24. Adding 0.5 (whose
         * ulp is 2^-24) lets the FPU round |f| to that grid, ties to even; the
         * low mantissa bits of the sum are then the fp16 bits. */
        const float sum = hl_f32_from_bits(ax) + 0.5f;
        return sign | (uint16_t)(hl_f32_bits(sum) - hl_f32_bits(0.5f));
    }
    ax += 0xfff + ((ax >> 13) & 1);   /* round the 13 dropped bits, ties to even */
    ax -= (uint32_t)(127 - 15) << 23; /* rebias the exponent; a carry may make inf */
    return sign | (uint16_t)(ax >> 13);
}

static inline float hl_bf16_to_fp32(hl_bf16 h) { return hl_f32_from_bits((uint32_t)h << 16); }

/* Round to nearest, ties to even; NaN stays NaN with the quiet bit forced
 * (ggml_compute_fp32_to_bf16 in ggml-impl.h). */
static inline hl_bf16 hl_fp32_to_bf16(float f) {
    const uint32_t x = hl_f32_bits(f);
    if ((x & 0x7fffffff) > 0x7f800000) return (hl_bf16)((x >> 16) | 0x40);
    return (hl_bf16)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

/* ------------------------------------------------------------ blocks -- */

/* Elements per block of every type below (QK4_0 = QK4_1 = QK5_0 = QK5_1 =
 * QK8_0 = QK8_1). */
#define HL_QK 32

/* x[i] = d * (q[i] - 8); element j < 16 is the low nibble of qs[j], element
 * j + 16 its high nibble. 18 bytes. */
typedef struct block_q4_0 {
    hl_half d;
    uint8_t qs[HL_QK / 2];
} block_q4_0;

/* x[i] = d * q[i] + m; nibbles packed as in block_q4_0. 20 bytes. */
typedef struct block_q4_1 {
    hl_half d;
    hl_half m;
    uint8_t qs[HL_QK / 2];
} block_q4_1;

/* x[i] = d * qs[i]. 34 bytes. */
typedef struct block_q8_0 {
    hl_half d;
    int8_t qs[HL_QK];
} block_q8_0;

/* x[i] = d * qs[i], with s = d * sum(qs) precomputed for the q4_1 dot product
 * (sum_i (dw*qw[i] + m) * (d*qs[i]) = dw*d*sum(qw*qs) + m*s). 36 bytes. */
typedef struct block_q8_1 {
    hl_half d;
    hl_half s;
    int8_t qs[HL_QK];
} block_q8_1;

/* x[i] = d * (q[i] - 16), q[i] a 5-bit value: the low 4 bits packed as in
 * block_q4_0, bit 4 of element i (0 <= i < 32) is bit i of the little-endian
 * uint32 qh (ggml-common.h block_q5_0, dequantize_row_q5_0). 22 bytes. */
typedef struct block_q5_0 {
    hl_half d;
    uint8_t qh[4];
    uint8_t qs[HL_QK / 2];
} block_q5_0;

/* x[i] = d * q[i] + m; q[i] 5-bit, packed as in block_q5_0. 24 bytes. */
typedef struct block_q5_1 {
    hl_half d;
    hl_half m;
    uint8_t qh[4];
    uint8_t qs[HL_QK / 2];
} block_q5_1;

_Static_assert(sizeof(block_q4_0) == 18, "block_q4_0 layout");
_Static_assert(sizeof(block_q4_1) == 20, "block_q4_1 layout");
_Static_assert(sizeof(block_q8_0) == 34, "block_q8_0 layout");
_Static_assert(sizeof(block_q8_1) == 36, "block_q8_1 layout");
_Static_assert(sizeof(block_q5_0) == 22, "block_q5_0 layout");
_Static_assert(sizeof(block_q5_1) == 24, "block_q5_1 layout");

/* The element of largest magnitude, with its sign (the first one on ties):
 * the scale of the symmetric legacy quantizers (Q4_0, Q5_0). */
static inline float hl_signed_absmax(const float *x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++) {
        if (amax < (x[j] < 0 ? -x[j] : x[j])) {
            amax = x[j] < 0 ? -x[j] : x[j];
            max = x[j];
        }
    }
    return max;
}

/* ------------------------------------------------------------ traits -- */

/* Converts a row of n elements (n a multiple of the type's block size). */
typedef void (*hl_to_float_fn)(const void *src, float *dst, int64_t n);
typedef void (*hl_from_float_fn)(const float *src, void *dst, int64_t n);

typedef struct hl_quant_traits {
    uint32_t type;               /* GGML_TYPE_* */
    hl_to_float_fn to_float;     /* reference dequantizer */
    hl_from_float_fn from_float; /* reference quantizer (ggml's *_ref) */
} hl_quant_traits;

/* The reference conversions of `type`, or NULL if hearth cannot compute with
 * this type (yet). Both functions are set for every type returned. */
const hl_quant_traits *hl_quant_get(uint32_t type);

/* Bytes of a row of n elements of `type`; 0 if the type is unknown or n is
 * negative or not a multiple of the block size. */
size_t hl_row_size(uint32_t type, int64_t n);

/* The reference conversions by name. `src`/`dst` hold n elements, n a
 * multiple of HL_QK for the block types. */
void hl_f32_to_float(const void *src, float *dst, int64_t n);
void hl_f32_from_float(const float *src, void *dst, int64_t n);
void hl_f16_to_float(const void *src, float *dst, int64_t n);
void hl_f16_from_float(const float *src, void *dst, int64_t n);
void hl_bf16_to_float(const void *src, float *dst, int64_t n);
void hl_bf16_from_float(const float *src, void *dst, int64_t n);
void hl_q4_0_to_float(const void *src, float *dst, int64_t n);
void hl_q4_0_from_float(const float *src, void *dst, int64_t n);
void hl_q4_1_to_float(const void *src, float *dst, int64_t n);
void hl_q4_1_from_float(const float *src, void *dst, int64_t n);
void hl_q8_0_to_float(const void *src, float *dst, int64_t n);
void hl_q8_0_from_float(const float *src, void *dst, int64_t n);
void hl_q8_1_to_float(const void *src, float *dst, int64_t n);
void hl_q8_1_from_float(const float *src, void *dst, int64_t n);
void hl_q5_0_to_float(const void *src, float *dst, int64_t n);
void hl_q5_0_from_float(const float *src, void *dst, int64_t n);
void hl_q5_1_to_float(const void *src, float *dst, int64_t n);
void hl_q5_1_from_float(const float *src, void *dst, int64_t n);

/* The 256-element super-block types (K-quants) and Q8_K. */
#include "quant/quant_k.h"

#endif
