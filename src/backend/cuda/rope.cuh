// The rotary embedding's arithmetic shared by rope.cu's kernels, on the
// host too (tests/test_gpu_rope.cu checks that rope_store's per-element
// rope of K equals the per-pair rope of Q): the numbers of a launch, the
// angle of a pair (backend.h hl_rope_params, YaRN included), the rotation,
// a pair rotated in place, and one element of a row rotated from the row's
// values.
#pragma once

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

extern "C" {
#include "backend/backend.h"
}

// What every launch of the two kernels shares.
struct rope_args {
    int n_head, hd, n_rot;
    bool neox;
    float theta_scale, freq_scale, ext_factor, corr0, corr1, mscale;
    const float *ff; // [n_rot / 2] or NULL
};

// The numbers of a rope of heads of hd elements, n_head of them in a row
// (hl_rope_yarn_consts); ff the frequency factors in the kernel's memory.
static inline rope_args rope_args_of(const hl_rope_params *p, int n_head, int hd, const float *ff) {
    const hl_rope_consts k = hl_rope_yarn_consts(p);
    rope_args a;
    a.n_head = n_head;
    a.hd = hd;
    a.n_rot = p->n_rot;
    a.neox = p->mode == HL_ROPE_NEOX;
    a.theta_scale = k.theta_scale;
    a.freq_scale = p->freq_scale;
    a.ext_factor = p->ext_factor;
    a.corr0 = k.corr[0];
    a.corr1 = k.corr[1];
    a.mscale = k.mscale;
    a.ff = ff;
    return a;
}

// cos (.x) and sin (.y) of pair i at position p.
static __host__ __device__ float2 rope_cos_sin(const rope_args &a, float p, int i) {
    float extrap = p * powf(a.theta_scale, (float)i);
    if (a.ff) extrap /= a.ff[i];
    const float interp = a.freq_scale * extrap;
    float theta = interp;
    if (a.ext_factor != 0.0f) {
        const float y = ((float)i - a.corr0) / fmaxf(0.001f, a.corr1 - a.corr0);
        const float mix = (1.0f - fminf(1.0f, fmaxf(0.0f, y))) * a.ext_factor;
        theta = interp * (1.0f - mix) + extrap * mix;
    }
    float s, c;
    sincosf(theta, &s, &c);
    return make_float2(c * a.mscale, s * a.mscale);
}

// Pair (x0, x1) turned by the angle whose cos and sin are cs.
static __host__ __device__ __forceinline__ float2 rope_rotate(float x0, float x1, float2 cs) {
    return make_float2(x0 * cs.x - x1 * cs.y, x0 * cs.y + x1 * cs.x);
}

// Pair idx (over tokens, heads, pairs) of x F32 {n_head * hd, n}, in place.
static __host__ __device__ __forceinline__ void rope_pair(float *x, const rope_args &a, const int32_t *pos,
                                                          int64_t idx) {
    const int half = a.n_rot / 2;
    const int i = (int)(idx % half);
    const int64_t head = idx / half; // token * n_head + h
    const float2 cs = rope_cos_sin(a, (float)pos[head / a.n_head], i);
    float *v = x + head * a.hd;
    const int i0 = a.neox ? i : 2 * i, i1 = a.neox ? i + half : 2 * i + 1;
    const float2 r = rope_rotate(v[i0], v[i1], cs);
    v[i0] = r.x;
    v[i1] = r.y;
}

// Element j of a row of heads (hd each) roped to position p, from the
// row's values before the rope (its pair's other element read too).
static __host__ __device__ __forceinline__ float roped(const float *row, const rope_args &a, float p, int64_t j) {
    const int half = a.n_rot / 2;
    const float *head = row + j / a.hd * a.hd;
    const int e = (int)(j % a.hd);
    if (e >= a.n_rot) return head[e];
    const int i = a.neox ? e % half : e / 2;
    const int i0 = a.neox ? i : 2 * i, i1 = a.neox ? i + half : 2 * i + 1;
    const float2 r = rope_rotate(head[i0], head[i1], rope_cos_sin(a, p, i));
    return e == i0 ? r.x : r.y;
}
