/* Tests of the CPU row kernels (src/backend/cpu/row_kernels.h): every SIMD
 * level against the scalar oracle within float rounding (ggml's polynomial
 * exp is within 2 ulp of expf), on random rows of awkward lengths, plus the
 * edge cases llama.cpp's arithmetic defines: masked (-inf) scores, partial
 * 16-lane chunks, exp of large negative arguments; rope's rotation and the
 * tiled attention's query load (flash_kernels.h) bit for bit. Bit-for-bit agreement with
 * llama.cpp itself is tested end to end by test_greedy_reference. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/row_kernels.h"
#include "backend/cpu/flash_kernels.h"
#include "check.h"

static uint64_t rng_state = 0x2545f4914f6cdd1du;

static uint64_t rng_u64(void) { return check_splitmix64(&rng_state); }

/* Uniform in [lo, hi). */
static float rng_range(float lo, float hi) { return lo + (hi - lo) * (float)((double)(rng_u64() >> 11) * 0x1p-53); }

static int64_t rng_between(int64_t lo, int64_t hi) { return lo + (int64_t)(rng_u64() % (uint64_t)(hi - lo + 1)); }

/* |got - want| <= rel * |want| + abs */
static bool near(double got, double want, double rel, double abs) { return fabs(got - want) <= rel * fabs(want) + abs; }

#define N_MAX 1100
#define HD_MAX 136

static void test_swiglu(const hl_cpu_kernels *k, const char *level) {
    const hl_cpu_kernels *ref = &hl_cpu_kernels_scalar;
    static float x[N_MAX], g[N_MAX], y[N_MAX], want[N_MAX];
    for (int iter = 0; iter < 40; iter++) {
        const int64_t n = iter < 4 ? 16 * (iter + 1) : rng_between(1, N_MAX); /* whole chunks, then tails */
        for (int64_t i = 0; i < n; i++) {
            x[i] = iter % 5 == 4 ? rng_range(-120.0f, 120.0f) : rng_range(-8.0f, 8.0f);
            g[i] = rng_range(-4.0f, 4.0f);
        }
        ref->swiglu(n, want, x, g);
        k->swiglu(n, y, x, g);
        int bad = 0;
        for (int64_t i = 0; i < n; i++) bad += !near(y[i], want[i], 8 * FLT_EPSILON, 1e-37);
        CHECK_MSG(bad == 0, "%s swiglu n %lld: %d values off", level, (long long)n, bad);
        k->swiglu(n, x, x, g); /* in place */
        CHECK_MSG(memcmp(x, y, (size_t)n * sizeof *x) == 0, "%s swiglu in place n %lld", level, (long long)n);
    }
}

/* GELU by its F16 table: every level gives the scalar kernel's bits, for
 * every finite binary16 value, values between them (the rounding to F16
 * that picks the entry, ties included), the -10 and 10 ends, and tails.
 * The table here is any 65536 values: the kernels only index it. */
static void test_gelu(const hl_cpu_kernels *k, const char *level) {
    const hl_cpu_kernels *ref = &hl_cpu_kernels_scalar;
    static hl_half table[1 << 16];
    static float x[1 << 17], want[1 << 17];
    for (uint32_t i = 0; i < (1u << 16); i++) table[i] = (hl_half)(rng_u64() & 0x7bff); /* finite */
    int64_t n = 0;
    for (uint32_t h = 0; h < (1u << 16); h++) {
        const float v = hl_fp16_to_fp32((hl_half)h);
        if (!isfinite(v)) continue;
        x[n++] = v;
        x[n++] = nextafterf(v, INFINITY); /* just above: rounds to h or its neighbour */
    }
    const float ends[] = {-10.0f, 10.0f, nextafterf(-10.0f, 0), nextafterf(10.0f, 0), -1e30f, 1e30f, 0.0f, -0.0f};
    for (size_t i = 0; i < sizeof ends / sizeof *ends; i++) x[n++] = ends[i];
    for (int64_t m = n; n < m + 4000;) x[n++] = rng_range(-12.0f, 12.0f);
    memcpy(want, x, (size_t)n * sizeof *x);
    ref->gelu(n, want, table);
    for (int64_t len = n; len > n - 9; len--) { /* tails of every length mod 8 */
        static float y[1 << 17];
        memcpy(y, x, (size_t)len * sizeof *x);
        k->gelu(len, y, table);
        CHECK_MSG(memcmp(y, want, (size_t)len * sizeof *y) == 0, "%s gelu n %lld differs from the scalar kernel", level,
                  (long long)len);
    }
}

static void test_softmax_exp(const hl_cpu_kernels *k, const char *level) {
    const hl_cpu_kernels *ref = &hl_cpu_kernels_scalar;
    static float s[N_MAX], want[N_MAX];
    for (int iter = 0; iter < 40; iter++) {
        const int64_t n = rng_between(1, N_MAX);
        float max = -INFINITY;
        for (int64_t i = 0; i < n; i++) {
            s[i] = rng_u64() % 8 == 0 ? -INFINITY : rng_range(-30.0f, 10.0f); /* some masked */
            max = s[i] > max ? s[i] : max;
        }
        if (max == -INFINITY) s[0] = max = 0.0f;
        memcpy(want, s, (size_t)n * sizeof *s);
        const double sum_want = ref->softmax_exp(n, want, max);
        const double sum = k->softmax_exp(n, s, max);
        CHECK_MSG(near(sum, sum_want, 1e-6, 0.0), "%s softmax sum n %lld: %.9g, scalar %.9g", level, (long long)n, sum,
                  sum_want);
        int bad = 0;
        for (int64_t i = 0; i < n; i++) {
            bad += !near(s[i], want[i], 4 * FLT_EPSILON, 1e-38) || (want[i] == 0) != (s[i] == 0);
        }
        CHECK_MSG(bad == 0, "%s softmax exp n %lld: %d values off", level, (long long)n, bad);
    }
    /* far below the maximum: ggml's exp gives 0 or a subnormal, never more */
    float far[3] = {-150.0f, -110.0f, -1e30f};
    k->softmax_exp(3, far, 0.0f);
    CHECK_MSG(far[0] == 0.0f && far[1] < 1e-45f && far[1] >= 0.0f && far[2] == 0.0f, "%s exp far: %g %g %g", level,
              far[0], far[1], far[2]);
}

static void fill_halves(hl_half *h, int64_t n, float lo, float hi) {
    for (int64_t i = 0; i < n; i++) h[i] = hl_fp32_to_fp16(rng_range(lo, hi));
}

static void test_dot_f16(const hl_cpu_kernels *k, const char *level) {
    const hl_cpu_kernels *ref = &hl_cpu_kernels_scalar;
    static hl_half x[N_MAX], y[N_MAX];
    for (int iter = 0; iter < 60; iter++) {
        const hl_attn_order order = iter % 2 ? HL_ATTN_TINYBLAS : HL_ATTN_VEC_DOT;
        int64_t n = rng_between(1, N_MAX);
        if (order == HL_ATTN_TINYBLAS) n = n < 16 ? 16 : n / 16 * 16;
        fill_halves(x, n, -2.0f, 2.0f);
        fill_halves(y, n, -2.0f, 2.0f);
        double mag = 0.0;
        for (int64_t i = 0; i < n; i++) mag += fabs((double)hl_fp16_to_fp32(x[i]) * hl_fp16_to_fp32(y[i]));
        const float want = ref->dot_f16(n, x, y, order), got = k->dot_f16(n, x, y, order);
        CHECK_MSG(near(got, want, 0.0, (double)(n / 16 + 8) * FLT_EPSILON * mag + 1e-30),
                  "%s dot_f16 order %d n %lld: %.9g, scalar %.9g", level, (int)order, (long long)n, got, want);
    }
}

static void test_pv(const hl_cpu_kernels *k, const char *level) {
    const hl_cpu_kernels *ref = &hl_cpu_kernels_scalar;
    static hl_half p[N_MAX], v[N_MAX * HD_MAX];
    static float out[HD_MAX], want[HD_MAX];
    for (int iter = 0; iter < 40; iter++) {
        const hl_attn_order order = iter % 2 ? HL_ATTN_TINYBLAS : HL_ATTN_VEC_DOT;
        const int64_t n = rng_between(1, N_MAX);
        const int32_t hd = iter < 8 ? 64 : (int32_t)rng_between(1, HD_MAX - 8);
        const size_t stride = (size_t)(hd + 8) * sizeof(hl_half); /* rows apart, as in a cache of several heads */
        fill_halves(p, n, 0.0f, 1.0f);
        fill_halves(v, n * (hd + 8), -3.0f, 3.0f);
        ref->pv(n, p, v, stride, hd, want, order);
        k->pv(n, p, v, stride, hd, out, order);
        int bad = 0;
        for (int32_t d = 0; d < hd; d++) {
            double mag = 0.0;
            for (int64_t j = 0; j < n; j++) {
                mag += fabs((double)hl_fp16_to_fp32(p[j]) * hl_fp16_to_fp32(v[j * (hd + 8) + d]));
            }
            bad += !near(out[d], want[d], 0.0, (double)(n / 16 + 8) * FLT_EPSILON * mag + 1e-30);
        }
        CHECK_MSG(bad == 0, "%s pv order %d n %lld hd %d: %d dimensions off", level, (int)order, (long long)n, hd, bad);
    }
}

/* rope_rotate: the same bits at every level (an exact fmaf either way), on
 * heads of 64 and 128 with partial rotations, both pairings. */
static void test_rope_rotate(const hl_cpu_kernels *k, const char *level) {
    const hl_cpu_kernels *ref = &hl_cpu_kernels_scalar;
    static const int32_t shapes[][2] = {{64, 64}, {64, 32}, {128, 128}, {128, 64}, {80, 80}, {96, 24}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const int32_t hd = shapes[i][0], n_rot = shapes[i][1];
        for (int neox = 0; neox < 2; neox++) {
            float v[128], want[128], cos_sin[128];
            for (int32_t d = 0; d < hd; d++) v[d] = want[d] = rng_range(-30.0f, 30.0f);
            for (int32_t j = 0; j < n_rot / 2; j++) {
                const float a = rng_range(-100.0f, 100.0f);
                cos_sin[2 * j] = cosf(a), cos_sin[2 * j + 1] = sinf(a);
            }
            ref->rope_rotate(want, n_rot, neox, cos_sin);
            k->rope_rotate(v, n_rot, neox, cos_sin);
            CHECK_MSG(memcmp(v, want, (size_t)hd * sizeof *v) == 0, "%s rope_rotate hd %d n_rot %d neox %d", level, hd,
                      n_rot, neox);
        }
    }
}

/* The tiled attention's load_q (flash_kernels.h): the same bits at every
 * level, on heads of awkward sizes, with values past F16's range and in its
 * subnormals (F16C rounds as hl_fp32_to_fp16 does). */
static void test_flash_load_q(const hl_flash_kernels *k, const char *level) {
    const hl_flash_kernels *ref = &hl_flash_kernels_scalar;
    static const int32_t hds[] = {64, 80, 96, 100, 128, 256};
    for (size_t i = 0; i < sizeof hds / sizeof hds[0]; i++) {
        const int32_t hd = hds[i], hd_pad = (hd + FA_HD_ALIGN - 1) / FA_HD_ALIGN * FA_HD_ALIGN;
        float src[256], want[256], got[256];
        for (int32_t d = 0; d < hd; d++) {
            const float mag = d % 3 == 0 ? 1e-6f : d % 3 == 1 ? 1.0f : 1e5f; /* subnormal, normal, past 65504 */
            src[d] = rng_range(-mag, mag);
        }
        memset(got, 0xff, sizeof got);
        ref->load_q(hd, hd_pad, src, 0.125f, want);
        k->load_q(hd, hd_pad, src, 0.125f, got);
        CHECK_MSG(memcmp(got, want, (size_t)hd_pad * sizeof *got) == 0, "%s flash load_q hd %d", level, hd);
    }
}

int main(void) {
    CHECK(hl_cpu_kernels_get() != NULL && hl_cpu_kernels_at(HL_CPU_SCALAR) == &hl_cpu_kernels_scalar);
    CHECK(hl_cpu_kernels_at(HL_CPU_LEVEL_COUNT) == NULL);
    for (int level = HL_CPU_SCALAR; level < HL_CPU_LEVEL_COUNT; level++) {
        const hl_cpu_kernels *k = hl_cpu_kernels_at((hl_cpu_level)level);
        if (!k) continue;
        const char *name = hl_cpu_level_name((hl_cpu_level)level);
        test_swiglu(k, name);
        test_gelu(k, name);
        test_softmax_exp(k, name);
        test_dot_f16(k, name);
        test_pv(k, name);
        test_rope_rotate(k, name);
        if (hl_flash_kernels_at((hl_cpu_level)level)) test_flash_load_q(hl_flash_kernels_at((hl_cpu_level)level), name);
        printf("kernels %s: tested\n", name);
    }
    return check_report();
}
