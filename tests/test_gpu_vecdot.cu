/* The block dot products of the GPU decode kernels (src/backend/cuda/
 * vecdot.cuh: weight blocks against Q8_1 activations with dp4a) and their
 * activation quantizer, run on the host (no GPU needed), for every quantized
 * weight type the kernels take. Weights are quantized by quant/'s reference
 * quantizers and dequantized by its reference dequantizers (bit-exact with
 * ggml); the dot products, summed over every chunk of every block as the
 * kernels split them, are compared in double with the dequantized weights
 * times the activations:
 * - activations that Q8_1 holds exactly (per block, a power-of-two scale
 *   times integers in [-127, 127] with one at +-127): only float rounding
 *   may differ, so the bound is tight (1e-5 of sum |w x|), and the quantizer
 *   must give back those integers, the scale and the exact sum;
 * - random activations: the 8-bit rounding of the activations adds error
 *   (4e-3 of sum |w x| bounds it), and the quantizer's error per element is
 *   at most half a step.
 * Built by nvcc whenever the build has CUDA (tests/CMakeLists.txt). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/vecdot.cuh"

#include "check.h"

#define N 1024 /* elements per row: 4 K-quant super-blocks, 32 blocks of 32 */

static uint64_t rng = 12345;
static double uniform(void) { return (double)(check_splitmix64(&rng) >> 11) * 0x1p-53; } /* [0, 1) */

/* The kernels' quantizer (matvec.cu's quantize_q8_1) per block of 32, with
 * the sum in the kernel's order: 8 groups of 4 summed as a tree. */
static void quantize_q8_1_host(const float *x, int8_t *qs, float2 *ds, int n) {
    for (int b = 0; b < n / 32; b++) {
        const float *xb = x + 32 * b;
        float amax = 0.0f, part[8];
        for (int g = 0; g < 8; g++) {
            const float *v = xb + 4 * g;
            part[g] = (v[0] + v[1]) + (v[2] + v[3]);
            for (int i = 0; i < 4; i++) amax = fmaxf(amax, fabsf(v[i]));
        }
        for (int o = 4; o > 0; o >>= 1)
            for (int g = 0; g < 8; g++)
                if (!(g & o)) part[g] += part[g | o];
        const float d = vd_q8_scale(amax);
        for (int i = 0; i < 32; i++) qs[32 * b + i] = vd_q8(xb[i], d);
        ds[b].x = d;
        ds[b].y = part[0];
    }
}

/* Sum over blocks and chunks of vq<T>::dot, as the kernels split a row. */
template <uint32_t T> static double row_dot(const uint8_t *w, const int8_t *qs, const float2 *ds, int n) {
    using V = vq<T>;
    double sum = 0.0;
    for (int b = 0; b < n / V::qk; b++) {
        float block = 0.0f;
        for (int c = 0; c < V::nc; c++)
            block += V::dot(w + (size_t)b * sizeof(typename V::block), c, qs + b * V::qk, ds + b * (V::qk / 32));
        sum += block;
    }
    return sum;
}

namespace {
struct check_type {
    template <uint32_t T>
    static void run(const float *wx, uint8_t *wq, float *wf, const float *x_exact, const int8_t *q_exact, float d_exact,
                    const float *x_rand) {
        const char *name = hl_ggml_type_get(T)->name;
        const hl_quant_traits *tr = hl_quant_get(T);
        tr->from_float(wx, wq, N);
        tr->to_float(wq, wf, N);
        static int8_t qs[N];
        static float2 ds[N / 32];

        /* exactly representable activations */
        quantize_q8_1_host(x_exact, qs, ds, N);
        int bad = 0;
        for (int i = 0; i < N; i++) bad += qs[i] != q_exact[i];
        for (int b = 0; b < N / 32; b++) {
            double s = 0.0;
            for (int i = 0; i < 32; i++) s += x_exact[32 * b + i];
            bad += ds[b].x != d_exact || (double)ds[b].y != s;
        }
        CHECK_MSG(bad == 0, "%s: the quantizer changed %d exact activations, scales or sums", name, bad);
        double ref = 0.0, mag = 0.0;
        for (int i = 0; i < N; i++) {
            ref += (double)wf[i] * x_exact[i];
            mag += fabs((double)wf[i] * x_exact[i]);
        }
        double got = row_dot<T>(wq, qs, ds, N);
        CHECK_MSG(fabs(got - ref) <= 1e-5 * mag, "%s exact: %.9g, want %.9g (sum |w x| %.6g)", name, got, ref, mag);

        /* random activations */
        quantize_q8_1_host(x_rand, qs, ds, N);
        bad = 0;
        for (int i = 0; i < N; i++) bad += !(fabsf(x_rand[i] - ds[i / 32].x * qs[i]) <= 0.5001f * ds[i / 32].x);
        CHECK_MSG(bad == 0, "%s: %d activations quantized off by more than half a step", name, bad);
        ref = mag = 0.0;
        for (int i = 0; i < N; i++) {
            ref += (double)wf[i] * x_rand[i];
            mag += fabs((double)wf[i] * x_rand[i]);
        }
        got = row_dot<T>(wq, qs, ds, N);
        CHECK_MSG(fabs(got - ref) <= 4e-3 * mag, "%s random: %.9g, want %.9g (sum |w x| %.6g)", name, got, ref, mag);
        printf("%-5s exact and random activations: relative error %.2e of sum |w x|\n", name, fabs(got - ref) / mag);
    }
};
} // namespace

int main(void) {
    static float wx[N], wf[N], x_exact[N], x_rand[N];
    static int8_t q_exact[N];
    static uint8_t wq[N * 2];
    const float d_exact = 0x1p-6f;
    for (int i = 0; i < N; i++) {
        /* weights with an offset and outliers, so that mins and scales matter */
        wx[i] = (float)(uniform() * 6.0 - 2.5) * (i % 97 == 0 ? 8.0f : 1.0f);
        q_exact[i] = (int8_t)(i % 32 == 5 ? (uniform() < 0.5 ? -127 : 127) : (int)(uniform() * 255.0) - 127);
        x_exact[i] = d_exact * q_exact[i];
        x_rand[i] = (float)(uniform() * 8.0 - 3.0) * (i % 61 == 0 ? 5.0f : 1.0f);
    }
    static const uint32_t types[] = {GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q8_0,
                                     GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        CHECK(dispatch_vq<check_type>(types[t], wx, wq, wf, x_exact, q_exact, d_exact, x_rand));
    CHECK(!dispatch_vq<check_type>(GGML_TYPE_F16, wx, wq, wf, x_exact, q_exact, d_exact, x_rand));
    return check_report();
}
