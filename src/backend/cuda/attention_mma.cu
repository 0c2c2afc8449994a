// Prompt attention on tensor cores, after FlashAttention-2 (Dao 2023,
// arXiv:2307.08691, Algorithm 1): a block per (query head, tile of
// MMA_ROWS tokens) walks the cache rows its tokens see in tiles of MMA_KEYS,
// S = Q K^T on tensor cores (WMMA 16x16x16: F16 in, F32 sums), then in F32
// the scale, the mask and ALiBi's bias, the online softmax (Milakov &
// Gimelshein 2018, arXiv:1805.02867: a running maximum m and sum l per
// token, the output rescaled by exp(m_old - m_new) when m grows), and O = O
// + P V on tensor cores with P rounded to F16 (as llama.cpp's exact path
// rounds the probabilities) and O in F32 in shared memory. The query is
// rounded to F16 as the CPU rounds a query for an F16 cache (ggml's
// vec_dot_f16); the scale multiplies the F32 score.
//
// It takes what attention.cu's flash-decoding kernel does for a prompt, a
// block per (KV head, token), on CUDA cores, which took many times
// llama.cpp's time a layer (bench/results/2026-11-27-gpu-h100.md): passes
// of at least MMA_MIN_TOKENS tokens of one sequence at consecutive
// positions, an F16 K and V cache, head_dim a multiple of 16 up to 256. A
// pass of several sequences (the server's batches) stays with
// flash-decoding, whose blocks read only the rows each token sees. Masks
// as attention.cu: token t at position p of the sequence whose cells start
// at row0 sees rows [row0 + lo, row0 + p], lo = 0 or p - n_swa + 1, and
// ALiBi adds slope(h) * -(p - j) for position j.
#include <limits.h>
#include <math.h>
#include <mma.h>

#include "backend/cuda/common.cuh"

#define MMA_ROWS 64 // query tokens per block: a warp per 16
#define MMA_KEYS 32 // cache rows per tile: a lane per row in the softmax
#define MMA_THREADS (MMA_ROWS / 16 * 32)
#define MMA_MAX_HEAD_DIM 256
#define MMA_MIN_TOKENS 16 // fewer: flash-decoding (attention.cu)

using namespace nvcuda;

// Row strides in shared memory: a row of Q, K or V holds hd + 8 halves and
// a row of O hd + 4 floats, so that the 16 rows a WMMA load or store touches
// start 16 bytes apart in the banks instead of all in the same ones (an
// unpadded row of 128..512 bytes put 8 rows on each bank). Both stay
// multiples of 16 bytes, as WMMA's ldm wants.
static __host__ __device__ __forceinline__ int mma_qkv_stride(int hd) { return hd + 8; }
static __host__ __device__ __forceinline__ int mma_o_stride(int hd) { return hd + 4; }

// Shared memory of a block (bytes; each part a multiple of 32 bytes, as
// WMMA's pointers want): Q [ROWS] rows, K and V [KEYS] rows of F16, O [ROWS]
// rows of F32, S [ROWS][KEYS] F32, P [ROWS][KEYS] F16, then m, l [ROWS] F32
// and the visible rows lo, hi [ROWS] int: 512 hd + 16384 bytes.
static __host__ __device__ __forceinline__ size_t mma_shared_bytes(int hd) {
    return (size_t)mma_qkv_stride(hd) * 2 * (MMA_ROWS + 2 * MMA_KEYS) + (size_t)mma_o_stride(hd) * 4 * MMA_ROWS +
           MMA_ROWS * MMA_KEYS * 6 + MMA_ROWS * 16;
}

// grid (n_head, tiles of MMA_ROWS tokens), block MMA_THREADS, shared
// mma_shared_bytes(hd). q, out F32 {n_head * hd, n}; k, v F16 {n_head_kv * hd,
// cache rows}.
static __global__ void __launch_bounds__(MMA_THREADS)
    attention_mma(const float *__restrict__ q, const __half *__restrict__ k, const __half *__restrict__ v,
                  float *__restrict__ out, int n, int n_head, int n_head_kv, int hd, const int32_t *pos_of,
                  const int32_t *row0_of, int n_swa, float scale, float max_bias) {
    extern __shared__ __align__(128) float4 smem4[]; // WMMA's pointers: 32-byte aligned
    const int qs = mma_qkv_stride(hd), os = mma_o_stride(hd);
    __half *q_s = (__half *)smem4;
    __half *k_s = q_s + MMA_ROWS * qs;
    __half *v_s = k_s + MMA_KEYS * qs;
    float *o_s = (float *)(v_s + MMA_KEYS * qs);
    float *s_s = o_s + MMA_ROWS * os;
    __half *p_s = (__half *)(s_s + MMA_ROWS * MMA_KEYS);
    float *m_s = (float *)(p_s + MMA_ROWS * MMA_KEYS);
    float *l_s = m_s + MMA_ROWS;
    int *lo_s = (int *)(l_s + MMA_ROWS), *hi_s = lo_s + MMA_ROWS;
    const int h = blockIdx.x, kh = h / (n_head / n_head_kv), t0 = blockIdx.y * MMA_ROWS;
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, rows = min(MMA_ROWS, n - t0);
    const int64_t q_dim = (int64_t)n_head * hd, kv_dim = (int64_t)n_head_kv * hd;

    // each token's visible rows (none past the pass's tokens), the query tile in F16, O = 0
    for (int r = tid; r < MMA_ROWS; r += MMA_THREADS) {
        int lo = INT_MAX, hi = -1;
        if (r < rows) {
            const int p = pos_of[t0 + r], row0 = row0_of[t0 + r];
            lo = row0 + (n_swa > 0 && p - n_swa + 1 > 0 ? p - n_swa + 1 : 0);
            hi = row0 + p;
        }
        lo_s[r] = lo, hi_s[r] = hi, m_s[r] = -INFINITY, l_s[r] = 0.0f;
    }
    for (int i = tid; i < MMA_ROWS * hd; i += MMA_THREADS) {
        const int r = i / hd, d = i % hd;
        q_s[r * qs + d] = __float2half_rn(r < rows ? q[(t0 + r) * q_dim + (int64_t)h * hd + d] : 0.0f);
        o_s[r * os + d] = 0.0f;
    }
    const float slope = max_bias > 0.0f ? att_alibi_slope(n_head, max_bias, h) : 0.0f;
    __syncthreads();
    // one sequence at consecutive positions: the first token sees the lowest row, the last the highest
    const int j_lo = lo_s[0], j_hi = hi_s[rows - 1];

    const int chunks = hd / 8; // 16 bytes of a row
    const __half *kh0 = k + (int64_t)kh * hd, *vh0 = v + (int64_t)kh * hd;
    __half *qw = q_s + warp * 16 * qs, *pw = p_s + warp * 16 * MMA_KEYS;
    float *ow = o_s + warp * 16 * os, *sw = s_s + warp * 16 * MMA_KEYS;
    for (int j0 = j_lo; j0 <= j_hi; j0 += MMA_KEYS) {
        // the K and V tile, zeros past the last row seen (the rows beyond may be unwritten)
        for (int i = tid; i < MMA_KEYS * chunks; i += MMA_THREADS) {
            const int jj = i / chunks, c = i % chunks;
            const int64_t off = (int64_t)(j0 + jj) * kv_dim + 8 * c;
            const bool in = j0 + jj <= j_hi;
            const int at = jj * (qs / 8) + c; // 16-byte units
            ((uint4 *)k_s)[at] = in ? *(const uint4 *)(kh0 + off) : make_uint4(0, 0, 0, 0);
            ((uint4 *)v_s)[at] = in ? *(const uint4 *)(vh0 + off) : make_uint4(0, 0, 0, 0);
        }
        __syncthreads();

        // S = Q K^T for the warp's 16 tokens: K^T is K read column-major
        for (int nb = 0; nb < MMA_KEYS / 16; nb++) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
            wmma::fill_fragment(acc, 0.0f);
            for (int kk = 0; kk < hd; kk += 16) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b;
                wmma::load_matrix_sync(a, qw + kk, qs);
                wmma::load_matrix_sync(b, k_s + nb * 16 * qs + kk, qs);
                wmma::mma_sync(acc, a, b, acc);
            }
            wmma::store_matrix_sync(sw + nb * 16, acc, MMA_KEYS, wmma::mem_row_major);
        }
        __syncwarp();

        // the online softmax: lane l takes row rr = l % 16 of the warp's 16 tokens and half e = l / 16 of the
        // tile's keys, visited from key rr on (rotated), so that at each step the lanes read S and write P in
        // 32 different banks; the two lanes of a row meet by one shuffle for the maximum and one for the sum
        // (a lane per key and the rows one after another cost two 5-step reductions per row: 160 dependent
        // shuffles a tile). O's row rescaled, half by each of its lanes.
        {
            const int rr = lane & 15, e = lane >> 4, r = warp * 16 + rr;
            const int lo = lo_s[r], hi = hi_s[r];
            float s[16], mx = -INFINITY;
#pragma unroll
            for (int k = 0; k < 16; k++) {
                const int kk = e * 16 + ((k + rr) & 15), j = j0 + kk;
                s[k] = j >= lo && j <= hi ? sw[rr * MMA_KEYS + kk] * scale + slope * (float)(j - hi) : -INFINITY;
                mx = fmaxf(mx, s[k]);
            }
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16));
            const float m_old = m_s[r], m_new = fmaxf(m_old, mx);
            float sum = 0.0f;
#pragma unroll
            for (int k = 0; k < 16; k++) {
                const float p = s[k] == -INFINITY ? 0.0f : expf(s[k] - m_new); // unseen keys: 0
                sum += p;
                pw[rr * MMA_KEYS + e * 16 + ((k + rr) & 15)] = __float2half_rn(p);
            }
            sum += __shfl_xor_sync(0xffffffffu, sum, 16);
            const float c = m_new == -INFINITY ? 1.0f : expf(m_old - m_new); // 0 on the first rows seen
            if (c != 1.0f)
                for (int d = e; d < hd; d += 2) ow[rr * os + d] *= c;
            __syncwarp(); // both lanes of the row have read m_s[r] and l_s[r] before one writes them
            if (e == 0) l_s[r] = l_s[r] * c + sum, m_s[r] = m_new;
        }
        __syncwarp();

        // O += P V, a 16-column block of the warp's rows at a time
        for (int nb = 0; nb < hd; nb += 16) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
            wmma::load_matrix_sync(acc, ow + nb, os, wmma::mem_row_major);
            for (int kk = 0; kk < MMA_KEYS; kk += 16) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;
                wmma::load_matrix_sync(a, pw + kk, MMA_KEYS);
                wmma::load_matrix_sync(b, v_s + kk * qs + nb, qs);
                wmma::mma_sync(acc, a, b, acc);
            }
            wmma::store_matrix_sync(ow + nb, acc, os, wmma::mem_row_major);
        }
        __syncthreads(); // K and V are used up
    }

    // out = O / l (l > 0: a token sees at least its own row)
    for (int i = tid; i < rows * hd; i += MMA_THREADS) {
        const int r = i / hd, d = i % hd;
        out[(t0 + r) * q_dim + (int64_t)h * hd + d] = o_s[r * os + d] / l_s[r];
    }
}

hearth_status hl_cuda_attention_mma_init(hl_cuda *cu) {
    CUDA_TRY(cudaDeviceGetAttribute(&cu->smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, cu->device));
    const size_t most = mma_shared_bytes(MMA_MAX_HEAD_DIM);
    CUDA_TRY(cudaFuncSetAttribute(attention_mma, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  (int)(most < (size_t)cu->smem_optin ? most : (size_t)cu->smem_optin)));
    return HEARTH_OK;
}

// (A pass of several tokens is never a recorded graph: set_positions ran for this one.)
bool hl_cuda_attention_mma_runs(const hl_cuda *cu, const hl_attn_args *a) {
    const int64_t n = a->q->ne[1];
    return n >= MMA_MIN_TOKENS && n == cu->one_seq_tokens && a->k_cache->type == GGML_TYPE_F16 &&
           a->v_cache->type == GGML_TYPE_F16 && a->head_dim % 16 == 0 && a->head_dim <= MMA_MAX_HEAD_DIM &&
           mma_shared_bytes(a->head_dim) <= (size_t)cu->smem_optin;
}

void hl_cuda_attention_mma(hl_cuda *cu, const hl_attn_args *a) {
    const int n = (int)a->q->ne[1];
    const dim3 grid((unsigned)a->n_head, (unsigned)((n + MMA_ROWS - 1) / MMA_ROWS));
    attention_mma<<<grid, MMA_THREADS, mma_shared_bytes(a->head_dim), cu->stream>>>(
        (const float *)a->q->data, (const __half *)a->k_cache->data, (const __half *)a->v_cache->data,
        (float *)a->out->data, n, a->n_head, a->n_head_kv, a->head_dim, cuda_pos(cu), cuda_row0(cu), a->n_swa, a->scale,
        a->max_bias);
    CU_LAUNCHED(cu);
}
