/* The OpenCL backend instance: the device's context (made by the first
 * instance on it), an in-order command queue, the kernels of the device's
 * program, the positions buffer the position-dependent kernels read, the
 * op table, and synchronize. Ops are enqueued and run asynchronously;
 * set_positions and get_rows copy their host arrays with blocking writes
 * (the caller may reuse them at once). There is no graph_run: OpenCL 1.2
 * has no recorded command sequences. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/opencl/common.h"
#include "gguf/ggml_types.h"

static const char *ocl_name(const hl_backend *b) { return ocl_of(b)->name; }

static void ocl_mem_info(const hl_backend *b, size_t *free_bytes, size_t *total_bytes) {
    hl_ocl_dev *d = ocl_of(b)->dev;
    pthread_mutex_lock(&d->lock);
    *total_bytes = hl_ocl_total_bytes(d);
    *free_bytes = *total_bytes > d->used ? *total_bytes - d->used : 0;
    pthread_mutex_unlock(&d->lock);
}

/* pos[0..n) then row0[0..n) at element max_tokens of o->pos. */
static void ocl_set_positions(hl_backend *b, const int32_t *pos, const int32_t *row0, int32_t n) {
    hl_ocl *o = ocl_of(b);
    const size_t bytes = (size_t)n * sizeof(int32_t), at = (size_t)o->limits.max_tokens * sizeof(int32_t);
    if (o->status == HEARTH_OK &&
        CL_OK(o, clEnqueueWriteBuffer(o->queue, o->pos, CL_TRUE, 0, bytes, pos, 0, NULL, NULL)))
        CL_OK(o, clEnqueueWriteBuffer(o->queue, o->pos, CL_TRUE, at, bytes, row0, 0, NULL, NULL));
}

static hearth_status ocl_synchronize(hl_backend *b) {
    hl_ocl *o = ocl_of(b);
    CL_OK(o, clFinish(o->queue));
    const hearth_status st = o->status;
    o->status = HEARTH_OK;
    return st == HEARTH_OK ? HEARTH_OK : hl_fail(st, "%s", o->err);
}

static void ocl_backend_free(hl_backend *b) {
    hl_ocl *o = ocl_of(b);
    if (o->queue) clFinish(o->queue);
    hl_ocl_gemm_free(b);
    for (int k = 0; k < HL_OCL_K_COUNT; k++)
        if (o->kernels[k]) clReleaseKernel(o->kernels[k]);
    for (int k = 0; k < HL_OCL_N_TYPES; k++)
        if (o->matmul[k]) clReleaseKernel(o->matmul[k]);
    if (o->pos) clReleaseMemObject(o->pos);
    if (o->ids) clReleaseMemObject(o->ids);
    if (o->queue) clReleaseCommandQueue(o->queue);
    free(o);
    free(b);
}

static const hl_backend_i ocl_iface = {
    .name = ocl_name,
    .free = ocl_backend_free,
    .mem_info = ocl_mem_info,
    .buffer_alloc = hl_ocl_alloc,
    .buffer_free = hl_ocl_free,
    .upload = hl_ocl_upload,
    .download = hl_ocl_download,
    .copy = hl_ocl_copy,
    .set_positions = ocl_set_positions,
    .get_rows = hl_ocl_get_rows,
    .rms_norm = hl_ocl_rms_norm,
    .layer_norm = hl_ocl_layer_norm,
    .matmul = hl_ocl_matmul,
    .rope = hl_ocl_rope,
    .rope_shift = hl_ocl_rope_shift,
    .store_rows = hl_ocl_store_rows,
    .attention = hl_ocl_attention,
    .swiglu = hl_ocl_swiglu,
    .geglu = hl_ocl_geglu,
    .gelu = hl_ocl_gelu,
    .add = hl_ocl_add,
    .scale = hl_ocl_scale,
    .clamp = hl_ocl_clamp,
    .moe_route = hl_ocl_moe_route,
    .matmul_id = hl_ocl_matmul_id,
    .moe_sum = hl_ocl_moe_sum,
    .supports_op = hl_ocl_supports_op,
    .synchronize = ocl_synchronize,
    .graph_run = NULL,
};

/* The device's context, and with max_tokens its program (under dev->lock). */
static hearth_status open_device(hl_ocl_dev *d, bool compute) {
    if (!d->ctx) {
        cl_int e;
        const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)d->platform, 0};
        d->ctx = clCreateContext(props, 1, &d->id, NULL, NULL, &e);
        CL_TRY(e);
    }
    return compute ? hl_ocl_program(d) : HEARTH_OK;
}

static hearth_status init(hl_backend *b) {
    hl_ocl *o = ocl_of(b);
    hl_ocl_dev *d = o->dev;
    pthread_mutex_lock(&d->lock);
    const hearth_status st = open_device(d, o->limits.max_tokens > 0);
    pthread_mutex_unlock(&d->lock);
    HL_TRY(st);
    cl_int e;
    o->queue = clCreateCommandQueue(d->ctx, d->id, 0, &e);
    CL_TRY(e);
    const int64_t max = o->limits.max_tokens;
    if (max < 1) return HEARTH_OK; /* holds weights only */
    static const char *const names[HL_OCL_K_COUNT] = {
#define HL_OCL_K_NAME(name) #name,
        HL_OCL_KERNELS(HL_OCL_K_NAME)
#undef HL_OCL_K_NAME
    };
    for (int k = 0; k < HL_OCL_K_COUNT; k++) {
        o->kernels[k] = clCreateKernel(d->program, names[k], &e);
        CL_TRY(e);
    }
    for (int k = 0; k < HL_OCL_N_TYPES; k++) {
        char name[32];
        snprintf(name, sizeof name, "matmul_%s", hl_ggml_type_get(hl_ocl_types[k])->name);
        o->matmul[k] = clCreateKernel(d->program, name, &e);
        CL_TRY(e);
    }
    o->pos = clCreateBuffer(d->ctx, CL_MEM_READ_ONLY, 2 * (size_t)max * sizeof(int32_t), NULL, &e);
    CL_TRY(e);
    o->ids = clCreateBuffer(d->ctx, CL_MEM_READ_ONLY, (size_t)max * sizeof(int32_t), NULL, &e);
    CL_TRY(e);
    return hl_ocl_gemm_init(b);
}

hearth_status hl_backend_opencl_init(int32_t device, const hl_gpu_limits *limits, hl_backend **out) {
    *out = NULL;
    hl_ocl_dev *d = hl_ocl_device(device);
    if (!d) return hl_fail(HEARTH_ERR_INVALID_ARG, "OpenCL device %d does not exist", (int)device);
    if (limits->max_tokens > 0 && limits->max_row < 1)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "OpenCL backend: max_row must be at least 1");
    hl_backend *b = hl_calloc(1, sizeof *b);
    hl_ocl *o = hl_calloc(1, sizeof *o);
    if (!b || !o) {
        free(b);
        free(o);
        return HEARTH_ERR_OUT_OF_MEMORY;
    }
    b->iface = &ocl_iface;
    b->impl = o;
    o->dev = d;
    o->index = device;
    snprintf(o->name, sizeof o->name, "opencl%d", (int)device);
    o->limits = *limits;
    if (limits->max_tokens > 0)
        b->limits = (hl_backend_limits){limits->max_tokens, limits->max_row, INT64_MAX}; /* attention keeps no span */
    const hearth_status st = init(b);
    if (st != HEARTH_OK) {
        ocl_backend_free(b);
        return st;
    }
    *out = b;
    return HEARTH_OK;
}
