/* Offload devices for the rest of the library (see gpu.h): the CUDA
 * backend's devices (through its module, loaded at the first probe:
 * backend/cuda/loader.c), then the OpenCL backend's, for the backends the
 * build has; the device selection (--device, HEARTH_DEVICE, the default);
 * and the HEARTH_FORCE_CPU switch. */
#include "backend/gpu.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_backend.h"
#include "base/log.h"
#ifdef HEARTH_HAVE_OPENCL
#include "backend/opencl/opencl_backend.h"
#endif

static bool forced_cpu(void) {
    const char *v = getenv("HEARTH_FORCE_CPU");
    return v && *v && strcmp(v, "0") != 0;
}

/* The CUDA module's table, or NULL (with *reason) when there is none. */
static const hl_cuda_module *cuda(const char **reason) {
#ifdef HEARTH_HAVE_CUDA
    return hl_cuda_module_get(reason);
#else
    *reason = "this build has no CUDA backend (built without nvcc or with -DHEARTH_CUDA=OFF)";
    return NULL;
#endif
}

/* Devices of each backend, and why there are none. */
static int32_t n_cuda(const char **reason) {
    const hl_cuda_module *cm = cuda(reason);
    return cm ? cm->device_count(reason) : 0;
}

static int32_t n_opencl(const char **reason) {
#ifdef HEARTH_HAVE_OPENCL
    return hl_opencl_device_count(reason);
#else
    *reason = "this build has no OpenCL backend (built without OpenCL headers or with -DHEARTH_OPENCL=OFF)";
    return 0;
#endif
}

int32_t hl_gpu_count(void) {
    if (forced_cpu()) return 0;
    const char *why;
    const int32_t n = n_cuda(&why) + n_opencl(&why);
    return n < HL_MAX_GPUS ? n : HL_MAX_GPUS;
}

hearth_status hl_gpu_device_get(int32_t i, hl_gpu_device *out) {
    const int32_t n = hl_gpu_count();
    if (i < 0 || i >= n) return hl_fail(HEARTH_ERR_INVALID_ARG, "GPU device %d does not exist (%d usable)", (int)i, (int)n);
    const char *why;
    const int32_t nc = n_cuda(&why);
    if (i < nc) {
        *out = (hl_gpu_device){.is_gpu = true};
        HL_TRY(cuda(&why)->device_get(i, out));
        snprintf(out->id, sizeof out->id, "cuda%d", (int)i);
        return HEARTH_OK;
    }
#ifdef HEARTH_HAVE_OPENCL
    return hl_opencl_device_get(i - nc, out);
#else
    return HEARTH_ERR_INVALID_ARG; /* unreachable: every device is a CUDA one */
#endif
}

/* Device i's name ("cuda0", "opencl1") into id[24]; "" if it has none. A
 * CUDA device's is its number, so naming one creates no CUDA context. */
static void device_id(int32_t i, char *id) {
    const char *why;
    hl_gpu_device dev;
    if (i < n_cuda(&why)) snprintf(id, 24, "cuda%d", (int)i);
    else snprintf(id, 24, "%s", hl_gpu_device_get(i, &dev) == HEARTH_OK ? dev.id : "");
}

/* The default selection: CUDA devices, else OpenCL GPUs. */
static int32_t select_default(int32_t *ids) {
    const char *why;
    const int32_t nc = n_cuda(&why), n = hl_gpu_count();
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++) {
        hl_gpu_device dev;
        if (i < nc || (nc == 0 && hl_gpu_device_get(i, &dev) == HEARTH_OK && dev.is_gpu)) ids[k++] = i;
    }
    return k;
}

/* "cuda0 opencl0 ..." into buf, or "none". */
static void list_devices(char *buf, size_t size) {
    size_t len = 0;
    *buf = '\0';
    for (int32_t i = 0; i < hl_gpu_count() && len < size; i++) {
        char id[24];
        device_id(i, id);
        if (*id) len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? " " : "", id);
    }
    if (!len) snprintf(buf, size, "none");
}

hearth_status hl_gpu_select(const char *list, int32_t *ids, int32_t *n) {
    *n = 0;
    if (!list || !*list) list = getenv("HEARTH_DEVICE");
    if (!list || !*list) {
        *n = select_default(ids);
        return HEARTH_OK;
    }
    for (const char *s = list; *s;) {
        const size_t len = strcspn(s, ",");
        int32_t found = -1;
        for (int32_t i = 0; i < hl_gpu_count() && found < 0; i++) {
            char id[24];
            device_id(i, id);
            if (strlen(id) == len && strncmp(id, s, len) == 0) found = i;
        }
        for (int32_t k = 0; k < *n && found >= 0; k++)
            if (ids[k] == found) return hl_fail(HEARTH_ERR_INVALID_ARG, "device %.*s is named twice in \"%s\"", (int)len, s, list);
        if (found < 0) {
            char known[256];
            list_devices(known, sizeof known);
            return hl_fail(HEARTH_ERR_INVALID_ARG, "no device \"%.*s\" (devices: %s%s)", (int)len, s, known,
                           forced_cpu() ? "; HEARTH_FORCE_CPU is set" : "");
        }
        ids[(*n)++] = found;
        s += len + (s[len] == ',');
    }
    return HEARTH_OK;
}

const char *hl_gpu_unavailable_reason(void) {
    if (forced_cpu()) return "HEARTH_FORCE_CPU is set";
    int32_t ids[HL_MAX_GPUS], n = 0;
    if (hl_gpu_select(NULL, ids, &n) != HEARTH_OK) return "HEARTH_DEVICE names no device of this machine";
    if (n > 0) return NULL;
    const char *cuda, *opencl;
    n_cuda(&cuda);
    if (n_opencl(&opencl) > 0) opencl = "only CPU devices, used when named (--device or HEARTH_DEVICE)";
    static _Thread_local char buf[1024]; /* the CUDA part may hold a path */
    snprintf(buf, sizeof buf, "%s; OpenCL: %s", cuda, opencl);
    return buf;
}

static pthread_once_t fallback_once = PTHREAD_ONCE_INIT;

static void log_fallback(void) { HL_WARN("CUDA unavailable (%s); running on CPU", hl_gpu_unavailable_reason()); }

void hl_gpu_note_fallback(void) { pthread_once(&fallback_once, log_fallback); }

hearth_status hl_gpu_backend_init(int32_t i, const hl_gpu_limits *limits, hl_backend **out) {
    *out = NULL;
    const int32_t n = hl_gpu_count();
    if (i < 0 || i >= n) return hl_fail(HEARTH_ERR_INVALID_ARG, "GPU device %d does not exist (%d usable)", (int)i, (int)n);
    const char *why;
    const int32_t nc = n_cuda(&why);
    if (i < nc) return cuda(&why)->backend_init(i, limits, out);
#ifdef HEARTH_HAVE_OPENCL
    return hl_backend_opencl_init(i - nc, limits, out);
#else
    return HEARTH_ERR_INVALID_ARG; /* unreachable: every device is a CUDA one */
#endif
}

void hl_gpu_backend_free(hl_backend *b) {
    if (!b) return;
#ifdef HEARTH_HAVE_OPENCL
    if (strncmp(b->iface->name(b), "opencl", 6) == 0) {
        hl_backend_opencl_free(b);
        return;
    }
#endif
    const char *why;
    const hl_cuda_module *cm = cuda(&why);
    if (cm) cm->backend_free(b); /* a CUDA backend exists, so the module is loaded */
}

hearth_status hl_gpu_dequant_host(uint32_t type, const void *src, float *dst, int64_t n) {
    const char *why;
    const hl_cuda_module *cm = cuda(&why);
    return cm ? cm->dequant_host(type, src, dst, n) : hl_fail(HEARTH_ERR_UNSUPPORTED, "no CUDA backend: %s", why);
}
