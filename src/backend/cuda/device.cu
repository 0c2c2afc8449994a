// Probing the CUDA devices, once per process (see cuda_backend.h): how many
// this build can use and why there are none, each one's CUDA ordinal, and
// their facts for the registry (hl_gpu_device).
//
// Probing creates no CUDA context: the device count, compute capability and
// name come from cudaGetDeviceCount / cudaGetDeviceProperties (driver
// attribute queries). Whether this build has kernels for a device is decided
// from its compute capability and the architectures the module was compiled
// for (HL_CUDA_ARCHS, CMake's CUDA_ARCHITECTURES list), by CUDA's rules: SASS
// for sm_XY runs on sm_XZ with Z >= Y (same major); PTX for compute_XY is
// compiled by the driver for any later device. A plain number in the list
// carries both, "-real" SASS only, "-virtual" PTX only; an arch-specific
// "90a" SASS runs on that exact device only.
//
// HEARTH_CUDA_SPLIT=N (tests only) shows each usable device as N logical
// devices (cuda0 .. cudaN-1 on the first GPU), each with 1/N of its memory
// facts and, like any device, its own backend instances (stream, cuBLAS
// handle): the multi-device paths (layer split, hidden-state hand-over) run
// on a machine with one GPU.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/common.cuh"

static struct {
    pthread_once_t once;
    int32_t n;                // usable logical devices
    int32_t split;            // logical devices per physical one
    int ordinal[HL_MAX_GPUS]; // CUDA ordinal of each
    char reason[512];
} probe = {PTHREAD_ONCE_INIT, 0, 1, {0}, ""};

// Whether an entry of HL_CUDA_ARCHS ("86", "90-real", "90a") has code that
// runs on a device of compute capability cc (major * 10 + minor).
static bool arch_runs(const char *entry, int cc) {
    char *end;
    const long a = strtol(entry, &end, 10);
    if (end == entry) return false;
    const bool exact = *end >= 'a' && *end <= 'z';      // "90a": that device only
    const bool sass = strncmp(end, "-virtual", 8) != 0; // a plain number has both
    const bool ptx = !exact && strncmp(end, "-real", 5) != 0;
    if (exact) return a == cc;
    return (sass && a / 10 == cc / 10 && a <= cc) || (ptx && a <= cc);
}

static bool build_runs_on(int cc) {
    char archs[] = HL_CUDA_ARCHS; // "75,80,86,89,90"
    char *save = NULL;
    for (char *e = strtok_r(archs, ",", &save); e; e = strtok_r(NULL, ",", &save))
        if (arch_runs(e, cc)) return true;
    return false;
}

// Why cudaGetDeviceCount failed, as the user can act on it.
static void driver_reason(cudaError_t e) {
    int drv = 0, rt = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    if (e == cudaErrorInsufficientDriver && drv == 0)
        snprintf(probe.reason, sizeof probe.reason,
                 "no NVIDIA driver (libcuda.so.1 not found): install the NVIDIA "
                 "driver to use the GPU");
    else if (e == cudaErrorInsufficientDriver)
        snprintf(probe.reason, sizeof probe.reason,
                 "the NVIDIA driver supports CUDA %d.%d, older than this build's "
                 "runtime (CUDA %d.%d): update the driver",
                 drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
    else if (e == cudaErrorNoDevice)
        snprintf(probe.reason, sizeof probe.reason, "no CUDA device found%s%s%s",
                 visible ? " (CUDA_VISIBLE_DEVICES=" : "", visible ? visible : "", visible ? ")" : "");
    else snprintf(probe.reason, sizeof probe.reason, "cudaGetDeviceCount failed: %s", cudaGetErrorString(e));
}

static void probe_devices(void) {
    const char *s = getenv("HEARTH_CUDA_SPLIT");
    const int split = s && *s ? atoi(s) : 1;
    probe.split = split >= 1 && split <= HL_MAX_GPUS ? split : 1;
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        driver_reason(e != cudaSuccess ? e : cudaErrorNoDevice);
        cudaGetLastError();
        return;
    }
    for (int d = 0; d < n && probe.n + probe.split <= HL_MAX_GPUS; d++) {
        cudaDeviceProp prop;
        if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) {
            snprintf(probe.reason, sizeof probe.reason, "CUDA device %d: %s", d,
                     cudaGetErrorString(cudaGetLastError()));
            continue;
        }
        if (!build_runs_on(prop.major * 10 + prop.minor)) {
            snprintf(probe.reason, sizeof probe.reason,
                     "CUDA device %d (%.100s) is sm_%d%d, which this build has no kernels "
                     "for (HEARTH_CUDA_ARCHS=%s): rebuild with it added to -DHEARTH_CUDA_ARCHS",
                     d, prop.name, prop.major, prop.minor, HL_CUDA_ARCHS);
            continue;
        }
        for (int k = 0; k < probe.split; k++) probe.ordinal[probe.n++] = d;
    }
}

extern "C" int32_t hl_cuda_device_count(const char **reason) {
    pthread_once(&probe.once, probe_devices);
    if (reason) *reason = probe.n > 0 ? NULL : probe.reason;
    return probe.n;
}

extern "C" int hl_cuda_ordinal(int32_t device) { return probe.ordinal[device]; }

extern "C" int32_t hl_cuda_split(void) { return probe.split; }

extern "C" hearth_status hl_cuda_device_get(int32_t device, hl_gpu_device *out) {
    if (device < 0 || device >= hl_cuda_device_count(NULL))
        return hl_fail(HEARTH_ERR_INVALID_ARG, "CUDA device %d does not exist", (int)device);
    const int ord = probe.ordinal[device];
    cudaDeviceProp prop;
    CUDA_TRY(cudaGetDeviceProperties(&prop, ord));
    CUDA_TRY(cudaSetDevice(ord));
    CUDA_TRY(cudaMemGetInfo(&out->free_bytes, &out->total_bytes));
    out->free_bytes /= (size_t)probe.split;
    out->total_bytes /= (size_t)probe.split;
    if (probe.split > 1)
        snprintf(out->name, sizeof out->name, "%.200s (part %d of %d: HEARTH_CUDA_SPLIT)", prop.name,
                 (int)(device % probe.split) + 1, (int)probe.split);
    else snprintf(out->name, sizeof out->name, "%s", prop.name);
    out->cc_major = prop.major;
    out->cc_minor = prop.minor;
    out->compute_units = prop.multiProcessorCount;
    return HEARTH_OK;
}
