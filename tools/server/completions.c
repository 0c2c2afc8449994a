/* POST /v1/chat/completions and POST /v1/completions: parse the request,
 * submit its n choices to the engine as one job, then either wait for every
 * piece and answer with the whole result, or stream each piece as an SSE
 * chunk as it comes. Both endpoints share everything but the JSON shapes,
 * which oai_response.c knows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "job.h"
#include "oai_response.h"
#include "server_impl.h"
#include "sse.h"

/* A tool call as its deltas build it (non-streaming). */
typedef struct hl_call_out {
    char *id, *name;
    hl_buf args;
} hl_call_out;

/* What one choice has produced so far. */
typedef struct hl_choice_out {
    hl_buf text;        /* whole text (non-streaming) */
    size_t n_text;      /* bytes of text so far: completions' text_offset */
    cJSON *logprobs;    /* non-streaming with logprobs */
    hl_call_out *calls; /* [n_calls] non-streaming */
    int32_t n_calls;
    int32_t n_generated;
    hearth_finish_reason finish;
} hl_choice_out;

/* One request in flight: what both ways of answering need. */
typedef struct hl_gen {
    hl_server *srv;
    const hearth_model *model;
    hl_oai_request req;
    hl_oai_meta meta;
    char id[40];
    hl_job *job;
    int32_t n_prompt, n_cached;
    hl_error err;           /* the first choice that ended badly */
    bool started;           /* streaming: the opening chunks are out */
    hl_choice_out choice[]; /* [req.n] */
} hl_gen;

static void gen_free(void *user) {
    hl_gen *g = user;
    hl_job_free(g->job);
    for (int32_t i = 0; i < g->req.n; i++) {
        hl_choice_out *c = &g->choice[i];
        hl_buf_free(&c->text);
        cJSON_Delete(c->logprobs);
        for (int32_t k = 0; k < c->n_calls; k++) {
            free(c->calls[k].id);
            free(c->calls[k].name);
            hl_buf_free(&c->calls[k].args);
        }
        free(c->calls);
    }
    hl_oai_request_free(&g->req);
    free(g);
}

/* OpenAI's finish_reason of a choice that ended well (cancelled and failed
 * ones answer with an error instead). */
static const char *finish_name(hearth_finish_reason f) {
    return f == HEARTH_FINISH_STOP || f == HEARTH_FINISH_LENGTH || f == HEARTH_FINISH_TOOL_CALLS ||
                   f == HEARTH_FINISH_GRAMMAR
               ? hearth_finish_reason_str(f)
               : NULL;
}

/* Counts, the finish, and the error of a choice that did not end well. */
static void account(hl_gen *g, const hl_event *ev) {
    hl_choice_out *c = &g->choice[ev->choice];
    c->n_generated = ev->n_generated;
    if (ev->choice == 0) {
        g->n_prompt = ev->n_prompt;
        g->n_cached = ev->n_cached;
    }
    if (ev->finish == HEARTH_FINISH_NONE) return;
    c->finish = ev->finish;
    if (g->err.status) return;
    if (ev->finish == HEARTH_FINISH_ERROR)
        hl_error_set(&g->err, 500, "server_error", "generation_failed", NULL, "generation failed: %s",
                     ev->error ? ev->error : "unknown error");
    else if (ev->finish == HEARTH_FINISH_CANCELLED && atomic_load(&g->srv->stopping))
        hl_error_set(&g->err, 503, "server_error", "server_shutting_down", NULL,
                     "the server is shutting down; the request was stopped");
    else if (ev->finish == HEARTH_FINISH_CANCELLED)
        hl_error_set(&g->err, 500, "server_error", "cancelled", NULL,
                     "the request was cancelled (its client read too slowly)");
}

/* Whether the event carries a token for logprobs: every sampled token but
 * the end-of-generation one that ended the choice (OpenAI lists only the
 * tokens of the text). */
static bool has_logprob(const hl_gen *g, const hl_event *ev) {
    return g->req.params.logprobs && ev->token >= 0 && !hearth_token_is_eog(g->model, ev->token);
}

/* A job ended without a choice's last piece only when memory ran out in the
 * callback. */
static void check_finished(hl_gen *g) {
    for (int32_t i = 0; i < g->req.n && !g->err.status; i++)
        if (g->choice[i].finish == HEARTH_FINISH_NONE)
            hl_error_set(&g->err, 500, "server_error", NULL, NULL, "out of memory while generating");
}

/* ------------------------------------------------------- non-streaming -- */

static char *dup_str(const char *s) {
    char *d = s ? strdup(s) : NULL;
    return d || !s ? d : NULL;
}

/* Adds the event's tool-call deltas to the choice's calls. */
static bool collect_calls(hl_choice_out *c, const hl_event *ev) {
    for (int32_t i = 0; i < ev->n_calls; i++) {
        const hearth_tool_call_delta *d = &ev->calls[i];
        if (d->index < 0 || d->index > c->n_calls) return false; /* the engine numbers calls in order */
        if (d->index == c->n_calls) {
            hl_call_out *grown = realloc(c->calls, (size_t)(c->n_calls + 1) * sizeof *grown);
            if (!grown) return false;
            c->calls = grown;
            c->calls[c->n_calls++] = (hl_call_out){.id = dup_str(d->id ? d->id : ""),
                                                   .name = dup_str(d->name ? d->name : "")};
            if (!c->calls[d->index].id || !c->calls[d->index].name) return false;
        }
        if (!hl_buf_add(&c->calls[d->index].args, d->arguments, d->arguments_len)) return false;
    }
    return true;
}

/* The message's tool_calls array, or NULL (none, or out of memory: *ok false). */
static cJSON *calls_json(const hl_choice_out *c, bool *ok) {
    if (!c->n_calls) return NULL;
    cJSON *arr = cJSON_CreateArray();
    for (int32_t k = 0; arr && k < c->n_calls; k++) {
        const hl_call_out *call = &c->calls[k];
        cJSON *item = hl_oai_tool_call(call->id, call->name, call->args.p ? call->args.p : "");
        if (!item || !cJSON_AddItemToArray(arr, item)) {
            cJSON_Delete(item);
            cJSON_Delete(arr);
            arr = NULL;
        }
    }
    *ok = arr != NULL;
    return arr;
}

static bool collect(hl_gen *g, const hl_event *ev) {
    hl_choice_out *c = &g->choice[ev->choice];
    account(g, ev);
    if (!collect_calls(c, ev)) return false;
    if (has_logprob(g, ev)) {
        if (!c->logprobs && !(c->logprobs = hl_oai_logprobs_new(g->req.kind))) return false;
        if (!hl_oai_logprobs_add(g->req.kind, c->logprobs, g->model, ev->token, ev->logprob, ev->top, ev->n_top,
                                 c->text.len))
            return false;
    }
    return hl_buf_add(&c->text, ev->text, ev->len);
}

static void answer_whole(hl_gen *g, hl_reply *rep) {
    hl_event *ev;
    hl_job_wait w;
    bool ok = true;
    while ((w = hl_job_next(g->job, &ev)) == HL_JOB_EVENT) {
        ok = ok && collect(g, ev);
        free(ev);
    }
    if (w == HL_JOB_GONE) {
        rep->status = 0;
        return;
    }
    if (!ok && !g->err.status) hl_error_set(&g->err, 500, "server_error", NULL, NULL, "out of memory");
    check_finished(g);
    if (g->err.status) {
        hl_reply_error(rep, &g->err);
        return;
    }
    cJSON *choices = cJSON_CreateArray();
    int64_t n_completion = 0;
    for (int32_t i = 0; choices && i < g->req.n; i++) {
        hl_choice_out *c = &g->choice[i];
        n_completion += c->n_generated;
        bool calls_ok = true;
        cJSON *calls = calls_json(c, &calls_ok);
        cJSON *item = calls_ok ? hl_oai_choice(&g->meta, i, c->text.p ? c->text.p : "", c->logprobs, calls,
                                               finish_name(c->finish))
                               : NULL;
        if (!calls_ok) cJSON_Delete(c->logprobs);
        c->logprobs = NULL; /* taken */
        if (!item || !cJSON_AddItemToArray(choices, item)) {
            cJSON_Delete(item);
            cJSON_Delete(choices);
            choices = NULL;
        }
    }
    cJSON *result = choices ? hl_oai_result(&g->meta, choices, hl_oai_usage(g->n_prompt, g->n_cached, n_completion))
                            : NULL;
    hl_reply_json(rep, 200, result);
}

/* ----------------------------------------------------------- streaming -- */

/* The frames of one event: its text (and logprobs) if any, then its finish. */
static bool stream_event(hl_gen *g, const hl_event *ev, hl_buf *out) {
    hl_choice_out *c = &g->choice[ev->choice];
    account(g, ev);
    cJSON *lp = NULL;
    if (has_logprob(g, ev)) {
        lp = hl_oai_logprobs_new(g->req.kind);
        if (!lp ||
            !hl_oai_logprobs_add(g->req.kind, lp, g->model, ev->token, ev->logprob, ev->top, ev->n_top, c->n_text)) {
            cJSON_Delete(lp);
            return false;
        }
    }
    c->n_text += ev->len;
    if ((ev->len || lp) && !hl_sse_frame(out, hl_oai_chunk(&g->meta, ev->choice, false, ev->text, lp, NULL, NULL)))
        return false;
    /* each tool-call delta in a chunk of its own, as OpenAI streams them */
    for (int32_t i = 0; i < ev->n_calls; i++) {
        cJSON *arr = cJSON_CreateArray(), *d = hl_oai_tool_call_delta(&ev->calls[i]);
        if (!arr || !d || !cJSON_AddItemToArray(arr, d)) {
            cJSON_Delete(arr);
            cJSON_Delete(d);
            return false;
        }
        if (!hl_sse_frame(out, hl_oai_chunk(&g->meta, ev->choice, false, NULL, NULL, arr, NULL))) return false;
    }
    const char *finish = finish_name(ev->finish);
    return !finish || hl_sse_frame(out, hl_oai_chunk(&g->meta, ev->choice, false, NULL, NULL, NULL, finish));
}

/* After the last event: an error event if a choice failed (the openai client
 * raises it), else the usage chunk when asked for. */
static bool stream_end(hl_gen *g, hl_buf *out) {
    check_finished(g);
    if (g->err.status) return hl_sse_frame(out, hl_oai_error(&g->err));
    if (!g->req.include_usage) return true;
    int64_t n_completion = 0;
    for (int32_t i = 0; i < g->req.n; i++) n_completion += g->choice[i].n_generated;
    return hl_sse_frame(out, hl_oai_usage_chunk(&g->meta, hl_oai_usage(g->n_prompt, g->n_cached, n_completion)));
}

static hl_sse_step stream_next(void *user, hl_buf *out) {
    hl_gen *g = user;
    if (!g->started) {
        /* chat streams open with each choice's role, at once: the client
         * gets its headers before the prompt is read */
        g->started = true;
        for (int32_t i = 0; g->req.kind == HL_OAI_CHAT && i < g->req.n; i++)
            if (!hl_sse_frame(out, hl_oai_chunk(&g->meta, i, true, "", NULL, NULL, NULL))) return HL_SSE_ABORT;
        if (out->len) return HL_SSE_MORE;
    }
    for (;;) {
        hl_event *ev;
        hl_job_wait w = hl_job_next(g->job, &ev);
        if (w == HL_JOB_GONE) return HL_SSE_ABORT;
        if (w == HL_JOB_DONE) return stream_end(g, out) ? HL_SSE_END : HL_SSE_ABORT;
        bool ok = stream_event(g, ev, out);
        free(ev);
        if (!ok) return HL_SSE_ABORT;
        if (out->len) return HL_SSE_MORE;
    }
}

/* ----------------------------------------------------------- the entry -- */

static void submit_error(hl_error *e, hearth_status st, const char *msg, const hl_oai_request *req) {
    const char *param = req->kind == HL_OAI_CHAT ? "messages" : "prompt";
    switch (st) {
    case HEARTH_ERR_CONTEXT_FULL:
        hl_error_set(e, 400, "invalid_request_error", "context_length_exceeded", param, "%s", msg);
        break;
    case HEARTH_ERR_BUSY:
        hl_error_set(e, 503, "server_error", "server_busy", NULL,
                     "the server is busy (every slot and queue place is taken): retry later");
        break;
    case HEARTH_ERR_INVALID_ARG:
    case HEARTH_ERR_UNSUPPORTED:
    case HEARTH_ERR_FORMAT: /* the chat template refused the conversation */
        /* a grammar, schema or tools the engine could not compile name the field that gave them */
        param = !strncmp(msg, "grammar", 7) || !strncmp(msg, "json_schema", 11) || !strncmp(msg, "tool", 4)
                    ? req->constraint_param
                : !strncmp(msg, "logit_bias", 10) ? "logit_bias"
                                                  : NULL;
        hl_error_set(e, 400, "invalid_request_error", "invalid_value", param, "%s", msg);
        break;
    default: hl_error_set(e, 500, "server_error", NULL, NULL, "%s", msg);
    }
}

static void handle(hl_call *call, hl_reply *rep, hl_oai_kind kind) {
    hl_server *srv = call->srv;
    hearth_request_params defaults = hearth_request_default_params();
    defaults.sampling.seed = hl_server_unique(srv); /* a fresh sample unless the client gives a seed */
    hl_oai_request req;
    hl_error err = {0};
    if (hearth_engine_embeddings(call->engine)) {
        hl_error_set(&err, 400, "invalid_request_error", "model_not_generative", "model",
                     "this model computes embeddings and does not generate text: use /v1/embeddings, or start "
                     "hearth serve with a generation model");
        hl_reply_error(rep, &err);
        return;
    }
    if (!hl_oai_parse(kind, call->body, call->len, &defaults, &req, &err)) {
        hl_reply_error(rep, &err);
        return;
    }
    if (req.model && strcmp(req.model, srv->cfg.alias) != 0) {
        hl_error_set(&err, 404, "invalid_request_error", "model_not_found", "model",
                     "the model '%s' does not exist: this server serves '%s'", req.model, srv->cfg.alias);
        hl_oai_request_free(&req);
        hl_reply_error(rep, &err);
        return;
    }
    hl_gen *g = calloc(1, sizeof *g + (size_t)req.n * sizeof g->choice[0]);
    if (!g) {
        hl_oai_request_free(&req);
        hl_error_set(&err, 500, "server_error", NULL, NULL, "out of memory");
        hl_reply_error(rep, &err);
        return;
    }
    g->srv = srv;
    g->model = hearth_engine_model(call->engine);
    g->req = req;
    snprintf(g->id, sizeof g->id, "%s-%016llx", kind == HL_OAI_CHAT ? "chatcmpl" : "cmpl",
             (unsigned long long)hl_server_unique(srv));
    g->meta = (hl_oai_meta){.kind = kind,
                            .id = g->id,
                            .created = (int64_t)time(NULL),
                            .model = srv->cfg.alias,
                            .usage_null = req.stream && req.include_usage};
    char msg[512];
    hearth_status st = hl_job_start(call->engine, &g->req.params, g->req.n, call->fd, &srv->stopping, &g->job, msg,
                                    sizeof msg);
    if (st != HEARTH_OK) {
        submit_error(&err, st, msg, &g->req);
        gen_free(g);
        hl_reply_error(rep, &err);
        return;
    }
    if (!g->req.stream) {
        answer_whole(g, rep);
        gen_free(g);
    } else if (!hl_sse_reply(rep, stream_next, gen_free, g)) {
        hl_error_set(&err, 500, "server_error", NULL, NULL, "out of memory");
        hl_reply_error(rep, &err);
    }
}

void hl_handle_chat(hl_call *call, hl_reply *rep) { handle(call, rep, HL_OAI_CHAT); }
void hl_handle_completions(hl_call *call, hl_reply *rep) { handle(call, rep, HL_OAI_COMPLETION); }
