/* Embeddings of a context made with embeddings: the hidden states of a
 * batch's tokens (host_work->last, one row per token in batch order) and
 * their pooling per sequence (hearth_pooling_type: mean, first, last
 * token), scaled to unit L2 norm where embd_normalize says so, as
 * sentence-transformers' Pooling and Normalize modules compute them. */
#include <math.h>
#include <string.h>

#include "runtime/context_impl.h"

void hl_context_pool(hearth_context *c, const hearth_batch *b) {
    const int32_t n_embd = c->model->hp.n_embd, pooling = c->params.pooling_type;
    memset(c->embd_seq_ok, 0, c->params.n_seq_max);
    if (pooling == HEARTH_POOLING_NONE) return;
    const float *rows = c->work.last.data; /* every token is an output: row t is token t */
    uint32_t count[256] = {0};             /* tokens of each sequence so far (n_seq_max <= 256) */
    for (int32_t t = 0; t < b->n_tokens; t++) {
        const int32_t s = b->seq_id ? b->seq_id[t] : 0;
        float *out = c->embd_seq + (size_t)s * n_embd;
        const float *row = rows + (size_t)t * n_embd;
        const bool first = count[s]++ == 0;
        c->embd_seq_ok[s] = 1;
        if (pooling == HEARTH_POOLING_MEAN) {
            for (int32_t i = 0; i < n_embd; i++) out[i] = first ? row[i] : out[i] + row[i];
        } else if (pooling == HEARTH_POOLING_LAST || first) { /* CLS: the first token's, LAST: the last's */
            memcpy(out, row, (size_t)n_embd * sizeof *out);
        }
    }
    for (uint32_t s = 0; s < c->params.n_seq_max; s++) {
        if (!c->embd_seq_ok[s]) continue;
        float *out = c->embd_seq + (size_t)s * n_embd;
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
    return c->embd_seq + (size_t)seq * (size_t)c->model->hp.n_embd;
}
