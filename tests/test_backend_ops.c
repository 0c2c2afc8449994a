/* Every op of backend.h on every backend present, against the CPU backend's
 * scalar kernels (the oracle), on random inputs with odd sizes, compared by
 * normalized mean squared error, NMSE = sum (y - ref)^2 / sum ref^2, with a
 * bound per op (ggml's test-backend-ops is the model: 5e-4 for products
 * whose inputs a backend may round to 8 or 16 bits, 1e-6 .. 1e-5 for
 * element-wise float ops). Backends tested: the CPU at its best kernel level,
 * and each usable GPU; without one the GPU part is skipped and says why. A
 * backend without an op (a NULL slot) is reported and skipped. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/gpu.h"
#include "check.h"
#include "gguf/ggml_types.h"
#include "quant/quant.h"

#define MAX_TOKENS 64
#define MAX_ROW 1024
#define N_CTX 96

static hl_backend *ref;                      /* CPU, scalar kernels */
static hl_backend *tested[1 + HL_MAX_GPUS];  /* CPU best level, GPUs */
static int n_tested;

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void) { /* uniform in [-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 40) * 0x1p-23) - 1.0f;
}
static void fill(float *x, int64_t n, float scale) {
    for (int64_t i = 0; i < n; i++) x[i] = frand() * scale;
}

/* ---- tensors on a backend */

static hl_tensor mk(hl_backend *b, uint32_t type, int64_t ne0, int64_t ne1, const void *host) {
    hl_tensor t = {.type = type, .ne = {ne0, ne1, 1, 1}, .backend = b};
    const size_t bytes = hl_tensor_nbytes(&t);
    CHECK(b->iface->alloc(b, bytes, &t.data) == HEARTH_OK);
    if (host && t.data) CHECK(b->iface->upload(b, t.data, host, bytes) == HEARTH_OK);
    return t;
}
static void drop(hl_backend *b, hl_tensor *t) { b->iface->free(b, t->data); }

/* Positions of n tokens: pos0, pos0 + 1, ... of the sequence at row0. */
static void set_run(hl_backend *b, int32_t n, int32_t pos0, int32_t row0) {
    int32_t pos[N_CTX], rows[N_CTX];
    for (int32_t t = 0; t < n; t++) pos[t] = pos0 + t, rows[t] = row0;
    b->iface->set_positions(b, pos, rows, n);
}
static void fetch(hl_backend *b, const hl_tensor *t, void *host) {
    CHECK(b->iface->download(b, host, t->data, hl_tensor_nbytes(t)) == HEARTH_OK);
}

/* ---- the comparison loop */

typedef void (*run_fn)(hl_backend *b, const void *ctx, float *out); /* runs the op, writes n_out floats */

static double nmse(const float *y, const float *r, size_t n) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d = (double)y[i] - r[i];
        num += isfinite(d) ? d * d : INFINITY;
        den += (double)r[i] * r[i];
    }
    return den > 0.0 ? num / den : num;
}

static void compare(const char *label, double bound, size_t n_out, run_fn run, const void *ctx) {
    float *want = calloc(n_out, sizeof(float)), *got = calloc(n_out, sizeof(float));
    run(ref, ctx, want);
    CHECK_MSG(ref->iface->synchronize(ref) == HEARTH_OK, "%s: reference failed", label);
    for (int i = 0; i < n_tested; i++) {
        hl_backend *b = tested[i];
        memset(got, 0, n_out * sizeof(float));
        run(b, ctx, got);
        const hearth_status st = b->iface->synchronize(b);
        CHECK_MSG(st == HEARTH_OK, "%s on %s: %s", label, b->iface->name(b), hearth_last_error());
        const double e = nmse(got, want, n_out);
        CHECK_MSG(e <= bound, "%s on %s: NMSE %.3g > %.3g", label, b->iface->name(b), e, bound);
        if (e > bound) printf("FAIL %-40s %-6s NMSE %.3g (bound %.3g)\n", label, b->iface->name(b), e, bound);
    }
    free(want);
    free(got);
}

/* Ops that the tested backends lack are reported once per op and backend. */
static bool all_have(const char *op, size_t offset) {
    bool ok = true;
    for (int i = 0; i < n_tested; i++) {
        void *const *slot = (void *const *)((const char *)tested[i]->iface + offset);
        if (!*slot) {
            printf("SKIP %s on %s: not implemented\n", op, tested[i]->iface->name(tested[i]));
            ok = false;
        }
    }
    return ok;
}
#define HAVE(op) all_have(#op, offsetof(hl_backend_i, op))

/* ---- get_rows */

typedef struct rows_case {
    uint32_t type;
    int64_t d, n_rows, n;
    const void *table; /* n_rows rows of `type` */
    const int32_t *ids;
} rows_case;

static void run_get_rows(hl_backend *b, const void *ctx, float *out) {
    const rows_case *c = ctx;
    hl_tensor table = mk(b, c->type, c->d, c->n_rows, c->table), y = mk(b, GGML_TYPE_F32, c->d, c->n, NULL);
    b->iface->get_rows(b, &table, c->ids, &y);
    fetch(b, &y, out);
    drop(b, &table);
    drop(b, &y);
}

/* ---- matmul */

typedef struct mm_case {
    uint32_t type;
    int64_t d_in, d_out, n;
    const void *w; /* d_out rows of `type` */
    const float *x;
} mm_case;

static void run_matmul(hl_backend *b, const void *ctx, float *out) {
    const mm_case *c = ctx;
    hl_tensor w = mk(b, c->type, c->d_in, c->d_out, c->w), x = mk(b, GGML_TYPE_F32, c->d_in, c->n, c->x);
    hl_tensor y = mk(b, GGML_TYPE_F32, c->d_out, c->n, NULL);
    b->iface->matmul(b, &w, &x, &y);
    fetch(b, &y, out);
    drop(b, &w);
    drop(b, &x);
    drop(b, &y);
}

static const uint32_t weight_types[] = {
    GGML_TYPE_F32,  GGML_TYPE_F16,  GGML_TYPE_BF16, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1,
    GGML_TYPE_Q8_0, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K,
};

/* Random rows of `type`, quantized by the reference quantizer. */
static void *random_rows(uint32_t type, int64_t d, int64_t rows) {
    const size_t row_bytes = hl_row_size(type, d);
    uint8_t *q = malloc(row_bytes * (size_t)rows);
    float *f = malloc(sizeof(float) * (size_t)d);
    for (int64_t r = 0; r < rows; r++) {
        fill(f, d, 1.0f);
        hl_quant_get(type)->from_float(f, q + (size_t)r * row_bytes, d);
    }
    free(f);
    return q;
}

static void test_weights(void) {
    static const int64_t batches[] = {1, 2, 7, 8, 19};
    for (size_t ti = 0; ti < sizeof weight_types / sizeof weight_types[0]; ti++) {
        const uint32_t type = weight_types[ti];
        const int64_t blck = hl_ggml_type_get(type)->blck_size;
        const int64_t d_in = blck == 1 ? 97 : blck == 32 ? 160 : 512, d_out = 67;
        void *w = random_rows(type, d_in, d_out);
        char label[96];
        if (HAVE(get_rows)) {
            const int32_t ids[5] = {3, 0, 66, 3, 41};
            const rows_case rc = {type, d_in, d_out, 5, w, ids};
            snprintf(label, sizeof label, "get_rows %s", hl_ggml_type_get(type)->name);
            compare(label, 1e-10, (size_t)(d_in * 5), run_get_rows, &rc);
        }
        for (size_t bi = 0; bi < sizeof batches / sizeof batches[0] && HAVE(matmul); bi++) {
            const int64_t n = batches[bi];
            float *x = malloc(sizeof(float) * (size_t)(d_in * n));
            fill(x, d_in * n, 2.0f);
            const mm_case mc = {type, d_in, d_out, n, w, x};
            snprintf(label, sizeof label, "matmul %s %lldx%lld n=%lld", hl_ggml_type_get(type)->name, (long long)d_in,
                     (long long)d_out, (long long)n);
            compare(label, 5e-4, (size_t)(d_out * n), run_matmul, &mc);
            free(x);
        }
        free(w);
    }
}

/* ---- rms_norm */

typedef struct norm_case {
    int64_t d, row, n; /* runs of d in rows of `row` */
    const float *x, *w;
} norm_case;

static void run_rms_norm(hl_backend *b, const void *ctx, float *out) {
    const norm_case *c = ctx;
    hl_tensor x = mk(b, GGML_TYPE_F32, c->row, c->n, c->x), w = mk(b, GGML_TYPE_F32, c->d, 1, c->w);
    hl_tensor y = mk(b, GGML_TYPE_F32, c->row, c->n, NULL);
    b->iface->rms_norm(b, &x, &w, 1e-5f, &y);
    b->iface->rms_norm(b, &y, &w, 1e-6f, &y); /* in place too */
    fetch(b, &y, out);
    drop(b, &x);
    drop(b, &w);
    drop(b, &y);
}

static void test_rms_norm(void) {
    if (!HAVE(rms_norm)) return;
    static const int64_t shapes[][3] = {{579, 579, 3}, {64, 64 * 5, 3}, {1000, 1000, 1}};
    for (size_t i = 0; i < 3; i++) {
        const int64_t d = shapes[i][0], row = shapes[i][1], n = shapes[i][2];
        float *x = malloc(sizeof(float) * (size_t)(row * n)), *w = malloc(sizeof(float) * (size_t)d);
        fill(x, row * n, 3.0f);
        fill(w, d, 1.5f);
        const norm_case c = {d, row, n, x, w};
        char label[64];
        snprintf(label, sizeof label, "rms_norm d=%lld row=%lld n=%lld", (long long)d, (long long)row, (long long)n);
        compare(label, 1e-6, (size_t)(row * n), run_rms_norm, &c);
        free(x);
        free(w);
    }
}

/* ---- rope */

typedef struct rope_case {
    int32_t n_head, hd, n, pos0;
    hl_rope_params p;
    const float *x, *ff; /* ff NULL or [n_rot / 2] */
} rope_case;

static void run_rope(hl_backend *b, const void *ctx, float *out) {
    const rope_case *c = ctx;
    hl_tensor x = mk(b, GGML_TYPE_F32, (int64_t)c->hd * c->n_head, c->n, c->x);
    hl_tensor ff = c->ff ? mk(b, GGML_TYPE_F32, c->p.n_rot / 2, 1, c->ff) : (hl_tensor){0};
    set_run(b, c->n, c->pos0, 0);
    b->iface->rope(b, &x, c->n_head, &c->p, c->ff ? &ff : NULL);
    fetch(b, &x, out);
    drop(b, &x);
    if (c->ff) drop(b, &ff);
}

static void test_rope(void) {
    if (!HAVE(rope)) return;
    float ff[32];
    for (int i = 0; i < 32; i++) ff[i] = 1.0f + 0.75f * (frand() + 1.0f);
    for (int mode = 0; mode <= HL_ROPE_NEOX; mode += HL_ROPE_NEOX)
        for (int n_rot = 32; n_rot <= 64; n_rot += 32)
            for (int with_ff = 0; with_ff < 2; with_ff++) {
                const int32_t n_head = 3, hd = 64, n = 5;
                float *x = malloc(sizeof(float) * (size_t)(hd * n_head * n));
                fill(x, hd * n_head * n, 2.0f);
                const rope_case c = {n_head, hd, n, 37,
                                     {.n_rot = n_rot, .mode = mode, .freq_base = 10000.0f, .freq_scale = 0.5f},
                                     x, with_ff ? ff : NULL};
                char label[64];
                snprintf(label, sizeof label, "rope %s n_rot=%d%s", mode ? "neox" : "normal", n_rot,
                         with_ff ? " freq_factors" : "");
                compare(label, 1e-5, (size_t)(hd * n_head * n), run_rope, &c);
                free(x);
            }
}

/* ---- store_rows + attention */

/* Sequence 1's cells start at this row of the cache; sequence 0's at 0. */
#define SEQ1_ROW 48

typedef struct attn_case {
    int32_t n_head, n_head_kv, hd, n, pos0, n_swa;
    /* tokens [split, n) are in sequence 1, at positions pos1, pos1 + 1, ...
     * (split 0: all in sequence 0) */
    int32_t split, pos1;
    const float *q, *k_rows, *v_rows; /* k_rows, v_rows: N_CTX rows of kv_dim */
} attn_case;

static void run_store_rows(hl_backend *b, const void *ctx, float *out) {
    const attn_case *c = ctx;
    const int64_t kv_dim = (int64_t)c->hd * c->n_head_kv;
    hl_tensor src = mk(b, GGML_TYPE_F32, kv_dim, c->n, c->k_rows + c->pos0 * kv_dim);
    hl_tensor cache = mk(b, GGML_TYPE_F16, kv_dim, N_CTX, NULL);
    set_run(b, c->n, c->pos0, 0);
    b->iface->store_rows(b, &src, &cache);
    hl_half *h = malloc(hl_tensor_nbytes(&cache));
    fetch(b, &cache, h);
    for (int64_t i = 0; i < kv_dim * c->n; i++) out[i] = hl_fp16_to_fp32(h[c->pos0 * kv_dim + i]);
    free(h);
    drop(b, &src);
    drop(b, &cache);
}

/* Fills every cell of both caches (row r holds k_rows/v_rows row r), then
 * runs the case's queries, each at its position in its sequence. */
static void run_attention(hl_backend *b, const void *ctx, float *out) {
    const attn_case *c = ctx;
    const int64_t kv_dim = (int64_t)c->hd * c->n_head_kv, q_dim = (int64_t)c->hd * c->n_head;
    hl_tensor kc = mk(b, GGML_TYPE_F16, kv_dim, N_CTX, NULL), vc = mk(b, GGML_TYPE_F16, kv_dim, N_CTX, NULL);
    for (int32_t r0 = 0; r0 < N_CTX; r0 += MAX_TOKENS) {
        const int32_t n = N_CTX - r0 < MAX_TOKENS ? N_CTX - r0 : MAX_TOKENS;
        hl_tensor k = mk(b, GGML_TYPE_F32, kv_dim, n, c->k_rows + r0 * kv_dim);
        hl_tensor v = mk(b, GGML_TYPE_F32, kv_dim, n, c->v_rows + r0 * kv_dim);
        set_run(b, n, r0, 0);
        b->iface->store_rows(b, &k, &kc);
        b->iface->store_rows(b, &v, &vc);
        CHECK(b->iface->synchronize(b) == HEARTH_OK);
        drop(b, &k);
        drop(b, &v);
    }
    hl_tensor q = mk(b, GGML_TYPE_F32, q_dim, c->n, c->q), o = mk(b, GGML_TYPE_F32, q_dim, c->n, NULL);
    int32_t pos[MAX_TOKENS], rows[MAX_TOKENS];
    for (int32_t t = 0; t < c->n; t++) {
        const bool seq1 = c->split && t >= c->split;
        pos[t] = seq1 ? c->pos1 + t - c->split : c->pos0 + t;
        rows[t] = seq1 ? SEQ1_ROW : 0;
    }
    b->iface->set_positions(b, pos, rows, c->n);
    const hl_attn_args a = {.q = &q, .k_cache = &kc, .v_cache = &vc, .out = &o, .n_head = c->n_head,
                            .n_head_kv = c->n_head_kv, .head_dim = c->hd, .n_swa = c->n_swa,
                            .scale = 1.0f / sqrtf((float)c->hd)};
    b->iface->attention(b, &a);
    fetch(b, &o, out);
    hl_tensor *all[] = {&kc, &vc, &q, &o};
    for (int i = 0; i < 4; i++) drop(b, all[i]);
}

static void test_attention(void) {
    if (!HAVE(store_rows) || !HAVE(attention) || !HAVE(set_positions)) return;
    static const int32_t cases[][8] = {
        /* n_head, n_head_kv, hd, n, pos0, n_swa, split, pos1 */
        {6, 2, 64, 1, 0, 0, 0, 0}, {6, 2, 64, 1, 70, 0, 0, 0}, {6, 2, 64, 5, 37, 0, 0, 0}, {4, 4, 80, 9, 0, 0, 0, 0},
        {6, 3, 64, 7, 20, 8, 0, 0}, {6, 2, 64, 1, 70, 16, 0, 0}, {2, 1, 128, 3, 61, 0, 0, 0},
        /* two sequences in one pass: decode tokens of each, then a prompt chunk beside a decode token */
        {6, 2, 64, 2, 30, 0, 1, 40}, {6, 2, 64, 6, 0, 0, 5, 44}, {6, 3, 64, 7, 20, 8, 3, 25},
    };
    float *k = malloc(sizeof(float) * (size_t)(128 * 4 * N_CTX)), *v = malloc(sizeof(float) * (size_t)(128 * 4 * N_CTX));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int32_t *p = cases[i];
        const int64_t kv_dim = (int64_t)p[2] * p[1], q_dim = (int64_t)p[2] * p[0];
        float *q = malloc(sizeof(float) * (size_t)(q_dim * p[3]));
        fill(q, q_dim * p[3], 1.0f);
        fill(k, kv_dim * N_CTX, 1.0f);
        fill(v, kv_dim * N_CTX, 1.0f);
        const attn_case c = {p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], q, k, v};
        char label[128];
        if (!p[6]) {
            snprintf(label, sizeof label, "store_rows kv_dim=%lld n=%d pos0=%d", (long long)kv_dim, p[3], p[4]);
            compare(label, 1e-10, (size_t)(kv_dim * p[3]), run_store_rows, &c);
        }
        snprintf(label, sizeof label, "attention h=%d/%d hd=%d n=%d pos0=%d swa=%d seq1=[%d..) at %d", p[0], p[1], p[2],
                 p[3], p[4], p[5], p[6], p[7]);
        compare(label, 5e-4, (size_t)(q_dim * p[3]), run_attention, &c);
        free(q);
    }
    free(k);
    free(v);
}

/* ---- element-wise */

typedef struct ew_case {
    int op; /* 0 swiglu, 1 geglu, 2 add, 3 add bias, 4 scale */
    int64_t d, n;
    const float *a, *b;
} ew_case;

static void run_elementwise(hl_backend *b, const void *ctx, float *out) {
    const ew_case *c = ctx;
    hl_tensor x = mk(b, GGML_TYPE_F32, c->d, c->n, c->a), y = mk(b, GGML_TYPE_F32, c->d, c->op == 3 ? 1 : c->n, c->b);
    switch (c->op) {
    case 0: b->iface->swiglu(b, &x, &y); break;
    case 1: b->iface->geglu(b, &x, &y); break;
    case 2:
    case 3: b->iface->add(b, &x, &y); break;
    default: b->iface->scale(b, &x, -1.25f); break;
    }
    fetch(b, &x, out);
    drop(b, &x);
    drop(b, &y);
}

static void test_elementwise(void) {
    static const char *names[] = {"swiglu", "geglu", "add", "add bias", "scale"};
    const bool have[] = {HAVE(swiglu), HAVE(geglu), HAVE(add), true, HAVE(scale)};
    const int64_t d = 1003, n = 3;
    float *a = malloc(sizeof(float) * (size_t)(d * n)), *bv = malloc(sizeof(float) * (size_t)(d * n));
    fill(a, d * n, 4.0f);
    fill(bv, d * n, 2.0f);
    for (int op = 0; op < 5; op++) {
        if (!have[op] || (op == 3 && !have[2])) continue;
        const ew_case c = {op, d, n, a, bv};
        compare(names[op], 1e-5, (size_t)(d * n), run_elementwise, &c);
    }
    free(a);
    free(bv);
}

int main(void) {
    const hl_cpu_limits scalar = {.n_threads = 2, .max_tokens = MAX_TOKENS, .max_row = MAX_ROW, .n_ctx = N_CTX,
                                  .scalar = true};
    hl_cpu_limits best = scalar;
    best.scalar = false;
    if (hl_backend_cpu_init(&scalar, &ref) != HEARTH_OK || hl_backend_cpu_init(&best, &tested[0]) != HEARTH_OK) {
        fprintf(stderr, "CPU backend: %s\n", hearth_last_error());
        return 1;
    }
    n_tested = 1;
    const int32_t n_gpu = hl_gpu_count();
    if (n_gpu == 0) printf("SKIP GPU op tests: CUDA unavailable (%s)\n", hl_gpu_unavailable_reason());
    const hl_gpu_limits gl = {.max_tokens = MAX_TOKENS, .max_row = MAX_ROW, .gemm_scratch_bytes = (size_t)MAX_ROW * 2 * 16};
    /* 16 rows of 1024: prompt matmuls of 67 rows run in several tiles */
    for (int32_t d = 0; d < n_gpu; d++) {
        const hearth_status st = hl_gpu_backend_init(d, &gl, &tested[n_tested]);
        CHECK_MSG(st == HEARTH_OK, "GPU %d: %s", (int)d, hearth_last_error());
        if (st == HEARTH_OK) n_tested++;
    }
    for (int i = 0; i < n_tested; i++) printf("testing %s against the CPU scalar kernels\n", tested[i]->iface->name(tested[i]));
    test_weights();
    test_rms_norm();
    test_rope();
    test_attention();
    test_elementwise();
    hl_backend_cpu_free(ref);
    hl_backend_cpu_free(tested[0]);
    for (int i = 1; i < n_tested; i++) hl_gpu_backend_free(tested[i]);
    return check_report();
}
