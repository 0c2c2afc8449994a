/* Tests of the block formats Q5_0, Q5_1, Q2_K ... Q6_K and Q8_K (the
 * fixtures are written by reference/quant/make_kquant_fixtures.py):
 * - dequantization bit-exact with gguf-py, on random blocks (all quants and
 *   sub-block scales, extreme fp16 scales) and on blocks llama.cpp made of
 *   real weights;
 * - quantization: Q5_0/Q5_1 byte-exact with gguf-py; Q2_K ... Q6_K and Q8_K
 *   byte-exact with llama.cpp's reference quantizers, and in any case with a
 *   round-trip RMSE no worse than llama.cpp's on the same data (a matrix
 *   shaped like LLM weights, corner-case super-blocks, real weights);
 * - Q8_K against its definition;
 * - the table: every type registered, row sizes. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "quant/quant.h"
#include "quant_fixture.h"

static const uint32_t new_types[] = {GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K,
                                     GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K, GGML_TYPE_Q8_K};
#define N_NEW_TYPES (sizeof new_types / sizeof new_types[0])

/* ------------------------------------------------------------- random -- */

static uint64_t rng_state = 0x853c49e6748fea9bu;

static uint64_t rng_u64(void) { return check_splitmix64(&rng_state); }

/* A value with extremes: zeros, exact halves, and magnitudes 1e-30 .. 1e6. */
static float rng_value(void) {
    const uint64_t r = rng_u64();
    switch (r % 10) {
    case 0: return 0.0f;
    case 1: return (float)((int)(r >> 8 & 63) - 32) + 0.5f;
    default: {
        const float u = (float)((double)(r >> 11) * 0x1p-52 - 1.0);
        return u * powf(10.0f, (float)((int)(r >> 4 & 31) - 24));
    }
    }
}

/* ------------------------------------------------------------ the table -- */

static void test_tables(void) {
    for (size_t t = 0; t < N_NEW_TYPES; t++) {
        const hl_quant_traits *q = hl_quant_get(new_types[t]);
        CHECK_MSG(q && q->type == new_types[t] && q->to_float && q->from_float, "type %u", new_types[t]);
    }
    CHECK(hl_row_size(GGML_TYPE_Q5_0, 4096) == 128 * sizeof(block_q5_0));
    CHECK(hl_row_size(GGML_TYPE_Q5_1, 64) == 2 * sizeof(block_q5_1));
    CHECK(hl_row_size(GGML_TYPE_Q2_K, 4096) == 16 * sizeof(block_q2_K));
    CHECK(hl_row_size(GGML_TYPE_Q3_K, 256) == sizeof(block_q3_K));
    CHECK(hl_row_size(GGML_TYPE_Q4_K, 1536) == 6 * sizeof(block_q4_K));
    CHECK(hl_row_size(GGML_TYPE_Q5_K, 512) == 2 * sizeof(block_q5_K));
    CHECK(hl_row_size(GGML_TYPE_Q6_K, 768) == 3 * sizeof(block_q6_K));
    CHECK(hl_row_size(GGML_TYPE_Q8_K, 256) == sizeof(block_q8_K));
    CHECK(hl_row_size(GGML_TYPE_Q4_K, 576) == 0); /* not whole super-blocks */
}

/* ------------------------------------------------------------ fixtures -- */

/* sqrt(mean((to_float(q) - x)^2)) over a record's rows, in double. */
static double roundtrip_rmse(const fixture *fx, const float *x, const uint8_t *q) {
    const hl_quant_traits *qt = hl_quant_get(fx->type);
    const size_t row_bytes = hl_row_size(fx->type, fx->n_per_row);
    float *y = malloc(fx->n_per_row * sizeof(float));
    double sum = 0.0;
    for (uint32_t r = 0; r < fx->n_rows; r++) {
        qt->to_float(q + r * row_bytes, y, fx->n_per_row);
        for (uint32_t i = 0; i < fx->n_per_row; i++) {
            const double e = (double)y[i] - (double)x[(size_t)r * fx->n_per_row + i];
            sum += e * e;
        }
    }
    free(y);
    return sqrt(sum / ((double)fx->n_rows * fx->n_per_row));
}

/* Kind 3 against the input record before it: hearth's bytes and RMSE. The
 * RMSE bar holds where the reference's is finite (the corner cases include
 * values whose scale overflows fp16). */
static void check_reference(const fixture *in, const fixture *fx) {
    const size_t row_bytes = hl_row_size(fx->type, fx->n_per_row);
    const bool sizes = in && hl_quant_get(fx->type) && in->n_rows == fx->n_rows && in->n_per_row == fx->n_per_row &&
                       row_bytes * fx->n_rows == fx->a_bytes && fx->b_bytes == sizeof(double);
    CHECK_MSG(sizes, "%s: sizes, or no input record before it", fx->name);
    if (!sizes) return;
    const char *reference = fx->type == GGML_TYPE_Q5_0 || fx->type == GGML_TYPE_Q5_1 ? "gguf-py" : "llama.cpp";
    float *x = malloc(in->a_bytes);
    uint8_t *out = malloc(fx->a_bytes);
    memcpy(x, in->a, in->a_bytes);
    const int bad = fixture_quantize_rows(fx, x, fx->a, out, reference);
    CHECK_MSG(bad == 0, "%s: %d of %u rows differ from %s", fx->name, bad, fx->n_rows, reference);
    double ref_rmse;
    memcpy(&ref_rmse, fx->b, sizeof ref_rmse);
    const double rmse = roundtrip_rmse(fx, x, out);
    if (isfinite(ref_rmse)) {
        CHECK_MSG(rmse <= ref_rmse * (1.0 + 1e-9), "%s: RMSE %.9g, %s %.9g", fx->name, rmse, reference, ref_rmse);
    }
    printf("  %-14s %-5s rmse %.9g, %s %.9g, %s\n", fx->name, hl_ggml_type_get(fx->type)->name, rmse, reference,
           ref_rmse, bad ? "bytes differ" : "same bytes");
    free(x);
    free(out);
}

static void test_fixtures(void) {
    size_t size = 0;
    uint32_t n_records = 0;
    uint8_t *data = fixture_file_read("reference/quant/kquant_fixtures.bin", &size, &n_records);
    if (!data) return;
    size_t pos = 12;
    uint32_t n = 0, seen[GGML_TYPE_COUNT][4] = {{0}};
    fixture fx, input = {0};
    bool have_input = false;
    while (fixture_next(data, size, &pos, &fx)) {
        n++;
        if (fx.type < GGML_TYPE_COUNT && fx.kind < 4) seen[fx.type][fx.kind]++;
        if (fx.kind == FIX_DEQUANTIZE) fixture_check_dequantize(&fx);
        if (fx.kind == FIX_INPUT) {
            input = fx;
            have_input = fx.type == GGML_TYPE_F32 && fx.a_bytes == (uint64_t)fx.n_rows * fx.n_per_row * sizeof(float);
            CHECK_MSG(have_input, "%s: sizes", fx.name);
        }
        if (fx.kind == FIX_REFERENCE) check_reference(have_input ? &input : NULL, &fx);
    }
    CHECK_MSG(n == n_records && pos == size, "read %u of %u fixture records", n, n_records);
    for (size_t t = 0; t < N_NEW_TYPES; t++) { /* every type checked both ways */
        const uint32_t type = new_types[t];
        CHECK_MSG(seen[type][FIX_REFERENCE] >= 2, "type %u: quantization not covered", type);
        const bool dequantized = type == GGML_TYPE_Q8_K || seen[type][FIX_DEQUANTIZE] >= 1; /* Q8_K: test_q8_K */
        CHECK_MSG(dequantized, "type %u: dequantization not covered", type);
    }
    free(data);
}

/* ------------------------------------------------------------------ Q8_K -- */

/* Q8_K against its definition (quantize_row_q8_K_ref): max = the element of
 * largest magnitude (the first on ties), q = min(127, rint(x * (-127/max))),
 * halves to even, d = 1/(-127/max), bsums[i] = sum of q[16i .. 16i+15]; an
 * all-zero block is all zero. Dequantized: x = d * q. */
static void check_q8_K_block(const float *x, const block_q8_K *y, int *bad) {
    float amax = 0.0f, max = 0.0f;
    for (int e = 0; e < HL_QK_K; e++) {
        if (fabsf(x[e]) > amax) {
            amax = fabsf(x[e]);
            max = x[e];
        }
    }
    const float iscale = amax != 0.0f ? -127.0f / max : 0.0f;
    *bad += hl_f32_bits(y->d) != hl_f32_bits(amax != 0.0f ? 1.0f / iscale : 0.0f);
    for (int i = 0; i < HL_QK_K / 16; i++) {
        int sum = 0;
        for (int e = 16 * i; e < 16 * i + 16; e++) {
            long q = lrintf(x[e] * iscale);
            q = q > 127 ? 127 : q;
            *bad += q < -127 || y->qs[e] != q;
            sum += y->qs[e];
        }
        *bad += y->bsums[i] != sum;
    }
}

static void test_q8_K(void) {
    enum { N = 8 * HL_QK_K };
    float *x = malloc(N * sizeof(float)), *back = malloc(N * sizeof(float));
    block_q8_K *y = malloc(N / HL_QK_K * sizeof(block_q8_K));
    for (int iter = 0; iter < 50; iter++) {
        for (int i = 0; i < N; i++) x[i] = rng_value();
        memset(x + HL_QK_K, 0, HL_QK_K * sizeof(float)); /* an all-zero block */
        x[2 * HL_QK_K + 3] = 1e7f;                       /* two of the largest magnitude: the first one counts */
        x[2 * HL_QK_K + 5] = -1e7f;
        hl_q8_K_from_float(x, y, N);
        hl_q8_K_to_float(y, back, N);
        int bad = 0;
        for (int b = 0; b < N / HL_QK_K; b++) {
            check_q8_K_block(x + b * HL_QK_K, &y[b], &bad);
            for (int e = 0; e < HL_QK_K; e++) {
                bad += hl_f32_bits(back[b * HL_QK_K + e]) != hl_f32_bits(y[b].d * (float)y[b].qs[e]);
            }
        }
        CHECK_MSG(bad == 0, "iteration %d: %d Q8_K values differ from the definition", iter, bad);
    }
    free(x);
    free(back);
    free(y);
}

int main(void) {
    test_tables();
    test_fixtures();
    test_q8_K();
    return check_report();
}
