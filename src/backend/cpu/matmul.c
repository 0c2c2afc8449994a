/* CPU matrix multiplication y = x * W^T with W quantized. As in ggml, the
 * activations are first converted to the weight type's vec-dot type (Q8_0 for
 * Q4_0/Q8_0, Q8_1 for Q4_1, F16 for F16 ...) so the inner products run on
 * integers; then threads split the output rows. For a batch, each thread walks
 * its rows in small blocks and runs every token against a block while the
 * block's weights are still in L1; where the kernels have panels (vec_dot.h),
 * the threads take 16 rows at a time from a shared counter, repack them and
 * run every token against the panel. */
#include <stdatomic.h>
#include <stdbool.h>

#include "backend/cpu/common.h"
#include "backend/cpu/vec_dot.h"
#include "gguf/ggml_types.h"
#include "quant/quant.h"

#define ROW_BLOCK 16
/* Panels run against the tokens PANEL_TOKENS at a time, every panel
 * against one block of tokens before the next block, so that the
 * block's activations stay in L2 instead of streaming from memory once per
 * panel (each panel is packed once per block). A multiple of 4: the groups
 * of 4 tokens that panel_dot gets are the same as without blocks. */
#define PANEL_TOKENS 64
_Static_assert(PANEL_TOKENS % 4 == 0, "panel_dot's token groups do not depend on the blocks");
/* Kernels that take a block of tokens at once (panel_block) get the whole
 * batch when their activations are 8-bit (a weight panel, costly to
 * unpack, is then packed once per matmul), except Q8_0's, whose pack only
 * widens the quants (a small share of a prompt's time); with float
 * activations (F32, F16 and BF16 weights: 4 bytes an element, 4 MiB for
 * 512 tokens of 2048-element rows) and Q8_0 weights (1.06 bytes) they get
 * it in equal blocks (multiples of 4) of about PANEL_ACT_BYTES, at least
 * PANEL_TOKENS tokens where fewer fit, so that a block's activations come
 * from L2 or a near L3 slice for each panel instead of streaming from far
 * for every panel; each panel is packed once per block (512 tokens of
 * 2048-element rows: 4 blocks of 128 floats, 2 of 256 Q8_0). Blocks made
 * F16 and Q8_0 prompts faster and Q4_K_M ones slower (pack_q4_K then runs
 * once per block instead of once per matmul): bench/results/
 * 2026-11-28-avx2-f16-blocks-zen3-cpu.md, 2026-11-29-avx2-q8_0-blocks-cpu.md
 * (and 2026-12-02-kernel-comment-figures-cpu.md for the Q8_0 pack). */
#define PANEL_ACT_BYTES (1 << 20)
#define CONVERT_PARALLEL_MIN 16384 /* elements of x below which conversion runs on one thread */

typedef struct matmul_task {
    const hl_tensor *w;
    const hl_tensor *x;
    hl_tensor *y;
    int64_t n;             /* tokens */
    const int32_t *x_rows; /* gathered (hl_cpu_matmul_rows): token t's x row, else NULL (row t) */
    const int32_t *y_rows; /* and its y row */
    const hl_cpu_type_ops *ops;
    const uint8_t *act; /* x converted: n rows of act_stride bytes */
    size_t act_stride;
    uint8_t *act_out; /* where conversion writes */
    hl_act_aux *aux;  /* for panels: [n][aux_stride], else NULL */
    size_t aux_stride;
    uint8_t *panels;      /* for panels: one of HL_PANEL_BYTES(d_in) per thread */
    _Atomic int64_t next; /* for panels: the next (token block, panel) item to take */
} matmul_task;

/* The x row of token tok. */
static const float *x_row(const matmul_task *t, int64_t tok) {
    return (const float *)t->x->data + (t->x_rows ? t->x_rows[tok] : tok) * t->x->ne[0];
}

static void convert_run(void *arg, int ith, int nth) {
    matmul_task *t = arg;
    const int64_t d = t->x->ne[0];
    long long r0, r1;
    hl_split(t->n, ith, nth, &r0, &r1);
    for (long long r = r0; r < r1; r++) {
        t->ops->act_from_float(x_row(t, r), t->act_out + (size_t)r * t->act_stride, d);
        if (t->aux) t->ops->act_aux(d, t->aux + (size_t)r * t->aux_stride, t->act_out + (size_t)r * t->act_stride);
    }
}

/* Matrix-vector (one token): rows i, i+q, i+2q, i+3q of the thread's share go
 * through vec_dot_4r together, four long sequential streams the hardware
 * prefetcher follows (see vec_dot.h); the remainder row by row. */
static void dot_rows(const matmul_task *t, long long r0, long long r1, const uint8_t *a, float *yrow) {
    const int64_t d_in = t->w->ne[0];
    const size_t w_stride = hl_row_size(t->w->type, d_in);
    const uint8_t *w = t->w->data;
    long long r = r0;
    if (t->ops->vec_dot_4r) {
        const long long q = (r1 - r0) / 4;
        for (long long i = 0; i < q; i++) {
            float s[4];
            t->ops->vec_dot_4r(d_in, s, w + (size_t)(r0 + i) * w_stride, (size_t)q * w_stride, a);
            for (int j = 0; j < 4; j++) yrow[r0 + i + j * q] = s[j];
        }
        r = r0 + 4 * q;
    }
    for (; r < r1; r++) t->ops->vec_dot(d_in, &yrow[r], w + (size_t)r * w_stride, a);
}

/* Matrix-matrix (a batch): the thread walks its rows in blocks of ROW_BLOCK
 * and runs every token against a block while its weights are in L1, four
 * tokens per weight row with vec_dot_4c. */
static void dot_block(const matmul_task *t, long long rb, long long re) {
    const int64_t d_in = t->w->ne[0], d_out = t->w->ne[1], n = t->n;
    const size_t w_stride = hl_row_size(t->w->type, d_in);
    const uint8_t *w = t->w->data;
    float *y = t->y->data;
    int64_t tok = 0;
    if (t->ops->vec_dot_4c)
        for (; tok + 4 <= n; tok += 4) {
            const uint8_t *a = t->act + (size_t)tok * t->act_stride;
            for (long long r = rb; r < re; r++) {
                float s[4];
                t->ops->vec_dot_4c(d_in, s, w + (size_t)r * w_stride, a, t->act_stride);
                for (int j = 0; j < 4; j++) y[(tok + j) * d_out + r] = s[j];
            }
        }
    for (; tok < n; tok++) dot_rows(t, rb, re, t->act + (size_t)tok * t->act_stride, y + tok * d_out);
}

/* The tokens of a block for panel_block kernels (see PANEL_ACT_BYTES). */
static int64_t panel_block_tokens(const hl_cpu_type_ops *ops, int64_t n, size_t act_stride) {
    if (ops->vec_dot_type != GGML_TYPE_F32 && ops->type != GGML_TYPE_Q8_0) return n;
    const int64_t fit = (int64_t)(PANEL_ACT_BYTES / act_stride), max = fit < PANEL_TOKENS ? PANEL_TOKENS : fit;
    const int64_t n_blocks = (n + max - 1) / max;
    return ((n + n_blocks - 1) / n_blocks + 3) / 4 * 4;
}

/* Panels (vec_dot.h): the work items are (block of PANEL_TOKENS tokens,
 * panel of HL_PANEL_ROWS rows) pairs, block by block, which the threads
 * take one at a time from a shared counter (as llama.cpp's matmul takes
 * chunks), so that a thread slowed by something else on its core leaves
 * its share to the others instead of holding up the matmul; the bits of a
 * result do not depend on which thread computes it. An item packs its
 * panel and runs the block's tokens against it, up to four at once;
 * kernels that take a block at once (panel_block) get blocks of
 * panel_block_tokens. The last thread also takes the rows after the last
 * whole panel, with the other kernels (which give the same bits). */
static void panel_run(void *arg, int ith, int nth) {
    matmul_task *t = arg;
    const int64_t d_in = t->w->ne[0], d_out = t->w->ne[1], n = t->n;
    const size_t w_stride = hl_row_size(t->w->type, d_in);
    uint8_t *panel = t->panels + (size_t)ith * HL_PANEL_BYTES(d_in);
    float *y = t->y->data;
    const int64_t n_panels = d_out / HL_PANEL_ROWS;
    const int64_t block = t->ops->panel_block ? panel_block_tokens(t->ops, n, t->act_stride) : PANEL_TOKENS;
    const int64_t group = t->ops->panel_block ? block : 4;
    const int64_t n_items = (n + block - 1) / block * n_panels;
    for (int64_t i; (i = atomic_fetch_add_explicit(&t->next, 1, memory_order_relaxed)) < n_items;) {
        const int64_t tb = i / n_panels * block, te = n - tb < block ? n : tb + block;
        const int64_t r = i % n_panels * HL_PANEL_ROWS;
        t->ops->pack_panel(d_in, panel, (const uint8_t *)t->w->data + (size_t)r * w_stride, w_stride);
        for (int64_t tok = tb; tok < te; tok += group) {
            t->ops->panel_dot(d_in, y + tok * d_out + r, (size_t)d_out, panel, t->act + (size_t)tok * t->act_stride,
                              t->act_stride, t->aux ? t->aux + (size_t)tok * t->aux_stride : NULL, t->aux_stride,
                              (int)(te - tok < group ? te - tok : group));
        }
    }
    const int64_t tail = d_out / HL_PANEL_ROWS * HL_PANEL_ROWS;
    if (ith == nth - 1 && tail < d_out) dot_block(t, tail, d_out);
}

static void dot_run(void *arg, int ith, int nth) {
    matmul_task *t = arg;
    long long r0, r1;
    hl_split(t->w->ne[1], ith, nth, &r0, &r1);
    if (t->n < 4) {
        for (int64_t tok = 0; tok < t->n; tok++)
            dot_rows(t, r0, r1, t->act + (size_t)tok * t->act_stride, (float *)t->y->data + tok * t->w->ne[1]);
        return;
    }
    for (long long rb = r0; rb < r1; rb += ROW_BLOCK) dot_block(t, rb, rb + ROW_BLOCK < r1 ? rb + ROW_BLOCK : r1);
}

/* Gathered rows (hl_cpu_matmul_rows): every token through the one-token
 * kernels. A few tokens each take the thread's whole share of rows (four
 * long streams, dot_rows); more run against each block of ROW_BLOCK rows
 * while its weights are in L1. */
static void gather_run(void *arg, int ith, int nth) {
    matmul_task *t = arg;
    const int64_t d_out = t->w->ne[1];
    long long r0, r1;
    hl_split(d_out, ith, nth, &r0, &r1);
    const long long block = t->n < 4 ? r1 - r0 : ROW_BLOCK;
    for (long long rb = r0; rb < r1; rb += block) {
        const long long re = rb + block < r1 ? rb + block : r1;
        for (int64_t tok = 0; tok < t->n; tok++) {
            const uint8_t *a = t->act ? t->act + (size_t)tok * t->act_stride : (const uint8_t *)x_row(t, tok);
            dot_rows(t, rb, re, a, (float *)t->y->data + (int64_t)t->y_rows[tok] * d_out);
        }
    }
}

/* Converts the task's tokens to its kernels' activation type into cpu->act,
 * or, for F32 activations of an ungathered matmul, points at x itself; a
 * gathered one reads F32 rows in place (act NULL). */
static void convert(hl_cpu *cpu, matmul_task *t) {
    const int64_t d_in = t->x->ne[0];
    if (t->ops->act_from_float == hl_f32_from_float) { /* dot the floats directly */
        t->act = t->x_rows ? NULL : t->x->data;
        t->act_stride = (size_t)d_in * sizeof(float);
        return;
    }
    t->act_stride = hl_row_size(t->ops->vec_dot_type, d_in);
    t->act_out = cpu->act;
    t->act = cpu->act;
    int nth = t->n * d_in < CONVERT_PARALLEL_MIN ? 1 : hl_pool_n_threads(cpu->pool);
    hl_pool_run(cpu->pool, nth, convert_run, t);
}

static bool has_panels(const matmul_task *t) { return t->ops->panel_dot && t->n >= HL_CPU_PANEL_MIN; }

/* The task of y = x w^T, its kernels chosen (a batch's where llama.cpp
 * switches, panels from HL_CPU_PANEL_MIN tokens) but x not yet converted. */
static matmul_task task_of(hl_backend *b, const hl_tensor *w, const hl_tensor *x, hl_tensor *y) {
    hl_cpu *cpu = cpu_of(b);
    matmul_task t = {.w = w, .x = x, .y = y, .n = x->ne[1], .ops = hl_cpu_ops_for(b, w->type), .panels = cpu->panels};
    /* llama.cpp multiplies some types in another order from some batch size on (vec_dot.h) */
    if (t.ops->batch && hl_cpu_batch_applies(t.ops, w->ne[0], w->ne[1], x->ne[1])) t.ops = t.ops->batch;
    if (has_panels(&t) && t.ops->act_aux) {
        t.aux = cpu->act_aux;
        t.aux_stride = (size_t)(x->ne[0] / HL_QK);
    }
    return t;
}

static void matmul_run(void *arg, int ith, int nth) {
    matmul_task *t = arg;
    (has_panels(t) ? panel_run : dot_run)(t, ith, nth);
}

void hl_cpu_matmul(hl_backend *b, const hl_tensor *w, const hl_tensor *x, hl_tensor *y) {
    hl_cpu *cpu = cpu_of(b);
    matmul_task t = task_of(b, w, x, y);
    convert(cpu, &t);
    hl_pool_run(cpu->pool, hl_pool_n_threads(cpu->pool), matmul_run, &t);
}

/* Whether b reads the conversion a makes of the same x. */
static bool same_conversion(const matmul_task *a, const matmul_task *b) {
    return a->ops->act_from_float == b->ops->act_from_float && a->ops->vec_dot_type == b->ops->vec_dot_type &&
           (a->aux != NULL) == (b->aux != NULL) && (!a->aux || a->ops->act_aux == b->ops->act_aux);
}

typedef struct matmul_run_n {
    matmul_task *t;
    int n;
} matmul_run_n;

/* Each thread takes its part of every task in turn: a thread done with one
 * task's panels goes on to the next task's while the others finish. */
static void matmul_n_run(void *arg, int ith, int nth) {
    const matmul_run_n *r = arg;
    for (int i = 0; i < r->n; i++) matmul_run(&r->t[i], ith, nth);
}

/* backend.h matmul_n: weights whose kernels convert x alike (the same
 * weight type, or types with one activation type) share one conversion
 * and one fork-join of the pool; each result has the bits matmul gives it.
 * SmolLM2 decodes 3 of its 7 matmuls a layer without a fork-join and
 * converts the normed activations of a prompt once instead of 3 times
 * (Q, K, V) and once instead of twice (gate, up). */
void hl_cpu_matmul_n(hl_backend *b, int n, const hl_tensor *const *w, const hl_tensor *x, hl_tensor *const *y) {
    hl_cpu *cpu = cpu_of(b);
    matmul_task t[HL_MATMUL_N_MAX];
    for (int i = 0; i < n; i++) t[i] = task_of(b, w[i], x, y[i]);
    for (int i = 0, j; i < n; i = j) {
        convert(cpu, &t[i]);
        for (j = i + 1; j < n && same_conversion(&t[i], &t[j]); j++) {
            t[j].act = t[i].act;
            t[j].act_stride = t[i].act_stride;
        }
        matmul_run_n r = {t + i, j - i};
        hl_pool_run(cpu->pool, hl_pool_n_threads(cpu->pool), matmul_n_run, &r);
    }
}

void hl_cpu_matmul_rows(hl_backend *b, const hl_tensor *w, const hl_tensor *x, const int32_t *x_rows, hl_tensor *y,
                        const int32_t *y_rows, int64_t n) {
    hl_cpu *cpu = cpu_of(b);
    matmul_task t = {
        .w = w, .x = x, .y = y, .n = n, .x_rows = x_rows, .y_rows = y_rows, .ops = hl_cpu_ops_for(b, w->type)};
    convert(cpu, &t);
    hl_pool_run(cpu->pool, hl_pool_n_threads(cpu->pool), gather_run, &t);
}
