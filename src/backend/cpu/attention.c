/* CPU attention over the KV cache, causal or an encoder's bidirectional, (scaled dot-product attention,
 * Vaswani et al. 2017, arXiv:1706.03762) with grouped-query heads. Threads
 * take the (token, head) pairs in turn; each keeps its scores and probabilities in
 * its own slice of the backend's scratch, so nothing is allocated here.
 *
 * The arithmetic is llama.cpp's without flash attention (row_kernels.h):
 * the query rounded to F16, K.q in the order of the path llama.cpp takes for
 * this batch size, softmax(scale * K.q) with ggml's exp and a double sum, the
 * probabilities rounded to F16, then V^T.P, over an F16 KV cache. Other
 * cache types (BF16, Q8_0, Q4_0 keys; BF16 values: llama.cpp refuses a
 * quantized V cache without flash attention) take llama.cpp's mul_mat
 * for them: the query converted to the key type's vec-dot type and each
 * score the type's vec_dot kernel (keys read as stored, block by block);
 * the probabilities rounded to the value type's vec-dot type and summed
 * over value rows converted to F32 one at a time. Layers with a sliding
 * window mask the positions that fell out of it; ALiBi (max_bias > 0) adds
 * its per-head linear bias to the scaled scores.
 *
 * A token reads only its own sequence's cells (from its row0 on), and its
 * dot products take the order llama.cpp takes for a batch of that
 * sequence's tokens in the pass: a sequence's results do not depend on the
 * other sequences sharing the pass. This is flash_attn OFF; an instance
 * made with flash_attn runs the tiled path instead (flash_attn.c). */
#include <math.h>
#include <stdlib.h>

#include "backend/cpu/common.h"
#include "backend/cpu/row_kernels.h"
#include "quant/quant.h"

typedef struct attn_task {
    const hl_attn_args *a;
    const hl_cpu_kernels *k;
    const hl_cpu_type_ops *k_ops, *v_ops; /* the kernels of a K (V) cache that is not F16, else NULL */
    float *scores;                        /* n_ctx floats per thread */
    hl_half *probs;                       /* n_ctx halves per thread */
    int64_t n_ctx;
    const int32_t *pos, *row0, *run, *seq_end; /* per token: position, first cell of its sequence, its sequence's
                                                  tokens in the pass, where their positions end */
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

/* scores[j - j0] = scale * (K_j . q) - slope * |j - p| for j0 <= j < span
 * (p the query's position; slope 0 without ALiBi: ggml's soft_max adds
 * slope * mask after scaling, the F32 mask holding -|p - j|),
 * -inf for the positions before `first` (outside the sliding window);
 * returns the maximum. */
static float kq_scores(const attn_task *t, int64_t tok, const hl_half *q16, int32_t kvh, int64_t j0, int64_t first,
                       int64_t span, int64_t p, float slope, float *scores) {
    const hl_attn_args *a = t->a;
    const int32_t hd = a->head_dim;
    const hl_attn_order order = kq_order(a, t->run[tok]);
    const uint32_t type = a->k_cache->type;
    const size_t k_stride = hl_row_size(type, a->k_cache->ne[0]);
    const uint8_t *k = (const uint8_t *)a->k_cache->data + (size_t)t->row0[tok] * k_stride +
                       hl_row_size(type, (int64_t)kvh * hd);
    float max = -INFINITY;
    for (int64_t j = j0; j < first; j++) scores[j - j0] = -INFINITY;
    for (int64_t j = first; j < span; j++) {
        float s;
        if (t->k_ops) t->k_ops->vec_dot(hd, &s, k + (size_t)j * k_stride, q16);
        else s = t->k->dot_f16(hd, (const hl_half *)(k + (size_t)j * k_stride), q16, order);
        s *= a->scale;
        if (slope != 0.0f) s += slope * -(float)llabs(j - p);
        scores[j - j0] = s;
        max = s > max ? s : max;
    }
    return max;
}

/* out = sum_j p_j v_j over n value rows of a cache that is not F16: the
 * probabilities (scores, n floats) rounded through V's vec-dot type in
 * place (probs holds the converted row: 2 bytes an element suffice for
 * BF16), each row converted to F32. */
static void pv_rows(const attn_task *t, int64_t n, float *p, hl_half *probs, const uint8_t *v, size_t v_stride,
                    float *out) {
    const int32_t hd = t->a->head_dim;
    t->v_ops->act_from_float(p, probs, n);
    hl_quant_get(t->v_ops->vec_dot_type)->to_float(probs, p, n);
    const hl_to_float_fn to_float = hl_quant_get(t->a->v_cache->type)->to_float;
    float row[HL_KERNELS_MAX_HEAD_DIM];
    for (int32_t d = 0; d < hd; d++) out[d] = 0.0f;
    for (int64_t j = 0; j < n; j++) {
        to_float(v + (size_t)j * v_stride, row, hd);
        for (int32_t d = 0; d < hd; d++) out[d] += p[j] * row[d];
    }
}

/* Positions a query sees: [first, span) with span = its position + 1
 * (causal; bidirectional: its sequence's end in the pass) and
 * first = span - n_swa under a sliding window (llama.cpp's is_masked_swa:
 * key p0 is masked for query p1 when p1 - p0 >= n_swa). llama.cpp computes
 * the masked positions too and gives them probability 0 (score -inf), which
 * adds exact zeros to every sum. The kernels assign a position to a lane and
 * accumulator by its index (softmax in chunks of 16, P.V in 64 classes, see
 * row_kernels.h), so starting at j0, the multiple of 64 at or below first,
 * keeps every unmasked position where it was and leaves out only leading
 * zeros: the result is llama.cpp's, bit for bit. */
#define SWA_ALIGN 64

static void attend_one(const attn_task *t, int64_t tok, int32_t h, float *scores, hl_half *probs) {
    const hl_attn_args *a = t->a;
    const int32_t hd = a->head_dim;
    const int32_t kvh = h / (a->n_head / a->n_head_kv);
    const int64_t span = hl_cpu_attn_end(a, t->pos, t->seq_end, (int32_t)tok);
    const int64_t first = a->n_swa > 0 && span > a->n_swa ? span - a->n_swa : 0;
    const int64_t j0 = first / SWA_ALIGN * SWA_ALIGN, n = span - j0;
    const float *q = (const float *)a->q->data + tok * a->q->ne[0] + (int64_t)h * hd;
    float *out = (float *)a->out->data + tok * a->out->ne[0] + (int64_t)h * hd;

    /* the query in K's vec-dot type: F16, BF16, or Q8_0 blocks (at most 2 bytes an element) */
    _Alignas(64) hl_half q16[HL_KERNELS_MAX_HEAD_DIM];
    if (t->k_ops) t->k_ops->act_from_float(q, q16, hd);
    else
        for (int32_t i = 0; i < hd; i++) q16[i] = hl_fp32_to_fp16(q[i]);
    const float slope = a->max_bias > 0.0f ? hl_alibi_slope(a->n_head, a->max_bias, h) : 0.0f;
    const float max = kq_scores(t, tok, q16, kvh, j0, first, span, t->pos[tok], slope, scores);
    /* ggml_compute_forward_soft_max_f32: 1/sum in double, rounded to float */
    const float inv = (float)(1.0 / t->k->softmax_exp(n, scores, max));

    const uint32_t type = a->v_cache->type;
    const size_t v_stride = hl_row_size(type, a->v_cache->ne[0]);
    const uint8_t *v = (const uint8_t *)a->v_cache->data + (size_t)(t->row0[tok] + j0) * v_stride +
                       hl_row_size(type, (int64_t)kvh * hd);
    if (t->v_ops) {
        for (int64_t j = 0; j < n; j++) scores[j] *= inv;
        pv_rows(t, n, scores, probs, v, v_stride, out);
        return;
    }
    for (int64_t j = 0; j < n; j++) probs[j] = hl_fp32_to_fp16(scores[j] * inv);
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
    attn_task t = {args,        hl_cpu_kernels_for(b), NULL,     NULL,      cpu->scores,
                   cpu->probs,  cpu->limits.n_ctx,     cpu->pos, cpu->row0, cpu->run,
                   cpu->seq_end};
    if (args->k_cache->type != GGML_TYPE_F16) t.k_ops = hl_cpu_ops_for(b, args->k_cache->type);
    if (args->v_cache->type != GGML_TYPE_F16) t.v_ops = hl_cpu_ops_for(b, args->v_cache->type);
    hl_pool_run(cpu->pool, hl_pool_n_threads(cpu->pool), attn_run, &t);
}
