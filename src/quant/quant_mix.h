/* Quantization mixes ("file types"): which ggml type each tensor of a model
 * gets when the model is quantized to Q4_K_M, Q4_0, F16 ... The rules are
 * llama.cpp's (src/llama-quant.cpp: llama_tensor_get_type and its helpers), so
 * a hearth-quantized file has the tensor types llama-quantize would give it. */
#ifndef HEARTH_QUANT_MIX_H
#define HEARTH_QUANT_MIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hearth.h"

typedef struct hl_mix hl_mix;

/* The mixes hearth knows, in the order `hearth quantize --help` lists them. */
size_t hl_mix_count(void);
const hl_mix *hl_mix_at(size_t i);
/* By name, case-insensitive ("q4_k_m"); NULL if unknown. */
const hl_mix *hl_mix_find(const char *name);
/* By llama.cpp's LLAMA_FTYPE value (general.file_type); NULL if not a mix here. */
const hl_mix *hl_mix_by_ftype(uint32_t ftype);

const char *hl_mix_name(const hl_mix *mix); /* "Q4_K_M" */
uint32_t hl_mix_ftype(const hl_mix *mix);   /* LLAMA_FTYPE_MOSTLY_Q4_K_M = 15 */
uint32_t hl_mix_base(const hl_mix *mix);    /* GGML_TYPE_Q4_K: what most tensors get */

/* The model facts the rules look at (from the GGUF metadata). */
typedef struct hl_mix_model {
    bool falcon;       /* general.architecture is "falcon" */
    bool is_70b;       /* llama.cpp's LLM_TYPE_70B: a llama with 80 layers and GQA */
    uint32_t n_gqa;    /* n_head / n_head_kv (layer 0); 0 when unknown */
    uint32_t n_expert; /* <arch>.expert_count; 0 when absent */
    int32_t n_layer;   /* <arch>.block_count, at least 1 */
} hl_mix_model;

typedef struct hl_mix_tensor {
    const char *name; /* NUL-terminated */
    uint32_t n_dims;
    int64_t ne0;   /* elements per row */
    uint32_t type; /* ggml type in the input */
    /* set by hl_mix_plan: */
    uint32_t new_type; /* ggml type in the output (== type: copied as is) */
    bool fallback;     /* the rules' type does not fit ne0; new_type replaced it */
} hl_mix_tensor;

/* Sets new_type (and fallback) of each of the n tensors as llama.cpp's
 * llama_tensor_get_type would for `mix`. Tensors are visited in llama.cpp's
 * order (by layer, then name), which its per-layer counters depend on.
 * Errors: OUT_OF_MEMORY. */
hearth_status hl_mix_plan(const hl_mix *mix, const hl_mix_model *model, hl_mix_tensor *t, size_t n);

#endif
