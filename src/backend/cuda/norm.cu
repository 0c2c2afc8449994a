// RMSNorm (Zhang & Sennrich 2019, arXiv:1910.07467): y = x / sqrt(mean(x^2)
// + eps) * w over each run of d = w->ne[0] elements (a row, or one head of a
// row for QK-norm); LayerNorm (Ba et al. 2016, arXiv:1607.06450): y = (x -
// mean) / sqrt(var + eps) * w + b over each row. One block per run; sums are
// reduced over warps with shuffles, then through shared memory. A decode
// step's RMSNorm also writes its rows' Q8_1 form for the matvecs after it
// (q8_1.cuh), saving their quantize launch.
#include "backend/cuda/common.cuh"
#include "backend/cuda/q8_1.cuh"

#define NORM_THREADS 256

// grid n_runs, block NORM_THREADS; x, y F32 [n_runs * d]; w F32 [d]; y may alias x
// (each thread rewrites only the elements it read). Q8: the runs are whole
// rows of whole 32-element blocks, and y's Q8_1 form goes to q too
// (q8_1.cuh), each thread taking 4 consecutive elements at a time.
template <bool Q8>
static __global__ void __launch_bounds__(NORM_THREADS)
    rms_norm_kernel(const float *x, const float *__restrict__ w, float *y, int64_t d, float eps, q8_1_view q) {
    __shared__ float partial[NORM_THREADS / 32];
    const float *xr = x + (int64_t)blockIdx.x * d;
    float *yr = y + (int64_t)blockIdx.x * d;
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < d; i += NORM_THREADS) sum = fmaf(xr[i], xr[i], sum);
    sum = warp_sum(sum);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = sum;
    __syncthreads();
    float total = 0.0f;
    for (int i = 0; i < NORM_THREADS / 32; i++) total += partial[i];
    const float scale = rsqrtf(total / (float)d + eps);
    if (Q8) {
        for (int64_t i4 = threadIdx.x; i4 < d / 4; i4 += NORM_THREADS) {
            float v[4];
#pragma unroll
            for (int k = 0; k < 4; k++) v[k] = yr[4 * i4 + k] = xr[4 * i4 + k] * scale * w[4 * i4 + k];
            q8_1_put4(v[0], v[1], v[2], v[3], (int64_t)blockIdx.x * (d / 4) + i4, q);
        }
    } else {
        for (int64_t i = threadIdx.x; i < d; i += NORM_THREADS) yr[i] = xr[i] * scale * w[i];
    }
}

void hl_cuda_rms_norm(hl_backend *b, const hl_tensor *x, const hl_tensor *w, float eps, hl_tensor *y) {
    hl_cuda *cu = cuda_of(b);
    if (!hl_cuda_enter(cu)) return;
    const int64_t d = w->ne[0], runs = hl_tensor_nelements(x) / d;
    // a decode row (not QK-norm's heads) also in Q8_1 for the matvecs that follow
    const bool q8 = d == x->ne[0] && cuda_q8_1_wanted(cu, d, runs);
    const q8_1_view q = cuda_q8_1_view(cu, d, runs);
    if (q8)
        rms_norm_kernel<true><<<(unsigned)runs, NORM_THREADS, 0, cu->stream>>>(
            (const float *)x->data, (const float *)w->data, (float *)y->data, d, eps, q);
    else
        rms_norm_kernel<false><<<(unsigned)runs, NORM_THREADS, 0, cu->stream>>>(
            (const float *)x->data, (const float *)w->data, (float *)y->data, d, eps, q);
    if (CU_LAUNCHED(cu) && q8) cuda_q8_1_mark(cu, y->data, d, runs);
}

// The sum of v over the block's NORM_THREADS threads, in every thread.
static __device__ float block_sum(float v, float *partial) {
    v = warp_sum(v);
    __syncthreads(); // partial may still be read from an earlier call
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
    __syncthreads();
    float total = 0.0f;
    for (int i = 0; i < NORM_THREADS / 32; i++) total += partial[i];
    return total;
}

// grid n_rows, block NORM_THREADS; x, y F32 [n_rows * d]; w, bias F32 [d] (bias NULL: none); y may
// alias x (each thread rewrites only the elements it read). The variance is
// the mean of the centred squares (two passes over the row, as ggml_norm).
static __global__ void __launch_bounds__(NORM_THREADS)
    layer_norm_kernel(const float *x, const float *__restrict__ w, const float *__restrict__ bias, float *y, int64_t d,
                      float eps) {
    __shared__ float partial[NORM_THREADS / 32];
    const float *xr = x + (int64_t)blockIdx.x * d;
    float *yr = y + (int64_t)blockIdx.x * d;
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < d; i += NORM_THREADS) sum += xr[i];
    const float mean = block_sum(sum, partial) / (float)d;
    float sq = 0.0f;
    for (int64_t i = threadIdx.x; i < d; i += NORM_THREADS) sq = fmaf(xr[i] - mean, xr[i] - mean, sq);
    const float scale = rsqrtf(block_sum(sq, partial) / (float)d + eps);
    for (int64_t i = threadIdx.x; i < d; i += NORM_THREADS)
        yr[i] = (xr[i] - mean) * scale * w[i] + (bias ? bias[i] : 0.0f);
}

void hl_cuda_layer_norm(hl_backend *b, const hl_tensor *x, const hl_tensor *w, const hl_tensor *bias, float eps,
                        hl_tensor *y) {
    hl_cuda *cu = cuda_of(b);
    if (!hl_cuda_enter(cu)) return;
    const int64_t d = w->ne[0], rows = hl_tensor_nelements(x) / d;
    layer_norm_kernel<<<(unsigned)rows, NORM_THREADS, 0, cu->stream>>>((const float *)x->data, (const float *)w->data,
                                                                       bias ? (const float *)bias->data : NULL,
                                                                       (float *)y->data, d, eps);
    CU_LAUNCHED(cu);
}
