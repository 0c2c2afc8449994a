/* CPU causal attention over the KV cache (scaled dot-product attention,
 * Vaswani et al. 2017, arXiv:1706.03762) with grouped-query heads. Threads
 * split the (token, head) pairs; each keeps its scores and probabilities in
 * its own slice of the backend's scratch, so nothing is allocated here.
 *
 * The arithmetic is llama.cpp's without flash attention (cpu_kernels.h):
 * the query rounded to F16, K.q in the order of the path llama.cpp takes for
 * this batch size, softmax(scale * K.q) with ggml's exp and a double sum, the
 * probabilities rounded to F16, then V^T.P. The KV cache is F16. */
#include <math.h>

#include "backend/cpu/cpu_impl.h"
#include "backend/cpu/cpu_kernels.h"
#include "quant/quant.h"

typedef struct attn_task {
    const hl_attn_args *a;
    const hl_cpu_kernels *k;
    float *scores;   /* n_ctx floats per thread */
    hl_half *probs;  /* n_ctx halves per thread */
    int64_t n_ctx;
} attn_task;

/* llama.cpp runs a batch of two or more tokens through tinyBLAS where it
 * accepts the shapes (llamafile_sgemm: K.Q needs head_dim % 16 == 0, V^T.P
 * head_dim % 4 == 0) and one token through ggml_vec_dot_f16. */
static hl_attn_order kq_order(const hl_attn_args *a) {
    return a->q->ne[1] > 1 && a->head_dim % 16 == 0 ? HL_ATTN_TINYBLAS : HL_ATTN_VEC_DOT;
}

static hl_attn_order pv_order(const hl_attn_args *a) {
    return a->q->ne[1] > 1 && a->head_dim % 4 == 0 ? HL_ATTN_TINYBLAS : HL_ATTN_VEC_DOT;
}

/* scores[j] = scale * (K_j . q) for j < span; returns their maximum. */
static float kq_scores(const attn_task *t, const hl_half *q16, int32_t kvh, int64_t span, float *scores) {
    const hl_attn_args *a = t->a;
    const int32_t hd = a->head_dim;
    const hl_attn_order order = kq_order(a);
    const size_t k_stride = hl_row_size(GGML_TYPE_F16, a->k_cache->ne[0]);
    const uint8_t *k = (const uint8_t *)a->k_cache->data + (size_t)kvh * hd * sizeof(hl_half);
    float max = -INFINITY;
    for (int64_t j = 0; j < span; j++) {
        const float s = t->k->dot_f16(hd, (const hl_half *)(k + (size_t)j * k_stride), q16, order) * a->scale;
        scores[j] = s;
        max = s > max ? s : max;
    }
    return max;
}

static void attend_one(const attn_task *t, int64_t tok, int32_t h, float *scores, hl_half *probs) {
    const hl_attn_args *a = t->a;
    const int32_t hd = a->head_dim;
    const int32_t kvh = h / (a->n_head / a->n_head_kv);
    const int64_t span = a->pos0 + tok + 1;
    const float *q = (const float *)a->q->data + tok * a->q->ne[0] + (int64_t)h * hd;
    float *out = (float *)a->out->data + tok * a->out->ne[0] + (int64_t)h * hd;

    hl_half q16[HL_KERNELS_MAX_HEAD_DIM];
    for (int32_t i = 0; i < hd; i++) q16[i] = hl_fp32_to_fp16(q[i]);
    const float max = kq_scores(t, q16, kvh, span, scores);
    /* ggml_compute_forward_soft_max_f32: 1/sum in double, rounded to float */
    const float inv = (float)(1.0 / t->k->softmax_exp(span, scores, max));
    for (int64_t j = 0; j < span; j++) probs[j] = hl_fp32_to_fp16(scores[j] * inv);

    const size_t v_stride = hl_row_size(GGML_TYPE_F16, a->v_cache->ne[0]);
    const uint8_t *v = (const uint8_t *)a->v_cache->data + (size_t)kvh * hd * sizeof(hl_half);
    t->k->pv(span, probs, v, v_stride, hd, out, pv_order(a));
}

static void attn_run(void *arg, int ith, int nth) {
    attn_task *t = arg;
    const hl_attn_args *a = t->a;
    const int64_t n_pairs = a->q->ne[1] * a->n_head;
    long long p0, p1;
    hl_split(n_pairs, ith, nth, &p0, &p1);
    for (long long p = p0; p < p1; p++)
        attend_one(t, p / a->n_head, (int32_t)(p % a->n_head), t->scores + ith * t->n_ctx, t->probs + ith * t->n_ctx);
}

void hl_cpu_attention(hl_backend *b, const hl_attn_args *args) {
    hl_cpu *cpu = cpu_of(b);
    attn_task t = {args, hl_cpu_kernels_for(b), cpu->scores, cpu->probs, cpu->limits.n_ctx};
    hl_pool_run(cpu->pool, hl_pool_n_threads(cpu->pool), attn_run, &t);
}
