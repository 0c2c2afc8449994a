/* The CUDA backend as a loadable module and the library's side of it.
 *
 * The .cu files of this folder build libhearth-cuda.so, which links the CUDA
 * runtime (static) and cuBLAS; libhearth links neither. loader.c (part of
 * libhearth) opens the module with dlopen at the first probe and reaches it
 * only through the table below; its registry entry (hl_cuda_backend,
 * registry.h) forwards there, and an instance is freed through its
 * iface->free. The module exports one
 * symbol, HL_CUDA_MODULE_ENTRY (module.map hides the rest, cudart's
 * included). It holds no copy of the library's state: the few library
 * functions the kernels' host code calls (hl_fail, hl_log, hl_calloc, the
 * type table ...) are defined in module.cu as forwarders to the host
 * services the library hands over at load, so an error set in the module is
 * the caller's hearth_last_error(). A .cu file that needs another library
 * function adds it to hl_cuda_host (and bumps HL_CUDA_MODULE_VERSION): the
 * module is linked with --no-undefined, so a missing one fails the build.
 *
 * Device numbers are hearth's: the usable CUDA devices in the runtime's order
 * (after CUDA_VISIBLE_DEVICES), each shown HEARTH_CUDA_SPLIT times (tests
 * only: one GPU as several logical devices, see device.cu). The folder's
 * files by role: device.cu probes, backend.cu is the instance (its
 * hl_backend_i table), the op families' .cu files are the ops, module.cu
 * the module's entry, loader.c the library's side. */
#ifndef HEARTH_CUDA_BACKEND_H
#define HEARTH_CUDA_BACKEND_H

#include <stdint.h>

#include "backend/gpu.h"
#include "backend/registry.h"
#include "gguf/ggml_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever hl_cuda_host, hl_cuda_module or their meaning changes.
 * hl_cuda_abi() also covers the sizes of the structs both sides share, so
 * a module from another build of the sources fails to load with a reason
 * instead of misreading them. */
#define HL_CUDA_MODULE_VERSION 2u
#define HL_CUDA_MODULE_FILE "libhearth-cuda.so"
#define HL_CUDA_MODULE_ENTRY "hl_cuda_module_entry"

/* What the library lends the module (filled by loader.c). Messages are
 * formatted by the module; these record or pass them on. */
typedef struct hl_cuda_host {
    hearth_status (*fail)(hearth_status st, const char *msg); /* hl_fail(st, "%s", msg) */
    void (*log)(hearth_log_level level, const char *msg);
    void *(*calloc_at)(size_t n, size_t size, const char *file, int line);
    void *(*malloc_at)(size_t n, const char *file, int line);
    const ggml_type_info *(*ggml_type_get)(uint32_t type);
    size_t (*row_size)(uint32_t type, int64_t n);
    int64_t (*tensor_nelements)(const hl_tensor *t);
} hl_cuda_host;

/* The module's entry points; semantics as the hl_gpu_* functions of gpu.h
 * they serve, for CUDA devices numbered 0 .. device_count() - 1. */
typedef struct hl_cuda_module {
    uint32_t version; /* HL_CUDA_MODULE_VERSION the module was built with */
    uint64_t abi;     /* hl_cuda_abi() as the module was built */
    /* Probes the driver and devices once per process (no context is
     * created); with none usable, *reason (static) says why. Thread-safe. */
    int32_t (*device_count)(const char **reason);
    /* Facts of a device; free memory needs its context (created here). */
    hearth_status (*device_get)(int32_t device, hl_gpu_device *out);
    hearth_status (*backend_init)(int32_t device, const hl_gpu_limits *limits, hl_backend **out);
    /* The device dequantizer of `type` run on the host over a row of n
     * elements. Errors: UNSUPPORTED (type), INVALID_ARG (n not whole blocks). */
    hearth_status (*dequant_host)(uint32_t type, const void *src, float *dst, int64_t n);
} hl_cuda_module;

/* The module's one exported function: keeps `host` (when `version` is its
 * own) and returns its table. */
typedef const hl_cuda_module *(*hl_cuda_module_entry_fn)(uint32_t version, const hl_cuda_host *host);

/* A fingerprint of the layouts both sides must agree on. */
static inline uint64_t hl_cuda_abi(void) {
    const size_t sizes[] = {sizeof(hl_cuda_host), sizeof(hl_cuda_module), sizeof(hl_backend_i),  sizeof(hl_backend),
                            sizeof(hl_tensor),    sizeof(hl_gpu_device),  sizeof(hl_gpu_limits), sizeof(hl_attn_args),
                            sizeof(hl_op_desc),   sizeof(hl_rope_params), sizeof(ggml_type_info)};
    uint64_t h = 14695981039346656037ull; /* FNV-1a over the sizes */
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) h = (h ^ (uint64_t)sizes[i]) * 1099511628211ull;
    return h;
}

/* loader.c, in libhearth: the module's table, loaded once per process
 * (thread-safe): from $HEARTH_CUDA_MODULE when set, else HL_CUDA_MODULE_FILE
 * in the folder of the binary or library holding libhearth's code, else the
 * library search path. NULL when it cannot be loaded, with *reason (static,
 * one line) saying what is missing: the module, a library it needs (named),
 * or a matching build. */
const hl_cuda_module *hl_cuda_module_get(const char **reason);

/* loader.c: the registry's entry for CUDA, through the module's table. */
extern const hl_backend_reg hl_cuda_backend;

/* The module's implementations behind the table (device.cu: probing;
 * backend.cu: the instance). */
int32_t hl_cuda_device_count(const char **reason);
hearth_status hl_cuda_device_get(int32_t device, hl_gpu_device *out);
hearth_status hl_backend_cuda_init(int32_t device, const hl_gpu_limits *limits, hl_backend **out);
hearth_status hl_cuda_dequant_host(uint32_t type, const void *src, float *dst, int64_t n);
/* device.cu: CUDA ordinal of hearth's device `device` (<
 * hl_cuda_device_count()), and how many logical devices share each physical
 * one (HEARTH_CUDA_SPLIT, 1 normally): memory facts are divided by it. */
int hl_cuda_ordinal(int32_t device);
int32_t hl_cuda_split(void);

#ifdef __cplusplus
}
#endif

#endif
