// Matrix-vector products for decode (and batches of up to HL_CUDA_MMV_MAX
// tokens a launch): y[t][r] = dot(W row r, x[t]), reading the weights in
// their stored type, of up to three matrices of one type in one grid
// (matmul_n). Memory-bound: every weight byte is read once per call, so the
// kernels are built for bandwidth (llama.cpp's mmvq is the model,
// ggml-cuda/mmvq.cu):
// - quantized weights: the activations are quantized once per matmul to Q8_1
//   (q8_1.cuh's layout) by a small kernel into the instance's scratch, or by
//   the norm or GLU that produced them;
//   then a block of MV_THREADS threads computes MV_ROWS(n) rows for up to 8
//   tokens, each thread taking chunks of weight blocks (vecdot.cuh: 16-byte
//   weight loads for Q4_K/Q5_K, 4 or 2 bytes for the others, activations 8
//   or 16 bytes at a time) with integer dp4a dot products; each chunk's
//   activations serve the block's rows and its weights every token.
// - F32/F16/BF16 weights: the same grid, each thread 16 bytes of a row at a
//   time against F32 activations read as float4 (rows whose length or
//   address does not allow 16-byte loads take one element per thread).
// The partial sums of the threads are reduced in F32 (warp shuffles, then
// shared memory across the warps).
#include "backend/cuda/common.cuh"
#include "backend/cuda/q8_1.cuh"
#include "backend/cuda/vecdot.cuh"

#define MV_THREADS 128 // 4 warps
// Rows per block: 2 for 1 or 2 tokens; 1 from 3 tokens on, whose
// activations fill the registers (more rows would spill).
#define MV_ROWS(ncols) ((ncols) <= 2 ? 2 : 1)
#define MV_WARPS (MV_THREADS / 32)

// Adds the threads' acc[j][r] over the block and writes y[j][row0 + r] for
// the rows below d_out and tokens below n; with `add` adds it to y there
// (matmul_add: y + the product, rounded once, as an add op after it would).
template <int NCOLS, int ROWS>
static __device__ __forceinline__ void mv_store(float (&acc)[NCOLS][ROWS], float *__restrict__ y, int64_t row0,
                                                int64_t d_out, int n, bool add) {
    __shared__ float part[MV_WARPS][NCOLS * ROWS];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
    for (int j = 0; j < NCOLS; j++)
#pragma unroll
        for (int r = 0; r < ROWS; r++) {
            const float s = warp_sum(acc[j][r]);
            if (lane == 0) part[warp][j * ROWS + r] = s;
        }
    __syncthreads();
    const int i = threadIdx.x, j = i / ROWS, r = i % ROWS;
    if (i < NCOLS * ROWS && j < n && row0 + r < d_out) {
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < MV_WARPS; k++) s += part[k][i];
        float *out = y + (int64_t)j * d_out + row0 + r;
        *out = add ? *out + s : s;
    }
}

// ---------------------------------------------------------- quantized --

// x F32 {d, n} -> Q8_1 (q8_1.cuh). A thread per 4 elements, 8 threads per
// block of 32 (d a multiple of 32, so the 8 lanes of a block leave together
// at the end of the grid).
static __global__ void quantize_q8_1(const float *__restrict__ x, q8_1_view q, int64_t n_elems) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (4 * i >= n_elems) return;
    const float *xi = x + 4 * i;
    q8_1_put4(xi[0], xi[1], xi[2], xi[3], i, q);
}

// Up to HL_CUDA_MV_MATS weight matrices of one type and row length against
// the same activations in one grid (a block's Q, K and V; gate and up):
// matrix k has d_out[k] rows, written to y[k], and the grid's blocks
// [first[k], first[k + 1]); the entries of unused matrices repeat the
// grid's end, first[HL_CUDA_MV_MATS].
struct mv_mats {
    const uint8_t *w[HL_CUDA_MV_MATS];
    float *y[HL_CUDA_MV_MATS];
    int64_t d_out[HL_CUDA_MV_MATS];
    unsigned first[HL_CUDA_MV_MATS + 1];
};

// This block's matrix and its first row.
struct mv_part {
    const uint8_t *w;
    float *y;
    int64_t d_out, row0;
};

static_assert(HL_CUDA_MV_MATS == 3, "mv_part_of selects among three matrices");

// Selects rather than an indexed parameter array, which would go through
// local memory.
template <int ROWS> static __device__ __forceinline__ mv_part mv_part_of(const mv_mats &m) {
    const unsigned b = blockIdx.x;
    const int k = (b >= m.first[1]) + (b >= m.first[2]);
    const unsigned first = k == 0 ? 0u : k == 1 ? m.first[1] : m.first[2];
    return {k == 0   ? m.w[0]
            : k == 1 ? m.w[1]
                     : m.w[2],
            k == 0   ? m.y[0]
            : k == 1 ? m.y[1]
                     : m.y[2],
            k == 0   ? m.d_out[0]
            : k == 1 ? m.d_out[1]
                     : m.d_out[2],
            (int64_t)(b - first) * ROWS};
}

// grid mats.first[HL_CUDA_MV_MATS], block MV_THREADS. Each matrix: d_out rows
// of w_stride bytes (whole blocks of T); activations of n <= NCOLS tokens in
// Q8_1.
// Blocks per SM the register budget must allow: at most 64 registers for
// one token (>= 32 warps per SM), 128 up to 4 tokens, 168 up to 8 (whose
// activations would spill at 128).
#define MV_MIN_BLOCKS(ncols) ((ncols) == 1 ? 8 : (ncols) <= 4 ? 4 : 3)

template <uint32_t T, int NCOLS>
static __global__ void __launch_bounds__(MV_THREADS, MV_MIN_BLOCKS(NCOLS))
    matvec_q(mv_mats mats, size_t w_stride, const int8_t *__restrict__ aq, const float2 *__restrict__ ads, int d_in,
             int n, bool add) {
    using V = vq<T>;
    constexpr int ROWS = MV_ROWS(NCOLS);
    const mv_part p = mv_part_of<ROWS>(mats);
    const uint8_t *__restrict__ w = p.w;
    const int64_t d_out = p.d_out, row0 = p.row0;
    const int n_chunks = d_in / V::qk * V::nc;
    float acc[NCOLS][ROWS] = {};
    for (int i = threadIdx.x; i < n_chunks; i += MV_THREADS) {
        const int b = i / V::nc, c = i % V::nc;
#pragma unroll
        for (int r = 0; r < ROWS; r++) {
            const int64_t row = row0 + r < d_out ? row0 + r : d_out - 1; // a last odd row repeats, unstored
            const uint8_t *blk = w + row * w_stride + (size_t)b * sizeof(typename V::block);
#pragma unroll
            for (int j = 0; j < NCOLS; j++) {
                const int jt = j < n ? j : n - 1; // unused columns repeat the last token, unstored:
                                                  // no branch, so each weight load serves every column
                acc[j][r] += V::dot(blk, c, aq + (int64_t)jt * d_in + b * V::qk,
                                    ads + (int64_t)jt * (d_in / 32) + b * (V::qk / 32));
            }
        }
    }
    mv_store<NCOLS, ROWS>(acc, p.y, row0, d_out, n, add);
}

// ------------------------------------------------------------- plain --

// grid mats.first[HL_CUDA_MV_MATS], block MV_THREADS; x F32 {d_in, n}. VEC:
// rows, x and d_in allow 16-byte loads of both (checked by the launcher).
template <uint32_t T, int NCOLS, bool VEC>
static __global__ void __launch_bounds__(MV_THREADS, MV_MIN_BLOCKS(NCOLS))
    matvec_plain(mv_mats mats, size_t w_stride, const float *__restrict__ x, int d_in, int n, bool add) {
    using P = plain<T>;
    constexpr int ROWS = MV_ROWS(NCOLS);
    const mv_part p = mv_part_of<ROWS>(mats);
    const uint8_t *__restrict__ w = p.w;
    const int64_t d_out = p.d_out, row0 = p.row0;
    float acc[NCOLS][ROWS] = {};
    if (VEC) {
        for (int i = threadIdx.x; i < d_in / P::per16; i += MV_THREADS) {
            const int e = i * P::per16;
#pragma unroll
            for (int r = 0; r < ROWS; r++) {
                const int64_t row = row0 + r < d_out ? row0 + r : d_out - 1;
                float v[P::per16];
                P::get16(w + row * w_stride + 16 * (size_t)i, v);
#pragma unroll
                for (int j = 0; j < NCOLS; j++) {
                    const int jt = j < n ? j : n - 1; // as in matvec_q
                    const float4 *xj = (const float4 *)(x + (int64_t)jt * d_in + e);
                    float s = acc[j][r];
#pragma unroll
                    for (int k = 0; k < P::per16 / 4; k++) {
                        const float4 a = xj[k];
                        s = fmaf(v[4 * k], a.x, s);
                        s = fmaf(v[4 * k + 1], a.y, s);
                        s = fmaf(v[4 * k + 2], a.z, s);
                        s = fmaf(v[4 * k + 3], a.w, s);
                    }
                    acc[j][r] = s;
                }
            }
        }
    } else {
        for (int e = threadIdx.x; e < d_in; e += MV_THREADS) {
#pragma unroll
            for (int r = 0; r < ROWS; r++) {
                const int64_t row = row0 + r < d_out ? row0 + r : d_out - 1;
                const float v = qtype<T>::get(w + row * w_stride, e);
#pragma unroll
                for (int j = 0; j < NCOLS; j++)
                    acc[j][r] = fmaf(v, x[(int64_t)(j < n ? j : n - 1) * d_in + e], acc[j][r]);
            }
        }
    }
    mv_store<NCOLS, ROWS>(acc, p.y, row0, d_out, n, add);
}

// ------------------------------------------------------------ launch --

// The kernel instance for n tokens: NCOLS = 1, 2, 4 or 8 (n <= HL_CUDA_MMV_MAX).
template <template <int> class K, typename... A> static void by_cols(int n, A &&...args) {
    if (n == 1) K<1>::go(args...);
    else if (n == 2) K<2>::go(args...);
    else if (n <= 4) K<4>::go(args...);
    else K<8>::go(args...);
}

static_assert(HL_CUDA_MMV_MAX == 8, "matvec kernels take at most 8 tokens, gemm.cu sends 8 at a time");

namespace { // file-local: no symbol leaves the object
struct mv_args {
    hl_cuda *cu;
    int n_mats; // 1 .. HL_CUDA_MV_MATS, of one type and row length
    const hl_tensor *const *w, *x;
    hl_tensor *const *y;
    bool add; // y += W x (matmul_add)
};

// The matrices' pointers and each one's share of the grid.
template <int NCOLS> static mv_mats mats_of(const mv_args &a) {
    mv_mats m = {};
    unsigned blocks = 0;
    for (int k = 0; k < HL_CUDA_MV_MATS; k++) {
        m.first[k] = blocks;
        if (k >= a.n_mats) continue;
        m.w[k] = (const uint8_t *)a.w[k]->data;
        m.y[k] = (float *)a.y[k]->data;
        m.d_out[k] = a.w[k]->ne[1];
        blocks += cuda_blocks(a.w[k]->ne[1], MV_ROWS(NCOLS));
    }
    m.first[HL_CUDA_MV_MATS] = blocks;
    return m;
}

template <uint32_t T> struct q_cols {
    template <int NCOLS> struct k {
        static void go(const mv_args &a, const int8_t *aq, const float2 *ads) {
            const int64_t d_in = a.w[0]->ne[0];
            const mv_mats m = mats_of<NCOLS>(a);
            matvec_q<T, NCOLS><<<m.first[HL_CUDA_MV_MATS], MV_THREADS, 0, a.cu->stream>>>(
                m, hl_row_size(T, d_in), aq, ads, (int)d_in, (int)a.x->ne[1], a.add);
        }
    };
};

template <uint32_t T, bool VEC> struct p_cols {
    template <int NCOLS> struct k {
        static void go(const mv_args &a) {
            const int64_t d_in = a.w[0]->ne[0];
            const mv_mats m = mats_of<NCOLS>(a);
            matvec_plain<T, NCOLS, VEC><<<m.first[HL_CUDA_MV_MATS], MV_THREADS, 0, a.cu->stream>>>(
                m, hl_row_size(T, d_in), (const float *)a.x->data, (int)d_in, (int)a.x->ne[1], a.add);
        }
    };
};

struct launch_q {
    template <uint32_t T> static void run(const mv_args &a, const int8_t *aq, const float2 *ads) {
        by_cols<q_cols<T>::template k>((int)a.x->ne[1], a, aq, ads);
    }
};

struct vq_known {
    template <uint32_t T> static void run() {}
};

// Whether every weight matrix starts on a 16-byte boundary.
static bool weights_aligned(const mv_args &a) {
    for (int k = 0; k < a.n_mats; k++)
        if ((uintptr_t)a.w[k]->data % 16 != 0) return false;
    return true;
}

template <uint32_t T> static void launch_plain(const mv_args &a) {
    const int64_t d_in = a.w[0]->ne[0];
    const bool vec = d_in % 8 == 0 && weights_aligned(a) && hl_row_size(T, d_in) % 16 == 0 &&
                     (uintptr_t)a.x->data % 16 == 0;
    if (vec) by_cols<p_cols<T, true>::template k>((int)a.x->ne[1], a);
    else by_cols<p_cols<T, false>::template k>((int)a.x->ne[1], a);
}

// Quantizes the activations to Q8_1 (q8_1.cuh), then the product. When this
// op or the one before wrote their Q8_1 form already (a matvec of the same
// activations: Q, K and V of one input, gate and up, also a group of
// another weight type in one matmul_n; or the norm or GLU that produced
// them), x16 holds it (hl_cuda.q8_op) and the product takes it as it is.
static void launch_quantized(const mv_args &a) {
    hl_cuda *cu = a.cu;
    const int64_t d_in = a.w[0]->ne[0], n = a.x->ne[1];
    if (!cuda_q8_1_fits(cu, d_in, n) || !weights_aligned(a)) {
        hl_cuda_record(cu, HEARTH_ERR_INVALID_ARG,
                       "cuda%d: matvec of %lld x %lld tokens needs the scratch planned "
                       "for %lld x %lld, rows of whole 32-element blocks and 16-byte aligned weights",
                       cu->index, (long long)n, (long long)d_in, (long long)cu->limits.max_tokens,
                       (long long)cu->limits.max_row);
        return;
    }
    const q8_1_view q = cuda_q8_1_view(cu, d_in, n);
    if (cu->op_count - cu->q8_op > 1 || cu->q8_x != a.x->data || cu->q8_d != d_in || cu->q8_n != n) {
        quantize_q8_1<<<cuda_blocks(n * d_in / 4, 256), 256, 0, cu->stream>>>((const float *)a.x->data, q, n * d_in);
        if (!CU_LAUNCHED(cu)) return;
    }
    cuda_q8_1_mark(cu, a.x->data, d_in, n);
    dispatch_vq<launch_q>(a.w[0]->type, a, (const int8_t *)q.qs, (const float2 *)q.ds);
}
} // namespace

bool hl_cuda_matvec(hl_cuda *cu, int n_mats, const hl_tensor *const *w, const hl_tensor *x, hl_tensor *const *y,
                    bool add) {
    const mv_args a = {cu, n_mats, w, x, y, add};
    if (x->ne[1] < 1 || x->ne[1] > HL_CUDA_MMV_MAX) { // gemm.cu sends at most HL_CUDA_MMV_MAX at a time
        if (x->ne[1] > HL_CUDA_MMV_MAX)
            hl_cuda_record(cu, HEARTH_ERR_INVALID_ARG, "cuda%d: matvec takes at most %d tokens, not %lld", cu->index,
                           HL_CUDA_MMV_MAX, (long long)x->ne[1]);
        return true;
    }
    switch (w[0]->type) {
    case GGML_TYPE_F32: launch_plain<GGML_TYPE_F32>(a); break;
    case GGML_TYPE_F16: launch_plain<GGML_TYPE_F16>(a); break;
    case GGML_TYPE_BF16: launch_plain<GGML_TYPE_BF16>(a); break;
    default:
        if (!dispatch_vq<vq_known>(w[0]->type)) return false;
        launch_quantized(a);
    }
    CU_LAUNCHED(cu);
    return true;
}
