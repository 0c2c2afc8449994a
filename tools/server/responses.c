/* OpenAI's Responses API (platform.openai.com/docs/api-reference/responses)
 * as a thin translation onto the same engine: POST /v1/responses, whole or
 * streamed with its response.* events. The body is rewritten as a chat
 * completions body -- `instructions` as a system message, `input` (a string,
 * or message items with input_text parts, function_call and
 * function_call_output items) as messages, function `tools`, `tool_choice`,
 * `text.format` as response_format, `max_output_tokens` as max_tokens --
 * and parsed by oai_request.c; the answer is built in the Responses shape
 * (gen.h's dialect): output items of type message (output_text parts) and
 * function_call. Nothing is stored: previous_response_id and store true are
 * refused, as is every field hearth does not know. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api_request.h"
#include "gen.h"

/* ------------------------------------------------------------- answers -- */

static cJSON *output_text(const char *text) {
    cJSON *p = cJSON_CreateObject();
    if (p && cJSON_AddStringToObject(p, "type", "output_text") && cJSON_AddStringToObject(p, "text", text) &&
        cJSON_AddArrayToObject(p, "annotations"))
        return p;
    cJSON_Delete(p);
    return NULL;
}

/* A message item (its id from the response's, "msg_..."). */
static cJSON *message_item(const hl_gen *g, const char *text, bool done) {
    char id[48];
    snprintf(id, sizeof id, "msg_%s", g->id + 5);
    cJSON *m = cJSON_CreateObject(), *content = m ? cJSON_AddArrayToObject(m, "content") : NULL;
    if (content && cJSON_AddStringToObject(m, "type", "message") && cJSON_AddStringToObject(m, "id", id) &&
        cJSON_AddStringToObject(m, "status", done ? "completed" : "in_progress") &&
        cJSON_AddStringToObject(m, "role", "assistant") && (!done || hl_json_push(content, output_text(text))))
        return m;
    cJSON_Delete(m);
    return NULL;
}

/* A function_call item: {"type", "id": "fc_<call id>", "call_id", "name", "arguments", "status"}. */
static cJSON *call_item(const char *call_id, const char *name, const char *args, bool done) {
    char id[96];
    snprintf(id, sizeof id, "fc_%s", call_id);
    cJSON *c = cJSON_CreateObject();
    if (c && cJSON_AddStringToObject(c, "type", "function_call") && cJSON_AddStringToObject(c, "id", id) &&
        cJSON_AddStringToObject(c, "call_id", call_id) && cJSON_AddStringToObject(c, "name", name) &&
        cJSON_AddStringToObject(c, "arguments", args) &&
        cJSON_AddStringToObject(c, "status", done ? "completed" : "in_progress"))
        return c;
    cJSON_Delete(c);
    return NULL;
}

/* The response object; `done` false: in progress, no output yet. */
static cJSON *response(const hl_gen *g, bool done) {
    const hl_choice_out *c = &g->choice[0];
    const bool incomplete = done && c->finish == HEARTH_FINISH_LENGTH;
    cJSON *r = cJSON_CreateObject(), *output = r ? cJSON_AddArrayToObject(r, "output") : NULL;
    bool ok = output && cJSON_AddStringToObject(r, "id", g->id) && cJSON_AddStringToObject(r, "object", "response") &&
              cJSON_AddNumberToObject(r, "created_at", (double)g->meta.created) &&
              cJSON_AddStringToObject(r, "status",
                                      !done        ? "in_progress"
                                      : incomplete ? "incomplete"
                                                   : "completed") &&
              cJSON_AddNullToObject(r, "error") && cJSON_AddStringToObject(r, "model", g->model_name);
    if (ok && incomplete) {
        cJSON *d = cJSON_AddObjectToObject(r, "incomplete_details");
        ok = d && cJSON_AddStringToObject(d, "reason", "max_output_tokens");
    } else if (ok) {
        ok = cJSON_AddNullToObject(r, "incomplete_details") != NULL;
    }
    /* the request's settings, as the response repeats them */
    for (const cJSON *f = g->echo ? g->echo->child : NULL; ok && f; f = f->next)
        ok = hl_json_put(r, f->string, cJSON_Duplicate(f, true));
    if (ok && done && (c->text.len || !c->n_calls))
        ok = hl_json_push(output, message_item(g, c->text.p ? c->text.p : "", true));
    for (int32_t k = 0; ok && done && k < c->n_calls; k++)
        ok = hl_json_push(
            output, call_item(c->calls[k].id, c->calls[k].name, c->calls[k].args.p ? c->calls[k].args.p : "", true));
    if (ok && done) {
        cJSON *u = cJSON_AddObjectToObject(r, "usage"),
              *in = u ? cJSON_AddObjectToObject(u, "input_tokens_details") : NULL;
        cJSON *out = in ? cJSON_AddObjectToObject(u, "output_tokens_details") : NULL;
        ok = out && cJSON_AddNumberToObject(u, "input_tokens", g->n_prompt) &&
             cJSON_AddNumberToObject(in, "cached_tokens", g->n_cached) &&
             cJSON_AddNumberToObject(u, "output_tokens", c->n_generated) &&
             cJSON_AddNumberToObject(out, "reasoning_tokens", 0) &&
             cJSON_AddNumberToObject(u, "total_tokens", g->n_prompt + c->n_generated);
    } else if (ok) {
        ok = cJSON_AddNullToObject(r, "usage") != NULL;
    }
    if (ok) return r;
    cJSON_Delete(r);
    return NULL;
}

static cJSON *result(hl_gen *g) { return response(g, true); }

/* ---------------------------------------------------------- streaming -- */

/* An event {"type", "sequence_number", ...}; NULL when memory runs out. */
static cJSON *event(hl_gen *g, const char *type) {
    cJSON *e = cJSON_CreateObject();
    if (e && cJSON_AddStringToObject(e, "type", type) && cJSON_AddNumberToObject(e, "sequence_number", g->n_events++))
        return e;
    cJSON_Delete(e);
    return NULL;
}

static bool emit(hl_gen *g, hl_buf *out, cJSON *e, bool ok) {
    if (!ok) {
        cJSON_Delete(e);
        return false;
    }
    return hl_gen_frame(g, out, e);
}

/* The open item's id: msg_... or fc_<call id>. */
static void item_id(const hl_gen *g, char *id, size_t size) {
    const hl_choice_out *c = &g->choice[0];
    if (g->open_call >= 0) snprintf(id, size, "fc_%s", c->calls[g->open_call].id);
    else snprintf(id, size, "msg_%s", g->id + 5);
}

/* Ends the open output item: its text's or arguments' done events, then output_item.done. */
static bool item_done(hl_gen *g, hl_buf *out) {
    if (g->open_block < 0) return true;
    const hl_choice_out *c = &g->choice[0];
    char id[96];
    item_id(g, id, sizeof id);
    cJSON *e, *item;
    if (g->open_call < 0) {
        const char *text = c->text.p ? c->text.p + g->text_from : "";
        e = event(g, "response.output_text.done");
        if (!emit(g, out, e,
                  e && cJSON_AddStringToObject(e, "item_id", id) &&
                      cJSON_AddNumberToObject(e, "output_index", g->open_block) &&
                      cJSON_AddNumberToObject(e, "content_index", 0) && cJSON_AddStringToObject(e, "text", text)))
            return false;
        e = event(g, "response.content_part.done");
        if (!emit(g, out, e,
                  e && cJSON_AddStringToObject(e, "item_id", id) &&
                      cJSON_AddNumberToObject(e, "output_index", g->open_block) &&
                      cJSON_AddNumberToObject(e, "content_index", 0) && hl_json_put(e, "part", output_text(text))))
            return false;
        item = message_item(g, text, true);
    } else {
        const hl_call_out *call = &c->calls[g->open_call];
        const char *args = call->args.p ? call->args.p : "";
        e = event(g, "response.function_call_arguments.done");
        if (!emit(g, out, e,
                  e && cJSON_AddStringToObject(e, "item_id", id) &&
                      cJSON_AddNumberToObject(e, "output_index", g->open_block) &&
                      cJSON_AddStringToObject(e, "arguments", args)))
            return false;
        item = call_item(call->id, call->name, args, true);
    }
    e = event(g, "response.output_item.done");
    const int32_t index = g->open_block;
    g->open_block = g->open_call = -1;
    return emit(g, out, e, e && cJSON_AddNumberToObject(e, "output_index", index) && hl_json_put(e, "item", item));
}

/* Opens output item `call` (-1: a message) as the next index. */
static bool item_start(hl_gen *g, hl_buf *out, int32_t call) {
    if (!item_done(g, out)) return false;
    const hl_choice_out *c = &g->choice[0];
    g->open_block = g->n_blocks++;
    g->open_call = call;
    if (call < 0) g->text_from = c->text.len;
    char id[96];
    item_id(g, id, sizeof id);
    cJSON *item = call < 0 ? message_item(g, "", false) : call_item(c->calls[call].id, c->calls[call].name, "", false);
    cJSON *e = event(g, "response.output_item.added");
    if (!emit(g, out, e,
              e && cJSON_AddNumberToObject(e, "output_index", g->open_block) && hl_json_put(e, "item", item)))
        return false;
    if (call >= 0) return true;
    e = event(g, "response.content_part.added");
    return emit(g, out, e,
                e && cJSON_AddStringToObject(e, "item_id", id) &&
                    cJSON_AddNumberToObject(e, "output_index", g->open_block) &&
                    cJSON_AddNumberToObject(e, "content_index", 0) && hl_json_put(e, "part", output_text("")));
}

static bool delta(hl_gen *g, hl_buf *out, const char *type, const char *text, size_t len) {
    char *s = malloc(len + 1), id[96];
    if (!s) return false;
    memcpy(s, text, len);
    s[len] = '\0';
    item_id(g, id, sizeof id);
    cJSON *e = event(g, type);
    const bool ok = e && cJSON_AddStringToObject(e, "item_id", id) &&
                    cJSON_AddNumberToObject(e, "output_index", g->open_block) &&
                    (g->open_call >= 0 || cJSON_AddNumberToObject(e, "content_index", 0)) &&
                    cJSON_AddStringToObject(e, "delta", s);
    free(s);
    return emit(g, out, e, ok);
}

static bool stream_start(hl_gen *g, hl_buf *out) {
    cJSON *e = event(g, "response.created");
    if (!emit(g, out, e, e && hl_json_put(e, "response", response(g, false)))) return false;
    e = event(g, "response.in_progress");
    return emit(g, out, e, e && hl_json_put(e, "response", response(g, false)));
}

/* Text and call deltas as they come; both are also collected into the
 * choice, for the done events and the final response. */
static bool stream_event(hl_gen *g, const hl_event *ev, hl_buf *out) {
    hl_choice_out *c = &g->choice[0];
    if (ev->len) {
        if ((g->open_block < 0 || g->open_call >= 0) && !item_start(g, out, -1)) return false;
        if (!hl_buf_add(&c->text, ev->text, ev->len) || !delta(g, out, "response.output_text.delta", ev->text, ev->len))
            return false;
    }
    for (int32_t i = 0; i < ev->n_calls; i++) {
        const hearth_tool_call_delta *d = &ev->calls[i];
        const hl_event one = {.n_calls = 1, .calls = (hearth_tool_call_delta *)d};
        if (!hl_gen_collect_calls(c, &one)) return false;
        if (d->index != g->open_call && !item_start(g, out, d->index)) return false;
        if (d->arguments_len &&
            !delta(g, out, "response.function_call_arguments.delta", d->arguments, d->arguments_len))
            return false;
    }
    return true;
}

static bool stream_end(hl_gen *g, hl_buf *out) {
    if (g->err.status) {
        cJSON *e = event(g, "error");
        return emit(g, out, e,
                    e && cJSON_AddStringToObject(e, "code", g->err.code ? g->err.code : "server_error") &&
                        cJSON_AddStringToObject(e, "message", g->err.message) && cJSON_AddNullToObject(e, "param"));
    }
    if (g->n_blocks == 0 && !item_start(g, out, -1)) return false; /* an empty answer is an empty message */
    if (!item_done(g, out)) return false;
    const bool incomplete = g->choice[0].finish == HEARTH_FINISH_LENGTH;
    cJSON *e = event(g, incomplete ? "response.incomplete" : "response.completed");
    return emit(g, out, e, e && hl_json_put(e, "response", response(g, true)));
}

static const hl_dialect responses = {.framing = HL_FRAMING_SSE_EVENTS,
                                     .result = result,
                                     .start = stream_start,
                                     .event = stream_event,
                                     .end = stream_end,
                                     .id_prefix = "resp"};

/* The settings a response repeats: instructions, max_output_tokens,
 * temperature, top_p, tools, tool_choice, parallel_tool_calls, text,
 * metadata (with OpenAI's defaults where not given), store false. */
static cJSON *echo(const cJSON *req) {
    cJSON *e = cJSON_CreateObject();
    static const char *const keys[] = {"instructions", "max_output_tokens",   "temperature", "top_p",   "tools",
                                       "tool_choice",  "parallel_tool_calls", "text",        "metadata"};
    bool ok = e != NULL;
    for (size_t i = 0; ok && i < sizeof keys / sizeof *keys; i++) {
        const cJSON *v = hl_json_field(req, keys[i]);
        ok = v ? hl_json_put(e, keys[i], cJSON_Duplicate(v, true)) : true;
    }
    ok = ok && (hl_json_field(req, "tools") || cJSON_AddArrayToObject(e, "tools")) &&
         (hl_json_field(req, "tool_choice") || cJSON_AddStringToObject(e, "tool_choice", "auto")) &&
         (hl_json_field(req, "parallel_tool_calls") || cJSON_AddBoolToObject(e, "parallel_tool_calls", true)) &&
         (hl_json_field(req, "metadata") || cJSON_AddObjectToObject(e, "metadata")) &&
         cJSON_AddBoolToObject(e, "store", false);
    if (ok) return e;
    cJSON_Delete(e);
    return NULL;
}

void hl_handle_responses(hl_call *call, hl_reply *rep) {
    hl_error err = {0};
    hl_oai_request req;
    const char *model = NULL;
    cJSON *root = NULL, *body = NULL;
    char *printed = NULL;
    if (!hl_server_generates(call->engine, &err) || !(root = hl_json_parse_object(call->body, call->len, &err)) ||
        !hl_json_str(root, "model", &model, &err) || !(body = hl_responses_chat_body(root, &err)))
        goto fail;
    if (!(printed = cJSON_PrintUnformatted(body))) {
        hl_error_oom(&err);
        goto fail;
    }
    hearth_request_params defaults = hearth_request_default_params();
    defaults.sampling.seed = hl_server_unique(call->srv);
    if (!hl_oai_parse(HL_OAI_CHAT, printed, strlen(printed), &defaults, &req, &err)) goto fail;
    cJSON *settings = echo(root);
    if (!settings) {
        hl_oai_request_free(&req);
        hl_error_oom(&err);
        goto fail;
    }
    hl_gen_run(call, rep, &req, &responses, model, settings);
    cJSON_Delete(root);
    cJSON_Delete(body);
    free(printed);
    return;
fail:
    cJSON_Delete(root);
    cJSON_Delete(body);
    free(printed);
    hl_reply_error(rep, &err);
}
