/* Read bandwidth of one weight type's decode kernels (vec_dot.h) over a
 * matrix much larger than the caches: T threads each take a contiguous
 * share of the rows, as a decode matmul's threads do, and run it row by row
 * (vec_dot, one stream a thread) or four rows far apart at a time
 * (vec_dot_4r, four streams, as cpu/matmul.c's dot_rows). The two ways
 * alternate, 15 timings each; prints the median and best in GB/s of weights
 * read. For comparing decode kernels against each other and against
 * bench/membw.c on a shared machine; a model's speed is hearth bench's.
 * With `huge` the matrix is advised as transparent huge pages (as a model
 * loaded with use_mmap false is), else it has the kernel's default pages.
 * Build: cc -O2 -Isrc -Iinclude bench/gemv_bench.c build/libhearth.a
 *        -lpcre2-8 -lcjson -lcurl -lssl -lcrypto -lm -lpthread -ldl -o build/gemv_bench
 * Usage: build/gemv_bench TYPE [N] [MiB] [THREADS] [avx2|avx512] [huge]
 *   TYPE a ggml type number (1 F16, 8 Q8_0, 12 Q4_K ...), N the row length
 *   (default 2048), MiB the matrix (default 512), THREADS (default 2). */
#include <pthread.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_time.h"

#include "backend/cpu/vec_dot.h"
#include "quant/quant.h"

typedef struct share {
    const hl_cpu_type_ops *ops;
    const uint8_t *w, *act;
    int64_t n;
    size_t w_row;
    long long r0, r1;
    bool four;
    int reps;
    float *y;
} share;

static void run_rows(const share *s) {
    long long r = s->r0;
    if (s->four) {
        const long long q = (s->r1 - s->r0) / 4;
        for (long long i = 0; i < q; i++) {
            float out[4];
            s->ops->vec_dot_4r(s->n, out, s->w + (size_t)(s->r0 + i) * s->w_row, (size_t)q * s->w_row, s->act);
            for (int j = 0; j < 4; j++) s->y[s->r0 + i + j * q] = out[j];
        }
        r = s->r0 + 4 * q;
    }
    for (; r < s->r1; r++) s->ops->vec_dot(s->n, &s->y[r], s->w + (size_t)r * s->w_row, s->act);
}

static void *run_share(void *arg) {
    const share *s = arg;
    for (int rep = 0; rep < s->reps; rep++) run_rows(s);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s TYPE [N] [MiB] [THREADS] [avx2|avx512] [huge]\n", argv[0]);
        return 2;
    }
    const uint32_t type = (uint32_t)atoi(argv[1]);
    const int64_t n = argc > 2 ? atoll(argv[2]) : 2048;
    const size_t mib = argc > 3 ? strtoul(argv[3], NULL, 10) : 512;
    const int threads = argc > 4 ? atoi(argv[4]) : 2;
    const hl_cpu_level level = argc > 5 && strcmp(argv[5], "avx512") == 0 ? HL_CPU_AVX512 : HL_CPU_AVX2;
    const bool huge = argc > 6 && strcmp(argv[6], "huge") == 0;
    const hl_cpu_type_ops *ops = hl_cpu_type_ops_at(type, level);
    const hl_quant_traits *q = hl_quant_get(type);
    const size_t w_row = q ? hl_row_size(type, n) : 0;
    if (!ops || !q || w_row == 0 || threads < 1 || threads > 64 || mib < 1) {
        fprintf(stderr, "%s: no %s kernels for type %u at n %lld, or a bad size\n", argv[0], hl_cpu_level_name(level),
                type, (long long)n);
        return 1;
    }
    const long long rows = (long long)((mib << 20) / w_row);
    const int reps = (int)(512 / mib) + 1; /* a matrix that fits in a cache is read again and again */
    const size_t page = (size_t)2 << 20, w_bytes = ((size_t)rows * w_row + page - 1) / page * page;
    uint8_t *w = aligned_alloc(page, w_bytes), *act = aligned_alloc(64, hl_row_size(ops->vec_dot_type, n) + 64);
    if (huge) madvise(w, w_bytes, MADV_HUGEPAGE);
    float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)rows);
    srand(1);
    for (int64_t i = 0; i < n; i++) x[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    ops->act_from_float(x, act, n);
    for (long long r = 0; r < rows; r++) {
        x[r % n] = (float)rand() / (float)RAND_MAX - 0.5f; /* rows differ; quantizing every row is slow */
        if (r < 64) q->from_float(x, w + (size_t)r * w_row, n);
        else memcpy(w + (size_t)r * w_row, w + (size_t)(r % 64) * w_row, w_row);
    }
    const char *name[2] = {"vec_dot", "vec_dot_4r"};
    double gbs[2][15];
    for (int k = 0; k < 15; k++)
        for (int four = 0; four < 2; four++) {
            if (four && !ops->vec_dot_4r) {
                gbs[four][k] = 0;
                continue;
            }
            pthread_t tid[64];
            share sh[64];
            const double t0 = bench_now();
            for (int t = 0; t < threads; t++) {
                sh[t] = (share){ops, w, act, n, w_row, rows * t / threads, rows * (t + 1) / threads, four, reps, y};
                pthread_create(&tid[t], NULL, run_share, &sh[t]);
            }
            for (int t = 0; t < threads; t++) pthread_join(tid[t], NULL);
            gbs[four][k] = (double)reps * (double)rows * (double)w_row / (bench_now() - t0) * 1e-9;
        }
    for (int four = 0; four < 2; four++) {
        if (four && !ops->vec_dot_4r) continue;
        bench_sort(gbs[four], 15);
        printf("%s %s %s, n %lld, %zu MiB%s, %d threads: median %.1f, best %.1f GB/s\n", hl_cpu_level_name(level),
               hl_ggml_type_get(type)->name, name[four], (long long)n, mib, huge ? " (huge pages)" : "", threads,
               gbs[four][7], gbs[four][14]);
    }
    free(w);
    free(act);
    free(x);
    free(y);
    return 0;
}
