/* GPU devices as the rest of the library sees them, whatever backend drives
 * them (CUDA today): whether any is usable and why not, their facts, and
 * backend instances on them. gpu.c answers from the CUDA backend when the
 * build has it, and "no GPU backend in this build" otherwise, so no other
 * file branches on the build. HEARTH_FORCE_CPU=1 hides every device. */
#ifndef HEARTH_BACKEND_GPU_H
#define HEARTH_BACKEND_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

#define HL_MAX_GPUS 16

typedef struct hl_gpu_device {
    char name[256];
    int32_t cc_major, cc_minor; /* compute capability */
    size_t free_bytes, total_bytes;
} hl_gpu_device;

/* Scratch a compute instance sizes once (the token loop never allocates). */
typedef struct hl_gpu_limits {
    int64_t max_tokens;        /* most tokens in one op; 0: an instance that only holds weights */
    int64_t max_row;           /* longest matmul input row (max of n_embd, n_ff, n_head * head_dim) */
    size_t gemm_scratch_bytes; /* F16 weight tiles for prompt matmuls (cuBLAS) */
} hl_gpu_limits;

/* Usable devices (CUDA_VISIBLE_DEVICES applies); probed once per process.
 * 0 when the build has no GPU backend, no driver or device is found, or
 * HEARTH_FORCE_CPU=1. Thread-safe. */
int32_t hl_gpu_count(void);

/* Why hl_gpu_count() is 0 (a static string), or NULL when it is not. */
const char *hl_gpu_unavailable_reason(void);

/* Logs "CUDA unavailable (<reason>); running on CPU" at warn level, once per
 * process, however often it is called. */
void hl_gpu_note_fallback(void);

/* Facts of device `i` (0 <= i < hl_gpu_count()), free memory as of now.
 * Errors: INVALID_ARG (i out of range), DEVICE. */
hearth_status hl_gpu_device_get(int32_t i, hl_gpu_device *out);

/* A backend instance on device `i`. Errors: INVALID_ARG, DEVICE,
 * OUT_OF_MEMORY (scratch). Free with hl_gpu_backend_free (NULL is a no-op). */
hearth_status hl_gpu_backend_init(int32_t i, const hl_gpu_limits *limits, hl_backend **out);
void hl_gpu_backend_free(hl_backend *b);

/* The GPU dequantizer of `type` run on the host over a row of n elements
 * (tests check the kernels' block formulas against quant/ without a GPU).
 * Errors: UNSUPPORTED (no GPU backend in the build, or the type),
 * INVALID_ARG (n not a multiple of the block size). */
hearth_status hl_gpu_dequant_host(uint32_t type, const void *src, float *dst, int64_t n);

#endif
