/* Measures memory read bandwidth the way decode uses memory: each of T threads
 * streams its share of a buffer much larger than the caches and sums it (AVX2
 * loads), repeated; prints the best GB/s. The hardware limit for decode speed
 * is this figure divided by the bytes of weights read per token.
 * Build: cc -O2 -mavx2 -pthread bench/membw.c -o build/membw
 * Usage: build/membw [threads] [MiB]   (defaults: 2, 1024) */
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_time.h"

typedef struct share {
    const __m256i *p;
    size_t n; /* 32-byte vectors */
    long long sink;
} share;

static void *reader(void *arg) {
    share *s = arg;
    __m256i acc = _mm256_setzero_si256();
    for (size_t i = 0; i < s->n; i += 4) {
        acc = _mm256_add_epi64(acc, _mm256_load_si256(s->p + i));
        acc = _mm256_add_epi64(acc, _mm256_load_si256(s->p + i + 1));
        acc = _mm256_add_epi64(acc, _mm256_load_si256(s->p + i + 2));
        acc = _mm256_add_epi64(acc, _mm256_load_si256(s->p + i + 3));
    }
    long long out[4];
    memcpy(out, &acc, sizeof out);
    s->sink = out[0] + out[1] + out[2] + out[3];
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    size_t mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 1024;
    if (threads < 1 || threads > 256 || mib < 64) {
        fprintf(stderr, "usage: membw [threads 1..256] [MiB >= 64]\n");
        return 2;
    }
    size_t bytes = mib << 20, n = bytes / 32;
    __m256i *buf = aligned_alloc(64, bytes);
    if (!buf) {
        fprintf(stderr, "membw: cannot allocate %zu MiB\n", mib);
        return 1;
    }
    memset(buf, 1, bytes);
    double best = 0;
    for (int rep = 0; rep < 10; rep++) {
        pthread_t tid[256];
        share sh[256];
        double t0 = bench_now();
        for (int t = 0; t < threads; t++) {
            size_t per = n / threads / 4 * 4;
            sh[t] = (share){buf + per * t, per, 0};
            pthread_create(&tid[t], NULL, reader, &sh[t]);
        }
        for (int t = 0; t < threads; t++) pthread_join(tid[t], NULL);
        double gbs = (double)(n / threads / 4 * 4 * threads) * 32 / (bench_now() - t0) / 1e9;
        if (gbs > best) best = gbs;
    }
    printf("read bandwidth: %.1f GB/s (%d threads, %zu MiB, best of 10)\n", best, threads, mib);
    free(buf);
    return 0;
}
