/* Tests of the CPU kernels for float weights (F32, F16, BF16; vec_dot_f_*.c):
 * - every SIMD level's batch kernels (hl_cpu_type_ops.batch: 1x1, 4r, 4c,
 *   panels) against llamafile's tinyBLAS<16> order, written out plainly
 *   below, bit for bit where the row length is a multiple of 16, and against
 *   the level's one-token kernel (ggml's vec_dot order) where it is not;
 *   every kernel near the scalar oracle; the 4-row decode kernel against the
 *   1x1 one bit for bit; the levels against each other bit for bit;
 * - when a matmul switches to the batch kernels (hl_cpu_batch_applies);
 * - llama.cpp's own matrix products (reference/quant/vec_dot_f_fixtures.bin,
 *   written by make_vec_dot_f_fixtures.py) bit for bit: from every SIMD
 *   level's kernels as a matmul picks them, and from whole matmuls of the
 *   CPU backend with 1 and 2 threads. */
#include <float.h>
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

static const uint32_t types[] = {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16};
#define N_TYPES (sizeof types / sizeof types[0])

static uint64_t rng_state = 0x6a09e667f3bcc909u;

static uint64_t rng_u64(void) { return check_splitmix64(&rng_state); }

/* Roughly normal, times a scale over four orders of magnitude; some zeros. */
static float rng_value(void) {
    double s = 0.0;
    for (int i = 0; i < 4; i++) s += (double)(rng_u64() >> 11) * 0x1p-52 - 1.0;
    const uint64_t r = rng_u64() % 100;
    return r < 2 ? 0.0f : (float)(s * exp((double)(rng_u64() % 1000) / 1000.0 * 9.0 - 6.0));
}

/* ------------------------------------------------ the orders, written out -- */

/* _mm512_reduce_add_ps as GCC defines it (avx512fintrin.h), which tinyBLAS's
 * hsum calls: s[j] = v[j] + v[j+8], t[j] = s[j] + s[j+4], then (t[0] +
 * t[2]) + (t[1] + t[3]). */
static float reduce16(const float v[16]) {
    float s[8], t[4];
    for (int j = 0; j < 8; j++) s[j] = v[j] + v[j + 8];
    for (int j = 0; j < 4; j++) t[j] = s[j] + s[j + 4];
    return (t[0] + t[2]) + (t[1] + t[3]);
}

/* llamafile's tinyBLAS<16, __m512> (ggml-cpu/llamafile/sgemm.cpp,
 * gemm_bloc): per output one 16-lane accumulator, lane j = fma(w[l + j],
 * a[l + j], lane j) for l = 0, 16, 32, ..., n - 16 (madd = _mm512_fmadd_ps;
 * loads convert F16 / BF16 to float exactly); then hsum. n % 16 == 0. */
static float tinyblas_dot(const float *w, const float *a, int64_t n) {
    float acc[16] = {0};
    for (int64_t l = 0; l < n; l += 16)
        for (int j = 0; j < 16; j++) acc[j] = fmaf(w[l + j], a[l + j], acc[j]);
    return reduce16(acc);
}

/* ------------------------------------------------------------- kernels -- */

#define N_MAX 2064

typedef struct bufs {
    uint8_t w[4][N_MAX * 4], a[4][N_MAX * 4], ab[4][N_MAX * 4]; /* ab: a in the batch kernels' format */
    float wf[4][N_MAX], af[4][N_MAX], x[N_MAX], xa[4][N_MAX];
} bufs;

static const char *type_name(uint32_t type) { return hl_ggml_type_get(type)->name; }

static void check_same(const char *what, hl_cpu_level lv, uint32_t type, int64_t n, float s, float want) {
    CHECK_MSG(memcmp(&s, &want, sizeof s) == 0, "%s %s %s n %lld: %.9g, expected %.9g", hl_cpu_level_name(lv), what,
              type_name(type), (long long)n, s, want);
}

/* A panel of HL_PANEL_ROWS rows (the four weight rows again and again, at a
 * stride not theirs) with 1..4 activation rows, or 1..14 and past the AVX2
 * kernel's blocks of 48 tokens up to PANEL_TOKENS_MAX (the four again and
 * again: every split into tiles) where panel_dot takes them all
 * (panel_block): each result the batch vec_dot's bits, nothing written
 * outside. */
#define PANEL_TOKENS_MAX 98
static const int panel_tokens[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 47, 64, 81, PANEL_TOKENS_MAX};
static void check_panel(const hl_cpu_type_ops *ops, hl_cpu_level lv, int64_t n, const bufs *bf) {
    const size_t row = hl_row_size(ops->type, n), w_stride = row + 64, a_stride = sizeof bf->ab[0];
    const int max_tok = ops->panel_block ? PANEL_TOKENS_MAX : 4;
    uint8_t *rows = calloc(HL_PANEL_ROWS, w_stride), *panel = malloc(HL_PANEL_BYTES(n));
    uint8_t *act = malloc(PANEL_TOKENS_MAX * a_stride);
    float y[PANEL_TOKENS_MAX][HL_PANEL_ROWS + 1], want;
    for (int r = 0; r < HL_PANEL_ROWS; r++) memcpy(rows + (size_t)r * w_stride, bf->w[r % 4], row);
    for (int c = 0; c < PANEL_TOKENS_MAX; c++) memcpy(act + (size_t)c * a_stride, bf->ab[c % 4], a_stride);
    ops->pack_panel(n, panel, rows, w_stride);
    for (size_t i = 0; i < sizeof panel_tokens / sizeof panel_tokens[0] && panel_tokens[i] <= max_tok; i++) {
        const int n_tok = panel_tokens[i];
        memset(y, 0xff, sizeof y);
        ops->panel_dot(n, &y[0][0], HL_PANEL_ROWS + 1, panel, act, a_stride, NULL, 0, n_tok);
        for (int c = 0; c < PANEL_TOKENS_MAX; c++) {
            CHECK(isnan(y[c][HL_PANEL_ROWS]) && (c < n_tok || isnan(y[c][0])));
            for (int r = 0; c < n_tok && r < HL_PANEL_ROWS; r++) {
                ops->vec_dot(n, &want, bf->w[r % 4], bf->ab[c % 4]);
                check_same("batch panel_dot", lv, ops->type, n, y[c][r], want);
            }
        }
    }
    free(rows);
    free(panel);
    free(act);
}

/* One type at one length: four weight rows by four activation rows through
 * every level's kernels. */
static void check_dot(uint32_t type, int64_t n, bufs *bf) {
    const hl_cpu_type_ops *scalar = hl_cpu_type_ops_scalar(type);
    for (int k = 0; k < 4; k++) {
        for (int64_t i = 0; i < n; i++) bf->x[i] = rng_value();
        hl_quant_get(type)->from_float(bf->x, bf->w[k], n);
        hl_quant_get(type)->to_float(bf->w[k], bf->wf[k], n);
        for (int64_t i = 0; i < n; i++) bf->xa[k][i] = 100.0f * rng_value();
        scalar->act_from_float(bf->xa[k], bf->a[k], n);
        hl_quant_get(type)->to_float(bf->a[k], bf->af[k], n);
    }
    float ref[4][4], first[2][4][4]; /* scalar; the first level's 1x1 and batch 1x1 */
    double tol[4][4];
    for (int r = 0; r < 4; r++) {
        for (int c = 0; c < 4; c++) {
            double mag = 0.0;
            for (int64_t i = 0; i < n; i++) mag += fabs((double)bf->wf[r][i] * bf->af[c][i]);
            tol[r][c] = (double)(n / 8 + 16) * FLT_EPSILON * mag + 1e-37;
            scalar->vec_dot(n, &ref[r][c], bf->w[r], bf->a[c]);
        }
    }
    bool have_first = false;
    for (int level = HL_CPU_SCALAR + 1; level < HL_CPU_LEVEL_COUNT; level++) {
        const hl_cpu_level lv = (hl_cpu_level)level;
        const hl_cpu_type_ops *ops = hl_cpu_type_ops_at(type, lv);
        if (!ops) continue;
        CHECK_MSG(ops->batch && !ops->batch->batch, "%s %s: no batch kernels", hl_cpu_level_name(lv), type_name(type));
        for (int r = 0; r < 4; r++) {
            for (int c = 0; c < 4; c++) {
                float v;
                ops->vec_dot(n, &v, bf->w[r], bf->a[c]);
                CHECK_MSG(fabs((double)v - ref[r][c]) <= tol[r][c], "%s %s n %lld: %.9g, scalar %.9g",
                          hl_cpu_level_name(lv), type_name(type), (long long)n, v, ref[r][c]);
                if (have_first) check_same("vec_dot (vs the first level)", lv, type, n, v, first[0][r][c]);
                first[0][r][c] = v;
            }
        }
        float s[4];
        if (ops->vec_dot_4r) { /* weight rows 0..3 with activation row 1 */
            ops->vec_dot_4r(n, s, bf->w, sizeof bf->w[0], bf->a[1]);
            for (int r = 0; r < 4; r++) check_same("vec_dot_4r", lv, type, n, s[r], first[0][r][1]);
        }
        /* the batch kernels, which take rows of a multiple of 16 only */
        CHECK(hl_cpu_batch_applies(ops, n, 4, 2) == (n % 16 == 0));
        if (!ops->batch || n % 16 != 0) {
            have_first = true;
            continue;
        }
        const hl_cpu_type_ops *bt = ops->batch;
        for (int k = 0; k < 4; k++) bt->act_from_float(bf->xa[k], bf->ab[k], n);
        for (int r = 0; r < 4; r++) {
            for (int c = 0; c < 4; c++) {
                float v;
                bt->vec_dot(n, &v, bf->w[r], bf->ab[c]);
                check_same("batch vec_dot", lv, type, n, v, tinyblas_dot(bf->wf[r], bf->af[c], n));
                if (have_first) check_same("batch vec_dot (vs the first level)", lv, type, n, v, first[1][r][c]);
                first[1][r][c] = v;
            }
        }
        have_first = true;
        if (bt->vec_dot_4r) {
            bt->vec_dot_4r(n, s, bf->w, sizeof bf->w[0], bf->ab[1]);
            for (int r = 0; r < 4; r++) check_same("batch vec_dot_4r", lv, type, n, s[r], first[1][r][1]);
        }
        if (bt->vec_dot_4c) { /* weight row 2 with activation rows 0..3 */
            bt->vec_dot_4c(n, s, bf->w[2], bf->ab, sizeof bf->ab[0]);
            for (int c = 0; c < 4; c++) check_same("batch vec_dot_4c", lv, type, n, s[c], first[1][2][c]);
        }
        if (bt->pack_panel) check_panel(bt, lv, n, bf);
#if defined(__x86_64__) || defined(__i386__)              /* where the build has the x86 kernels (CMakeLists.txt) */
        if (lv == HL_CPU_AVX2 && type == GGML_TYPE_F16) { /* both panel layouts, whichever this CPU gets */
            const hl_cpu_type_ops *floats = hl_cpu_ops_avx2_f16_batch(false), *halves = hl_cpu_ops_avx2_f16_batch(true);
            CHECK(bt == (hl_cpu_features_get().zen ? halves : floats));
            check_panel(bt == floats ? halves : floats, lv, n, bf);
        }
#endif
    }
}

static void test_dots(void) {
    static const int64_t lengths[] = {16, 48, 64, 80, 200, 256, 272, 1000, 2048, 2064};
    bufs *bf = malloc(sizeof *bf);
    for (size_t t = 0; t < N_TYPES; t++)
        for (int iter = 0; iter < 4; iter++)
            for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++) check_dot(types[t], lengths[l], bf);
    free(bf);
}

static void test_batch_applies(void) {
    for (size_t t = 0; t < N_TYPES; t++) {
        const hl_cpu_type_ops *ops = hl_cpu_type_ops_scalar(types[t]);
        CHECK(!hl_cpu_batch_applies(ops, 64, 16, 1) && hl_cpu_batch_applies(ops, 64, 16, 2));
        CHECK(hl_cpu_batch_applies(ops, 16, 4, 513) && !hl_cpu_batch_applies(ops, 64, 18, 8) &&
              !hl_cpu_batch_applies(ops, 64, 5, 8) && !hl_cpu_batch_applies(ops, 40, 16, 8));
    }
    const hl_cpu_type_ops *q6 = hl_cpu_type_ops_scalar(GGML_TYPE_Q6_K);
    CHECK(!hl_cpu_batch_applies(q6, 256, 16, HL_CPU_BATCH_MIN - 1) &&
          hl_cpu_batch_applies(q6, 256, 18, HL_CPU_BATCH_MIN));
}

/* ------------------------------------------------------ llama.cpp fixture -- */

/* y[t][r] for n_tok tokens through a CPU backend of n_threads threads. */
static void run_matmul(int n_threads, uint32_t type, const void *w, int64_t n, int64_t n_rows, const float *x,
                       int64_t n_tok, float *y) {
    const hl_cpu_limits limits = {.n_threads = n_threads, .max_tokens = n_tok, .max_row = n, .n_ctx = 16};
    hl_backend *b;
    CHECK(hl_backend_cpu_init(&limits, &b) == HEARTH_OK);
    hl_tensor xt = {.type = GGML_TYPE_F32, .ne = {n, n_tok, 1, 1}, .data = (void *)x, .backend = b};
    hl_tensor yt = {.type = GGML_TYPE_F32, .ne = {n_rows, n_tok, 1, 1}, .data = y, .backend = b};
    hl_tensor wt = {.type = type, .ne = {n, n_rows, 1, 1}, .data = (void *)w, .backend = b};
    CHECK(hl_matmul(b, &wt, &xt, &yt) == HEARTH_OK);
    hl_backend_cpu_free(b);
}

/* One case: llama.cpp's products from every SIMD level's kernels (those a
 * matmul of this shape uses) and from whole matmuls, bit for bit. */
static void check_case(uint32_t type, int64_t n, int64_t n_rows, int64_t n_tok, const uint8_t *wsrc,
                       const uint8_t *xsrc, const uint8_t *ysrc) {
    const size_t row = hl_row_size(type, n);
    uint8_t *w = malloc(row * (size_t)n_rows), *a = malloc(sizeof(float) * (size_t)n); /* any act format */
    float *x = malloc(sizeof(float) * (size_t)(n * n_tok)), *y = malloc(sizeof(float) * (size_t)(n_rows * n_tok));
    float *mine = malloc(sizeof(float) * (size_t)(n_rows * n_tok));
    memcpy(w, wsrc, row * (size_t)n_rows);
    memcpy(x, xsrc, sizeof(float) * (size_t)(n * n_tok));
    memcpy(y, ysrc, sizeof(float) * (size_t)(n_rows * n_tok));
    for (int level = HL_CPU_SCALAR + 1; level < HL_CPU_LEVEL_COUNT; level++) {
        const hl_cpu_level lv = (hl_cpu_level)level;
        const hl_cpu_type_ops *all = hl_cpu_type_ops_at(type, lv);
        if (!all) continue;
        const hl_cpu_type_ops *ops = all->batch && hl_cpu_batch_applies(all, n, n_rows, n_tok) ? all->batch : all;
        int bad = 0;
        for (int64_t t = 0; t < n_tok; t++) {
            ops->act_from_float(x + t * n, a, n);
            for (int64_t r = 0; r < n_rows; r++) {
                float s;
                ops->vec_dot(n, &s, w + (size_t)r * row, a);
                bad += memcmp(&s, &y[t * n_rows + r], sizeof s) != 0;
            }
        }
        CHECK_MSG(bad == 0, "%s %s n %lld, %lld rows, %lld tokens: %d results differ from llama.cpp's",
                  hl_cpu_level_name(lv), type_name(type), (long long)n, (long long)n_rows, (long long)n_tok, bad);
    }
    for (int n_threads = 1; n_threads <= 2 && hl_cpu_level_best() > HL_CPU_SCALAR; n_threads++) {
        run_matmul(n_threads, type, w, n, n_rows, x, n_tok, mine);
        CHECK_MSG(memcmp(mine, y, sizeof(float) * (size_t)(n_rows * n_tok)) == 0,
                  "matmul (%d threads) %s n %lld, %lld rows, %lld tokens: differs from llama.cpp's", n_threads,
                  type_name(type), (long long)n, (long long)n_rows, (long long)n_tok);
    }
    free(w);
    free(a);
    free(x);
    free(y);
    free(mine);
}

static void test_fixture(void) {
    const char *path = check_test_path("reference/quant/vec_dot_f_fixtures.bin");
    size_t size = 0;
    uint8_t *data = check_read_file(path, &size);
    CHECK_MSG(data && size >= 12 && memcmp(data, "HLVF", 4) == 0 && check_u32(data + 4) == 1, "cannot read %s", path);
    if (!data || size < 12) {
        free(data);
        return;
    }
    const uint32_t n_cases = check_u32(data + 8);
    size_t pos = 12;
    uint32_t i = 0;
    for (; i < n_cases && pos + 16 <= size; i++) {
        const uint8_t *p = data + pos;
        const uint32_t type = check_u32(p), n = check_u32(p + 4), n_rows = check_u32(p + 8), n_tok = check_u32(p + 12);
        if ((type != GGML_TYPE_F32 && type != GGML_TYPE_F16) || n == 0 || n > N_MAX || n_rows > 64 || n_tok > 64) break;
        const size_t w_bytes = hl_row_size(type, n) * n_rows, x_bytes = (size_t)n * n_tok * 4;
        const size_t y_bytes = (size_t)n_rows * n_tok * 4;
        if (pos + 16 + w_bytes + x_bytes + y_bytes > size) break;
        check_case(type, n, n_rows, n_tok, p + 16, p + 16 + w_bytes, p + 16 + w_bytes + x_bytes);
        pos += 16 + w_bytes + x_bytes + y_bytes;
    }
    CHECK_MSG(i == n_cases && pos == size, "read %u of %u fixture cases", i, n_cases);
    if (hl_cpu_level_best() == HL_CPU_SCALAR) printf("note: no SIMD level on this CPU; llama.cpp's bits not checked\n");
    free(data);
}

int main(void) {
    test_batch_applies();
    test_dots();
    test_fixture();
    printf("float kernels: best level %s\n", hl_cpu_level_name(hl_cpu_level_best()));
    return check_report();
}
