// Row movement: the embedding lookup (get_rows, any weight type, dequantized
// with dequant.cuh) and the KV-cache store (store_rows: F32 rows into an
// F16, BF16, Q8_0, Q4_0 or F32 cache at the positions from device memory,
// written by kv.cuh's kv<T>::put with the CPU backend's bytes).
#include "backend/cuda/common.cuh"
#include "backend/cuda/dequant.cuh"
#include "backend/cuda/kv.cuh"

#define ROWS_THREADS 256

// One thread per (token, chunk of 8): out {d, n} F32 = table rows ids[t].
template <uint32_t T>
static __global__ void get_rows_kernel(const uint8_t *__restrict__ table, size_t stride,
                                       const int32_t *__restrict__ ids, float *__restrict__ out, int64_t d, int64_t n) {
    const int64_t per_row = dq_chunks(d);
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= per_row * n) return;
    const int64_t t = i / per_row, c = i % per_row;
    float v[8];
    const int k = dequant_chunk<T>(table + (int64_t)ids[t] * stride, d, c, v);
    for (int j = 0; j < k; j++) out[t * d + 8 * c + j] = v[j];
}

namespace { // file-local: no symbol leaves the object
struct launch_get_rows {
    template <uint32_t T> static void run(hl_cuda *cu, const hl_tensor *table, hl_tensor *out) {
        const int64_t d = table->ne[0], n = out->ne[1];
        get_rows_kernel<T><<<cuda_blocks(dq_chunks(d) * n, ROWS_THREADS), ROWS_THREADS, 0, cu->stream>>>(
            (const uint8_t *)table->data, hl_row_size(table->type, d), cu->d_ids, (float *)out->data, d, n);
        CU_LAUNCHED(cu);
    }
};
} // namespace

// ids is host memory: it is copied to the instance's d_ids first (so
// get_rows cannot be part of a recorded graph; the model keeps the token
// embeddings on the host anyway).
void hl_cuda_get_rows(hl_backend *b, const hl_tensor *table, const int32_t *ids, hl_tensor *out) {
    hl_cuda *cu = cuda_of(b);
    if (!hl_cuda_enter(cu)) return;
    if (!cu->d_ids || out->ne[1] > cu->limits.max_tokens) {
        hl_cuda_record(cu, HEARTH_ERR_INVALID_ARG, "cuda%d: get_rows of %lld rows exceeds the planned batch", cu->index,
                       (long long)out->ne[1]);
        return;
    }
    if (!CU_OK(cu, cudaMemcpyAsync(cu->d_ids, ids, (size_t)out->ne[1] * sizeof(int32_t), cudaMemcpyHostToDevice,
                                   cu->stream)))
        return;
    if (!dispatch_type<launch_get_rows>(table->type, cu, table, out))
        hl_cuda_record(cu, HEARTH_ERR_UNSUPPORTED, "cuda%d: get_rows has no kernel for type %u", cu->index,
                       table->type);
}

// One thread per unit of kv<T> (an element, or a block of 32): cache row
// row0[t] + pos[t] {d} = src row t, src F32 {d, n}.
template <uint32_t T>
static __global__ void store_rows_kernel(const float *__restrict__ src, uint8_t *__restrict__ cache, int64_t d,
                                         int64_t n, const int32_t *pos, const int32_t *row0) {
    using K = kv<T>;
    const int64_t units = d / K::n; // per row
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= units * n) return;
    const int64_t t = i / units, u = i % units;
    typename K::unit *row = (typename K::unit *)cache + (int64_t)(row0[t] + pos[t]) * units;
    K::put(src + t * d + u * K::n, row + u);
}

namespace { // file-local: no symbol leaves the object
struct launch_store_rows {
    template <uint32_t T> static void run(hl_cuda *cu, const hl_tensor *src, hl_tensor *cache) {
        const int64_t d = src->ne[0], n = src->ne[1];
        store_rows_kernel<T><<<cuda_blocks(d / kv<T>::n * n, ROWS_THREADS), ROWS_THREADS, 0, cu->stream>>>(
            (const float *)src->data, (uint8_t *)cache->data, d, n, cuda_pos(cu), cuda_row0(cu));
        CU_LAUNCHED(cu);
    }
};
} // namespace

// The cache types attention reads, and F32; rows of whole units.
bool hl_cuda_store_rows_runs(uint32_t cache_type, int64_t d) {
    return cache_type == GGML_TYPE_F32 ? d > 0 : kv_type_runs(cache_type, d);
}

void hl_cuda_store_rows(hl_backend *b, const hl_tensor *src, hl_tensor *cache) {
    hl_cuda *cu = cuda_of(b);
    if (!hl_cuda_enter(cu)) return;
    if (!hl_cuda_store_rows_runs(cache->type, src->ne[0])) {
        hl_cuda_record(cu, HEARTH_ERR_UNSUPPORTED,
                       "cuda%d: store_rows needs an F16, BF16, Q8_0, Q4_0 or F32 cache "
                       "(rows of whole 32-element blocks for Q8_0 and Q4_0)",
                       cu->index);
        return;
    }
    if (cache->type == GGML_TYPE_F32) launch_store_rows::run<GGML_TYPE_F32>(cu, src, cache);
    else kv_dispatch<launch_store_rows>(cache->type, cu, src, cache);
}
