/* One core's ceilings for the AVX2 float kernels, one thread, best of 5
 * timings each:
 * - the FMA peak: 12 independent vfmadd231ps chains, enough to cover the
 *   instruction's latency on the two FMA pipes of current x86 cores;
 * - the AVX2 float panels' register tile alone: llamafile's tinyBLAS<8> 4 x 3
 *   tile (4 weight rows x 3 tokens, 12 accumulators, 7 loads per 12 FMAs,
 *   vec_dot_f_avx2.c) over rows that stay in L1, with no packing and
 *   nothing from beyond L1.
 * Printed in GFLOP/s and GMAC/s (bench/panel_bench.c gives GMAC/s: half the
 * flops), the ceilings that the panel kernels are read against.
 * Build: cc -O3 -mavx2 -mfma bench/fma_peak.c -o build/fma_peak
 * Usage: taskset -c CPU build/fma_peak */
#include <immintrin.h>
#include <stdio.h>

#include "bench_time.h"

#define CHAINS 12
#define STEP(i) a[i] = _mm256_fmadd_ps(a[i], x, y);

/* 8-lane FMAs a second of the bare chains. */
static double fma_chains(float *checksum) {
    __m256 x = _mm256_set1_ps(0.5f), y = _mm256_set1_ps(0.25f), a[CHAINS];
    for (int i = 0; i < CHAINS; i++) a[i] = _mm256_set1_ps(0.01f * (float)(i + 1)); /* distinct: no chains merged */
    const long iters = 100000000;
    double best = 0.0;
    for (int rep = 0; rep < 5; rep++) {
        const double t0 = bench_now();
        for (long k = 0; k < iters; k++) {
            // clang-format off
            STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7) STEP(8) STEP(9) STEP(10) STEP(11)
                // clang-format on
                __asm__(""
                        : "+x"(x)); /* x unknown to the compiler each step: the FMAs cannot be folded */
        }
        const double fmas = (double)iters * CHAINS / (bench_now() - t0);
        if (fmas > best) best = fmas;
    }
    __m256 s = a[0];
    for (int i = 1; i < CHAINS; i++) s = _mm256_add_ps(s, a[i]);
    *checksum += _mm256_cvtss_f32(s);
    return best;
}

#define LEN 256 /* floats a row of the tile: 4 + 3 rows of 1 KiB */
static float w[4][LEN] __attribute__((aligned(64))), act[3][LEN] __attribute__((aligned(64)));

/* 8-lane FMAs a second of the 4 x 3 tile. */
static double tile_4x3(float *checksum) {
    for (int i = 0; i < LEN; i++) {
        for (int r = 0; r < 4; r++) w[r][i] = 0.001f * (float)i;
        for (int c = 0; c < 3; c++) act[c][i] = 0.002f;
    }
    __m256 s[4][3];
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 3; c++) s[r][c] = _mm256_setzero_ps();
    const long reps = 20000000 / (LEN / 8);
    double best = 0.0;
    for (int k = 0; k < 5; k++) {
        const double t0 = bench_now();
        for (long it = 0; it < reps; it++) {
            for (int i = 0; i < LEN; i += 8) {
                __m256 x[3];
                for (int c = 0; c < 3; c++) {
                    x[c] = _mm256_load_ps(&act[c][i]);
                    __asm__("" : "+x"(x[c])); /* one load for 4 FMAs, as the kernel */
                }
                for (int r = 0; r < 4; r++) {
                    __m256 v = _mm256_load_ps(&w[r][i]);
                    __asm__("" : "+x"(v)); /* and one for 3 */
                    for (int c = 0; c < 3; c++) s[r][c] = _mm256_fmadd_ps(v, x[c], s[r][c]);
                }
            }
            __asm__ volatile("" : "+r"(it)); /* the passes cannot be merged */
        }
        const double fmas = (double)reps * (LEN / 8) * 12 / (bench_now() - t0);
        if (fmas > best) best = fmas;
    }
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 3; c++) *checksum += _mm256_cvtss_f32(s[r][c]);
    return best;
}

int main(void) {
    float checksum = 0.0f;
    const double peak = fma_chains(&checksum), tile = tile_4x3(&checksum);
    printf("FMA peak: %.1f GFLOP/s, %.1f GMAC/s (%d chains of 8-lane FMAs)\n", peak * 16e-9, peak * 8e-9, CHAINS);
    printf("4 x 3 tile over L1: %.1f GFLOP/s, %.1f GMAC/s (%.0f%% of the peak; checksum %g)\n", tile * 16e-9,
           tile * 8e-9, 100.0 * tile / peak, (double)checksum);
    return 0;
}
