/* CPU element-wise and row ops: embedding lookup, RMSNorm, RoPE, KV-cache
 * stores, SwiGLU, residual add. Each op splits its rows over the thread pool
 * when there is enough work to pay for the hand-off. Formulas follow llama.cpp
 * (ggml-cpu/ops.cpp) rounding for rounding, so that results are its bits (see
 * vec_dot.h for why that matters). */
#include <math.h>

#include "backend/cpu/cpu_impl.h"
#include "backend/cpu/cpu_kernels.h"
#include "quant/quant.h"

/* Below this many elements an op runs on the calling thread alone. */
#define PARALLEL_MIN_ELEMENTS 16384

static int threads_for(hl_backend *b, int64_t n_elements) {
    return n_elements < PARALLEL_MIN_ELEMENTS ? 1 : hl_pool_n_threads(cpu_of(b)->pool);
}

/* ---- get_rows */

typedef struct get_rows_task {
    const hl_tensor *table;
    const int32_t *ids;
    hl_tensor *out;
} get_rows_task;

static void get_rows_run(void *arg, int ith, int nth) {
    get_rows_task *t = arg;
    const int64_t d = t->table->ne[0];
    const size_t row_bytes = hl_row_size(t->table->type, d);
    const hl_quant_traits *q = hl_quant_get(t->table->type);
    long long r0, r1;
    hl_split(t->out->ne[1], ith, nth, &r0, &r1);
    for (long long r = r0; r < r1; r++) {
        const uint8_t *src = (const uint8_t *)t->table->data + (size_t)t->ids[r] * row_bytes;
        q->to_float(src, (float *)t->out->data + r * d, d);
    }
}

void hl_cpu_get_rows(hl_backend *b, const hl_tensor *table, const int32_t *ids, hl_tensor *out) {
    get_rows_task t = {table, ids, out};
    hl_pool_run(cpu_of(b)->pool, threads_for(b, hl_tensor_nelements(out)), get_rows_run, &t);
}

/* ---- rms_norm */

typedef struct norm_task {
    const hl_tensor *x, *w;
    float eps;
    hl_tensor *y;
} norm_task;

static void rms_norm_run(void *arg, int ith, int nth) {
    norm_task *t = arg;
    const int64_t d = t->w->ne[0]; /* a row, or one head of a row (QK-norm) */
    const float *w = t->w->data;
    long long r0, r1;
    hl_split(hl_tensor_nelements(t->x) / d, ith, nth, &r0, &r1);
    for (long long r = r0; r < r1; r++) {
        const float *x = (const float *)t->x->data + r * d;
        float *y = (float *)t->y->data + r * d;
        /* ggml_compute_forward_rms_norm_f32 (ggml-cpu/ops.cpp): the squares
         * rounded to float, summed in double; mean rounded to float; then
         * (x * scale) * w, two roundings. */
        double sum = 0.0;
        for (int64_t i = 0; i < d; i++) sum += (double)(x[i] * x[i]);
        const float mean = (float)(sum / (double)d);
        const float scale = 1.0f / sqrtf(mean + t->eps);
        for (int64_t i = 0; i < d; i++) y[i] = x[i] * scale * w[i];
    }
}

void hl_cpu_rms_norm(hl_backend *b, const hl_tensor *x, const hl_tensor *w, float eps, hl_tensor *y) {
    norm_task t = {x, w, eps, y};
    hl_pool_run(cpu_of(b)->pool, threads_for(b, hl_tensor_nelements(x)), rms_norm_run, &t);
}

/* ---- rope (normal mode: adjacent pairs) */

typedef struct rope_task {
    hl_tensor *x;
    int32_t n_head, pos0;
    const hl_rope_params *p;
} rope_task;

static void rope_run(void *arg, int ith, int nth) {
    rope_task *t = arg;
    const int64_t head_dim = t->x->ne[0] / t->n_head;
    const int32_t n_rot = t->p->n_rot;
    /* theta_i = pos * freq_scale * base^(-2i/n_rot), computed by repeated
     * multiplication in float exactly as ggml's rope cache does */
    const float theta_scale = powf(t->p->freq_base, -2.0f / (float)n_rot);
    long long r0, r1;
    hl_split(t->x->ne[1], ith, nth, &r0, &r1);
    for (long long r = r0; r < r1; r++) {
        float *row = (float *)t->x->data + r * t->x->ne[0];
        float theta = (float)(t->pos0 + r);
        for (int32_t i0 = 0; i0 < n_rot; i0 += 2) {
            const float angle = theta * t->p->freq_scale;
            const float c = cosf(angle), s = sinf(angle);
            for (int32_t h = 0; h < t->n_head; h++) {
                float *v = row + h * head_dim + i0;
                const float x0 = v[0], x1 = v[1];
                /* ggml's rotate_pairs writes x0*c - x1*s and x0*s + x1*c;
                 * compiled as GNU C++ with FMA, GCC contracts each into one
                 * FMA around the second product, and llama.cpp's results
                 * are those roundings. */
                v[0] = fmaf(x0, c, -(x1 * s));
                v[1] = fmaf(x0, s, x1 * c);
            }
            theta *= theta_scale;
        }
    }
}

void hl_cpu_rope(hl_backend *b, hl_tensor *x, int32_t n_head, int32_t pos0, const hl_rope_params *p,
                 const hl_tensor *freq_factors) {
    (void)freq_factors; /* TODO(arch helper): NEOX mode and frequency factors */
    rope_task t = {x, n_head, pos0, p};
    hl_pool_run(cpu_of(b)->pool, threads_for(b, hl_tensor_nelements(x)), rope_run, &t);
}

/* ---- store_rows: F32 rows into the KV cache's type */

typedef struct store_task {
    const hl_tensor *src;
    hl_tensor *cache;
    int32_t pos0;
} store_task;

static void store_rows_run(void *arg, int ith, int nth) {
    store_task *t = arg;
    const int64_t d = t->src->ne[0];
    const size_t row_bytes = hl_row_size(t->cache->type, d);
    const hl_quant_traits *q = hl_quant_get(t->cache->type);
    long long r0, r1;
    hl_split(t->src->ne[1], ith, nth, &r0, &r1);
    for (long long r = r0; r < r1; r++) {
        uint8_t *dst = (uint8_t *)t->cache->data + (size_t)(t->pos0 + r) * row_bytes;
        q->from_float((const float *)t->src->data + r * d, dst, d);
    }
}

void hl_cpu_store_rows(hl_backend *b, const hl_tensor *src, hl_tensor *cache, int32_t pos0) {
    store_task t = {src, cache, pos0};
    hl_pool_run(cpu_of(b)->pool, threads_for(b, hl_tensor_nelements(src)), store_rows_run, &t);
}

/* ---- element-wise: swiglu, add, scale */

typedef struct binary_task {
    float *x;
    const float *y;
    int64_t n, y_n; /* y repeats every y_n elements (a bias) or y_n == n */
    float s;
} binary_task;

/* silu(gate) * up row by row, as ggml_vec_swiglu_f32 is applied per row:
 * its 16-lane chunks start at each row (cpu_kernels.h). */
typedef struct swiglu_task {
    float *gate;
    const float *up;
    int64_t d, n_rows;
    const hl_cpu_kernels *k;
} swiglu_task;

static void swiglu_run(void *arg, int ith, int nth) {
    swiglu_task *t = arg;
    long long r0, r1;
    hl_split(t->n_rows, ith, nth, &r0, &r1);
    for (long long r = r0; r < r1; r++) t->k->swiglu(t->d, t->gate + r * t->d, t->gate + r * t->d, t->up + r * t->d);
}

static void add_run(void *arg, int ith, int nth) {
    binary_task *t = arg;
    long long i0, i1;
    hl_split(t->n, ith, nth, &i0, &i1);
    if (t->y_n == t->n)
        for (long long i = i0; i < i1; i++) t->x[i] += t->y[i];
    else
        for (long long i = i0; i < i1; i++) t->x[i] += t->y[i % t->y_n];
}

static void scale_run(void *arg, int ith, int nth) {
    binary_task *t = arg;
    long long i0, i1;
    hl_split(t->n, ith, nth, &i0, &i1);
    for (long long i = i0; i < i1; i++) t->x[i] *= t->s;
}

void hl_cpu_swiglu(hl_backend *b, hl_tensor *gate, const hl_tensor *up) {
    const int64_t n = hl_tensor_nelements(gate);
    swiglu_task t = {gate->data, up->data, gate->ne[0], n / gate->ne[0], hl_cpu_kernels_for(b)};
    hl_pool_run(cpu_of(b)->pool, threads_for(b, n), swiglu_run, &t);
}

void hl_cpu_add(hl_backend *b, hl_tensor *x, const hl_tensor *y) {
    binary_task t = {x->data, y->data, hl_tensor_nelements(x), hl_tensor_nelements(y), 0.0f};
    hl_pool_run(cpu_of(b)->pool, threads_for(b, t.n), add_run, &t);
}

void hl_cpu_scale(hl_backend *b, hl_tensor *x, float s) {
    binary_task t = {x->data, NULL, hl_tensor_nelements(x), 0, s};
    hl_pool_run(cpu_of(b)->pool, threads_for(b, t.n), scale_run, &t);
}
