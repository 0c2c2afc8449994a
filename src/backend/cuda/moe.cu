// Mixture-of-experts ops (backend.h moe_route, matmul_id, moe_sum; Mixtral
// as llama.cpp's build_moe_ffn runs it). The experts each token is routed
// to stay in device memory: matmul_id reads them in the kernel, so the ops
// record into a CUDA graph like the others. Its product is a plain one: a
// warp per (token, slot, output row) over dequant_chunk's chunks, in F32
// (no 8-bit activations, no cuBLAS): simple, not tuned.
#include <math.h>

#include "backend/cuda/common.cuh"
#include "backend/cuda/dequant.cuh"

#define MOE_THREADS 256
#define MMID_WARPS 4 // output rows per block of matmul_id

// One thread per token: p = softmax(logits {n_expert, n} column t), the sum
// in double as ggml_soft_max; ids {k, n} = the k experts of highest p,
// highest first (a tie keeps the lower expert first); weights {k, n} = their
// p over max(their sum, 2^-14), the sum in double as ggml_sum_rows.
static __global__ void moe_route_kernel(const float *__restrict__ logits, int32_t *__restrict__ ids,
                                        float *__restrict__ weights, int n_expert, int k, int64_t n) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    const float *x = logits + t * n_expert;
    int32_t *id = ids + t * k;
    float *w = weights + t * k;
    float max = -INFINITY;
    for (int e = 0; e < n_expert; e++) max = fmaxf(max, x[e]);
    double sum = 0.0;
    for (int e = 0; e < n_expert; e++) sum += (double)expf(x[e] - max);
    const float inv = (float)(1.0 / sum);
    double top = 0.0;
    for (int j = 0; j < k; j++) {
        int best = -1;
        float best_p = 0.0f;
        for (int e = 0; e < n_expert; e++) {
            bool taken = false;
            for (int i = 0; i < j; i++) taken |= id[i] == e;
            const float p = expf(x[e] - max) * inv;
            if (!taken && (best < 0 || p > best_p)) best = e, best_p = p;
        }
        id[j] = best;
        w[j] = best_p;
        top += (double)best_p;
    }
    const float s = fmaxf((float)top, 6.103515625e-5f);
    for (int j = 0; j < k; j++) w[j] /= s;
}

// Block (slot s, rows [MMID_WARPS * blockIdx.y, + MMID_WARPS)), a warp per
// row: y[:, s] = expert ids[s]'s {d_in, d_out} slice of w times x's row of
// the slot (token s / k, row (s % k) mod n_x).
template <uint32_t T>
static __global__ void __launch_bounds__(32 * MMID_WARPS)
    matmul_id_kernel(const uint8_t *__restrict__ w, size_t stride, const float *__restrict__ x,
                     const int32_t *__restrict__ ids, float *__restrict__ y, int64_t d_in, int64_t d_out, int k,
                     int64_t n_x) {
    const int64_t s = blockIdx.x, row = (int64_t)blockIdx.y * MMID_WARPS + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= d_out) return; // whole warps: warp_sum stays within live lanes
    const int64_t t = s / k, j = s % k;
    const uint8_t *wr = w + ((int64_t)ids[s] * d_out + row) * (int64_t)stride;
    const float *xr = x + (t * n_x + j % n_x) * d_in;
    float acc = 0.0f;
    for (int64_t c = lane; c < dq_chunks(d_in); c += 32) {
        float v[8];
        const int m = dequant_chunk<T>(wr, d_in, c, v);
        for (int i = 0; i < m; i++) acc = fmaf(v[i], xr[8 * c + i], acc);
    }
    acc = warp_sum(acc);
    if (lane == 0) y[s * d_out + row] = acc;
}

// One thread per output element: out[i, t] = sum over j of y[i, j, t] w[j, t], in order of j.
static __global__ void moe_sum_kernel(const float *__restrict__ y, const float *__restrict__ weights,
                                      float *__restrict__ out, int64_t d, int k, int64_t n) {
    const int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= d * n) return;
    const int64_t t = g / d, i = g % d;
    const float *yt = y + t * k * d + i, *wt = weights + t * k;
    float acc = __fmul_rn(yt[0], wt[0]);
    for (int j = 1; j < k; j++) acc = __fadd_rn(acc, __fmul_rn(yt[j * d], wt[j])); // no FMA: ggml_mul, then ggml_add
    out[g] = acc;
}

namespace { // file-local: no symbol leaves the object
struct launch_matmul_id {
    template <uint32_t T>
    static void run(hl_cuda *cu, const hl_tensor *w, const hl_tensor *x, const hl_tensor *ids, hl_tensor *y) {
        const int64_t d_in = w->ne[0], d_out = w->ne[1], k = ids->ne[0];
        const dim3 grid((unsigned)(k * ids->ne[1]), cuda_blocks(d_out, MMID_WARPS));
        matmul_id_kernel<T><<<grid, 32 * MMID_WARPS, 0, cu->stream>>>(
            (const uint8_t *)w->data, hl_row_size(w->type, d_in), (const float *)x->data, (const int32_t *)ids->data,
            (float *)y->data, d_in, d_out, (int)k, x->ne[1]);
        CU_LAUNCHED(cu);
    }
};
} // namespace

void hl_cuda_moe_route(hl_backend *b, const hl_tensor *logits, hl_tensor *ids, hl_tensor *weights) {
    hl_cuda *cu = cuda_of(b);
    if (!hl_cuda_enter(cu)) return;
    const int64_t n = logits->ne[1];
    moe_route_kernel<<<cuda_blocks(n, MOE_THREADS), MOE_THREADS, 0, cu->stream>>>(
        (const float *)logits->data, (int32_t *)ids->data, (float *)weights->data, (int)logits->ne[0], (int)ids->ne[0],
        n);
    CU_LAUNCHED(cu);
}

void hl_cuda_matmul_id(hl_backend *b, const hl_tensor *w, const hl_tensor *x, const hl_tensor *ids, hl_tensor *y) {
    hl_cuda *cu = cuda_of(b);
    if (!hl_cuda_enter(cu)) return;
    if (!dispatch_type<launch_matmul_id>(w->type, cu, w, x, ids, y))
        hl_cuda_record(cu, HEARTH_ERR_UNSUPPORTED, "cuda%d: matmul_id has no kernel for type %u", cu->index, w->type);
}

void hl_cuda_moe_sum(hl_backend *b, const hl_tensor *y, const hl_tensor *weights, hl_tensor *out) {
    hl_cuda *cu = cuda_of(b);
    if (!hl_cuda_enter(cu)) return;
    const int64_t d = out->ne[0], n = out->ne[1];
    moe_sum_kernel<<<cuda_blocks(d * n, MOE_THREADS), MOE_THREADS, 0, cu->stream>>>(
        (const float *)y->data, (const float *)weights->data, (float *)out->data, d, (int)weights->ne[0], n);
    CU_LAUNCHED(cu);
}
