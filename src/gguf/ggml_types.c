/* The ggml type table (see ggml_types.h). Values are ggml's, checked against
 * ggml/src/ggml.c type_traits and sizeof(block_*) from ggml-common.h; QK_K is
 * 256. A zero blck_size marks an id with no type. */
#include "gguf/ggml_types.h"

#include <stddef.h>

static const ggml_type_info types[GGML_TYPE_COUNT] = {
    [GGML_TYPE_F32] = {"f32", 1, 4},
    [GGML_TYPE_F16] = {"f16", 1, 2},
    [GGML_TYPE_Q4_0] = {"q4_0", 32, 18},
    [GGML_TYPE_Q4_1] = {"q4_1", 32, 20},
    [GGML_TYPE_Q5_0] = {"q5_0", 32, 22},
    [GGML_TYPE_Q5_1] = {"q5_1", 32, 24},
    [GGML_TYPE_Q8_0] = {"q8_0", 32, 34},
    [GGML_TYPE_Q8_1] = {"q8_1", 32, 36},
    [GGML_TYPE_Q2_K] = {"q2_K", 256, 84},
    [GGML_TYPE_Q3_K] = {"q3_K", 256, 110},
    [GGML_TYPE_Q4_K] = {"q4_K", 256, 144},
    [GGML_TYPE_Q5_K] = {"q5_K", 256, 176},
    [GGML_TYPE_Q6_K] = {"q6_K", 256, 210},
    [GGML_TYPE_Q8_K] = {"q8_K", 256, 292},
    [GGML_TYPE_IQ2_XXS] = {"iq2_xxs", 256, 66},
    [GGML_TYPE_IQ2_XS] = {"iq2_xs", 256, 74},
    [GGML_TYPE_IQ3_XXS] = {"iq3_xxs", 256, 98},
    [GGML_TYPE_IQ1_S] = {"iq1_s", 256, 50},
    [GGML_TYPE_IQ4_NL] = {"iq4_nl", 32, 18},
    [GGML_TYPE_IQ3_S] = {"iq3_s", 256, 110},
    [GGML_TYPE_IQ2_S] = {"iq2_s", 256, 82},
    [GGML_TYPE_IQ4_XS] = {"iq4_xs", 256, 136},
    [GGML_TYPE_I8] = {"i8", 1, 1},
    [GGML_TYPE_I16] = {"i16", 1, 2},
    [GGML_TYPE_I32] = {"i32", 1, 4},
    [GGML_TYPE_I64] = {"i64", 1, 8},
    [GGML_TYPE_F64] = {"f64", 1, 8},
    [GGML_TYPE_IQ1_M] = {"iq1_m", 256, 56},
    [GGML_TYPE_BF16] = {"bf16", 1, 2},
    [GGML_TYPE_TQ1_0] = {"tq1_0", 256, 54},
    [GGML_TYPE_TQ2_0] = {"tq2_0", 256, 66},
    [GGML_TYPE_MXFP4] = {"mxfp4", 32, 17},
    [GGML_TYPE_NVFP4] = {"nvfp4", 64, 36},
    [GGML_TYPE_Q1_0] = {"q1_0", 128, 18},
    [GGML_TYPE_Q2_0] = {"q2_0", 64, 18},
};

const ggml_type_info *hl_ggml_type_get(uint32_t type) {
    if (type >= GGML_TYPE_COUNT || types[type].blck_size == 0) return NULL;
    return &types[type];
}

int32_t hl_kv_type_at(int k) {
    static const int32_t kv_types[] = {GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q8_0, GGML_TYPE_Q4_0};
    return k >= 0 && k < (int)(sizeof kv_types / sizeof kv_types[0]) ? kv_types[k] : -1;
}

const char *hl_kv_type_name(int32_t type) {
    for (int k = 0; hl_kv_type_at(k) >= 0; k++)
        if (hl_kv_type_at(k) == type) return hl_ggml_type_get((uint32_t)type)->name;
    return NULL;
}
