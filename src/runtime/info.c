/* Build and hardware facts for hearth_build_info() and `hearth info`. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backend/cpu/cpu_features.h"
#include "backend/gpu.h"
#include "base/status.h"
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

/* Physical cores: distinct (package, core) pairs in sysfs; the online CPU count
 * when sysfs is unavailable. */
int32_t hearth_cpu_physical_cores(void) {
    long n_cpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (n_cpu < 1) return 1;
    int seen_pkg[1024], seen_core[1024], n_seen = 0;
    for (long cpu = 0; cpu < n_cpu && n_seen < 1024; cpu++) {
        char path[128];
        int pkg = -1, core = -1;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%ld/topology/physical_package_id", cpu);
        FILE *f = fopen(path, "r");
        if (!f) return (int32_t)n_cpu;
        if (fscanf(f, "%d", &pkg) != 1) pkg = -1;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%ld/topology/core_id", cpu);
        f = fopen(path, "r");
        if (!f) return (int32_t)n_cpu;
        if (fscanf(f, "%d", &core) != 1) core = -1;
        fclose(f);
        int known = 0;
        for (int i = 0; i < n_seen; i++) known |= seen_pkg[i] == pkg && seen_core[i] == core;
        if (!known) {
            seen_pkg[n_seen] = pkg;
            seen_core[n_seen] = core;
            n_seen++;
        }
    }
    return n_seen > 0 ? n_seen : (int32_t)n_cpu;
}

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
