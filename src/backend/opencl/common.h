/* Shared by the OpenCL backend's files: a device (one context, its buffers
 * and its built program, shared by every instance on it), an instance (a
 * command queue and its kernels), the pseudo addresses that stand for device
 * memory, the checking macros that turn failed OpenCL calls into a status
 * with file and line, and the op entry points the table in backend.c points
 * to. Nothing here leaves the folder. */
#ifndef HEARTH_OPENCL_COMMON_H
#define HEARTH_OPENCL_COMMON_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <pthread.h>

#include "backend/backend.h"
#include "backend/opencl/opencl_backend.h"
#include "base/status.h"

/* A buffer as the rest of the library sees it: hl_tensor.data and the
 * pointers of backend.h are addresses in a range the device hands out
 * (never dereferenced on the host); [va, va + size) is cl_mem `mem`.
 * OpenCL 1.2 buffers have no device address, and tensors are offsets into
 * one buffer (weights, context arenas), so every kernel takes a buffer and a
 * byte offset. */
typedef struct hl_ocl_buf {
    uintptr_t va;
    size_t size;
    cl_mem mem;
} hl_ocl_buf;

/* One device, made at probing; its context and program at first use. */
typedef struct hl_ocl_dev {
    cl_platform_id platform;
    cl_device_id id;
    char name[256];    /* "<device> (<platform>)" */
    char version[128]; /* driver version, part of the program cache key */
    bool is_gpu;       /* GPU or accelerator (not CL_DEVICE_TYPE_CPU) */
    uint32_t compute_units;
    size_t global_bytes;  /* global memory (hl_ocl_total_bytes applies the test limit) */
    size_t max_alloc;     /* the largest buffer */
    pthread_mutex_t lock; /* the fields below */
    cl_context ctx;
    cl_program program; /* NULL until a compute instance builds it */
    size_t used;        /* bytes of live buffers */
    hl_ocl_buf *bufs;   /* [n_bufs] live buffers */
    int n_bufs, cap_bufs;
} hl_ocl_dev;

/* The kernels of the program (kernels/NAME.cl), one cl_kernel of each per
 * compute instance (clSetKernelArg is not safe across threads). */
// clang-format off
#define HL_OCL_KERNELS(X) \
    X(get_rows) X(store_rows) X(rms_norm) X(layer_norm) X(rope) X(rope_shift) X(attention) X(swiglu) X(geglu) \
    X(gelu) X(add) X(scale) X(clamp_f32) X(moe_route) X(moe_sum)
// clang-format on

/* The weight types the kernels read (ops.c), in the order of hl_ocl.matmul:
 * kernels/matmul.cl has a kernel matmul_<ggml type name> for each. */
#define HL_OCL_N_TYPES 13
extern const uint32_t hl_ocl_types[HL_OCL_N_TYPES];

typedef enum hl_ocl_kernel {
// clang-format off
#define HL_OCL_K_ENUM(name) HL_OCL_K_##name,
    HL_OCL_KERNELS(HL_OCL_K_ENUM)
#undef HL_OCL_K_ENUM
    HL_OCL_K_COUNT
    // clang-format on
} hl_ocl_kernel;

/* One instance: an in-order queue on one device with its scratch. */
typedef struct hl_ocl {
    hl_ocl_dev *dev;
    int index; /* hearth's OpenCL device number (opencl<index>) */
    char name[24];
    hl_gpu_limits limits;
    cl_command_queue queue;
    cl_kernel kernels[HL_OCL_K_COUNT];     /* NULL in a weight-only instance */
    cl_kernel matmul[HL_OCL_N_TYPES];      /* matmul_<type>, likewise */
    struct {                               /* prompt products through CLBlast (gemm.c); scratch NULL: none */
        cl_kernel dequant[HL_OCL_N_TYPES]; /* dequant_<type> */
        bool types[HL_OCL_N_TYPES];        /* the weight types that take CLBlast */
        void *scratch; /* [limits.gemm_scratch_bytes]: CLBlast's temporary buffer, then F32 rows of W */
    } gemm;
    cl_mem pos;           /* [2 * max_tokens] int: the pass's positions, then its rows0 */
    cl_mem ids;           /* [max_tokens] int: row ids of get_rows */
    hearth_status status; /* first error since the last synchronize */
    char err[384];
} hl_ocl;

static inline hl_ocl *ocl_of(const hl_backend *b) { return (hl_ocl *)b->impl; }

/* "CL_OUT_OF_RESOURCES" ... for an error code. */
const char *hl_ocl_error_name(cl_int e);

/* Records the first error of an op (ops return nothing; synchronize reports it). */
void hl_ocl_record(hl_ocl *o, hearth_status st, const char *fmt, ...) HL_PRINTF(3, 4);

/* In an op: a failed call records DEVICE with file, line and the call;
 * evaluates to true on success. */
#define CL_OK(o, expr) hl_ocl_ok((o), (expr), #expr, __FILE__, __LINE__)
bool hl_ocl_ok(hl_ocl *o, cl_int e, const char *what, const char *file, int line);

/* In a function returning hearth_status: a failed call returns DEVICE. */
#define CL_TRY(expr)                                                                                                   \
    do {                                                                                                               \
        const cl_int e_ = (expr);                                                                                      \
        if (e_ != CL_SUCCESS)                                                                                          \
            return hl_fail(HEARTH_ERR_DEVICE, "%s:%d: %s failed: %s", __FILE__, __LINE__, #expr,                       \
                           hl_ocl_error_name(e_));                                                                     \
    } while (0)

/* device.c: probes the platforms and devices once per process and
 * returns the devices found; with none, *reason (static) says why.
 * Thread-safe. */
int32_t hl_opencl_device_count(const char **reason);
/* device.c: device `i` (probed), NULL when out of range. */
hl_ocl_dev *hl_ocl_device(int32_t i);
/* backend.c: an instance on `device`; one with max_tokens > 0 builds the
 * kernels at its first use on the device (cached on disk, program.c).
 * Errors: INVALID_ARG, DEVICE, OUT_OF_MEMORY. */
hearth_status hl_backend_opencl_init(int32_t device, const hl_gpu_limits *limits, hl_backend **out);
/* device.c: the memory hearth may use on d (HEARTH_OPENCL_MEM_LIMIT, MiB, caps it). */
size_t hl_ocl_total_bytes(const hl_ocl_dev *d);

/* memory.c: the buffer and byte offset of a device address; false (error
 * recorded) when `p` is no address of the instance's device. */
typedef struct hl_ocl_ref {
    cl_mem mem;
    cl_ulong off;
} hl_ocl_ref;
bool hl_ocl_ref_of(hl_ocl *o, const void *p, hl_ocl_ref *out);
hearth_status hl_ocl_alloc(hl_backend *b, size_t bytes, void **out);
void hl_ocl_free(hl_backend *b, void *ptr);
hearth_status hl_ocl_upload(hl_backend *b, void *dst, const void *src, size_t bytes);
hearth_status hl_ocl_download(hl_backend *b, void *dst, const void *src, size_t bytes);
hearth_status hl_ocl_copy(hl_backend *b, void *dst, const void *src, size_t bytes);

/* Work-items per weight row of the matmul kernels (kernels/matmul.cl). */
static inline int hl_ocl_mv_lanes(const hl_ocl_dev *d) { return d->is_gpu ? 64 : 1; }

/* program.c: builds the device's program once (from the disk cache when it
 * holds this device's binary of these sources), under dev->lock.
 * Errors: DEVICE (with the compiler's first lines). */
hearth_status hl_ocl_program(hl_ocl_dev *dev);

/* ops.c: a kernel launch. An argument is a value (ARG) or a tensor's data
 * (two kernel arguments: its buffer and byte offset). */
typedef struct hl_ocl_arg {
    size_t size; /* 0: `ptr` is device data to resolve */
    const void *ptr;
} hl_ocl_arg;
#define OCL_VAL(v) ((hl_ocl_arg){sizeof(v), &(v)})
#define OCL_DATA(p) ((hl_ocl_arg){0, (p)})

/* Sets the arguments of kernel `kern` and enqueues it over `global`
 * work-items in groups of `local` (dims 1 or 2; global is rounded up to
 * whole groups, the kernels skip the excess). Records the first error. */
void hl_ocl_launch(hl_ocl *o, cl_kernel kern, const size_t global[2], const size_t local[2], int dims, int n_args,
                   const hl_ocl_arg *args);

/* Ops (ops.c); signatures as in backend.h. */
void hl_ocl_get_rows(hl_backend *b, const hl_tensor *table, const int32_t *ids, hl_tensor *out);
void hl_ocl_store_rows(hl_backend *b, const hl_tensor *src, hl_tensor *cache);
void hl_ocl_rms_norm(hl_backend *b, const hl_tensor *x, const hl_tensor *w, float eps, hl_tensor *y);
void hl_ocl_layer_norm(hl_backend *b, const hl_tensor *x, const hl_tensor *w, const hl_tensor *bias, float eps,
                       hl_tensor *y);
void hl_ocl_matmul(hl_backend *b, const hl_tensor *w, const hl_tensor *x, hl_tensor *y);
void hl_ocl_rope(hl_backend *b, hl_tensor *x, int32_t n_head, const hl_rope_params *p, const hl_tensor *freq_factors);
void hl_ocl_rope_shift(hl_backend *b, hl_tensor *cache, int64_t row, int64_t n, int32_t n_head, int32_t delta,
                       const hl_rope_params *p, const hl_tensor *freq_factors);
void hl_ocl_attention(hl_backend *b, const hl_attn_args *args);
void hl_ocl_swiglu(hl_backend *b, hl_tensor *gate, const hl_tensor *up);
void hl_ocl_geglu(hl_backend *b, hl_tensor *gate, const hl_tensor *up);
void hl_ocl_gelu(hl_backend *b, hl_tensor *x);
void hl_ocl_add(hl_backend *b, hl_tensor *x, const hl_tensor *y);
void hl_ocl_scale(hl_backend *b, hl_tensor *x, float s);
void hl_ocl_clamp(hl_backend *b, hl_tensor *x, float lo, float hi);
void hl_ocl_moe_route(hl_backend *b, const hl_tensor *logits, hl_tensor *ids, hl_tensor *weights);
void hl_ocl_matmul_id(hl_backend *b, const hl_tensor *w, const hl_tensor *x, const hl_tensor *ids, hl_tensor *y);
void hl_ocl_moe_sum(hl_backend *b, const hl_tensor *y, const hl_tensor *weights, hl_tensor *out);
bool hl_ocl_supports_op(const hl_backend *b, const hl_op_desc *d);

/* gemm.c (with CLBlast, HEARTH_HAVE_CLBLAST): hl_ocl_gemm_init allocates
 * the scratch of prompt products (limits.gemm_scratch_bytes) and makes the
 * dequantizers (errors: DEVICE, OUT_OF_MEMORY); hl_ocl_gemm enqueues
 * y = x W^T (W of type hl_ocl_types[type_index]) through CLBlast and
 * returns true, or returns false (nothing enqueued) where the matmul
 * kernels take the product: too few tokens, a type the table of gemm.c
 * leaves to them, too little scratch; hl_ocl_gemm_free releases what init
 * made. */
#ifdef HEARTH_HAVE_CLBLAST
hearth_status hl_ocl_gemm_init(hl_backend *b);
bool hl_ocl_gemm(hl_ocl *o, int type_index, const hl_tensor *w, const hl_tensor *x, hl_tensor *y);
void hl_ocl_gemm_free(hl_backend *b);
#else
static inline hearth_status hl_ocl_gemm_init(hl_backend *b) {
    (void)b;
    return HEARTH_OK;
}
static inline bool hl_ocl_gemm(hl_ocl *o, int type_index, const hl_tensor *w, const hl_tensor *x, hl_tensor *y) {
    (void)o, (void)type_index, (void)w, (void)x, (void)y;
    return false; /* a build without CLBlast: the matmul kernels take every product */
}
static inline void hl_ocl_gemm_free(hl_backend *b) { (void)b; }
#endif

#endif
