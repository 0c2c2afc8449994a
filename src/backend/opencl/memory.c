/* Device memory of the OpenCL backend: one cl_mem per allocation, handed out
 * as a pseudo address (common.h hl_ocl_buf) so that the library's pointer
 * arithmetic on device data (a tensor's place in a weight buffer or an
 * arena) carries over; kernels get the buffer and the byte offset back
 * (hl_ocl_ref_of). Addresses come from one counter for the process, so no
 * two buffers of any device overlap. Transfers are blocking on the
 * instance's in-order queue. */
#include <stdlib.h>

#include "backend/opencl/common.h"

#define VA_ALIGN ((uintptr_t)1 << 16) /* between buffers: a gap, and room for any alignment */

static pthread_mutex_t va_lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t va_next = (uintptr_t)1 << 40;

static uintptr_t va_take(size_t bytes) {
    pthread_mutex_lock(&va_lock);
    const uintptr_t va = va_next;
    va_next += (bytes + 2 * VA_ALIGN - 1) & ~(VA_ALIGN - 1);
    pthread_mutex_unlock(&va_lock);
    return va;
}

/* The live buffer holding p, under dev->lock; NULL when none. */
static hl_ocl_buf *find(hl_ocl_dev *d, uintptr_t p) {
    for (int i = 0; i < d->n_bufs; i++)
        if (p >= d->bufs[i].va && p - d->bufs[i].va < (d->bufs[i].size ? d->bufs[i].size : 1)) return &d->bufs[i];
    return NULL;
}

/* Resolves p for a transfer of `bytes` (or a kernel, bytes 0). */
static hearth_status resolve(hl_ocl *o, const void *p, size_t bytes, hl_ocl_ref *out) {
    pthread_mutex_lock(&o->dev->lock);
    const hl_ocl_buf *b = find(o->dev, (uintptr_t)p);
    if (b) *out = (hl_ocl_ref){b->mem, (cl_ulong)((uintptr_t)p - b->va)};
    const bool fits = b && out->off + bytes <= b->size;
    pthread_mutex_unlock(&o->dev->lock);
    if (!fits)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "%s: %p (%zu bytes) is not in a buffer of this device", o->name, p,
                       bytes);
    return HEARTH_OK;
}

bool hl_ocl_ref_of(hl_ocl *o, const void *p, hl_ocl_ref *out) {
    if (resolve(o, p, 0, out) == HEARTH_OK) return true;
    hl_ocl_record(o, HEARTH_ERR_INVALID_ARG, "%s", hearth_last_error());
    return false;
}

hearth_status hl_ocl_alloc(hl_backend *b, size_t bytes, void **out) {
    hl_ocl *o = ocl_of(b);
    hl_ocl_dev *d = o->dev;
    *out = NULL;
    pthread_mutex_lock(&d->lock);
    const size_t total = hl_ocl_total_bytes(d), free_b = total > d->used ? total - d->used : 0;
    hearth_status st = HEARTH_OK;
    if (bytes > free_b || bytes > d->max_alloc)
        st = hl_fail(HEARTH_ERR_OUT_OF_MEMORY,
                     "%s: cannot allocate %zu MiB (%zu MiB free, buffers of at most %zu MiB): "
                     "lower n_gpu_layers or n_ctx",
                     o->name, bytes >> 20, free_b >> 20, d->max_alloc >> 20);
    if (st == HEARTH_OK && d->n_bufs == d->cap_bufs) {
        const int cap = d->cap_bufs ? 2 * d->cap_bufs : 16;
        hl_ocl_buf *grown = realloc(d->bufs, (size_t)cap * sizeof *grown);
        if (grown) d->bufs = grown, d->cap_bufs = cap;
        else st = HEARTH_ERR_OUT_OF_MEMORY;
    }
    cl_int e = CL_SUCCESS;
    cl_mem mem = st == HEARTH_OK ? clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, bytes ? bytes : 256, NULL, &e) : NULL;
    if (st == HEARTH_OK && e != CL_SUCCESS)
        st = hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "%s: cannot allocate %zu MiB: %s; lower n_gpu_layers or n_ctx", o->name,
                     bytes >> 20, hl_ocl_error_name(e));
    if (st == HEARTH_OK) {
        const uintptr_t va = va_take(bytes);
        d->bufs[d->n_bufs++] = (hl_ocl_buf){va, bytes, mem};
        d->used += bytes;
        *out = (void *)va;
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

void hl_ocl_free(hl_backend *b, void *ptr) {
    if (!ptr) return;
    hl_ocl_dev *d = ocl_of(b)->dev;
    pthread_mutex_lock(&d->lock);
    hl_ocl_buf *buf = find(d, (uintptr_t)ptr);
    if (buf && buf->va == (uintptr_t)ptr) {
        clReleaseMemObject(buf->mem);
        d->used -= buf->size;
        *buf = d->bufs[--d->n_bufs];
    }
    pthread_mutex_unlock(&d->lock);
}

hearth_status hl_ocl_upload(hl_backend *b, void *dst, const void *src, size_t bytes) {
    hl_ocl *o = ocl_of(b);
    hl_ocl_ref r;
    HL_TRY(resolve(o, dst, bytes, &r));
    CL_TRY(clEnqueueWriteBuffer(o->queue, r.mem, CL_TRUE, r.off, bytes, src, 0, NULL, NULL));
    return HEARTH_OK;
}

hearth_status hl_ocl_download(hl_backend *b, void *dst, const void *src, size_t bytes) {
    hl_ocl *o = ocl_of(b);
    hl_ocl_ref r;
    HL_TRY(resolve(o, src, bytes, &r));
    CL_TRY(clEnqueueReadBuffer(o->queue, r.mem, CL_TRUE, r.off, bytes, dst, 0, NULL, NULL));
    return HEARTH_OK;
}

hearth_status hl_ocl_copy(hl_backend *b, void *dst, const void *src, size_t bytes) {
    hl_ocl *o = ocl_of(b);
    hl_ocl_ref d, s;
    HL_TRY(resolve(o, dst, bytes, &d));
    HL_TRY(resolve(o, src, bytes, &s));
    if (bytes) CL_TRY(clEnqueueCopyBuffer(o->queue, s.mem, d.mem, s.off, d.off, bytes, 0, NULL, NULL));
    return HEARTH_OK;
}
