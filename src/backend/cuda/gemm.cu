// Matrix products of prompts through cuBLAS. F16 and BF16 weights are read
// in place: one GemmEx over the whole matrix, the activations converted once
// to the weights' type (as llama.cpp does for BF16; BF16 from compute
// capability 8.0, hl_cuda.bf16_gemm). Other types are dequantized to F16
// tiles of as many rows as the scratch holds, each multiplied as it is made.
// F32 accumulation and output throughout. Fewer tokens (decode steps, the
// batches of a few streams, short prompts: mv_max_tokens) take the
// matrix-vector kernels (matvec.cu), which read the quantized weights
// directly, up to HL_CUDA_MMV_MAX tokens a launch.
//
// Layouts: cuBLAS is column-major. Row-major W {d_in, d_out} (d_out rows of
// d_in) is the column-major d_in x d_out matrix A with lda = d_in; x {d_in, n}
// is column-major d_in x n; y {d_out, n} is column-major d_out x n. So
// y[:, r0:r1] = A[:, r0:r1]^T x: GemmEx(T, N, m = r1 - r0, n, k = d_in),
// C = y + r0 with ldc = d_out.
#include <type_traits>

#include "backend/cuda/common.cuh"
#include "backend/cuda/dequant.cuh"

#define DQ_THREADS 256

// One thread per 8-element chunk: y {d, rows} F16 from `rows` rows of src.
template <uint32_t T>
static __global__ void dequant_f16_kernel(const uint8_t *__restrict__ src, size_t stride, int64_t d, int64_t rows,
                                          __half *__restrict__ y) {
    const int64_t per_row = dq_chunks(d);
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= per_row * rows) return;
    const int64_t r = i / per_row, c = i % per_row;
    float v[8];
    const int k = dequant_chunk<T>(src + r * stride, d, c, v);
    __half *out = y + r * d + 8 * c;
    if (k == 8 && d % 8 == 0) { // a whole chunk on a 16-byte boundary: one store (a warp writes 512 bytes at once)
        __align__(16) __half2 h[4];
        for (int j = 0; j < 4; j++) h[j] = __floats2half2_rn(v[2 * j], v[2 * j + 1]);
        *(uint4 *)out = *(const uint4 *)h;
    } else {
        for (int j = 0; j < k; j++) out[j] = __float2half_rn(v[j]);
    }
}

namespace { // file-local: no symbol leaves the object
struct launch_dequant_f16 {
    template <uint32_t T>
    static void run(hl_cuda *cu, const void *src, size_t stride, int64_t d, int64_t rows, __half *y) {
        dequant_f16_kernel<T><<<cuda_blocks(dq_chunks(d) * rows, DQ_THREADS), DQ_THREADS, 0, cu->stream>>>(
            (const uint8_t *)src, stride, d, rows, y);
        CU_LAUNCHED(cu);
    }
};
} // namespace

bool hl_cuda_dequant_f16(hl_cuda *cu, uint32_t type, const void *src, size_t stride, int64_t d, int64_t rows,
                         __half *y) {
    return dispatch_type<launch_dequant_f16>(type, cu, src, stride, d, rows, y);
}

// x {n} F32 to F16 (__half) or BF16 (__nv_bfloat16), round to nearest even.
template <typename H> static __global__ void f32_to(const float *__restrict__ x, H *__restrict__ y, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if constexpr (std::is_same<H, __half>::value) y[i] = __float2half_rn(x[i]);
    else y[i] = __float2bfloat16_rn(x[i]);
}

// y {d_out, n} = W^T x + beta y (beta 0 or 1) for F16 or BF16 weights, read
// where they are. The activations go to x16's bytes in the weights' type.
template <typename H>
static void gemm_in_place(hl_cuda *cu, const hl_tensor *w, const hl_tensor *x, hl_tensor *y, cudaDataType_t type,
                          float beta) {
    const int64_t d_in = w->ne[0], d_out = w->ne[1], n = x->ne[1];
    H *xh = (H *)cu->x16;
    f32_to<H><<<cuda_blocks(d_in * n, DQ_THREADS), DQ_THREADS, 0, cu->stream>>>((const float *)x->data, xh, d_in * n);
    if (!CU_LAUNCHED(cu)) return;
    const float one = 1.0f;
    CUBLAS_OK(cu, cublasGemmEx(cu->cublas, CUBLAS_OP_T, CUBLAS_OP_N, (int)d_out, (int)n, (int)d_in, &one, w->data, type,
                               (int)d_in, xh, type, (int)d_in, &beta, y->data, CUDA_R_32F, (int)d_out,
                               CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// y = W^T x + beta y (beta 0 or 1: matmul_add's residual, which cuBLAS adds
// as it writes y).
static void gemm(hl_cuda *cu, const hl_tensor *w, const hl_tensor *x, hl_tensor *y, float beta) {
    const int64_t d_in = w->ne[0], d_out = w->ne[1], n = x->ne[1];
    if (n > cu->limits.max_tokens || d_in > cu->limits.max_row) {
        hl_cuda_record(cu, HEARTH_ERR_INVALID_ARG,
                       "cuda%d: matmul of %lld x %lld tokens exceeds the scratch planned "
                       "for %lld x %lld",
                       cu->index, (long long)n, (long long)d_in, (long long)cu->limits.max_tokens,
                       (long long)cu->limits.max_row);
        return;
    }
    const float one = 1.0f;
    if (w->type == GGML_TYPE_F32) { // in place and in F32, as the CPU and the matvec (a MoE router's logits)
        CUBLAS_OK(cu, cublasSgemm(cu->cublas, CUBLAS_OP_T, CUBLAS_OP_N, (int)d_out, (int)n, (int)d_in, &one,
                                  (const float *)w->data, (int)d_in, (const float *)x->data, (int)d_in, &beta,
                                  (float *)y->data, (int)d_out));
        return;
    }
    // x16 gets x in F16 or BF16 below: a Q8_1 form there (q8_1.cuh), of x or
    // of what came before, is gone, and a matvec after this op in the same
    // matmul_n, or in the next op, must not take it.
    cu->q8_x = NULL;
    if (w->type == GGML_TYPE_F16) return gemm_in_place<__half>(cu, w, x, y, CUDA_R_16F, beta);
    if (w->type == GGML_TYPE_BF16 && cu->bf16_gemm) return gemm_in_place<__nv_bfloat16>(cu, w, x, y, CUDA_R_16BF, beta);
    f32_to<__half>
        <<<cuda_blocks(d_in * n, DQ_THREADS), DQ_THREADS, 0, cu->stream>>>((const float *)x->data, cu->x16, d_in * n);
    if (!CU_LAUNCHED(cu)) return;
    const size_t stride = hl_row_size(w->type, d_in);
    const int64_t tile_rows = (int64_t)(cu->w16_elems / (size_t)d_in);
    for (int64_t r0 = 0; r0 < d_out; r0 += tile_rows) {
        const int64_t rows = d_out - r0 < tile_rows ? d_out - r0 : tile_rows;
        if (!hl_cuda_dequant_f16(cu, w->type, (const uint8_t *)w->data + r0 * stride, stride, d_in, rows, cu->w16)) {
            hl_cuda_record(cu, HEARTH_ERR_UNSUPPORTED, "cuda%d: no kernels for weight type %u", cu->index, w->type);
            return;
        }
        if (!CUBLAS_OK(cu,
                       cublasGemmEx(cu->cublas, CUBLAS_OP_T, CUBLAS_OP_N, (int)rows, (int)n, (int)d_in, &one, cu->w16,
                                    CUDA_R_16F, (int)d_in, cu->x16, CUDA_R_16F, (int)d_in, &beta, (float *)y->data + r0,
                                    CUDA_R_32F, (int)d_out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)))
            return;
    }
}

// Tokens up to which a matmul of weights of `type` runs the matvec kernels,
// HL_CUDA_MMV_MAX tokens a launch, rather than cuBLAS. A launch reads the
// weights once, b bytes an element; the F16 tiles read them once, write and
// read 2 bytes an element, then multiply at tensor-core speed. So launches
// of matvecs pay while their count times b stays within b + 4: Q4_K 8
// launches (64 tokens), Q8_0 4 (32), Q6_K 5 (40), the server's batches of
// 16 streams in two. Float weights (read in place by cuBLAS), and every
// type on an unfused instance, take cuBLAS from HL_CUDA_MMV_MAX tokens on,
// as before.
static int64_t mv_max_tokens(const hl_cuda *cu, uint32_t type) {
    if (cu->unfused || type == GGML_TYPE_F32 || type == GGML_TYPE_F16 || type == GGML_TYPE_BF16)
        return HL_CUDA_MMV_MAX - 1;
    const ggml_type_info *ti = hl_ggml_type_get(type);
    const double b = (double)ti->type_size / (double)ti->blck_size;
    return (int64_t)((b + 4.0) / b) * HL_CUDA_MMV_MAX;
}

// y[k] = W[k] x for k < n (+ y[k] with add), weights of one type and row
// length (at most HL_CUDA_MV_MATS): matvec launches of up to
// HL_CUDA_MMV_MAX tokens each (one for a decode step), or one GEMM each.
static void matmul_group(hl_cuda *cu, int n, const hl_tensor *const *w, const hl_tensor *x, hl_tensor *const *y,
                         bool add) {
    const int64_t tokens = x->ne[1], chunk = HL_CUDA_MMV_MAX;
    if (cu->cublas && tokens > mv_max_tokens(cu, w[0]->type)) {
        for (int k = 0; k < n; k++) gemm(cu, w[k], x, y[k], add ? 1.0f : 0.0f);
        return;
    }
    for (int64_t t0 = 0; t0 < tokens; t0 += chunk) {
        const int64_t nt = tokens - t0 < chunk ? tokens - t0 : chunk;
        hl_tensor xc = *x, yc[HL_CUDA_MV_MATS];
        hl_tensor *yp[HL_CUDA_MV_MATS];
        xc.data = (float *)x->data + t0 * x->ne[0], xc.ne[1] = nt;
        for (int k = 0; k < n; k++) {
            yc[k] = *y[k], yc[k].data = (float *)y[k]->data + t0 * y[k]->ne[0], yc[k].ne[1] = nt;
            yp[k] = &yc[k];
        }
        if (!hl_cuda_matvec(cu, n, w, &xc, yp, add)) {
            hl_cuda_record(cu, HEARTH_ERR_UNSUPPORTED, "cuda%d: no kernels for weight type %u", cu->index, w[0]->type);
            return;
        }
    }
}

void hl_cuda_matmul(hl_backend *b, const hl_tensor *w, const hl_tensor *x, hl_tensor *y) {
    hl_cuda *cu = cuda_of(b);
    if (hl_cuda_enter(cu)) matmul_group(cu, 1, &w, x, &y, false);
}

void hl_cuda_matmul_add(hl_backend *b, const hl_tensor *w, const hl_tensor *x, hl_tensor *y) {
    hl_cuda *cu = cuda_of(b);
    if (hl_cuda_enter(cu)) matmul_group(cu, 1, &w, x, &y, true);
}

// The weights grouped by type, in order of first appearance (Q4_K_M's Q and
// K in one launch, its Q6_K V in another); the groups after the first
// reuse the activations' Q8_1 form (matvec.cu).
void hl_cuda_matmul_n(hl_backend *b, int n, const hl_tensor *const *w, const hl_tensor *x, hl_tensor *const *y) {
    hl_cuda *cu = cuda_of(b);
    if (!hl_cuda_enter(cu)) return;
    bool done[HL_CUDA_MV_MATS] = {false};
    for (int i = 0; i < n; i++) {
        if (done[i]) continue;
        const hl_tensor *gw[HL_CUDA_MV_MATS];
        hl_tensor *gy[HL_CUDA_MV_MATS];
        int g = 0;
        for (int k = i; k < n; k++)
            if (!done[k] && w[k]->type == w[i]->type) gw[g] = w[k], gy[g++] = y[k], done[k] = true;
        matmul_group(cu, g, gw, x, gy, false);
    }
}
