/* Build and hardware facts for hearth_build_info() and `hearth info`: the
 * backends the build has, and the instances weight types are asked of,
 * come from the registry (backend/registry.h; the CPU is its host entry). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backend/gpu.h"
#include "backend/host.h"
#include "backend/ops.h"
#include "backend/registry.h"
#include "base/status.h"
#include "base/threadpool.h"
#include "hearth.h"

const char *hearth_build_info(void) {
    static _Thread_local char buf[256];
    int len = snprintf(buf, sizeof buf, "hearth %s; cpu: %s; backends: %s", HEARTH_VERSION, hl_cpu_features_str(),
                       hl_backend_reg_host()->build);
    const hl_backend_reg *r;
    for (int k = 0; (r = hl_backend_reg_at(k)); k++)
        if (!r->missing && len < (int)sizeof buf) len += snprintf(buf + len, sizeof buf - (size_t)len, " %s", r->build);
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
    memcpy(out->id, d.id, sizeof out->id);
    out->compute_units = d.compute_units;
    out->is_gpu = d.is_gpu;
    snprintf(out->backend, sizeof out->backend, "%s", d.backend);
    snprintf(out->backend_label, sizeof out->backend_label, "%s", d.backend_label);
    return HEARTH_OK;
}

hearth_status hearth_device_weight_types(int32_t device, char *buf, size_t size) {
    hl_clear_error();
    if (!buf || size == 0) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_device_weight_types: buf is NULL or empty");
    *buf = '\0';
    /* an instance that only holds weights is enough to ask */
    hl_backend *b = NULL;
    const hl_gpu_limits limits = {.max_tokens = 0};
    if (device == -1) HL_TRY(hl_backend_reg_host()->init(0, &limits, &b));
    else HL_TRY(hl_gpu_backend_init(device, &limits, &b));
    hearth_status st = HEARTH_OK;
    size_t len = 0;
    for (uint32_t type = 0; type < GGML_TYPE_COUNT && st == HEARTH_OK; type++) {
        const ggml_type_info *ti = hl_ggml_type_get(type);
        if (!ti) continue;
        /* 4096: whole blocks of every type and of its activations' */
        const hl_tensor w = {.type = type, .ne = {4096, 2, 1, 1}};
        const hl_tensor x = {.type = GGML_TYPE_F32, .ne = {4096, 1, 1, 1}},
                        y = {.type = GGML_TYPE_F32, .ne = {2, 1, 1, 1}};
        const hl_op_desc d = {.op = HL_OP_MATMUL, .t = {&w, &x, &y}};
        if (!hl_supports_op(b, &d)) continue;
        const int n = snprintf(buf + len, size - len, "%s%s", len ? " " : "", ti->name);
        if (n < 0 || (size_t)n >= size - len)
            st = hl_fail(HEARTH_ERR_BUFFER_TOO_SMALL, "hearth_device_weight_types: %zu bytes are too few", size);
        else len += (size_t)n;
    }
    if (device == -1) hl_backend_cpu_free(b);
    else hl_gpu_backend_free(b);
    return st;
}

bool hearth_supports_gpu_offload(void) { return hl_gpu_unavailable_reason() == NULL; }
bool hearth_supports_mmap(void) { return true; /* POSIX mmap, the only platform hearth builds on */ }
bool hearth_supports_mlock(void) { return true; }
