/* The ggml tensor types a GGUF file may name: id, name, block size and block
 * byte size, copied from ggml (ggml/include/ggml.h enum ggml_type and the
 * type_traits table in ggml/src/ggml.c; block layouts in ggml-common.h). Only
 * these facts live here; (de)quantization is built on top in src/quant/. */
#ifndef HEARTH_GGUF_GGML_TYPES_H
#define HEARTH_GGUF_GGML_TYPES_H

#include <stdint.h>

/* ggml's ids. Gaps are removed types, now unknown: 4, 5 (Q4_2, Q4_3) and
 * 31..33, 36..38 (the repacked Q4_0_x_x / IQ4_NL_x_x layouts). */
enum {
    GGML_TYPE_F32 = 0,
    GGML_TYPE_F16 = 1,
    GGML_TYPE_Q4_0 = 2,
    GGML_TYPE_Q4_1 = 3,
    GGML_TYPE_Q5_0 = 6,
    GGML_TYPE_Q5_1 = 7,
    GGML_TYPE_Q8_0 = 8,
    GGML_TYPE_Q8_1 = 9,
    GGML_TYPE_Q2_K = 10,
    GGML_TYPE_Q3_K = 11,
    GGML_TYPE_Q4_K = 12,
    GGML_TYPE_Q5_K = 13,
    GGML_TYPE_Q6_K = 14,
    GGML_TYPE_Q8_K = 15,
    GGML_TYPE_IQ2_XXS = 16,
    GGML_TYPE_IQ2_XS = 17,
    GGML_TYPE_IQ3_XXS = 18,
    GGML_TYPE_IQ1_S = 19,
    GGML_TYPE_IQ4_NL = 20,
    GGML_TYPE_IQ3_S = 21,
    GGML_TYPE_IQ2_S = 22,
    GGML_TYPE_IQ4_XS = 23,
    GGML_TYPE_I8 = 24,
    GGML_TYPE_I16 = 25,
    GGML_TYPE_I32 = 26,
    GGML_TYPE_I64 = 27,
    GGML_TYPE_F64 = 28,
    GGML_TYPE_IQ1_M = 29,
    GGML_TYPE_BF16 = 30,
    GGML_TYPE_TQ1_0 = 34,
    GGML_TYPE_TQ2_0 = 35,
    GGML_TYPE_MXFP4 = 39,
    GGML_TYPE_NVFP4 = 40,
    GGML_TYPE_Q1_0 = 41,
    GGML_TYPE_Q2_0 = 42,
    GGML_TYPE_COUNT = 43,
};

typedef struct ggml_type_info {
    const char *name;   /* ggml's type_name: "f32", "q4_K", "iq2_xxs" ... */
    uint32_t blck_size; /* elements per block (1 for plain types) */
    uint32_t type_size; /* bytes per block */
} ggml_type_info;

/* The facts of ggml type `type`, or NULL for a removed or unknown id. */
const ggml_type_info *hl_ggml_type_get(uint32_t type);

/* The types a KV cache holds (hearth.h's hearth_kv_type: f16, bf16, q8_0,
 * q4_0): k-th of them (ggml's id), or -1 past the last. */
int32_t hl_kv_type_at(int k);

/* ggml's name of KV cache type `type`, or NULL when no KV cache holds it. */
const char *hl_kv_type_name(int32_t type);

#endif
