/* The checked calls: how the rest of the library runs a backend (Redis's
 * connWrite() over ConnectionType is the model: callers never touch the
 * table). Each op's wrapper checks what backend.h promises the op (F32
 * activations, shapes that agree), what the instance was sized for (its
 * limits: tokens, row length, attention span), the planned capacity of the
 * buffers it writes, and the cache cells of the pass against the KV cache;
 * then it asks supports_op, and only then calls the slot. A refused call
 * runs nothing and returns INVALID_ARG (a caller's bug) or UNSUPPORTED (the
 * backend has no kernel for it), with a message naming the op, the backend,
 * the rule and every tensor's type and shape (hl_op_refuse). The checks are
 * a few comparisons per op: nothing measurable next to the op itself.
 *
 * The memory calls and synchronize are plain forwarders, so that no caller
 * reads the table either. */
#ifndef HEARTH_BACKEND_OPS_H
#define HEARTH_BACKEND_OPS_H

#include "backend/backend.h"
#include "gguf/ggml_types.h"

/* Sets the message "<op> on <backend>: <fmt ...> (<each tensor's name, type
 * and shape>)" and returns st. */
hearth_status hl_op_refuse(const hl_backend *b, const hl_op_desc *d, hearth_status st, const char *fmt, ...)
    HL_PRINTF(4, 5);

/* ---- what the wrappers check */

/* A matrix: ne[2] = ne[3] = 1, at least one element per row and one row. */
static inline bool hl_is_mat(const hl_tensor *t) {
    return t->ne[0] > 0 && t->ne[1] > 0 && t->ne[2] == 1 && t->ne[3] == 1;
}

/* An F32 matrix whose shape fits the buffer planned for it. */
static inline bool hl_is_f32_mat(const hl_tensor *t) {
    return t->type == GGML_TYPE_F32 && hl_is_mat(t) &&
           (t->capacity == 0 || (size_t)(t->ne[0] * t->ne[1]) * sizeof(float) <= t->capacity);
}

static inline bool hl_same_shape(const hl_tensor *a, const hl_tensor *b) {
    return a->ne[0] == b->ne[0] && a->ne[1] == b->ne[1] && a->ne[2] == b->ne[2] && a->ne[3] == b->ne[3];
}

/* OK when `n` tokens fit the instance and, for position-dependent ops
 * (`positioned`), have positions from the last hl_set_positions. */
static inline hearth_status hl_check_tokens(const hl_backend *b, const hl_op_desc *d, int64_t n, bool positioned) {
    if (n > b->limits.max_tokens)
        return hl_op_refuse(b, d, HEARTH_ERR_INVALID_ARG, "%lld tokens, the instance was sized for %lld (max_tokens)",
                            (long long)n, (long long)b->limits.max_tokens);
    if (positioned && n > b->pass.n)
        return hl_op_refuse(b, d, HEARTH_ERR_INVALID_ARG, "%lld tokens, positions were set for %lld (set_positions)",
                            (long long)n, (long long)b->pass.n);
    return HEARTH_OK;
}

/* OK when every cell the pass uses is a row of `cache`. */
static inline hearth_status hl_check_cells(const hl_backend *b, const hl_op_desc *d, const hl_tensor *cache) {
    if (b->pass.end > cache->ne[1])
        return hl_op_refuse(b, d, HEARTH_ERR_INVALID_ARG, "the pass uses cache rows up to %lld, the cache has %lld",
                            (long long)b->pass.end - 1, (long long)cache->ne[1]);
    return HEARTH_OK;
}

static inline hearth_status hl_check_supported(const hl_backend *b, const hl_op_desc *d) {
    return b->iface->supports_op(b, d) ? HEARTH_OK
                                       : hl_op_refuse(b, d, HEARTH_ERR_UNSUPPORTED, "the backend has no kernel for it");
}

static inline bool hl_supports_op(const hl_backend *b, const hl_op_desc *d) { return b->iface->supports_op(b, d); }

/* ---- positions */

/* Token t of the next ops has position pos[t] in its sequence, whose cells
 * start at cache row row0[t] (backend.h set_positions); 1 <= n <=
 * max_tokens, positions and rows >= 0. Keeps the pass's extent in b->pass. */
static inline hearth_status hl_set_positions(hl_backend *b, const int32_t *pos, const int32_t *row0, int32_t n) {
    int64_t end = 0, span = 0;
    bool negative = false;
    for (int32_t t = 0; t < n; t++) {
        negative |= pos[t] < 0 || row0[t] < 0;
        end = (int64_t)row0[t] + pos[t] + 1 > end ? (int64_t)row0[t] + pos[t] + 1 : end;
        span = (int64_t)pos[t] + 1 > span ? (int64_t)pos[t] + 1 : span;
    }
    if (n < 1 || n > b->limits.max_tokens || negative)
        return hl_fail(HEARTH_ERR_INVALID_ARG,
                       "set_positions on %s: %d tokens (the instance was sized for %lld), "
                       "positions and rows must be >= 0",
                       b->iface->name(b), (int)n, (long long)b->limits.max_tokens);
    b->pass = (hl_pass_extent){.n = n, .end = end, .span = span};
    b->iface->set_positions(b, pos, row0, n);
    return HEARTH_OK;
}

/* ---- ops (backend.h documents each) */

static inline hearth_status hl_get_rows(hl_backend *b, const hl_tensor *table, const int32_t *ids, hl_tensor *out) {
    const hl_op_desc d = {.op = HL_OP_GET_ROWS, .t = {table, out}};
    if (!hl_is_mat(table) || !hl_is_f32_mat(out) || out->ne[0] != table->ne[0])
        return hl_op_refuse(b, &d, HEARTH_ERR_INVALID_ARG, "out must be F32 {table's row length, tokens}");
    HL_TRY(hl_check_tokens(b, &d, out->ne[1], false));
    for (int64_t t = 0; t < out->ne[1]; t++)
        if (ids[t] < 0 || ids[t] >= table->ne[1])
            return hl_op_refuse(b, &d, HEARTH_ERR_INVALID_ARG, "id %d (token %lld) is not a row of the table",
                                (int)ids[t], (long long)t);
    HL_TRY(hl_check_supported(b, &d));
    b->iface->get_rows(b, table, ids, out);
    return HEARTH_OK;
}

static inline hearth_status hl_rms_norm(hl_backend *b, const hl_tensor *x, const hl_tensor *w, float eps,
                                        hl_tensor *y) {
    const hl_op_desc d = {.op = HL_OP_RMS_NORM, .t = {x, w, y}};
    if (!hl_is_f32_mat(x) || !hl_is_f32_mat(w) || !hl_is_f32_mat(y) || w->ne[1] != 1 || x->ne[0] % w->ne[0] ||
        !hl_same_shape(x, y))
        return hl_op_refuse(b, &d, HEARTH_ERR_INVALID_ARG,
                            "x, w, y must be F32, w {d}, x and y of one shape whose "
                            "rows are runs of d");
    HL_TRY(hl_check_tokens(b, &d, x->ne[1], false));
    HL_TRY(hl_check_supported(b, &d));
    b->iface->rms_norm(b, x, w, eps, y);
    return HEARTH_OK;
}

static inline hearth_status hl_layer_norm(hl_backend *b, const hl_tensor *x, const hl_tensor *w, const hl_tensor *bias,
                                          float eps, hl_tensor *y) {
    const hl_op_desc d = {.op = HL_OP_LAYER_NORM, .t = {x, w, bias, y}};
    if (!hl_is_f32_mat(x) || !hl_is_f32_mat(w) || (bias && (!hl_is_f32_mat(bias) || !hl_same_shape(w, bias))) ||
        !hl_is_f32_mat(y) || w->ne[1] != 1 || x->ne[0] != w->ne[0] || !hl_same_shape(x, y))
        return hl_op_refuse(b, &d, HEARTH_ERR_INVALID_ARG,
                            "x, w, b, y must be F32, w and b {d} (b may be absent), x "
                            "and y {d, n}");
    HL_TRY(hl_check_tokens(b, &d, x->ne[1], false));
    HL_TRY(hl_check_supported(b, &d));
    b->iface->layer_norm(b, x, w, bias, eps, y);
    return HEARTH_OK;
}

/* What matmul, matmul_add and each product of matmul_n take: w {d_in, d_out}, x F32 {d_in, n}, y F32 {d_out, n}. */
static inline hearth_status hl_check_matmul(hl_backend *b, const hl_op_desc *d, const hl_tensor *w, const hl_tensor *x,
                                            const hl_tensor *y) {
    if (!hl_is_mat(w) || !hl_is_f32_mat(x) || !hl_is_f32_mat(y) || x->ne[0] != w->ne[0] || y->ne[0] != w->ne[1] ||
        y->ne[1] != x->ne[1])
        return hl_op_refuse(b, d, HEARTH_ERR_INVALID_ARG,
                            "x must be F32 {d_in, n} and y F32 {d_out, n} for w "
                            "{d_in, d_out}");
    HL_TRY(hl_check_tokens(b, d, x->ne[1], false));
    if (x->ne[0] > b->limits.max_row)
        return hl_op_refuse(b, d, HEARTH_ERR_INVALID_ARG, "rows of %lld, the instance was sized for %lld (max_row)",
                            (long long)x->ne[0], (long long)b->limits.max_row);
    return hl_check_supported(b, d);
}

static inline hearth_status hl_matmul(hl_backend *b, const hl_tensor *w, const hl_tensor *x, hl_tensor *y) {
    const hl_op_desc d = {.op = HL_OP_MATMUL, .t = {w, x, y}};
    HL_TRY(hl_check_matmul(b, &d, w, x, y));
    b->iface->matmul(b, w, x, y);
    return HEARTH_OK;
}

/* What rope takes (d: the op being checked, rope or rope_store). */
static inline hearth_status hl_check_rope(hl_backend *b, const hl_op_desc *d, const hl_tensor *x, int32_t n_head,
                                          const hl_rope_params *p, const hl_tensor *freq_factors) {
    if (!hl_is_f32_mat(x) || n_head < 1 || x->ne[0] % n_head || p->n_rot < 2 || p->n_rot % 2 ||
        p->n_rot > x->ne[0] / n_head ||
        (freq_factors &&
         (!hl_is_f32_mat(freq_factors) || freq_factors->ne[0] != p->n_rot / 2 || freq_factors->ne[1] != 1)))
        return hl_op_refuse(b, d, HEARTH_ERR_INVALID_ARG,
                            "x must be F32 {n_head * head_dim, n} with n_head %d and an "
                            "even n_rot %d <= head_dim; freq_factors F32 {n_rot / 2}",
                            (int)n_head, (int)p->n_rot);
    return hl_check_tokens(b, d, x->ne[1], true);
}

static inline hearth_status hl_rope(hl_backend *b, hl_tensor *x, int32_t n_head, const hl_rope_params *p,
                                    const hl_tensor *freq_factors) {
    const hl_op_desc d = {.op = HL_OP_ROPE, .t = {x, freq_factors}, .n_head = n_head, .rope = p};
    HL_TRY(hl_check_rope(b, &d, x, n_head, p, freq_factors));
    HL_TRY(hl_check_supported(b, &d));
    b->iface->rope(b, x, n_head, p, freq_factors);
    return HEARTH_OK;
}

static inline hearth_status hl_rope_shift(hl_backend *b, hl_tensor *cache, int64_t row, int64_t n, int32_t n_head,
                                          int32_t delta, const hl_rope_params *p, const hl_tensor *freq_factors) {
    const hl_op_desc d = {.op = HL_OP_ROPE_SHIFT, .t = {cache, freq_factors}, .n_head = n_head, .rope = p};
    if (!hl_is_mat(cache) || n_head < 1 || cache->ne[0] % n_head || p->n_rot < 2 || p->n_rot % 2 ||
        p->n_rot > cache->ne[0] / n_head || row < 0 || n < 0 || row + n > cache->ne[1] ||
        (freq_factors &&
         (!hl_is_f32_mat(freq_factors) || freq_factors->ne[0] != p->n_rot / 2 || freq_factors->ne[1] != 1)))
        return hl_op_refuse(b, &d, HEARTH_ERR_INVALID_ARG,
                            "rows [%lld, %lld) must be rows of a cache {n_head * "
                            "head_dim, n_ctx} with n_head %d and an even n_rot %d <= head_dim; freq_factors F32 "
                            "{n_rot / 2}",
                            (long long)row, (long long)(row + n), (int)n_head, (int)p->n_rot);
    HL_TRY(hl_check_supported(b, &d));
    if (n > 0) b->iface->rope_shift(b, cache, row, n, n_head, delta, p, freq_factors);
    return HEARTH_OK;
}

/* What store_rows takes (d: the op being checked, store_rows or rope_store). */
static inline hearth_status hl_check_store_rows(hl_backend *b, const hl_op_desc *d, const hl_tensor *src,
                                                const hl_tensor *cache) {
    if (!hl_is_f32_mat(src) || !hl_is_mat(cache) || src->ne[0] != cache->ne[0])
        return hl_op_refuse(b, d, HEARTH_ERR_INVALID_ARG, "src must be F32 rows as long as the cache's");
    HL_TRY(hl_check_tokens(b, d, src->ne[1], true));
    return hl_check_cells(b, d, cache);
}

static inline hearth_status hl_store_rows(hl_backend *b, const hl_tensor *src, hl_tensor *cache) {
    const hl_op_desc d = {.op = HL_OP_STORE_ROWS, .t = {src, cache}};
    HL_TRY(hl_check_store_rows(b, &d, src, cache));
    HL_TRY(hl_check_supported(b, &d));
    b->iface->store_rows(b, src, cache);
    return HEARTH_OK;
}

/* A block's rope of q and k and store of k and v (backend.h rope_store):
 * one op where the backend has the fused kernel for it, else rope(q),
 * rope(k), store_rows(k), store_rows(v) (k then holds its roped rows).
 * k's heads are as long as q's (head_dim = q's row / n_head). */
static inline hearth_status hl_rope_store(hl_backend *b, hl_tensor *q, hl_tensor *k, const hl_tensor *v,
                                          hl_tensor *k_cache, hl_tensor *v_cache, int32_t n_head,
                                          const hl_rope_params *p, const hl_tensor *freq_factors) {
    const hl_op_desc d = {
        .op = HL_OP_ROPE_STORE, .t = {q, k, v, k_cache, v_cache, freq_factors}, .n_head = n_head, .rope = p};
    const int64_t head_dim = n_head > 0 ? q->ne[0] / n_head : 0;
    if (head_dim < 1 || k->ne[0] % head_dim || k->ne[1] != q->ne[1] || v->ne[1] != q->ne[1])
        return hl_op_refuse(b, &d, HEARTH_ERR_INVALID_ARG,
                            "k must hold whole heads of q's head_dim (n_head %d), "
                            "q, k and v the same tokens",
                            (int)n_head);
    const int32_t n_head_kv = (int32_t)(k->ne[0] / head_dim);
    HL_TRY(hl_check_rope(b, &d, q, n_head, p, freq_factors));
    HL_TRY(hl_check_rope(b, &d, k, n_head_kv, p, freq_factors));
    HL_TRY(hl_check_store_rows(b, &d, k, k_cache));
    HL_TRY(hl_check_store_rows(b, &d, v, v_cache));
    if (b->iface->rope_store && hl_supports_op(b, &d)) {
        b->iface->rope_store(b, q, k, v, k_cache, v_cache, n_head, p, freq_factors);
        return HEARTH_OK;
    }
    HL_TRY(hl_rope(b, q, n_head, p, freq_factors));
    HL_TRY(hl_rope(b, k, n_head_kv, p, freq_factors));
    HL_TRY(hl_store_rows(b, k, k_cache));
    return hl_store_rows(b, v, v_cache);
}

static inline hearth_status hl_attention(hl_backend *b, const hl_attn_args *a) {
    const hl_op_desc d = {.op = HL_OP_ATTENTION, .t = {a->q, a->k_cache, a->v_cache, a->out}, .attn = a};
    const int64_t q_dim = (int64_t)a->n_head * a->head_dim, kv_dim = (int64_t)a->n_head_kv * a->head_dim;
    if (!hl_is_f32_mat(a->q) || !hl_is_f32_mat(a->out) || !hl_same_shape(a->q, a->out) || !hl_is_mat(a->k_cache) ||
        a->n_head_kv < 1 || a->head_dim < 1 || a->n_head % a->n_head_kv || a->q->ne[0] != q_dim ||
        a->k_cache->ne[0] != kv_dim || !hl_same_shape(a->k_cache, a->v_cache) || a->n_swa < 0 || !(a->max_bias >= 0.0f))
        return hl_op_refuse(b, &d, HEARTH_ERR_INVALID_ARG,
                            "q and out must be F32 {n_head * head_dim, n}, the caches "
                            "alike {n_head_kv * head_dim, n_ctx}, n_head a multiple of n_head_kv (n_head %d, n_head_kv "
                            "%d, head_dim %d), n_swa and max_bias >= 0",
                            (int)a->n_head, (int)a->n_head_kv, (int)a->head_dim);
    HL_TRY(hl_check_tokens(b, &d, a->q->ne[1], true));
    HL_TRY(hl_check_cells(b, &d, a->k_cache));
    if (b->pass.span > b->limits.max_span)
        return hl_op_refuse(b, &d, HEARTH_ERR_INVALID_ARG,
                            "a query attends over %lld positions, the instance was "
                            "sized for %lld",
                            (long long)b->pass.span, (long long)b->limits.max_span);
    HL_TRY(hl_check_supported(b, &d));
    b->iface->attention(b, a);
    return HEARTH_OK;
}

/* swiglu and geglu: gate and up F32 of one shape. */
static inline hearth_status hl_glu(hl_backend *b, hl_op op, hl_tensor *gate, const hl_tensor *up) {
    const hl_op_desc d = {.op = op, .t = {gate, up}};
    if (!hl_is_f32_mat(gate) || !hl_is_f32_mat(up) || !hl_same_shape(gate, up))
        return hl_op_refuse(b, &d, HEARTH_ERR_INVALID_ARG, "gate and up must be F32 of one shape");
    HL_TRY(hl_check_tokens(b, &d, gate->ne[1], false));
    HL_TRY(hl_check_supported(b, &d));
    (op == HL_OP_SWIGLU ? b->iface->swiglu : b->iface->geglu)(b, gate, up);
    return HEARTH_OK;
}

static inline hearth_status hl_swiglu(hl_backend *b, hl_tensor *gate, const hl_tensor *up) {
    return hl_glu(b, HL_OP_SWIGLU, gate, up);
}

static inline hearth_status hl_geglu(hl_backend *b, hl_tensor *gate, const hl_tensor *up) {
    return hl_glu(b, HL_OP_GEGLU, gate, up);
}

static inline hearth_status hl_gelu(hl_backend *b, hl_tensor *x) {
    const hl_op_desc d = {.op = HL_OP_GELU, .t = {x}};
    if (!hl_is_f32_mat(x)) return hl_op_refuse(b, &d, HEARTH_ERR_INVALID_ARG, "x must be F32");
    HL_TRY(hl_check_tokens(b, &d, x->ne[1], false));
    HL_TRY(hl_check_supported(b, &d));
    b->iface->gelu(b, x);
    return HEARTH_OK;
}

static inline hearth_status hl_add(hl_backend *b, hl_tensor *x, const hl_tensor *y) {
    const hl_op_desc d = {.op = HL_OP_ADD, .t = {x, y}};
    if (!hl_is_f32_mat(x) || !hl_is_f32_mat(y) || y->ne[0] != x->ne[0] || (y->ne[1] != x->ne[1] && y->ne[1] != 1))
        return hl_op_refuse(b, &d, HEARTH_ERR_INVALID_ARG, "x must be F32 {d, n}, y F32 {d, n} or {d}");
    HL_TRY(hl_check_tokens(b, &d, x->ne[1], false));
    HL_TRY(hl_check_supported(b, &d));
    b->iface->add(b, x, y);
    return HEARTH_OK;
}

/* y[i] = x w[i]^T for i < n (backend.h matmul_n): each checked as a
 * matmul, then one op where the backend has it, else the matmuls in order. */
static inline hearth_status hl_matmul_n(hl_backend *b, int n, const hl_tensor *const *w, const hl_tensor *x,
                                        hl_tensor *const *y) {
    if (n < 1 || n > HL_MATMUL_N_MAX) {
        const hl_op_desc d = {.op = HL_OP_MATMUL, .t = {n > 0 ? w[0] : NULL, x}};
        return hl_op_refuse(b, &d, HEARTH_ERR_INVALID_ARG, "matmul_n takes 1 to %d weights, not %d", HL_MATMUL_N_MAX,
                            n);
    }
    for (int i = 0; i < n; i++) {
        const hl_op_desc d = {.op = HL_OP_MATMUL, .t = {w[i], x, y[i]}};
        HL_TRY(hl_check_matmul(b, &d, w[i], x, y[i]));
    }
    if (b->iface->matmul_n) {
        b->iface->matmul_n(b, n, w, x, y);
        return HEARTH_OK;
    }
    for (int i = 0; i < n; i++) b->iface->matmul(b, w[i], x, y[i]);
    return HEARTH_OK;
}

/* y += x w^T (backend.h matmul_add). On a backend without the fused op,
 * matmul into tmp (F32 {d_out, n}, whose contents are then lost) and add;
 * with it tmp is not touched. */
static inline hearth_status hl_matmul_add(hl_backend *b, const hl_tensor *w, const hl_tensor *x, hl_tensor *y,
                                          hl_tensor *tmp) {
    const hl_op_desc d = {.op = HL_OP_MATMUL_ADD, .t = {w, x, y, tmp}};
    HL_TRY(hl_check_matmul(b, &d, w, x, y));
    if (!b->iface->matmul_add) {
        HL_TRY(hl_matmul(b, w, x, tmp));
        return hl_add(b, y, tmp);
    }
    b->iface->matmul_add(b, w, x, y);
    return HEARTH_OK;
}

static inline hearth_status hl_scale(hl_backend *b, hl_tensor *x, float s) {
    const hl_op_desc d = {.op = HL_OP_SCALE, .t = {x}};
    if (!hl_is_f32_mat(x)) return hl_op_refuse(b, &d, HEARTH_ERR_INVALID_ARG, "x must be F32");
    HL_TRY(hl_check_tokens(b, &d, x->ne[1], false));
    HL_TRY(hl_check_supported(b, &d));
    b->iface->scale(b, x, s);
    return HEARTH_OK;
}

static inline hearth_status hl_clamp(hl_backend *b, hl_tensor *x, float lo, float hi) {
    const hl_op_desc d = {.op = HL_OP_CLAMP, .t = {x}};
    if (!hl_is_f32_mat(x) || !(lo <= hi))
        return hl_op_refuse(b, &d, HEARTH_ERR_INVALID_ARG, "x must be F32 and lo <= hi (here %g, %g)", (double)lo,
                            (double)hi);
    HL_TRY(hl_check_tokens(b, &d, x->ne[1], false));
    HL_TRY(hl_check_supported(b, &d));
    b->iface->clamp(b, x, lo, hi);
    return HEARTH_OK;
}

/* ---- mixture of experts (backend.h moe_route, matmul_id, moe_sum) */

/* An F32 or I32 tensor {ne0, ne1, n} (3-D) whose shape fits the buffer planned for it. */
static inline bool hl_is_act3(const hl_tensor *t, uint32_t type, int64_t ne0, int64_t ne1, int64_t n) {
    return t->type == type && t->ne[0] == ne0 && t->ne[1] == ne1 && t->ne[2] == n && t->ne[3] == 1 && ne0 > 0 &&
           ne1 > 0 && (t->capacity == 0 || (size_t)(ne0 * ne1 * n) * 4 <= t->capacity);
}

static inline hearth_status hl_moe_route(hl_backend *b, const hl_tensor *logits, hl_tensor *ids, hl_tensor *weights) {
    const hl_op_desc d = {.op = HL_OP_MOE_ROUTE, .t = {logits, ids, weights}};
    const int64_t n = logits->ne[1], k = ids->ne[0];
    if (!hl_is_f32_mat(logits) || !hl_is_act3(ids, GGML_TYPE_I32, k, n, 1) ||
        !hl_is_act3(weights, GGML_TYPE_F32, k, n, 1) || k > logits->ne[0] || logits->ne[0] > HL_MOE_MAX_EXPERTS)
        return hl_op_refuse(b, &d, HEARTH_ERR_INVALID_ARG,
                            "logits must be F32 {n_expert, n}, ids I32 and weights "
                            "F32 {k, n} with k <= n_expert <= %d",
                            HL_MOE_MAX_EXPERTS);
    HL_TRY(hl_check_tokens(b, &d, n, false));
    HL_TRY(hl_check_supported(b, &d));
    b->iface->moe_route(b, logits, ids, weights);
    return HEARTH_OK;
}

/* The ids are read on the device that holds them: their range is the
 * backend's to trust (the routing op writes only experts < n_expert). */
static inline hearth_status hl_matmul_id(hl_backend *b, const hl_tensor *w, const hl_tensor *x, const hl_tensor *ids,
                                         hl_tensor *y) {
    const hl_op_desc d = {.op = HL_OP_MATMUL_ID, .t = {w, x, ids, y}};
    const int64_t k = ids->ne[0], n = ids->ne[1];
    if (w->ne[0] < 1 || w->ne[1] < 1 || w->ne[2] < 1 || w->ne[3] != 1 || !hl_is_act3(ids, GGML_TYPE_I32, k, n, 1) ||
        k > w->ne[2] || (x->ne[1] != 1 && x->ne[1] != k) || !hl_is_act3(x, GGML_TYPE_F32, w->ne[0], x->ne[1], n) ||
        !hl_is_act3(y, GGML_TYPE_F32, w->ne[1], k, n))
        return hl_op_refuse(b, &d, HEARTH_ERR_INVALID_ARG,
                            "w must be {d_in, d_out, n_expert}, ids I32 {k, n} with k "
                            "<= n_expert, x F32 {d_in, 1 or k, n}, y F32 {d_out, k, n}");
    HL_TRY(hl_check_tokens(b, &d, n, false));
    if (x->ne[0] > b->limits.max_row)
        return hl_op_refuse(b, &d, HEARTH_ERR_INVALID_ARG, "rows of %lld, the instance was sized for %lld (max_row)",
                            (long long)x->ne[0], (long long)b->limits.max_row);
    HL_TRY(hl_check_supported(b, &d));
    b->iface->matmul_id(b, w, x, ids, y);
    return HEARTH_OK;
}

static inline hearth_status hl_moe_sum(hl_backend *b, const hl_tensor *y, const hl_tensor *weights, hl_tensor *out) {
    const hl_op_desc d = {.op = HL_OP_MOE_SUM, .t = {y, weights, out}};
    const int64_t k = weights->ne[0], n = weights->ne[1];
    if (!hl_is_act3(weights, GGML_TYPE_F32, k, n, 1) || !hl_is_act3(y, GGML_TYPE_F32, out->ne[0], k, n) ||
        !hl_is_f32_mat(out) || out->ne[1] != n)
        return hl_op_refuse(b, &d, HEARTH_ERR_INVALID_ARG,
                            "y must be F32 {d, k, n}, weights F32 {k, n}, out F32 {d, n}");
    HL_TRY(hl_check_tokens(b, &d, n, false));
    HL_TRY(hl_check_supported(b, &d));
    b->iface->moe_sum(b, y, weights, out);
    return HEARTH_OK;
}

/* ---- the rest of the table, forwarded */

static inline const char *hl_backend_name(const hl_backend *b) { return b->iface->name(b); }

static inline void hl_mem_info(const hl_backend *b, size_t *free_bytes, size_t *total_bytes) {
    b->iface->mem_info(b, free_bytes, total_bytes);
}

static inline hearth_status hl_buffer_alloc(hl_backend *b, size_t bytes, void **out) {
    return b->iface->buffer_alloc(b, bytes, out);
}

static inline void hl_buffer_free(hl_backend *b, void *ptr) { b->iface->buffer_free(b, ptr); }

static inline hearth_status hl_upload(hl_backend *b, void *dst, const void *host_src, size_t bytes) {
    return b->iface->upload(b, dst, host_src, bytes);
}

static inline hearth_status hl_download(hl_backend *b, void *host_dst, const void *src, size_t bytes) {
    return b->iface->download(b, host_dst, src, bytes);
}

static inline hearth_status hl_copy(hl_backend *b, void *dst, const void *src, size_t bytes) {
    return b->iface->copy(b, dst, src, bytes);
}

static inline hearth_status hl_synchronize(hl_backend *b) { return b->iface->synchronize(b); }

/* Whether the backend records op sequences (graph_run). */
static inline bool hl_has_graphs(const hl_backend *b) { return b->iface->graph_run != NULL; }

/* graph_run where the backend has it; otherwise issue(ctx) now. */
static inline hearth_status hl_graph_run(hl_backend *b, int key, hearth_status (*issue)(void *ctx), void *ctx) {
    return b->iface->graph_run ? b->iface->graph_run(b, key, issue, ctx) : issue(ctx);
}

#endif
