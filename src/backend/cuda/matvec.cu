// Matrix-vector products for decode (and batches of a few tokens): y[t][r] =
// dot(W row r, x[t]), reading the weights in their stored type. Memory-bound:
// each weight byte is read once per token, so the kernel is built for
// bandwidth: one warp per row, its 32 lanes reading consecutive 8-element
// chunks of the row (neighbouring lanes touch neighbouring bytes, so a
// warp's loads coalesce), four chunks per lane per iteration unrolled so
// that several loads are in flight, and a warp-shuffle reduction at the end.
// The dequantizers are the shared ones of dequant.cuh; activations stay F32.
#include "backend/cuda/common.cuh"
#include "backend/cuda/dequant.cuh"

#define MV_WARPS 4 // rows per block of 128 threads

// grid (ceil(d_out / MV_WARPS), n_tokens), block (32, MV_WARPS)
// w: d_out rows of w_stride bytes; x F32 {d_in, n}; y F32 {d_out, n}
template <uint32_t T>
static __global__ void __launch_bounds__(32 * MV_WARPS)
matvec_kernel(const uint8_t *__restrict__ w, size_t w_stride, const float *__restrict__ x, float *__restrict__ y,
              int64_t d_in, int64_t d_out) {
    const int64_t row = (int64_t)blockIdx.x * MV_WARPS + threadIdx.y;
    if (row >= d_out) return; // a whole warp leaves together
    const uint8_t *wr = w + row * w_stride;
    const float *xr = x + (int64_t)blockIdx.y * d_in;
    const int64_t n_chunks = dq_chunks(d_in);
    float sum = 0.0f;
#pragma unroll 4
    for (int64_t c = threadIdx.x; c < n_chunks; c += 32) {
        float v[8];
        const int k = dequant_chunk<T>(wr, d_in, c, v);
        const float *xc = xr + 8 * c;
        for (int j = 0; j < k; j++) sum = fmaf(v[j], __ldg(xc + j), sum);
    }
    sum = warp_sum(sum);
    if (threadIdx.x == 0) y[(int64_t)blockIdx.y * d_out + row] = sum;
}

namespace { // file-local: no symbol leaves the object
struct launch_matvec {
    template <uint32_t T>
    static void run(hl_cuda *cu, const hl_tensor *w, const hl_tensor *x, hl_tensor *y) {
        const int64_t d_in = w->ne[0], d_out = w->ne[1];
        const dim3 grid(cuda_blocks(d_out, MV_WARPS), (unsigned)x->ne[1]), block(32, MV_WARPS);
        matvec_kernel<T><<<grid, block, 0, cu->stream>>>((const uint8_t *)w->data, hl_row_size(w->type, d_in),
                                                         (const float *)x->data, (float *)y->data, d_in, d_out);
        CU_LAUNCHED(cu);
    }
};
} // namespace

bool hl_cuda_matvec(hl_cuda *cu, const hl_tensor *w, const hl_tensor *x, hl_tensor *y) {
    return dispatch_type<launch_matvec>(w->type, cu, w, x, y);
}
