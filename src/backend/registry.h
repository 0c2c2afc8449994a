/* The registry of the backends that can offload layers (ggml's
 * ggml_backend_reg, SQLite's sqlite3_vfs list): each backend's folder
 * exports one hl_backend_reg table, and registry.c's one list of entries,
 * in the order devices are numbered, is the only place that names a
 * backend or asks the build which ones it has. gpu.c loops over it for
 * counting, numbering, naming, selecting, creating and freeing; info.c for
 * the build's backend list. The CPU backend is in every build and is not
 * listed (host.h). */
#ifndef HEARTH_BACKEND_REGISTRY_H
#define HEARTH_BACKEND_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/gpu.h"

/* Device numbers here are the backend's own: 0 .. device_count() - 1. */
typedef struct hl_backend_reg {
    const char *name;    /* "cuda": its devices are named "cuda0", "cuda1" ... */
    const char *label;   /* "CUDA": the backend in reasons and warnings */
    const char *build;   /* as hearth_build_info lists it: "opencl+clblast" */
    /* Why this build has no such backend ("this build has no CUDA backend
     * (...)"); non-NULL only in the registry's entry for a backend left out
     * of the build, where nothing below is set. */
    const char *missing;
    /* Every device is a GPU: the default selection takes them all without
     * asking device_get (which may create a device context). Otherwise it
     * takes those whose hl_gpu_device.is_gpu is set. */
    bool all_gpus;
    /* Probes once per process (thread-safe); with no device, *reason
     * (static, one line) says why. */
    int32_t (*device_count)(const char **reason);
    /* Facts of a device into *out (zeroed, is_gpu preset to all_gpus;
     * gpu.c sets id). Errors: INVALID_ARG, DEVICE. */
    hearth_status (*device_get)(int32_t device, hl_gpu_device *out);
    /* An instance on a device; freed through its iface->free. Errors:
     * INVALID_ARG, DEVICE, OUT_OF_MEMORY. */
    hearth_status (*init)(int32_t device, const hl_gpu_limits *limits, hl_backend **out);
    /* Optional (NULL: none): the backend's dequantizer of `type` run on
     * the host over a row of n elements (gpu.h hl_gpu_dequant_host). */
    hearth_status (*dequant_host)(uint32_t type, const void *src, float *dst, int64_t n);
} hl_backend_reg;

/* Entry k of the registry (0, 1 ... in device numbering order), NULL past
 * the last. */
const hl_backend_reg *hl_backend_reg_at(int k);

/* Devices of entry r (0 for one the build lacks), and why none. */
int32_t hl_backend_reg_devices(const hl_backend_reg *r, const char **reason);

#endif
