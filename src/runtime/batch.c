/* Decoding and the sequences of the KV cache. A context's cache holds
 * n_seq_max sequences, each owning n_ctx_seq consecutive cells of every
 * layer's cache (sequence s: rows [s * n_ctx_seq, (s + 1) * n_ctx_seq)), so
 * a token's place is its sequence's first row plus its position, and
 * attention reads only its own sequence's rows. A batch mixes tokens of any
 * sequences in one forward pass (hl_model_forward): every weight matrix is
 * multiplied once with all of them. A batch of more than n_ubatch tokens
 * runs as consecutive passes of n_ubatch (llama.cpp's ubatches), each
 * pass's logits rows after the earlier ones'. hearth_decode() is the
 * one-sequence case (sequence 0). */
#include <string.h>

#include "backend/ops.h"
#include "base/status.h"
#include "runtime/context_impl.h"

uint32_t hearth_context_n_ctx(const hearth_context *c) { return c->params.n_ctx; }
uint32_t hearth_context_n_ctx_seq(const hearth_context *c) { return c->n_ctx_seq; }
uint32_t hearth_context_n_seq_max(const hearth_context *c) { return c->params.n_seq_max; }
bool hearth_context_flash_attn(const hearth_context *c) { return c->params.flash_attn == HEARTH_FLASH_ATTN_ON; }
uint32_t hearth_context_n_past(const hearth_context *c) { return c->seq_len[0]; }

uint32_t hearth_kv_seq_len(const hearth_context *c, int32_t seq) {
    return c && seq >= 0 && (uint32_t)seq < c->params.n_seq_max ? c->seq_len[seq] : 0;
}

void hearth_context_reset(hearth_context *c) {
    memset(c->seq_len, 0, c->params.n_seq_max * sizeof *c->seq_len);
    c->last_row = -1;
    c->n_last = 0;
}

void hearth_context_truncate(hearth_context *c, uint32_t n_past) {
    if (n_past < c->seq_len[0]) c->seq_len[0] = n_past;
}

/* Runs the n tokens of a planned batch (c->pos, row0; c->out its n_out
 * output tokens, ascending) in passes of at most n_ubatch tokens; the
 * output rows then hold their logits in batch order. Rewrites c->out. */
static hearth_status run_batch(hearth_context *c, const int32_t *tokens, int32_t n, int32_t n_out) {
    int32_t o = 0;
    for (int32_t t0 = 0; t0 < n; t0 += (int32_t)c->params.n_ubatch) {
        const int32_t m = n - t0 < (int32_t)c->params.n_ubatch ? n - t0 : (int32_t)c->params.n_ubatch;
        const int32_t o0 = o;
        for (; o < n_out && c->out[o] < t0 + m; o++) c->out[o] -= t0; /* the pass's own indices */
        const hl_pass pass = {.tokens = tokens + t0,
                              .pos = c->pos + t0,
                              .row0 = c->row0 + t0,
                              .n = m,
                              .out = c->out + o0,
                              .n_out = o - o0,
                              .out_row0 = o0,
                              .embd = c->params.embeddings};
        HL_TRY(hl_model_forward(c->model, &c->pipe, &pass));
    }
    return HEARTH_OK;
}

static hearth_status check_tokens(const hearth_context *c, const int32_t *tokens, uint32_t n) {
    const int32_t n_vocab = c->model->hp.n_vocab;
    for (uint32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= n_vocab)
            return hl_fail(HEARTH_ERR_INVALID_ARG, "token %u has id %d, outside the vocabulary [0, %d)", i,
                           (int)tokens[i], (int)n_vocab);
    return HEARTH_OK;
}

hearth_status hearth_decode(hearth_context *c, const int32_t *tokens, uint32_t n_tokens) {
    if (!c || !tokens || n_tokens == 0) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_decode: no tokens given");
    if (c->params.embeddings) /* every token an output: one batch of sequence 0 */
        return hearth_decode_batch(c, &(hearth_batch){.n_tokens = (int32_t)n_tokens, .token = tokens});
    HL_TRY(check_tokens(c, tokens, n_tokens));
    if ((uint64_t)c->seq_len[0] + n_tokens > c->n_ctx_seq)
        return hl_fail(
            HEARTH_ERR_CONTEXT_FULL,
            "%u tokens do not fit: %u already in the context of n_ctx %u; raise n_ctx (-c) or use fewer tokens",
            n_tokens, c->seq_len[0], c->n_ctx_seq);
    c->n_last = 0;
    c->last_row = -1;
    for (uint32_t done = 0; done < n_tokens;) {
        const uint32_t n = n_tokens - done < c->params.n_ubatch ? n_tokens - done : c->params.n_ubatch;
        for (uint32_t t = 0; t < n; t++) {
            c->pos[t] = (int32_t)(c->seq_len[0] + t);
            c->row0[t] = 0;
        }
        const bool last = done + n == n_tokens;
        c->out[0] = (int32_t)n - 1;
        HL_TRY(run_batch(c, tokens + done, (int32_t)n, last ? 1 : 0));
        c->seq_len[0] += n;
        done += n;
    }
    c->last_row = 0;
    return HEARTH_OK;
}

/* Checks a batch and lays it out in c->pos, row0, out, out_row; changes no
 * sequence. *n_out gets the output tokens. */
static hearth_status plan_batch(hearth_context *c, const hearth_batch *b, int32_t *n_out) {
    const uint32_t n_seq = c->params.n_seq_max;
    if (b->n_tokens <= 0 || (uint32_t)b->n_tokens > c->params.n_batch)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "a batch holds 1 to n_batch = %u tokens (got %d)", c->params.n_batch,
                       (int)b->n_tokens);
    HL_TRY(check_tokens(c, b->token, (uint32_t)b->n_tokens));
    *n_out = 0;
    for (int32_t t = 0; t < b->n_tokens; t++) {
        const int32_t s = b->seq_id ? b->seq_id[t] : 0;
        if (s < 0 || (uint32_t)s >= n_seq)
            return hl_fail(HEARTH_ERR_INVALID_ARG,
                           "token %d of the batch is in sequence %d, outside [0, n_seq_max = %u)", (int)t, (int)s,
                           n_seq);
        /* the position this token must take if it continues its sequence in the batch */
        int32_t expect = (int32_t)c->seq_len[s], first = 1;
        for (int32_t u = t - 1; u >= 0; u--)
            if ((b->seq_id ? b->seq_id[u] : 0) == s) {
                expect = c->pos[u] + 1;
                first = 0;
                break;
            }
        const int32_t p = b->pos ? b->pos[t] : expect;
        if (p < 0 || (first ? p > expect : p != expect))
            return hl_fail(HEARTH_ERR_INVALID_ARG,
                           "token %d of the batch has position %d in sequence %d, which holds %d tokens: positions "
                           "must continue the sequence without gaps or repeats",
                           (int)t, (int)p, (int)s, first ? (int)c->seq_len[s] : (int)expect);
        if ((uint32_t)p >= c->n_ctx_seq)
            return hl_fail(HEARTH_ERR_CONTEXT_FULL,
                           "sequence %d would need position %d but holds %u positions (n_ctx %u / n_seq_max %u): "
                           "raise n_ctx or use fewer tokens",
                           (int)s, (int)p, c->n_ctx_seq, c->params.n_ctx, n_seq);
        c->pos[t] = p;
        c->row0[t] = s * (int32_t)c->n_ctx_seq;
        const bool wants = c->params.embeddings || (b->logits ? b->logits[t] != 0 : t == b->n_tokens - 1);
        c->out_row[t] = -1;
        if (!wants) continue;
        if ((uint32_t)*n_out >= c->n_out_max)
            return hl_fail(HEARTH_ERR_INVALID_ARG,
                           "more than %u tokens of the batch ask for logits (the context keeps "
                           "min(n_seq_max, n_batch) per batch)",
                           c->n_out_max);
        c->out_row[t] = *n_out;
        c->out[(*n_out)++] = t;
    }
    return HEARTH_OK;
}

hearth_status hearth_decode_batch(hearth_context *c, const hearth_batch *b) {
    if (!c || !b || !b->token) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_decode_batch: NULL context or batch");
    int32_t n_out = 0;
    c->n_last = 0;
    c->last_row = -1;
    HL_TRY(plan_batch(c, b, &n_out));
    /* a position below a sequence's length drops the cells from it on: the
     * first token of each sequence in the batch cuts it there */
    for (int32_t t = 0; t < b->n_tokens; t++) {
        const int32_t s = c->row0[t] / (int32_t)c->n_ctx_seq;
        if ((uint32_t)c->pos[t] < c->seq_len[s]) c->seq_len[s] = (uint32_t)c->pos[t];
    }
    HL_TRY(run_batch(c, b->token, b->n_tokens, n_out));
    for (int32_t t = 0; t < b->n_tokens; t++) {
        const int32_t s = c->row0[t] / (int32_t)c->n_ctx_seq;
        if ((uint32_t)c->pos[t] + 1 > c->seq_len[s]) c->seq_len[s] = (uint32_t)c->pos[t] + 1;
    }
    c->n_last = b->n_tokens;
    c->last_row = n_out - 1;
    if (c->params.embeddings) hl_context_pool(c, b);
    return HEARTH_OK;
}

const float *hearth_get_logits(const hearth_context *c) {
    return c && !c->params.embeddings && c->last_row >= 0
               ? (const float *)c->work.logits.data + (size_t)c->last_row * c->work.logits.ne[0]
               : NULL;
}

const float *hearth_get_logits_ith(const hearth_context *c, int32_t i) {
    if (!c || c->params.embeddings || i < 0 || i >= c->n_last || c->out_row[i] < 0) return NULL;
    return (const float *)c->work.logits.data + (size_t)c->out_row[i] * c->work.logits.ne[0];
}

static hearth_status check_seq(const hearth_context *c, int32_t seq, const char *what) {
    if ((uint32_t)seq >= c->params.n_seq_max)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "%s: sequence %d is outside [0, n_seq_max = %u)", what, (int)seq,
                       c->params.n_seq_max);
    return HEARTH_OK;
}

hearth_status hearth_kv_seq_rm(hearth_context *c, int32_t seq, int32_t p0, int32_t p1) {
    if (!c || p0 < 0) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_kv_seq_rm: NULL context or p0 < 0");
    const int32_t s0 = seq < 0 ? 0 : seq, s1 = seq < 0 ? (int32_t)c->params.n_seq_max : seq + 1;
    if (seq >= 0) HL_TRY(check_seq(c, seq, "hearth_kv_seq_rm"));
    for (int32_t s = s0; s < s1; s++)
        if (p1 >= 0 && (uint32_t)p1 < c->seq_len[s] && p1 > p0)
            return hl_fail(HEARTH_ERR_UNSUPPORTED,
                           "removing positions [%d, %d) of sequence %d would leave a hole in "
                           "its %u tokens: only the end of a sequence can be removed",
                           (int)p0, (int)p1, (int)s, c->seq_len[s]);
    for (int32_t s = s0; s < s1; s++)
        if ((uint32_t)p0 < c->seq_len[s] && (p1 < 0 || p1 > p0)) c->seq_len[s] = (uint32_t)p0;
    return HEARTH_OK;
}

hearth_status hearth_kv_seq_cp(hearth_context *c, int32_t src, int32_t dst, int32_t n) {
    if (!c) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_kv_seq_cp: NULL context");
    HL_TRY(check_seq(c, src, "hearth_kv_seq_cp"));
    HL_TRY(check_seq(c, dst, "hearth_kv_seq_cp"));
    if (src == dst)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_kv_seq_cp: source and destination are sequence %d", (int)src);
    if (n < 0) n = (int32_t)c->seq_len[src];
    if ((uint32_t)n > c->seq_len[src])
        return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_kv_seq_cp: sequence %d holds %u tokens, fewer than %d", (int)src,
                       c->seq_len[src], (int)n);
    const hearth_model *m = c->model;
    c->seq_len[dst] = 0; /* until the copy is complete */
    for (int32_t il = 0; il < m->hp.n_layer; il++) {
        hl_backend *b = hl_context_layer_backend(c, il);
        hl_tensor *caches[2] = {&c->k_cache[il], &c->v_cache[il]};
        for (int k = 0; k < 2; k++) {
            const size_t row = hl_tensor_nbytes(caches[k]) / (size_t)caches[k]->ne[1];
            uint8_t *base = caches[k]->data;
            HL_TRY(hl_copy(b, base + (size_t)dst * c->n_ctx_seq * row, base + (size_t)src * c->n_ctx_seq * row,
                           (size_t)n * row));
        }
    }
    for (int d = 0; d < HL_MAX_GPUS; d++)
        if (c->gpu[d]) HL_TRY(hl_synchronize(c->gpu[d]));
    c->seq_len[dst] = (uint32_t)n;
    return HEARTH_OK;
}
