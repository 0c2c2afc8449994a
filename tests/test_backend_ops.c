/* The op tests as a tool (ggml's test-backend-ops is the model): one table
 * of cases (op, types, shapes, tolerance) run on every backend present
 * through the checked calls of backend/ops.h.
 *
 *   test_backend_ops [test|perf] [-o OP] [-b BACKEND]
 *
 * test (the default, what ctest runs): each case on each backend against the
 * CPU backend's scalar kernels (the oracle), on random inputs with odd
 * sizes, compared by normalized mean squared error, NMSE = sum (y - ref)^2 /
 * sum ref^2, with a bound per case (5e-4 for products whose inputs a
 * backend may round to 8 or 16 bits, 1e-6 .. 1e-5 for element-wise float
 * ops, 1e-10 for exact copies). Every tensor sits between guard bytes that
 * fail the case when overwritten, and outputs start as NaN, so an element
 * an op does not write fails it too. A case a backend's supports_op refuses
 * is reported and skipped. Then the checked calls themselves: each refusal
 * (shapes, limits, capacity, cache cells, unsupported types) with its
 * message, and nothing written; and sequences of ops whose results depend
 * on what ran before (matmuls sharing their activations, against the
 * oracle's sequence).
 *
 * perf: each case on each backend timed (the cases marked perf add shapes
 * of a real model, SmolLM2-135M), printing the time per op, the bytes it
 * must move per second, and for matmul the multiply-adds (2 flops each). An in-place op is run on a fresh copy of its input
 * each time and the copy's own time subtracted.
 *
 * -o OP runs the cases of one op (backend.h's names: matmul, rms_norm ...);
 * -b BACKEND those of one backend (cpu, cuda0 ...). Backends: the CPU at its
 * best kernel level and each usable GPU; without a GPU its part is skipped
 * and says why. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/gpu.h"
#include "backend/host.h"
#include "backend/ops.h"
#include "check.h"
#include "gguf/ggml_types.h"
#include "quant/quant.h"

#include "backend_ops_cases.h"

/* ------------------------------------------------ a case's host inputs -- */

static uint64_t rng;
static float frand(void) { return (float)((double)(check_splitmix64(&rng) >> 11) * 0x1p-52 - 1.0); } /* [-1, 1) */

/* What a case runs on: its tensors' types and shapes in the op's argument
 * order (backend.h HL_OPS), their first contents (NULL: an output, which
 * starts as NaN), the result's index, and the op's other arguments. */
typedef struct prep {
    hl_tensor shape[HL_OP_MAX_TENSORS]; /* data NULL */
    void *host[HL_OP_MAX_TENSORS];
    int n_args, out;
    bool y_is_x;  /* rms_norm, layer_norm in place: the last argument (y) is argument 0 */
    int32_t *ids; /* get_rows */
    int32_t pos[MAX_TOKENS], row0[MAX_TOKENS];
    int32_t n_pos; /* 0: the op takes no positions */
    hl_rope_params rope;
} prep;

static hl_tensor shape_of(uint32_t type, int64_t ne0, int64_t ne1) {
    return (hl_tensor){.type = type, .ne = {ne0, ne1, 1, 1}};
}

/* Random rows of `type` (values in [-scale, scale), quantized by the reference quantizer). */
static void *random_rows(uint32_t type, int64_t d, int64_t rows, float scale) {
    const size_t row_bytes = hl_row_size(type, d);
    uint8_t *q = malloc(row_bytes * (size_t)rows);
    float *f = malloc(sizeof(float) * (size_t)d);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t i = 0; i < d; i++) f[i] = frand() * scale;
        hl_quant_get(type)->from_float(f, q + (size_t)r * row_bytes, d);
    }
    free(f);
    return q;
}

static void add_arg(prep *p, hl_tensor shape, void *host) {
    p->shape[p->n_args] = shape;
    p->host[p->n_args++] = host;
}

/* Each token's k distinct experts (I32 {k, n}; for k <= 2 of n_expert >= 4, and 4 of 8). */
static int32_t *expert_ids(int32_t n_expert, int32_t k, int64_t n) {
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(k * n));
    for (int64_t t = 0; t < n; t++)
        for (int32_t j = 0; j < k; j++) ids[t * k + j] = (int32_t)((t * 3 + j * (1 + t % 2) + j) % n_expert);
    return ids;
}

static void prepare(const op_case *c, size_t index, prep *p) {
    memset(p, 0, sizeof *p);
    rng = 0x9E3779B97F4A7C15ull ^ (uint64_t)index * 0x100000001B3ull;
    const int64_t q_dim = (int64_t)c->n_head * c->head_dim, kv_dim = (int64_t)c->n_head_kv * c->head_dim;
    const uint32_t f32 = GGML_TYPE_F32;
    switch (c->op) {
    case HL_OP_GET_ROWS:
        add_arg(p, shape_of(c->type, c->d, c->rows), random_rows(c->type, c->d, c->rows, 1.0f));
        add_arg(p, shape_of(f32, c->d, c->n), NULL);
        p->ids = malloc(sizeof(int32_t) * (size_t)c->n);
        for (int64_t t = 0; t < c->n; t++) p->ids[t] = (int32_t)((t * 37 + 3) % c->rows); /* repeats, the last row */
        p->ids[c->n - 1] = (int32_t)c->rows - 1;
        p->out = 1;
        break;
    case HL_OP_MATMUL:
        add_arg(p, shape_of(c->type, c->d, c->rows), random_rows(c->type, c->d, c->rows, 1.0f));
        add_arg(p, shape_of(f32, c->d, c->n), random_rows(f32, c->d, c->n, 2.0f));
        add_arg(p, shape_of(f32, c->rows, c->n), NULL);
        p->out = 2;
        break;
    case HL_OP_MATMUL_ADD: /* y starts random and is the result; tmp is the scratch of the unfused path */
        add_arg(p, shape_of(c->type, c->d, c->rows), random_rows(c->type, c->d, c->rows, 1.0f));
        add_arg(p, shape_of(f32, c->d, c->n), random_rows(f32, c->d, c->n, 2.0f));
        add_arg(p, shape_of(f32, c->rows, c->n), random_rows(f32, c->rows, c->n, 4.0f));
        add_arg(p, shape_of(f32, c->rows, c->n), NULL);
        p->out = 2;
        break;
    case HL_OP_RMS_NORM:
        add_arg(p, shape_of(f32, c->d * c->rows, c->n), random_rows(f32, c->d * c->rows, c->n, 3.0f));
        add_arg(p, shape_of(f32, c->d, 1), random_rows(f32, c->d, 1, 1.5f));
        add_arg(p, shape_of(f32, c->d * c->rows, c->n), NULL);
        p->y_is_x = c->variant;
        p->out = c->variant ? 0 : 2;
        break;
    case HL_OP_LAYER_NORM: /* rows around 0.5, so that the mean matters */
        add_arg(p, shape_of(f32, c->d, c->n), random_rows(f32, c->d, c->n, 3.0f));
        for (int64_t i = 0; i < c->d * c->n; i++) ((float *)p->host[0])[i] += 0.5f;
        add_arg(p, shape_of(f32, c->d, 1), random_rows(f32, c->d, 1, 1.5f));
        add_arg(p, shape_of(f32, c->d, 1), random_rows(f32, c->d, 1, 0.5f));
        add_arg(p, shape_of(f32, c->d, c->n), NULL);
        p->y_is_x = c->variant;
        p->out = c->variant ? 0 : 3;
        break;
    case HL_OP_ROPE:
    case HL_OP_ROPE_SHIFT:
    case HL_OP_ROPE_STORE:
        if (c->op == HL_OP_ROPE_SHIFT) {
            add_arg(p, shape_of(c->type, kv_dim, c->n_ctx), random_rows(c->type, kv_dim, c->n_ctx, 2.0f));
        } else {
            add_arg(p, shape_of(f32, q_dim, c->n), random_rows(f32, q_dim, c->n, 2.0f));
        }
        if (c->op == HL_OP_ROPE_STORE) { /* k, v, their caches (compared whole: the other rows must stay) */
            add_arg(p, shape_of(f32, kv_dim, c->n), random_rows(f32, kv_dim, c->n, 2.0f));
            add_arg(p, shape_of(f32, kv_dim, c->n), random_rows(f32, kv_dim, c->n, 1.0f));
            add_arg(p, shape_of(c->type, kv_dim, c->n_ctx), random_rows(c->type, kv_dim, c->n_ctx, 2.0f));
            add_arg(p, shape_of(c->type, kv_dim, c->n_ctx), random_rows(c->type, kv_dim, c->n_ctx, 1.0f));
            p->out = c->result;
        }
        if (c->variant) {
            float *ff = malloc(sizeof(float) * (size_t)(c->n_rot / 2));
            for (int i = 0; i < c->n_rot / 2; i++) ff[i] = 1.0f + 0.75f * (frand() + 1.0f);
            add_arg(p, shape_of(f32, c->n_rot / 2, 1), ff);
        }
        p->rope = (hl_rope_params){.n_rot = c->n_rot,
                                   .mode = c->mode,
                                   .freq_base = 10000.0f,
                                   .freq_scale = c->yarn ? 0.25f : 0.5f,
                                   .n_ctx_orig = 4096,
                                   .ext_factor = c->yarn ? 1.0f : 0.0f,
                                   .attn_factor = 1.0f,
                                   .beta_fast = 32.0f,
                                   .beta_slow = 1.0f};
        break;
    case HL_OP_STORE_ROWS:
        add_arg(p, shape_of(f32, kv_dim, c->n), random_rows(f32, kv_dim, c->n, 1.0f));
        add_arg(p, shape_of(c->type, kv_dim, c->n_ctx),
                random_rows(c->type, kv_dim, c->n_ctx, 1.0f)); /* compared whole */
        p->out = 1;
        break;
    case HL_OP_ATTENTION:
        add_arg(p, shape_of(f32, q_dim, c->n), random_rows(f32, q_dim, c->n, 1.0f));
        add_arg(p, shape_of(c->type, kv_dim, c->n_ctx), random_rows(c->type, kv_dim, c->n_ctx, 1.0f));
        add_arg(p, shape_of(c->type_v ? c->type_v : c->type, kv_dim, c->n_ctx),
                random_rows(c->type_v ? c->type_v : c->type, kv_dim, c->n_ctx, 1.0f));
        add_arg(p, shape_of(f32, q_dim, c->n), NULL);
        p->out = 3;
        break;
    case HL_OP_SWIGLU:
    case HL_OP_GEGLU:
    case HL_OP_ADD:
        add_arg(p, shape_of(f32, c->d, c->n), random_rows(f32, c->d, c->n, 4.0f));
        add_arg(p, shape_of(f32, c->d, c->variant ? 1 : c->n), random_rows(f32, c->d, c->variant ? 1 : c->n, 2.0f));
        break;
    case HL_OP_MATMUL_ID: {
        const int64_t n_x = c->variant ? c->k_used : 1;
        add_arg(p, (hl_tensor){.type = c->type, .ne = {c->d, c->rows, c->n_expert, 1}},
                random_rows(c->type, c->d, c->rows * c->n_expert, 1.0f));
        add_arg(p, (hl_tensor){.type = f32, .ne = {c->d, n_x, c->n, 1}}, random_rows(f32, c->d, n_x * c->n, 2.0f));
        add_arg(p, shape_of(GGML_TYPE_I32, c->k_used, c->n), expert_ids(c->n_expert, c->k_used, c->n));
        add_arg(p, (hl_tensor){.type = f32, .ne = {c->rows, c->k_used, c->n, 1}}, NULL);
        p->out = 3;
        break;
    }
    case HL_OP_MOE_ROUTE: /* logits; the weights are compared, the experts in test_moe_route */
        add_arg(p, shape_of(f32, c->n_expert, c->n), random_rows(f32, c->n_expert, c->n, 3.0f));
        add_arg(p, shape_of(GGML_TYPE_I32, c->k_used, c->n), NULL);
        add_arg(p, shape_of(f32, c->k_used, c->n), NULL);
        p->out = 2;
        break;
    case HL_OP_MOE_SUM:
        add_arg(p, (hl_tensor){.type = f32, .ne = {c->d, c->k_used, c->n, 1}},
                random_rows(f32, c->d, c->k_used * c->n, 2.0f));
        add_arg(p, shape_of(f32, c->k_used, c->n), random_rows(f32, c->k_used, c->n, 1.0f));
        add_arg(p, shape_of(f32, c->d, c->n), NULL);
        p->out = 2;
        break;
    case HL_OP_SCALE:
    case HL_OP_CLAMP:
    case HL_OP_GELU: add_arg(p, shape_of(f32, c->d, c->n), random_rows(f32, c->d, c->n, 4.0f)); break;
    default: break;
    }
    if (c->op == HL_OP_ROPE || c->op == HL_OP_ROPE_STORE || c->op == HL_OP_STORE_ROWS || c->op == HL_OP_ATTENTION) {
        p->n_pos = (int32_t)c->n;
        for (int32_t t = 0; t < p->n_pos; t++) {
            const bool seq1 = c->split && t >= c->split;
            p->pos[t] = seq1 ? c->pos1 + t - c->split : c->pos0 + t;
            p->row0[t] = seq1 ? SEQ1_ROW : 0;
        }
    }
}

static void unprepare(prep *p) {
    for (int i = 0; i < p->n_args; i++) free(p->host[i]);
    free(p->ids);
}

/* ------------------------------------------ a case's tensors on a backend -- */

/* Each tensor of a case on one backend, between guard bytes. */
typedef struct inst {
    hl_backend *b;
    hl_tensor t[HL_OP_MAX_TENSORS];
    void *base[HL_OP_MAX_TENSORS]; /* allocations: GUARD bytes, the tensor, GUARD bytes */
    void *fresh;                   /* perf of an in-place op: the input's first contents, on the backend */
} inst;

static uint8_t guard_byte(size_t i) { return (uint8_t)(0xA5 ^ (i * 29)); }

static hearth_status alloc_guarded(hl_backend *b, const hl_tensor *shape, const void *host, hl_tensor *t, void **base) {
    const size_t bytes = hl_tensor_nbytes(shape), total = bytes + 2 * GUARD;
    uint8_t *h = malloc(total);
    for (size_t i = 0; i < GUARD; i++) h[i] = h[GUARD + bytes + i] = guard_byte(i);
    if (host) memcpy(h + GUARD, host, bytes);
    else memset(h + GUARD, 0xFF, bytes); /* NaN until written */
    hearth_status st = hl_buffer_alloc(b, total, base);
    if (st == HEARTH_OK) st = hl_upload(b, *base, h, total);
    free(h);
    *t = *shape;
    t->data = (uint8_t *)*base + GUARD;
    t->backend = b;
    return st;
}

/* Bytes of the guards of t that no longer hold their pattern. */
static size_t guard_damage(hl_backend *b, const hl_tensor *t, const void *base) {
    const size_t bytes = hl_tensor_nbytes(t), total = bytes + 2 * GUARD;
    uint8_t *h = malloc(total);
    size_t bad = 0;
    if (hl_download(b, h, base, total) != HEARTH_OK) bad = 2 * GUARD;
    else
        for (size_t i = 0; i < GUARD; i++) bad += (h[i] != guard_byte(i)) + (h[GUARD + bytes + i] != guard_byte(i));
    free(h);
    return bad;
}

static hearth_status setup(hl_backend *b, const prep *p, inst *in) {
    memset(in, 0, sizeof *in);
    in->b = b;
    for (int i = 0; i < p->n_args; i++) {
        if (i == p->n_args - 1 && p->y_is_x) {
            in->t[i] = in->t[0];
            continue;
        }
        HL_TRY(alloc_guarded(b, &p->shape[i], p->host[i], &in->t[i], &in->base[i]));
    }
    return p->n_pos ? hl_set_positions(b, p->pos, p->row0, p->n_pos) : HEARTH_OK;
}

static void teardown(inst *in) {
    for (int i = 0; i < HL_OP_MAX_TENSORS; i++)
        if (in->base[i]) hl_buffer_free(in->b, in->base[i]);
    if (in->fresh) hl_buffer_free(in->b, in->fresh);
}

/* The op's call and its description (for supports_op) on these tensors. */
static hl_attn_args attn_of(const op_case *c, inst *in) {
    return (hl_attn_args){.q = &in->t[0],
                          .k_cache = &in->t[1],
                          .v_cache = &in->t[2],
                          .out = &in->t[3],
                          .n_head = c->n_head,
                          .n_head_kv = c->n_head_kv,
                          .head_dim = c->head_dim,
                          .n_swa = c->n_swa,
                          .scale = 1.0f / sqrtf((float)c->head_dim),
                          .max_bias = c->max_bias,
                          .bidirectional = c->bidirectional};
}

static hearth_status run_op(const op_case *c, const prep *p, inst *in) {
    hl_backend *b = in->b;
    hl_tensor *t = in->t;
    switch (c->op) {
    case HL_OP_GET_ROWS: return hl_get_rows(b, &t[0], p->ids, &t[1]);
    case HL_OP_RMS_NORM: return hl_rms_norm(b, &t[0], &t[1], 1e-5f, &t[2]);
    case HL_OP_LAYER_NORM: return hl_layer_norm(b, &t[0], &t[1], c->no_bias ? NULL : &t[2], 1e-5f, &t[3]);
    case HL_OP_MATMUL: return hl_matmul(b, &t[0], &t[1], &t[2]);
    case HL_OP_MATMUL_ADD: return hl_matmul_add(b, &t[0], &t[1], &t[2], &t[3]);
    case HL_OP_ROPE: return hl_rope(b, &t[0], c->n_head, &p->rope, c->variant ? &t[1] : NULL);
    case HL_OP_ROPE_SHIFT:
        return hl_rope_shift(b, &t[0], c->pos0, c->n, c->n_head_kv, c->pos1, &p->rope, c->variant ? &t[1] : NULL);
    case HL_OP_STORE_ROWS: return hl_store_rows(b, &t[0], &t[1]);
    case HL_OP_ROPE_STORE:
        return hl_rope_store(b, &t[0], &t[1], &t[2], &t[3], &t[4], c->n_head, &p->rope, c->variant ? &t[5] : NULL);
    case HL_OP_ATTENTION: {
        const hl_attn_args a = attn_of(c, in);
        return hl_attention(b, &a);
    }
    case HL_OP_SWIGLU: return hl_swiglu(b, &t[0], &t[1]);
    case HL_OP_GEGLU: return hl_geglu(b, &t[0], &t[1]);
    case HL_OP_GELU: return hl_gelu(b, &t[0]);
    case HL_OP_ADD: return hl_add(b, &t[0], &t[1]);
    case HL_OP_SCALE: return hl_scale(b, &t[0], -1.25f);
    case HL_OP_CLAMP: return hl_clamp(b, &t[0], -1.5f, 2.25f); /* inputs in [-4, 4): both bounds bite */
    case HL_OP_MATMUL_ID: return hl_matmul_id(b, &t[0], &t[1], &t[2], &t[3]);
    case HL_OP_MOE_ROUTE: return hl_moe_route(b, &t[0], &t[1], &t[2]);
    case HL_OP_MOE_SUM: return hl_moe_sum(b, &t[0], &t[1], &t[2]);
    default: return hl_fail(HEARTH_ERR_INVALID_ARG, "no runner for op %d", (int)c->op);
    }
}

static bool supported(const op_case *c, const prep *p, hl_backend *b) {
    inst fake = {.b = b};
    memcpy(fake.t, p->shape, sizeof fake.t);
    const hl_attn_args a = attn_of(c, &fake);
    hl_op_desc d = {
        .op = c->op, .n_head = c->op == HL_OP_ROPE_SHIFT ? c->n_head_kv : c->n_head, .rope = &p->rope, .attn = &a};
    for (int i = 0; i < p->n_args; i++) d.t[i] = &fake.t[i];
    if (p->y_is_x) d.t[p->n_args - 1] = &fake.t[0];
    return hl_supports_op(b, &d);
}

/* The result as floats (F32, or an F16 cache). */
static float *fetch_result(const prep *p, inst *in) {
    const hl_tensor *t = &in->t[p->out];
    const int64_t n = hl_tensor_nelements(t);
    const size_t bytes = hl_tensor_nbytes(t);
    void *raw = malloc(bytes);
    float *f = malloc(sizeof(float) * (size_t)n);
    if (hl_download(in->b, raw, t->data, bytes) != HEARTH_OK) {
        for (int64_t i = 0; i < n; i++) f[i] = NAN;
    } else {
        hl_quant_get(t->type)->to_float(raw, f, n);
    }
    free(raw);
    return f;
}

/* ----------------------------------------------------------- test mode -- */

static hl_backend *ref;    /* the CPU at scalar level: the oracle */
static hl_backend *ref_fa; /* and with the tiled attention: the oracle of what only it runs (a quantized V cache) */
static hl_backend *backends[3 + HL_MAX_GPUS];
static const char *backend_names[3 + HL_MAX_GPUS]; /* hl_backend_name, or cpu-fa for the CPU's tiled attention */
static int n_backends;
static int n_pass, n_fail, n_skip;

static double nmse(const float *y, const float *r, int64_t n) {
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double d = (double)y[i] - r[i];
        num += isfinite(d) ? d * d : INFINITY;
        den += (double)r[i] * r[i];
    }
    return den > 0.0 ? num / den : num;
}

static double max_abs_diff(const float *y, const float *r, int64_t n) {
    double worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double d = fabs((double)y[i] - r[i]);
        worst = isfinite(d) && d <= worst ? worst : d;
    }
    return worst;
}

/* Runs the case on b: OK and *result, or a failure with *why. */
static bool run_checked(const op_case *c, const prep *p, hl_backend *b, float **result, char *why, size_t size) {
    inst in;
    *result = NULL;
    hearth_status st = setup(b, p, &in);
    if (st == HEARTH_OK) st = run_op(c, p, &in);
    if (st == HEARTH_OK) st = hl_synchronize(b);
    if (st != HEARTH_OK) {
        snprintf(why, size, "%s", hearth_last_error());
        teardown(&in);
        return false;
    }
    for (int i = 0; i < p->n_args; i++) {
        if (!in.base[i]) continue;
        const size_t bad = guard_damage(b, &in.t[i], in.base[i]);
        if (bad) {
            snprintf(why, size, "%zu guard bytes around argument %d were overwritten", bad, i);
            teardown(&in);
            return false;
        }
    }
    *result = fetch_result(p, &in);
    teardown(&in);
    return true;
}

/* Bidirectional attention computed directly, in double, from the case's
 * inputs (the F16 cells as stored, the query unrounded): each token of a
 * sequence attends to the cells [0, end) of its sequence, end one past the
 * last position of the sequence's tokens, with ALiBi's -slope |p - j|. An
 * oracle independent of the backends' kernels; the CPU rounds the query and
 * the probabilities to F16 (relative error 2^-11), within the case's bounds. */
static void check_direct(const op_case *c, const prep *p, const float *want, const char *label) {
    const int64_t kv_dim = (int64_t)c->n_head_kv * c->head_dim, q_dim = (int64_t)c->n_head * c->head_dim;
    float *k = malloc(sizeof(float) * (size_t)(kv_dim * c->n_ctx)),
          *v = malloc(sizeof(float) * (size_t)(kv_dim * c->n_ctx));
    float *direct = malloc(sizeof(float) * (size_t)(q_dim * c->n));
    double *s = malloc(sizeof(double) * (size_t)c->n_ctx);
    hl_quant_get(c->type)->to_float(p->host[1], k, kv_dim * c->n_ctx);
    hl_quant_get(c->type)->to_float(p->host[2], v, kv_dim * c->n_ctx);
    const float *q = p->host[0];
    for (int32_t t = 0; t < p->n_pos; t++) {
        int32_t end = 0;
        for (int32_t u = 0; u < p->n_pos; u++)
            if (p->row0[u] == p->row0[t] && p->pos[u] + 1 > end) end = p->pos[u] + 1;
        for (int32_t h = 0; h < c->n_head; h++) {
            const int32_t kvh = h / (c->n_head / c->n_head_kv);
            const double slope = hl_alibi_slope(c->n_head, c->max_bias, h);
            double max = -INFINITY, sum = 0.0;
            for (int32_t j = 0; j < end; j++) {
                const float *kj = k + (p->row0[t] + j) * kv_dim + kvh * c->head_dim;
                double dot = 0.0;
                for (int32_t d = 0; d < c->head_dim; d++) dot += (double)q[t * q_dim + h * c->head_dim + d] * kj[d];
                s[j] = dot / sqrt((double)c->head_dim) - (c->max_bias > 0.0f ? slope * abs(p->pos[t] - j) : 0.0);
                max = s[j] > max ? s[j] : max;
            }
            for (int32_t j = 0; j < end; j++) sum += s[j] = exp(s[j] - max);
            for (int32_t d = 0; d < c->head_dim; d++) {
                double o = 0.0;
                for (int32_t j = 0; j < end; j++)
                    o += s[j] / sum * v[(p->row0[t] + j) * kv_dim + kvh * c->head_dim + d];
                direct[t * q_dim + h * c->head_dim + d] = (float)o;
            }
        }
    }
    const int64_t n = q_dim * c->n;
    const double e = nmse(want, direct, n), worst = max_abs_diff(want, direct, n);
    check_count++;
    if (e <= c->max_nmse && worst <= c->max_abs) {
        n_pass++;
    } else {
        printf("FAIL %-52s direct NMSE %.3g (at most %.3g), largest difference %.3g (at most %.3g)\n", label, e,
               c->max_nmse, worst, c->max_abs);
        n_fail++;
        check_failures++;
    }
    free(k);
    free(v);
    free(direct);
    free(s);
}

static void test_case(const op_case *c, size_t index) {
    char label[160], why[512];
    label_of(c, label, sizeof label);
    prep p;
    prepare(c, index, &p);
    float *want = NULL;
    hl_backend *oracle = supported(c, &p, ref) ? ref : ref_fa;
    if (!supported(c, &p, oracle) || !run_checked(c, &p, oracle, &want, why, sizeof why)) {
        printf("FAIL %-52s the reference: %s\n", label, supported(c, &p, oracle) ? why : "not supported");
        n_fail++;
        check_failures++;
        unprepare(&p);
        return;
    }
    if (c->bidirectional) check_direct(c, &p, want, label);
    const int64_t n_out = hl_tensor_nelements(&p.shape[p.out]);
    for (int i = 0; i < n_backends; i++) {
        hl_backend *b = backends[i];
        float *got = NULL;
        if (!supported(c, &p, b)) {
            printf("SKIP %-52s %-6s not supported\n", label, backend_names[i]);
            n_skip++;
            continue;
        }
        bool ok = run_checked(c, &p, b, &got, why, sizeof why);
        if (ok) {
            const double e = nmse(got, want, n_out);
            const double worst = c->max_abs > 0.0 ? max_abs_diff(got, want, n_out) : 0.0;
            ok = e <= c->max_nmse && worst <= c->max_abs;
            if (!ok)
                snprintf(why, sizeof why, "NMSE %.3g (at most %.3g), largest difference %.3g (at most %.3g)", e,
                         c->max_nmse, worst, c->max_abs);
        }
        check_count++;
        if (ok) n_pass++;
        else {
            printf("FAIL %-52s %-6s %s\n", label, backend_names[i], why);
            n_fail++;
            check_failures++;
        }
        free(got);
    }
    free(want);
    unprepare(&p);
}

/* ----------------------------------------------------------- perf mode -- */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Bytes the op must read and write at least. */
static double bytes_moved(const op_case *c, const prep *p) {
    double sum = 0.0;
    for (int i = 0; i < p->n_args; i++) sum += (double)hl_tensor_nbytes(&p->shape[i]);
    if ((c->op == HL_OP_RMS_NORM || c->op == HL_OP_LAYER_NORM) && !p->y_is_x) return sum;
    const double kv_row = (double)hl_row_size(c->type, (int64_t)c->n_head_kv * c->head_dim);
    switch (c->op) {
    case HL_OP_GET_ROWS: /* the rows looked up, not the table */
        return (double)hl_row_size(c->type, c->d) * (double)c->n + (double)hl_tensor_nbytes(&p->shape[1]);
    case HL_OP_STORE_ROWS: return (double)hl_tensor_nbytes(&p->shape[0]) + kv_row * (double)c->n;
    case HL_OP_MATMUL_ADD: /* w, x, y read and y written; the scratch (tmp) is the unfused path's own */
        return sum - (double)hl_tensor_nbytes(&p->shape[3]) + (double)hl_tensor_nbytes(&p->shape[2]);
    case HL_OP_ATTENTION: { /* K and V of the cells some query sees */
        bool seen[MAX_CTX] = {false};
        for (int32_t t = 0; t < p->n_pos; t++) {
            const int32_t lo = c->n_swa > 0 && p->pos[t] + 1 > c->n_swa ? p->pos[t] + 1 - c->n_swa : 0;
            for (int32_t j = lo; j <= p->pos[t]; j++) seen[p->row0[t] + j] = true;
        }
        double cells = 0.0;
        for (int j = 0; j < MAX_CTX; j++) cells += seen[j];
        return 2.0 * (double)hl_tensor_nbytes(&p->shape[0]) + 2.0 * kv_row * cells;
    }
    default: /* in place: the result is written over an input */
        return sum + (double)hl_tensor_nbytes(&p->shape[p->out]);
    }
}

/* Seconds per run of the op (with refresh: after restoring its in-place
 * input; without run_it: the restore alone), over at least 0.2 s. */
static double seconds_per_run(const op_case *c, const prep *p, inst *in, bool refresh, bool run_it) {
    const size_t fresh_bytes = hl_tensor_nbytes(&in->t[p->out]);
    long reps = 0;
    double t0 = now(), elapsed = 0.0;
    for (long batch = 1; elapsed < 0.2 && batch < (1L << 20); batch *= 2) {
        for (long k = 0; k < batch; k++) {
            if (refresh && hl_copy(in->b, in->t[p->out].data, in->fresh, fresh_bytes) != HEARTH_OK) return NAN;
            if (run_it && run_op(c, p, in) != HEARTH_OK) return NAN;
        }
        if (hl_synchronize(in->b) != HEARTH_OK) return NAN;
        reps += batch;
        elapsed = now() - t0;
    }
    return elapsed / (double)reps;
}

static void perf_case(const op_case *c, size_t index) {
    char label[160];
    label_of(c, label, sizeof label);
    prep p;
    prepare(c, index, &p);
    for (int i = 0; i < n_backends; i++) {
        hl_backend *b = backends[i];
        if (!supported(c, &p, b)) {
            printf("%-52s %-6s not supported\n", label, backend_names[i]);
            continue;
        }
        inst in;
        hearth_status st = setup(b, &p, &in);
        /* an op whose result overwrites an input runs on a fresh copy each time */
        const bool in_place = (p.host[p.out] != NULL && c->op != HL_OP_STORE_ROWS) ||
                              p.y_is_x; /* store_rows repeats itself */
        if (st == HEARTH_OK && in_place) {
            const size_t bytes = hl_tensor_nbytes(&in.t[p.out]);
            st = hl_buffer_alloc(b, bytes, &in.fresh);
            if (st == HEARTH_OK) st = hl_copy(b, in.fresh, in.t[p.out].data, bytes);
        }
        if (st == HEARTH_OK) st = run_op(c, &p, &in); /* warm-up */
        if (st == HEARTH_OK) st = hl_synchronize(b);
        double sec = NAN;
        if (st == HEARTH_OK) {
            sec = seconds_per_run(c, &p, &in, in_place, true);
            if (in_place) sec -= seconds_per_run(c, &p, &in, true, false);
        }
        if (st != HEARTH_OK || !isfinite(sec)) {
            printf("%-52s %-6s failed: %s\n", label, backend_names[i], hearth_last_error());
            check_failures++;
        } else {
            sec = sec > 1e-9 ? sec : 1e-9;
            printf("%-52s %-6s %10.2f us %8.2f GB/s", label, backend_names[i], sec * 1e6,
                   bytes_moved(c, &p) / sec / 1e9);
            if (c->op == HL_OP_MATMUL) printf(" %8.2f GFLOP/s", 2.0 * (double)(c->d * c->rows * c->n) / sec / 1e9);
            putchar('\n');
        }
        teardown(&in);
    }
    unprepare(&p);
}

/* ------------------------------------- the tiled attention's invariance -- */

/* The tiled attention cuts each token's keys at fixed positions
 * (cpu/flash_attn.c), so a token's output is the same, bit for bit, in a
 * pass of many tokens of two sequences on 2 threads and alone in its pass
 * on 3 (which splits a decode's KV length over the threads). */
static void test_flash_invariance(hl_backend *fa2) {
    static const op_case cases_alone[] = {ATTN_LONG(9, 3, 64, 30, 0, 0, 20, 700),
                                          ATTN_LONG(6, 3, 64, 50, 130, 100, 25, 600)};
    const hl_cpu_limits three = {
        .n_threads = 3, .max_tokens = MAX_TOKENS, .max_row = MAX_ROW, .n_ctx = MAX_CTX, .flash_attn = true};
    hl_backend *fa3 = NULL;
    CHECK(hl_backend_cpu_init(&three, &fa3) == HEARTH_OK);
    char why[512];
    for (size_t k = 0; k < sizeof cases_alone / sizeof *cases_alone && fa3; k++) {
        const op_case *c = &cases_alone[k];
        prep p;
        prepare(c, k, &p);
        float *all = NULL;
        CHECK_MSG(run_checked(c, &p, fa2, &all, why, sizeof why), "%s", why);
        const int64_t q_dim = (int64_t)c->n_head * c->head_dim;
        int64_t n_same = 0;
        for (int32_t t = 0; all && t < p.n_pos; t++) {
            prep one = p; /* token t alone: its query row, position and sequence */
            one.shape[0].ne[1] = one.shape[3].ne[1] = 1;
            one.host[0] = (float *)p.host[0] + t * q_dim;
            one.pos[0] = p.pos[t];
            one.row0[0] = p.row0[t];
            one.n_pos = 1;
            float *alone = NULL;
            CHECK_MSG(run_checked(c, &one, fa3, &alone, why, sizeof why), "%s", why);
            bool same = alone != NULL;
            for (int64_t i = 0; same && i < q_dim; i++) same = alone[i] == all[t * q_dim + i];
            n_same += same;
            free(alone);
        }
        CHECK_MSG(n_same == p.n_pos, "tiled attention, case %zu: %lld of %d tokens alone on 3 threads equal the pass",
                  k, (long long)n_same, (int)p.n_pos);
        free(all);
        unprepare(&p);
    }
    hl_backend_cpu_free(fa3);
}

/* ------------------------------------- matmuls that share activations -- */

/* One input through several matmuls in a row, as a layer runs Q, K and V
 * (and gate and up) of one normed input: CUDA's matvec quantizes the
 * activations to Q8_1 once for consecutive matmuls of the same input
 * (hl_cuda.q8_op), and a decode step's rms_norm and swiglu write that form
 * of their output themselves (cuda/q8_1.cuh), so the matmul after them
 * must see the same numbers as after a quantize of its own, and a matmul
 * after x changed (new contents uploaded, an op that writes it, another
 * matmul of another length in between, a norm of heads that writes no Q8_1
 * form) must quantize afresh; and matmul_n, which runs the weights of one
 * type in one launch and those of another after it from the same Q8_1
 * form, and after float weights, whose GEMM (from 8 tokens) writes its F16
 * activations over that form. The sequence on each backend against the
 * scalar CPU's. Writes n_tok * 67 outputs per step into ys[step]. */
#define SEQ_STEPS 14
static bool matmul_sequence(hl_backend *b, int64_t n_tok, const void *w1, const void *w2, const void *w3,
                            const void *w4, const float *x0, const float *x1, float *ys[SEQ_STEPS]) {
    const int64_t d = 1536, rows = 67;
    const hl_tensor s1 = shape_of(GGML_TYPE_Q4_K, d, rows), s2 = shape_of(GGML_TYPE_Q8_0, d, rows);
    const hl_tensor s3 = shape_of(GGML_TYPE_Q8_0, 512, rows), sx = shape_of(GGML_TYPE_F32, d, n_tok);
    const hl_tensor s4 = shape_of(GGML_TYPE_F16, d, rows);
    const hl_tensor sy = shape_of(GGML_TYPE_F32, rows, n_tok), sx3 = shape_of(GGML_TYPE_F32, 512, n_tok);
    const hl_tensor sn = shape_of(GGML_TYPE_F32, d, 1), sh = shape_of(GGML_TYPE_F32, 512, 1);
    hl_tensor t1, t2, t3, t4, x, x3, y, up, norm, head_norm, tmp, y_b, y_c;
    void *base[13] = {NULL};
    bool ok = alloc_guarded(b, &s1, w1, &t1, &base[0]) == HEARTH_OK &&
              alloc_guarded(b, &s4, w4, &t4, &base[12]) == HEARTH_OK &&
              alloc_guarded(b, &s2, w2, &t2, &base[1]) == HEARTH_OK &&
              alloc_guarded(b, &s3, w3, &t3, &base[2]) == HEARTH_OK &&
              alloc_guarded(b, &sx, x0, &x, &base[3]) == HEARTH_OK &&
              alloc_guarded(b, &sx3, x0, &x3, &base[4]) == HEARTH_OK &&
              alloc_guarded(b, &sy, NULL, &y, &base[5]) == HEARTH_OK &&
              alloc_guarded(b, &sx, x1, &up, &base[6]) == HEARTH_OK &&
              alloc_guarded(b, &sn, x1, &norm, &base[7]) == HEARTH_OK &&
              alloc_guarded(b, &sh, x0, &head_norm, &base[8]) == HEARTH_OK &&
              alloc_guarded(b, &sy, NULL, &tmp, &base[9]) == HEARTH_OK &&
              alloc_guarded(b, &sy, NULL, &y_b, &base[10]) == HEARTH_OK &&
              alloc_guarded(b, &sy, NULL, &y_c, &base[11]) == HEARTH_OK;
    const size_t y_bytes = hl_tensor_nbytes(&sy);
    /* step 0: W1 x; 1: W2 x right after (the same activations); 2: after x's new contents, W2 x; 3: after
     * scale(x), W1 x; 4: after a matmul of another row length, W2 x; 5: after rms_norm(x) in place, W1 x;
     * 6: after swiglu(x, up), W2 x; 7: after rms_norm of x's 512-element heads, W1 x; 8: after rms_norm(x),
     * y += W2 x (matmul_add); 9: after scale(x), matmul_n of W2, W1, W2 into y, y_b, y_c (two weight types),
     * whose y_b and y_c steps 10 and 11 read; 12: after rms_norm(x), matmul_n of W4 (F16), W2 into y, y_b,
     * whose y_b step 13 reads */
    const hl_tensor *ws[3] = {&t2, &t1, &t2}, *ws_f[2] = {&t4, &t2};
    hl_tensor *outs[3] = {&y, &y_b, &y_c};
    for (int step = 0; ok && step < SEQ_STEPS; step++) {
        if (step == 10 || step == 11 || step == 13) {
            ok = hl_download(b, ys[step], outs[step == 13 ? 1 : step - 9]->data, y_bytes) == HEARTH_OK;
            continue;
        }
        if (step == 2) ok = hl_upload(b, x.data, x1, hl_tensor_nbytes(&sx)) == HEARTH_OK;
        if (step == 3 || step == 9) ok = ok && hl_scale(b, &x, -1.25f) == HEARTH_OK;
        if (step == 4) ok = ok && hl_matmul(b, &t3, &x3, &y) == HEARTH_OK;
        if (step == 5 || step == 8 || step == 12) ok = ok && hl_rms_norm(b, &x, &norm, 1e-5f, &x) == HEARTH_OK;
        if (step == 6) ok = ok && hl_swiglu(b, &x, &up) == HEARTH_OK;
        if (step == 7) ok = ok && hl_rms_norm(b, &x, &head_norm, 1e-5f, &x) == HEARTH_OK;
        const hl_tensor *w = step == 0 || step == 3 || step == 5 || step == 7 ? &t1 : &t2;
        if (!ok) break;
        const hearth_status st = step == 8    ? hl_matmul_add(b, w, &x, &y, &tmp)
                                 : step == 9  ? hl_matmul_n(b, 3, ws, &x, outs)
                                 : step == 12 ? hl_matmul_n(b, 2, ws_f, &x, outs)
                                              : hl_matmul(b, w, &x, &y);
        ok = st == HEARTH_OK && hl_synchronize(b) == HEARTH_OK &&
             hl_download(b, ys[step], y.data, y_bytes) == HEARTH_OK;
    }
    for (int i = 0; i < 13; i++)
        if (base[i]) hl_buffer_free(b, base[i]);
    return ok;
}

static void test_shared_activations(void) {
    const int64_t d = 1536, rows = 67;
    void *w1 = random_rows(GGML_TYPE_Q4_K, d, rows, 1.0f), *w2 = random_rows(GGML_TYPE_Q8_0, d, rows, 1.0f);
    void *w3 = random_rows(GGML_TYPE_Q8_0, 512, rows, 1.0f), *w4 = random_rows(GGML_TYPE_F16, d, rows, 1.0f);
    static const int64_t n_toks[] = {1, 3, 8}; /* 8: the norm writes the Q8_1 form, the F16 weight takes cuBLAS */
    for (size_t it = 0; it < sizeof n_toks / sizeof n_toks[0]; it++) {
        const int64_t n_tok = n_toks[it];
        float *x0 = malloc(sizeof(float) * (size_t)(d * n_tok)), *x1 = malloc(sizeof(float) * (size_t)(d * n_tok));
        for (int64_t i = 0; i < d * n_tok; i++) x0[i] = frand(), x1[i] = frand();
        float *want[SEQ_STEPS], *got[SEQ_STEPS];
        for (int k = 0; k < SEQ_STEPS; k++) {
            want[k] = malloc(sizeof(float) * (size_t)(rows * n_tok));
            got[k] = malloc(sizeof(float) * (size_t)(rows * n_tok));
        }
        CHECK_MSG(matmul_sequence(ref, n_tok, w1, w2, w3, w4, x0, x1, want), "matmul sequence on the reference: %s",
                  hearth_last_error());
        for (int i = 0; i < n_backends; i++) {
            if (!matmul_sequence(backends[i], n_tok, w1, w2, w3, w4, x0, x1, got)) {
                CHECK_MSG(false, "matmul sequence on %s: %s", backend_names[i], hearth_last_error());
                continue;
            }
            for (int k = 0; k < SEQ_STEPS; k++) {
                const double e = nmse(got[k], want[k], rows * n_tok);
                CHECK_MSG(e <= 5e-4, "matmul sequence on %s, %lld tokens, step %d: NMSE %.3g", backend_names[i],
                          (long long)n_tok, k, e);
            }
        }
        for (int k = 0; k < SEQ_STEPS; k++) free(want[k]), free(got[k]);
        free(x0);
        free(x1);
    }
    free(w1);
    free(w2);
    free(w3);
    free(w4);
}

/* ------------------------------------------------ the routing itself -- */

/* moe_route's experts and weights on each backend that runs it, against
 * the definition computed here in double: the k largest softmax
 * probabilities, highest first, divided by their sum. */
static void test_moe_route(void) {
    static const op_case routes[] = {ROUTE(4, 2, 9), ROUTE(8, 2, 33), ROUTE(8, 4, 5)};
    for (size_t r = 0; r < sizeof routes / sizeof *routes; r++) {
        const op_case *c = &routes[r];
        prep p;
        prepare(c, 1000 + r, &p);
        const float *logits = p.host[0];
        for (int i = 0; i < n_backends; i++) {
            inst in;
            if (!supported(c, &p, backends[i])) continue;
            CHECK(setup(backends[i], &p, &in) == HEARTH_OK && run_op(c, &p, &in) == HEARTH_OK &&
                  hl_synchronize(backends[i]) == HEARTH_OK);
            int32_t ids[4 * 33];
            float w[4 * 33];
            CHECK(hl_download(backends[i], ids, in.t[1].data, sizeof(int32_t) * (size_t)(c->k_used * c->n)) ==
                  HEARTH_OK);
            CHECK(hl_download(backends[i], w, in.t[2].data, sizeof(float) * (size_t)(c->k_used * c->n)) == HEARTH_OK);
            for (int64_t t = 0; t < c->n; t++) {
                const float *x = logits + t * c->n_expert;
                double pr[8], sum = 0.0, top = 0.0;
                for (int e = 0; e < c->n_expert; e++) sum += pr[e] = exp((double)x[e]);
                bool used[8] = {false};
                int want[4];
                for (int j = 0; j < c->k_used; j++) {
                    int best = -1;
                    for (int e = 0; e < c->n_expert; e++)
                        if (!used[e] && (best < 0 || pr[e] > pr[best])) best = e;
                    used[best] = true;
                    want[j] = best;
                    top += pr[best];
                }
                for (int j = 0; j < c->k_used; j++)
                    CHECK_MSG(ids[t * c->k_used + j] == want[j] &&
                                  fabs(w[t * c->k_used + j] - pr[want[j]] / top) < 1e-6,
                              "moe_route on %s, token %lld slot %d: expert %d weight %g, want %d weight %g",
                              backend_names[i], (long long)t, j, (int)ids[t * c->k_used + j],
                              (double)w[t * c->k_used + j], want[j], pr[want[j]] / top);
            }
            teardown(&in);
        }
        unprepare(&p);
    }
}

/* ----------------------------------------------------- the checked calls -- */

/* Each refusal of ops.h on the CPU: the status, a message naming the op,
 * the backend and the sizes, and nothing written. */
static void test_refusals(hl_backend *b) {
    const uint32_t f32 = GGML_TYPE_F32;
    prep p = {0};
    float *wdata = random_rows(f32, 64, 8, 1.0f), *xdata = random_rows(f32, 64, 4, 1.0f);
    add_arg(&p, shape_of(f32, 64, 8), wdata);
    add_arg(&p, shape_of(f32, 64, 4), xdata);
    add_arg(&p, shape_of(f32, 8, 4), NULL);
    inst in;
    CHECK(setup(b, &p, &in) == HEARTH_OK);
    hl_tensor *w = &in.t[0], *x = &in.t[1], *y = &in.t[2];
    CHECK(hl_matmul(b, w, x, y) == HEARTH_OK && hl_synchronize(b) == HEARTH_OK);

    hl_tensor bad = *x;
    bad.ne[0] = 63; /* rows of another length than w's */
    CHECK(hl_matmul(b, w, &bad, y) == HEARTH_ERR_INVALID_ARG && strstr(hearth_last_error(), "matmul on cpu") &&
          strstr(hearth_last_error(), "x f32 {63, 4}") && strstr(hearth_last_error(), "w f32 {64, 8}"));
    bad = *x;
    bad.type = GGML_TYPE_F16;
    CHECK(hl_matmul(b, w, &bad, y) == HEARTH_ERR_INVALID_ARG);
    hl_tensor big_x = *x, big_y = *y; /* more tokens than the instance was sized for */
    big_x.ne[1] = big_y.ne[1] = MAX_TOKENS + 1;
    CHECK(hl_matmul(b, w, &big_x, &big_y) == HEARTH_ERR_INVALID_ARG && strstr(hearth_last_error(), "max_tokens"));
    hl_tensor small = *y; /* a shape larger than the buffer planned for it */
    small.capacity = hl_tensor_nbytes(y) - sizeof(float);
    CHECK(hl_matmul(b, w, x, &small) == HEARTH_ERR_INVALID_ARG);
    hl_tensor q8k = *w; /* an activation type: no matmul kernel */
    q8k.type = GGML_TYPE_Q8_K;
    q8k.ne[0] = 256;
    hl_tensor x256 = *x, y8 = *y;
    x256.ne[0] = 256;
    x256.data = NULL; /* never read: refused before the slot */
    CHECK(hl_matmul(b, &q8k, &x256, &y8) == HEARTH_ERR_UNSUPPORTED && strstr(hearth_last_error(), "q8_K"));
    const int32_t ids[2] = {0, 8};
    hl_tensor rows = *y;
    rows.ne[0] = 64;
    rows.ne[1] = 2;
    CHECK(hl_get_rows(b, w, ids, &rows) == HEARTH_ERR_INVALID_ARG && strstr(hearth_last_error(), "id 8"));
    hl_tensor gain = *w, bias = *w; /* a bias shorter than the rows */
    gain.ne[1] = bias.ne[1] = 1;
    bias.ne[0] = 63;
    CHECK(hl_layer_norm(b, x, &gain, &bias, 1e-5f, y) == HEARTH_ERR_INVALID_ARG &&
          strstr(hearth_last_error(), "layer_norm on cpu") && strstr(hearth_last_error(), "b f32 {63, 1}"));
    /* experts: w as 2 experts {64, 4, 2}; more experts per token than the weight has, F32 ids, too many experts */
    hl_tensor experts = *w, x3 = *x, y3 = *y, ids3 = shape_of(GGML_TYPE_I32, 3, 4), w3 = shape_of(f32, 3, 4);
    experts.ne[1] = 4;
    experts.ne[2] = 2;
    x3.ne[1] = 1;
    x3.ne[2] = 4;
    y3.ne[0] = 4;
    y3.ne[1] = 3;
    y3.ne[2] = 4;
    CHECK(hl_matmul_id(b, &experts, &x3, &ids3, &y3) == HEARTH_ERR_INVALID_ARG &&
          strstr(hearth_last_error(), "matmul_id on cpu") && strstr(hearth_last_error(), "k <= n_expert"));
    hl_tensor logits = shape_of(f32, HL_MOE_MAX_EXPERTS + 1, 4), ids_f32 = w3;
    CHECK(hl_moe_route(b, &logits, &ids3, &w3) == HEARTH_ERR_INVALID_ARG && strstr(hearth_last_error(), "moe_route"));
    logits.ne[0] = 8;
    CHECK(hl_moe_route(b, &logits, &ids_f32, &w3) == HEARTH_ERR_INVALID_ARG);
    /* the fused ops: matmul_n's count and every product's shapes checked before any runs, matmul_add's shapes */
    const hl_tensor *ws[4] = {w, w, w, w};
    hl_tensor y_short = *y, *ys[4] = {y, y, y, y}, *ys_bad[2] = {y, &y_short};
    y_short.ne[0] = 7;
    CHECK(hl_matmul_n(b, 4, ws, x, ys) == HEARTH_ERR_INVALID_ARG && strstr(hearth_last_error(), "1 to 3 weights"));
    CHECK(hl_matmul_n(b, 2, ws, x, ys_bad) == HEARTH_ERR_INVALID_ARG && strstr(hearth_last_error(), "y f32 {7, 4}"));
    CHECK(hl_matmul_add(b, w, x, &y_short, y) == HEARTH_ERR_INVALID_ARG &&
          strstr(hearth_last_error(), "matmul_add on cpu"));

    /* positions: cells past the cache, tokens without positions, too many tokens */
    hl_tensor cache = shape_of(GGML_TYPE_F16, 64, 16), src = *x;
    void *cache_base = NULL;
    CHECK(alloc_guarded(b, &cache, NULL, &cache, &cache_base) == HEARTH_OK);
    int32_t pos[4] = {13, 14, 15, 16}, row0[4] = {0, 0, 0, 0};
    CHECK(hl_set_positions(b, pos, row0, 4) == HEARTH_OK);
    CHECK(hl_store_rows(b, &src, &cache) == HEARTH_ERR_INVALID_ARG &&
          strstr(hearth_last_error(), "cache rows up to 16"));
    /* rope_store: K rows of no whole heads of Q's head_dim (16), then the same cells past the cache */
    const hl_rope_params rp = {.n_rot = 16,
                               .mode = HL_ROPE_NORMAL,
                               .freq_base = 10000.0f,
                               .freq_scale = 1.0f,
                               .n_ctx_orig = 4096,
                               .attn_factor = 1.0f,
                               .beta_fast = 32.0f,
                               .beta_slow = 1.0f};
    hl_tensor k60 = src;
    k60.ne[0] = 60;
    CHECK(hl_rope_store(b, &src, &k60, &src, &cache, &cache, 4, &rp, NULL) == HEARTH_ERR_INVALID_ARG &&
          strstr(hearth_last_error(), "rope_store on cpu") && strstr(hearth_last_error(), "whole heads"));
    CHECK(hl_rope_store(b, &src, &src, &src, &cache, &cache, 4, &rp, NULL) == HEARTH_ERR_INVALID_ARG &&
          strstr(hearth_last_error(), "rope_store on cpu") && strstr(hearth_last_error(), "cache rows up to 16"));
    CHECK(hl_set_positions(b, pos, row0, 2) == HEARTH_OK);
    CHECK(hl_store_rows(b, &src, &cache) == HEARTH_ERR_INVALID_ARG && strstr(hearth_last_error(), "set_positions"));
    CHECK(hl_set_positions(b, pos, row0, 0) == HEARTH_ERR_INVALID_ARG);
    pos[0] = -1;
    CHECK(hl_set_positions(b, pos, row0, 1) == HEARTH_ERR_INVALID_ARG);

    /* nothing refused was written: y still NaN, the cache untouched, the guards whole */
    CHECK(hl_synchronize(b) == HEARTH_OK);
    float *got = fetch_result(&(prep){.out = 2}, &in);
    bool finite = true;
    for (int i = 0; i < 8 * 4; i++) finite &= isfinite(got[i]);
    CHECK(finite); /* from the one accepted matmul */
    free(got);
    for (int i = 0; i < 3; i++) CHECK(guard_damage(b, &in.t[i], in.base[i]) == 0);
    CHECK(guard_damage(b, &cache, cache_base) == 0);
    /* and the guards catch a write past a tensor */
    const uint8_t stray = 0;
    CHECK(hl_upload(b, (uint8_t *)cache.data + hl_tensor_nbytes(&cache), &stray, 1) == HEARTH_OK);
    CHECK(guard_damage(b, &cache, cache_base) == 1);
    hl_buffer_free(b, cache_base);
    teardown(&in);
    unprepare(&p);
}

/* ----------------------------------------------------------------- main -- */

static int usage(const char *prog) {
    fprintf(stderr, "usage: %s [test|perf] [-o OP] [-b BACKEND]\n  OP: ", prog);
    for (int op = 0; op < HL_OP_COUNT; op++) fprintf(stderr, "%s%s", op ? ", " : "", hl_op_name((hl_op)op));
    fprintf(stderr,
            "\n  BACKEND: cpu, cpu-fa (tiled attention), cpu-fa-scalar (with the scalar tile kernels), cuda0, ...\n");
    return 2;
}

int main(int argc, char **argv) {
    bool perf = false;
    hl_op only_op = HL_OP_COUNT;
    const char *only_backend = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "test")) perf = false;
        else if (!strcmp(argv[i], "perf")) perf = true;
        else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
            only_op = hl_op_from_name(argv[++i]);
            if (only_op == HL_OP_COUNT) return usage(argv[0]);
        } else if (!strcmp(argv[i], "-b") && i + 1 < argc) only_backend = argv[++i];
        else return usage(argv[0]);
    }
    const hl_cpu_limits scalar = {
        .n_threads = 2, .max_tokens = MAX_TOKENS, .max_row = MAX_ROW, .n_ctx = MAX_CTX, .scalar = true};
    hl_cpu_limits best = scalar, fa = scalar, fa_scalar = scalar;
    best.scalar = fa.scalar = false;
    fa.flash_attn = fa_scalar.flash_attn = true;
    /* the CPU at its best level with each attention path, and the tiled one with the scalar tile kernels */
    hl_backend *cpu = NULL, *cpu_fa = NULL, *cpu_fa_scalar = NULL, *all[3 + HL_MAX_GPUS];
    const char *names[3 + HL_MAX_GPUS] = {"cpu", "cpu-fa", "cpu-fa-scalar"};
    int n_all = 0;
    if (hl_backend_cpu_init(&scalar, &ref) != HEARTH_OK || hl_backend_cpu_init(&fa_scalar, &ref_fa) != HEARTH_OK ||
        hl_backend_cpu_init(&best, &cpu) != HEARTH_OK || hl_backend_cpu_init(&fa, &cpu_fa) != HEARTH_OK ||
        hl_backend_cpu_init(&fa_scalar, &cpu_fa_scalar) != HEARTH_OK) {
        fprintf(stderr, "CPU backend: %s\n", hearth_last_error());
        return 1;
    }
    all[n_all++] = cpu;
    all[n_all++] = cpu_fa;
    all[n_all++] = cpu_fa_scalar;
    const int32_t n_gpu = hl_gpu_count();
    if (n_gpu == 0) printf("SKIP GPU op tests: CUDA unavailable (%s)\n", hl_gpu_unavailable_reason());
    /* GEMM scratch of 16 rows of MAX_ROW in F16: the prompt matmuls of 67 rows run in several tiles (cuBLAS's F16
     * tiles; CLBlast's F32 tiles of the 512-element rows); timed, the largest timed matrix in F16, as the context
     * sizes it (runtime/context.c) */
    const size_t gemm_bytes = perf ? (size_t)MAX_ROW * 576 * 2 : (size_t)MAX_ROW * 2 * 16;
    const hl_gpu_limits gl = {.max_tokens = MAX_TOKENS, .max_row = MAX_ROW, .gemm_scratch_bytes = gemm_bytes};
    for (int32_t d = 0; d < n_gpu; d++) {
        const hearth_status st = hl_gpu_backend_init(d, &gl, &all[n_all]);
        CHECK_MSG(st == HEARTH_OK, "GPU %d: %s", (int)d, hearth_last_error());
        if (st != HEARTH_OK) continue;
        names[n_all] = hl_backend_name(all[n_all]);
        n_all++;
    }
    for (int i = 0; i < n_all; i++)
        if (!only_backend || !strcmp(only_backend, names[i])) {
            backend_names[n_backends] = names[i];
            backends[n_backends++] = all[i];
        }
    if (only_backend && n_backends == 0) printf("SKIP: no backend named %s here\n", only_backend);
    for (int i = 0; i < n_backends; i++)
        printf("%s %s%s\n", perf ? "timing" : "testing", backend_names[i],
               perf ? "" : " against the CPU scalar kernels");

    for (size_t i = 0; i < N_CASES; i++) {
        if (only_op != HL_OP_COUNT && cases[i].op != only_op) continue;
        if (perf) perf_case(&cases[i], i);
        else if (!cases[i].perf) test_case(&cases[i], i);
    }
    if (!perf) {
        if (only_op == HL_OP_COUNT && (!only_backend || !strcmp(only_backend, "cpu"))) test_refusals(cpu);
        if (only_op == HL_OP_COUNT || only_op == HL_OP_MOE_ROUTE) test_moe_route();
        if (only_op == HL_OP_COUNT || only_op == HL_OP_MATMUL || only_op == HL_OP_MATMUL_ADD) test_shared_activations();
        if ((only_op == HL_OP_COUNT || only_op == HL_OP_ATTENTION) &&
            (!only_backend || !strcmp(only_backend, "cpu-fa")))
            test_flash_invariance(cpu_fa);
        printf("%d case runs passed, %d failed, %d skipped (not supported)\n", n_pass, n_fail, n_skip);
    }
    hl_backend_cpu_free(ref);
    hl_backend_cpu_free(ref_fa);
    for (int i = 0; i < 3; i++) hl_backend_cpu_free(all[i]);
    for (int i = 3; i < n_all; i++) hl_gpu_backend_free(all[i]);
    return check_report();
}
