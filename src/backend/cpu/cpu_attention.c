/* CPU causal attention over the KV cache (scaled dot-product attention,
 * Vaswani et al. 2017, arXiv:1706.03762) with grouped-query heads. Threads
 * split the (token, head) pairs; each keeps its scores in its own slice of the
 * backend's scratch, so nothing is allocated here. The query is converted to
 * the cache's vec-dot type (F16 for an F16 cache), as llama.cpp does. */
#include <math.h>
#include <string.h>

#include "backend/cpu/cpu_impl.h"
#include "backend/cpu/vec_dot.h"
#include "quant/quant.h"

#define MAX_HEAD_DIM 512

typedef struct attn_task {
    const hl_attn_args *a;
    float *scores; /* n_ctx floats per thread */
    int64_t n_ctx;
} attn_task;

static void attend_one(const hl_attn_args *a, int64_t tok, int32_t h, float *scores) {
    const int32_t hd = a->head_dim;
    const int32_t kvh = h / (a->n_head / a->n_head_kv);
    const int64_t span = a->pos0 + tok + 1;
    const float *q = (const float *)a->q->data + tok * a->q->ne[0] + (int64_t)h * hd;
    float *out = (float *)a->out->data + tok * a->out->ne[0] + (int64_t)h * hd;

    const hl_cpu_type_ops *kops = hl_cpu_type_ops_get(a->k_cache->type);
    uint8_t q_conv[MAX_HEAD_DIM * sizeof(float)];
    kops->act_from_float(q, q_conv, hd);
    const size_t k_stride = hl_row_size(a->k_cache->type, a->k_cache->ne[0]);
    const size_t k_off = hl_row_size(a->k_cache->type, (int64_t)kvh * hd);
    const uint8_t *k = a->k_cache->data;
    float max = -INFINITY;
    for (int64_t j = 0; j < span; j++) {
        float s;
        kops->vec_dot(hd, &s, k + (size_t)j * k_stride + k_off, q_conv);
        s *= a->scale;
        scores[j] = s;
        if (s > max) max = s;
    }
    double sum = 0.0;
    for (int64_t j = 0; j < span; j++) {
        scores[j] = expf(scores[j] - max);
        sum += scores[j];
    }
    const float inv = (float)(1.0 / sum);

    const hl_quant_traits *vq = hl_quant_get(a->v_cache->type);
    const size_t v_stride = hl_row_size(a->v_cache->type, a->v_cache->ne[0]);
    const size_t v_off = hl_row_size(a->v_cache->type, (int64_t)kvh * hd);
    const uint8_t *v = a->v_cache->data;
    float vrow[MAX_HEAD_DIM];
    memset(out, 0, (size_t)hd * sizeof(float));
    for (int64_t j = 0; j < span; j++) {
        vq->to_float(v + (size_t)j * v_stride + v_off, vrow, hd);
        const float p = scores[j] * inv;
        for (int32_t i = 0; i < hd; i++) out[i] += p * vrow[i];
    }
}

static void attn_run(void *arg, int ith, int nth) {
    attn_task *t = arg;
    const hl_attn_args *a = t->a;
    const int64_t n_pairs = a->q->ne[1] * a->n_head;
    long long p0, p1;
    hl_split(n_pairs, ith, nth, &p0, &p1);
    for (long long p = p0; p < p1; p++) attend_one(a, p / a->n_head, (int32_t)(p % a->n_head), t->scores + ith * t->n_ctx);
}

void hl_cpu_attention(hl_backend *b, const hl_attn_args *args) {
    hl_cpu *cpu = cpu_of(b);
    attn_task t = {args, cpu->scores, cpu->limits.n_ctx};
    hl_pool_run(cpu->pool, hl_pool_n_threads(cpu->pool), attn_run, &t);
}
