/* Tests of the CPU kernels for Q5_0, Q5_1 and the K-quants (Q2_K .. Q6_K
 * against Q8_K activations):
 * - the Q8_K activation quantizer against its definition (llama.cpp's
 *   quantize_row_q8_K_ref), ties and zero blocks included, and every level's
 *   against the scalar bytes;
 * - the scalar dot products against the dequantized floats, in double;
 * - every SIMD level's vec_dot, vec_dot_4r and vec_dot_4c, and those of its
 *   batch kernels (hl_cpu_type_ops.batch), against the scalar kernel, and
 *   the tiles against the 1x1 kernel bit for bit; for Q2_K and Q4_K against
 *   the float order of llama.cpp's repacked gemv (1x1, 4r) and gemm (4c)
 *   kernels, for Q3_K, Q5_K and Q6_K against that of ggml's vec_dot, and
 *   for the batch kernels against that of its tiled kernels, each written
 *   out plainly;
 * - llama.cpp's own results (reference/quant/vec_dot_k_fixtures.bin, written
 *   by make_vec_dot_k_fixtures.py): its activation bytes, and its matrix
 *   products bit for bit from every SIMD level. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/vec_dot.h"
#include "check.h"
#include "quant/quant.h"

static const uint32_t types[] = {GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K,
                                 GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K};
#define N_TYPES (sizeof types / sizeof types[0])

static bool is_k(uint32_t type) { return type >= GGML_TYPE_Q2_K && type <= GGML_TYPE_Q6_K; }

/* ------------------------------------------------------------- random -- */

static uint64_t rng_state = 0x2545f4914f6cdd1du;

static uint64_t rng_u64(void) { return check_splitmix64(&rng_state); }

/* Uniform in [lo, hi). */
static double rng_uniform(double lo, double hi) { return lo + (hi - lo) * (double)(rng_u64() >> 11) * 0x1p-53; }

/* Roughly normal (sum of uniforms), mean 0, deviation 1. */
static float rng_normal(void) {
    double s = 0.0;
    for (int i = 0; i < 4; i++) s += rng_uniform(-1.0, 1.0);
    return (float)(s * 0.8660254);
}

/* An activation row: channel scales over two orders of magnitude, outliers,
 * zeros, and values on the rounding grid's halves. */
static void rng_activations(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        const uint64_t r = rng_u64() % 100;
        x[i] = rng_normal() * (float)exp(rng_uniform(-2.5, 2.5));
        if (r < 2) x[i] *= 30.0f;
        else if (r < 4) x[i] = 0.0f;
        else if (r < 6) x[i] = (float)((int)(rng_u64() % 33) - 16) + 0.5f;
    }
}

static void put_half(uint8_t *p, float v) {
    const hl_half h = hl_fp32_to_fp16(v);
    memcpy(p, &h, sizeof h);
}

/* A realistic super-block (or block) scale: 1e-4 .. 4e-3, one in ten negative. */
static float rng_scale(void) {
    const float d = (float)rng_uniform(1e-4, 4e-3);
    return rng_u64() % 10 == 0 ? -d : d;
}

/* Where the fp16 fields of a block are: d, and the min (dmin or m; -1 if none). */
static void block_fields(uint32_t type, int *d_at, int *m_at) {
    switch (type) {
    case GGML_TYPE_Q5_0: *d_at = 0, *m_at = -1; break;
    case GGML_TYPE_Q5_1: *d_at = 0, *m_at = 2; break;
    case GGML_TYPE_Q2_K: *d_at = 80, *m_at = 82; break;
    case GGML_TYPE_Q3_K: *d_at = 108, *m_at = -1; break;
    case GGML_TYPE_Q4_K: *d_at = 0, *m_at = 2; break;
    case GGML_TYPE_Q5_K: *d_at = 0, *m_at = 2; break;
    default: *d_at = 208, *m_at = -1; break; /* Q6_K */
    }
}

/* A weight row: random bytes with realistic scales, or (one row in three)
 * the reference quantizer's output for random weights. */
static void rng_weight_row(uint32_t type, uint8_t *row, int64_t n, float *tmp) {
    const ggml_type_info *ti = hl_ggml_type_get(type);
    if (rng_u64() % 3 == 0) {
        for (int64_t i = 0; i < n; i++) tmp[i] = 0.02f * rng_normal();
        hl_quant_get(type)->from_float(tmp, row, n);
        return;
    }
    const size_t size = hl_row_size(type, n);
    for (size_t i = 0; i < size; i++) row[i] = (uint8_t)rng_u64();
    int d_at, m_at;
    block_fields(type, &d_at, &m_at);
    for (int64_t b = 0; b < n / (int64_t)ti->blck_size; b++) {
        uint8_t *blk = row + (size_t)b * ti->type_size;
        put_half(blk + d_at, rng_scale());
        if (m_at >= 0) put_half(blk + m_at, type == GGML_TYPE_Q5_1 ? -8.0f * rng_scale() : fabsf(rng_scale()));
    }
}

/* --------------------------------------------------- activation quantizer -- */

/* One Q8_K block from its definition (vec_dot.h). */
static void q8_K_formula(const float *x, block_q8_K *y) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < HL_QK_K; j++) {
        if (fabsf(x[j]) > amax) amax = fabsf(x[j]), max = x[j];
    }
    memset(y, 0, sizeof *y);
    if (amax == 0.0f) return;
    const float iscale = -127.0f / max;
    for (int j = 0; j < HL_QK_K; j++) {
        const long q = lrintf(iscale * x[j]); /* halves to even */
        y->qs[j] = (int8_t)(q > 127 ? 127 : q);
        y->bsums[j / 16] = (int16_t)(y->bsums[j / 16] + y->qs[j]);
    }
    y->d = 1.0f / iscale;
}

static void test_q8_K(void) {
    const int64_t n = 8 * HL_QK_K;
    float *x = malloc(n * sizeof(float));
    block_q8_K *ref = malloc(n / HL_QK_K * sizeof *ref), *out = malloc(n / HL_QK_K * sizeof *out);
    for (int iter = 0; iter < 200; iter++) {
        rng_activations(x, n);
        if (iter % 4 == 1) memset(x + HL_QK_K, 0, HL_QK_K * sizeof(float)); /* a zero block */
        if (iter % 4 == 2) { /* both signs of the largest magnitude: the first one sets the sign */
            x[7] = -100.0f;
            x[200] = 100.0f;
            x[HL_QK_K + 3] = 64.0f;
            x[HL_QK_K + 9] = -64.0f;
        }
        if (iter % 4 == 3) { /* amax 127: iscale = -+1, every .5 a tie */
            for (int64_t i = 0; i < n; i++) x[i] = (float)((int)(rng_u64() % 255) - 127) / 2.0f;
            x[5] = 127.0f;
        }
        for (int64_t b = 0; b < n / HL_QK_K; b++) q8_K_formula(x + b * HL_QK_K, &ref[b]);
        hl_act_q8_K_from_float(x, out, n);
        CHECK_MSG(memcmp(ref, out, n / HL_QK_K * sizeof *ref) == 0, "scalar Q8_K differs from the formula, iter %d",
                  iter);
        for (int level = HL_CPU_SCALAR; level < HL_CPU_LEVEL_COUNT; level++) {
            const hl_cpu_type_ops *ops = hl_cpu_type_ops_at(GGML_TYPE_Q4_K, (hl_cpu_level)level);
            if (!ops) continue;
            memset(out, 0x55, n / HL_QK_K * sizeof *out);
            ops->act_from_float(x, out, n);
            CHECK_MSG(memcmp(ref, out, n / HL_QK_K * sizeof *ref) == 0, "%s Q8_K differs from the formula, iter %d",
                      hl_cpu_level_name((hl_cpu_level)level), iter);
        }
    }
    /* the tie cases by hand: amax 127 at x[0] > 0 gives iscale -1; 2.5 -> -2, -0.5 -> 0 */
    memset(x, 0, HL_QK_K * sizeof(float));
    x[0] = 127.0f, x[1] = 2.5f, x[2] = -0.5f, x[3] = -127.0f;
    hl_act_q8_K_from_float(x, out, HL_QK_K);
    CHECK(out->d == -1.0f && out->qs[0] == -127 && out->qs[1] == -2 && out->qs[2] == 0 && out->qs[3] == 127);
    CHECK(out->bsums[0] == -2 && out->bsums[1] == 0);
    free(x);
    free(ref);
    free(out);
}

/* ---------------------------------------------- llama.cpp's repacked order -- */

/* The scale, min and quant of element e of a Q2_K or Q4_K super-block. */
static void repacked_element(uint32_t type, const uint8_t *blk, int e, int *sc, int *m, int *q) {
    if (type == GGML_TYPE_Q2_K) {
        const block_q2_K *w = (const block_q2_K *)blk;
        *sc = w->scales[e / 16] & 15;
        *m = w->scales[e / 16] >> 4;
        *q = (w->qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
        return;
    }
    const block_q4_K *w = (const block_q4_K *)blk;
    const int j = e / 32;
    const uint8_t *s = w->scales;
    *sc = j < 4 ? s[j] & 63 : (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
    *m = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    const uint8_t byte = w->qs[32 * (e / 64) + e % 32];
    *q = e % 64 < 32 ? byte & 15 : byte >> 4;
}

/* A Q2_K/Q4_K dot product in the float order of llama.cpp's repacked kernels
 * (ggml_gemv/gemm_q*_K_8x8_q8_K): per part of `part` elements (256 in gemv;
 * 64 for Q4_K and 128 for Q2_K in gemm), the exact sums isum = sum(sc*q*a)
 * and imin = sum(m*a) go into acc += isum * (d * d_a) and accm += imin *
 * (dmin * d_a), each one FMA; the result is acc - accm. */
static float repacked_dot(uint32_t type, int64_t n, const uint8_t *row, const block_q8_K *a, int part) {
    const size_t size = hl_ggml_type_get(type)->type_size;
    float acc = 0.0f, accm = 0.0f;
    for (int64_t b = 0; b < n / HL_QK_K; b++) {
        const uint8_t *blk = row + (size_t)b * size;
        hl_half dh, dminh;
        memcpy(&dh, blk + (type == GGML_TYPE_Q2_K ? 80 : 0), 2);
        memcpy(&dminh, blk + (type == GGML_TYPE_Q2_K ? 82 : 2), 2);
        const float d = hl_fp16_to_fp32(dh) * a[b].d, dmin = hl_fp16_to_fp32(dminh) * a[b].d;
        for (int p0 = 0; p0 < HL_QK_K; p0 += part) {
            int32_t isum = 0, imin = 0;
            for (int e = p0; e < p0 + part; e++) {
                int sc, m, q;
                repacked_element(type, blk, e, &sc, &m, &q);
                isum += sc * q * a[b].qs[e];
                imin += m * a[b].qs[e];
            }
            acc = fmaf((float)isum, d, acc);
            accm = fmaf((float)imin, dmin, accm);
        }
    }
    return acc - accm;
}

/* The scale (sc) and unbiased quant (q) of element e of a Q3_K, Q5_K or
 * Q6_K super-block, and Q5_K's min (m). */
static void tiled_element(uint32_t type, const uint8_t *blk, int e, int *sc, int *m, int *q) {
    *m = 0;
    if (type == GGML_TYPE_Q3_K) {
        const block_q3_K *w = (const block_q3_K *)blk;
        *sc = hl_q3_K_scale(w->scales, e / 16) - 32;
        const int low = (w->qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
        *q = low - 4 * !((w->hmask[e % 32] >> (e / 32)) & 1);
    } else if (type == GGML_TYPE_Q5_K) {
        const block_q5_K *w = (const block_q5_K *)blk;
        uint8_t sc8, m8;
        hl_q4_K_scale_min(w->scales, e / 32, &sc8, &m8);
        *sc = sc8, *m = m8;
        const uint8_t byte = w->qs[32 * (e / 64) + e % 32];
        *q = (e % 64 < 32 ? byte & 15 : byte >> 4) + 16 * ((w->qh[e % 32] >> (e / 32)) & 1);
    } else {
        const block_q6_K *w = (const block_q6_K *)blk;
        const int h = e / 128, r = e % 128;
        const uint8_t l = w->ql[64 * h + r % 64];
        const int lo = r < 64 ? l & 15 : l >> 4, hi = (w->qh[32 * h + r % 32] >> (2 * (r / 32))) & 3;
        *sc = w->scales[e / 16];
        *q = (lo | hi << 4) - 32;
    }
}

/* A Q3_K/Q5_K/Q6_K dot product in the float order of llama.cpp's tiled
 * kernels (tiled_run_micro_vnni_8x16), which it runs from 8 tokens on: per
 * super-block, s1 = sum(sc * q * a) and s2 = sum(m * a) exact, r = float(s1)
 * * d, r = fma(-dmin, float(s2), r) (Q5_K), acc = fma(r, d_a, acc) (GCC
 * contracts ggml's add of a product). */
static float tiled_dot(uint32_t type, int64_t n, const uint8_t *row, const block_q8_K *a) {
    const size_t size = hl_ggml_type_get(type)->type_size;
    float acc = 0.0f;
    for (int64_t b = 0; b < n / HL_QK_K; b++) {
        const uint8_t *blk = row + (size_t)b * size;
        int d_at, m_at;
        block_fields(type, &d_at, &m_at);
        hl_half dh, dminh = 0;
        memcpy(&dh, blk + d_at, 2);
        if (m_at >= 0) memcpy(&dminh, blk + m_at, 2);
        int32_t s1 = 0, s2 = 0;
        for (int e = 0; e < HL_QK_K; e++) {
            int sc, m, q;
            tiled_element(type, blk, e, &sc, &m, &q);
            s1 += sc * q * a[b].qs[e];
            s2 += m * a[b].qs[e];
        }
        float r = (float)s1 * hl_fp16_to_fp32(dh);
        if (m_at >= 0) r = fmaf(-hl_fp16_to_fp32(dminh), (float)s2, r);
        acc = fmaf(r, a[b].d, acc);
    }
    return acc;
}

/* A Q3_K/Q5_K/Q6_K dot product in the float order of ggml's AVX2
 * ggml_vec_dot_q*_K_q8_K (arch/x86/quants.c), which llama.cpp runs for
 * fewer than 8 tokens: per super-block eight exact int32 lanes, lane m
 * holding sum(sc * q * a) over elements 32c + 4m .. 32c + 4m + 3 of every
 * chunk c of 32 (Q6_K: its stored q, with the -32 put in as -32 * (sc_2m *
 * bsums_2m + sc_2m+1 * bsums_2m+1) on lane m); acc[m] = fma(d_a * d,
 * float(lane m), acc[m]); Q5_K's mins go into summs = fma(-d_a * dmin,
 * float(sum(m * a)), summs); the result is hsum_float_8(acc) (+ summs). */
static float ggml_dot(uint32_t type, int64_t n, const uint8_t *row, const block_q8_K *a) {
    const size_t size = hl_ggml_type_get(type)->type_size;
    float acc[8] = {0}, summs = 0.0f;
    for (int64_t b = 0; b < n / HL_QK_K; b++) {
        const uint8_t *blk = row + (size_t)b * size;
        int d_at, m_at;
        block_fields(type, &d_at, &m_at);
        hl_half dh, dminh = 0;
        memcpy(&dh, blk + d_at, 2);
        if (m_at >= 0) memcpy(&dminh, blk + m_at, 2);
        int32_t lane[8] = {0}, imin = 0;
        for (int e = 0; e < HL_QK_K; e++) {
            int sc, m, q;
            tiled_element(type, blk, e, &sc, &m, &q);
            if (type == GGML_TYPE_Q6_K) q += 32;
            lane[(e % 32) / 4] += sc * q * a[b].qs[e];
            imin += m * a[b].qs[e];
        }
        if (type == GGML_TYPE_Q6_K) {
            const int8_t *sc = ((const block_q6_K *)blk)->scales;
            for (int m = 0; m < 8; m++)
                lane[m] -= 32 * (sc[2 * m] * a[b].bsums[2 * m] + sc[2 * m + 1] * a[b].bsums[2 * m + 1]);
        }
        const float d = a[b].d * hl_fp16_to_fp32(dh);
        for (int m = 0; m < 8; m++) acc[m] = fmaf(d, (float)lane[m], acc[m]);
        if (m_at >= 0) summs = fmaf(-a[b].d * hl_fp16_to_fp32(dminh), (float)imin, summs);
    }
    const float sum = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
    return type == GGML_TYPE_Q5_K ? sum + summs : sum;
}

static bool is_repacked(uint32_t type) { return type == GGML_TYPE_Q2_K || type == GGML_TYPE_Q4_K; }

static int gemm_part(uint32_t type) { return type == GGML_TYPE_Q4_K ? 64 : 128; }

/* ---------------------------------------------------------- dot products -- */

#define N_MAX 4096

typedef struct bufs {
    uint8_t w[4][N_MAX * 2], a[4][N_MAX * 2]; /* at most 1.5 bytes an element */
    uint8_t w_off[N_MAX * 2];
    float wf[4][N_MAX], off[4][N_MAX], af[4][N_MAX], x[N_MAX];
} bufs;

/* Weight row k dequantized (wf) and its offset part alone (off: the row
 * with every d set to 0, so m or -dmin * min), for the error scale. */
static void dequantize_parts(uint32_t type, bufs *bf, int k, int64_t n) {
    const ggml_type_info *ti = hl_ggml_type_get(type);
    hl_quant_get(type)->to_float(bf->w[k], bf->wf[k], n);
    int d_at, m_at;
    block_fields(type, &d_at, &m_at);
    memset(bf->off[k], 0, (size_t)n * sizeof(float));
    if (m_at < 0) return;
    memcpy(bf->w_off, bf->w[k], hl_row_size(type, n));
    for (int64_t b = 0; b < n / (int64_t)ti->blck_size; b++)
        put_half(bf->w_off + (size_t)b * ti->type_size + d_at, 0.0f);
    hl_quant_get(type)->to_float(bf->w_off, bf->off[k], n);
}

static void check_near(const char *what, hl_cpu_level level, uint32_t type, int64_t n, float s, float ref, double tol) {
    CHECK_MSG(fabs((double)s - ref) <= tol, "%s %s %s n %lld: %.9g, scalar %.9g (tol %.3g)", hl_cpu_level_name(level),
              what, hl_ggml_type_get(type)->name, (long long)n, s, ref, tol);
}

static void check_same(const char *what, hl_cpu_level level, uint32_t type, int64_t n, float s, float one) {
    CHECK_MSG(memcmp(&s, &one, sizeof s) == 0, "%s %s %s n %lld: %.9g, expected %.9g", hl_cpu_level_name(level), what,
              hl_ggml_type_get(type)->name, (long long)n, s, one);
}

static void check_level(const hl_cpu_type_ops *ops, hl_cpu_level lv, uint32_t type, int64_t n, const bufs *bf,
                        float ref[4][4], double tol[4][4], bool batch);

/* One type at one length, four weight rows by four activation rows: scalar
 * against the floats, SIMD against scalar, tiles against 1x1. */
static void check_dot(uint32_t type, int64_t n, bufs *bf) {
    const hl_cpu_type_ops *scalar = hl_cpu_type_ops_scalar(type);
    const uint32_t at = scalar->vec_dot_type;
    for (int k = 0; k < 4; k++) {
        rng_weight_row(type, bf->w[k], n, bf->x);
        dequantize_parts(type, bf, k, n);
        rng_activations(bf->x, n);
        scalar->act_from_float(bf->x, bf->a[k], n);
        hl_quant_get(at)->to_float(bf->a[k], bf->af[k], n);
    }
    float ref[4][4];
    double tol[4][4];
    for (int r = 0; r < 4; r++) {
        for (int c = 0; c < 4; c++) {
            double exact = 0.0, mag = 0.0;
            for (int64_t i = 0; i < n; i++) {
                exact += (double)bf->wf[r][i] * bf->af[c][i];
                mag += fabs((double)(bf->wf[r][i] - bf->off[r][i]) * bf->af[c][i]) +
                       fabs((double)bf->off[r][i] * bf->af[c][i]);
            }
            tol[r][c] = (double)(n / 8 + 16) * FLT_EPSILON * mag + 1e-30;
            scalar->vec_dot(n, &ref[r][c], bf->w[r], bf->a[c]);
            /* Q5_1 uses the activations' s = fp16(d * sum(q)) */
            const double s_err = type == GGML_TYPE_Q5_1 ? mag * 0x1p-10 : 0.0;
            CHECK_MSG(fabs(ref[r][c] - exact) <= tol[r][c] + s_err, "scalar %s n %lld: %.9g, exact %.9g (tol %.3g)",
                      hl_ggml_type_get(type)->name, (long long)n, ref[r][c], exact, tol[r][c] + s_err);
        }
    }
    for (int level = HL_CPU_SCALAR + 1; level < HL_CPU_LEVEL_COUNT; level++) {
        const hl_cpu_level lv = (hl_cpu_level)level;
        const hl_cpu_type_ops *ops = hl_cpu_type_ops_at(type, lv);
        if (ops) check_level(ops, lv, type, n, bf, ref, tol, false);
        if (ops && ops->batch) check_level(ops->batch, lv, type, n, bf, ref, tol, true);
    }
}

/* A panel of HL_PANEL_ROWS rows (the four weight rows again and again) with
 * 1..4 activation rows, or 1..PANEL_TOKENS_MAX (the four again and again)
 * where panel_dot takes them all (panel_block): each group of 4 tokens from
 * the first in the order of vec_dot_4c, a last group of fewer in vec_dot's,
 * bit for bit (as llama.cpp's gemm and gemv). */
#define PANEL_TOKENS_MAX 11
static void check_panel(const hl_cpu_type_ops *ops, hl_cpu_level lv, int64_t n, const bufs *bf) {
    const size_t w_stride = hl_row_size(ops->type, n) + 8, a_stride = sizeof bf->a[0];
    const int max_tok = ops->panel_block ? PANEL_TOKENS_MAX : 4;
    uint8_t *rows = calloc(HL_PANEL_ROWS, w_stride), *panel = malloc(HL_PANEL_BYTES(n));
    uint8_t *act = malloc(PANEL_TOKENS_MAX * a_stride);
    float y[PANEL_TOKENS_MAX][HL_PANEL_ROWS + 1], want[4];
    for (int r = 0; r < HL_PANEL_ROWS; r++)
        memcpy(rows + (size_t)r * w_stride, bf->w[r % 4], hl_row_size(ops->type, n));
    for (int c = 0; c < PANEL_TOKENS_MAX; c++) memcpy(act + (size_t)c * a_stride, bf->a[c % 4], a_stride);
    ops->pack_panel(n, panel, rows, w_stride);
    for (int n_tok = 1; n_tok <= max_tok; n_tok++) {
        memset(y, 0xff, sizeof y);
        ops->panel_dot(n, &y[0][0], HL_PANEL_ROWS + 1, panel, act, a_stride, NULL, 0, n_tok);
        for (int g = 0; g < n_tok; g += 4) { /* token g + c is activation row c */
            const int group = n_tok - g < 4 ? n_tok - g : 4;
            for (int r = 0; r < HL_PANEL_ROWS; r++) {
                if (group == 4) ops->vec_dot_4c(n, want, bf->w[r % 4], bf->a, a_stride);
                for (int c = 0; c < group; c++) {
                    if (group < 4) ops->vec_dot(n, &want[c], bf->w[r % 4], bf->a[c]);
                    check_same(group == 4 ? "panel_dot (gemm order)" : "panel_dot (gemv order)", lv, ops->type, n,
                               y[g + c][r], want[c]);
                }
            }
        }
        for (int c = 0; c < PANEL_TOKENS_MAX; c++) CHECK(isnan(y[c][HL_PANEL_ROWS]) && (c < n_tok || isnan(y[c][0])));
    }
    free(rows);
    free(panel);
    free(act);
}

/* One level's kernels (or its batch kernels) on the rows of check_dot: near
 * the scalar results, and bit for bit the 1x1 kernel's or, where that is
 * llama.cpp's order of another path, that order written out. */
static void check_level(const hl_cpu_type_ops *ops, hl_cpu_level lv, uint32_t type, int64_t n, const bufs *bf,
                        float ref[4][4], double tol[4][4], bool batch) {
    CHECK(ops->type == type && ops->vec_dot_type == hl_cpu_type_ops_scalar(type)->vec_dot_type);
    CHECK(!batch || !ops->batch);
    const bool rp = is_repacked(type);
    float s[4], one;
    for (int k = 0; k < 4; k++) {
        ops->vec_dot(n, &s[k], bf->w[k], bf->a[k]);
        check_near(batch ? "batch vec_dot" : "vec_dot", lv, type, n, s[k], ref[k][k], tol[k][k]);
        const block_q8_K *a = (const block_q8_K *)bf->a[k];
        if (rp) check_same("vec_dot (gemv order)", lv, type, n, s[k], repacked_dot(type, n, bf->w[k], a, HL_QK_K));
        if (batch) check_same("batch vec_dot (tiled order)", lv, type, n, s[k], tiled_dot(type, n, bf->w[k], a));
        else if (is_k(type) && !rp)
            check_same("vec_dot (ggml order)", lv, type, n, s[k], ggml_dot(type, n, bf->w[k], a));
    }
    if (ops->vec_dot_4r) { /* weight rows 0..3 with activation row 1 */
        ops->vec_dot_4r(n, s, bf->w, sizeof bf->w[0], bf->a[1]);
        for (int r = 0; r < 4; r++) {
            check_near("vec_dot_4r", lv, type, n, s[r], ref[r][1], tol[r][1]);
            ops->vec_dot(n, &one, bf->w[r], bf->a[1]);
            check_same(batch ? "batch vec_dot_4r" : "vec_dot_4r", lv, type, n, s[r], one);
        }
    }
    if (ops->vec_dot_4c) { /* weight row 2 with activation rows 0..3 */
        ops->vec_dot_4c(n, s, bf->w[2], bf->a, sizeof bf->a[0]);
        for (int c = 0; c < 4; c++) {
            check_near("vec_dot_4c", lv, type, n, s[c], ref[2][c], tol[2][c]);
            if (rp) one = repacked_dot(type, n, bf->w[2], (const block_q8_K *)bf->a[c], gemm_part(type));
            else ops->vec_dot(n, &one, bf->w[2], bf->a[c]);
            check_same(rp      ? "vec_dot_4c (gemm order)"
                       : batch ? "batch vec_dot_4c"
                               : "vec_dot_4c",
                       lv, type, n, s[c], one);
        }
    }
    if (ops->panel_dot && is_k(type)) check_panel(ops, lv, n, bf);
}

static void test_dots(void) {
    static const int64_t k_lengths[] = {256, 512, 768, 1280, 2048, 4096};
    static const int64_t q5_lengths[] = {32, 96, 256, 768, 2048, 4096};
    bufs *bf = malloc(sizeof *bf);
    for (size_t t = 0; t < N_TYPES; t++) {
        const int64_t *lengths = is_k(types[t]) ? k_lengths : q5_lengths;
        for (int iter = 0; iter < 8; iter++) {
            for (size_t l = 0; l < 6; l++) check_dot(types[t], lengths[l], bf);
        }
    }
    free(bf);
}

/* ------------------------------------------------------ llama.cpp fixture -- */

static uint64_t read_u64(const uint8_t *p) { return check_u32(p) | (uint64_t)check_u32(p + 4) << 32; }

typedef struct act_rec {
    uint32_t n, n_tok;
    const uint8_t *x; /* float32 [n_tok][n], unaligned: copied before use */
} act_rec;

/* Which of llama.cpp's kernels computed a case (make_vec_dot_k_fixtures.py). */
enum { PATH_VEC_DOT = 0, PATH_REPACKED = 1, PATH_TILED = 2 };

typedef struct case_rec {
    char name[33];
    uint32_t type, n, n_rows, n_tok, act, path;
    const uint8_t *w, *a, *mul_mat, *vec_dot; /* see make_vec_dot_k_fixtures.py */
    uint64_t w_bytes, a_bytes;
} case_rec;

static float get_f32(const uint8_t *p, size_t i) {
    float f;
    memcpy(&f, p + 4 * i, sizeof f);
    return f;
}

/* One case: llama.cpp's activation bytes from every level's quantizer, and
 * its mul_mat results from every SIMD level's kernels, bit for bit. */
static void check_case(const case_rec *cr, const act_rec *ar) {
    const hl_cpu_type_ops *scalar = hl_cpu_type_ops_scalar(cr->type);
    const size_t w_row = hl_row_size(cr->type, cr->n), a_row = hl_row_size(scalar->vec_dot_type, cr->n);
    CHECK_MSG(ar->n == cr->n && ar->n_tok == cr->n_tok && w_row * cr->n_rows == cr->w_bytes &&
                  a_row * cr->n_tok == cr->a_bytes,
              "%s: sizes", cr->name);
    if (ar->n != cr->n || ar->n_tok != cr->n_tok || w_row * cr->n_rows != cr->w_bytes ||
        a_row * cr->n_tok != cr->a_bytes)
        return;
    float *x = malloc(cr->n * sizeof(float));
    uint8_t *w = malloc(cr->w_bytes), *a = malloc(cr->a_bytes), *mine = malloc(a_row);
    memcpy(w, cr->w, cr->w_bytes);
    memcpy(a, cr->a, cr->a_bytes);
    for (uint32_t r = 0; r < cr->n_rows; r++) {
        for (uint32_t t = 0; t < cr->n_tok && cr->path == PATH_VEC_DOT; t++) { /* the fixture itself */
            CHECK_MSG(get_f32(cr->vec_dot, t * cr->n_rows + r) == get_f32(cr->mul_mat, t * cr->n_rows + r),
                      "%s: llama.cpp's vec_dot and mul_mat differ", cr->name);
        }
    }
    for (int level = HL_CPU_SCALAR; level < HL_CPU_LEVEL_COUNT; level++) {
        const hl_cpu_level lv = (hl_cpu_level)level;
        const hl_cpu_type_ops *all = hl_cpu_type_ops_at(cr->type, lv);
        if (!all) continue;
        /* the kernels a matmul over n_tok tokens uses (hl_cpu_type_ops.batch) */
        const hl_cpu_type_ops *ops = all->batch && cr->n_tok >= HL_CPU_BATCH_MIN ? all->batch : all;
        CHECK_MSG(level == HL_CPU_SCALAR || (cr->path == PATH_TILED) == (ops != all),
                  "%s %s: llama.cpp's tiled path and hearth's batch kernels disagree", hl_cpu_level_name(lv), cr->name);
        for (uint32_t t = 0; t < cr->n_tok; t++) {
            memcpy(x, ar->x + (size_t)t * cr->n * sizeof(float), cr->n * sizeof(float));
            ops->act_from_float(x, mine, cr->n);
            CHECK_MSG(memcmp(mine, a + t * a_row, a_row) == 0, "%s %s: activation bytes differ from llama.cpp's",
                      hl_cpu_level_name(lv), cr->name);
        }
        if (level == HL_CPU_SCALAR) continue; /* the oracle sums in its own order */
        /* Repacked: llama.cpp ran gemm on tokens below n_gemm, as hearth's
         * matmul runs vec_dot_4c there; gemv elsewhere, as vec_dot and 4r. */
        const uint32_t n_gemm = cr->path == PATH_REPACKED ? cr->n_tok - cr->n_tok % 4 : 0;
        int bad = 0;
        for (uint32_t t = n_gemm; t < cr->n_tok; t++) {
            for (uint32_t r = 0; r < cr->n_rows; r++) {
                float s;
                ops->vec_dot(cr->n, &s, w + r * w_row, a + t * a_row);
                const float want = get_f32(cr->mul_mat, t * cr->n_rows + r);
                if (memcmp(&s, &want, sizeof s) != 0 && bad++ < 3)
                    CHECK_MSG(0, "%s %s row %u token %u: %.9g, llama.cpp %.9g", hl_cpu_level_name(lv), cr->name, r, t,
                              s, want);
            }
            float s4[4];
            for (uint32_t r0 = 0; ops->vec_dot_4r && r0 + 4 <= cr->n_rows; r0 += 4) {
                ops->vec_dot_4r(cr->n, s4, w + r0 * w_row, w_row, a + t * a_row);
                for (int j = 0; j < 4; j++) bad += get_f32(cr->mul_mat, t * cr->n_rows + r0 + j) != s4[j];
            }
        }
        for (uint32_t t0 = 0; ops->vec_dot_4c && t0 + 4 <= cr->n_tok; t0 += 4) {
            for (uint32_t r = 0; r < cr->n_rows; r++) {
                float s4[4];
                ops->vec_dot_4c(cr->n, s4, w + r * w_row, a + t0 * a_row, a_row);
                for (uint32_t j = 0; j < 4; j++) bad += get_f32(cr->mul_mat, (t0 + j) * cr->n_rows + r) != s4[j];
            }
        }
        CHECK_MSG(bad == 0, "%s %s: %d results differ from llama.cpp's", hl_cpu_level_name(lv), cr->name, bad);
    }
    free(x);
    free(w);
    free(a);
    free(mine);
}

static void test_fixture(void) {
    const char *path = check_test_path("reference/quant/vec_dot_k_fixtures.bin");
    size_t size = 0;
    uint8_t *data = check_read_file(path, &size);
    CHECK_MSG(data && size >= 12 && memcmp(data, "HLVK", 4) == 0 && check_u32(data + 4) == 1, "cannot read %s", path);
    if (!data || size < 12) {
        free(data);
        return;
    }
    const uint32_t n_records = check_u32(data + 8);
    act_rec acts[8];
    uint32_t n_acts = 0, n = 0, n_cases = 0;
    size_t pos = 12;
    while (pos + 36 <= size && n < n_records) {
        const uint8_t *p = data + pos;
        const uint32_t kind = check_u32(p + 32);
        if (kind == 0 && n_acts < 8) {
            act_rec *ar = &acts[n_acts++];
            ar->n = check_u32(p + 36), ar->n_tok = check_u32(p + 40);
            ar->x = p + 44;
            pos += 44 + (size_t)ar->n * ar->n_tok * 4;
        } else if (kind == 1 && size - pos >= 76) {
            case_rec cr;
            memcpy(cr.name, p, 32);
            cr.name[32] = 0;
            cr.type = check_u32(p + 36), cr.n = check_u32(p + 40), cr.n_rows = check_u32(p + 44);
            cr.n_tok = check_u32(p + 48), cr.act = check_u32(p + 52), cr.path = check_u32(p + 56);
            cr.w_bytes = read_u64(p + 60), cr.a_bytes = read_u64(p + 68);
            cr.w = p + 76, cr.a = cr.w + cr.w_bytes, cr.mul_mat = cr.a + cr.a_bytes;
            cr.vec_dot = cr.mul_mat + (size_t)cr.n_tok * cr.n_rows * 4;
            pos += 76 + cr.w_bytes + cr.a_bytes + (size_t)cr.n_tok * cr.n_rows * 8;
            if (pos > size || cr.act >= n_acts) break;
            check_case(&cr, &acts[cr.act]);
            n_cases++;
        } else {
            break;
        }
        n++;
    }
    CHECK_MSG(n == n_records && pos == size && n_cases == N_TYPES * n_acts, "read %u of %u fixture records", n,
              n_records);
    if (hl_cpu_level_best() == HL_CPU_SCALAR) printf("note: no SIMD level on this CPU; llama.cpp's bits not checked\n");
    free(data);
}

/* ------------------------------------------------------------ the tables -- */

static void test_tables(void) {
    for (size_t t = 0; t < N_TYPES; t++) {
        const uint32_t type = types[t];
        const uint32_t at = is_k(type) ? GGML_TYPE_Q8_K : type == GGML_TYPE_Q5_0 ? GGML_TYPE_Q8_0 : GGML_TYPE_Q8_1;
        const hl_quant_traits *q = hl_quant_get(type);
        CHECK(q && q->to_float && q->from_float && hl_quant_get(at));
        for (int level = HL_CPU_SCALAR; level <= (int)hl_cpu_level_best(); level++) {
            const hl_cpu_type_ops *ops = hl_cpu_type_ops_at(type, (hl_cpu_level)level);
            CHECK_MSG(ops && ops->type == type && ops->vec_dot_type == at && ops->vec_dot && ops->act_from_float,
                      "%s kernels for %s", hl_cpu_level_name((hl_cpu_level)level), hl_ggml_type_get(type)->name);
        }
        CHECK(hl_cpu_type_ops_get(type) != NULL);
    }
    CHECK(hl_cpu_type_ops_scalar(GGML_TYPE_Q6_K)->act_from_float == hl_act_q8_K_from_float);
    CHECK(hl_cpu_type_ops_get(GGML_TYPE_Q8_K) == NULL); /* an activation type only */
}

int main(void) {
    test_tables();
    test_q8_K();
    test_dots();
    test_fixture();
    return check_report();
}
