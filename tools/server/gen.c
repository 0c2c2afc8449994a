/* A generation request from its parsed request to its answer (see gen.h). */
#include "gen.h"

#include "clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    cJSON_Delete(g->echo);
    free(g);
}

bool hl_gen_frame(const hl_gen *g, hl_buf *out, cJSON *json) { return hl_stream_frame(out, json, g->dialect->framing); }

const char *hl_gen_finish_name(hearth_finish_reason f) {
    return f == HEARTH_FINISH_STOP || f == HEARTH_FINISH_LENGTH || f == HEARTH_FINISH_TOOL_CALLS ||
                   f == HEARTH_FINISH_GRAMMAR
               ? hearth_finish_reason_str(f)
               : NULL;
}

/* Counts, times, the finish, and the error of a choice that did not end well. */
static void account(hl_gen *g, const hl_event *ev) {
    hl_choice_out *c = &g->choice[ev->choice];
    const double t = hl_now_s();
    if (g->t_first == 0) g->t_first = t;
    g->t_end = t;
    c->n_generated = ev->n_generated;
    if (ev->choice == 0) {
        g->n_prompt = ev->n_prompt;
        g->n_cached = ev->n_cached;
    }
    if (ev->finish == HEARTH_FINISH_NONE) return;
    c->finish = ev->finish;
    if (ev->choice == 0 && ev->stop) snprintf(g->stop, sizeof g->stop, "%s", ev->stop);
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

bool hl_gen_has_logprob(const hl_gen *g, const hl_event *ev) {
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

bool hl_gen_collect_calls(hl_choice_out *c, const hl_event *ev) {
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

cJSON *hl_gen_calls_json(const hl_choice_out *c, bool *ok) {
    *ok = true;
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
    if (!hl_gen_collect_calls(c, ev)) return false;
    if (hl_gen_has_logprob(g, ev)) {
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
    while ((w = hl_job_next(g->job, &ev, false)) == HL_JOB_EVENT) {
        ok = ok && collect(g, ev) && (!g->dialect->collect || g->dialect->collect(g, ev));
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
    hl_reply_json(rep, 200, g->dialect->result(g));
}

/* ----------------------------------------------------------- streaming -- */

static hl_sse_step stream_next(void *user, hl_buf *out) {
    hl_gen *g = user;
    if (!g->started) {
        /* the opening frames go out at once: the client gets its headers
         * before the prompt is read */
        g->started = true;
        if (g->dialect->start && !g->dialect->start(g, out)) return HL_SSE_ABORT;
        if (out->len) return HL_SSE_MORE;
    }
    for (;;) {
        hl_event *ev;
        hl_job_wait w = hl_job_next(g->job, &ev, true);
        if (w == HL_JOB_GONE) return HL_SSE_ABORT;
        if (w == HL_JOB_PARKED) return HL_SSE_WAIT;
        if (w == HL_JOB_DONE) {
            check_finished(g);
            return g->dialect->end(g, out) ? HL_SSE_END : HL_SSE_ABORT;
        }
        account(g, ev);
        bool ok = g->dialect->event(g, ev, out);
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

void hl_gen_run(hl_call *call, hl_reply *rep, hl_oai_request *req, const hl_dialect *d, const char *model_name,
                cJSON *echo) {
    hl_server *srv = call->srv;
    hl_error err = {0};
    hl_gen *g = calloc(1, sizeof *g + (size_t)req->n * sizeof g->choice[0]);
    if (!g) {
        cJSON_Delete(echo);
        hl_oai_request_free(req);
        hl_error_set(&err, 500, "server_error", NULL, NULL, "out of memory");
        hl_reply_error(rep, &err);
        return;
    }
    g->srv = srv;
    g->model = hearth_engine_model(call->engine);
    g->dialect = d;
    g->echo = echo;
    g->req = *req;
    snprintf(g->model_name, sizeof g->model_name, "%s", model_name ? model_name : call->model_name);
    g->t_start = hl_now_s();
    g->open_block = g->open_call = -1;
    snprintf(g->id, sizeof g->id, "%s%s%016llx",
             d->id_prefix               ? d->id_prefix
             : req->kind == HL_OAI_CHAT ? "chatcmpl"
                                        : "cmpl",
             d->id_prefix ? "_" : "-", (unsigned long long)hl_server_unique(srv));
    g->meta = (hl_oai_meta){.kind = req->kind,
                            .id = g->id,
                            .created = (int64_t)time(NULL),
                            .model = call->model_name,
                            .usage_null = req->stream && req->include_usage};
    char msg[512];
    const hl_job_conn conn = {.watch = srv->watch, .conn = call->conn, .fd = call->fd, .stopping = &srv->stopping};
    hearth_status st = hl_job_start(call->engine, &g->req.params, g->req.n, &conn, &g->job, msg, sizeof msg);
    if (st != HEARTH_OK) {
        submit_error(&err, st, msg, &g->req);
        gen_free(g);
        hl_reply_error(rep, &err);
        return;
    }
    if (!g->req.stream) {
        answer_whole(g, rep);
        gen_free(g);
    } else if (!hl_sse_reply(rep, stream_next, gen_free, g, d->framing)) {
        hl_error_set(&err, 500, "server_error", NULL, NULL, "out of memory");
        hl_reply_error(rep, &err);
    }
}
