/* The registry of backends (ggml's ggml_backend_reg, SQLite's sqlite3_vfs
 * list): each backend's folder exports one hl_backend_reg table, and
 * registry.c's one list of entries is the only place that names a backend
 * or asks the build which ones it has. The first entry is the host's, the
 * CPU backend (in every build, marked `host`): its one device is the
 * machine the library runs on, which takes every layer not offloaded, so it
 * is not numbered among the offload devices. The other entries are the
 * backends that can offload layers, in the order their devices are
 * numbered (hl_backend_reg_at). gpu.c loops over those for counting,
 * numbering, naming, selecting, creating and freeing; info.c over the
 * host's and theirs for the build's backend list. */
#ifndef HEARTH_BACKEND_REGISTRY_H
#define HEARTH_BACKEND_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/gpu.h"

/* Device numbers here are the backend's own: 0 .. device_count() - 1. */
typedef struct hl_backend_reg {
    const char *name;  /* "cuda": its devices are named "cuda0", "cuda1" ... */
    const char *label; /* "CUDA": the backend in reasons and warnings */
    const char *build; /* as hearth_build_info lists it: "opencl+clblast" */
    /* Why this build has no such backend ("this build has no CUDA backend
     * (...)"); non-NULL only in the registry's entry for a backend left out
     * of the build, where nothing below is set. */
    const char *missing;
    /* The host's entry (the CPU backend): one device, 0, never numbered
     * among the offload devices nor selected by gpu.c; device_get is NULL
     * (host.h has its facts) and init makes only instances that hold
     * weights (max_tokens 0; compute instances come from host.h's
     * hl_backend_cpu_init, with threads and a context length). */
    bool host;
    /* Every device is a GPU: the default selection takes them all without
     * asking device_get (which may create a device context). Otherwise it
     * takes those whose hl_gpu_device.is_gpu is set. */
    bool all_gpus;
    /* Probes once per process (thread-safe); with no device, *reason
     * (static, one line) says why. */
    int32_t (*device_count)(const char **reason);
    /* Facts of a device into *out (zeroed, is_gpu preset to all_gpus;
     * gpu.c sets id and backend). Errors: INVALID_ARG, DEVICE. */
    hearth_status (*device_get)(int32_t device, hl_gpu_device *out);
    /* An instance on a device; freed through its iface->free. Errors:
     * INVALID_ARG, DEVICE, OUT_OF_MEMORY. */
    hearth_status (*init)(int32_t device, const hl_gpu_limits *limits, hl_backend **out);
    /* Optional (NULL: none): the backend's dequantizer of `type` run on
     * the host over a row of n elements (gpu.h hl_gpu_dequant_host). */
    hearth_status (*dequant_host)(uint32_t type, const void *src, float *dst, int64_t n);
} hl_backend_reg;

/* Offload entry k of the registry (0, 1 ... in device numbering order: the
 * entries but the host's), NULL past the last. */
const hl_backend_reg *hl_backend_reg_at(int k);

/* The host's entry (the CPU backend's), in every build. */
const hl_backend_reg *hl_backend_reg_host(void);

/* Devices of entry r (0 for one the build lacks), and why none. */
int32_t hl_backend_reg_devices(const hl_backend_reg *r, const char **reason);

#endif
