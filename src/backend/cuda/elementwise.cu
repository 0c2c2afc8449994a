// Element-wise ops on F32 tensors, one thread per element: SwiGLU and GeGLU
// gates, GELU, the residual add (with a broadcast bias), scaling and
// clamping.
#include <math.h>

#include "backend/cuda/common.cuh"

#define EW_THREADS 256

// gate = silu(gate) * up (Shazeer 2020, arXiv:2002.05202)
static __global__ void swiglu_kernel(float *g, const float *__restrict__ u, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

// GELU's tanh approximation (Hendrycks & Gimpel 2016, arXiv:1606.08415):
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
static __device__ __forceinline__ float gelu_tanh(float x) {
    return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * x * (1.0f + 0.044715f * x * x)));
}

// gate = gelu(gate) * up
static __global__ void geglu_kernel(float *g, const float *__restrict__ u, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) g[i] = gelu_tanh(g[i]) * u[i];
}

static __global__ void gelu_kernel(float *x, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = gelu_tanh(x[i]);
}

// x[i] += y[i % y_n]: y the same size as x, or a {d} bias repeated per column
static __global__ void add_kernel(float *x, const float *__restrict__ y, int64_t n, int64_t y_n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += y[i % y_n];
}

static __global__ void scale_kernel(float *x, float s, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}

// x = max(min(x, hi), lo), as ggml_clamp
static __global__ void clamp_kernel(float *x, float lo, float hi, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = fmaxf(fminf(x[i], hi), lo);
}

void hl_cuda_swiglu(hl_backend *b, hl_tensor *gate, const hl_tensor *up) {
    hl_cuda *cu = cuda_of(b);
    if (!hl_cuda_enter(cu)) return;
    const int64_t n = hl_tensor_nelements(gate);
    swiglu_kernel<<<cuda_blocks(n, EW_THREADS), EW_THREADS, 0, cu->stream>>>((float *)gate->data,
                                                                             (const float *)up->data, n);
    CU_LAUNCHED(cu);
}

void hl_cuda_geglu(hl_backend *b, hl_tensor *gate, const hl_tensor *up) {
    hl_cuda *cu = cuda_of(b);
    if (!hl_cuda_enter(cu)) return;
    const int64_t n = hl_tensor_nelements(gate);
    geglu_kernel<<<cuda_blocks(n, EW_THREADS), EW_THREADS, 0, cu->stream>>>((float *)gate->data,
                                                                            (const float *)up->data, n);
    CU_LAUNCHED(cu);
}

void hl_cuda_gelu(hl_backend *b, hl_tensor *x) {
    hl_cuda *cu = cuda_of(b);
    if (!hl_cuda_enter(cu)) return;
    const int64_t n = hl_tensor_nelements(x);
    gelu_kernel<<<cuda_blocks(n, EW_THREADS), EW_THREADS, 0, cu->stream>>>((float *)x->data, n);
    CU_LAUNCHED(cu);
}

void hl_cuda_add(hl_backend *b, hl_tensor *x, const hl_tensor *y) {
    hl_cuda *cu = cuda_of(b);
    if (!hl_cuda_enter(cu)) return;
    const int64_t n = hl_tensor_nelements(x);
    add_kernel<<<cuda_blocks(n, EW_THREADS), EW_THREADS, 0, cu->stream>>>((float *)x->data, (const float *)y->data, n,
                                                                          hl_tensor_nelements(y));
    CU_LAUNCHED(cu);
}

void hl_cuda_scale(hl_backend *b, hl_tensor *x, float s) {
    hl_cuda *cu = cuda_of(b);
    if (!hl_cuda_enter(cu)) return;
    const int64_t n = hl_tensor_nelements(x);
    scale_kernel<<<cuda_blocks(n, EW_THREADS), EW_THREADS, 0, cu->stream>>>((float *)x->data, s, n);
    CU_LAUNCHED(cu);
}

void hl_cuda_clamp(hl_backend *b, hl_tensor *x, float lo, float hi) {
    hl_cuda *cu = cuda_of(b);
    if (!hl_cuda_enter(cu)) return;
    const int64_t n = hl_tensor_nelements(x);
    clamp_kernel<<<cuda_blocks(n, EW_THREADS), EW_THREADS, 0, cu->stream>>>((float *)x->data, lo, hi, n);
    CU_LAUNCHED(cu);
}
