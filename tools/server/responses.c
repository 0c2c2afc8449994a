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

#include "gen.h"

static bool bad(hl_error *err, const char *param, const char *msg) {
    hl_error_set(err, 400, "invalid_request_error", "invalid_value", param, "%s", msg);
    return false;
}

static bool put(cJSON *obj, const char *key, cJSON *item) {
    if (!item) return false;
    if (!cJSON_AddItemToObject(obj, key, item)) {
        cJSON_Delete(item);
        return false;
    }
    return true;
}

static bool push(cJSON *arr, cJSON *item) {
    if (!item) return false;
    if (!cJSON_AddItemToArray(arr, item)) {
        cJSON_Delete(item);
        return false;
    }
    return true;
}

/* ------------------------------------------------------------ requests -- */

/* Fields read; metadata, user, safety_identifier, service_tier and
 * prompt_cache_key change nothing (hearth reuses cached prefixes by itself). */
static const char *const FIELDS[] = {"model",
                                     "input",
                                     "instructions",
                                     "max_output_tokens",
                                     "temperature",
                                     "top_p",
                                     "stream",
                                     "tools",
                                     "tool_choice",
                                     "parallel_tool_calls",
                                     "text",
                                     "store",
                                     "metadata",
                                     "user",
                                     "safety_identifier",
                                     "service_tier",
                                     "prompt_cache_key",
                                     "truncation",
                                     "previous_response_id",
                                     "include",
                                     "reasoning",
                                     "background",
                                     "stream_options"};

static bool check_fields(const cJSON *req, hl_error *err) {
    for (const cJSON *f = req->child; f; f = f->next) {
        size_t i = 0;
        while (i < sizeof FIELDS / sizeof *FIELDS && strcmp(f->string, FIELDS[i]) != 0) i++;
        if (i == sizeof FIELDS / sizeof *FIELDS && !cJSON_IsNull(f)) {
            hl_error_set(err, 400, "invalid_request_error", "unsupported_parameter", NULL,
                         "'%s' is not supported by this server",
                         f->string); /* param is static: the name is in the text */
            return false;
        }
    }
    const cJSON *v;
    bool b = false;
    if ((v = hl_json_field(req, "previous_response_id")))
        return bad(err, "previous_response_id",
                   "previous_response_id is not supported: this server stores no responses; send the whole "
                   "conversation as input");
    if (!hl_json_bool(req, "store", &b, err)) return false;
    if (b) return bad(err, "store", "store: true is not supported: this server stores no responses");
    if (!hl_json_bool(req, "background", &b, err)) return false;
    if (b) return bad(err, "background", "background responses are not supported");
    if ((v = hl_json_field(req, "include")) && !(cJSON_IsArray(v) && cJSON_GetArraySize(v) == 0))
        return bad(err, "include", "include is not supported (no reasoning or search outputs here)");
    if ((v = hl_json_field(req, "reasoning")) && hl_json_field(v, "effort") &&
        !(cJSON_IsString(hl_json_field(v, "effort")) && !strcmp(hl_json_field(v, "effort")->valuestring, "none")))
        return bad(err, "reasoning", "reasoning effort is not supported by this server's models");
    if ((v = hl_json_field(req, "truncation")) && !(cJSON_IsString(v) && !strcmp(v->valuestring, "disabled")))
        return bad(err, "truncation",
                   "only truncation \"disabled\" is supported: an input over the context is an "
                   "error");
    return true;
}

static cJSON *message(const char *role, const char *content) {
    cJSON *m = cJSON_CreateObject();
    if (m && cJSON_AddStringToObject(m, "role", role) && cJSON_AddStringToObject(m, "content", content)) return m;
    cJSON_Delete(m);
    return NULL;
}

/* A message item's content: a string, or input_text / output_text parts joined. */
static bool content_text(const cJSON *content, hl_buf *buf, hl_error *err) {
    if (cJSON_IsString(content)) return hl_buf_adds(buf, content->valuestring) || hl_server_oom(err);
    if (!cJSON_IsArray(content)) return bad(err, "input", "a message's content must be a string or an array of parts");
    for (const cJSON *p = content->child; p; p = p->next) {
        const cJSON *type = hl_json_field(p, "type"), *text = hl_json_field(p, "text");
        const char *t = cJSON_IsString(type) ? type->valuestring : "";
        if ((strcmp(t, "input_text") && strcmp(t, "output_text")) || !cJSON_IsString(text))
            return bad(err, "input",
                       "only input_text and output_text parts are supported (images and files are "
                       "not: this server's model reads text)");
        if ((buf->len && !hl_buf_adds(buf, "\n")) || !hl_buf_adds(buf, text->valuestring)) return hl_server_oom(err);
    }
    return true;
}

/* The last message of `msgs` when it is an assistant's with tool_calls
 * (consecutive function_call items join it), else a new one. */
static cJSON *calls_message(cJSON *msgs, hl_error *err) {
    cJSON *last = cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1);
    cJSON *calls = last ? cJSON_GetObjectItemCaseSensitive(last, "tool_calls") : NULL;
    if (calls) return calls;
    cJSON *m = message("assistant", "");
    calls = cJSON_CreateArray();
    if (!push(msgs, m) || !put(m, "tool_calls", calls)) {
        hl_server_oom(err);
        return NULL;
    }
    return calls;
}

static bool map_item(const cJSON *it, cJSON *msgs, hl_error *err) {
    const cJSON *type = hl_json_field(it, "type"), *role = hl_json_field(it, "role");
    const char *t = cJSON_IsString(type) ? type->valuestring : "message";
    if (!strcmp(t, "message")) {
        if (!cJSON_IsString(role)) return bad(err, "input", "a message item needs a role");
        const char *r = !strcmp(role->valuestring, "developer") ? "system" : role->valuestring;
        hl_buf text = {0};
        const bool ok = content_text(hl_json_field(it, "content"), &text, err) &&
                        (push(msgs, message(r, text.p ? text.p : "")) || hl_server_oom(err));
        hl_buf_free(&text);
        return ok;
    }
    if (!strcmp(t, "function_call")) {
        const cJSON *id = hl_json_field(it, "call_id"), *name = hl_json_field(it, "name");
        const cJSON *args = hl_json_field(it, "arguments");
        if (!cJSON_IsString(id) || !cJSON_IsString(name) || !cJSON_IsString(args))
            return bad(err, "input", "a function_call item needs call_id, name and arguments");
        cJSON *calls = calls_message(msgs, err), *call = cJSON_CreateObject(), *fn = cJSON_CreateObject();
        if (!calls) {
            cJSON_Delete(call);
            cJSON_Delete(fn);
            return false;
        }
        return (push(calls, call) && cJSON_AddStringToObject(call, "id", id->valuestring) &&
                cJSON_AddStringToObject(call, "type", "function") && put(call, "function", fn) &&
                cJSON_AddStringToObject(fn, "name", name->valuestring) &&
                cJSON_AddStringToObject(fn, "arguments", args->valuestring)) ||
               hl_server_oom(err);
    }
    if (!strcmp(t, "function_call_output")) {
        const cJSON *id = hl_json_field(it, "call_id"), *out = hl_json_field(it, "output");
        if (!cJSON_IsString(id)) return bad(err, "input", "a function_call_output item needs call_id");
        hl_buf text = {0};
        bool ok = !out || content_text(out, &text, err);
        cJSON *m = ok ? message("tool", text.p ? text.p : "") : NULL;
        ok = ok && ((m && cJSON_AddStringToObject(m, "tool_call_id", id->valuestring) && push(msgs, m)) ||
                    hl_server_oom(err));
        hl_buf_free(&text);
        return ok;
    }
    if (!strcmp(t, "reasoning")) return true; /* a previous turn's reasoning: not read again */
    hl_error_set(err, 400, "invalid_request_error", "invalid_value", "input",
                 "input items of type '%s' are not supported (message, function_call and function_call_output are)", t);
    return false;
}

/* tools: [{type: function, name, description, parameters, strict}]. */
static bool map_tools(const cJSON *tools, cJSON *body, hl_error *err) {
    if (!tools) return true;
    if (!cJSON_IsArray(tools)) return bad(err, "tools", "tools must be an array");
    cJSON *arr = cJSON_CreateArray();
    if (!put(body, "tools", arr)) return hl_server_oom(err);
    for (const cJSON *t = tools->child; t; t = t->next) {
        const cJSON *type = hl_json_field(t, "type"), *name = hl_json_field(t, "name");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "function") != 0)
            return bad(err, "tools", "only function tools are supported (no built-in tools such as web search)");
        if (!cJSON_IsString(name)) return bad(err, "tools", "each function tool needs a name");
        cJSON *ot = cJSON_CreateObject(), *fn = cJSON_CreateObject();
        static const char *const keys[] = {"name", "description", "parameters", "strict"};
        bool ok = push(arr, ot) && cJSON_AddStringToObject(ot, "type", "function") && put(ot, "function", fn);
        for (size_t i = 0; ok && i < sizeof keys / sizeof *keys; i++)
            if (hl_json_field(t, keys[i])) ok = put(fn, keys[i], cJSON_Duplicate(hl_json_field(t, keys[i]), true));
        if (!ok) return hl_server_oom(err);
    }
    return true;
}

/* tool_choice: "auto" | "none" | "required" | {type: function, name}. */
static bool map_tool_choice(const cJSON *tc, cJSON *body, hl_error *err) {
    if (!tc || cJSON_IsString(tc))
        return !tc || put(body, "tool_choice", cJSON_Duplicate(tc, true)) || hl_server_oom(err);
    const cJSON *type = hl_json_field(tc, "type"), *name = hl_json_field(tc, "name");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "function") != 0 || !cJSON_IsString(name))
        return bad(err, "tool_choice",
                   "tool_choice must be auto, none, required or {\"type\": \"function\", \"name\"}");
    cJSON *c = cJSON_CreateObject(), *fn = cJSON_CreateObject();
    const bool ok = put(body, "tool_choice", c) && cJSON_AddStringToObject(c, "type", "function") &&
                    put(c, "function", fn) && cJSON_AddStringToObject(fn, "name", name->valuestring);
    if (!c) cJSON_Delete(fn);
    return ok || hl_server_oom(err);
}

/* text.format: text | json_object | json_schema {name, schema, strict}. */
static bool map_text(const cJSON *text, cJSON *body, hl_error *err) {
    if (!text) return true;
    for (const cJSON *f = text->child; f; f = f->next)
        if (strcmp(f->string, "format") != 0 && !cJSON_IsNull(f))
            return bad(err, "text", "only text.format is supported");
    const cJSON *format = hl_json_field(text, "format"), *type = format ? hl_json_field(format, "type") : NULL;
    if (!format || (cJSON_IsString(type) && !strcmp(type->valuestring, "text"))) return true;
    cJSON *rf = cJSON_CreateObject();
    bool ok = put(body, "response_format", rf);
    if (cJSON_IsString(type) && !strcmp(type->valuestring, "json_object")) {
        ok = ok && cJSON_AddStringToObject(rf, "type", "json_object");
    } else if (cJSON_IsString(type) && !strcmp(type->valuestring, "json_schema")) {
        cJSON *js = cJSON_CreateObject();
        ok = ok && cJSON_AddStringToObject(rf, "type", "json_schema") && put(rf, "json_schema", js);
        static const char *const keys[] = {"name", "schema", "strict", "description"};
        for (size_t i = 0; ok && i < sizeof keys / sizeof *keys; i++)
            if (hl_json_field(format, keys[i]))
                ok = put(js, keys[i], cJSON_Duplicate(hl_json_field(format, keys[i]), true));
    } else {
        return bad(err, "text", "text.format's type must be text, json_object or json_schema");
    }
    return ok || hl_server_oom(err);
}

/* The Responses body as a chat completions body. */
static cJSON *chat_body(const cJSON *req, hl_error *err) {
    if (!check_fields(req, err)) return NULL;
    cJSON *body = cJSON_CreateObject(), *msgs = cJSON_CreateArray();
    if (!put(body, "messages", msgs)) {
        cJSON_Delete(body);
        hl_server_oom(err);
        return NULL;
    }
    const cJSON *instructions = hl_json_field(req, "instructions"), *input = hl_json_field(req, "input");
    bool ok = true;
    if (instructions)
        ok = cJSON_IsString(instructions)
                 ? push(msgs, message("system", instructions->valuestring)) || hl_server_oom(err)
                 : bad(err, "instructions", "instructions must be a string");
    if (ok && cJSON_IsString(input)) {
        ok = push(msgs, message("user", input->valuestring)) || hl_server_oom(err);
    } else if (ok && cJSON_IsArray(input) && cJSON_GetArraySize(input) > 0) {
        for (const cJSON *it = input->child; ok && it; it = it->next) ok = map_item(it, msgs, err);
    } else if (ok) {
        ok = bad(err, "input", "input must be a string or a non-empty array of items");
    }
    ok = ok && map_tools(hl_json_field(req, "tools"), body, err) &&
         map_tool_choice(hl_json_field(req, "tool_choice"), body, err) &&
         map_text(hl_json_field(req, "text"), body, err);
    static const char *const same[][2] = {{"max_output_tokens", "max_tokens"},
                                          {"temperature", "temperature"},
                                          {"top_p", "top_p"},
                                          {"stream", "stream"},
                                          {"parallel_tool_calls", "parallel_tool_calls"}};
    for (size_t i = 0; ok && i < sizeof same / sizeof *same; i++)
        if (hl_json_field(req, same[i][0]))
            ok = put(body, same[i][1], cJSON_Duplicate(hl_json_field(req, same[i][0]), true)) || hl_server_oom(err);
    if (!ok) {
        cJSON_Delete(body);
        return NULL;
    }
    return body;
}

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
        cJSON_AddStringToObject(m, "role", "assistant") && (!done || push(content, output_text(text))))
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
        ok = put(r, f->string, cJSON_Duplicate(f, true));
    if (ok && done && (c->text.len || !c->n_calls))
        ok = push(output, message_item(g, c->text.p ? c->text.p : "", true));
    for (int32_t k = 0; ok && done && k < c->n_calls; k++)
        ok = push(output,
                  call_item(c->calls[k].id, c->calls[k].name, c->calls[k].args.p ? c->calls[k].args.p : "", true));
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
                      cJSON_AddNumberToObject(e, "content_index", 0) && put(e, "part", output_text(text))))
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
    return emit(g, out, e, e && cJSON_AddNumberToObject(e, "output_index", index) && put(e, "item", item));
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
    if (!emit(g, out, e, e && cJSON_AddNumberToObject(e, "output_index", g->open_block) && put(e, "item", item)))
        return false;
    if (call >= 0) return true;
    e = event(g, "response.content_part.added");
    return emit(g, out, e,
                e && cJSON_AddStringToObject(e, "item_id", id) &&
                    cJSON_AddNumberToObject(e, "output_index", g->open_block) &&
                    cJSON_AddNumberToObject(e, "content_index", 0) && put(e, "part", output_text("")));
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
    if (!emit(g, out, e, e && put(e, "response", response(g, false)))) return false;
    e = event(g, "response.in_progress");
    return emit(g, out, e, e && put(e, "response", response(g, false)));
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
    return emit(g, out, e, e && put(e, "response", response(g, true)));
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
        ok = v ? put(e, keys[i], cJSON_Duplicate(v, true)) : true;
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
        !hl_json_str(root, "model", &model, &err) || !(body = chat_body(root, &err)))
        goto fail;
    if (!(printed = cJSON_PrintUnformatted(body))) {
        hl_server_oom(&err);
        goto fail;
    }
    hearth_request_params defaults = hearth_request_default_params();
    defaults.sampling.seed = hl_server_unique(call->srv);
    if (!hl_oai_parse(HL_OAI_CHAT, printed, strlen(printed), &defaults, &req, &err)) goto fail;
    cJSON *settings = echo(root);
    if (!settings) {
        hl_oai_request_free(&req);
        hl_server_oom(&err);
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
