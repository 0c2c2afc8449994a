// Causal attention over the KV cache by flash-decoding (Dao, Haziza, Massa,
// Sizov, "Flash-Decoding for long-context inference", 2023, on
// FlashAttention-2, arXiv:2307.08691): for a token, one block per (KV head,
// split of the visible keys) in which all query heads of the grouped-query
// group share each K and V row read (kv.cuh's loads: 16 bytes of an F16 or
// BF16 cache, a Q8_0 or Q4_0 block's bytes; an instance per K type and V
// type). A block walks its split in tiles of ATT_TILE keys with the online softmax
// (Milakov & Gimelshein 2018, arXiv:1805.02867): a running maximum m and sum
// l of exp(s - m) per head, the output accumulator rescaled by exp(m_old -
// m_new) whenever m grows. With one split the block writes the output; with
// several it writes its unnormalized output and (m, l) per head, and a small
// kernel combines the splits: out = sum_s exp(m_s - M) o_s / sum_s exp(m_s -
// M) l_s with M the largest m_s, splits that saw no key (l = 0) left out;
// in a decode step it also writes the output's Q8_1 form for the matvec of
// the output projection (q8_1.cuh).
// Prompts of one sequence take the tensor cores (attention_mma.cu); other
// passes of several tokens (a server's batch of sequences) run this kernel,
// a block per (KV head, split, token), no query tile.
//
// Query token t sits at position p = pos[t] of the sequence whose cells start
// at row row0[t], and sees that sequence's positions [lo, p]: lo = 0, or
// p - n_swa + 1 with a sliding window; with max_bias > 0, ALiBi adds
// slope(h) * -(p - j) to the score of position j (backend.h hl_alibi_slope:
// ggml's m0/m1 rule); split s of S takes the s-th of S
// equal parts of [lo, p]. Positions come from device memory (cuda_pos,
// cuda_row0), and the grid (the number of splits) depends only on the
// cache's size, the token count and the instance's scratch, so a recorded
// decode step replays for any position and sequence.
//
// Quantized and BF16 keys meet the query rounded as the CPU rounds it
// (kv_query: Q8_0 blocks for Q8_0 and Q4_0 keys, BF16 for BF16), so each
// score sums the CPU's products, in F32 and in another order: the
// dequantized Q8_0 query (an F16 scale times an integer up to 127) and key
// are exact in F32, so only the sums' rounding (~1e-7 of a score) differs.
// An F32 query would be up to half a Q8_0 step (amax / 254) off the CPU's
// per element: for the op tests' random 64-dimension heads about 1e-3 of a
// scaled score, which moves outputs by up to the test's 1e-3 bound. Values
// are dequantized to F32, as the CPU's tiled path does (v_to_float), and the
// probabilities stay in F32 as there.
#include <math.h>

#include "backend/cuda/common.cuh"
#include "backend/cuda/kv.cuh"
#include "backend/cuda/q8_1.cuh"

#define ATT_THREADS 256
#define ATT_WARPS (ATT_THREADS / 32)
#define ATT_TILE 64             // keys per tile
#define ATT_MAX_HEAD_DIM 512    // a lane holds at most 2 chunks of 8 dimensions of a key
#define ATT_MAX_GROUP_DIMS 4096 // group * head_dim: at most 2 (head, 8 dimensions) outputs per thread
#define ATT_MAX_SHARED 49152    // bytes of shared memory a block may take without opting in
#define ATT_MAX_SPLITS 64       // attention_reduce's warp 0 weighs two splits per lane
#define ATT_SPLIT_KEYS 64       // a split per this many cache rows, up to ATT_MAX_SPLITS
#define ATT_MAX_BLOCKS 1024     // fewer splits when KV heads x splits x tokens would exceed this

// P V: the G * head_dim / 8 outputs (head, chunk of 8 dimensions) of a block,
// each summed over the tile's keys by this many groups of threads (key j to
// group j % groups), so that a small group does not leave most of the block
// idle: ATT_THREADS / outputs groups when the outputs are fewer than the
// threads, else one (a thread then holds up to 2 outputs).
static __host__ __device__ __forceinline__ int att_key_groups(int outputs) {
    return outputs >= ATT_THREADS ? 1 : ATT_THREADS / outputs;
}

// Shared memory of a block, in floats: the queries [G][hd], a tile's scores
// [G][ATT_TILE], m, l and the rescaling [3][G], then (with several key
// groups) the partial outputs [groups][outputs][8], 16-byte aligned.
static __host__ __device__ __forceinline__ int att_shared_floats(int G, int hd) {
    const int outputs = G * hd / 8, groups = att_key_groups(outputs);
    const int head = (G * hd + G * ATT_TILE + 3 * G + 3) / 4 * 4;
    return head + (groups > 1 ? groups * outputs * 8 : 0);
}

// dot of 8 floats at q (shared, 16-byte aligned) with f
static __device__ __forceinline__ float dot8(const float *q, const float *f) {
    const float4 a = *(const float4 *)q, b = *(const float4 *)(q + 4);
    return a.x * f[0] + a.y * f[1] + a.z * f[2] + a.w * f[3] + b.x * f[4] + b.y * f[5] + b.z * f[6] + b.w * f[7];
}

// grid (n_head_kv, splits, n_tokens), block ATT_THREADS, shared
// att_shared_floats(G, hd) floats with G = n_head / n_head_kv.
// q, out F32 {n_head * hd, n}; k, v {n_head_kv * hd, n_ctx} of types TK, TV;
// splits > 1: part_ml float2 {n_head, splits, n}, part_o F32 {n_head * hd, splits, n}.
// At most 64 registers: 4 blocks, 32 warps per SM (no spills at that cap);
// with a Q8_0 or Q4_0 cache 80 and 3 blocks (at 64, nvcc 13 spilled 4-56
// bytes: the blocks' byte-wise chunk reads keep more addresses live; at 80
// none on sm_86/89/90, 4-12 bytes left with plain K and Q4_0 V on sm_75/80).
template <uint32_t TK, uint32_t TV>
static __global__ void __launch_bounds__(ATT_THREADS, kv<TK>::n == 1 && kv<TV>::n == 1 ? 4 : 3)
    attention_split(const float *__restrict__ q, const uint8_t *__restrict__ k, const uint8_t *__restrict__ v,
                    float *__restrict__ out, float2 *__restrict__ part_ml, float *__restrict__ part_o, int n_head,
                    int n_head_kv, int hd, const int32_t *pos_of, const int32_t *row0_of, int n_swa, float scale,
                    float max_bias) {
    extern __shared__ float4 smem4[];
    const int G = n_head / n_head_kv, nch = hd / 8;
    float *q_s = (float *)smem4;     // [G][hd] the queries, times scale
    float *s_s = q_s + G * hd;       // [G][ATT_TILE] scores, then probabilities, of a tile
    float *m_s = s_s + G * ATT_TILE; // [G] running maximum
    float *l_s = m_s + G;            // [G] running sum
    float *c_s = l_s + G;            // [G] this tile's rescaling of the accumulators
    float *r_s = (float *)smem4 + (G * hd + G * ATT_TILE + 3 * G + 3) / 4 * 4; // [groups][outputs][8] partials
    const int kh = blockIdx.x, sp = blockIdx.y, ns = gridDim.y, t = blockIdx.z;
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int n_out = G * nch, groups = att_key_groups(n_out);
    const int kg = groups > 1 ? tid / n_out : 0, it0 = groups > 1 ? tid % n_out : tid; // P V: key group, output
    const int64_t q_dim = (int64_t)n_head * hd, kv_dim = (int64_t)n_head_kv * hd;
    const int pos = pos_of[t];
    const int lo = n_swa > 0 && pos - n_swa + 1 > 0 ? pos - n_swa + 1 : 0;
    const int per = (pos - lo + 1 + ns - 1) / ns;
    const int j_begin = lo + sp * per, j_end = min(j_begin + per, pos + 1);   // may be empty
    const int64_t k_row = kv_bytes<TK>(kv_dim), v_row = kv_bytes<TV>(kv_dim); // bytes of a cache row
    const int64_t cell = (int64_t)row0_of[t] * kv_dim + (int64_t)kh * hd;     // the sequence's row 0, head kh
    const uint8_t *k0 = k + kv_bytes<TK>(cell), *v0 = v + kv_bytes<TV>(cell);
    const float *qt = q + t * q_dim + (int64_t)kh * G * hd; // the group's heads are consecutive

    // (a quantized K's kv_query takes a warp per block of 32: G * hd is whole blocks, so whole warps)
    for (int i = tid; i < G * hd; i += ATT_THREADS) q_s[i] = kv_query<TK>(qt[i]) * scale;
    for (int g = tid; g < G; g += ATT_THREADS) m_s[g] = -INFINITY, l_s[g] = 0.0f;
    float acc[2][8] = {}; // outputs (head, chunk of 8 dims) it = it0 and it0 + ATT_THREADS, it = g * nch + chunk
    __syncthreads();

    // scores: LPK lanes per key (a power of two >= its chunks, at most 32),
    // each holding chunks c0 and c0 + 32 of it
    int lpk = 1;
    while (lpk < nch && lpk < 32) lpk *= 2;
    const int kpw = 32 / lpk, c0 = lane % lpk;
    for (int j0 = j_begin; j0 < j_end; j0 += ATT_TILE) {
        const int n = min(ATT_TILE, j_end - j0);
        for (int base = 0; base < ATT_TILE; base += ATT_WARPS * kpw) { // the same trip count in every lane
            const int jj = base + warp * kpw + lane / lpk;
            const bool valid = jj < n;
            float f0[8] = {}, f1[8] = {};
            const uint8_t *kr = k0 + (int64_t)(j0 + jj) * k_row;
            if (valid && c0 < nch) kv_load8<TK>(kr, c0, f0);
            if (valid && c0 + 32 < nch) kv_load8<TK>(kr, c0 + 32, f1);
            for (int g = 0; g < G; g++) {
                const float *qg = q_s + g * hd;
                float s = c0 < nch ? dot8(qg + 8 * c0, f0) : 0.0f;
                if (c0 + 32 < nch) s += dot8(qg + 8 * (c0 + 32), f1);
                for (int o = lpk / 2; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
                if (valid && c0 == 0) s_s[g * ATT_TILE + jj] = s;
            }
        }
        __syncthreads();
        // online softmax: a warp per head, two keys per lane (ALiBi's bias added here)
        for (int g = warp; g < G; g += ATT_WARPS) {
            float *sg = s_s + g * ATT_TILE;
            const int h = kh * G + g;
            const float slope = max_bias <= 0.0f ? 0.0f : att_alibi_slope(n_head, max_bias, h);
            const float a = lane < n ? sg[lane] + slope * (float)(j0 + lane - pos) : -INFINITY;
            const float b = lane + 32 < n ? sg[lane + 32] + slope * (float)(j0 + lane + 32 - pos) : -INFINITY;
            float mx = fmaxf(a, b);
            for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
            const float m_old = m_s[g], m_new = fmaxf(m_old, mx);   // finite: the tile has a key
            const float pa = expf(a - m_new), pb = expf(b - m_new); // 0 past n
            sg[lane] = pa;
            sg[lane + 32] = pb;
            const float sum = warp_sum(pa + pb);
            __syncwarp(); // every lane has read m_s[g] before lane 0 writes it
            if (lane == 0) {
                const float c = expf(m_old - m_new); // 0 on the first tile
                c_s[g] = c;
                l_s[g] = l_s[g] * c + sum;
                m_s[g] = m_new;
            }
        }
        __syncthreads();
        // P V: thread output (g, chunk) over its key group's V rows of the tile (coalesced across chunks)
#pragma unroll
        for (int i = 0; i < 2; i++) {
            const int it = it0 + i * ATT_THREADS;
            if (kg >= groups || it >= n_out) break;
            const int g = it / nch, ch = it % nch;
            const float c = c_s[g], *pg = s_s + g * ATT_TILE;
#pragma unroll
            for (int e = 0; e < 8; e++) acc[i][e] *= c;
            const uint8_t *vc = v0 + (int64_t)j0 * v_row;
#pragma unroll 4 // 4 V loads in flight per thread
            for (int j = kg; j < n; j += groups) {
                float f[8];
                kv_load8<TV>(vc + (int64_t)j * v_row, ch, f);
                const float p = pg[j];
#pragma unroll
                for (int e = 0; e < 8; e++) acc[i][e] = fmaf(p, f[e], acc[i][e]);
            }
        }
        __syncthreads(); // the tile's probabilities and c_s are used up
    }

    // the key groups' partial outputs summed into group 0's threads
    if (groups > 1) {
        if (kg > 0 && kg < groups)
#pragma unroll
            for (int e = 0; e < 8; e++) r_s[((kg - 1) * n_out + it0) * 8 + e] = acc[0][e];
        __syncthreads();
        if (kg == 0)
            for (int r = 0; r < groups - 1; r++)
#pragma unroll
                for (int e = 0; e < 8; e++) acc[0][e] += r_s[(r * n_out + it0) * 8 + e];
    }
    const int h0 = kh * G;
#pragma unroll
    for (int i = 0; i < 2; i++) {
        const int it = it0 + i * ATT_THREADS;
        if (kg > 0 || it >= n_out) break;
        const int g = it / nch, ch = it % nch;
        if (ns == 1) { // the range is not empty: l > 0
            const float inv = 1.0f / l_s[g];
            float *o = out + t * q_dim + (int64_t)(h0 + g) * hd + 8 * ch;
#pragma unroll
            for (int e = 0; e < 8; e++) o[e] = acc[i][e] * inv;
        } else {
            float *o = part_o + ((int64_t)t * ns + sp) * q_dim + (int64_t)(h0 + g) * hd + 8 * ch;
#pragma unroll
            for (int e = 0; e < 8; e++) o[e] = acc[i][e];
        }
    }
    if (ns > 1)
        for (int g = tid; g < G; g += ATT_THREADS)
            part_ml[((int64_t)t * ns + sp) * n_head + h0 + g] = make_float2(m_s[g], l_s[g]);
}

// grid (n_head, n_tokens), block ATT_THREADS: combines the splits of one
// head. Warp 0 turns the splits' (m, l) into weights exp(m_s - M) (0 for a
// split that saw no key) and 1 / sum_s w_s l_s; then the block sums w_s o_s
// with the splits dealt over the threads as well as the dimensions (a
// thread per (dimension, group of splits), the groups added in shared
// memory), so that no thread walks all splits one load after another. With
// q8 (a decode step, heads of whole 32-element blocks) the block then writes
// its head's Q8_1 form to q for the output projection (q8_1.cuh).
static __global__ void __launch_bounds__(ATT_THREADS)
    attention_reduce(const float2 *__restrict__ part_ml, const float *__restrict__ part_o, float *__restrict__ out,
                     int n_head, int hd, int ns, bool q8, q8_1_view q) {
    __shared__ float w_s[ATT_MAX_SPLITS];
    __shared__ float sum_s[ATT_THREADS];
    __shared__ float inv_s;
    const int h = blockIdx.x, t = blockIdx.y, tid = threadIdx.x;
    const int64_t q_dim = (int64_t)n_head * hd;
    const float2 *ml = part_ml + (int64_t)t * ns * n_head + h;
    if (tid < 32) { // two splits per lane (ATT_MAX_SPLITS <= 64)
        const float2 none = make_float2(-INFINITY, 0.0f);
        const float2 a = tid < ns ? ml[(int64_t)tid * n_head] : none;
        const float2 b = tid + 32 < ns ? ml[(int64_t)(tid + 32) * n_head] : none;
        float mx = fmaxf(a.y > 0.0f ? a.x : -INFINITY, b.y > 0.0f ? b.x : -INFINITY);
        for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        const float wa = a.y > 0.0f ? expf(a.x - mx) : 0.0f, wb = b.y > 0.0f ? expf(b.x - mx) : 0.0f;
        if (tid < ns) w_s[tid] = wa;
        if (tid + 32 < ns) w_s[tid + 32] = wb;
        const float den = warp_sum(wa * a.y + wb * b.y); // > 0: the first split saw a key
        if (tid == 0) inv_s = 1.0f / den;
    }
    __syncthreads();
    const float *po = part_o + (int64_t)t * ns * q_dim + (int64_t)h * hd;
    float *o = out + t * q_dim + (int64_t)h * hd;
    const int groups = hd >= ATT_THREADS ? 1 : ATT_THREADS / hd; // of splits, uniform in the block
    const int grp = tid / hd, d0 = tid % hd;
    if (groups == 1) {
        for (int d = tid; d < hd; d += ATT_THREADS) {
            float num = 0.0f;
#pragma unroll 8
            for (int s = 0; s < ns; s++) num += w_s[s] * po[(int64_t)s * q_dim + d];
            o[d] = num * inv_s;
        }
    } else {
        float num = 0.0f;
        if (grp < groups)
#pragma unroll 4
            for (int s = grp; s < ns; s += groups) num += w_s[s] * po[(int64_t)s * q_dim + d0];
        sum_s[tid] = num;
        __syncthreads();
        if (grp == 0) {
            for (int g = 1; g < groups; g++) num += sum_s[g * hd + d0];
            o[d0] = num * inv_s;
        }
    }
    if (!q8) return;
    __syncthreads(); // the head's outputs, written to global memory by the block, are visible to it
    const int64_t first = (t * q_dim + (int64_t)h * hd) / 4; // the head's first group of 4 in the activations
    for (int c = tid; c < hd / 4; c += ATT_THREADS)
        q8_1_put4(o[4 * c], o[4 * c + 1], o[4 * c + 2], o[4 * c + 3], first + c, q);
}

// Causal attention (no encoder's bidirectional mask yet) over K and V caches
// of F16, BF16, Q8_0 or Q4_0 (each on its own; heads of
// whole 32-element blocks for the quantized ones), heads of whole 8-element
// chunks, a group and a head within the per-thread outputs, the block's
// shared memory within the default limit, and tokens within CUDA's 65535
// blocks in z.
bool hl_cuda_attention_runs(const hl_attn_args *a) {
    if (a->bidirectional || a->n_head_kv <= 0 || a->n_head % a->n_head_kv != 0 ||
        !kv_type_runs(a->k_cache->type, a->head_dim) || !kv_type_runs(a->v_cache->type, a->head_dim))
        return false;
    const int g = a->n_head / a->n_head_kv;
    return a->head_dim % 8 == 0 && a->head_dim <= ATT_MAX_HEAD_DIM && g * a->head_dim <= ATT_MAX_GROUP_DIMS &&
           att_shared_floats(g, a->head_dim) * (int)sizeof(float) <= ATT_MAX_SHARED && a->q->ne[1] <= 65535;
}

// Splits per token: one per ATT_SPLIT_KEYS rows of the cache, at most
// ATT_MAX_SPLITS and ATT_MAX_BLOCKS blocks, and as many as the partials fit
// in w16 (common.cuh).
static int attention_splits(const hl_cuda *cu, const hl_attn_args *a) {
    const int64_t tokens = a->q->ne[1];
    int64_t ns = (a->k_cache->ne[1] + ATT_SPLIT_KEYS - 1) / ATT_SPLIT_KEYS;
    if (ns > ATT_MAX_SPLITS) ns = ATT_MAX_SPLITS;
    while (ns > 1 && a->n_head_kv * ns * tokens > ATT_MAX_BLOCKS) ns /= 2;
    const int64_t per_split = tokens * a->n_head * ((int64_t)a->head_dim * sizeof(float) + sizeof(float2));
    const int64_t fit = (int64_t)(cu->w16_elems * sizeof(__half)) / per_split;
    return (int)(ns < fit ? ns : fit > 1 ? fit : 1);
}

// Whether a cache's data suits kv_load8: 16-byte aligned for the 16-byte
// loads of F16 and BF16, 2-byte for the quantized blocks' F16 scales.
static bool kv_aligned(const hl_tensor *c) {
    const bool plain = c->type == GGML_TYPE_F16 || c->type == GGML_TYPE_BF16;
    return (uintptr_t)c->data % (plain ? 16 : 2) == 0;
}

namespace { // file-local: no symbol leaves the object
// attention_split<TK, TV>: kv_dispatch on the K type, then on the V type.
struct launch_split {
    template <uint32_t TK> struct with_k {
        template <uint32_t TV>
        static void run(hl_cuda *cu, const hl_attn_args *a, dim3 grid, size_t shared, float2 *part_ml, float *part_o) {
            attention_split<TK, TV><<<grid, ATT_THREADS, shared, cu->stream>>>(
                (const float *)a->q->data, (const uint8_t *)a->k_cache->data, (const uint8_t *)a->v_cache->data,
                (float *)a->out->data, part_ml, part_o, a->n_head, a->n_head_kv, a->head_dim, cuda_pos(cu),
                cuda_row0(cu), a->n_swa, a->scale, a->max_bias);
        }
    };
    template <uint32_t TK>
    static void run(hl_cuda *cu, const hl_attn_args *a, dim3 grid, size_t shared, float2 *part_ml, float *part_o) {
        kv_dispatch<with_k<TK>>(a->v_cache->type, cu, a, grid, shared, part_ml, part_o);
    }
};
} // namespace

void hl_cuda_attention(hl_backend *b, const hl_attn_args *a) {
    hl_cuda *cu = cuda_of(b);
    if (!hl_cuda_enter(cu)) return;
    if (!hl_cuda_attention_runs(a) || !kv_aligned(a->k_cache) || !kv_aligned(a->v_cache)) {
        hl_cuda_record(cu, HEARTH_ERR_UNSUPPORTED,
                       "cuda%d: attention needs an F16, BF16, Q8_0 or Q4_0 KV cache "
                       "(16-byte aligned for F16 and BF16), head_dim a multiple of 8 (of 32 for Q8_0 and Q4_0) up "
                       "to %d, n_head a multiple of n_head_kv with at most %d head dimensions (and %d KiB of shared "
                       "memory) per KV head, at most 65535 tokens, and a causal mask",
                       cu->index, ATT_MAX_HEAD_DIM, ATT_MAX_GROUP_DIMS, ATT_MAX_SHARED / 1024);
        return;
    }
    if (hl_cuda_attention_mma_runs(cu, a)) return hl_cuda_attention_mma(cu, a);
    const int ns = attention_splits(cu, a), tokens = (int)a->q->ne[1], g = a->n_head / a->n_head_kv;
    float2 *part_ml = (float2 *)cu->w16;
    float *part_o = (float *)(part_ml + (int64_t)tokens * ns * a->n_head);
    const size_t shared = (size_t)att_shared_floats(g, a->head_dim) * sizeof(float);
    const dim3 grid((unsigned)a->n_head_kv, (unsigned)ns, (unsigned)tokens);
    kv_dispatch<launch_split>(a->k_cache->type, cu, a, grid, shared, part_ml, part_o);
    if (!CU_LAUNCHED(cu) || ns == 1) return;
    // a decode step's output also in Q8_1 for the output projection after it
    const int64_t q_dim = (int64_t)a->n_head * a->head_dim;
    const bool q8 = a->head_dim % 32 == 0 && cuda_q8_1_wanted(cu, q_dim, tokens);
    attention_reduce<<<dim3((unsigned)a->n_head, (unsigned)tokens), ATT_THREADS, 0, cu->stream>>>(
        part_ml, part_o, (float *)a->out->data, a->n_head, a->head_dim, ns, q8, cuda_q8_1_view(cu, q_dim, tokens));
    if (CU_LAUNCHED(cu) && q8) cuda_q8_1_mark(cu, a->out->data, q_dim, tokens);
}
