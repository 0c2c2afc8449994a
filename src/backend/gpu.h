/* Offload devices as the rest of the library sees them, whatever backend
 * drives them: whether any is usable and why not, their facts, which ones
 * offloaded layers go to (hl_gpu_select), and backend instances on them.
 * Devices are numbered in the order of the registry's offload entries
 * (registry.h: CUDA's, then OpenCL's; 0 .. hl_gpu_count() - 1; the host's
 * entry, the CPU, is not among them); each also has a name,
 * "cuda0" or "opencl1", its backend's name and its number there. gpu.c
 * answers by looping over the registry, so no other file names a backend
 * or branches on the build. HEARTH_FORCE_CPU=1 hides every device. */
#ifndef HEARTH_BACKEND_GPU_H
#define HEARTH_BACKEND_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

#define HL_MAX_GPUS 16

typedef struct hl_gpu_device {
    char name[256];
    char id[24];                /* "cuda0", "opencl1": the name --device takes */
    int32_t cc_major, cc_minor; /* CUDA compute capability; 0 for OpenCL */
    int32_t compute_units;      /* CUDA multiprocessors, OpenCL compute units */
    bool is_gpu;                /* false for an OpenCL CPU device (PoCL's) */
    size_t free_bytes, total_bytes;
    const char *backend;       /* its registry entry's name, "cuda", "opencl" (id's prefix) */
    const char *backend_label; /* and label, "CUDA", "OpenCL" */
} hl_gpu_device;

/* Scratch a compute instance sizes once (the token loop never allocates). */
typedef struct hl_gpu_limits {
    int64_t max_tokens;        /* most tokens in one op; 0: an instance that only holds weights */
    int64_t max_row;           /* longest matmul input row (max of n_embd, n_ff, n_head * head_dim) */
    size_t gemm_scratch_bytes; /* prompt matmuls: cuBLAS's F16 weight tiles; CLBlast's F32 tiles and its buffer */
} hl_gpu_limits;

/* Devices of every backend (CUDA_VISIBLE_DEVICES applies to CUDA's);
 * probed once per process. 0 when the build has no device backend, no
 * driver or device is found, or HEARTH_FORCE_CPU=1. Thread-safe. */
int32_t hl_gpu_count(void);

/* The devices offloaded layers go to, as numbers of hl_gpu_count()'s range
 * in the order given, into ids[HL_MAX_GPUS]: `list` ("opencl0,opencl1"),
 * or when it is NULL or empty the environment variable HEARTH_DEVICE, or
 * when that is unset the default: the GPUs of the first backend that has
 * any, so every CUDA device, else every OpenCL GPU or accelerator (an
 * OpenCL CPU device only when named). Errors:
 * INVALID_ARG (an unknown or repeated name; the message lists the devices). */
hearth_status hl_gpu_select(const char *list, int32_t *ids, int32_t *n);

/* Why the default selection (hl_gpu_select(NULL)) is empty (a static
 * string): the first backend's reason, then "; <label>: <reason>" for each
 * other ("...; OpenCL: ..."); NULL when it is not empty. */
const char *hl_gpu_unavailable_reason(void);

/* Logs "CUDA unavailable (<reason>); running on CPU" (the first backend's
 * label) at warn level, once per process, however often it is called. */
void hl_gpu_note_fallback(void);

/* Facts of device `i` (0 <= i < hl_gpu_count()), free memory as of now
 * (OpenCL: total less what hearth holds there). Errors: INVALID_ARG (i out
 * of range), DEVICE. */
hearth_status hl_gpu_device_get(int32_t i, hl_gpu_device *out);

/* A backend instance on device `i`. Errors: INVALID_ARG, DEVICE,
 * OUT_OF_MEMORY (scratch). Free with hl_gpu_backend_free (NULL is a no-op),
 * which calls the instance's iface->free. */
hearth_status hl_gpu_backend_init(int32_t i, const hl_gpu_limits *limits, hl_backend **out);
void hl_gpu_backend_free(hl_backend *b);

/* The GPU dequantizer of `type` (the first registry entry's that has one:
 * CUDA's) run on the host over a row of n elements (tests check the
 * kernels' block formulas against quant/ without a GPU).
 * Errors: UNSUPPORTED (no such backend in the build or its module missing,
 * or the type),
 * INVALID_ARG (n not a multiple of the block size). */
hearth_status hl_gpu_dequant_host(uint32_t type, const void *src, float *dst, int64_t n);

#endif
