/* The rotation of one head by rope (ops.c), one text for the scalar and
 * the AVX2 row-kernel tables (row_kernels.h): compiled with -mfma in
 * row_kernels_avx2.c, fmaf is one instruction instead of a call into libm
 * (bench/results/2026-11-29-avx2-zen3-q8_0-order-cpu.md has the profile);
 * both are exactly rounded, so the two tables give the same bits. */
#ifndef HEARTH_BACKEND_CPU_ROPE_ROTATE_H
#define HEARTH_BACKEND_CPU_ROPE_ROTATE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* Rotates the n_rot first dimensions of one head: pair i is (v[2i],
 * v[2i+1]) in normal mode, (v[i], v[i + n_rot/2]) in NEOX mode (ggml-cpu
 * ops.cpp rotate_pairs), by the angle whose cos and sin are cos_sin[2i],
 * cos_sin[2i+1]. ggml writes x0*c - x1*s and x0*s + x1*c; compiled as GNU
 * C++ with FMA, GCC contracts each into one FMA around the second product,
 * and llama.cpp's results are those roundings. */
static inline void hl_rope_rotate(float *v, int32_t n_rot, bool neox, const float *cos_sin) {
    const int32_t second = neox ? n_rot / 2 : 1;
    for (int32_t i = 0; i < n_rot / 2; i++) {
        float *pair = v + (neox ? i : 2 * i);
        const float c = cos_sin[2 * i], s = cos_sin[2 * i + 1];
        const float x0 = pair[0], x1 = pair[second];
        pair[0] = fmaf(x0, c, -(x1 * s));
        pair[second] = fmaf(x0, s, x1 * c);
    }
}

#endif
