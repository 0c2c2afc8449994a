/* The ops of the OpenCL backend: each resolves its tensors to (buffer,
 * offset) pairs, sets the kernel's arguments and enqueues it on the
 * instance's in-order queue (kernels/NAME.cl hold the arithmetic); and
 * supports_op, which answers from what those kernels handle. Failures are
 * recorded for synchronize (common.h). */
#include <math.h>

#include "backend/opencl/common.h"
#include "gguf/ggml_types.h"

/* work-group sizes of the kernels (the *_WG, MV_NT and ATT_TILE of kernels/NAME.cl) */
#define EW_WG 64
#define MV_WG 64
#define MV_NT 8
#define NORM_WG 64
#define ATT_TILE 64
#define ATT_MAX_HEAD_DIM 512

#define MAX_ARGS 16

void hl_ocl_launch(hl_ocl *o, cl_kernel kern, const size_t global[2], const size_t local[2], int dims, int n_args,
                   const hl_ocl_arg *args) {
    if (o->status != HEARTH_OK) return; /* the first error is what synchronize reports */
    hl_ocl_ref refs[MAX_ARGS];
    for (cl_uint i = 0, a = 0; (int)i < n_args; i++) {
        if (args[i].size) {
            if (!CL_OK(o, clSetKernelArg(kern, a++, args[i].size, args[i].ptr))) return;
            continue;
        }
        if (!hl_ocl_ref_of(o, args[i].ptr, &refs[i]) ||
            !CL_OK(o, clSetKernelArg(kern, a++, sizeof(cl_mem), &refs[i].mem)) ||
            !CL_OK(o, clSetKernelArg(kern, a++, sizeof(cl_ulong), &refs[i].off)))
            return;
    }
    size_t g[2];
    for (int i = 0; i < dims; i++) g[i] = (global[i] + local[i] - 1) / local[i] * local[i];
    CL_OK(o, clEnqueueNDRangeKernel(o->queue, kern, (cl_uint)dims, NULL, g, local, 0, NULL, NULL));
}

/* One work-item per element, in groups of EW_WG. */
static void launch_1d(hl_ocl *o, hl_ocl_kernel k, int64_t n, int n_args, const hl_ocl_arg *args) {
    hl_ocl_launch(o, o->kernels[k], (size_t[]){(size_t)n, 1}, (size_t[]){EW_WG, 1}, 1, n_args, args);
}

/* Bytes per row of n elements of `type`. */
static cl_ulong row_bytes(uint32_t type, int64_t n) {
    const ggml_type_info *ti = hl_ggml_type_get(type);
    return (cl_ulong)(n / ti->blck_size) * ti->type_size;
}

/* ---------------------------------------------------------------- rows -- */

void hl_ocl_get_rows(hl_backend *b, const hl_tensor *table, const int32_t *ids, hl_tensor *out) {
    hl_ocl *o = ocl_of(b);
    const cl_long d = table->ne[0], n = out->ne[1];
    const cl_ulong stride = row_bytes(table->type, d);
    const cl_int type = (cl_int)table->type;
    /* ids are host memory: copied first (blocking: the caller may reuse them) */
    if (o->status != HEARTH_OK ||
        !CL_OK(o, clEnqueueWriteBuffer(o->queue, o->ids, CL_TRUE, 0, (size_t)n * sizeof *ids, ids, 0, NULL, NULL)))
        return;
    const hl_ocl_arg args[] = {OCL_DATA(table->data), OCL_VAL(stride), OCL_VAL(type), OCL_VAL(o->ids),
                               OCL_DATA(out->data),   OCL_VAL(d),      OCL_VAL(n)};
    launch_1d(o, HL_OCL_K_get_rows, (d + 7) / 8 * n, 7, args);
}

void hl_ocl_store_rows(hl_backend *b, const hl_tensor *src, hl_tensor *cache) {
    hl_ocl *o = ocl_of(b);
    const cl_long d = src->ne[0], n = src->ne[1], max_tokens = o->limits.max_tokens;
    const cl_int f16 = cache->type == GGML_TYPE_F16;
    const hl_ocl_arg args[] = {OCL_DATA(src->data), OCL_DATA(cache->data), OCL_VAL(f16),       OCL_VAL(d),
                               OCL_VAL(n),          OCL_VAL(o->pos),       OCL_VAL(max_tokens)};
    launch_1d(o, HL_OCL_K_store_rows, d * n, 7, args);
}

/* ------------------------------------------------------------- products -- */

void hl_ocl_matmul(hl_backend *b, const hl_tensor *w, const hl_tensor *x, hl_tensor *y) {
    hl_ocl *o = ocl_of(b);
    const cl_long d_in = w->ne[0], d_out = w->ne[1], n = x->ne[1];
    const cl_ulong stride = row_bytes(w->type, d_in);
    int k = 0;
    while (k < HL_OCL_N_TYPES - 1 && hl_ocl_types[k] != w->type) k++; /* supports_op admitted the type */
    if (hl_ocl_gemm(o, k, w, x, y)) return;                           /* a prompt product through CLBlast */
    const hl_ocl_arg args[] = {OCL_DATA(w->data), OCL_VAL(stride), OCL_DATA(x->data), OCL_DATA(y->data),
                               OCL_VAL(d_in),     OCL_VAL(d_out),  OCL_VAL(n)};
    hl_ocl_launch(o, o->matmul[k],
                  (size_t[]){(size_t)d_out * (size_t)hl_ocl_mv_lanes(o->dev), (size_t)((n + MV_NT - 1) / MV_NT)},
                  (size_t[]){MV_WG, 1}, 2, 7, args);
}

/* -------------------------------------------------------- norm and rope -- */

void hl_ocl_rms_norm(hl_backend *b, const hl_tensor *x, const hl_tensor *w, float eps, hl_tensor *y) {
    hl_ocl *o = ocl_of(b);
    const cl_long d = w->ne[0];
    const hl_ocl_arg args[] = {OCL_DATA(x->data), OCL_DATA(w->data), OCL_DATA(y->data), OCL_VAL(d), OCL_VAL(eps)};
    hl_ocl_launch(o, o->kernels[HL_OCL_K_rms_norm], (size_t[]){(size_t)(hl_tensor_nelements(x) / d) * NORM_WG, 1},
                  (size_t[]){NORM_WG, 1}, 1, 5, args);
}

void hl_ocl_layer_norm(hl_backend *b, const hl_tensor *x, const hl_tensor *w, const hl_tensor *bias, float eps,
                       hl_tensor *y) {
    hl_ocl *o = ocl_of(b);
    const cl_long d = w->ne[0];
    const cl_int has_b = bias != NULL;
    /* without a bias the kernel never reads it: w stands in for the buffer */
    const hl_ocl_arg args[] = {OCL_DATA(x->data), OCL_DATA(w->data), OCL_DATA(bias ? bias->data : w->data),
                               OCL_VAL(has_b),    OCL_DATA(y->data), OCL_VAL(d),
                               OCL_VAL(eps)};
    hl_ocl_launch(o, o->kernels[HL_OCL_K_layer_norm], (size_t[]){(size_t)x->ne[1] * NORM_WG, 1}, (size_t[]){NORM_WG, 1},
                  1, 7, args);
}

void hl_ocl_rope(hl_backend *b, hl_tensor *x, int32_t n_head, const hl_rope_params *p, const hl_tensor *freq_factors) {
    hl_ocl *o = ocl_of(b);
    const cl_int hd = (cl_int)(x->ne[0] / n_head), n_rot = p->n_rot, neox = p->mode == HL_ROPE_NEOX;
    const cl_int has_ff = freq_factors != NULL;
    const cl_long n_pairs = x->ne[1] * n_head * (p->n_rot / 2);
    const hl_rope_consts k = hl_rope_yarn_consts(p);
    const float freq_scale = p->freq_scale, ext_factor = p->ext_factor;
    /* without factors the kernel never reads them: x stands in for the buffer */
    const hl_ocl_arg args[] = {
        OCL_DATA(x->data),      OCL_VAL(n_head),     OCL_VAL(hd),
        OCL_VAL(n_rot),         OCL_VAL(neox),       OCL_VAL(o->pos),
        OCL_VAL(k.theta_scale), OCL_VAL(freq_scale), OCL_DATA(has_ff ? freq_factors->data : x->data),
        OCL_VAL(has_ff),        OCL_VAL(n_pairs),    OCL_VAL(k.corr[0]),
        OCL_VAL(k.corr[1]),     OCL_VAL(ext_factor), OCL_VAL(k.mscale)};
    launch_1d(o, HL_OCL_K_rope, n_pairs, 15, args);
}

void hl_ocl_rope_shift(hl_backend *b, hl_tensor *cache, int64_t row, int64_t n, int32_t n_head, int32_t delta,
                       const hl_rope_params *p, const hl_tensor *freq_factors) {
    hl_ocl *o = ocl_of(b);
    const cl_int hd = (cl_int)(cache->ne[0] / n_head), n_rot = p->n_rot, neox = p->mode == HL_ROPE_NEOX;
    const cl_int has_ff = freq_factors != NULL, shift = delta;
    const cl_long row0 = row, n_pairs = n * n_head * (p->n_rot / 2);
    const hl_rope_consts k = hl_rope_yarn_consts(p);
    const float freq_scale = p->freq_scale, ext_factor = p->ext_factor;
    const hl_ocl_arg args[] = {OCL_DATA(cache->data), OCL_VAL(row0),
                               OCL_VAL(n_head),       OCL_VAL(hd),
                               OCL_VAL(n_rot),        OCL_VAL(neox),
                               OCL_VAL(shift),        OCL_VAL(k.theta_scale),
                               OCL_VAL(freq_scale),   OCL_DATA(has_ff ? freq_factors->data : cache->data),
                               OCL_VAL(has_ff),       OCL_VAL(n_pairs),
                               OCL_VAL(k.corr[0]),    OCL_VAL(k.corr[1]),
                               OCL_VAL(ext_factor),   OCL_VAL(k.mscale)};
    launch_1d(o, HL_OCL_K_rope_shift, n_pairs, 16, args);
}

/* ------------------------------------------------------------ attention -- */

void hl_ocl_attention(hl_backend *b, const hl_attn_args *a) {
    hl_ocl *o = ocl_of(b);
    const cl_int n_head = a->n_head, n_head_kv = a->n_head_kv, hd = a->head_dim, n_swa = a->n_swa;
    const cl_long max_tokens = o->limits.max_tokens;
    const float scale = a->scale, max_bias = a->max_bias;
    const hl_ocl_arg args[] = {OCL_DATA(a->q->data),
                               OCL_DATA(a->k_cache->data),
                               OCL_DATA(a->v_cache->data),
                               OCL_DATA(a->out->data),
                               OCL_VAL(n_head),
                               OCL_VAL(n_head_kv),
                               OCL_VAL(hd),
                               OCL_VAL(o->pos),
                               OCL_VAL(max_tokens),
                               OCL_VAL(n_swa),
                               OCL_VAL(scale),
                               OCL_VAL(max_bias)};
    hl_ocl_launch(o, o->kernels[HL_OCL_K_attention], (size_t[]){(size_t)n_head * ATT_TILE, (size_t)a->q->ne[1]},
                  (size_t[]){ATT_TILE, 1}, 2, 12, args);
}

/* ---------------------------------------------------------- element-wise -- */

static void glu(hl_backend *b, hl_ocl_kernel k, hl_tensor *gate, const hl_tensor *up) {
    const cl_long n = hl_tensor_nelements(gate);
    const hl_ocl_arg args[] = {OCL_DATA(gate->data), OCL_DATA(up->data), OCL_VAL(n)};
    launch_1d(ocl_of(b), k, n, 3, args);
}

void hl_ocl_swiglu(hl_backend *b, hl_tensor *gate, const hl_tensor *up) { glu(b, HL_OCL_K_swiglu, gate, up); }

void hl_ocl_geglu(hl_backend *b, hl_tensor *gate, const hl_tensor *up) { glu(b, HL_OCL_K_geglu, gate, up); }

void hl_ocl_gelu(hl_backend *b, hl_tensor *x) {
    const cl_long n = hl_tensor_nelements(x);
    const hl_ocl_arg args[] = {OCL_DATA(x->data), OCL_VAL(n)};
    launch_1d(ocl_of(b), HL_OCL_K_gelu, n, 2, args);
}

void hl_ocl_add(hl_backend *b, hl_tensor *x, const hl_tensor *y) {
    const cl_long n = hl_tensor_nelements(x), y_n = hl_tensor_nelements(y);
    const hl_ocl_arg args[] = {OCL_DATA(x->data), OCL_DATA(y->data), OCL_VAL(n), OCL_VAL(y_n)};
    launch_1d(ocl_of(b), HL_OCL_K_add, n, 4, args);
}

void hl_ocl_scale(hl_backend *b, hl_tensor *x, float s) {
    const cl_long n = hl_tensor_nelements(x);
    const hl_ocl_arg args[] = {OCL_DATA(x->data), OCL_VAL(s), OCL_VAL(n)};
    launch_1d(ocl_of(b), HL_OCL_K_scale, n, 3, args);
}

void hl_ocl_clamp(hl_backend *b, hl_tensor *x, float lo, float hi) {
    const cl_long n = hl_tensor_nelements(x);
    const hl_ocl_arg args[] = {OCL_DATA(x->data), OCL_VAL(lo), OCL_VAL(hi), OCL_VAL(n)};
    launch_1d(ocl_of(b), HL_OCL_K_clamp_f32, n, 4, args);
}

/* --------------------------------------------------- mixture of experts -- */

void hl_ocl_moe_route(hl_backend *b, const hl_tensor *logits, hl_tensor *ids, hl_tensor *weights) {
    const cl_int n_expert = (cl_int)logits->ne[0], k = (cl_int)ids->ne[0];
    const cl_long n = logits->ne[1];
    const hl_ocl_arg args[] = {OCL_DATA(logits->data), OCL_DATA(ids->data), OCL_DATA(weights->data),
                               OCL_VAL(n_expert),      OCL_VAL(k),          OCL_VAL(n)};
    launch_1d(ocl_of(b), HL_OCL_K_moe_route, n, 6, args);
}

/* Each (token, slot)'s product is the matmul kernel over its expert's slice
 * of w: the experts are read back first (a blocking read, in chunks of
 * IDS_CHUNK), since the launches' offsets depend on them. */
#define IDS_CHUNK 1024
void hl_ocl_matmul_id(hl_backend *b, const hl_tensor *w, const hl_tensor *x, const hl_tensor *ids, hl_tensor *y) {
    hl_ocl *o = ocl_of(b);
    const int64_t k = ids->ne[0], n_x = x->ne[1], n_slots = k * ids->ne[1];
    const cl_long d_in = w->ne[0], d_out = w->ne[1], one = 1;
    const cl_ulong stride = row_bytes(w->type, d_in);
    int ti = 0;
    while (ti < HL_OCL_N_TYPES - 1 && hl_ocl_types[ti] != w->type) ti++; /* supports_op admitted the type */
    int32_t id[IDS_CHUNK];
    for (int64_t s0 = 0; s0 < n_slots && o->status == HEARTH_OK; s0 += IDS_CHUNK) {
        const int64_t m = n_slots - s0 < IDS_CHUNK ? n_slots - s0 : IDS_CHUNK;
        const hearth_status st = hl_ocl_download(b, id, (const int32_t *)ids->data + s0, (size_t)m * sizeof *id);
        if (st != HEARTH_OK) {
            hl_ocl_record(o, st, "%s: matmul_id reading its experts back: %s", o->name, hearth_last_error());
            return;
        }
        for (int64_t s = s0; s < s0 + m; s++) {
            const int64_t t = s / k, j = s % k;
            const hl_ocl_arg args[] = {OCL_DATA((const uint8_t *)w->data + (size_t)id[s - s0] * stride * (size_t)d_out),
                                       OCL_VAL(stride),
                                       OCL_DATA((const float *)x->data + (t * n_x + j % n_x) * d_in),
                                       OCL_DATA((float *)y->data + s * d_out),
                                       OCL_VAL(d_in),
                                       OCL_VAL(d_out),
                                       OCL_VAL(one)};
            hl_ocl_launch(o, o->matmul[ti], (size_t[]){(size_t)d_out * (size_t)hl_ocl_mv_lanes(o->dev), 1},
                          (size_t[]){MV_WG, 1}, 2, 7, args);
        }
    }
}

void hl_ocl_moe_sum(hl_backend *b, const hl_tensor *y, const hl_tensor *weights, hl_tensor *out) {
    const cl_long d = out->ne[0], n = out->ne[1];
    const cl_int k = (cl_int)weights->ne[0];
    const hl_ocl_arg args[] = {OCL_DATA(y->data), OCL_DATA(weights->data), OCL_DATA(out->data), OCL_VAL(d), OCL_VAL(k),
                               OCL_VAL(n)};
    launch_1d(ocl_of(b), HL_OCL_K_moe_sum, d * n, 6, args);
}

/* ---------------------------------------------------------- supports_op -- */

const uint32_t hl_ocl_types[HL_OCL_N_TYPES] = {
    GGML_TYPE_F32,  GGML_TYPE_F16,  GGML_TYPE_BF16, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1,
    GGML_TYPE_Q8_0, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K};

/* The weight and table types dequant.cl reads, in rows of whole blocks. */
static bool reads_type(const hl_tensor *t) {
    const ggml_type_info *ti = hl_ggml_type_get(t->type);
    for (int i = 0; i < HL_OCL_N_TYPES; i++)
        if (t->type == hl_ocl_types[i]) return ti && t->ne[0] % (int64_t)ti->blck_size == 0;
    return false;
}

/* The cache types store_rows writes. */
static bool stores_type(const hl_tensor *cache) { return cache->type == GGML_TYPE_F16 || cache->type == GGML_TYPE_F32; }

bool hl_ocl_supports_op(const hl_backend *b, const hl_op_desc *d) {
    (void)b;
    switch (d->op) {
    case HL_OP_MATMUL:
    case HL_OP_MATMUL_ADD: /* matmul, then add (ops.h) */
    case HL_OP_MATMUL_ID:  /* the matmul kernels over each expert's slice */
    case HL_OP_GET_ROWS: return reads_type(d->t[0]);
    case HL_OP_STORE_ROWS: return stores_type(d->t[1]);
    case HL_OP_ROPE_STORE: /* rope, then store_rows (ops.h) */
        return (d->rope->mode == HL_ROPE_NORMAL || d->rope->mode == HL_ROPE_NEOX) && stores_type(d->t[3]) &&
               stores_type(d->t[4]);
    case HL_OP_ATTENTION: /* causal, over an F16 cache, a head within the work-items' accumulators */
        return !d->attn->bidirectional && d->attn->k_cache->type == GGML_TYPE_F16 &&
               d->attn->v_cache->type == GGML_TYPE_F16 && d->attn->head_dim <= ATT_MAX_HEAD_DIM;
    case HL_OP_ROPE: return d->rope->mode == HL_ROPE_NORMAL || d->rope->mode == HL_ROPE_NEOX;
    case HL_OP_ROPE_SHIFT:
        return d->t[0]->type == GGML_TYPE_F16 && (d->rope->mode == HL_ROPE_NORMAL || d->rope->mode == HL_ROPE_NEOX);
    default: return true;
    }
}
