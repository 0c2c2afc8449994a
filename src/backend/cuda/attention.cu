// Causal attention over the F16 KV cache, flash-attention style (Dao et al.
// 2022, arXiv:2205.14135): one block per (query head, token) walks the
// visible cache positions in tiles of ATT_TILE, keeping a running maximum m,
// a running sum l of exp(s - m) and the output accumulator, rescaled by
// exp(m_old - m_new) whenever the maximum grows (the online softmax of
// Milakov & Gimelshein 2018, arXiv:1805.02867). Only a tile of scores lives
// in shared memory: nothing of size n_ctx x n_ctx exists.
//
// Query token t sits at position p = pos[t] of the sequence whose cells start
// at row row0[t], and sees that sequence's positions [lo, p]: lo = 0, or
// p - n_swa + 1 with a sliding window. Query head h reads KV head
// h / (n_head / n_head_kv) (grouped-query attention). Positions come from
// device memory (cuda_pos, cuda_row0) and the grid does not depend on them,
// so a recorded decode step replays for any position and sequence.
#include <math.h>

#include "backend/cuda/common.cuh"
#include "backend/cuda/dequant.cuh"

#define ATT_TILE 64
#define ATT_THREADS 128
#define ATT_MAX_HEAD_DIM 512
#define ATT_DIMS_PER_THREAD (ATT_MAX_HEAD_DIM / ATT_THREADS)

// grid (n_head, n_tokens), block ATT_THREADS, shared (head_dim + ATT_TILE) floats.
// q, out F32 {n_head * hd, n}; k, v F16 {n_head_kv * hd, n_ctx}.
static __global__ void __launch_bounds__(ATT_THREADS)
attention_kernel(const float *__restrict__ q, const hl_half *__restrict__ k, const hl_half *__restrict__ v,
                 float *__restrict__ out, int n_head, int n_head_kv, int hd, const int32_t *pos_of,
                 const int32_t *row0_of, int n_swa, float scale) {
    extern __shared__ float smem[];
    float *q_s = smem;       // [hd] the query
    float *p_s = smem + hd;  // [ATT_TILE] scores, then probabilities, of a tile
    const int h = blockIdx.x, t = blockIdx.y, tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int64_t q_dim = (int64_t)n_head * hd, kv_dim = (int64_t)n_head_kv * hd;
    const int pos = pos_of[t];
    // the sequence's cells: k and v from its first row on
    const int64_t kv_off = (int64_t)row0_of[t] * kv_dim + (int64_t)(h / (n_head / n_head_kv)) * hd;
    const int lo = n_swa > 0 && pos - n_swa + 1 > 0 ? pos - n_swa + 1 : 0;

    for (int d = tid; d < hd; d += ATT_THREADS) q_s[d] = q[t * q_dim + (int64_t)h * hd + d];
    float acc[ATT_DIMS_PER_THREAD] = {0.0f}; // output dims tid, tid + ATT_THREADS, ...
    float m = -INFINITY, l = 0.0f;           // the same in every thread
    __syncthreads();

    for (int j0 = lo; j0 <= pos; j0 += ATT_TILE) {
        const int n = pos + 1 - j0 < ATT_TILE ? pos + 1 - j0 : ATT_TILE;
        // scores: a warp per position, lanes over the head's dimensions
        for (int j = warp; j < ATT_TILE; j += ATT_THREADS / 32) {
            float s = -INFINITY;
            if (j < n) {
                const hl_half *kr = k + (int64_t)(j0 + j) * kv_dim + kv_off;
                float dot = 0.0f;
                for (int d = lane; d < hd; d += 32) dot = fmaf(q_s[d], dq_half(kr[d]), dot);
                s = warp_sum(dot) * scale;
            }
            if (lane == 0) p_s[j] = s;
        }
        __syncthreads();
        float tile_max = -INFINITY;
        for (int j = 0; j < n; j++) tile_max = fmaxf(tile_max, p_s[j]);
        const float m_new = fmaxf(m, tile_max); // finite: the tile has a visible position
        const float corr = expf(m - m_new);      // 0 on the first tile (m = -inf)
        __syncthreads();                         // every thread has read the scores
        for (int j = tid; j < ATT_TILE; j += ATT_THREADS) p_s[j] = j < n ? expf(p_s[j] - m_new) : 0.0f;
        __syncthreads();
        float tile_sum = 0.0f;
        for (int j = 0; j < n; j++) tile_sum += p_s[j];
        l = l * corr + tile_sum;
        m = m_new;
        for (int i = 0; i < ATT_DIMS_PER_THREAD; i++) {
            const int d = tid + i * ATT_THREADS;
            if (d >= hd) break;
            const hl_half *vc = v + (int64_t)j0 * kv_dim + kv_off + d;
            float a = acc[i] * corr;
            for (int j = 0; j < n; j++) a = fmaf(p_s[j], dq_half(vc[(int64_t)j * kv_dim]), a);
            acc[i] = a;
        }
        __syncthreads(); // the tile's probabilities are used up
    }
    for (int i = 0; i < ATT_DIMS_PER_THREAD; i++) {
        const int d = tid + i * ATT_THREADS;
        if (d < hd) out[t * q_dim + (int64_t)h * hd + d] = acc[i] / l;
    }
}

// An F16 cache, a head within the per-thread accumulators, and a grid of
// (n_head, tokens) within CUDA's 65535 blocks in y.
bool hl_cuda_attention_runs(const hl_attn_args *a) {
    return a->k_cache->type == GGML_TYPE_F16 && a->v_cache->type == GGML_TYPE_F16 && a->head_dim <= ATT_MAX_HEAD_DIM &&
           a->n_head_kv > 0 && a->n_head % a->n_head_kv == 0 && a->q->ne[1] <= 65535;
}

void hl_cuda_attention(hl_backend *b, const hl_attn_args *a) {
    hl_cuda *cu = cuda_of(b);
    if (!hl_cuda_enter(cu)) return;
    if (!hl_cuda_attention_runs(a)) {
        hl_cuda_record(cu, HEARTH_ERR_UNSUPPORTED, "cuda%d: attention needs an F16 KV cache, head_dim <= %d, n_head a "
                    "multiple of n_head_kv and at most 65535 tokens", cu->index, ATT_MAX_HEAD_DIM);
        return;
    }
    const dim3 grid((unsigned)a->n_head, (unsigned)a->q->ne[1]);
    const size_t shared = ((size_t)a->head_dim + ATT_TILE) * sizeof(float);
    attention_kernel<<<grid, ATT_THREADS, shared, cu->stream>>>(
        (const float *)a->q->data, (const hl_half *)a->k_cache->data, (const hl_half *)a->v_cache->data,
        (float *)a->out->data, a->n_head, a->n_head_kv, a->head_dim, cuda_pos(cu), cuda_row0(cu),
        a->n_swa, a->scale);
    CU_LAUNCHED(cu);
}
