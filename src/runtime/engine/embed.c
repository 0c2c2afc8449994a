/* An embeddings engine (params.ctx.embeddings): hearth_engine_embed*()
 * queue one item per sequence and block; the engine thread's step takes the
 * waiting sequences first come first served, as many as fit in the slots
 * and one forward pass (n_batch and n_ubatch tokens: an encoder's sequence
 * must be whole in one pass, its attention being bidirectional), decodes
 * them as one batch (each sequence in its own slot, from position 0),
 * copies each pooled vector into its caller's buffer, clears the slots and
 * wakes the callers whose sequences are all done. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "runtime/engine/engine_impl.h"

bool hearth_engine_embeddings(const hearth_engine *e) { return e && e->embeddings; }

int32_t hearth_engine_pooling_type(const hearth_engine *e) { return e && e->embeddings ? e->pooling : -1; }

bool hl_embed_pending(const hearth_engine *e) { return e->ehead != NULL; }

/* Most tokens of one sequence (and of one step). */
static int32_t max_tokens(const hearth_engine *e) {
    return (uint32_t)e->n_embd_batch < e->n_ctx_seq ? e->n_embd_batch : (int32_t)e->n_ctx_seq;
}

/* Under mu: sequence s of its call is done with `st` (and the thread's
 * message when it failed). */
static void seq_done(hearth_engine *e, hl_embed_seq *s, hearth_status st, const char *msg) {
    hl_embed_call *c = s->call;
    if (st != HEARTH_OK && c->st == HEARTH_OK) {
        c->st = st;
        snprintf(c->err, sizeof c->err, "%s", msg);
    }
    if (--c->n_left == 0) pthread_cond_broadcast(&e->embed_done);
}

void hl_embed_step(hearth_engine *e) {
    hl_embed_seq *take[256];
    int32_t n_seq = 0, n = 0;
    const int32_t n_max = max_tokens(e), n_slots = e->n_slots < 256 ? e->n_slots : 256;
    pthread_mutex_lock(&e->mu);
    while (e->ehead && n_seq < n_slots && n + e->ehead->n_tokens <= n_max) {
        hl_embed_seq *s = e->ehead;
        e->ehead = s->next;
        if (!e->ehead) e->etail = NULL;
        take[n_seq++] = s;
        n += s->n_tokens;
    }
    pthread_mutex_unlock(&e->mu);
    if (n_seq == 0) return;
    int32_t k = 0;
    for (int32_t i = 0; i < n_seq; i++)
        for (int32_t t = 0; t < take[i]->n_tokens; t++, k++) {
            e->tok[k] = take[i]->tokens[t];
            e->pos[k] = t;
            e->seq[k] = i;
            e->want[k] = 1;
        }
    const double t0 = hl_now();
    const hearth_batch b = {.n_tokens = n, .token = e->tok, .pos = e->pos, .seq_id = e->seq, .logits = e->want};
    const hearth_status st = hearth_decode_batch(e->ctx, &b);
    char msg[512] = "";
    if (st != HEARTH_OK) snprintf(msg, sizeof msg, "the forward pass failed: %s", hearth_last_error());
    for (int32_t i = 0; i < n_seq && st == HEARTH_OK; i++) {
        const float *v = hearth_get_embeddings_seq(e->ctx, i);
        if (v) memcpy(take[i]->out, v, (size_t)e->n_embd * sizeof *v);
    }
    for (int32_t i = 0; i < n_seq; i++) hearth_kv_seq_rm(e->ctx, i, 0, -1);
    const double t = hl_now() - t0;
    pthread_mutex_lock(&e->mu);
    e->stats.n_prompt_tokens += (uint64_t)n;
    e->stats.prompt_seconds += t;
    for (int32_t i = 0; i < n_seq; i++) seq_done(e, take[i], st, msg);
    pthread_mutex_unlock(&e->mu);
}

void hl_embed_cancel_all(hearth_engine *e) {
    pthread_mutex_lock(&e->mu);
    for (hl_embed_seq *s = e->ehead, *next; s; s = next) {
        next = s->next;
        seq_done(e, s, HEARTH_ERR_CANCELLED, "the engine was freed before the embedding was computed");
    }
    e->ehead = e->etail = NULL;
    pthread_mutex_unlock(&e->mu);
}

void hl_embed_drain(hearth_engine *e) {
    pthread_mutex_lock(&e->mu);
    while (e->n_embed_callers > 0) pthread_cond_wait(&e->embed_done, &e->mu);
    pthread_mutex_unlock(&e->mu);
}

/* The checks of every sequence, before anything is queued. */
static hearth_status check(const hearth_engine *e, int32_t n_seqs, const int32_t *const *tokens,
                           const int32_t *n_tokens, const float *out) {
    if (!e) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_engine_embed: NULL engine");
    if (!e->embeddings)
        return hl_fail(HEARTH_ERR_INVALID_ARG,
                       "this engine generates text and does not compute embeddings: create it with "
                       "params.ctx.embeddings = true");
    if (e->pooling == HEARTH_POOLING_NONE)
        return hl_fail(HEARTH_ERR_INVALID_ARG,
                       "the engine's pooling is none (the model's file gives no pooling_type), so there is no "
                       "vector per input: create it with params.ctx.pooling_type mean, cls, last or rank");
    if (n_seqs <= 0 || !tokens || !n_tokens || !out)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_engine_embed: no input (n_seqs %d) or a NULL array",
                       (int)n_seqs);
    const int32_t n_vocab = hearth_model_n_vocab(e->model), n_max = max_tokens(e);
    for (int32_t i = 0; i < n_seqs; i++) {
        if (n_tokens[i] <= 0 || !tokens[i]) return hl_fail(HEARTH_ERR_INVALID_ARG, "input %d has no tokens", (int)i);
        if (n_tokens[i] > n_max)
            return hl_fail(HEARTH_ERR_INVALID_ARG,
                           "input %d is %d tokens and an embedding takes at most %d (%s): shorten the input", (int)i,
                           (int)n_tokens[i], (int)n_max,
                           (uint32_t)n_max == e->n_ctx_seq ? "the slot's context" : "a step's batch");
        for (int32_t t = 0; t < n_tokens[i]; t++)
            if (tokens[i][t] < 0 || tokens[i][t] >= n_vocab)
                return hl_fail(HEARTH_ERR_INVALID_ARG, "input %d: token %d is %d, outside the vocabulary [0, %d)",
                               (int)i, (int)t, (int)tokens[i][t], (int)n_vocab);
    }
    return HEARTH_OK;
}

hearth_status hearth_engine_embed_batch(hearth_engine *e, int32_t n_seqs, const int32_t *const *tokens,
                                        const int32_t *n_tokens, float *out) {
    HL_TRY(check(e, n_seqs, tokens, n_tokens, out));
    hl_embed_seq *items = hl_calloc((size_t)n_seqs, sizeof *items);
    if (!items) return HEARTH_ERR_OUT_OF_MEMORY;
    hl_embed_call call = {.n_left = n_seqs, .st = HEARTH_OK};
    for (int32_t i = 0; i < n_seqs; i++)
        items[i] = (hl_embed_seq){
            .call = &call, .tokens = tokens[i], .n_tokens = n_tokens[i], .out = out + (size_t)i * e->n_embd};
    pthread_mutex_lock(&e->mu);
    if (e->quit) {
        pthread_mutex_unlock(&e->mu);
        free(items);
        return hl_fail(HEARTH_ERR_CANCELLED, "the engine is being freed");
    }
    if (e->n_embed_callers >= e->n_queue_max + e->n_slots) {
        const int32_t n_callers = e->n_embed_callers;
        pthread_mutex_unlock(&e->mu);
        free(items);
        return hl_fail(HEARTH_ERR_BUSY, "the engine is busy: %d embedding calls are waiting; retry later",
                       (int)n_callers);
    }
    e->n_embed_callers++;
    for (int32_t i = 0; i < n_seqs; i++) {
        if (e->etail) e->etail->next = &items[i];
        else e->ehead = &items[i];
        e->etail = &items[i];
    }
    pthread_cond_signal(&e->wake);
    while (call.n_left > 0) pthread_cond_wait(&e->embed_done, &e->mu);
    e->n_embed_callers--;
    e->stats.n_requests++;
    pthread_cond_broadcast(&e->embed_done); /* hl_embed_drain() waits for the callers to leave */
    pthread_mutex_unlock(&e->mu);
    free(items);
    if (call.st != HEARTH_OK) return hl_fail(call.st, "%s", call.err);
    return HEARTH_OK;
}

hearth_status hearth_engine_embed(hearth_engine *e, const int32_t *tokens, int32_t n_tokens, float *out) {
    return hearth_engine_embed_batch(e, 1, &tokens, &n_tokens, out);
}
