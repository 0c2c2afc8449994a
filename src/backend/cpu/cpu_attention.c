/* CPU causal attention over the KV cache (scaled dot-product attention,
 * Vaswani et al. 2017, arXiv:1706.03762) with grouped-query heads. Threads
 * take the (token, head) pairs in turn; each keeps its scores and probabilities in
 * its own slice of the backend's scratch, so nothing is allocated here.
 *
 * The arithmetic is llama.cpp's without flash attention (cpu_kernels.h):
 * the query rounded to F16, K.q in the order of the path llama.cpp takes for
 * this batch size, softmax(scale * K.q) with ggml's exp and a double sum, the
 * probabilities rounded to F16, then V^T.P. The KV cache is F16. Layers with
 * a sliding window mask the positions that fell out of it.
 *
 * A token reads only its own sequence's cells (from its row0 on), and its
 * dot products take the order llama.cpp takes for a batch of that
 * sequence's tokens in the pass: a sequence's results do not depend on the
 * other sequences sharing the pass. This is flash_attn OFF; an instance
 * made with flash_attn runs the tiled path instead (cpu_flash_attn.c). */
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
    const int32_t *pos, *row0, *run; /* per token: position, first cell of its sequence, its sequence's tokens in the pass */
} attn_task;

/* llama.cpp runs a batch of two or more tokens through tinyBLAS where it
 * accepts the shapes (llamafile_sgemm: K.Q needs head_dim % 16 == 0, V^T.P
 * head_dim % 4 == 0) and one token through ggml_vec_dot_f16. `run` is the
 * number of tokens of the query's sequence in the pass. */
static hl_attn_order kq_order(const hl_attn_args *a, int32_t run) {
    return run > 1 && a->head_dim % 16 == 0 ? HL_ATTN_TINYBLAS : HL_ATTN_VEC_DOT;
}

static hl_attn_order pv_order(const hl_attn_args *a, int32_t run) {
    return run > 1 && a->head_dim % 4 == 0 ? HL_ATTN_TINYBLAS : HL_ATTN_VEC_DOT;
}

/* scores[j - j0] = scale * (K_j . q) for j0 <= j < span, -inf for the
 * positions before `first` (outside the sliding window); returns the
 * maximum. */
static float kq_scores(const attn_task *t, int64_t tok, const hl_half *q16, int32_t kvh, int64_t j0, int64_t first,
                       int64_t span, float *scores) {
    const hl_attn_args *a = t->a;
    const int32_t hd = a->head_dim;
    const hl_attn_order order = kq_order(a, t->run[tok]);
    const size_t k_stride = hl_row_size(GGML_TYPE_F16, a->k_cache->ne[0]);
    const uint8_t *k = (const uint8_t *)a->k_cache->data + (size_t)t->row0[tok] * k_stride + (size_t)kvh * hd * sizeof(hl_half);
    float max = -INFINITY;
    for (int64_t j = j0; j < first; j++) scores[j - j0] = -INFINITY;
    for (int64_t j = first; j < span; j++) {
        const float s = t->k->dot_f16(hd, (const hl_half *)(k + (size_t)j * k_stride), q16, order) * a->scale;
        scores[j - j0] = s;
        max = s > max ? s : max;
    }
    return max;
}

/* Positions a query sees: [first, span) with span = its position + 1 and
 * first = span - n_swa under a sliding window (llama.cpp's is_masked_swa:
 * key p0 is masked for query p1 when p1 - p0 >= n_swa). llama.cpp computes
 * the masked positions too and gives them probability 0 (score -inf), which
 * adds exact zeros to every sum. The kernels assign a position to a lane and
 * accumulator by its index (softmax in chunks of 16, P.V in 64 classes, see
 * cpu_kernels.h), so starting at j0, the multiple of 64 at or below first,
 * keeps every unmasked position where it was and leaves out only leading
 * zeros: the result is llama.cpp's, bit for bit. */
#define SWA_ALIGN 64

static void attend_one(const attn_task *t, int64_t tok, int32_t h, float *scores, hl_half *probs) {
    const hl_attn_args *a = t->a;
    const int32_t hd = a->head_dim;
    const int32_t kvh = h / (a->n_head / a->n_head_kv);
    const int64_t span = t->pos[tok] + 1;
    const int64_t first = a->n_swa > 0 && span > a->n_swa ? span - a->n_swa : 0;
    const int64_t j0 = first / SWA_ALIGN * SWA_ALIGN, n = span - j0;
    const float *q = (const float *)a->q->data + tok * a->q->ne[0] + (int64_t)h * hd;
    float *out = (float *)a->out->data + tok * a->out->ne[0] + (int64_t)h * hd;

    hl_half q16[HL_KERNELS_MAX_HEAD_DIM];
    for (int32_t i = 0; i < hd; i++) q16[i] = hl_fp32_to_fp16(q[i]);
    const float max = kq_scores(t, tok, q16, kvh, j0, first, span, scores);
    /* ggml_compute_forward_soft_max_f32: 1/sum in double, rounded to float */
    const float inv = (float)(1.0 / t->k->softmax_exp(n, scores, max));
    for (int64_t j = 0; j < n; j++) probs[j] = hl_fp32_to_fp16(scores[j] * inv);

    const size_t v_stride = hl_row_size(GGML_TYPE_F16, a->v_cache->ne[0]);
    const uint8_t *v = (const uint8_t *)a->v_cache->data + (size_t)(t->row0[tok] + j0) * v_stride +
                       (size_t)kvh * hd * sizeof(hl_half);
    t->k->pv(n, probs, v, v_stride, hd, out, pv_order(a, t->run[tok]));
}

/* A causal query's work grows with its position, so the threads take the
 * (token, head) pairs in turn rather than in contiguous ranges (which would
 * give the last thread the longest spans: 3/4 of a prompt's work with 2
 * threads). */
static void attn_run(void *arg, int ith, int nth) {
    attn_task *t = arg;
    const hl_attn_args *a = t->a;
    const int64_t n_pairs = a->q->ne[1] * a->n_head;
    for (int64_t p = ith; p < n_pairs; p += nth)
        attend_one(t, p / a->n_head, (int32_t)(p % a->n_head), t->scores + ith * t->n_ctx, t->probs + ith * t->n_ctx);
}

void hl_cpu_attention(hl_backend *b, const hl_attn_args *args) {
    hl_cpu *cpu = cpu_of(b);
    if (cpu->limits.flash_attn) {
        hl_cpu_flash_attention(b, args);
        return;
    }
    attn_task t = {args, hl_cpu_kernels_for(b), cpu->scores, cpu->probs, cpu->limits.n_ctx, cpu->pos, cpu->row0, cpu->run};
    hl_pool_run(cpu->pool, hl_pool_n_threads(cpu->pool), attn_run, &t);
}
