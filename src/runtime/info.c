/* Build and hardware facts for hearth_build_info() and `hearth info`. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backend/cpu/cpu_features.h"
#include "backend/gpu.h"
#include "base/status.h"
#include "base/threadpool.h"
#include "hearth.h"

#ifdef HEARTH_HAVE_CUDA
#define BACKENDS "cpu cuda"
#else
#define BACKENDS "cpu"
#endif

const char *hearth_build_info(void) {
    static _Thread_local char buf[256];
    snprintf(buf, sizeof buf, "hearth %s; cpu: %s; backends: %s", HEARTH_VERSION, hl_cpu_features_str(), BACKENDS);
    return buf;
}

int32_t hearth_cpu_physical_cores(void) { return hl_cpu_physical_cores(); }

int32_t hearth_gpu_device_count(void) { return hl_gpu_count(); }

const char *hearth_gpu_unavailable_reason(void) { return hl_gpu_unavailable_reason(); }

hearth_status hearth_gpu_device_info(int32_t device, hearth_gpu_info *out) {
    hl_clear_error();
    if (!out) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_gpu_device_info: out is NULL");
    hl_gpu_device d;
    HL_TRY(hl_gpu_device_get(device, &d));
    memcpy(out->name, d.name, sizeof out->name);
    out->cc_major = d.cc_major;
    out->cc_minor = d.cc_minor;
    out->free_bytes = d.free_bytes;
    out->total_bytes = d.total_bytes;
    return HEARTH_OK;
}

bool hearth_supports_gpu_offload(void) { return hl_gpu_count() > 0; }
bool hearth_supports_mmap(void) { return true; /* POSIX mmap, the only platform hearth builds on */ }
bool hearth_supports_mlock(void) { return true; }
