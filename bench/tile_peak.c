/* One core's ceiling for the AVX2 float panels' register tile: llamafile's
 * tinyBLAS<8> 4 x 3 tile (4 weight rows x 3 tokens, 12 accumulators, 7
 * loads per 12 FMAs, vec_dot_f_avx2.c) over rows that stay in L1, with no
 * packing and nothing from beyond L1; prints the best of 5 timings in
 * GMAC/s. Between bench/fma_peak.c (FMAs alone) and bench/panel_bench.c
 * (the kernel with its panel and blocks) it tells what the tile itself
 * allows.
 * Build: cc -O3 -mavx2 -mfma bench/tile_peak.c -o build/tile_peak
 * Usage: taskset -c CPU build/tile_peak */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define LEN 256 /* floats a row: 4 + 3 rows of 1 KiB */
static float w[4][LEN] __attribute__((aligned(64))), a[3][LEN] __attribute__((aligned(64)));

int main(void) {
    for (int i = 0; i < LEN; i++) {
        for (int r = 0; r < 4; r++) w[r][i] = 0.001f * (float)i;
        for (int c = 0; c < 3; c++) a[c][i] = 0.002f;
    }
    __m256 s[4][3];
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 3; c++) s[r][c] = _mm256_setzero_ps();
    const long reps = 20000000 / (LEN / 8);
    double best = 0.0;
    for (int k = 0; k < 5; k++) {
        const double t0 = now();
        for (long it = 0; it < reps; it++) {
            for (int i = 0; i < LEN; i += 8) {
                __m256 x[3];
                for (int c = 0; c < 3; c++) {
                    x[c] = _mm256_load_ps(&a[c][i]);
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
        const double gmacs = (double)reps * LEN * 12 / (now() - t0) * 1e-9;
        if (gmacs > best) best = gmacs;
    }
    float lanes[8], sum = 0.0f;
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 3; c++) {
            _mm256_storeu_ps(lanes, s[r][c]);
            sum += lanes[0];
        }
    printf("4 x 3 tile over L1: %.1f GMAC/s (one thread, best of 5; checksum %g)\n", best, (double)sum);
    return 0;
}
