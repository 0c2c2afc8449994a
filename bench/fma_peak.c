/* One core's peak of 8-lane float FMAs (AVX2 + FMA): 12 independent
 * vfmadd231ps chains, enough to cover the instruction's latency on the two
 * FMA pipes of current x86 cores; prints the best of 5 timings in GFLOP/s
 * (2 flops per lane). The ceiling that the float panel kernels' GFLOP/s are
 * read against (bench/panel_bench.c gives GMAC/s: half the flops).
 * Build: cc -O2 -mavx2 -mfma bench/fma_peak.c -o build/fma_peak
 * Usage: taskset -c CPU build/fma_peak */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define CHAINS 12
#define STEP(i) a[i] = _mm256_fmadd_ps(a[i], x, y);

int main(void) {
    __m256 x = _mm256_set1_ps(0.5f), y = _mm256_set1_ps(0.25f), a[CHAINS];
    for (int i = 0; i < CHAINS; i++) a[i] = _mm256_set1_ps(0.01f * (float)(i + 1)); /* distinct: no chains merged */
    const long iters = 100000000;
    double best = 0.0;
    for (int rep = 0; rep < 5; rep++) {
        const double t0 = now();
        for (long k = 0; k < iters; k++) {
            STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7) STEP(8) STEP(9) STEP(10) STEP(11)
            __asm__("" : "+x"(x)); /* x unknown to the compiler each step: the FMAs cannot be folded */
        }
        const double gflops = (double)iters * CHAINS * 16 / (now() - t0) / 1e9;
        if (gflops > best) best = gflops;
    }
    __m256 s = a[0];
    for (int i = 1; i < CHAINS; i++) s = _mm256_add_ps(s, a[i]);
    float lanes[8];
    _mm256_storeu_ps(lanes, s);
    printf("FMA peak: %.1f GFLOP/s (one thread, %d chains of 8-lane FMAs, best of 5; checksum %g)\n", best, CHAINS,
           (double)lanes[0]);
    return 0;
}
