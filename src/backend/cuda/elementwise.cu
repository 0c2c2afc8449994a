// Element-wise ops on F32 tensors, one thread per element: SwiGLU and GeGLU
// gates, GELU, the residual add (with a broadcast bias), scaling and
// clamping. A decode step's gates also write their result's Q8_1 form for
// the down matvec after them (q8_1.cuh), saving its quantize launch.
#include <math.h>

#include "backend/cuda/common.cuh"
#include "backend/cuda/q8_1.cuh"

#define EW_THREADS 256

// silu(g) (SwiGLU's gate, Shazeer 2020, arXiv:2002.05202)
static __device__ __forceinline__ float silu(float x) { return x / (1.0f + expf(-x)); }

// GELU's tanh approximation (Hendrycks & Gimpel 2016, arXiv:1606.08415):
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
static __device__ __forceinline__ float gelu_tanh(float x) {
    return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * x * (1.0f + 0.044715f * x * x)));
}

enum glu_kind { GLU_SILU, GLU_GELU };

template <glu_kind K> static __device__ __forceinline__ float glu(float g, float u) {
    return (K == GLU_SILU ? silu(g) : gelu_tanh(g)) * u;
}

// gate = act(gate) * up, a thread per element
template <glu_kind K> static __global__ void glu_kernel(float *g, const float *__restrict__ u, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) g[i] = glu<K>(g[i], u[i]);
}

// The same for rows of whole 32-element blocks, a thread per 4 elements,
// also writing the result's Q8_1 form to q (q8_1.cuh) for the down matvec.
template <glu_kind K>
static __global__ void glu_q8_kernel(float *g, const float *__restrict__ u, int64_t n, q8_1_view q) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (4 * i >= n) return;
    float v[4];
#pragma unroll
    for (int k = 0; k < 4; k++) v[k] = g[4 * i + k] = glu<K>(g[4 * i + k], u[4 * i + k]);
    q8_1_put4(v[0], v[1], v[2], v[3], i, q);
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

// gate {d, n} = act(gate) * up; for a decode step also gate's Q8_1 form.
template <glu_kind K> static void launch_glu(hl_backend *b, hl_tensor *gate, const hl_tensor *up) {
    hl_cuda *cu = cuda_of(b);
    if (!hl_cuda_enter(cu)) return;
    const int64_t n = hl_tensor_nelements(gate), d = gate->ne[0], rows = n / d;
    if (cuda_q8_1_wanted(cu, d, rows)) {
        glu_q8_kernel<K><<<cuda_blocks(n / 4, EW_THREADS), EW_THREADS, 0, cu->stream>>>(
            (float *)gate->data, (const float *)up->data, n, cuda_q8_1_view(cu, d, rows));
        if (CU_LAUNCHED(cu)) cuda_q8_1_mark(cu, gate->data, d, rows);
        return;
    }
    glu_kernel<K>
        <<<cuda_blocks(n, EW_THREADS), EW_THREADS, 0, cu->stream>>>((float *)gate->data, (const float *)up->data, n);
    CU_LAUNCHED(cu);
}

void hl_cuda_swiglu(hl_backend *b, hl_tensor *gate, const hl_tensor *up) { launch_glu<GLU_SILU>(b, gate, up); }

void hl_cuda_geglu(hl_backend *b, hl_tensor *gate, const hl_tensor *up) { launch_glu<GLU_GELU>(b, gate, up); }

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
