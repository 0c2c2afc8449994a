// Row movement: the embedding lookup (get_rows, any weight type, dequantized
// with dequant.cuh) and the KV-cache store (store_rows: F32 rows into an F16
// or F32 cache at the positions from device memory).
#include "backend/cuda/common.cuh"
#include "backend/cuda/dequant.cuh"

#define ROWS_THREADS 256

// One thread per (token, chunk of 8): out {d, n} F32 = table rows ids[t].
template <uint32_t T>
static __global__ void get_rows_kernel(const uint8_t *__restrict__ table, size_t stride, const int32_t *__restrict__ ids,
                                float *__restrict__ out, int64_t d, int64_t n) {
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
        hl_cuda_record(cu, HEARTH_ERR_UNSUPPORTED, "cuda%d: get_rows has no kernel for type %u", cu->index, table->type);
}

// One thread per element: cache row row0[t] + pos[t] = src row t.
template <typename C> static __device__ C to_cache(float v);
template <> __device__ __half to_cache<__half>(float v) { return __float2half_rn(v); }
template <> __device__ float to_cache<float>(float v) { return v; }

template <typename C>
static __global__ void store_rows_kernel(const float *__restrict__ src, C *__restrict__ cache, int64_t d, int64_t n,
                                  const int32_t *pos, const int32_t *row0) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= d * n) return;
    const int64_t t = i / d;
    cache[(int64_t)(row0[t] + pos[t]) * d + i % d] = to_cache<C>(src[i]);
}

bool hl_cuda_store_rows_runs(uint32_t cache_type) { return cache_type == GGML_TYPE_F16 || cache_type == GGML_TYPE_F32; }

void hl_cuda_store_rows(hl_backend *b, const hl_tensor *src, hl_tensor *cache) {
    hl_cuda *cu = cuda_of(b);
    if (!hl_cuda_enter(cu)) return;
    const int64_t d = src->ne[0], n = src->ne[1];
    const int32_t *pos = cuda_pos(cu), *row0 = cuda_row0(cu);
    const unsigned blocks = cuda_blocks(d * n, ROWS_THREADS);
    if (cache->type == GGML_TYPE_F16)
        store_rows_kernel<__half><<<blocks, ROWS_THREADS, 0, cu->stream>>>((const float *)src->data,
                                                                           (__half *)cache->data, d, n, pos, row0);
    else if (cache->type == GGML_TYPE_F32)
        store_rows_kernel<float><<<blocks, ROWS_THREADS, 0, cu->stream>>>((const float *)src->data,
                                                                          (float *)cache->data, d, n, pos, row0);
    else {
        hl_cuda_record(cu, HEARTH_ERR_UNSUPPORTED, "cuda%d: the KV cache must be F16 or F32", cu->index);
        return;
    }
    CU_LAUNCHED(cu);
}
