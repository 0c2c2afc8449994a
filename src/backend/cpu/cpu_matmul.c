/* CPU matrix multiplication y = x * W^T with W quantized. As in ggml, the
 * activations are first converted to the weight type's vec-dot type (Q8_0 for
 * Q4_0/Q8_0, Q8_1 for Q4_1, F16 for F16 ...) so the inner products run on
 * integers; then threads split the output rows. For a batch, each thread walks
 * its rows in small blocks and runs every token against a block while the
 * block's weights are still in L1. */
#include "backend/cpu/cpu_impl.h"
#include "backend/cpu/vec_dot.h"
#include "gguf/ggml_types.h"
#include "quant/quant.h"

#define ROW_BLOCK 16
#define CONVERT_PARALLEL_MIN 16384 /* elements of x below which conversion runs on one thread */

typedef struct matmul_task {
    const hl_tensor *w;
    const hl_tensor *x;
    hl_tensor *y;
    const hl_cpu_type_ops *ops;
    const uint8_t *act;  /* x converted: n rows of act_stride bytes */
    size_t act_stride;
    uint8_t *act_out;    /* where conversion writes */
} matmul_task;

static void convert_run(void *arg, int ith, int nth) {
    matmul_task *t = arg;
    const int64_t d = t->x->ne[0];
    long long r0, r1;
    hl_split(t->x->ne[1], ith, nth, &r0, &r1);
    for (long long r = r0; r < r1; r++)
        t->ops->act_from_float((const float *)t->x->data + r * d, t->act_out + (size_t)r * t->act_stride, d);
}

static void dot_run(void *arg, int ith, int nth) {
    matmul_task *t = arg;
    const int64_t d_in = t->w->ne[0], d_out = t->w->ne[1], n = t->x->ne[1];
    const size_t w_stride = hl_row_size(t->w->type, d_in);
    const uint8_t *w = t->w->data;
    float *y = t->y->data;
    long long r0, r1;
    hl_split(d_out, ith, nth, &r0, &r1);
    for (long long rb = r0; rb < r1; rb += ROW_BLOCK) {
        const long long re = rb + ROW_BLOCK < r1 ? rb + ROW_BLOCK : r1;
        for (int64_t tok = 0; tok < n; tok++) {
            const uint8_t *a = t->act + (size_t)tok * t->act_stride;
            float *yrow = y + tok * d_out;
            for (long long r = rb; r < re; r++) t->ops->vec_dot(d_in, &yrow[r], w + (size_t)r * w_stride, a);
        }
    }
}

void hl_cpu_matmul(hl_backend *b, const hl_tensor *w, const hl_tensor *x, hl_tensor *y) {
    hl_cpu *cpu = cpu_of(b);
    matmul_task t = {.w = w, .x = x, .y = y, .ops = hl_cpu_type_ops_get(w->type)};
    const int64_t d_in = x->ne[0];
    if (t.ops->vec_dot_type == GGML_TYPE_F32) { /* dot the floats directly */
        t.act = x->data;
        t.act_stride = (size_t)d_in * sizeof(float);
    } else {
        t.act_stride = hl_row_size(t.ops->vec_dot_type, d_in);
        t.act_out = cpu->act;
        t.act = cpu->act;
        int nth = hl_tensor_nelements(x) < CONVERT_PARALLEL_MIN ? 1 : hl_pool_n_threads(cpu->pool);
        hl_pool_run(cpu->pool, nth, convert_run, &t);
    }
    hl_pool_run(cpu->pool, hl_pool_n_threads(cpu->pool), dot_run, &t);
}
