/* CPU element-wise and row ops: embedding lookup, RMSNorm, LayerNorm, RoPE,
 * KV-cache stores, SwiGLU, GeGLU, GELU, residual and bias add, scale, clamp.
 * Each op splits its rows over the thread pool when there is enough work to
 * pay for the hand-off. Formulas follow llama.cpp (ggml-cpu/ops.cpp)
 * rounding for rounding, so that results are its bits (see vec_dot.h for
 * why that matters). */
#include <math.h>
#include <pthread.h>

#include "backend/cpu/common.h"
#include "backend/cpu/row_kernels.h"
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

/* ---- layer_norm */

typedef struct layer_norm_task {
    const hl_tensor *x, *w, *bias;
    float eps;
    hl_tensor *y;
} layer_norm_task;

static void layer_norm_run(void *arg, int ith, int nth) {
    layer_norm_task *t = arg;
    const int64_t d = t->w->ne[0];
    const float *w = t->w->data, *bias = t->bias ? t->bias->data : NULL;
    long long r0, r1;
    hl_split(t->x->ne[1], ith, nth, &r0, &r1);
    for (long long r = r0; r < r1; r++) {
        const float *x = (const float *)t->x->data + r * d;
        float *y = (float *)t->y->data + r * d;
        /* ggml_compute_forward_norm_f32 (ggml-cpu/ops.cpp): the sum in
         * double rounded to float, the mean in float; ggml_vec_cvar_f32's
         * scalar form: each centred value and its square rounded to float,
         * the squares summed in double, the variance rounded to float (its
         * SIMD body adds a vector of squares in float before the double
         * sum: a last-bit difference); then ggml's norm, mul and add ops,
         * a rounding each. y may alias x: each pass reads what it writes. */
        double sum = 0.0;
        for (int64_t i = 0; i < d; i++) sum += (double)x[i];
        const float mean = (float)sum / (float)d;
        double sq = 0.0;
        for (int64_t i = 0; i < d; i++) {
            const float c = x[i] - mean;
            y[i] = c;
            sq += (double)(c * c);
        }
        const float scale = 1.0f / sqrtf((float)(sq / (double)d) + t->eps);
        if (bias)
            for (int64_t i = 0; i < d; i++) y[i] = y[i] * scale * w[i] + bias[i];
        else
            for (int64_t i = 0; i < d; i++) y[i] = y[i] * scale * w[i];
    }
}

void hl_cpu_layer_norm(hl_backend *b, const hl_tensor *x, const hl_tensor *w, const hl_tensor *bias, float eps,
                       hl_tensor *y) {
    layer_norm_task t = {x, w, bias, eps, y};
    hl_pool_run(cpu_of(b)->pool, threads_for(b, hl_tensor_nelements(x)), layer_norm_run, &t);
}

/* ---- rope (normal and NEOX pairings, optional frequency factors, YaRN) */

/* cos and sin of each pair at position `pos` (backend.h hl_rope_params), as
 * ggml_rope_cache_init and rope_yarn compute them: theta_i = pos *
 * theta_scale^i by repeated multiplication in float; with YaRN the mix
 * theta_interp * (1 - ramp_mix) + theta_extrap * ramp_mix, which GCC
 * contracts into one FMA around the second product in llama.cpp's build. */
static void rope_cos_sin(const hl_rope_params *p, const hl_rope_consts *k, float pos, const float *freq_factors,
                         float *cos_sin) {
    float theta = pos;
    for (int32_t i = 0; i < p->n_rot / 2; i++) {
        const float ff = freq_factors ? freq_factors[i] : 1.0f;
        const float extrap = theta / ff, interp = p->freq_scale * extrap;
        const float mix = hl_rope_ramp_mix(k, p, i);
        const float angle = p->ext_factor != 0.0f ? fmaf(interp, 1.0f - mix, extrap * mix) : interp;
        cos_sin[2 * i] = cosf(angle) * k->mscale;
        cos_sin[2 * i + 1] = sinf(angle) * k->mscale;
        theta *= k->theta_scale;
    }
}

typedef struct rope_task {
    hl_tensor *x;
    int32_t n_head;
    const int32_t *pos; /* rope: [x->ne[1]] */
    int64_t row0;       /* rope_shift: the first row rotated, every row to `delta` */
    int32_t delta;
    const hl_rope_params *p;
    const float *freq_factors; /* [n_rot / 2] or NULL */
    hl_to_float_fn to_float;   /* rope_shift: the cache's type to F32 and back */
    hl_from_float_fn from_float;
    void (*rotate)(float *v, int32_t n_rot, bool neox, const float *cos_sin); /* hl_cpu_kernels.rope_rotate */
} rope_task;

static void rope_run(void *arg, int ith, int nth) {
    rope_task *t = arg;
    const int64_t head_dim = t->x->ne[0] / t->n_head;
    const hl_rope_consts k = hl_rope_yarn_consts(t->p);
    const bool neox = t->p->mode == HL_ROPE_NEOX;
    float cos_sin[HL_KERNELS_MAX_HEAD_DIM]; /* per pair: cos, sin */
    long long r0, r1;
    hl_split(t->x->ne[1], ith, nth, &r0, &r1);
    for (long long r = r0; r < r1; r++) {
        float *row = (float *)t->x->data + r * t->x->ne[0];
        rope_cos_sin(t->p, &k, (float)t->pos[r], t->freq_factors, cos_sin);
        for (int32_t h = 0; h < t->n_head; h++) t->rotate(row + h * head_dim, t->p->n_rot, neox, cos_sin);
    }
}

void hl_cpu_rope(hl_backend *b, hl_tensor *x, int32_t n_head, const hl_rope_params *p, const hl_tensor *freq_factors) {
    rope_task t = {x,
                   n_head,
                   cpu_of(b)->pos,
                   0,
                   0,
                   p,
                   freq_factors ? freq_factors->data : NULL,
                   NULL,
                   NULL,
                   hl_cpu_kernels_for(b)->rope_rotate};
    hl_pool_run(cpu_of(b)->pool, threads_for(b, hl_tensor_nelements(x)), rope_run, &t);
}

/* The K-shift: every row at the same position, so one table of cos, sin;
 * each head converted to F32, rotated and converted back (for F16 ggml's
 * rotate_pairs<ggml_fp16_t>; for the quantized types llama.cpp's cast to
 * F32, rope and copy back, which requantizes the whole head). */
static void rope_shift_run(void *arg, int ith, int nth) {
    rope_task *t = arg;
    const int64_t d = t->x->ne[0], head_dim = d / t->n_head;
    const size_t row_bytes = hl_row_size(t->x->type, d), head_bytes = hl_row_size(t->x->type, head_dim);
    const hl_rope_consts k = hl_rope_yarn_consts(t->p);
    const bool neox = t->p->mode == HL_ROPE_NEOX;
    float cos_sin[HL_KERNELS_MAX_HEAD_DIM], v[HL_KERNELS_MAX_HEAD_DIM];
    rope_cos_sin(t->p, &k, (float)t->delta, t->freq_factors, cos_sin);
    long long r0, r1;
    hl_split(t->x->ne[1], ith, nth, &r0, &r1);
    for (long long r = r0; r < r1; r++) {
        for (int32_t h = 0; h < t->n_head; h++) {
            uint8_t *head = (uint8_t *)t->x->data + (size_t)(t->row0 + r) * row_bytes + (size_t)h * head_bytes;
            t->to_float(head, v, head_dim);
            t->rotate(v, t->p->n_rot, neox, cos_sin);
            t->from_float(v, head, head_dim);
        }
    }
}

void hl_cpu_rope_shift(hl_backend *b, hl_tensor *cache, int64_t row, int64_t n, int32_t n_head, int32_t delta,
                       const hl_rope_params *p, const hl_tensor *freq_factors) {
    hl_tensor rows = *cache;
    rows.ne[1] = n; /* the task splits n rows, from row0 */
    rope_task t = {&rows,
                   n_head,
                   NULL,
                   row,
                   delta,
                   p,
                   freq_factors ? freq_factors->data : NULL,
                   hl_quant_get(cache->type)->to_float,
                   hl_cpu_cache_from_float(b, cache->type),
                   hl_cpu_kernels_for(b)->rope_rotate};
    hl_pool_run(cpu_of(b)->pool, threads_for(b, n * cache->ne[0]), rope_shift_run, &t);
}

/* ---- store_rows: F32 rows into the KV cache's type */

typedef struct store_task {
    const hl_tensor *src;
    hl_tensor *cache;
    const int32_t *pos, *row0; /* [src->ne[1]] */
    hl_from_float_fn from_float;
} store_task;

static void store_rows_run(void *arg, int ith, int nth) {
    store_task *t = arg;
    const int64_t d = t->src->ne[0];
    const size_t row_bytes = hl_row_size(t->cache->type, d);
    long long r0, r1;
    hl_split(t->src->ne[1], ith, nth, &r0, &r1);
    for (long long r = r0; r < r1; r++) {
        uint8_t *dst = (uint8_t *)t->cache->data + (size_t)(t->row0[r] + t->pos[r]) * row_bytes;
        t->from_float((const float *)t->src->data + r * d, dst, d);
    }
}

void hl_cpu_store_rows(hl_backend *b, const hl_tensor *src, hl_tensor *cache) {
    store_task t = {src, cache, cpu_of(b)->pos, cpu_of(b)->row0, hl_cpu_cache_from_float(b, cache->type)};
    hl_pool_run(cpu_of(b)->pool, threads_for(b, hl_tensor_nelements(src)), store_rows_run, &t);
}

/* ---- element-wise: swiglu, geglu, add, scale, clamp */

typedef struct binary_task {
    float *x;
    const float *y;
    int64_t n, y_n; /* y repeats every y_n elements (a bias) or y_n == n */
    float s, hi;    /* scale's factor; clamp's bounds [s, hi] */
} binary_task;

/* silu(gate) * up row by row, as ggml_vec_swiglu_f32 is applied per row:
 * its 16-lane chunks start at each row (row_kernels.h). */
typedef struct swiglu_task {
    float *gate;
    const float *up;
    int64_t d, n_rows;
    const hl_cpu_kernels *k;
} swiglu_task;

typedef struct gelu_task {
    float *x;
    int64_t n;
    const hl_cpu_kernels *k;
} gelu_task;

static void swiglu_run(void *arg, int ith, int nth) {
    swiglu_task *t = arg;
    long long r0, r1;
    hl_split(t->n_rows, ith, nth, &r0, &r1);
    for (long long r = r0; r < r1; r++) t->k->swiglu(t->d, t->gate + r * t->d, t->gate + r * t->d, t->up + r * t->d);
}

/* GELU with the tanh approximation (Hendrycks & Gimpel 2016, eq. in sec. 2)
 * as llama.cpp's CPU backend computes it for F32 (GGML_GELU_FP16, vec.h):
 * x <= -10 gives 0, x >= 10 gives x, anything between is rounded to F16 and
 * looked up in a table of the 65536 F16 results, each the formula in float
 * rounded to F16. ggml-cpu.c fills its table in GNU C with FMA, where GCC
 * contracts 1 + a*x*x into one FMA; with it, this table equals ggml's for
 * every non-NaN input (checked against libggml-cpu.so's ggml_table_gelu_f16). */
static hl_half gelu_table[1 << 16];
static pthread_once_t gelu_once = PTHREAD_ONCE_INIT;

static void gelu_table_init(void) {
    const float a = 0.044715f, sqrt_2_over_pi = 0.79788456080286535587989211986876f;
    for (uint32_t i = 0; i < (1u << 16); i++) {
        const float x = hl_fp16_to_fp32((hl_half)i);
        gelu_table[i] = hl_fp32_to_fp16(0.5f * x * (1.0f + tanhf(sqrt_2_over_pi * x * fmaf(a * x, x, 1.0f))));
    }
}

/* ggml_vec_geglu_f32: the same lookup, times up */
static void geglu_run(void *arg, int ith, int nth) {
    swiglu_task *t = arg; /* same operands: gate, up, rows */
    long long i0, i1;
    hl_split(t->d * t->n_rows, ith, nth, &i0, &i1);
    t->k->gelu(i1 - i0, t->gate + i0, gelu_table);
    for (long long i = i0; i < i1; i++) t->gate[i] *= t->up[i];
}

/* ggml_vec_gelu_f32 (vec.h, GGML_GELU_FP16): the row kernel's lookup */
static void gelu_run(void *arg, int ith, int nth) {
    gelu_task *t = arg;
    long long i0, i1;
    hl_split(t->n, ith, nth, &i0, &i1);
    t->k->gelu(i1 - i0, t->x + i0, gelu_table);
}

static void add_run(void *arg, int ith, int nth) {
    binary_task *t = arg;
    long long i0, i1;
    hl_split(t->n, ith, nth, &i0, &i1);
    if (t->y_n == t->n) {
        for (long long i = i0; i < i1; i++) t->x[i] += t->y[i];
        return;
    }
    /* y repeats along x (a bias over rows): runs of whole or partial rows, no division per element */
    for (long long i = i0, j = i0 % t->y_n; i < i1; j = 0) {
        const long long run = i1 - i < t->y_n - j ? i1 - i : t->y_n - j;
        for (long long k = 0; k < run; k++) t->x[i + k] += t->y[j + k];
        i += run;
    }
}

static void scale_run(void *arg, int ith, int nth) {
    binary_task *t = arg;
    long long i0, i1;
    hl_split(t->n, ith, nth, &i0, &i1);
    for (long long i = i0; i < i1; i++) t->x[i] *= t->s;
}

/* ggml_compute_forward_clamp_f32: max(min(x, hi), lo) */
static void clamp_run(void *arg, int ith, int nth) {
    binary_task *t = arg;
    long long i0, i1;
    hl_split(t->n, ith, nth, &i0, &i1);
    for (long long i = i0; i < i1; i++) {
        const float v = t->x[i] < t->hi ? t->x[i] : t->hi;
        t->x[i] = v > t->s ? v : t->s;
    }
}

void hl_cpu_swiglu(hl_backend *b, hl_tensor *gate, const hl_tensor *up) {
    const int64_t n = hl_tensor_nelements(gate);
    swiglu_task t = {gate->data, up->data, gate->ne[0], n / gate->ne[0], hl_cpu_kernels_for(b)};
    hl_pool_run(cpu_of(b)->pool, threads_for(b, n), swiglu_run, &t);
}

void hl_cpu_geglu(hl_backend *b, hl_tensor *gate, const hl_tensor *up) {
    pthread_once(&gelu_once, gelu_table_init);
    const int64_t n = hl_tensor_nelements(gate);
    swiglu_task t = {gate->data, up->data, gate->ne[0], n / gate->ne[0], hl_cpu_kernels_for(b)};
    hl_pool_run(cpu_of(b)->pool, threads_for(b, n), geglu_run, &t);
}

void hl_cpu_gelu(hl_backend *b, hl_tensor *x) {
    pthread_once(&gelu_once, gelu_table_init);
    gelu_task t = {x->data, hl_tensor_nelements(x), hl_cpu_kernels_for(b)};
    hl_pool_run(cpu_of(b)->pool, threads_for(b, t.n), gelu_run, &t);
}

void hl_cpu_add(hl_backend *b, hl_tensor *x, const hl_tensor *y) {
    binary_task t = {x->data, y->data, hl_tensor_nelements(x), hl_tensor_nelements(y), 0.0f, 0.0f};
    hl_pool_run(cpu_of(b)->pool, threads_for(b, t.n), add_run, &t);
}

void hl_cpu_scale(hl_backend *b, hl_tensor *x, float s) {
    binary_task t = {x->data, NULL, hl_tensor_nelements(x), 0, s, 0.0f};
    hl_pool_run(cpu_of(b)->pool, threads_for(b, t.n), scale_run, &t);
}

void hl_cpu_clamp(hl_backend *b, hl_tensor *x, float lo, float hi) {
    binary_task t = {x->data, NULL, hl_tensor_nelements(x), 0, lo, hi};
    hl_pool_run(cpu_of(b)->pool, threads_for(b, t.n), clamp_run, &t);
}
