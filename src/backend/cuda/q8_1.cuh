// The Q8_1 form of decode activations (vecdot.cuh's layout: int8 quants, and
// per block of 32 the scale d = max|x| / 127 and the float sum s) in the
// instance's x16 scratch, which the quantized matvecs read (matvec.cu).
// Written by matvec.cu's own quantize kernel, or, to save that launch, by
// the op that produced the activations (rms_norm, swiglu, geglu: a decode
// step's norms feed Q, K, V and gate/up, its GLU feeds down) in the same
// pass that writes their F32 values. Either way the bits are the same: the
// same function quantizes the same floats.
#pragma once

#include "backend/cuda/common.cuh"
#include "backend/cuda/vecdot.cuh"

// Where the Q8_1 form of n rows of d elements lives in x16: n * d quants,
// then the (d, s) pairs, 16-byte aligned (1.25 bytes an element; x16 holds 2).
struct q8_1_view {
    int8_t *qs;
    float2 *ds;
};

static inline q8_1_view cuda_q8_1_view(const hl_cuda *cu, int64_t d, int64_t n) {
    int8_t *qs = (int8_t *)cu->x16;
    return {qs, (float2 *)(qs + ((n * d + 15) & ~(int64_t)15))};
}

// Whether x16 can hold the Q8_1 form of n rows of d elements: rows of whole
// blocks, within what the scratch was sized for.
static inline bool cuda_q8_1_fits(const hl_cuda *cu, int64_t d, int64_t n) {
    return d % 32 == 0 && d <= cu->limits.max_row && n <= cu->limits.max_tokens;
}

// Whether an op producing y {d, n} F32 should write y's Q8_1 form too: when
// one matvec launch (up to HL_CUDA_MMV_MAX tokens) may read it next and it
// fits.
// The form is wasted when the next op is not a quantized matvec of y (the
// matvec quantizes again then): 1.25 bytes an element of a decode row.
static inline bool cuda_q8_1_wanted(const hl_cuda *cu, int64_t d, int64_t n) {
    return !cu->unfused && n <= HL_CUDA_MMV_MAX && cuda_q8_1_fits(cu, d, n);
}

// Records that x16 holds the Q8_1 form of x {d, n}, written by the current
// op (hl_cuda.q8_op): the next op, if it is a matvec of x, takes it as is.
static inline void cuda_q8_1_mark(hl_cuda *cu, const void *x, int64_t d, int64_t n) {
    cu->q8_x = x, cu->q8_d = d, cu->q8_n = n;
    cu->q8_op = cu->op_count;
}

// Quantizes elements 4i..4i+3 (v0..v3) of activations whose rows are whole
// blocks of 32, from the thread holding them: the 8 threads of a block must
// be lanes 8k..8k+7 of one warp (i % 8 the lane's place among them) and
// call this together, as their shuffles pair them. Writes the 4 quants at
// q.qs + 4i and, from the block's first thread, (d, s) at q.ds[i / 8].
__device__ __forceinline__ void q8_1_put4(float v0, float v1, float v2, float v3, int64_t i, q8_1_view q) {
    float amax = fmaxf(fmaxf(fabsf(v0), fabsf(v1)), fmaxf(fabsf(v2), fabsf(v3)));
    float sum = (v0 + v1) + (v2 + v3);
    const unsigned group = 0xffu << (threadIdx.x % 32 / 8 * 8);
#pragma unroll
    for (int o = 4; o > 0; o >>= 1) {
        amax = fmaxf(amax, __shfl_xor_sync(group, amax, o));
        sum += __shfl_xor_sync(group, sum, o);
    }
    const float d = vd_q8_scale(amax);
    char4 c;
    c.x = vd_q8(v0, d);
    c.y = vd_q8(v1, d);
    c.z = vd_q8(v2, d);
    c.w = vd_q8(v3, d);
    *(char4 *)(q.qs + 4 * i) = c;
    if (i % 8 == 0) q.ds[i / 8] = make_float2(d, sum);
}
