/* Tests of the block formats and the CPU dot-product kernels:
 * - fp16/bf16 conversions: exhaustive round trips, rounding ties, inf, NaN,
 *   subnormals;
 * - bit-exact agreement with gguf-py (fixtures written by
 *   reference/quant/make_quant_fixtures.py): dequantization of random blocks
 *   and of rows of the real model, quantization of random rows;
 * - the Q8_0/Q8_1 reference quantizer and the activation quantizer
 *   (llama.cpp's CPU one) against their defining formulas, and every level's
 *   act_from_float against the scalar activation quantizer's bytes;
 * - the scalar dot products against the dequantized floats, every SIMD level
 *   against the scalar one, on random data with extremes, and each level's
 *   4-row and 4-column kernels and panels (with their act_aux) against its
 *   1x1 kernel, bit for bit. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/vec_dot.h"
#include "check.h"
#include "quant/quant.h"
#include "quant_fixture.h"

/* ------------------------------------------------------------- random -- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rng_u64(void) { return check_splitmix64(&rng_state); }

/* Uniform in [-1, 1). */
static float rng_sym(void) { return (float)((double)(rng_u64() >> 11) * 0x1p-52 - 1.0); }

/* A value with extremes: zeros, exact halves, and magnitudes 1e-12 .. 1e4
 * (within fp16 range, as activations are). */
static float rng_value(void) {
    switch (rng_u64() % 10) {
    case 0: return 0.0f;
    case 1: return (float)((int)(rng_u64() % 33) - 16) + 0.5f;
    default: return rng_sym() * powf(10.0f, (float)((int)(rng_u64() % 17) - 12));
    }
}

static void rng_fill(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = rng_value();
}

static int64_t rng_between(int64_t lo, int64_t hi) { return lo + (int64_t)(rng_u64() % (uint64_t)(hi - lo + 1)); }

/* A finite fp16 of random magnitude in [2^-24, 65504], either sign, or zero. */
static hl_half rng_half(void) {
    hl_half h;
    do h = (hl_half)rng_u64();
    while ((h & 0x7c00) == 0x7c00);
    return h;
}

/* A weight row of n elements of `type`: random quants, random finite scales. */
static void rng_weight_row(uint32_t type, void *row, int64_t n) {
    uint8_t *p = row;
    const size_t size = hl_row_size(type, n);
    for (size_t i = 0; i < size; i++) p[i] = (uint8_t)rng_u64();
    switch (type) {
    case GGML_TYPE_F32: rng_fill(row, n); break;
    case GGML_TYPE_F16:
        for (int64_t i = 0; i < n; i++) ((hl_half *)row)[i] = rng_half();
        break;
    case GGML_TYPE_BF16: /* finite, |x| < 2^64 so that products cannot overflow */
        for (int64_t i = 0; i < n; i++) ((hl_bf16 *)row)[i] = hl_fp32_to_bf16(rng_value() * 1e12f);
        break;
    case GGML_TYPE_Q4_0:
        for (int64_t b = 0; b < n / HL_QK; b++) ((block_q4_0 *)row)[b].d = rng_half();
        break;
    case GGML_TYPE_Q4_1:
        for (int64_t b = 0; b < n / HL_QK; b++) {
            ((block_q4_1 *)row)[b].d = rng_half();
            ((block_q4_1 *)row)[b].m = rng_half();
        }
        break;
    case GGML_TYPE_Q5_1:
        for (int64_t b = 0; b < n / HL_QK; b++) {
            ((block_q5_1 *)row)[b].d = rng_half();
            ((block_q5_1 *)row)[b].m = rng_half();
        }
        break;
    case GGML_TYPE_Q8_0:
        for (int64_t b = 0; b < n / HL_QK; b++) ((block_q8_0 *)row)[b].d = rng_half();
        break;
    case GGML_TYPE_Q5_0:
        for (int64_t b = 0; b < n / HL_QK; b++) ((block_q5_0 *)row)[b].d = rng_half();
        break;
    }
}

/* ------------------------------------------------------------ fp16/bf16 -- */

static void test_fp16(void) {
    for (uint32_t h = 0; h < 0x10000; h++) {
        const float f = hl_fp16_to_fp32((hl_half)h);
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
            CHECK_MSG(isnan(f), "fp16 %04x", h);
            CHECK_MSG(hl_fp32_to_fp16(f) == ((h & 0x8000) | 0x7e00), "fp16 NaN %04x", h);
        } else {
            CHECK_MSG(hl_fp32_to_fp16(f) == h, "fp16 %04x -> %g -> %04x", h, f, hl_fp32_to_fp16(f));
        }
    }
    CHECK(hl_fp16_to_fp32(0x3c00) == 1.0f);
    CHECK(hl_fp16_to_fp32(0x0001) == 0x1p-24f);
    CHECK(hl_fp16_to_fp32(0x7c00) == INFINITY && hl_fp16_to_fp32(0xfc00) == -INFINITY);
    CHECK(hl_fp32_to_fp16(-0.0f) == 0x8000);
    CHECK(hl_fp32_to_fp16(65504.0f) == 0x7bff);
    CHECK(hl_fp32_to_fp16(65519.996f) == 0x7bff);
    CHECK(hl_fp32_to_fp16(65520.0f) == 0x7c00); /* tie, rounds to even = inf */
    CHECK(hl_fp32_to_fp16(0x1p-25f) == 0x0000); /* tie between 0 and 2^-24 */
    CHECK(hl_fp32_to_fp16(0x3p-25f) == 0x0002); /* tie between 1 and 2 ulps */
    CHECK(hl_fp32_to_fp16(0x1.001p-25f) == 0x0001);
    CHECK(hl_fp32_to_fp16(1.0f + 0x1p-11f) == 0x3c00); /* tie to even */
    CHECK(hl_fp32_to_fp16(1.0f + 0x3p-11f) == 0x3c02); /* tie to even, up */
    CHECK(hl_fp32_to_fp16(0x1.ff8p-15f) == 0x03ff);    /* largest subnormal */
    CHECK(hl_fp32_to_fp16(0x1.ffbp-15f) == 0x03ff);
    CHECK(hl_fp32_to_fp16(0x1.ffcp-15f) == 0x0400); /* tie, rounds up to normal */
    CHECK(hl_fp32_to_fp16(1e-30f) == 0 && hl_fp32_to_fp16(-1e30f) == 0xfc00);
    CHECK(hl_fp32_to_fp16(NAN) == 0x7e00);
}

static void test_bf16(void) {
    for (uint32_t h = 0; h < 0x10000; h++) {
        const float f = hl_bf16_to_fp32((hl_bf16)h);
        const uint32_t expect = ((h & 0x7f80) == 0x7f80 && (h & 0x7f)) ? (h | 0x40) : h;
        CHECK_MSG(hl_fp32_to_bf16(f) == expect, "bf16 %04x -> %04x", h, hl_fp32_to_bf16(f));
    }
    CHECK(hl_fp32_to_bf16(1.0f + 0x1p-8f) == 0x3f80);               /* tie to even, down */
    CHECK(hl_fp32_to_bf16(1.0f + 0x3p-8f) == 0x3f82);               /* tie to even, up */
    CHECK(hl_fp32_to_bf16(0x1p-130f) == 0x0008);                    /* subnormal kept */
    CHECK(hl_fp32_to_bf16(FLT_MAX) == 0x7f80);                      /* rounds to inf */
    CHECK(hl_fp32_to_bf16(hl_f32_from_bits(0x7f800001)) == 0x7fc0); /* sNaN made quiet */
}

/* ------------------------------------------------------ gguf-py fixtures -- */

static void test_fixtures(void) {
    size_t size = 0;
    uint32_t n_records = 0;
    uint8_t *data = fixture_file_read("reference/quant/quant_fixtures.bin", &size, &n_records);
    if (!data) return;
    size_t pos = 12;
    uint32_t n = 0, n_model = 0;
    fixture fx;
    while (fixture_next(data, size, &pos, &fx)) {
        n++;
        n_model += strncmp(fx.name, "model_", 6) == 0;
        if (fx.kind == FIX_DEQUANTIZE) fixture_check_dequantize(&fx);
        if (fx.kind == FIX_QUANTIZE) fixture_check_quantize(&fx);
    }
    CHECK_MSG(n == n_records && pos == size, "read %u of %u fixture records", n, n_records);
    CHECK_MSG(n_model >= 3, "model rows missing from the fixtures");
    free(data);
}

/* ------------------------------------------- activation quantization -- */

/* Q8_0/Q8_1 against their definition: d = fp16(amax/127), q = roundf(x/d)
 * (with the reciprocal of the unrounded d), s = fp16(d * sum(q)). */
static void test_q8_formula(void) {
    const int64_t n = 1536;
    float *x = malloc(n * sizeof(float));
    block_q8_0 *y0 = malloc(hl_row_size(GGML_TYPE_Q8_0, n));
    block_q8_1 *y1 = malloc(hl_row_size(GGML_TYPE_Q8_1, n));
    for (int iter = 0; iter < 20; iter++) {
        rng_fill(x, n);
        hl_q8_0_from_float(x, y0, n);
        hl_q8_1_from_float(x, y1, n);
        int bad = 0;
        for (int64_t b = 0; b < n / HL_QK; b++) {
            const float *xb = x + b * HL_QK;
            float amax = 0.0f;
            for (int j = 0; j < HL_QK; j++) amax = fabsf(xb[j]) > amax ? fabsf(xb[j]) : amax;
            const float d = amax / 127.0f;
            int sum = 0;
            for (int j = 0; j < HL_QK; j++) {
                const long q = d == 0.0f ? 0 : lroundf(xb[j] * (1.0f / d));
                bad += q < -127 || q > 127 || y0[b].qs[j] != q || y1[b].qs[j] != q;
                sum += (int)q;
            }
            bad += y0[b].d != hl_fp32_to_fp16(d) || y1[b].d != y0[b].d;
            bad += y1[b].s != hl_fp32_to_fp16(d * (float)sum);
        }
        CHECK_MSG(bad == 0, "iteration %d: %d Q8 values differ from the formula", iter, bad);
    }
    free(x);
    free(y0);
    free(y1);
}

/* The activation quantizer against its definition (llama.cpp's x86
 * quantize_row_q8_0/q8_1): d = fp16(amax/127), q = x * (127/amax) rounded
 * halves to even, s = fp16(d * sum(q)); and a block where that differs from
 * the reference quantizer's roundf(x / d). */
static void test_act_q8_formula(void) {
    const int64_t n = 1536;
    float *x = malloc(n * sizeof(float));
    block_q8_0 *y0 = malloc(hl_row_size(GGML_TYPE_Q8_0, n));
    block_q8_1 *y1 = malloc(hl_row_size(GGML_TYPE_Q8_1, n));
    for (int iter = 0; iter < 20; iter++) {
        rng_fill(x, n);
        hl_act_q8_0_from_float(x, y0, n);
        hl_act_q8_1_from_float(x, y1, n);
        int bad = 0;
        for (int64_t b = 0; b < n / HL_QK; b++) {
            const float *xb = x + b * HL_QK;
            float amax = 0.0f;
            for (int j = 0; j < HL_QK; j++) amax = fabsf(xb[j]) > amax ? fabsf(xb[j]) : amax;
            const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
            int sum = 0;
            for (int j = 0; j < HL_QK; j++) {
                const long q = lrintf(xb[j] * id); /* default rounding: halves to even */
                bad += q < -127 || q > 127 || y0[b].qs[j] != q || y1[b].qs[j] != q;
                sum += (int)q;
            }
            const float d = amax / 127.0f;
            bad += y0[b].d != hl_fp32_to_fp16(d) || y1[b].d != y0[b].d;
            bad += y1[b].s != hl_fp32_to_fp16(d * (float)sum);
        }
        CHECK_MSG(bad == 0, "iteration %d: %d activation Q8 values differ from the formula", iter, bad);
    }
    /* amax 127: id = 1, so 2.5 and -0.5 are exact halves; d = 1 for the reference too */
    for (int j = 0; j < HL_QK; j++) x[j] = j == 0 ? 127.0f : j == 1 ? 2.5f : j == 2 ? -0.5f : 0.0f;
    hl_act_q8_0_from_float(x, y0, HL_QK);
    CHECK(y0->qs[0] == 127 && y0->qs[1] == 2 && y0->qs[2] == 0);
    hl_q8_0_from_float(x, y0, HL_QK);
    CHECK(y0->qs[0] == 127 && y0->qs[1] == 3 && y0->qs[2] == -1);
    free(x);
    free(y0);
    free(y1);
}

static const uint32_t weight_types[] = {GGML_TYPE_F32,  GGML_TYPE_F16,  GGML_TYPE_BF16, GGML_TYPE_Q4_0,
                                        GGML_TYPE_Q4_1, GGML_TYPE_Q8_0, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1};
#define N_WEIGHT_TYPES (sizeof weight_types / sizeof weight_types[0])

/* Row lengths: small, odd block counts, the model's 576 and 1536, large. */
static const int64_t lengths[] = {32, 64, 96, 160, 576, 1536, 4096};
#define N_LENGTHS (sizeof lengths / sizeof lengths[0])
#define N_MAX (4096 + 31) /* the longest row, 4 bytes an element at most */

static void test_act_from_float(void) {
    float *x = malloc(N_MAX * sizeof(float));
    uint8_t *ref = malloc(N_MAX * 4), *out = malloc(N_MAX * 4);
    for (size_t t = 0; t < N_WEIGHT_TYPES; t++) {
        const hl_cpu_type_ops *scalar = hl_cpu_type_ops_scalar(weight_types[t]);
        CHECK(scalar != NULL);
        if (!scalar) continue;
        /* Q8 activations: the CPU quantizer; float types: the plain conversion */
        const uint32_t at = scalar->vec_dot_type;
        const hl_from_float_fn want = at == GGML_TYPE_Q8_0   ? hl_act_q8_0_from_float
                                      : at == GGML_TYPE_Q8_1 ? hl_act_q8_1_from_float
                                                             : hl_quant_get(at)->from_float;
        CHECK(scalar->act_from_float == want);
        for (int level = HL_CPU_SCALAR + 1; level < HL_CPU_LEVEL_COUNT; level++) {
            const hl_cpu_type_ops *ops = hl_cpu_type_ops_at(weight_types[t], (hl_cpu_level)level);
            if (!ops) continue;
            CHECK(ops->vec_dot_type == scalar->vec_dot_type);
            const bool q8 = scalar->vec_dot_type == GGML_TYPE_Q8_0 || scalar->vec_dot_type == GGML_TYPE_Q8_1;
            for (int iter = 0; iter < 50; iter++) {
                /* float types: any n; block types: whole blocks */
                const int64_t n = q8 ? HL_QK * rng_between(1, 128) : rng_between(1, N_MAX);
                rng_fill(x, n);
                if (iter % 2) { /* random finite bit patterns; for Q8 within range of an fp16 d */
                    for (int64_t i = 0; i < n; i++) {
                        do x[i] = hl_f32_from_bits((uint32_t)rng_u64());
                        while (!isfinite(x[i]));
                        if (q8) x[i] = fmodf(x[i], 1e6f);
                    }
                }
                const size_t size = hl_row_size(scalar->vec_dot_type, n);
                scalar->act_from_float(x, ref, n);
                ops->act_from_float(x, out, n);
                CHECK_MSG(memcmp(ref, out, size) == 0, "%s act_from_float, type %u, n %lld",
                          hl_cpu_level_name((hl_cpu_level)level), weight_types[t], (long long)n);
            }
        }
    }
    free(x);
    free(ref);
    free(out);
}

/* ---------------------------------------------------------- dot products -- */

/* The sum of the magnitudes of the terms the kernels add up in float: the
 * scale of their rounding errors. Weight and activation given as floats
 * (wf, af) and in their block form (w, a). */
static double dot_magnitude(uint32_t type, int64_t n, const float *wf, const float *af, const void *w, const void *a) {
    double sum = 0.0;
    if (type != GGML_TYPE_Q4_1 && type != GGML_TYPE_Q5_1) {
        for (int64_t i = 0; i < n; i++) sum += fabs((double)wf[i] * af[i]);
        return sum;
    }
    /* d*q*a and m*a apart: they may cancel */
    const block_q8_1 *ab = a;
    for (int64_t b = 0; b < n / HL_QK; b++) {
        const double m = hl_fp16_to_fp32(type == GGML_TYPE_Q4_1 ? ((const block_q4_1 *)w)[b].m
                                                                : ((const block_q5_1 *)w)[b].m);
        sum += fabs(m * hl_fp16_to_fp32(ab[b].s));
        for (int j = 0; j < HL_QK; j++) sum += fabs((double)(wf[b * HL_QK + j] - m) * af[b * HL_QK + j]);
    }
    return sum;
}

/* Buffers for four weight rows and four activation rows of up to N_MAX
 * elements, as blocks (w, a) and as floats (wf, af). */
typedef struct dot_bufs {
    uint8_t w[4][N_MAX * 4], a[4][N_MAX * 4];
    float wf[4][N_MAX], af[4][N_MAX], x[N_MAX];
} dot_bufs;

/* Compares one result with the scalar one, within `tol`. */
static void check_near(const char *what, hl_cpu_level level, uint32_t type, int64_t n, float s, float ref, double tol) {
    CHECK_MSG(fabs((double)s - ref) <= tol, "%s %s type %u n %lld: %.9g, scalar %.9g (tol %.3g)",
              hl_cpu_level_name(level), what, type, (long long)n, s, ref, tol);
}

/* A panel of HL_PANEL_ROWS rows (the four weight rows, again and again, at
 * a stride that is not theirs) against 1..4 activation rows, or more where
 * the kernels take a whole block (panel_block): each result bit for bit
 * vec_dot's, nothing written outside. */
#define PANEL_TOKENS_MAX 19 /* more than vec_dot_avx2.c's token groups of 16 */
static void check_panel(const hl_cpu_type_ops *ops, hl_cpu_level lv, int64_t n, const dot_bufs *bf) {
    const size_t w_stride = hl_row_size(ops->type, n) + 2 * sizeof(hl_half), a_stride = sizeof bf->a[0];
    uint8_t *rows = calloc(HL_PANEL_ROWS, w_stride), *panel = malloc(HL_PANEL_BYTES(n));
    /* the activations' extras where the kernels take them, else NULL, as in a matmul */
    hl_act_aux *aux = ops->act_aux ? malloc(PANEL_TOKENS_MAX * (size_t)(n / HL_QK) * sizeof *aux) : NULL;
    /* 1..4 tokens, or 1..PANEL_TOKENS_MAX (the four rows again and again) where panel_dot takes them all */
    const int max_tok = ops->panel_block ? PANEL_TOKENS_MAX : 4;
    uint8_t *act = malloc(PANEL_TOKENS_MAX * a_stride);
    float y[PANEL_TOKENS_MAX][HL_PANEL_ROWS + 1], one;
    for (int r = 0; r < HL_PANEL_ROWS; r++)
        memcpy(rows + (size_t)r * w_stride, bf->w[r % 4], hl_row_size(ops->type, n));
    for (int c = 0; c < PANEL_TOKENS_MAX; c++) memcpy(act + (size_t)c * a_stride, bf->a[c % 4], a_stride);
    for (int c = 4; aux && c < PANEL_TOKENS_MAX; c++)
        hl_act_q8_0_aux(n, aux + (size_t)c * (size_t)(n / HL_QK), bf->a[c % 4]);
    for (int c = 0; aux && c < 4; c++) {
        hl_act_aux *ac = aux + (size_t)c * (size_t)(n / HL_QK);
        hl_act_q8_0_aux(n, ac, bf->a[c]);
        for (int64_t b = 0; b < n / HL_QK; b++) {
            hl_act_aux got[1];
            ops->act_aux(HL_QK, got, bf->a[c] + (size_t)b * sizeof(block_q8_0));
            CHECK_MSG(memcmp(got, &ac[b], sizeof got) == 0, "%s act_aux type %u block %lld", hl_cpu_level_name(lv),
                      ops->type, (long long)b);
        }
    }
    ops->pack_panel(n, panel, rows, w_stride);
    for (int n_tok = 1; n_tok <= max_tok; n_tok++) {
        memset(y, 0xff, sizeof y);
        ops->panel_dot(n, &y[0][0], HL_PANEL_ROWS + 1, panel, act, a_stride, aux, aux ? (size_t)(n / HL_QK) : 0, n_tok);
        for (int c = 0; c < PANEL_TOKENS_MAX; c++) {
            CHECK_MSG(isnan(y[c][HL_PANEL_ROWS]) && (c < n_tok || isnan(y[c][0])),
                      "%s panel_dot type %u n %lld: "
                      "wrote outside its %d tokens",
                      hl_cpu_level_name(lv), ops->type, (long long)n, n_tok);
            for (int r = 0; c < n_tok && r < HL_PANEL_ROWS; r++) {
                ops->vec_dot(n, &one, bf->w[r % 4], bf->a[c % 4]);
                CHECK_MSG(memcmp(&one, &y[c][r], sizeof one) == 0,
                          "%s panel_dot type %u n %lld row %d token %d/%d: "
                          "%.9g, 1x1 %.9g",
                          hl_cpu_level_name(lv), ops->type, (long long)n, r, c, n_tok, y[c][r], one);
            }
        }
    }
    free(rows);
    free(panel);
    free(aux);
    free(act);
}

/* Checks one weight type at one length on four random weight rows and four
 * activation rows: the scalar kernel against the dequantized floats, and
 * every other level's kernels (1x1, 4r, 4c) against the scalar kernel. */
static void check_dot(uint32_t type, int64_t n, dot_bufs *bf) {
    const hl_cpu_type_ops *scalar = hl_cpu_type_ops_scalar(type);
    const uint32_t at = scalar->vec_dot_type;
    const size_t w_stride = sizeof bf->w[0], a_stride = sizeof bf->a[0];
    for (int k = 0; k < 4; k++) {
        rng_weight_row(type, bf->w[k], n);
        hl_quant_get(type)->to_float(bf->w[k], bf->wf[k], n);
        rng_fill(bf->x, n);
        scalar->act_from_float(bf->x, bf->a[k], n);
        hl_quant_get(at)->to_float(bf->a[k], bf->af[k], n);
    }
    float ref[4][4]; /* [weight row][activation row] */
    double tol[4][4];
    for (int r = 0; r < 4; r++) {
        for (int c = 0; c < 4; c++) {
            const double mag = dot_magnitude(type, n, bf->wf[r], bf->af[c], bf->w[r], bf->a[c]);
            tol[r][c] = (double)(n / 8 + 16) * FLT_EPSILON * mag + 1e-37;
            double exact = 0.0;
            for (int64_t i = 0; i < n; i++) exact += (double)bf->wf[r][i] * bf->af[c][i];
            scalar->vec_dot(n, &ref[r][c], bf->w[r], bf->a[c]);
            /* Q4_1 and Q5_1 use s = fp16(d * sum(q)) in place of the activations' sum. */
            const double s_err = at == GGML_TYPE_Q8_1 ? mag * 0x1p-10 : 0.0;
            CHECK_MSG(fabs(ref[r][c] - exact) <= tol[r][c] + s_err,
                      "scalar dot type %u n %lld: %.9g, exact %.9g (tol %.3g)", type, (long long)n, ref[r][c], exact,
                      tol[r][c] + s_err);
        }
    }
    for (int level = HL_CPU_SCALAR + 1; level < HL_CPU_LEVEL_COUNT; level++) {
        const hl_cpu_level lv = (hl_cpu_level)level;
        const hl_cpu_type_ops *ops = hl_cpu_type_ops_at(type, lv);
        if (!ops) continue;
        float s[4];
        for (int k = 0; k < 4; k++) {
            ops->vec_dot(n, &s[k], bf->w[k], bf->a[k]);
            check_near("vec_dot", lv, type, n, s[k], ref[k][k], tol[k][k]);
        }
        /* the tiles give each result the 1x1 kernel's bits (vec_dot.h) */
        float one;
        if (ops->vec_dot_4r) { /* weight rows 0..3 with activation row 1 */
            ops->vec_dot_4r(n, s, bf->w, w_stride, bf->a[1]);
            for (int r = 0; r < 4; r++) {
                check_near("vec_dot_4r", lv, type, n, s[r], ref[r][1], tol[r][1]);
                ops->vec_dot(n, &one, bf->w[r], bf->a[1]);
                CHECK_MSG(memcmp(&one, &s[r], sizeof one) == 0, "%s vec_dot_4r type %u n %lld: %.9g, 1x1 %.9g",
                          hl_cpu_level_name(lv), type, (long long)n, s[r], one);
            }
        }
        if (ops->vec_dot_4c) { /* weight row 2 with activation rows 0..3 */
            ops->vec_dot_4c(n, s, bf->w[2], bf->a, a_stride);
            for (int c = 0; c < 4; c++) {
                check_near("vec_dot_4c", lv, type, n, s[c], ref[2][c], tol[2][c]);
                ops->vec_dot(n, &one, bf->w[2], bf->a[c]);
                CHECK_MSG(memcmp(&one, &s[c], sizeof one) == 0, "%s vec_dot_4c type %u n %lld: %.9g, 1x1 %.9g",
                          hl_cpu_level_name(lv), type, (long long)n, s[c], one);
            }
        }
        if (ops->panel_dot) check_panel(ops, lv, n, bf);
    }
}

static void test_dots(void) {
    dot_bufs *bf = malloc(sizeof *bf);
    for (size_t t = 0; t < N_WEIGHT_TYPES; t++) {
        const uint32_t type = weight_types[t];
        const bool any_n = hl_row_size(type, 1) != 0; /* float types: any length */
        for (int iter = 0; iter < 10; iter++) {
            for (size_t l = 0; l < N_LENGTHS; l++) check_dot(type, lengths[l], bf);
            if (any_n) check_dot(type, rng_between(1, N_MAX), bf); /* SIMD tails */
        }
    }
    free(bf);
}

/* ------------------------------------------------------------ the tables -- */

static void test_tables(void) {
    CHECK(hl_row_size(GGML_TYPE_F32, 576) == 2304);
    CHECK(hl_row_size(GGML_TYPE_Q4_1, 576) == 360);
    CHECK(hl_row_size(GGML_TYPE_Q8_0, 576) == 612);
    CHECK(hl_row_size(GGML_TYPE_Q8_1, 1536) == 48 * 36);
    CHECK(hl_row_size(GGML_TYPE_Q4_0, 33) == 0);
    CHECK(hl_row_size(GGML_TYPE_Q4_0, -32) == 0);
    CHECK(hl_row_size(4, 32) == 0); /* removed type */
    CHECK(hl_quant_get(GGML_TYPE_COUNT) == NULL);
    CHECK(hl_cpu_type_ops_get(GGML_TYPE_Q8_1) == NULL); /* an activation type only */
    CHECK(hl_cpu_type_ops_at(GGML_TYPE_Q4_0, HL_CPU_LEVEL_COUNT) == NULL);
    for (size_t t = 0; t < N_WEIGHT_TYPES; t++) {
        const hl_quant_traits *q = hl_quant_get(weight_types[t]);
        CHECK(q && q->type == weight_types[t] && q->to_float && q->from_float);
        const hl_cpu_type_ops *best = hl_cpu_type_ops_get(weight_types[t]);
        CHECK(best && best->type == weight_types[t] && best->vec_dot && best->act_from_float);
    }
    printf("cpu: %s; kernels: %s\n", hl_cpu_features_str(), hl_cpu_level_name(hl_cpu_level_best()));
}

int main(void) {
    test_tables();
    test_fp16();
    test_bf16();
    test_fixtures();
    test_q8_formula();
    test_act_q8_formula();
    test_act_from_float();
    test_dots();
    return check_report();
}
