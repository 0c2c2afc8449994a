/* The C entry points of the CUDA backend (the .cu files of src/backend/cuda);
 * nothing else leaves the folder. Callers go through backend/gpu.h, which
 * forwards here when the build has CUDA. Device numbers are hearth's: the
 * usable CUDA devices in the runtime's order (after CUDA_VISIBLE_DEVICES). */
#ifndef HEARTH_CUDA_BACKEND_H
#define HEARTH_CUDA_BACKEND_H

#include "backend/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Probes the driver and devices once per process. Returns the usable
 * devices; with none, *reason (static) says why. Thread-safe. */
int32_t hl_cuda_device_count(const char **reason);
hearth_status hl_cuda_device_get(int32_t device, hl_gpu_device *out);

hearth_status hl_backend_cuda_init(int32_t device, const hl_gpu_limits *limits, hl_backend **out);
void hl_backend_cuda_free(hl_backend *b);

/* Runs the device dequantizer of `type` on the host over a row of n
 * elements: the block-layout formulas the kernels use, testable without a
 * GPU. Errors: UNSUPPORTED (type), INVALID_ARG (n not a multiple of the
 * block size). */
hearth_status hl_cuda_dequant_host(uint32_t type, const void *src, float *dst, int64_t n);

#ifdef __cplusplus
}
#endif

#endif
