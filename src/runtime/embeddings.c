/* Embeddings of a context made with embeddings: the hidden states of a
 * batch's tokens (host_work->last, one row per token in batch order) and
 * their pooling per sequence (hearth_pooling_type: mean, first, last
 * token), scaled to unit L2 norm where embd_normalize says so, as
 * sentence-transformers' Pooling and Normalize modules compute them; or,
 * under pooling RANK, a reranker's classification head on each sequence's
 * first token, as llama.cpp's build_pooling (src/llama-graph.cpp) runs it
 * for bert-like models: x = tanh(cls x + cls_b) where the model has cls,
 * then cls_out x + cls_out_b where it has cls_out, n_cls_out raw scores
 * (Hugging Face's BertForSequenceClassification / RobertaClassificationHead). */
#include <math.h>
#include <string.h>

#include "model/model.h"
#include "quant/quant.h"
#include "runtime/context_impl.h"

/* Floats between two sequences' vectors in c->embd_seq: n_embd, or a
 * reranker's n_cls_out where that is more (context.c allocates the same). */
static size_t seq_stride(const hearth_context *c) {
    const hl_hparams *hp = &c->model->hp;
    return (size_t)(hp->n_cls_out > hp->n_embd ? hp->n_cls_out : hp->n_embd);
}

/* out[r] = w[r] . x (+ b[r]) for the n_rows rows of weight w {n_in, *}
 * (any type hearth dequantizes; each row converted into `row`), in double
 * as ggml's F32 dot products accumulate wide. */
static void head_matvec(const hl_tensor *w, const hl_tensor *b, const float *x, int64_t n_in, int64_t n_rows,
                        float *row, float *out) {
    const hl_quant_traits *q = hl_quant_get(w->type);
    const size_t row_bytes = hl_row_size(w->type, n_in);
    for (int64_t r = 0; r < n_rows; r++) {
        q->to_float((const uint8_t *)w->data + (size_t)r * row_bytes, row, n_in);
        double sum = 0.0;
        for (int64_t i = 0; i < n_in; i++) sum += (double)row[i] * x[i];
        out[r] = (float)sum + (b->data ? ((const float *)b->data)[r] : 0.0f);
    }
}

/* A sequence's scores from its first token's hidden state x (n_embd) into
 * out (n_cls_out floats); `scratch` holds 2 * n_embd floats. */
static void rank_head(const hearth_model *m, const float *x, float *scratch, float *out) {
    const int64_t n_embd = m->hp.n_embd, n_cls_out = m->hp.n_cls_out;
    float *row = scratch, *pooled = scratch + n_embd;
    if (m->cls.data) { /* the pooler: dense and tanh */
        head_matvec(&m->cls, &m->cls_b, x, n_embd, n_embd, row, pooled);
        for (int64_t i = 0; i < n_embd; i++) pooled[i] = tanhf(pooled[i]);
        x = pooled;
    }
    if (m->cls_out.data) head_matvec(&m->cls_out, &m->cls_out_b, x, n_embd, n_cls_out, row, out);
    else memcpy(out, x, (size_t)n_cls_out * sizeof *out); /* a head of cls alone: its first outputs */
}

void hl_context_pool(hearth_context *c, const hearth_batch *b) {
    const int32_t n_embd = c->model->hp.n_embd, pooling = c->params.pooling_type;
    const size_t stride = seq_stride(c);
    memset(c->embd_seq_ok, 0, c->params.n_seq_max);
    if (pooling == HEARTH_POOLING_NONE) return;
    const float *rows = c->work.last.data; /* every token is an output: row t is token t */
    uint32_t count[256] = {0};             /* tokens of each sequence so far (n_seq_max <= 256) */
    for (int32_t t = 0; t < b->n_tokens; t++) {
        const int32_t s = b->seq_id ? b->seq_id[t] : 0;
        float *out = c->embd_seq + (size_t)s * stride;
        const float *row = rows + (size_t)t * n_embd;
        const bool first = count[s]++ == 0;
        c->embd_seq_ok[s] = 1;
        if (pooling == HEARTH_POOLING_MEAN) {
            for (int32_t i = 0; i < n_embd; i++) out[i] = first ? row[i] : out[i] + row[i];
        } else if (pooling == HEARTH_POOLING_RANK) {
            /* scratch past the vectors (context.c sizes it for RANK) */
            if (first) rank_head(c->model, row, c->embd_seq + (size_t)c->params.n_seq_max * stride, out);
        } else if (pooling == HEARTH_POOLING_LAST || first) { /* CLS: the first token's, LAST: the last's */
            memcpy(out, row, (size_t)n_embd * sizeof *out);
        }
    }
    if (pooling == HEARTH_POOLING_RANK) return; /* raw scores, never normalised */
    for (uint32_t s = 0; s < c->params.n_seq_max; s++) {
        if (!c->embd_seq_ok[s]) continue;
        float *out = c->embd_seq + (size_t)s * stride;
        const float scale = pooling == HEARTH_POOLING_MEAN ? 1.0f / (float)count[s] : 1.0f;
        for (int32_t i = 0; i < n_embd; i++) out[i] *= scale;
        if (!c->params.embd_normalize) continue;
        double sum = 0.0;
        for (int32_t i = 0; i < n_embd; i++) sum += (double)out[i] * out[i];
        /* as torch.nn.functional.normalize: divided by max(norm, 1e-12) */
        const float inv = (float)(1.0 / (sqrt(sum) > 1e-12 ? sqrt(sum) : 1e-12));
        for (int32_t i = 0; i < n_embd; i++) out[i] *= inv;
    }
}

const float *hearth_get_embeddings_ith(const hearth_context *c, int32_t i) {
    if (!c || !c->params.embeddings || i < 0 || i >= c->n_last || c->out_row[i] < 0) return NULL;
    return (const float *)c->work.last.data + (size_t)c->out_row[i] * (size_t)c->model->hp.n_embd;
}

const float *hearth_get_embeddings_seq(const hearth_context *c, int32_t seq) {
    if (!c || !c->params.embeddings || seq < 0 || (uint32_t)seq >= c->params.n_seq_max || !c->embd_seq_ok[seq])
        return NULL;
    return c->embd_seq + (size_t)seq * seq_stride(c);
}
