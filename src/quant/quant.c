/* The table of reference conversions (hl_quant_get), row sizes, and the
 * conversions of the float types F32, F16 and BF16. The block types live in
 * one file per family: quant_legacy.c (Q4_0, Q4_1, Q8_0, Q8_1), quant_q5.c
 * (Q5_0, Q5_1), quant_k.c and quant_k_quantize.c (Q2_K ... Q6_K, Q8_K); a new
 * format adds a file and a row to the table below. */
#include "quant/quant.h"

static const hl_quant_traits quant_traits[] = {
    {GGML_TYPE_F32, hl_f32_to_float, hl_f32_from_float},    {GGML_TYPE_F16, hl_f16_to_float, hl_f16_from_float},
    {GGML_TYPE_BF16, hl_bf16_to_float, hl_bf16_from_float}, {GGML_TYPE_Q4_0, hl_q4_0_to_float, hl_q4_0_from_float},
    {GGML_TYPE_Q4_1, hl_q4_1_to_float, hl_q4_1_from_float}, {GGML_TYPE_Q8_0, hl_q8_0_to_float, hl_q8_0_from_float},
    {GGML_TYPE_Q8_1, hl_q8_1_to_float, hl_q8_1_from_float}, {GGML_TYPE_Q5_0, hl_q5_0_to_float, hl_q5_0_from_float},
    {GGML_TYPE_Q5_1, hl_q5_1_to_float, hl_q5_1_from_float}, {GGML_TYPE_Q2_K, hl_q2_K_to_float, hl_q2_K_from_float},
    {GGML_TYPE_Q3_K, hl_q3_K_to_float, hl_q3_K_from_float}, {GGML_TYPE_Q4_K, hl_q4_K_to_float, hl_q4_K_from_float},
    {GGML_TYPE_Q5_K, hl_q5_K_to_float, hl_q5_K_from_float}, {GGML_TYPE_Q6_K, hl_q6_K_to_float, hl_q6_K_from_float},
    {GGML_TYPE_Q8_K, hl_q8_K_to_float, hl_q8_K_from_float},
};

const hl_quant_traits *hl_quant_get(uint32_t type) {
    for (size_t i = 0; i < sizeof quant_traits / sizeof quant_traits[0]; i++) {
        if (quant_traits[i].type == type) return &quant_traits[i];
    }
    return NULL;
}

size_t hl_row_size(uint32_t type, int64_t n) {
    const ggml_type_info *info = hl_ggml_type_get(type);
    if (!info || info->blck_size == 0 || n < 0 || n % (int64_t)info->blck_size != 0) return 0;
    return (size_t)(n / (int64_t)info->blck_size) * (size_t)info->type_size;
}

void hl_f32_to_float(const void *src, float *dst, int64_t n) { memcpy(dst, src, (size_t)n * sizeof(float)); }

void hl_f32_from_float(const float *src, void *dst, int64_t n) { memcpy(dst, src, (size_t)n * sizeof(float)); }

void hl_f16_to_float(const void *src, float *dst, int64_t n) {
    const hl_half *x = src;
    for (int64_t i = 0; i < n; i++) dst[i] = hl_fp16_to_fp32(x[i]);
}

void hl_f16_from_float(const float *src, void *dst, int64_t n) {
    hl_half *y = dst;
    for (int64_t i = 0; i < n; i++) y[i] = hl_fp32_to_fp16(src[i]);
}

void hl_bf16_to_float(const void *src, float *dst, int64_t n) {
    const hl_bf16 *x = src;
    for (int64_t i = 0; i < n; i++) dst[i] = hl_bf16_to_fp32(x[i]);
}

void hl_bf16_from_float(const float *src, void *dst, int64_t n) {
    hl_bf16 *y = dst;
    for (int64_t i = 0; i < n; i++) y[i] = hl_fp32_to_bf16(src[i]);
}
