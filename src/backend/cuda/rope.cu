// Rotary position embeddings (RoFormer, Su et al. 2021, arXiv:2104.09864)
// with ggml's conventions (backend.h hl_rope_params), YaRN included (Peng et
// al. 2023, arXiv:2309.00071): pair i of a head (0 <= i < n_rot / 2) has
// theta_extrap = p * theta_scale^i / ff[i] and theta_interp = freq_scale *
// theta_extrap; with ext_factor != 0 the angle mixes them by ggml's ramp over
// the correction dims, and cos, sin are scaled by mscale (the numbers of
// hl_rope_yarn_consts). The pair is (x[2i], x[2i+1]) in NORMAL mode and
// (x[i], x[i + n_rot/2]) in NEOX mode; dimensions past n_rot are left alone.
// theta is computed as ggml's CUDA kernel does: p * theta_scale^i. The
// K-shift (rope_shift) rotates rows of the KV cache (F16, BF16, Q8_0, Q4_0)
// the same way, every row to one position. rope_store ropes a block's Q and
// K and stores K and V in the cache in one launch.
#include "backend/cuda/common.cuh"
#include "backend/cuda/kv.cuh"
#include "backend/cuda/rope.cuh"

#define ROPE_THREADS 256
#define SHIFT_THREADS 64
#define SHIFT_MAX_HEAD_DIM 12288 // a head in floats within the 48 KiB of shared memory a block has by default

// One thread per (token, head, pair); x F32 {n_head * hd, n}, in place.
static __global__ void rope_kernel(float *x, rope_args a, const int32_t *pos, int64_t n_pairs) {
    const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n_pairs) rope_pair(x, a, pos, idx);
}

// rope_store (backend.h) in one launch, caches of type T: one thread per
// pair of q (rope_kernel's work), then per unit of kv<T> of K (its elements
// roped from k's values, which stay as they are: a pair's other element
// may lie in another unit), then per unit of V. k {dk, n}, v {dv, n}.
template <uint32_t T>
static __global__ void rope_store_kernel(float *q, const float *__restrict__ k, const float *__restrict__ v,
                                         uint8_t *k_cache, uint8_t *v_cache, rope_args a, int64_t dk, int64_t dv,
                                         int64_t n, const int32_t *pos, const int32_t *row0) {
    using K = kv<T>;
    const int64_t q_pairs = n * a.n_head * (a.n_rot / 2), k_units = dk / K::n, v_units = dv / K::n;
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < q_pairs) {
        rope_pair(q, a, pos, i);
        return;
    }
    i -= q_pairs;
    if (i < k_units * n) {
        const int64_t t = i / k_units, u = i % k_units;
        float r[K::n];
#pragma unroll
        for (int e = 0; e < K::n; e++) r[e] = roped(k + t * dk, a, (float)pos[t], u * K::n + e);
        K::put(r, (typename K::unit *)k_cache + (int64_t)(row0[t] + pos[t]) * k_units + u);
        return;
    }
    i -= k_units * n;
    if (i >= v_units * n) return;
    const int64_t t = i / v_units, u = i % v_units;
    K::put(v + t * dv + u * K::n, (typename K::unit *)v_cache + (int64_t)(row0[t] + pos[t]) * v_units + u);
}

// A block per (row, head) of rows [row0, ...) of a cache {n_head * hd,
// n_ctx} of type T, shared memory hd floats: the head converted to F32
// (dequant.cuh), its pairs rotated to position delta as the CPU rotates
// them (cpu/ops.c rotate_head: fma(x0, c, -(x1 s)), fma(x0, s, x1 c)), then
// written back by kv<T>::put, which requantizes a quantized head whole with
// the CPU's bytes (llama.cpp casts such a cache to F32 around its rope).
template <uint32_t T>
static __global__ void __launch_bounds__(SHIFT_THREADS)
    rope_shift_kernel(uint8_t *cache, rope_args a, int64_t row0, int delta) {
    extern __shared__ float v[]; // [hd]
    using K = kv<T>;
    uint8_t *head = cache + kv_bytes<T>((row0 * a.n_head + blockIdx.x) * a.hd); // blockIdx.x: row * n_head + h
    for (int c = threadIdx.x; c < dq_chunks(a.hd); c += SHIFT_THREADS) dequant_chunk<T>(head, a.hd, c, v + 8 * c);
    __syncthreads();
    const int half = a.n_rot / 2;
    for (int i = threadIdx.x; i < half; i += SHIFT_THREADS) {
        const float2 cs = rope_cos_sin(a, (float)delta, i);
        const int i0 = a.neox ? i : 2 * i, i1 = a.neox ? i + half : 2 * i + 1;
        const float x0 = v[i0], x1 = v[i1];
        v[i0] = fmaf(x0, cs.x, -(x1 * cs.y));
        v[i1] = fmaf(x0, cs.y, x1 * cs.x);
    }
    __syncthreads();
    for (int u = threadIdx.x; u < a.hd / K::n; u += SHIFT_THREADS) K::put(v + u * K::n, (typename K::unit *)head + u);
}

// The frequency factors' device memory, or NULL.
static const float *ff_of(const hl_tensor *freq_factors) {
    return freq_factors ? (const float *)freq_factors->data : NULL;
}

// The two pairings the kernels know.
bool hl_cuda_rope_runs(const hl_rope_params *p) { return p->mode == HL_ROPE_NORMAL || p->mode == HL_ROPE_NEOX; }

// Those pairings, into two caches of one type attention reads, rows of whole units.
bool hl_cuda_rope_store_runs(const hl_rope_params *p, uint32_t k_type, uint32_t v_type, int64_t dk, int64_t dv) {
    return hl_cuda_rope_runs(p) && k_type == v_type && kv_type_runs(k_type, dk) && kv_type_runs(v_type, dv);
}

// Those pairings on a cache type attention reads, heads of whole units
// within the block's shared memory.
bool hl_cuda_rope_shift_runs(const hl_rope_params *p, uint32_t cache_type, int64_t head_dim) {
    return hl_cuda_rope_runs(p) && kv_type_runs(cache_type, head_dim) && head_dim <= SHIFT_MAX_HEAD_DIM;
}

namespace { // file-local: no symbol leaves the object
struct launch_shift {
    template <uint32_t T>
    static void run(hl_cuda *cu, void *cache, const rope_args &a, int64_t row0, int64_t n, int delta) {
        rope_shift_kernel<T><<<(unsigned)(n * a.n_head), SHIFT_THREADS, (size_t)a.hd * sizeof(float), cu->stream>>>(
            (uint8_t *)cache, a, row0, delta);
        CU_LAUNCHED(cu);
    }
};
struct launch_rope_store {
    template <uint32_t T>
    static void run(hl_cuda *cu, hl_tensor *q, const hl_tensor *k, const hl_tensor *v, hl_tensor *k_cache,
                    hl_tensor *v_cache, const rope_args &a) {
        const int64_t n = q->ne[1], dk = k->ne[0], dv = v->ne[0];
        const int64_t threads = n * a.n_head * (a.n_rot / 2) + (dk + dv) / kv<T>::n * n;
        rope_store_kernel<T><<<cuda_blocks(threads, ROPE_THREADS), ROPE_THREADS, 0, cu->stream>>>(
            (float *)q->data, (const float *)k->data, (const float *)v->data, (uint8_t *)k_cache->data,
            (uint8_t *)v_cache->data, a, dk, dv, n, cuda_pos(cu), cuda_row0(cu));
        CU_LAUNCHED(cu);
    }
};
} // namespace

void hl_cuda_rope(hl_backend *b, hl_tensor *x, int32_t n_head, const hl_rope_params *p, const hl_tensor *freq_factors) {
    hl_cuda *cu = cuda_of(b);
    if (!hl_cuda_enter(cu)) return;
    if (!hl_cuda_rope_runs(p)) {
        hl_cuda_record(cu, HEARTH_ERR_UNSUPPORTED, "cuda%d: rope mode %d is not supported", cu->index, (int)p->mode);
        return;
    }
    const int64_t n_pairs = x->ne[1] * n_head * (p->n_rot / 2);
    rope_kernel<<<cuda_blocks(n_pairs, ROPE_THREADS), ROPE_THREADS, 0, cu->stream>>>(
        (float *)x->data, rope_args_of(p, n_head, (int)(x->ne[0] / n_head), ff_of(freq_factors)), cuda_pos(cu),
        n_pairs);
    CU_LAUNCHED(cu);
}

void hl_cuda_rope_shift(hl_backend *b, hl_tensor *cache, int64_t row, int64_t n, int32_t n_head, int32_t delta,
                        const hl_rope_params *p, const hl_tensor *freq_factors) {
    hl_cuda *cu = cuda_of(b);
    if (!hl_cuda_enter(cu)) return;
    const int hd = (int)(cache->ne[0] / n_head);
    if (!hl_cuda_rope_shift_runs(p, cache->type, hd) ||
        !kv_dispatch<launch_shift>(cache->type, cu, cache->data, rope_args_of(p, n_head, hd, ff_of(freq_factors)), row,
                                   n, delta))
        hl_cuda_record(cu, HEARTH_ERR_UNSUPPORTED,
                       "cuda%d: rope_shift of mode %d on cache type %u with heads of %d "
                       "is not supported",
                       cu->index, (int)p->mode, (unsigned)cache->type, hd);
}

void hl_cuda_rope_store(hl_backend *b, hl_tensor *q, hl_tensor *k, const hl_tensor *v, hl_tensor *k_cache,
                        hl_tensor *v_cache, int32_t n_head, const hl_rope_params *p, const hl_tensor *freq_factors) {
    hl_cuda *cu = cuda_of(b);
    if (!hl_cuda_enter(cu)) return;
    const int hd = (int)(q->ne[0] / n_head);
    if (!hl_cuda_rope_store_runs(p, k_cache->type, v_cache->type, k->ne[0], v->ne[0]) ||
        !kv_dispatch<launch_rope_store>(k_cache->type, cu, q, k, v, k_cache, v_cache,
                                        rope_args_of(p, n_head, hd, ff_of(freq_factors))))
        hl_cuda_record(cu, HEARTH_ERR_UNSUPPORTED,
                       "cuda%d: rope_store of mode %d into caches of types %u and %u is "
                       "not supported",
                       cu->index, (int)p->mode, (unsigned)k_cache->type, (unsigned)v_cache->type);
}
