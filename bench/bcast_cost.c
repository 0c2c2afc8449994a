/* What an activation broadcast costs the int16 panel kernels
 * (vec_dot_avx2.c, halves_lanes): a group there is x, an int16 pair of the
 * activations made into a vector, then two pmaddwd of x with weight vectors
 * read from L1 and a paddd each. This times eight independent groups per
 * step with x broadcast from memory (vpbroadcastd, as the kernel does) and
 * with x loaded whole (vmovdqu), one thread, all in L1; prints ns per group
 * and the ratio. Zen 3, 2026-11-28: 0.79-0.82 ns both ways (1.00-1.02x),
 * so the broadcast itself costs no more than a whole load there. (Not the
 * pmaddwd alone either, as this comment said at first: on 2026-11-29
 * vpmaddwd, vpmaddubsw and vfmadd231ps each issued two a cycle on their
 * own, and any mix of them two a cycle in all: they share two pipes.)
 * Build: cc -O2 -mavx2 bench/bcast_cost.c -o build/bcast_cost
 * Usage: taskset -c CPU build/bcast_cost */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>

#include "bench_time.h"

static int16_t weights[8 * 32] __attribute__((aligned(64)));
static int32_t acts[8 * 8] __attribute__((aligned(64)));

#define STEPS 20000000L

/* Best of 5 timings of STEPS steps of 8 groups, in ns per group; x
 * broadcast from acts[i] (broadcast != 0) or loaded from acts + 8 i. */
static double time_groups(int broadcast, __m256i sums[8]) {
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        const int16_t *w = weights;
        const int32_t *a = acts;
        const double t0 = bench_now();
        for (long k = 0; k < STEPS; k++) {
            __asm__ volatile("" : "+r"(w), "+r"(a)); /* reload every step: nothing hoisted */
            for (int i = 0; i < 8; i++) {
                const __m256i x = broadcast ? _mm256_set1_epi32(a[i]) : _mm256_load_si256((const __m256i *)(a + 8 * i));
                const __m256i p0 = _mm256_madd_epi16(_mm256_load_si256((const __m256i *)(w + 32 * i)), x);
                const __m256i p1 = _mm256_madd_epi16(_mm256_load_si256((const __m256i *)(w + 32 * i + 16)), x);
                sums[i] = _mm256_add_epi32(sums[i], _mm256_add_epi32(p0, p1));
            }
        }
        const double ns = (bench_now() - t0) / ((double)STEPS * 8) * 1e9;
        if (ns < best) best = ns;
    }
    return best;
}

int main(void) {
    for (int i = 0; i < 8 * 32; i++) weights[i] = (int16_t)(i % 7 - 3);
    for (int i = 0; i < 8 * 8; i++) acts[i] = i * 65537;
    __m256i sums[8];
    for (int i = 0; i < 8; i++) sums[i] = _mm256_setzero_si256();
    const double loaded = time_groups(0, sums), broadcast = time_groups(1, sums);
    __m256i s = sums[0];
    for (int i = 1; i < 8; i++) s = _mm256_add_epi32(s, sums[i]);
    printf("x + 2 pmaddwd + 2 paddd: %.3f ns a group with x loaded whole, %.3f with x broadcast (%.2fx; checksum %d)\n",
           loaded, broadcast, broadcast / loaded, _mm256_extract_epi32(s, 0));
    return 0;
}
