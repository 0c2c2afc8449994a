/* The clock of the bench/ programs: seconds on CLOCK_MONOTONIC; and their
 * timings sorted in place (for medians and bests). */
#ifndef HEARTH_BENCH_TIME_H
#define HEARTH_BENCH_TIME_H

#include <stdlib.h>
#include <time.h>

static inline double bench_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static inline void bench_sort(double *v, size_t n) { qsort(v, n, sizeof *v, bench_cmp_double); }

#endif
