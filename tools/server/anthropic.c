/* Anthropic's Messages API (docs.anthropic.com/en/api/messages) as a thin
 * translation onto the same engine: POST /v1/messages, whole or streamed
 * with its event sequence (message_start, content_block_start, ping,
 * content_block_delta, content_block_stop, message_delta, message_stop),
 * and POST /v1/messages/count_tokens. The body is rewritten as an OpenAI
 * chat body -- `system` as a first system message, text blocks joined,
 * `tool_use` blocks as the assistant's tool_calls, `tool_result` blocks as
 * tool messages, `tools` and `tool_choice` as OpenAI's -- and parsed by
 * oai_request.c, so the scheduler, sampler, grammar and tool-call parser
 * are the ones /v1 uses; only the answer's shape is Anthropic's (gen.h's
 * dialect). Errors are {"type": "error", "error": {"type", "message"}}. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_request.h"
#include "gen.h"

static const char *error_type(unsigned status) {
    switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: return "overloaded_error";
    default: return "api_error";
    }
}

static cJSON *error_json(const hl_error *e) {
    cJSON *root = cJSON_CreateObject(), *err = root ? cJSON_AddObjectToObject(root, "error") : NULL;
    if (err && cJSON_AddStringToObject(root, "type", "error") &&
        cJSON_AddStringToObject(err, "type", error_type(e->status)) &&
        cJSON_AddStringToObject(err, "message", e->message))
        return root;
    cJSON_Delete(root);
    return NULL;
}

char *hl_anthropic_error_body(const hl_error *e, size_t *len) {
    cJSON *j = error_json(e);
    char *s = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    *len = s ? strlen(s) : 0;
    return s;
}

/* The request parsed into an OpenAI request; false with *err. */
static bool parse(hl_call *call, bool count_only, hl_oai_request *out, const char **model, cJSON **root,
                  hl_error *err) {
    cJSON *req = hl_json_parse_object(call->body, call->len, err);
    if (!req) return false;
    *root = req;
    if (!hl_json_str(req, "model", model, err)) return false;
    cJSON *body = hl_anthropic_chat_body(req, count_only, err);
    char *printed = body ? cJSON_PrintUnformatted(body) : NULL;
    cJSON_Delete(body);
    if (body && !printed) return hl_error_oom(err);
    if (!printed) return false;
    hearth_request_params defaults = hearth_request_default_params();
    defaults.sampling.seed = hl_server_unique(call->srv);
    const bool ok = hl_oai_parse(HL_OAI_CHAT, printed, strlen(printed), &defaults, out, err);
    free(printed);
    return ok;
}

/* ------------------------------------------------------------- answers -- */

/* end_turn, max_tokens, stop_sequence or tool_use. */
static const char *stop_reason(const hl_gen *g, hearth_finish_reason f) {
    return f == HEARTH_FINISH_LENGTH       ? "max_tokens"
           : f == HEARTH_FINISH_TOOL_CALLS ? "tool_use"
           : g->stop[0]                    ? "stop_sequence"
                                           : "end_turn";
}

/* input (not cached), cached and output tokens so far. */
static cJSON *usage(const hl_gen *g) {
    cJSON *u = cJSON_CreateObject();
    bool ok = u && cJSON_AddNumberToObject(u, "input_tokens", g->n_prompt - g->n_cached) &&
              cJSON_AddNumberToObject(u, "cache_read_input_tokens", g->n_cached) &&
              cJSON_AddNumberToObject(u, "output_tokens", g->choice[0].n_generated);
    if (ok) return u;
    cJSON_Delete(u);
    return NULL;
}

/* {"id", "type": "message", "role", "model", "content", "stop_reason", "stop_sequence", "usage"}. */
static cJSON *message_json(const hl_gen *g, cJSON *content, bool done) {
    cJSON *m = cJSON_CreateObject();
    const hl_choice_out *c = &g->choice[0];
    bool ok = m && cJSON_AddStringToObject(m, "id", g->id) && cJSON_AddStringToObject(m, "type", "message") &&
              cJSON_AddStringToObject(m, "role", "assistant") && cJSON_AddStringToObject(m, "model", g->model_name) &&
              hl_json_put(m, "content", content) &&
              (done ? cJSON_AddStringToObject(m, "stop_reason", stop_reason(g, c->finish)) != NULL
                    : cJSON_AddNullToObject(m, "stop_reason") != NULL) &&
              (done && g->stop[0] ? cJSON_AddStringToObject(m, "stop_sequence", g->stop) != NULL
                                  : cJSON_AddNullToObject(m, "stop_sequence") != NULL) &&
              hl_json_put(m, "usage", usage(g));
    if (!ok && !m) cJSON_Delete(content);
    if (ok) return m;
    cJSON_Delete(m);
    return NULL;
}

static cJSON *text_block(const char *text) {
    cJSON *b = cJSON_CreateObject();
    if (b && cJSON_AddStringToObject(b, "type", "text") && cJSON_AddStringToObject(b, "text", text)) return b;
    cJSON_Delete(b);
    return NULL;
}

/* {"type": "tool_use", "id", "name", "input"}: input the parsed arguments ({} while streaming). */
static cJSON *tool_block(const char *id, const char *name, const char *args) {
    cJSON *b = cJSON_CreateObject(), *input = args ? cJSON_Parse(args) : NULL;
    if (b && cJSON_AddStringToObject(b, "type", "tool_use") && cJSON_AddStringToObject(b, "id", id) &&
        cJSON_AddStringToObject(b, "name", name) && hl_json_put(b, "input", input ? input : cJSON_CreateObject()))
        return b;
    cJSON_Delete(b);
    return NULL;
}

static cJSON *result(hl_gen *g) {
    const hl_choice_out *c = &g->choice[0];
    cJSON *content = cJSON_CreateArray();
    bool ok = content != NULL;
    if (ok && (c->text.len || !c->n_calls)) ok = hl_json_push(content, text_block(c->text.p ? c->text.p : ""));
    for (int32_t k = 0; ok && k < c->n_calls; k++)
        ok = hl_json_push(content,
                          tool_block(c->calls[k].id, c->calls[k].name, c->calls[k].args.p ? c->calls[k].args.p : "{}"));
    if (!ok) {
        cJSON_Delete(content);
        return NULL;
    }
    return message_json(g, content, true);
}

/* ---------------------------------------------------------- streaming -- */

static cJSON *event(const char *type) {
    cJSON *e = cJSON_CreateObject();
    if (e && cJSON_AddStringToObject(e, "type", type)) return e;
    cJSON_Delete(e);
    return NULL;
}

static bool block_stop(hl_gen *g, hl_buf *out) {
    if (g->open_block < 0) return true;
    cJSON *e = event("content_block_stop");
    const bool ok = e && cJSON_AddNumberToObject(e, "index", g->open_block) && hl_gen_frame(g, out, e);
    if (!ok && e) return false;
    g->open_block = g->open_call = -1;
    return ok;
}

/* Closes the open block and opens `block` (taken) as the next index. */
static bool block_start(hl_gen *g, hl_buf *out, cJSON *block, int32_t call) {
    if (!block || !block_stop(g, out)) {
        cJSON_Delete(block);
        return false;
    }
    cJSON *e = event("content_block_start");
    if (!e || !cJSON_AddNumberToObject(e, "index", g->n_blocks) || !hl_json_put(e, "content_block", block)) {
        cJSON_Delete(e);
        return false;
    }
    g->open_block = g->n_blocks++;
    g->open_call = call;
    return hl_gen_frame(g, out, e);
}

/* content_block_delta of the open block: {"type": kind, key: text}. */
static bool block_delta(hl_gen *g, hl_buf *out, const char *kind, const char *key, const char *text, size_t len) {
    char *s = malloc(len + 1);
    if (!s) return false;
    memcpy(s, text, len);
    s[len] = '\0';
    cJSON *e = event("content_block_delta"), *d = cJSON_CreateObject();
    bool ok = e && cJSON_AddNumberToObject(e, "index", g->open_block) && hl_json_put(e, "delta", d) &&
              cJSON_AddStringToObject(d, "type", kind) && cJSON_AddStringToObject(d, key, s);
    if (!e) cJSON_Delete(d);
    free(s);
    if (!ok) {
        cJSON_Delete(e);
        return false;
    }
    return hl_gen_frame(g, out, e);
}

static bool stream_start(hl_gen *g, hl_buf *out) {
    cJSON *e = event("message_start"), *content = cJSON_CreateArray();
    if (!e || !hl_json_put(e, "message", message_json(g, content, false))) {
        cJSON_Delete(e);
        return false;
    }
    return hl_gen_frame(g, out, e) && hl_gen_frame(g, out, event("ping"));
}

static bool stream_event(hl_gen *g, const hl_event *ev, hl_buf *out) {
    if (ev->len) {
        if (g->open_block < 0 || g->open_call >= 0)
            if (!block_start(g, out, text_block(""), -1)) return false;
        if (!block_delta(g, out, "text_delta", "text", ev->text, ev->len)) return false;
    }
    for (int32_t i = 0; i < ev->n_calls; i++) {
        const hearth_tool_call_delta *d = &ev->calls[i];
        if (d->index != g->open_call &&
            !block_start(g, out, tool_block(d->id ? d->id : "", d->name ? d->name : "", NULL), d->index))
            return false;
        if (d->arguments_len &&
            !block_delta(g, out, "input_json_delta", "partial_json", d->arguments, d->arguments_len))
            return false;
    }
    return true;
}

/* The last events: the open block's stop, message_delta (stop_reason,
 * usage) and message_stop; or an error event. */
static bool stream_end(hl_gen *g, hl_buf *out) {
    if (g->err.status) return hl_gen_frame(g, out, error_json(&g->err));
    /* a message with no content at all still gets one (empty) text block */
    if (g->n_blocks == 0 && !block_start(g, out, text_block(""), -1)) return false;
    if (!block_stop(g, out)) return false;
    cJSON *e = event("message_delta"), *d = cJSON_CreateObject();
    bool ok = e && hl_json_put(e, "delta", d) &&
              cJSON_AddStringToObject(d, "stop_reason", stop_reason(g, g->choice[0].finish)) &&
              (g->stop[0] ? cJSON_AddStringToObject(d, "stop_sequence", g->stop) != NULL
                          : cJSON_AddNullToObject(d, "stop_sequence") != NULL) &&
              hl_json_put(e, "usage",
                          usage(g)); /* input_tokens too: message_start went out before the prompt was read */
    if (!e) cJSON_Delete(d);
    if (!ok) {
        cJSON_Delete(e);
        return false;
    }
    return hl_gen_frame(g, out, e) && hl_gen_frame(g, out, event("message_stop"));
}

static const hl_dialect anthropic = {.framing = HL_FRAMING_SSE_EVENTS,
                                     .result = result,
                                     .start = stream_start,
                                     .event = stream_event,
                                     .end = stream_end,
                                     .id_prefix = "msg"};

/* ------------------------------------------------------------ handlers -- */

void hl_handle_anthropic_messages(hl_call *call, hl_reply *rep) {
    hl_error err = {0};
    hl_oai_request req;
    cJSON *root = NULL;
    const char *model = NULL;
    if (!hl_server_generates(call->engine, &err) || !parse(call, false, &req, &model, &root, &err)) {
        cJSON_Delete(root);
        hl_reply_error(rep, &err);
        return;
    }
    hl_gen_run(call, rep, &req, &anthropic, model, NULL);
    cJSON_Delete(root);
}

void hl_handle_anthropic_count_tokens(hl_call *call, hl_reply *rep) {
    hl_error err = {0};
    hl_oai_request req;
    cJSON *root = NULL;
    const char *model = NULL;
    int32_t n = 0;
    if (!hl_server_generates(call->engine, &err) || !parse(call, true, &req, &model, &root, &err)) {
        cJSON_Delete(root);
        hl_reply_error(rep, &err);
        return;
    }
    const hearth_status st = hearth_engine_count_tokens(call->engine, &req.params, &n);
    hl_oai_request_free(&req);
    cJSON_Delete(root);
    if (st != HEARTH_OK) {
        hl_error_set(&err, st == HEARTH_ERR_OUT_OF_MEMORY ? 500 : 400, "invalid_request_error", NULL, "messages", "%s",
                     hearth_last_error());
        hl_reply_error(rep, &err);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    if (o && !cJSON_AddNumberToObject(o, "input_tokens", n)) {
        cJSON_Delete(o);
        o = NULL;
    }
    hl_reply_json(rep, 200, o);
}
