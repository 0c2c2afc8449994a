// Device memory bandwidth, the ceiling decode speed is measured against
// (bench/gpu/run.sh's membw stage; METHOD.md: "a large device-to-device
// copy, counting bytes read plus bytes written"). Three numbers, each the
// median of REPS timed runs (CUDA events) after warm-ups, over buffers far
// larger than the L2 (50-60 MB on Hopper), filled with random bits:
//   copy  cudaMemcpyAsync device to device: (bytes read + bytes written) / time
//   kcopy a copy kernel with 16-byte loads and stores, same count
//   read  a kernel that only reads (16-byte loads, sums the words so the
//         loads stay): bytes read / time, what a matrix-vector product needs
// Prints "copy_GBps N" lines for bench/gpu/summary.py, then a short table.
// Build: nvcc -O3 -arch=sm_90 -o membw bench/gpu/membw.cu
// Usage: membw [MiB per buffer, default 2048] [reps, default 20]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#define CK(call)                                                                                                       \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "membw: %s failed at %s:%d: %s\n", #call, __FILE__, __LINE__, cudaGetErrorString(e_));     \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

__global__ void fill(uint4 *p, size_t n, uint32_t seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed; // a different word in every lane of every vector
        p[i] = make_uint4(h, h * 747796405u + 1, h * 2891336453u + 3, h ^ 0x9E3779B9u);
    }
}

__global__ void kcopy(const uint4 *__restrict__ src, uint4 *__restrict__ dst, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = src[i];
}

__global__ void kread(const uint4 *__restrict__ src, size_t n, uint32_t *sink) {
    uint32_t acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const uint4 v = src[i];
        acc += v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x12345678u) *sink = acc; // practically never: keeps the loads without a store per thread
}

template <typename F> static double median_ms(F launch, int reps) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < 3; i++) launch(); // warm-up
    CK(cudaGetLastError());
    std::vector<float> ms(reps);
    for (int i = 0; i < reps; i++) {
        CK(cudaEventRecord(a));
        launch();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        CK(cudaGetLastError());
        CK(cudaEventElapsedTime(&ms[i], a, b));
    }
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    std::sort(ms.begin(), ms.end());
    return ms[reps / 2];
}

int main(int argc, char **argv) {
    const size_t mib = argc > 1 ? strtoull(argv[1], nullptr, 10) : 2048;
    const int reps = argc > 2 ? atoi(argv[2]) : 20;
    const size_t bytes = mib << 20, n = bytes / sizeof(uint4);
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    uint4 *src, *dst;
    uint32_t *sink;
    CK(cudaMalloc(&src, bytes));
    CK(cudaMalloc(&dst, bytes));
    CK(cudaMalloc(&sink, sizeof *sink));
    const int grid = prop.multiProcessorCount * 8, block = 512;
    fill<<<grid, block>>>(src, n, 1u);
    fill<<<grid, block>>>(dst, n, 2u);
    CK(cudaDeviceSynchronize());
    const double copy = median_ms([&] { CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice)); }, reps);
    const double kc = median_ms([&] { kcopy<<<grid, block>>>(src, dst, n); }, reps);
    const double rd = median_ms([&] { kread<<<grid, block>>>(src, n, sink); }, reps);
    const double gb = bytes / 1e9;
    printf("device %s, %d SMs, L2 %d MB, %zu MiB per buffer, median of %d\n", prop.name, prop.multiProcessorCount,
           prop.l2CacheSize >> 20, mib, reps);
    printf("copy_GBps %.0f\nkcopy_GBps %.0f\nread_GBps %.0f\n", 2 * gb / (copy * 1e-3), 2 * gb / (kc * 1e-3),
           gb / (rd * 1e-3));
    printf("| test | ms | GB/s |\n| --- | ---: | ---: |\n");
    printf("| cudaMemcpy D2D (read + write) | %.3f | %.0f |\n", copy, 2 * gb / (copy * 1e-3));
    printf("| copy kernel, 16-byte (read + write) | %.3f | %.0f |\n", kc, 2 * gb / (kc * 1e-3));
    printf("| read kernel, 16-byte (read) | %.3f | %.0f |\n", rd, gb / (rd * 1e-3));
    CK(cudaFree(src));
    CK(cudaFree(dst));
    CK(cudaFree(sink));
    return 0;
}
