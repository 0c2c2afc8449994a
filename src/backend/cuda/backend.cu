// The CUDA backend instance (device probing is device.cu's): memory,
// uploads through pinned staging buffers, error records, the op table, and
// graph_run, which records the per-token decode step as a CUDA graph once
// and replays it.
//
// Why a record replays unchanged: every kernel argument that would change
// from one token to the next is the position (and the sequence's first cache
// row), and position-dependent kernels (rope, store_rows, attention) read
// them from d_pos in device memory instead of taking them by value; their
// grids do not depend on them (attention loops over the cache inside the
// kernel). set_positions copies them there before the pass, outside the
// record. This is cheaper than
// capturing every token and patching the executable graph with
// cudaGraphExecUpdate (llama.cpp's way), which re-runs the host side of the
// whole forward pass per token.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/common.cuh"
#include "backend/cuda/dequant.cuh"

extern "C" {
#include "base/log.h"
}

// ------------------------------------------------------------ errors --

void hl_cuda_record(hl_cuda *cu, hearth_status st, const char *fmt, ...) {
    if (cu->status != HEARTH_OK) return;
    cu->status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cu->err, sizeof cu->err, fmt, ap);
    va_end(ap);
}

bool hl_cuda_ok(hl_cuda *cu, cudaError_t e, const char *what, const char *file, int line) {
    if (e == cudaSuccess) return true;
    hl_cuda_record(cu, HEARTH_ERR_DEVICE, "cuda%d: %s:%d: %s failed: %s", cu->index, file, line, what,
                   cudaGetErrorString(e));
    return false;
}

bool hl_cublas_ok(hl_cuda *cu, cublasStatus_t s, const char *what, const char *file, int line) {
    if (s == CUBLAS_STATUS_SUCCESS) return true;
    hl_cuda_record(cu, HEARTH_ERR_DEVICE, "cuda%d: %s:%d: %s failed: %s", cu->index, file, line, what,
                   cublasGetStatusString(s));
    return false;
}

bool hl_cuda_enter(hl_cuda *cu) {
    cu->op_count++;
    return CU_OK(cu, cudaSetDevice(cu->device));
}

// Copies the pass's positions and rows0 to d_pos through pinned memory, in
// stream order before the ops that read them.
static void cuda_set_positions(hl_backend *b, const int32_t *pos, const int32_t *row0, int32_t n) {
    hl_cuda *cu = cuda_of(b);
    if (!hl_cuda_enter(cu) || !CU_OK(cu, cudaEventSynchronize(cu->pos_copied))) return;
    const int64_t max = cu->limits.max_tokens;
    memcpy(cu->h_pos, pos, (size_t)n * sizeof *pos);
    memcpy(cu->h_pos + max, row0, (size_t)n * sizeof *row0);
    int32_t t = 1;
    while (t < n && row0[t] == row0[0] && pos[t] == pos[t - 1] + 1) t++;
    cu->one_seq_tokens = t == n ? n : 0;
    if (CU_OK(cu, cudaMemcpyAsync(cu->d_pos, cu->h_pos, 2 * (size_t)max * sizeof(int32_t), cudaMemcpyHostToDevice,
                                  cu->stream)))
        CU_OK(cu, cudaEventRecord(cu->pos_copied, cu->stream));
}

namespace { // file-local: no symbol leaves the object
struct type_known {
    template <uint32_t T> static void run() {}
};
} // namespace

bool hl_cuda_supports_type(uint32_t type) { return dispatch_type<type_known>(type); }

// Rows of n elements of `type` are whole blocks (the dequantizers read
// quantized rows block by block; plain rows may end anywhere).
static bool whole_blocks(uint32_t type, int64_t n) {
    const ggml_type_info *ti = hl_ggml_type_get(type);
    return ti && ti->blck_size > 0 && n % (int64_t)ti->blck_size == 0;
}

// What the kernels handle (each op file answers for its own); the F32
// element-wise ops, rms_norm and layer_norm run on any shape.
static bool cuda_supports_op(const hl_backend *b, const hl_op_desc *d) {
    (void)b;
    switch (d->op) {
    case HL_OP_MATMUL: // matvec and the F16 tiles for cuBLAS dequantize the same types
    case HL_OP_MATMUL_ADD:
    case HL_OP_MATMUL_ID: // moe.cu's kernel dequantizes them too
    case HL_OP_GET_ROWS: return hl_cuda_supports_type(d->t[0]->type) && whole_blocks(d->t[0]->type, d->t[0]->ne[0]);
    case HL_OP_STORE_ROWS: return hl_cuda_store_rows_runs(d->t[1]->type, d->t[1]->ne[0]);
    case HL_OP_ATTENTION: return hl_cuda_attention_runs(d->attn);
    case HL_OP_ROPE: return hl_cuda_rope_runs(d->rope);
    case HL_OP_ROPE_STORE:
        return hl_cuda_rope_store_runs(d->rope, d->t[3]->type, d->t[4]->type, d->t[1]->ne[0], d->t[2]->ne[0]);
    case HL_OP_ROPE_SHIFT:
        return d->n_head > 0 && d->t[0]->ne[0] % d->n_head == 0 &&
               hl_cuda_rope_shift_runs(d->rope, d->t[0]->type, d->t[0]->ne[0] / d->n_head);
    default: return true;
    }
}

// ------------------------------------------------------------- memory --

static const char *cuda_name(const hl_backend *b) {
    static const char *names[HL_MAX_GPUS] = {"cuda0",  "cuda1",  "cuda2",  "cuda3", "cuda4",  "cuda5",
                                             "cuda6",  "cuda7",  "cuda8",  "cuda9", "cuda10", "cuda11",
                                             "cuda12", "cuda13", "cuda14", "cuda15"};
    return names[((const hl_cuda *)b->impl)->index];
}

static void cuda_mem_info(const hl_backend *b, size_t *free_bytes, size_t *total_bytes) {
    const hl_cuda *cu = (const hl_cuda *)b->impl;
    *free_bytes = *total_bytes = 0;
    if (cudaSetDevice(cu->device) != cudaSuccess || cudaMemGetInfo(free_bytes, total_bytes) != cudaSuccess)
        cudaGetLastError();
    *free_bytes /= (size_t)hl_cuda_split(); // a logical device's share (HEARTH_CUDA_SPLIT)
    *total_bytes /= (size_t)hl_cuda_split();
}

static hearth_status cuda_alloc(hl_backend *b, size_t bytes, void **out) {
    hl_cuda *cu = cuda_of(b);
    *out = NULL;
    CUDA_TRY(cudaSetDevice(cu->device));
    cudaError_t e = cudaMalloc(out, bytes ? bytes : 256);
    if (e != cudaSuccess) {
        cudaGetLastError();
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        *out = NULL;
        return hl_fail(HEARTH_ERR_OUT_OF_MEMORY,
                       "cuda%d: cannot allocate %zu MiB (%zu MiB free): %s; lower n_gpu_layers "
                       "or n_ctx",
                       cu->index, bytes >> 20, free_b >> 20, cudaGetErrorString(e));
    }
    return HEARTH_OK;
}

static void cuda_free(hl_backend *b, void *ptr) {
    if (!ptr) return;
    hl_cuda *cu = cuda_of(b);
    if (hl_cuda_enter(cu)) CU_OK(cu, cudaFree(ptr));
}

// Host memory -> pinned staging -> device, two buffers in turn so the copy
// of one chunk overlaps the memcpy into the other.
static hearth_status cuda_upload(hl_backend *b, void *dst, const void *src, size_t bytes) {
    hl_cuda *cu = cuda_of(b);
    cu->op_count++; // device memory changes outside the ops
    CUDA_TRY(cudaSetDevice(cu->device));
    for (size_t off = 0, k = 0; off < bytes; off += HL_CUDA_STAGING, k++) {
        const size_t n = bytes - off < HL_CUDA_STAGING ? bytes - off : HL_CUDA_STAGING;
        const int i = (int)(k % 2);
        CUDA_TRY(cudaEventSynchronize(cu->staged[i]));
        memcpy(cu->staging[i], (const char *)src + off, n);
        CUDA_TRY(cudaMemcpyAsync((char *)dst + off, cu->staging[i], n, cudaMemcpyHostToDevice, cu->stream));
        CUDA_TRY(cudaEventRecord(cu->staged[i], cu->stream));
    }
    CUDA_TRY(cudaStreamSynchronize(cu->stream));
    return HEARTH_OK;
}

static hearth_status cuda_download(hl_backend *b, void *dst, const void *src, size_t bytes) {
    hl_cuda *cu = cuda_of(b);
    CUDA_TRY(cudaSetDevice(cu->device));
    CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, cu->stream));
    CUDA_TRY(cudaStreamSynchronize(cu->stream));
    return HEARTH_OK;
}

static hearth_status cuda_copy(hl_backend *b, void *dst, const void *src, size_t bytes) {
    hl_cuda *cu = cuda_of(b);
    cu->op_count++; // device memory changes outside the ops
    CUDA_TRY(cudaSetDevice(cu->device));
    CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, cu->stream));
    return HEARTH_OK;
}

static hearth_status cuda_synchronize(hl_backend *b) {
    hl_cuda *cu = cuda_of(b);
    if (hl_cuda_enter(cu)) {
        CU_OK(cu, cudaStreamSynchronize(cu->stream));
        CU_OK(cu, cudaGetLastError());
    }
    const hearth_status st = cu->status;
    cu->status = HEARTH_OK;
    return st == HEARTH_OK ? HEARTH_OK : hl_fail(st, "%s", cu->err);
}

// -------------------------------------------------------------- graphs --

// Records issue's ops into a graph. *recorded is false (nothing kept, no
// error kept) when the driver refuses, so the caller runs them eagerly.
// When issue itself fails (a checked call refused an op) nothing is kept
// and its status is returned: a record missing ops must never replay.
static hearth_status record(hl_cuda *cu, int key, hearth_status (*issue)(void *), void *ctx, bool *recorded) {
    *recorded = false;
    if (cudaStreamBeginCapture(cu->stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
        cudaGetLastError();
        return HEARTH_OK;
    }
    const hearth_status st = issue(ctx);
    cudaGraph_t g = NULL;
    const bool captured = cudaStreamEndCapture(cu->stream, &g) == cudaSuccess && cu->status == HEARTH_OK;
    const bool ok = st == HEARTH_OK && captured && cudaGraphInstantiate(&cu->graph[key], g, 0) == cudaSuccess;
    if (g) cudaGraphDestroy(g);
    if (!ok) {
        // the recorded matvecs never ran: no Q8_1 form of their activations is in x16
        cu->q8_x = NULL;
        if (st == HEARTH_OK)
            HL_DEBUG("cuda%d: recording the decode step failed (%s); running it eagerly", cu->index,
                     cu->status != HEARTH_OK ? cu->err : cudaGetErrorString(cudaGetLastError()));
        cudaGetLastError();
        cu->status = HEARTH_OK; // the ops were recorded, not run: nothing failed on the device
        cu->graph[key] = NULL;
    }
    *recorded = ok;
    return st;
}

static hearth_status cuda_graph_run(hl_backend *b, int key, hearth_status (*issue)(void *), void *ctx) {
    hl_cuda *cu = cuda_of(b);
    // with an error pending, run eagerly: recording must not hide it
    if (key < 0 || key >= HL_GRAPH_KEYS || cu->graphs_off || cu->status != HEARTH_OK || !hl_cuda_enter(cu))
        return issue(ctx);
    if (!cu->graph[key]) {
        bool recorded = false;
        HL_TRY(record(cu, key, issue, ctx, &recorded));
        if (!recorded) {
            cu->graphs_off = true;
            return issue(ctx);
        }
    }
    CU_OK(cu, cudaGraphLaunch(cu->graph[key], cu->stream));
    return HEARTH_OK;
}

// ------------------------------------------------------------ instance --

static void cuda_backend_free(hl_backend *b);

static const hl_backend_i cuda_iface = {
    .name = cuda_name,
    .free = cuda_backend_free,
    .mem_info = cuda_mem_info,
    .buffer_alloc = cuda_alloc,
    .buffer_free = cuda_free,
    .upload = cuda_upload,
    .download = cuda_download,
    .copy = cuda_copy,
    .set_positions = cuda_set_positions,
    .get_rows = hl_cuda_get_rows,
    .rms_norm = hl_cuda_rms_norm,
    .layer_norm = hl_cuda_layer_norm,
    .matmul = hl_cuda_matmul,
    .matmul_add = hl_cuda_matmul_add,
    .matmul_n = hl_cuda_matmul_n,
    .rope = hl_cuda_rope,
    .rope_shift = hl_cuda_rope_shift,
    .store_rows = hl_cuda_store_rows,
    .rope_store = hl_cuda_rope_store,
    .attention = hl_cuda_attention,
    .swiglu = hl_cuda_swiglu,
    .geglu = hl_cuda_geglu,
    .gelu = hl_cuda_gelu,
    .add = hl_cuda_add,
    .scale = hl_cuda_scale,
    .clamp = hl_cuda_clamp,
    .moe_route = hl_cuda_moe_route,
    .matmul_id = hl_cuda_matmul_id,
    .moe_sum = hl_cuda_moe_sum,
    .supports_op = cuda_supports_op,
    .synchronize = cuda_synchronize,
    .graph_run = cuda_graph_run,
};

// The same backend without the fused decode ops (HEARTH_CUDA_FUSED=0, for
// benchmarks and tests that compare the two): the checked calls run matmul
// and add, the matmuls one by one, rope and store_rows in their place.
static const hl_backend_i cuda_iface_unfused = [] {
    hl_backend_i i = cuda_iface;
    i.matmul_add = NULL;
    i.matmul_n = NULL;
    i.rope_store = NULL;
    return i;
}();

static hearth_status init(hl_cuda *cu) {
    CUDA_TRY(cudaSetDevice(cu->device));
    CUDA_TRY(cudaStreamCreateWithFlags(&cu->stream, cudaStreamNonBlocking));
    for (int i = 0; i < 2; i++) {
        CUDA_TRY(cudaMallocHost(&cu->staging[i], HL_CUDA_STAGING));
        CUDA_TRY(cudaEventCreateWithFlags(&cu->staged[i], cudaEventDisableTiming));
    }
    const hl_gpu_limits *l = &cu->limits;
    if (l->max_tokens < 1) return HEARTH_OK; // holds weights only
    CUDA_TRY(cudaMalloc(&cu->d_pos, 2 * (size_t)l->max_tokens * sizeof(int32_t)));
    CUDA_TRY(cudaMallocHost(&cu->h_pos, 2 * (size_t)l->max_tokens * sizeof(int32_t)));
    CUDA_TRY(cudaEventCreateWithFlags(&cu->pos_copied, cudaEventDisableTiming));
    const cublasStatus_t s = cublasCreate(&cu->cublas);
    if (s != CUBLAS_STATUS_SUCCESS)
        return hl_fail(HEARTH_ERR_DEVICE, "cuda%d: cublasCreate failed: %s", cu->index, cublasGetStatusString(s));
    if (cublasSetStream(cu->cublas, cu->stream) != CUBLAS_STATUS_SUCCESS)
        return hl_fail(HEARTH_ERR_DEVICE, "cuda%d: cublasSetStream failed", cu->index);
    HL_TRY(hl_cuda_attention_mma_init(cu));
    int cc_major = 0;
    CUDA_TRY(cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, cu->device));
    cu->bf16_gemm = cc_major >= 8;
    cu->w16_elems = l->gemm_scratch_bytes / sizeof(__half);
    CUDA_TRY(cudaMalloc(&cu->d_ids, (size_t)l->max_tokens * sizeof(int32_t)));
    CUDA_TRY(cudaMalloc(&cu->w16, cu->w16_elems * sizeof(__half) + 16));
    CUDA_TRY(cudaMalloc(&cu->x16, (size_t)l->max_tokens * (size_t)l->max_row * sizeof(__half) + 16));
    return HEARTH_OK;
}

extern "C" hearth_status hl_backend_cuda_init(int32_t device, const hl_gpu_limits *limits, hl_backend **out) {
    *out = NULL;
    if (device < 0 || device >= hl_cuda_device_count(NULL))
        return hl_fail(HEARTH_ERR_INVALID_ARG, "CUDA device %d does not exist", (int)device);
    if (limits->max_tokens > 0 && (limits->max_row < 1 || limits->gemm_scratch_bytes < (size_t)limits->max_row * 2))
        return hl_fail(HEARTH_ERR_INVALID_ARG, "CUDA backend: max_row and the GEMM scratch must hold a row");
    hl_backend *b = (hl_backend *)hl_calloc(1, sizeof *b);
    hl_cuda *cu = (hl_cuda *)hl_calloc(1, sizeof *cu);
    if (!b || !cu) {
        free(b);
        free(cu);
        return HEARTH_ERR_OUT_OF_MEMORY;
    }
    const char *fused = getenv("HEARTH_CUDA_FUSED");
    cu->unfused = fused && strcmp(fused, "0") == 0;
    b->iface = cu->unfused ? &cuda_iface_unfused : &cuda_iface;
    b->impl = cu;
    cu->device = hl_cuda_ordinal(device);
    cu->index = device;
    cu->limits = *limits;
    if (limits->max_tokens > 0)
        b->limits = hl_backend_limits{limits->max_tokens, limits->max_row, INT64_MAX}; // attention has no span scratch
    const hearth_status st = init(cu);
    if (st != HEARTH_OK) {
        cudaGetLastError();
        cuda_backend_free(b);
        return st;
    }
    *out = b;
    return HEARTH_OK;
}

static void cuda_backend_free(hl_backend *b) {
    hl_cuda *cu = cuda_of(b);
    // Best effort: a failing device still gets every release call.
    cudaSetDevice(cu->device);
    if (cu->stream) cudaStreamSynchronize(cu->stream);
    for (int k = 0; k < HL_GRAPH_KEYS; k++)
        if (cu->graph[k]) cudaGraphExecDestroy(cu->graph[k]);
    if (cu->cublas) cublasDestroy(cu->cublas);
    for (int i = 0; i < 2; i++) {
        if (cu->staging[i]) cudaFreeHost(cu->staging[i]);
        if (cu->staged[i]) cudaEventDestroy(cu->staged[i]);
    }
    cudaFree(cu->d_pos);
    if (cu->h_pos) cudaFreeHost(cu->h_pos);
    if (cu->pos_copied) cudaEventDestroy(cu->pos_copied);
    cudaFree(cu->d_ids);
    cudaFree(cu->w16);
    cudaFree(cu->x16);
    if (cu->stream) cudaStreamDestroy(cu->stream);
    cudaGetLastError();
    free(cu);
    free(b);
}

// ------------------------------------------------- host dequantization --

namespace { // file-local: no symbol leaves the object
struct dequant_host {
    template <uint32_t T> static void run(const uint8_t *src, float *dst, int64_t n) {
        for (int64_t c = 0; c < dq_chunks(n); c++) {
            float v[8];
            const int k = dequant_chunk<T>(src, n, c, v);
            memcpy(dst + 8 * c, v, sizeof(float) * (size_t)k);
        }
    }
};
} // namespace

extern "C" hearth_status hl_cuda_dequant_host(uint32_t type, const void *src, float *dst, int64_t n) {
    const ggml_type_info *ti = hl_ggml_type_get(type);
    if (!ti || !hl_cuda_supports_type(type))
        return hl_fail(HEARTH_ERR_UNSUPPORTED, "the CUDA backend has no kernels for type %s", ti ? ti->name : "?");
    if (n < 0 || n % ti->blck_size)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "%lld elements are not whole %s blocks", (long long)n, ti->name);
    dispatch_type<dequant_host>(type, (const uint8_t *)src, dst, n);
    return HEARTH_OK;
}
