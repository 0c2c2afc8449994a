/* POST /v1/chat/completions and POST /v1/completions: parse the request and
 * run it (gen.c) in OpenAI's dialect: the whole result, or each piece as an
 * SSE chunk as it comes. Both endpoints share everything but the JSON
 * shapes, which oai_response.c knows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gen.h"

/* The whole answer: {"id", "object", "created", "model", "choices", "usage"}. */
static cJSON *result(hl_gen *g) {
    cJSON *choices = cJSON_CreateArray();
    int64_t n_completion = 0;
    for (int32_t i = 0; choices && i < g->req.n; i++) {
        hl_choice_out *c = &g->choice[i];
        n_completion += c->n_generated;
        bool calls_ok = true;
        cJSON *calls = hl_gen_calls_json(c, &calls_ok);
        cJSON *item = calls_ok ? hl_oai_choice(&g->meta, i, c->text.p ? c->text.p : "", c->logprobs, calls,
                                               hl_gen_finish_name(c->finish))
                               : NULL;
        if (!calls_ok) cJSON_Delete(c->logprobs);
        c->logprobs = NULL; /* taken */
        if (!item || !cJSON_AddItemToArray(choices, item)) {
            cJSON_Delete(item);
            cJSON_Delete(choices);
            choices = NULL;
        }
    }
    return choices ? hl_oai_result(&g->meta, choices, hl_oai_usage(g->n_prompt, g->n_cached, n_completion)) : NULL;
}

/* Chat streams open with each choice's role. */
static bool stream_start(hl_gen *g, hl_buf *out) {
    for (int32_t i = 0; g->req.kind == HL_OAI_CHAT && i < g->req.n; i++)
        if (!hl_sse_frame(out, hl_oai_chunk(&g->meta, i, true, "", NULL, NULL, NULL))) return false;
    return true;
}

/* The frames of one event: its text (and logprobs) if any, then its finish. */
static bool stream_event(hl_gen *g, const hl_event *ev, hl_buf *out) {
    hl_choice_out *c = &g->choice[ev->choice];
    cJSON *lp = NULL;
    if (hl_gen_has_logprob(g, ev)) {
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
    const char *finish = hl_gen_finish_name(ev->finish);
    return !finish || hl_sse_frame(out, hl_oai_chunk(&g->meta, ev->choice, false, NULL, NULL, NULL, finish));
}

/* After the last event: an error event if a choice failed (the openai client
 * raises it), else the usage chunk when asked for. */
static bool stream_end(hl_gen *g, hl_buf *out) {
    if (g->err.status) return hl_sse_frame(out, hl_oai_error(&g->err));
    if (!g->req.include_usage) return true;
    int64_t n_completion = 0;
    for (int32_t i = 0; i < g->req.n; i++) n_completion += g->choice[i].n_generated;
    return hl_sse_frame(out, hl_oai_usage_chunk(&g->meta, hl_oai_usage(g->n_prompt, g->n_cached, n_completion)));
}

static const hl_dialect openai = {
    .framing = HL_FRAMING_SSE, .result = result, .start = stream_start, .event = stream_event, .end = stream_end};

/* ----------------------------------------------------------- the entry -- */

static void handle(hl_call *call, hl_reply *rep, hl_oai_kind kind) {
    hl_server *srv = call->srv;
    hearth_request_params defaults = hearth_request_default_params();
    defaults.sampling.seed = hl_server_unique(srv); /* a fresh sample unless the client gives a seed */
    hl_oai_request req;
    hl_error err = {0};
    if (!hl_server_generates(call->engine, &err) || !hl_oai_parse(kind, call->body, call->len, &defaults, &req, &err)) {
        hl_reply_error(rep, &err);
        return;
    }
    hl_gen_run(call, rep, &req, &openai, NULL, NULL);
}

void hl_handle_chat(hl_call *call, hl_reply *rep) { handle(call, rep, HL_OAI_CHAT); }
void hl_handle_completions(hl_call *call, hl_reply *rep) { handle(call, rep, HL_OAI_COMPLETION); }
