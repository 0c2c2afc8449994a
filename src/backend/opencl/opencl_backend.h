/* The entry points of the OpenCL backend (src/backend/opencl); nothing else
 * leaves the folder. Callers go through backend/gpu.h, which numbers the
 * OpenCL devices after the CUDA ones. Device numbers here are the
 * backend's: every device of every platform the ICD loader lists, in its
 * order (opencl0, opencl1 ...). */
#ifndef HEARTH_OPENCL_BACKEND_H
#define HEARTH_OPENCL_BACKEND_H

#include "backend/gpu.h"

/* Probes the platforms and devices once per process. Returns the devices
 * found; with none, *reason (static) says why. Thread-safe. */
int32_t hl_opencl_device_count(const char **reason);

/* Facts of device `device`; name is "<device> (<platform>)", total_bytes the
 * device memory (or HEARTH_OPENCL_MEM_LIMIT MiB, when set and smaller: tests
 * of too little memory), free_bytes that less what hearth holds there
 * (OpenCL cannot tell what others hold).
 * Errors: INVALID_ARG. */
hearth_status hl_opencl_device_get(int32_t device, hl_gpu_device *out);

/* An instance on `device`; one with max_tokens > 0 builds the kernels at
 * its first use on the device (cached on disk, program.c). Errors:
 * INVALID_ARG, DEVICE, OUT_OF_MEMORY. */
hearth_status hl_backend_opencl_init(int32_t device, const hl_gpu_limits *limits, hl_backend **out);
void hl_backend_opencl_free(hl_backend *b);

#endif
