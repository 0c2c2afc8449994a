/* Tests of the CPU matmul as a whole (src/backend/cpu/matmul.c): for
 * each weight type, on shapes that are not multiples of a panel (16 rows),
 * of a token group (4), of a block of panel tokens (64) or of the thread count, every output against the
 * scalar oracle's dot product within float rounding, and bit for bit the
 * same whatever the number of threads. Covers the one-token, few-token and
 * panel paths (vec_dot.h) and the rows left after the last whole panel. */
#include <float.h>
#include <stdbool.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/vec_dot.h"
#include "backend/host.h"
#include "backend/ops.h"
#include "check.h"
#include "quant/quant.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rng_u64(void) { return check_splitmix64(&rng_state); }

static float rng_float(void) { /* in [-1, 1) */
    return (float)((double)(rng_u64() >> 11) * 0x1p-52 - 1.0);
}

#define MAX_TOKENS 140
#define MAX_ROW 8192
#define MAX_OUT 53

/* y[t][r] for n_tok tokens through a backend of n_threads threads. */
static void run_matmul(int n_threads, const hl_tensor *w, const float *x, int64_t n_tok, float *y) {
    const hl_cpu_limits limits = {.n_threads = n_threads, .max_tokens = MAX_TOKENS, .max_row = MAX_ROW, .n_ctx = 16};
    hl_backend *b;
    CHECK(hl_backend_cpu_init(&limits, &b) == HEARTH_OK);
    hl_tensor xt = {.type = GGML_TYPE_F32, .ne = {w->ne[0], n_tok, 1, 1}, .data = (void *)x, .backend = b};
    hl_tensor yt = {.type = GGML_TYPE_F32, .ne = {w->ne[1], n_tok, 1, 1}, .data = y, .backend = b};
    hl_tensor wt = *w;
    wt.backend = b;
    CHECK(hl_matmul(b, &wt, &xt, &yt) == HEARTH_OK);
    hl_backend_cpu_free(b);
}

static void check_type(uint32_t type, int64_t d_in, int64_t d_out, int64_t n_tok) {
    const size_t row = hl_row_size(type, d_in);
    uint8_t *wdata = malloc(row * (size_t)d_out);
    float *wf = malloc(sizeof(float) * (size_t)(d_in * d_out)), *x = malloc(sizeof(float) * (size_t)(d_in * n_tok));
    float *y1 = malloc(sizeof(float) * (size_t)(d_out * n_tok)), *yn = malloc(sizeof(float) * (size_t)(d_out * n_tok));
    for (int64_t i = 0; i < d_in * d_out; i++) wf[i] = rng_float();
    for (int64_t i = 0; i < d_in * n_tok; i++) x[i] = rng_float();
    for (int64_t r = 0; r < d_out; r++) hl_quant_get(type)->from_float(wf + r * d_in, wdata + (size_t)r * row, d_in);
    const hl_tensor w = {.type = type, .ne = {d_in, d_out, 1, 1}, .data = wdata};
    run_matmul(1, &w, x, n_tok, y1);
    /* the oracle: the scalar kernels on the scalar level's activations */
    const hl_cpu_type_ops *scalar = hl_cpu_type_ops_scalar(type);
    uint8_t act[MAX_ROW * 4];
    int bad = 0;
    for (int64_t t = 0; t < n_tok; t++) {
        scalar->act_from_float(x + t * d_in, act, d_in);
        for (int64_t r = 0; r < d_out; r++) {
            float want;
            scalar->vec_dot(d_in, &want, wdata + (size_t)r * row, act);
            double mag = 0.0;
            for (int64_t i = 0; i < d_in; i++) mag += fabs((double)wf[r * d_in + i] * x[t * d_in + i]);
            bad += !(fabs((double)y1[t * d_out + r] - want) <= (double)(d_in / 8 + 16) * FLT_EPSILON * 4 * mag);
        }
    }
    CHECK_MSG(bad == 0, "%s %lld x %lld, %lld tokens: %d outputs off the scalar oracle", hl_ggml_type_get(type)->name,
              (long long)d_out, (long long)d_in, (long long)n_tok, bad);
    for (int n_threads = 2; n_threads <= 3; n_threads++) {
        run_matmul(n_threads, &w, x, n_tok, yn);
        CHECK_MSG(memcmp(y1, yn, sizeof(float) * (size_t)(d_out * n_tok)) == 0,
                  "%s %lld x %lld, %lld tokens: %d threads give other bits than 1", hl_ggml_type_get(type)->name,
                  (long long)d_out, (long long)d_in, (long long)n_tok, n_threads);
    }
    free(wdata);
    free(wf);
    free(x);
    free(y1);
    free(yn);
}

/* matmul_n (cpu/matmul.c: weights whose kernels convert x alike share one
 * conversion and one fork-join): every output bit for bit the matmul's of
 * its weight alone, for runs that share (Q8_0 Q8_0 Q8_0; Q4_K Q6_K, one
 * activation type), that do not (Q8_0 then Q4_0, whose panels also take
 * the activations' sums; F16 then F32) and that share after one that does
 * not (Q4_0 Q8_0 Q8_0), on 2 threads, one token to two blocks of panels. */
static void check_matmul_n(const uint32_t *types, int n, int64_t d_in, int64_t n_tok) {
    const hl_cpu_limits limits = {.n_threads = 2, .max_tokens = MAX_TOKENS, .max_row = MAX_ROW, .n_ctx = 16};
    hl_backend *b;
    CHECK(hl_backend_cpu_init(&limits, &b) == HEARTH_OK);
    const int64_t d_out[3] = {37, 16, 53};
    float *x = malloc(sizeof(float) * (size_t)(d_in * n_tok)), *wf = malloc(sizeof(float) * (size_t)d_in);
    for (int64_t i = 0; i < d_in * n_tok; i++) x[i] = rng_float();
    hl_tensor xt = {.type = GGML_TYPE_F32, .ne = {d_in, n_tok, 1, 1}, .data = x, .backend = b};
    hl_tensor w[3], y[3];
    const hl_tensor *wp[3];
    hl_tensor *yp[3];
    float *one[3];
    for (int i = 0; i < n; i++) {
        const size_t row = hl_row_size(types[i], d_in);
        uint8_t *wdata = malloc(row * (size_t)d_out[i]);
        for (int64_t r = 0; r < d_out[i]; r++) {
            for (int64_t k = 0; k < d_in; k++) wf[k] = rng_float();
            hl_quant_get(types[i])->from_float(wf, wdata + (size_t)r * row, d_in);
        }
        w[i] = (hl_tensor){.type = types[i], .ne = {d_in, d_out[i], 1, 1}, .data = wdata, .backend = b};
        y[i] = (hl_tensor){.type = GGML_TYPE_F32,
                           .ne = {d_out[i], n_tok, 1, 1},
                           .data = malloc(sizeof(float) * (size_t)(d_out[i] * n_tok)),
                           .backend = b};
        one[i] = malloc(sizeof(float) * (size_t)(d_out[i] * n_tok));
        hl_tensor alone = y[i];
        alone.data = one[i];
        CHECK(hl_matmul(b, &w[i], &xt, &alone) == HEARTH_OK);
        wp[i] = &w[i], yp[i] = &y[i];
    }
    CHECK(hl_matmul_n(b, n, wp, &xt, yp) == HEARTH_OK);
    for (int i = 0; i < n; i++) {
        CHECK_MSG(memcmp(y[i].data, one[i], sizeof(float) * (size_t)(d_out[i] * n_tok)) == 0,
                  "matmul_n weight %d of %d (%s), %lld tokens: other bits than matmul alone", i, n,
                  hl_ggml_type_get(types[i])->name, (long long)n_tok);
        free(w[i].data), free(y[i].data), free(one[i]);
    }
    free(x);
    free(wf);
    hl_backend_cpu_free(b);
}

int main(void) {
    static const uint32_t types[] = {GGML_TYPE_F32,  GGML_TYPE_F16,  GGML_TYPE_BF16, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1,
                                     GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q8_0, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K,
                                     GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K};
    static const int64_t tokens[] = {1, 3, 8, 11, 13, 70}; /* 70: two blocks of panel tokens (cpu/matmul.c) */
    static const int64_t outs[] = {16, 37, 53};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        const bool k = hl_ggml_type_get(types[i])->blck_size == HL_QK_K;
        for (size_t o = 0; o < sizeof outs / sizeof outs[0]; o++) {
            for (size_t t = 0; t < sizeof tokens / sizeof tokens[0]; t++) {
                check_type(types[i], k ? 512 : 96, outs[o], tokens[t]);
                check_type(types[i], k ? 768 : 736, outs[o], tokens[t]);
            }
        }
        /* two blocks of panel_block tokens (72 + 68, cpu/matmul.c): float
         * activations of 2048-element rows (8 KiB each), Q8_0 ones of 8192 */
        if (types[i] == GGML_TYPE_F32 || types[i] == GGML_TYPE_F16 || types[i] == GGML_TYPE_BF16)
            check_type(types[i], 2048, 16, MAX_TOKENS);
        if (types[i] == GGML_TYPE_Q8_0) check_type(types[i], 8192, 16, MAX_TOKENS);
    }
    static const uint32_t runs[][3] = {{GGML_TYPE_Q8_0, GGML_TYPE_Q8_0, GGML_TYPE_Q8_0},
                                       {GGML_TYPE_Q4_K, GGML_TYPE_Q6_K, 0},
                                       {GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, 0},
                                       {GGML_TYPE_F16, GGML_TYPE_F32, 0},
                                       {GGML_TYPE_Q4_0, GGML_TYPE_Q8_0, GGML_TYPE_Q8_0}};
    static const int run_len[] = {3, 2, 2, 2, 3};
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++)
        for (size_t t = 0; t < sizeof tokens / sizeof tokens[0]; t++)
            check_matmul_n(runs[r], run_len[r], 512, tokens[t]);
    printf("cpu matmul: kernels %s\n", hl_cpu_level_name(hl_cpu_level_best()));
    return check_report();
}
