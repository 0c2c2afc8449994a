/* RMSNorm (Zhang & Sennrich 2019, arXiv:1910.07467), LayerNorm (Ba et al.
 * 2016, arXiv:1607.06450) and rotary position
 * embeddings (RoFormer, Su et al. 2021, arXiv:2104.09864) with ggml's
 * conventions (backend.h hl_rope_params). */
#define NORM_WG 64

/* y = x / sqrt(mean(x^2) + eps) * w over each run of d elements; one
 * work-group per run (global runs * NORM_WG, local NORM_WG); y may alias x */
kernel void rms_norm(global const uchar *xb, ulong x_off, global const uchar *wb, ulong w_off, global uchar *yb,
                     ulong y_off, long d, float eps) {
    local float part[NORM_WG];
    const int lid = (int)get_local_id(0);
    global const float *x = AT_C(float, xb, x_off) + get_group_id(0) * d;
    global const float *w = AT_C(float, wb, w_off);
    global float *y = AT(float, yb, y_off) + get_group_id(0) * d;
    float sum = 0.0f;
    for (long i = lid; i < d; i += NORM_WG) sum = fma(x[i], x[i], sum);
    part[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = NORM_WG / 2; s > 0; s >>= 1) {
        if (lid < s) part[lid] += part[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float scale = rsqrt(part[0] / (float)d + eps);
    for (long i = lid; i < d; i += NORM_WG) y[i] = x[i] * scale * w[i];
}

/* The sum of v over the work-group of NORM_WG items, in every item. */
float group_sum(float v, local float *part) {
    const int lid = (int)get_local_id(0);
    barrier(CLK_LOCAL_MEM_FENCE); /* part may still be read from an earlier call */
    part[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = NORM_WG / 2; s > 0; s >>= 1) {
        if (lid < s) part[lid] += part[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return part[0];
}

/* y = (x - mean) / sqrt(var + eps) * w + b over each row of d elements (no
 * b unless has_b), var the mean of the centred squares; one work-group per
 * row (global rows * NORM_WG, local NORM_WG); y may alias x */
kernel void layer_norm(global const uchar *xb, ulong x_off, global const uchar *wb, ulong w_off,
                       global const uchar *bb, ulong b_off, int has_b, global uchar *yb, ulong y_off, long d,
                       float eps) {
    local float part[NORM_WG];
    const int lid = (int)get_local_id(0);
    global const float *x = AT_C(float, xb, x_off) + get_group_id(0) * d;
    global const float *w = AT_C(float, wb, w_off);
    global const float *bias = AT_C(float, bb, b_off);
    global float *y = AT(float, yb, y_off) + get_group_id(0) * d;
    float sum = 0.0f;
    for (long i = lid; i < d; i += NORM_WG) sum += x[i];
    const float mean = group_sum(sum, part) / (float)d;
    float sq = 0.0f;
    for (long i = lid; i < d; i += NORM_WG) sq = fma(x[i] - mean, x[i] - mean, sq);
    const float scale = rsqrt(group_sum(sq, part) / (float)d + eps);
    for (long i = lid; i < d; i += NORM_WG) y[i] = (x[i] - mean) * scale * w[i] + (has_b ? bias[i] : 0.0f);
}

/* cos and sin of pair i at position p (backend.h hl_rope_params):
 * theta_extrap = p * theta_scale^i / ff[i] (theta_scale = base^(-2/n_rot)),
 * theta_interp = freq_scale * theta_extrap; with YaRN (ext_factor != 0) the
 * angle mixes them by ggml's ramp over the correction dims [lo, hi]; both
 * are multiplied by mscale (hl_rope_yarn_consts). */
float2 rope_cos_sin(float p, int i, float theta_scale, float freq_scale, global const float *ff, float lo, float hi,
                    float ext_factor, float mscale) {
    float extrap = p * pow(theta_scale, (float)i);
    if (ff) extrap /= ff[i];
    const float interp = freq_scale * extrap;
    float theta = interp;
    if (ext_factor != 0.0f) {
        const float mix = (1.0f - clamp(((float)i - lo) / fmax(0.001f, hi - lo), 0.0f, 1.0f)) * ext_factor;
        theta = interp * (1.0f - mix) + extrap * mix;
    }
    float c;
    const float s = sincos(theta, &c);
    return (float2)(c * mscale, s * mscale);
}

/* Pair i of a head (0 <= i < n_rot / 2) rotated by the angle of
 * rope_cos_sin; the pair is (x[2i], x[2i+1]) in NORMAL mode and (x[i], x[i +
 * n_rot/2]) in NEOX mode. One work-item per (token, head, pair); x F32
 * {n_head * hd, n} in place. */
kernel void rope(global uchar *xb, ulong x_off, int n_head, int hd, int n_rot, int neox, global const int *pos,
                 float theta_scale, float freq_scale, global const uchar *fb, ulong f_off, int has_ff, long n_pairs,
                 float lo, float hi, float ext_factor, float mscale) {
    const long idx = get_global_id(0);
    if (idx >= n_pairs) return;
    const int half_rot = n_rot / 2;
    const int i = (int)(idx % half_rot);
    const long head = idx / half_rot; /* token * n_head + h */
    const float2 cs = rope_cos_sin((float)pos[head / n_head], i, theta_scale, freq_scale,
                                   has_ff ? AT_C(float, fb, f_off) : 0, lo, hi, ext_factor, mscale);
    global float *v = AT(float, xb, x_off) + head * hd;
    const int i0 = neox ? i : 2 * i, i1 = neox ? i + half_rot : 2 * i + 1;
    const float a = v[i0], b = v[i1];
    v[i0] = a * cs.x - b * cs.y;
    v[i1] = a * cs.y + b * cs.x;
}

/* The K-shift (backend.h rope_shift): rows [row0, row0 + n) of an F16
 * cache {n_head * hd, n_ctx} rotated in place to position `delta`, in F32
 * and rounded back to nearest even. One work-item per (row, head, pair). */
kernel void rope_shift(global uchar *cb, ulong c_off, long row0, int n_head, int hd, int n_rot, int neox, int delta,
                       float theta_scale, float freq_scale, global const uchar *fb, ulong f_off, int has_ff,
                       long n_pairs, float lo, float hi, float ext_factor, float mscale) {
    const long idx = get_global_id(0);
    if (idx >= n_pairs) return;
    const int half_rot = n_rot / 2;
    const int i = (int)(idx % half_rot);
    const long head = idx / half_rot; /* row * n_head + h, from row0 */
    const float2 cs = rope_cos_sin((float)delta, i, theta_scale, freq_scale, has_ff ? AT_C(float, fb, f_off) : 0, lo,
                                   hi, ext_factor, mscale);
    global half *v = AT(half, cb, c_off) + (row0 * n_head + head) * hd;
    const int i0 = neox ? i : 2 * i, i1 = neox ? i + half_rot : 2 * i + 1;
    const float a = vload_half(i0, v), b = vload_half(i1, v);
    vstore_half_rte(a * cs.x - b * cs.y, i0, v);
    vstore_half_rte(a * cs.y + b * cs.x, i1, v);
}
