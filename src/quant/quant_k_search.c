/* Scale searches of the K-quant reference quantizers; see quant_k_search.h.
 * They repeat the arithmetic of ggml-quants.c step for step (same order of
 * float operations, same comparisons, same tie-breaking), because a different
 * rounding anywhere changes which candidate wins, and the bytes then differ
 * from llama.cpp's. As everywhere in src/quant: no FMA contraction, no
 * -ffast-math. */
#include <math.h>

#include "quant/quant_k_search.h"

static int clamp_int(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The signed element of largest magnitude (the first one on ties). */
static float signed_absmax(int n, const float *x) {
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < n; i++) {
        if (fabsf(x[i]) > amax) {
            amax = fabsf(x[i]);
            max = x[i];
        }
    }
    return max;
}

/* Levels l[i] = clamp(round(iscale * x[i]), -nmax, nmax - 1) with the sums
 * of the weighted least-squares scale sumlx/suml2, w[i] = x[i]^2:
 * sumlx = sum w*x*l, suml2 = sum w*l*l. */
static void qx_levels(int n, int nmax, const float *x, float iscale, int8_t *l, float *sumlx, float *suml2) {
    float slx = 0.0f, sl2 = 0.0f;
    for (int i = 0; i < n; i++) {
        const int li = clamp_int(hl_nearest_int(iscale * x[i]), -nmax, nmax - 1);
        const float w = x[i] * x[i];
        l[i] = (int8_t)li;
        slx += w * x[i] * (float)li;
        sl2 += w * (float)li * (float)li;
    }
    *sumlx = slx;
    *suml2 = sl2;
}

/* Starts from iscale = -nmax/max and tries -(nmax + 0.1*k)/max for k = -9 .. 9;
 * a candidate wins when its least-squares error is lower, which for the
 * scale sumlx/suml2 means sumlx^2/suml2 is larger. */
float hl_make_qx_quants(int n, int nmax, const float *x, int8_t *L) {
    const float max = signed_absmax(n, x);
    if (fabsf(max) < HL_GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    int8_t cand[32];
    float sumlx, suml2;
    qx_levels(n, nmax, x, (float)-nmax / max, L, &sumlx, &suml2);
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int k = -9; k <= 9; k++) {
        if (k == 0) continue;
        qx_levels(n, nmax, x, -((float)nmax + 0.1f * (float)k) / max, cand, &sumlx, &suml2);
        if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
            memcpy(L, cand, (size_t)n);
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    for (int i = 0; i < n; i++) L[i] = (int8_t)(L[i] + nmax);
    return scale;
}

/* One pass of the refinement: for each element, the level that is best for
 * it given the others' fit, new_l = round(x * sl2 / slx) over the sums
 * without it, kept when it raises sumlx^2/suml2. Returns the levels changed. */
static int q3_refine(int n, int nmax, const float *x, int8_t *L, float *sumlx, float *suml2) {
    int changed = 0;
    for (int i = 0; i < n; i++) {
        const float w = x[i] * x[i];
        float slx = *sumlx - w * x[i] * (float)L[i];
        if (!(slx > 0.0f)) continue;
        float sl2 = *suml2 - w * (float)L[i] * (float)L[i];
        const int new_l = clamp_int(hl_nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
        if (new_l == L[i]) continue;
        slx += w * x[i] * (float)new_l;
        sl2 += w * (float)new_l * (float)new_l;
        if (sl2 > 0.0f && slx * slx * *suml2 > *sumlx * *sumlx * sl2) {
            L[i] = (int8_t)new_l;
            *sumlx = slx;
            *suml2 = sl2;
            changed++;
        }
    }
    return changed;
}

float hl_make_q3_quants(int n, int nmax, const float *x, int8_t *L) {
    const float max = signed_absmax(n, x);
    if (fabsf(max) < HL_GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float sumlx, suml2;
    qx_levels(n, nmax, x, (float)-nmax / max, L, &sumlx, &suml2);
    for (int pass = 0; pass < 5; pass++) {
        if (q3_refine(n, nmax, x, L, &sumlx, &suml2) == 0) break;
    }
    for (int i = 0; i < n; i++) L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* sum w[i] * e(scale*L[i] + min - x[i]), e = |.| or square. */
static float qkx2_error(int n, const float *x, const float *w, const uint8_t *L, float scale, float min, bool use_mad) {
    float err = 0.0f;
    for (int i = 0; i < n; i++) {
        const float diff = scale * (float)L[i] + min - x[i];
        err += w[i] * (use_mad ? fabsf(diff) : diff * diff);
    }
    return err;
}

/* Levels clamp(round(iscale * (x[i] - min)), 0, nmax) and their weighted
 * sums: sums[0] = sum w*l, sums[1] = sum w*l*l, sums[2] = sum w*l*x. */
static void qkx2_levels(int n, int nmax, const float *x, const float *w, float iscale, float min, uint8_t *L,
                        float sums[3]) {
    float sl = 0.0f, sl2 = 0.0f, sxl = 0.0f;
    for (int i = 0; i < n; i++) {
        const int l = clamp_int(hl_nearest_int(iscale * (x[i] - min)), 0, nmax);
        L[i] = (uint8_t)l;
        sl += w[i] * (float)l;
        sl2 += w[i] * (float)l * (float)l;
        sxl += w[i] * (float)l * x[i];
    }
    sums[0] = sl;
    sums[1] = sl2;
    sums[2] = sxl;
}

/* min <= 0 always (a positive min is replaced by 0), so the_min = -min >= 0.
 * At each grid point the levels are fixed and (scale, min) solve the weighted
 * least-squares problem, D = sum_w*sum_l2 - sum_l^2; a positive min falls
 * back to min = 0, scale = sum_xl/sum_l2. The lowest error wins; the first on
 * ties. */
float hl_make_qkx2_quants(int n, int nmax, const float *x, const float *w, uint8_t *L, float *the_min,
                          const hl_qkx2_grid *grid) {
    float min = x[0], max = x[0], sum_w = w[0], sum_x = w[0] * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0.0f) min = 0.0f;
    if (max == min) {
        memset(L, 0, (size_t)n);
        *the_min = -min;
        return 0.0f;
    }
    float iscale = (float)nmax / (max - min), scale = 1.0f / iscale, sums[3];
    qkx2_levels(n, nmax, x, w, iscale, min, L, sums);
    float best = qkx2_error(n, x, w, L, scale, min, grid->use_mad);
    uint8_t cand[32];
    for (int k = 0; k <= grid->nstep; k++) {
        iscale = (grid->rmin + grid->rdelta * (float)k + (float)nmax) / (max - min);
        qkx2_levels(n, nmax, x, w, iscale, min, cand, sums);
        const float D = sum_w * sums[1] - sums[0] * sums[0];
        if (!(D > 0.0f)) continue;
        float this_scale = (sum_w * sums[2] - sum_x * sums[0]) / D;
        float this_min = (sums[1] * sum_x - sums[0] * sums[2]) / D;
        if (this_min > 0.0f) {
            this_min = 0.0f;
            this_scale = sums[2] / sums[1];
        }
        const float err = qkx2_error(n, x, w, cand, this_scale, this_min, grid->use_mad);
        if (err < best) {
            memcpy(L, cand, (size_t)n);
            best = err;
            scale = this_scale;
            min = this_min;
        }
    }
    *the_min = -min;
    return scale;
}
