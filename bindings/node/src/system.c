/* Module functions about the machine and the build: gpuDevices(),
 * supportsGpuOffload(), systemInfo(). */
#include <stdio.h>

#include "addon.h"

/* gpuDevices() -> [{index, id, name, isGpu, computeCapability, computeUnits,
 * freeMemory, totalMemory, backend, backendLabel}] (memory in bytes): the
 * devices hearth can offload to, CUDA first, then OpenCL; [] without one. */
napi_value hn_gpu_devices(napi_env env, napi_callback_info info) {
    (void)info;
    napi_value list;
    const int32_t n = hearth_gpu_device_count();
    HN_CALL(napi_create_array_with_length(env, (size_t)n, &list));
    for (int32_t i = 0; i < n; i++) {
        hearth_gpu_info g;
        const hearth_status st = hearth_gpu_device_info(i, &g);
        if (st != HEARTH_OK) {
            hn_throw_status(env, st);
            return NULL;
        }
        char cc[24];
        snprintf(cc, sizeof cc, "%d.%d", (int)g.cc_major, (int)g.cc_minor);
        napi_value d;
        HN_CALL(napi_create_object(env, &d));
        napi_value is_gpu;
        HN_CALL(napi_get_boolean(env, g.is_gpu, &is_gpu));
        if (!hn_set_num(env, d, "index", i) || !hn_set_str(env, d, "id", g.id) || !hn_set_str(env, d, "name", g.name) ||
            napi_set_named_property(env, d, "isGpu", is_gpu) != napi_ok ||
            !hn_set_str(env, d, "computeCapability", cc) || !hn_set_num(env, d, "computeUnits", g.compute_units) ||
            !hn_set_num(env, d, "freeMemory", (double)g.free_bytes) ||
            !hn_set_num(env, d, "totalMemory", (double)g.total_bytes) || !hn_set_str(env, d, "backend", g.backend) ||
            !hn_set_str(env, d, "backendLabel", g.backend_label)) {
            hn_napi_failed(env, "building a device");
            return NULL;
        }
        HN_CALL(napi_set_element(env, list, (uint32_t)i, d));
    }
    return list;
}

/* supportsGpuOffload() -> boolean: whether nGpuLayers can put layers on a GPU here. */
napi_value hn_supports_gpu_offload(napi_env env, napi_callback_info info) {
    (void)info;
    napi_value v;
    HN_CALL(napi_get_boolean(env, hearth_supports_gpu_offload(), &v));
    return v;
}

/* systemInfo() -> string: version, the CPU's SIMD level in use, backends
 * built in, and why no GPU is used when none is. */
napi_value hn_system_info(napi_env env, napi_callback_info info) {
    (void)info;
    char s[1024];
    const char *why = hearth_gpu_unavailable_reason();
    snprintf(s, sizeof s, "%s; cpu cores: %d; gpu: %s", hearth_build_info(), (int)hearth_cpu_physical_cores(),
             why ? why : "available");
    return hn_string_new(env, s, NAPI_AUTO_LENGTH);
}
