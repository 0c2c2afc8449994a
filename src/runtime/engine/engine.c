/* The engine: hearth's one scheduler. A thread runs steps over one context
 * whose n_seq_max sequences are the slots. A step
 *   1. ends the requests cancelled since the last step and gives the
 *      waiting requests the free slots, each the slot whose cache shares
 *      the longest prefix with its prompt (or a copy of a busy slot's
 *      prefix), so only the tokens past it are decoded;
 *   2. builds one batch: the last sampled token of every generating slot,
 *      then chunks of the prompts being read, first come first served,
 *      under a token budget (continuous batching with chunked prefill);
 *   3. runs it (one forward pass, hearth_decode_batch) and samples a token
 *      for every slot whose logits came out, delivering pieces.
 * While streams are generating, a step's prompt chunk is sized from the
 * measured costs so that the step takes about twice a decode-only step: a
 * long prompt being read slows the running streams by at most that much
 * (Sarathi-Serve's stall-free batching, Agrawal et al. 2024, with a time
 * budget instead of a fixed token budget). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "runtime/engine/engine_impl.h"
#include "text/jinja/jinja.h"

/* A prompt chunk beside running streams costs at most this share of a
 * decode-only step (the step then takes <= 1 + PREFILL_SHARE times as long),
 * and is at least MIN_CHUNK tokens so that a prompt always advances. */
#define PREFILL_SHARE 0.8
#define MIN_CHUNK 4
#define EMA 0.25 /* weight of the newest measurement */

hearth_engine_params hearth_engine_default_params(void) {
    hearth_engine_params p = {.ctx = hearth_context_default_params(), .n_queue_max = 64};
    p.ctx.n_seq_max = 4;
    return p;
}

const hearth_model *hearth_engine_model(const hearth_engine *e) { return e ? e->model : NULL; }

uint32_t hearth_engine_n_ctx_seq(const hearth_engine *e) { return e ? e->n_ctx_seq : 0; }

void hearth_engine_stats_get(hearth_engine *e, hearth_engine_stats *out) {
    if (!e || !out) return;
    pthread_mutex_lock(&e->mu);
    *out = e->stats;
    out->n_waiting = e->n_waiting;
    pthread_mutex_unlock(&e->mu);
}

void hearth_engine_slots(hearth_engine *e, hearth_slot_info *out, size_t n_max, size_t *n) {
    if (!e) return;
    pthread_mutex_lock(&e->mu);
    for (size_t i = 0; out && i < n_max && i < (size_t)e->n_slots; i++) out[i] = e->info[i];
    pthread_mutex_unlock(&e->mu);
    if (n) *n = (size_t)e->n_slots;
}

/* ------------------------------------------------------------ placing -- */

static uint32_t common_prefix(const int32_t *a, uint32_t na, const int32_t *b, uint32_t nb) {
    uint32_t i = 0;
    while (i < na && i < nb && a[i] == b[i]) i++;
    return i;
}

/* Puts r into the idle slot whose cache shares the longest prefix with its
 * prompt (the least recently used among equals); when a busy slot shares a
 * longer one, its cells are copied over. At least the prompt's last token
 * is decoded again: its logits give the first token. */
static void place(hearth_engine *e, hl_request *r) {
    hl_slot *idle = NULL, *busy = NULL;
    uint32_t n_idle = 0, n_busy = 0;
    for (int32_t i = 0; i < e->n_slots; i++) {
        hl_slot *s = &e->slots[i];
        const uint32_t n = common_prefix(s->cache, s->shifted ? s->n_exact : s->n_past, (const int32_t *)r->prompt,
                                         (uint32_t)r->n_prompt);
        if (!s->req && (!idle || n > n_idle || (n == n_idle && s->last_used < idle->last_used))) {
            idle = s;
            n_idle = n;
        } else if (s->req && n > n_busy) {
            busy = s;
            n_busy = n;
        }
    }
    uint32_t keep = n_idle;
    if (busy && n_busy > n_idle) {
        if (hearth_kv_seq_cp(e->ctx, busy->seq, idle->seq, (int32_t)n_busy) == HEARTH_OK) {
            memcpy(idle->cache, busy->cache, n_busy * sizeof *idle->cache);
            keep = n_busy;
        } else {
            keep = 0; /* the copy failed part way: the destination holds nothing */
        }
    }
    if (keep > (uint32_t)r->n_prompt - 1) keep = (uint32_t)r->n_prompt - 1;
    hearth_kv_seq_rm(e->ctx, idle->seq, (int32_t)keep, -1);
    idle->n_past = keep;
    idle->shifted = false; /* keep is within the exact prefix */
    idle->n_cached = (int32_t)keep;
    idle->n_generated = 0;
    idle->n_hold = 0;
    idle->cancel = false;
    for (int32_t i = 0; i < r->n_prompt; i++) hearth_sampler_accept(r->smpl, r->prompt[i]);
    pthread_mutex_lock(&e->mu); /* hearth_engine_cancel() reads s->req */
    idle->req = r;
    idle->state = HEARTH_SLOT_PREFILL;
    e->stats.n_cached_tokens += keep;
    pthread_mutex_unlock(&e->mu);
}

/* ------------------------------------------------------------- a step -- */

/* Prompt tokens that fit beside n_gen generating streams this step. */
static int32_t prompt_budget(const hearth_engine *e, int32_t n_gen) {
    int32_t budget = e->n_batch - n_gen;
    if (n_gen == 0 || e->cost.decode_step <= 0 || e->cost.prompt_token <= 0) return budget;
    const double chunk = PREFILL_SHARE * e->cost.decode_step / e->cost.prompt_token;
    const int32_t c = chunk < MIN_CHUNK ? MIN_CHUNK : chunk > budget ? budget : (int32_t)chunk;
    return c < budget ? c : budget;
}

static void add(hearth_engine *e, int32_t *n, const hl_slot *s, int32_t token, uint32_t pos, bool want) {
    e->tok[*n] = token;
    e->pos[*n] = (int32_t)pos;
    e->seq[*n] = s->seq;
    e->want[*n] = want;
    (*n)++;
}

/* The prompt-reading slot that came first (lowest request id) and is not
 * yet in the batch, or NULL. */
static hl_slot *next_prefill(hearth_engine *e) {
    hl_slot *best = NULL;
    for (int32_t i = 0; i < e->n_slots; i++) {
        hl_slot *s = &e->slots[i];
        if (s->req && s->state == HEARTH_SLOT_PREFILL && s->out == -2 && (!best || s->req->id < best->req->id))
            best = s;
    }
    return best;
}

/* Lays out the step's batch; returns its token count and the prompt
 * tokens among them. */
static int32_t build_batch(hearth_engine *e, int32_t *n_prompt) {
    int32_t n = 0;
    for (int32_t i = 0; i < e->n_slots; i++) {
        hl_slot *s = &e->slots[i];
        s->out = s->req && s->state == HEARTH_SLOT_PREFILL ? -2 : -1; /* -2: prefill not yet placed */
        if (s->req && s->state == HEARTH_SLOT_GENERATE && !s->paused) {
            s->out = n;
            add(e, &n, s, s->next, s->n_past, true);
        }
    }
    const int32_t n_gen = n;
    int32_t budget = prompt_budget(e, n_gen);
    for (hl_slot *s; budget > 0 && (s = next_prefill(e));) {
        const int32_t left = s->req->n_prompt - (int32_t)s->n_past, take = left < budget ? left : budget;
        for (int32_t k = 0; k < take; k++) add(e, &n, s, s->req->prompt[s->n_past + k], s->n_past + k, k == left - 1);
        s->out = take == left ? n - 1 : -1;
        budget -= take;
    }
    for (int32_t i = 0; i < e->n_slots; i++)
        if (e->slots[i].out == -2) e->slots[i].out = -1;
    *n_prompt = n - n_gen;
    return n;
}

/* Every slot of a failed batch ends with the error; each keeps the cells
 * the context kept. */
static void fail_batch(hearth_engine *e, int32_t n) {
    char msg[512];
    snprintf(msg, sizeof msg, "the forward pass failed: %s", hearth_last_error());
    for (int32_t i = 0; i < e->n_slots; i++) {
        hl_slot *s = &e->slots[i];
        bool in_batch = false;
        for (int32_t t = 0; t < n && !in_batch; t++) in_batch = e->seq[t] == s->seq;
        s->n_past = hearth_kv_seq_len(e->ctx, s->seq);
        if (s->req && in_batch)
            hl_slot_finish(e, s, (hearth_piece){.token = -1, .finish = HEARTH_FINISH_ERROR, .error = msg});
    }
}

static void update_costs(hearth_engine *e, double t, int32_t n_gen, int32_t n_prompt) {
    hl_step_cost *c = &e->cost;
    if (n_prompt == 0) {
        c->decode_step = c->decode_step > 0 ? (1 - EMA) * c->decode_step + EMA * t : t;
        return;
    }
    const double per = (t - (n_gen ? c->decode_step : 0)) / n_prompt;
    if (per > 0) c->prompt_token = c->prompt_token > 0 ? (1 - EMA) * c->prompt_token + EMA * per : per;
}

static void step(hearth_engine *e) {
    int32_t n_prompt;
    const int32_t n = build_batch(e, &n_prompt);
    if (n == 0) return;
    const double t0 = hl_now();
    const hearth_batch b = {.n_tokens = n, .token = e->tok, .pos = e->pos, .seq_id = e->seq, .logits = e->want};
    if (hearth_decode_batch(e->ctx, &b) != HEARTH_OK) {
        fail_batch(e, n);
        return;
    }
    const double t = hl_now() - t0;
    update_costs(e, t, n - n_prompt, n_prompt);
    pthread_mutex_lock(&e->mu);
    e->stats.n_prompt_tokens += (uint64_t)n_prompt;
    e->stats.prompt_seconds += t * n_prompt / n;
    e->stats.generation_seconds += t * (n - n_prompt) / n;
    pthread_mutex_unlock(&e->mu);
    for (int32_t k = 0; k < n; k++) {
        hl_slot *s = &e->slots[e->seq[k]];
        s->cache[e->pos[k]] = e->tok[k];
        s->n_past = (uint32_t)e->pos[k] + 1;
        s->last_used = e->step;
    }
    for (int32_t i = 0; i < e->n_slots; i++) {
        hl_slot *s = &e->slots[i];
        if (!s->req || s->out < 0) continue;
        if (s->state == HEARTH_SLOT_PREFILL) {
            pthread_mutex_lock(&e->mu);
            s->state = HEARTH_SLOT_GENERATE;
            pthread_mutex_unlock(&e->mu);
        }
        hl_slot_sample(e, s, hearth_get_logits_ith(e->ctx, s->out));
    }
}

/* ---------------------------------------------------------- the thread -- */

/* Under mu: whether a step has anything to do: a slot that runs (a paused
 * request that has read its prompt waits for its resume or cancel), a
 * waiting request and a free slot for it, or a waiting request to cancel. */
static bool has_work(const hearth_engine *e) {
    if (hl_embed_pending(e)) return true;
    bool free_slot = false;
    for (int32_t i = 0; i < e->n_slots; i++) {
        const hl_slot *s = &e->slots[i];
        if (!s->req) free_slot = true;
        else if (!s->req->paused || s->req->cancel || s->state == HEARTH_SLOT_PREFILL) return true;
    }
    for (const hl_request *r = e->head; r; r = r->next)
        if (free_slot || r->cancel) return true;
    return false;
}

/* Under mu: the slots' state for hearth_engine_slots() and the counters. */
static void publish(hearth_engine *e) {
    int32_t running = 0;
    uint32_t used = 0;
    for (int32_t i = 0; i < e->n_slots; i++) {
        const hl_slot *s = &e->slots[i];
        const hl_request *r = s->req;
        running += r != NULL;
        used += s->n_past;
        e->info[i] = (hearth_slot_info){.id = i,
                                        .state = r ? s->state : HEARTH_SLOT_IDLE,
                                        .request_id = r ? r->id : 0,
                                        .n_prompt = r ? r->n_prompt : 0,
                                        .n_cached = r ? s->n_cached : 0,
                                        .n_generated = r ? s->n_generated : 0,
                                        .n_past = s->n_past,
                                        .n_ctx = e->n_ctx_seq};
    }
    e->stats.n_running = running;
    e->n_idle = e->n_slots - running;
    e->stats.kv_used = used;
}

/* Under mu: unlinks the waiting requests flagged for cancelling (all of
 * them when `all`) into a list. */
static hl_request *take_cancelled(hearth_engine *e, bool all) {
    hl_request *out = NULL, **link = &e->head;
    e->tail = NULL;
    while (*link) {
        hl_request *r = *link;
        if (all || r->cancel) {
            *link = r->next;
            r->next = out;
            out = r;
            e->n_waiting--;
        } else {
            e->tail = r;
            link = &r->next;
        }
    }
    return out;
}

static void cancel_list(hearth_engine *e, hl_request *r) {
    while (r) {
        hl_request *next = r->next;
        hl_request_cancelled(r);
        hl_request_free(r);
        pthread_mutex_lock(&e->mu);
        e->stats.n_requests++;
        pthread_mutex_unlock(&e->mu);
        r = next;
    }
}

static void *run(void *arg) {
    hearth_engine *e = arg;
    hl_request **admit = e->admit;
    for (;;) {
        pthread_mutex_lock(&e->mu);
        while (!e->quit && !has_work(e)) pthread_cond_wait(&e->wake, &e->mu);
        if (e->quit) {
            pthread_mutex_unlock(&e->mu);
            break;
        }
        if (e->embeddings) { /* only embedding sequences reach an embeddings engine */
            pthread_mutex_unlock(&e->mu);
            hl_embed_step(e);
            continue;
        }
        hl_request *cancelled = take_cancelled(e, false);
        int32_t n_admit = 0;
        for (int32_t i = 0; i < e->n_slots; i++) {
            hl_slot *s = &e->slots[i];
            if (s->req) s->cancel = s->req->cancel, s->paused = s->req->paused;
            else if (e->head) admit[n_admit++] = hl_queue_pop(e);
        }
        pthread_mutex_unlock(&e->mu);
        cancel_list(e, cancelled);
        for (int32_t i = 0; i < e->n_slots; i++)
            if (e->slots[i].req && e->slots[i].cancel)
                hl_slot_finish(e, &e->slots[i], (hearth_piece){.token = -1, .finish = HEARTH_FINISH_CANCELLED});
        for (int32_t i = 0; i < n_admit; i++) place(e, admit[i]);
        e->step++;
        step(e);
        pthread_mutex_lock(&e->mu);
        publish(e);
        pthread_mutex_unlock(&e->mu);
    }
    /* freed: every request still here ends cancelled */
    hl_embed_cancel_all(e);
    pthread_mutex_lock(&e->mu);
    hl_request *left = take_cancelled(e, true);
    pthread_mutex_unlock(&e->mu);
    cancel_list(e, left);
    for (int32_t i = 0; i < e->n_slots; i++)
        if (e->slots[i].req)
            hl_slot_finish(e, &e->slots[i], (hearth_piece){.token = -1, .finish = HEARTH_FINISH_CANCELLED});
    return NULL;
}

/* ---------------------------------------------------- creation and end -- */

static void release(hearth_engine *e) {
    for (int32_t i = 0; e->slots && i < e->n_slots; i++) {
        free(e->slots[i].cache);
        free(e->slots[i].hold);
        hearth_detok_free(e->slots[i].detok);
    }
    free(e->slots);
    free(e->info);
    free(e->tok);
    free(e->pos);
    free(e->seq);
    free(e->want);
    free(e->admit);
    free(e->chat_template);
    hearth_context_free(e->ctx);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->wake);
    pthread_cond_destroy(&e->embed_done);
    free(e);
}

static hearth_status copy_template(hearth_engine *e, const char *tmpl) {
    if (!tmpl) return HEARTH_OK;
    hl_jinja_tmpl *t;
    HL_TRY(hl_jinja_parse(tmpl, strlen(tmpl), &t));
    hl_jinja_tmpl_free(t);
    const size_t len = strlen(tmpl);
    e->chat_template = hl_malloc(len + 1);
    if (!e->chat_template) return HEARTH_ERR_OUT_OF_MEMORY;
    memcpy(e->chat_template, tmpl, len + 1);
    return HEARTH_OK;
}

static hearth_status alloc_slots(hearth_engine *e) {
    const size_t nb = (size_t)e->n_batch, ns = (size_t)e->n_slots;
    e->slots = hl_calloc(ns, sizeof *e->slots);
    e->info = hl_calloc(ns, sizeof *e->info);
    e->tok = hl_malloc(nb * sizeof *e->tok);
    e->pos = hl_malloc(nb * sizeof *e->pos);
    e->seq = hl_malloc(nb * sizeof *e->seq);
    e->want = hl_malloc(nb * sizeof *e->want);
    e->admit = hl_malloc(ns * sizeof(hl_request *));
    if (!e->slots || !e->info || !e->tok || !e->pos || !e->seq || !e->want || !e->admit)
        return HEARTH_ERR_OUT_OF_MEMORY;
    for (int32_t i = 0; i < e->n_slots; i++) {
        hl_slot *s = &e->slots[i];
        s->seq = i;
        s->cache = hl_malloc(e->n_ctx_seq * sizeof *s->cache);
        if (!s->cache) return HEARTH_ERR_OUT_OF_MEMORY;
        HL_TRY(hearth_detok_init(e->model, false, &s->detok));
    }
    return HEARTH_OK;
}

static hearth_status setup(hearth_engine *e, hearth_model *model, const hearth_engine_params *p) {
    if (p->n_queue_max < 0)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "n_queue_max must be >= 0 (got %d)", (int)p->n_queue_max);
    HL_TRY(copy_template(e, p->chat_template));
    HL_TRY(hearth_context_init(model, &p->ctx, &e->ctx));
    e->n_slots = (int32_t)hearth_context_n_seq_max(e->ctx);
    e->n_ctx_seq = hearth_context_n_ctx_seq(e->ctx);
    /* the context may have lowered n_batch to n_ctx */
    e->n_batch = (int32_t)(p->ctx.n_batch < hearth_context_n_ctx(e->ctx) ? p->ctx.n_batch
                                                                         : hearth_context_n_ctx(e->ctx));
    e->n_queue_max = p->n_queue_max;
    e->context_shift = p->context_shift;
    e->n_keep = p->n_keep;
    e->n_idle = e->n_slots;
    e->embeddings = p->ctx.embeddings;
    e->pooling = p->ctx.pooling_type == HEARTH_POOLING_UNSPECIFIED ? hearth_model_pooling_type(model)
                                                                   : p->ctx.pooling_type;
    e->n_embd = e->pooling == HEARTH_POOLING_RANK ? hearth_model_n_cls_out(model) : hearth_model_n_embd(model);
    e->n_embd_batch = p->ctx.n_ubatch && (int32_t)p->ctx.n_ubatch < e->n_batch ? (int32_t)p->ctx.n_ubatch : e->n_batch;
    HL_TRY(alloc_slots(e));
    hl_stats_init(&e->stats, e->n_slots, hearth_context_n_ctx(e->ctx));
    for (int32_t i = 0; i < e->n_slots; i++) e->info[i] = (hearth_slot_info){.id = i, .n_ctx = e->n_ctx_seq};
    return HEARTH_OK;
}

hearth_status hearth_engine_init(hearth_model *model, const hearth_engine_params *params, hearth_engine **out) {
    if (!out || !model) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_engine_init: NULL model or out");
    *out = NULL;
    const hearth_engine_params p = params ? *params : hearth_engine_default_params();
    hearth_engine *e = hl_calloc(1, sizeof *e);
    if (!e) return HEARTH_ERR_OUT_OF_MEMORY;
    e->model = model;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->wake, NULL);
    pthread_cond_init(&e->embed_done, NULL);
    hearth_status st = setup(e, model, &p);
    if (st == HEARTH_OK && pthread_create(&e->thread, NULL, run, e) != 0)
        st = hl_fail(HEARTH_ERR_IO, "the engine's thread could not be started");
    if (st != HEARTH_OK) {
        release(e);
        return st;
    }
    *out = e;
    return HEARTH_OK;
}

void hearth_engine_free(hearth_engine *e) {
    if (!e) return;
    pthread_mutex_lock(&e->mu);
    e->quit = true;
    pthread_cond_signal(&e->wake);
    pthread_mutex_unlock(&e->mu);
    pthread_join(e->thread, NULL);
    hl_embed_drain(e);
    release(e);
}
