/* libhearth's side of the CUDA module (see cuda_backend.h): finds and opens
 * libhearth-cuda.so with dlopen once per process, hands it the host services
 * and checks that it was built from the same sources, and, when it cannot
 * be used, says in one line what is missing; and the registry's entry for
 * CUDA (hl_cuda_backend), which forwards to the module's table. The only
 * file of this folder compiled into libhearth, and only in builds with the
 * CUDA backend.
 *
 * Where the module is looked for: $HEARTH_CUDA_MODULE (a path) when set;
 * else the folder of the file that holds libhearth's code (the `hearth`
 * binary, libhearth.so, the Python extension, the Node addon: their builds
 * and packages put the module beside them), found with dladdr; else the
 * library search path (LD_LIBRARY_PATH, the system's). */
#define _GNU_SOURCE /* dladdr1 */
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cuda/cuda_backend.h"
#include "base/log.h"
#include "quant/quant.h"

static hearth_status host_fail(hearth_status st, const char *msg) { return hl_fail(st, "%s", msg); }

static void host_log(hearth_log_level level, const char *msg) { hl_log(level, "%s", msg); }

static const hl_cuda_host host = {
    .fail = host_fail,
    .log = host_log,
    .calloc_at = hl_calloc_at,
    .malloc_at = hl_malloc_at,
    .ggml_type_get = hl_ggml_type_get,
    .row_size = hl_row_size,
    .tensor_nelements = hl_tensor_nelements,
};

static struct {
    pthread_once_t once;
    const hl_cuda_module *table;
    char reason[PATH_MAX + 256];
} mod = {PTHREAD_ONCE_INIT, NULL, ""};

/* The folder of the file holding this code into dir[PATH_MAX] ("" if
 * unknown). The main program's link map has an empty name: its path is
 * /proc/self/exe. */
static void own_folder(char *dir) {
    Dl_info info;
    struct link_map *map = NULL;
    dir[0] = '\0';
    if (!dladdr1((const void *)hl_cuda_module_get, &info, (void **)&map, RTLD_DL_LINKMAP) || !map) return;
    if (map->l_name && map->l_name[0]) {
        snprintf(dir, PATH_MAX, "%s", map->l_name);
    } else {
        const ssize_t n = readlink("/proc/self/exe", dir, PATH_MAX - 1);
        dir[n > 0 ? n : 0] = '\0';
    }
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else dir[0] = '\0';
}

/* dlopen's failure as a reason: the module itself is missing, a library it
 * needs is (dlerror starts with that library's name), or it is broken. */
static void open_failed(const char *path, const char *where, const char *err) {
    const size_t len = strcspn(err, ":");
    const bool names_module = strncmp(err, path, len) == 0 && len == strlen(path);
    if (names_module && strstr(err, "No such file"))
        snprintf(mod.reason, sizeof mod.reason,
                 "no CUDA module: %s not found %s (this build or package has no CUDA "
                 "backend, or the file was removed)",
                 HL_CUDA_MODULE_FILE, where);
    else if (!names_module && strstr(err, "cannot open shared object file"))
        snprintf(mod.reason, sizeof mod.reason, "the CUDA module %s needs %.*s, which is not installed: %s", path,
                 (int)len, err,
                 strstr(err, "cublas") ? "install the CUDA toolkit's cuBLAS, or add the folder that "
                                         "holds it to LD_LIBRARY_PATH"
                                       : "install it, or add the folder that holds it to LD_LIBRARY_PATH");
    else snprintf(mod.reason, sizeof mod.reason, "cannot load the CUDA module: %s", err);
}

static void load(void) {
    char path[PATH_MAX + 32], where[PATH_MAX + 64];
    const char *env = getenv("HEARTH_CUDA_MODULE");
    char dir[PATH_MAX];
    own_folder(dir);
    if (env && *env) {
        snprintf(path, sizeof path, "%s", env);
        snprintf(where, sizeof where, "at HEARTH_CUDA_MODULE=%s", env);
        if (access(path, F_OK) != 0) {
            snprintf(mod.reason, sizeof mod.reason, "no CUDA module at HEARTH_CUDA_MODULE=%s (no such file)", env);
            return;
        }
    } else {
        snprintf(path, sizeof path, "%s/%s", dir, HL_CUDA_MODULE_FILE);
        if (!dir[0] || access(path, F_OK) != 0) snprintf(path, sizeof path, "%s", HL_CUDA_MODULE_FILE);
        snprintf(where, sizeof where, "in %s or on the library search path", dir[0] ? dir : "the program's folder");
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        open_failed(path, where, dlerror());
        return;
    }
    const hl_cuda_module_entry_fn entry = (hl_cuda_module_entry_fn)dlsym(h, HL_CUDA_MODULE_ENTRY);
    if (!entry) {
        snprintf(mod.reason, sizeof mod.reason, "%s is not hearth's CUDA module (it has no %s)", path,
                 HL_CUDA_MODULE_ENTRY);
        dlclose(h);
        return;
    }
    const hl_cuda_module *t = entry(HL_CUDA_MODULE_VERSION, &host);
    if (!t || t->version != HL_CUDA_MODULE_VERSION || t->abi != hl_cuda_abi()) {
        snprintf(mod.reason, sizeof mod.reason,
                 "the CUDA module %s is from another build of hearth (interface %u, "
                 "this library's %u): use the one built with this library",
                 path, t ? t->version : 0u, HL_CUDA_MODULE_VERSION);
        dlclose(h);
        return;
    }
    HL_DEBUG("CUDA module: %s", path);
    mod.table = t; /* the module stays loaded for the life of the process */
}

const hl_cuda_module *hl_cuda_module_get(const char **reason) {
    pthread_once(&mod.once, load);
    if (reason) *reason = mod.table ? NULL : mod.reason;
    return mod.table;
}

/* The registry's entry. device_get and init are asked only of a counted
 * device, when the module is loaded; device_count and dequant_host say why
 * when it is not. */
static int32_t cuda_device_count(const char **reason) {
    const hl_cuda_module *m = hl_cuda_module_get(reason);
    return m ? m->device_count(reason) : 0;
}

static hearth_status cuda_device_get(int32_t device, hl_gpu_device *out) {
    return hl_cuda_module_get(NULL)->device_get(device, out);
}

static hearth_status cuda_init(int32_t device, const hl_gpu_limits *limits, hl_backend **out) {
    return hl_cuda_module_get(NULL)->backend_init(device, limits, out);
}

static hearth_status cuda_dequant_host(uint32_t type, const void *src, float *dst, int64_t n) {
    const char *why;
    const hl_cuda_module *m = hl_cuda_module_get(&why);
    return m ? m->dequant_host(type, src, dst, n) : hl_fail(HEARTH_ERR_UNSUPPORTED, "no CUDA backend: %s", why);
}

const hl_backend_reg hl_cuda_backend = {
    .name = "cuda",
    .label = "CUDA",
    .build = "cuda",
    .all_gpus = true,
    .device_count = cuda_device_count,
    .device_get = cuda_device_get,
    .init = cuda_init,
    .dequant_host = cuda_dequant_host,
};
