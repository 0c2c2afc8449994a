/* The scale searches behind the K-quant reference quantizers (quant_k.c),
 * after llama.cpp's make_qx_quants, make_q3_quants and make_qkx2_quants in
 * ggml/src/ggml-quants.c: given a sub-block of n floats, each picks a scale
 * (and for the asymmetric types a min) and the integer levels L that minimize
 * a weighted squared or absolute error. Sub-blocks hold n <= 32 elements.
 * Internal to src/quant. */
#ifndef HEARTH_QUANT_K_SEARCH_H
#define HEARTH_QUANT_K_SEARCH_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Below this magnitude a sub-block counts as all zero (ggml's GROUP_MAX_EPS). */
#define HL_GROUP_MAX_EPS 1e-15f

/* x rounded to the nearest integer, ties to even, for |x| <= 2^22 - 1 (ggml's
 * nearest_int): adding 1.5 * 2^23 puts the rounded value in the low mantissa
 * bits, offset by 2^22. Outside that range the result is ggml's too. */
static inline int hl_nearest_int(float x) {
    const float v = x + 12582912.0f;
    int32_t i;
    memcpy(&i, &v, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

/* Symmetric levels with signed scale: x[i] ~ scale * (L[i] - nmax), L[i] in
 * 0 .. 2*nmax - 1, weights x[i]^2 (make_qx_quants with rmse_type 1, no
 * importance). Returns scale; 0 (and L = 0) for an all-zero sub-block. */
float hl_make_qx_quants(int n, int nmax, const float *x, int8_t *L);

/* As hl_make_qx_quants, refined by moving single levels while the weighted
 * error drops (make_q3_quants with do_rmse). */
float hl_make_q3_quants(int n, int nmax, const float *x, int8_t *L);

/* The grid of make_qkx2_quants: it tries iscale = (nmax + rmin + rdelta*k) /
 * (max - min) for k = 0 .. nstep; use_mad picks |error| over error^2. */
typedef struct hl_qkx2_grid {
    float rmin, rdelta;
    int nstep;
    bool use_mad;
} hl_qkx2_grid;

/* Asymmetric levels: x[i] ~ scale * L[i] - *the_min, L[i] in 0 .. nmax,
 * *the_min >= 0, weighted by w[i]; the best of a least-squares fit at each
 * grid point and the plain min/max fit. Returns scale. */
float hl_make_qkx2_quants(int n, int nmax, const float *x, const float *w, uint8_t *L, float *the_min,
                          const hl_qkx2_grid *grid);

#endif
