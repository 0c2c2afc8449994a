/* Offload devices for the rest of the library (see gpu.h), answered by
 * looping over the registry's offload entries (registry.h; the host's,
 * the CPU, is not numbered): one numbering over them in order, each device's name (its backend's name and its
 * number there), the device selection (--device, HEARTH_DEVICE, the
 * default), why there is none, backend instances, and the HEARTH_FORCE_CPU
 * switch. No backend is named here. */
#include "backend/gpu.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/registry.h"
#include "base/log.h"

static bool forced_cpu(void) {
    const char *v = getenv("HEARTH_FORCE_CPU");
    return v && *v && strcmp(v, "0") != 0;
}

int32_t hl_gpu_count(void) {
    if (forced_cpu()) return 0;
    int32_t n = 0;
    const hl_backend_reg *r;
    const char *why;
    for (int k = 0; (r = hl_backend_reg_at(k)); k++) n += hl_backend_reg_devices(r, &why);
    return n < HL_MAX_GPUS ? n : HL_MAX_GPUS;
}

/* Device i of the numbering as its backend's entry and its number there;
 * NULL when i is out of range (INVALID_ARG set). */
static const hl_backend_reg *locate(int32_t i, int32_t *local) {
    const int32_t n = hl_gpu_count();
    if (i < 0 || i >= n) {
        hl_fail(HEARTH_ERR_INVALID_ARG, "GPU device %d does not exist (%d usable)", (int)i, (int)n);
        return NULL;
    }
    const hl_backend_reg *r;
    const char *why;
    for (int k = 0; (r = hl_backend_reg_at(k)); k++) {
        const int32_t nr = hl_backend_reg_devices(r, &why);
        if (i < nr) break;
        i -= nr;
    }
    *local = i;
    return r;
}

hearth_status hl_gpu_device_get(int32_t i, hl_gpu_device *out) {
    int32_t local;
    const hl_backend_reg *r = locate(i, &local);
    if (!r) return HEARTH_ERR_INVALID_ARG;
    *out = (hl_gpu_device){.is_gpu = r->all_gpus};
    HL_TRY(r->device_get(local, out));
    snprintf(out->id, sizeof out->id, "%s%d", r->name, (int)local);
    out->backend = r->name;
    out->backend_label = r->label;
    return HEARTH_OK;
}

/* Device i's name ("cuda0", "opencl1") into id[24]; naming a device asks
 * its backend nothing (a CUDA device's facts would create a context). */
static void device_id(int32_t i, char *id) {
    int32_t local;
    const hl_backend_reg *r = locate(i, &local);
    snprintf(id, 24, "%s%d", r->name, (int)local);
}

/* The default selection: the GPUs of the first backend that has any. */
static int32_t select_default(int32_t *ids) {
    const hl_backend_reg *chosen = NULL;
    int32_t k = 0;
    for (int32_t i = 0; i < hl_gpu_count(); i++) {
        int32_t local;
        const hl_backend_reg *r = locate(i, &local);
        if (chosen && r != chosen) break;
        hl_gpu_device dev;
        if (r->all_gpus || (hl_gpu_device_get(i, &dev) == HEARTH_OK && dev.is_gpu)) {
            ids[k++] = i;
            chosen = r;
        }
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
        len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? " " : "", id);
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
            if (ids[k] == found)
                return hl_fail(HEARTH_ERR_INVALID_ARG, "device %.*s is named twice in \"%s\"", (int)len, s, list);
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
    /* the first backend's reason bare (hl_gpu_note_fallback names it), then
     * "; <label>: <reason>" for each other */
    static _Thread_local char buf[1024]; /* a reason may hold a path */
    size_t len = 0;
    const hl_backend_reg *r;
    for (int k = 0; (r = hl_backend_reg_at(k)) && len < sizeof buf; k++) {
        const char *why;
        if (hl_backend_reg_devices(r, &why) > 0) why = "only CPU devices, used when named (--device or HEARTH_DEVICE)";
        len += (size_t)(k ? snprintf(buf + len, sizeof buf - len, "; %s: %s", r->label, why)
                          : snprintf(buf, sizeof buf, "%s", why));
    }
    return buf;
}

static pthread_once_t fallback_once = PTHREAD_ONCE_INIT;

static void log_fallback(void) {
    HL_WARN("%s unavailable (%s); running on CPU", hl_backend_reg_at(0)->label, hl_gpu_unavailable_reason());
}

void hl_gpu_note_fallback(void) { pthread_once(&fallback_once, log_fallback); }

hearth_status hl_gpu_backend_init(int32_t i, const hl_gpu_limits *limits, hl_backend **out) {
    *out = NULL;
    int32_t local;
    const hl_backend_reg *r = locate(i, &local);
    return r ? r->init(local, limits, out) : HEARTH_ERR_INVALID_ARG;
}

void hl_gpu_backend_free(hl_backend *b) {
    if (b) b->iface->free(b);
}

hearth_status hl_gpu_dequant_host(uint32_t type, const void *src, float *dst, int64_t n) {
    const hl_backend_reg *r;
    for (int k = 0; (r = hl_backend_reg_at(k)); k++)
        if (r->dequant_host) return r->dequant_host(type, src, dst, n);
    return hl_fail(HEARTH_ERR_UNSUPPORTED, "no backend of this build dequantizes on the host");
}
