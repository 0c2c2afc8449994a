/* OpenCL devices: probed once per process (every device of every platform
 * the ICD loader lists), their facts, the memory limit tests set
 * (HEARTH_OPENCL_MEM_LIMIT, MiB), the error records of instances, and the
 * backend's registry entry. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/opencl/common.h"

const char *hl_ocl_error_name(cl_int e) {
    switch (e) {
// clang-format off
#define NAME(c) case c: return #c;
        NAME(CL_DEVICE_NOT_FOUND) NAME(CL_DEVICE_NOT_AVAILABLE) NAME(CL_COMPILER_NOT_AVAILABLE)
        NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE) NAME(CL_OUT_OF_RESOURCES) NAME(CL_OUT_OF_HOST_MEMORY)
        NAME(CL_BUILD_PROGRAM_FAILURE) NAME(CL_INVALID_VALUE) NAME(CL_INVALID_PLATFORM) NAME(CL_INVALID_DEVICE)
        NAME(CL_INVALID_CONTEXT) NAME(CL_INVALID_COMMAND_QUEUE) NAME(CL_INVALID_MEM_OBJECT) NAME(CL_INVALID_BINARY)
        NAME(CL_INVALID_BUILD_OPTIONS) NAME(CL_INVALID_PROGRAM) NAME(CL_INVALID_PROGRAM_EXECUTABLE)
        NAME(CL_INVALID_KERNEL_NAME) NAME(CL_INVALID_KERNEL) NAME(CL_INVALID_ARG_INDEX) NAME(CL_INVALID_ARG_VALUE)
        NAME(CL_INVALID_ARG_SIZE) NAME(CL_INVALID_KERNEL_ARGS) NAME(CL_INVALID_WORK_DIMENSION)
        NAME(CL_INVALID_WORK_GROUP_SIZE) NAME(CL_INVALID_GLOBAL_OFFSET) NAME(CL_INVALID_BUFFER_SIZE)
        NAME(CL_INVALID_GLOBAL_WORK_SIZE)
        NAME(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) NAME(CL_MISALIGNED_SUB_BUFFER_OFFSET)
#undef NAME
            // clang-format on
            default : return "unknown OpenCL error";
    }
}

void hl_ocl_record(hl_ocl *o, hearth_status st, const char *fmt, ...) {
    if (o->status != HEARTH_OK) return;
    o->status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->err, sizeof o->err, fmt, ap);
    va_end(ap);
}

bool hl_ocl_ok(hl_ocl *o, cl_int e, const char *what, const char *file, int line) {
    if (e == CL_SUCCESS) return true;
    hl_ocl_record(o, HEARTH_ERR_DEVICE, "%s: %s:%d: %s failed: %s", o->name, file, line, what, hl_ocl_error_name(e));
    return false;
}

/* ------------------------------------------------------------ probing -- */

static struct {
    pthread_once_t once;
    int32_t n;
    hl_ocl_dev dev[HL_MAX_GPUS];
    char reason[160];
} probe = {.once = PTHREAD_ONCE_INIT};

/* The device's memory, or HEARTH_OPENCL_MEM_LIMIT MiB when that is set and
 * smaller (read at each call, so a test can lower it for one load). */
size_t hl_ocl_total_bytes(const hl_ocl_dev *d) {
    const char *v = getenv("HEARTH_OPENCL_MEM_LIMIT");
    char *end;
    const unsigned long long mib = v ? strtoull(v, &end, 10) : 0;
    const size_t limit = v && *v && !*end ? (size_t)mib << 20 : 0;
    return limit && limit < d->global_bytes ? limit : d->global_bytes;
}

static void add_device(cl_platform_id platform, const char *platform_name, cl_device_id id) {
    hl_ocl_dev *d = &probe.dev[probe.n];
    char name[192] = "";
    cl_device_type type = 0;
    cl_ulong global = 0, max_alloc = 0;
    cl_uint units = 0;
    if (clGetDeviceInfo(id, CL_DEVICE_NAME, sizeof name, name, NULL) != CL_SUCCESS ||
        clGetDeviceInfo(id, CL_DEVICE_TYPE, sizeof type, &type, NULL) != CL_SUCCESS ||
        clGetDeviceInfo(id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global, &global, NULL) != CL_SUCCESS ||
        clGetDeviceInfo(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL) != CL_SUCCESS ||
        clGetDeviceInfo(id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL) != CL_SUCCESS ||
        clGetDeviceInfo(id, CL_DRIVER_VERSION, sizeof d->version, d->version, NULL) != CL_SUCCESS)
        return; /* a device that cannot describe itself is not used */
    d->platform = platform;
    d->id = id;
    snprintf(d->name, sizeof d->name, "%s (%s)", name, platform_name);
    d->is_gpu = !(type & CL_DEVICE_TYPE_CPU);
    d->compute_units = units;
    d->global_bytes = (size_t)global;
    d->max_alloc = (size_t)max_alloc;
    pthread_mutex_init(&d->lock, NULL);
    probe.n++;
}

static void probe_devices(void) {
    cl_platform_id platforms[8];
    cl_uint n_platforms = 0;
    const cl_int e = clGetPlatformIDs(8, platforms, &n_platforms);
    if (e != CL_SUCCESS || n_platforms == 0) {
        snprintf(probe.reason, sizeof probe.reason,
                 "no OpenCL platform found (%s): install an ICD such as "
                 "pocl-opencl-icd or the GPU vendor's",
                 e != CL_SUCCESS ? hl_ocl_error_name(e) : "none listed");
        return;
    }
    for (cl_uint p = 0; p < n_platforms && p < 8; p++) {
        char pname[64] = "";
        cl_device_id ids[HL_MAX_GPUS];
        cl_uint n = 0;
        clGetPlatformInfo(platforms[p], CL_PLATFORM_NAME, sizeof pname, pname, NULL);
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, HL_MAX_GPUS, ids, &n) != CL_SUCCESS) continue;
        for (cl_uint i = 0; i < n && i < HL_MAX_GPUS && probe.n < HL_MAX_GPUS; i++)
            add_device(platforms[p], pname, ids[i]);
    }
    if (probe.n == 0) snprintf(probe.reason, sizeof probe.reason, "no OpenCL device found");
}

int32_t hl_opencl_device_count(const char **reason) {
    pthread_once(&probe.once, probe_devices);
    if (reason) *reason = probe.n > 0 ? NULL : probe.reason;
    return probe.n;
}

hl_ocl_dev *hl_ocl_device(int32_t i) { return i >= 0 && i < hl_opencl_device_count(NULL) ? &probe.dev[i] : NULL; }

/* name is "<device> (<platform>)", total_bytes the device memory (or
 * HEARTH_OPENCL_MEM_LIMIT MiB, when set and smaller: tests of too little
 * memory), free_bytes that less what hearth holds there (OpenCL cannot
 * tell what others hold). */
static hearth_status device_get(int32_t device, hl_gpu_device *out) {
    hl_ocl_dev *d = hl_ocl_device(device);
    if (!d) return hl_fail(HEARTH_ERR_INVALID_ARG, "OpenCL device %d does not exist", (int)device);
    *out = (hl_gpu_device){
        .compute_units = (int32_t)d->compute_units, .is_gpu = d->is_gpu, .total_bytes = hl_ocl_total_bytes(d)};
    snprintf(out->name, sizeof out->name, "%s", d->name);
    pthread_mutex_lock(&d->lock);
    out->free_bytes = out->total_bytes > d->used ? out->total_bytes - d->used : 0;
    pthread_mutex_unlock(&d->lock);
    return HEARTH_OK;
}

const hl_backend_reg hl_opencl_backend = {
    .name = "opencl",
    .label = "OpenCL",
#ifdef HEARTH_HAVE_CLBLAST
    .build = "opencl+clblast", /* prompt products through CLBlast (gemm.c) */
#else
    .build = "opencl",
#endif
    .device_count = hl_opencl_device_count,
    .device_get = device_get,
    .init = hl_backend_opencl_init,
};
