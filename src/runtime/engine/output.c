/* A request's output, on the engine thread: sample its token from the
 * step's logits (with log-probabilities when asked), turn tokens into text
 * that is always whole UTF-8 characters (the streaming detokenizer) and
 * never shows any part of a stop string (text that could still begin one
 * is held back until it cannot), and deliver pieces to the request's
 * callback until its last one. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "runtime/engine/engine_impl.h"

/* Calls the request's callback; false: it asked to stop. */
static bool deliver(hl_slot *s, hearth_piece *pc) {
    const hl_request *r = s->req;
    pc->n_prompt = r->n_prompt;
    pc->n_cached = s->n_cached;
    pc->n_generated = s->n_generated;
    pc->id = r->id;
    return r->on_piece(pc, r->user);
}

/* Appends a token's text to the held text (growing it: a token's piece is
 * at most a few hundred bytes). False: out of memory. */
static bool hold(hl_slot *s, const char *text, size_t len) {
    if (len == 0) return true;
    if (s->n_hold + len > s->cap_hold) {
        size_t cap = 2 * (s->n_hold + len);
        char *p = realloc(s->hold, cap);
        if (!p) return false;
        s->hold = p;
        s->cap_hold = cap;
    }
    memcpy(s->hold + s->n_hold, text, len);
    s->n_hold += len;
    return true;
}

/* The detokenizer of the slot's request. */
static hearth_detok *detok_of(const hl_slot *s) { return s->req->detok ? s->req->detok : s->detok; }

/* With tools: the piece's text becomes what the parser gives as content
 * and the tool-call deltas join it. False: out of memory. */
static bool split_calls(hl_request *r, hearth_piece *pc, bool final) {
    if (!r->tools) return true;
    hl_tool_output o;
    if (hl_tool_parser_push(r->tools, pc->text, pc->len, final, &o) != HEARTH_OK) return false;
    pc->text = o.content;
    pc->len = o.content_len;
    pc->tool_calls = o.calls;
    pc->n_tool_calls = o.n_calls;
    return true;
}

void hl_slot_finish(hearth_engine *e, hl_slot *s, hearth_piece pc) {
    char tail[64];
    size_t n_tail = 0;
    /* what the detokenizer held (an unfinished character) joins the held text */
    if (hearth_detok_flush(detok_of(s), tail, sizeof tail, &n_tail) != HEARTH_OK || !hold(s, tail, n_tail)) n_tail = 0;
    pc.text = s->hold ? s->hold : "";
    pc.len = pc.finish == HEARTH_FINISH_ERROR ? 0 : s->n_hold;
    if (!split_calls(s->req, &pc, true)) {
        pc = (hearth_piece){.token = pc.token,
                            .text = "",
                            .finish = HEARTH_FINISH_ERROR,
                            .error = "out of memory splitting the text into tool calls"};
    }
    if (pc.finish == HEARTH_FINISH_STOP && s->req->tools && hl_tool_parser_n_calls(s->req->tools) > 0)
        pc.finish = HEARTH_FINISH_TOOL_CALLS;
    pthread_mutex_lock(&e->mu);
    e->stats.n_requests++;
    pthread_mutex_unlock(&e->mu);
    deliver(s, &pc);
    s->n_hold = 0;
    hl_request *r = s->req;
    pthread_mutex_lock(&e->mu);
    s->req = NULL;
    s->state = HEARTH_SLOT_IDLE;
    pthread_mutex_unlock(&e->mu);
    hl_request_free(r);
}

void hl_request_cancelled(hl_request *r) {
    const hearth_piece pc = {
        .text = "", .token = -1, .finish = HEARTH_FINISH_CANCELLED, .n_prompt = r->n_prompt, .id = r->id};
    r->on_piece(&pc, r->user);
}

/* log-softmax of the raw logits: the token's log-probability and the
 * n_top most likely tokens, most likely first (selection by insertion:
 * n_top <= 20). */
static float logprobs(const hearth_engine *e, const float *logits, int32_t token, int32_t n_top,
                      hearth_token_logprob *top) {
    const int32_t n = hearth_model_n_vocab(e->model);
    float max = logits[0];
    for (int32_t i = 1; i < n; i++) max = logits[i] > max ? logits[i] : max;
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++) sum += exp((double)logits[i] - max);
    const float lse = max + (float)log(sum);
    int32_t k = 0;
    for (int32_t i = 0; i < n && n_top > 0; i++) {
        if (k == n_top && logits[i] <= logits[top[k - 1].token]) continue;
        int32_t j = k < n_top ? k++ : k - 1;
        for (; j > 0 && logits[top[j - 1].token] < logits[i]; j--) top[j] = top[j - 1];
        top[j].token = i;
    }
    for (int32_t j = 0; j < k; j++) top[j].logprob = logits[top[j].token] - lse;
    return logits[token] - lse;
}

/* Where the held text t[0, n) must be cut so that what stays is whole
 * UTF-8 characters: back from `at` to the start of a character (the end is
 * one). */
static size_t char_start(const char *t, size_t n, size_t at) {
    while (at > 0 && at < n && ((unsigned char)t[at] & 0xC0) == 0x80) at--;
    return at;
}

/* Ends the held text where a stop string begins; the bytes the detokenizer
 * holds come after it and go too. */
static void cut_at_stop(hl_slot *s, long at) {
    char tail[64];
    size_t n;
    hearth_detok_flush(detok_of(s), tail, sizeof tail, &n);
    s->n_hold = char_start(s->hold, s->n_hold, (size_t)at);
}

/* Finds the first stop string in the held text: its offset, or -1 (*which:
 * the string); *keep gets how many bytes at the end could still begin one. */
static long find_stop(const hl_request *r, const char *t, size_t n, size_t *keep, const char **which) {
    long first = -1;
    *keep = 0;
    *which = NULL;
    for (size_t i = 0; i < r->n_stop; i++) {
        const char *s = r->stop[i];
        const size_t ls = strlen(s);
        for (size_t at = 0; at + ls <= n && (first < 0 || (long)at < first); at++)
            if (!memcmp(t + at, s, ls)) {
                first = (long)at;
                *which = s;
            }
        /* the longest end of t that is a proper beginning of s */
        for (size_t k = ls - 1 < n ? ls - 1 : n; k > *keep; k--)
            if (!memcmp(t + n - k, s, k)) {
                *keep = k;
                break;
            }
    }
    return first;
}

/* Delivers the token's piece: the held text that can no longer begin a
 * stop string, or the text before a stop string (finishing the request). */
static void emit(hearth_engine *e, hl_slot *s, hearth_piece *pc) {
    size_t keep;
    const long at = find_stop(s->req, s->hold, s->n_hold, &keep, &pc->stop);
    if (at >= 0) {
        cut_at_stop(s, at);
        pc->finish = HEARTH_FINISH_STOP;
        hl_slot_finish(e, s, *pc);
        return;
    }
    const size_t out = char_start(s->hold, s->n_hold, s->n_hold - keep);
    pc->text = s->hold;
    pc->len = out;
    if (!split_calls(s->req, pc, false)) {
        *pc = (hearth_piece){.token = pc->token,
                             .text = "",
                             .finish = HEARTH_FINISH_ERROR,
                             .error = "out of memory splitting the text into tool calls"};
        s->n_hold = 0;
        hl_slot_finish(e, s, *pc);
        return;
    }
    const bool go_on = deliver(s, pc);
    memmove(s->hold, s->hold + out, s->n_hold - out);
    s->n_hold -= out;
    if (!go_on) hl_slot_finish(e, s, (hearth_piece){.token = -1, .finish = HEARTH_FINISH_CANCELLED});
}

/* With context shift: makes room in a full slot by dropping half of what
 * follows its kept tokens (hearth_context_shift_half; n_keep after the BOS,
 * -1 the whole prompt). False when it cannot. */
static bool shift_slot(hearth_engine *e, hl_slot *s) {
    const hl_request *r = s->req;
    const uint32_t bos = r->prompt[0] == hearth_token_bos(e->model), n_prompt = (uint32_t)r->n_prompt;
    const uint32_t n_keep = e->n_keep < 0 || (uint32_t)e->n_keep + bos > n_prompt ? n_prompt
                                                                                  : (uint32_t)e->n_keep + bos;
    uint32_t n_discard;
    if (hearth_context_shift_half(e->ctx, s->seq, n_keep, &n_discard) != HEARTH_OK) return false;
    memmove(s->cache + n_keep, s->cache + n_keep + n_discard, (s->n_past - n_keep - n_discard) * sizeof *s->cache);
    s->n_past -= n_discard;
    s->n_exact = s->shifted && s->n_exact < n_keep ? s->n_exact : n_keep;
    s->shifted = true;
    return true;
}

void hl_slot_sample(hearth_engine *e, hl_slot *s, const float *logits) {
    hl_request *r = s->req;
    hearth_token_logprob top[HEARTH_MAX_TOP_LOGPROBS];
    const int32_t token = hearth_sampler_sample(r->smpl, logits);
    if (token == HEARTH_TOKEN_NONE) { /* the grammar admits no token: the text ends here */
        hl_slot_finish(e, s, (hearth_piece){.token = -1, .finish = HEARTH_FINISH_GRAMMAR});
        return;
    }
    hearth_piece pc = {.token = token, .text = "", .n_top = r->top_logprobs, .top = top};
    if (r->logprobs) pc.logprob = logprobs(e, logits, token, r->top_logprobs, top);

    const double now = hl_now();
    pthread_mutex_lock(&e->mu);
    if (s->n_generated == 0) hl_hist_observe(&e->stats.ttft, now - r->t_submit);
    else hl_hist_observe(&e->stats.inter_token, now - r->t_last);
    e->stats.n_generated_tokens++;
    pthread_mutex_unlock(&e->mu);
    r->t_last = now;
    s->n_generated++;

    if (!r->ignore_eos && hearth_token_is_eog(e->model, token)) {
        pc.finish = HEARTH_FINISH_STOP;
        hl_slot_finish(e, s, pc);
        return;
    }
    char text[1024];
    size_t len = 0;
    if (hearth_detok_push(detok_of(s), token, text, sizeof text, &len) != HEARTH_OK || !hold(s, text, len)) {
        pc.finish = HEARTH_FINISH_ERROR;
        pc.error = "out of memory for the request's text";
        hl_slot_finish(e, s, pc);
        return;
    }
    const bool done = r->max_tokens >= 0 && s->n_generated >= r->max_tokens;
    /* no cell left to decode the token in, unless a shift makes one */
    const bool full = !done && s->n_past >= e->n_ctx_seq && !(e->context_shift && shift_slot(e, s));
    const bool length = done || full;
    if (length) {
        /* the last token: a stop string in the held text still wins */
        size_t keep;
        const long at = find_stop(r, s->hold, s->n_hold, &keep, &pc.stop);
        if (at >= 0) cut_at_stop(s, at);
        pc.finish = at >= 0 ? HEARTH_FINISH_STOP : HEARTH_FINISH_LENGTH;
        hl_slot_finish(e, s, pc);
        return;
    }
    s->next = token;
    emit(e, s, &pc);
}
