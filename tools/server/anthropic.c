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

/* ------------------------------------------------------------ requests -- */

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

/* The text of a content value: a string, or text blocks joined with "\n"
 * into buf. Other block types are not text: false. */
static bool text_of(const cJSON *content, hl_buf *buf, const char *param, hl_error *err) {
    if (cJSON_IsString(content)) return hl_buf_adds(buf, content->valuestring) || hl_server_oom(err);
    if (!cJSON_IsArray(content)) return bad(err, param, "content must be a string or an array of content blocks");
    for (const cJSON *b = content->child; b; b = b->next) {
        const cJSON *type = hl_json_field(b, "type"), *text = hl_json_field(b, "text");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") != 0 || !cJSON_IsString(text))
            return bad(err, param,
                       "only text blocks are supported here (images and documents are not: this "
                       "server's model reads text)");
        if ((buf->len && !hl_buf_adds(buf, "\n")) || !hl_buf_adds(buf, text->valuestring)) return hl_server_oom(err);
    }
    return true;
}

static cJSON *message(const char *role, const char *content) {
    cJSON *m = cJSON_CreateObject();
    if (m && cJSON_AddStringToObject(m, "role", role) && cJSON_AddStringToObject(m, "content", content)) return m;
    cJSON_Delete(m);
    return NULL;
}

/* One Anthropic message into OpenAI messages appended to `out`: a user's
 * tool_result blocks become tool messages (before its text), an
 * assistant's tool_use blocks its tool_calls. */
static bool map_message(const cJSON *m, cJSON *out, hl_error *err) {
    const cJSON *role = hl_json_field(m, "role"), *content = hl_json_field(m, "content");
    if (!cJSON_IsString(role) || (strcmp(role->valuestring, "user") && strcmp(role->valuestring, "assistant")))
        return bad(err, "messages", "each message needs a role of \"user\" or \"assistant\"");
    if (!content) return bad(err, "messages", "each message needs content");
    const bool user = !strcmp(role->valuestring, "user");
    hl_buf text = {0};
    cJSON *calls = NULL;
    bool ok = true;
    if (cJSON_IsString(content)) {
        ok = hl_buf_adds(&text, content->valuestring) || hl_server_oom(err);
    } else if (cJSON_IsArray(content)) {
        for (const cJSON *b = content->child; ok && b; b = b->next) {
            const cJSON *type = hl_json_field(b, "type");
            const char *t = cJSON_IsString(type) ? type->valuestring : "";
            if (!strcmp(t, "text")) {
                const cJSON *s = hl_json_field(b, "text");
                ok = cJSON_IsString(s) ? (!text.len || hl_buf_adds(&text, "\n")) && hl_buf_adds(&text, s->valuestring)
                                       : bad(err, "messages", "a text block needs text");
            } else if (!strcmp(t, "tool_result") && user) {
                const cJSON *id = hl_json_field(b, "tool_use_id"), *c = hl_json_field(b, "content");
                hl_buf result = {0};
                ok = cJSON_IsString(id) ? !c || text_of(c, &result, "messages", err)
                                        : bad(err, "messages", "a tool_result block needs tool_use_id");
                cJSON *tm = ok ? message("tool", result.p ? result.p : "") : NULL;
                ok = ok && tm && cJSON_AddStringToObject(tm, "tool_call_id", id->valuestring) && push(out, tm);
                hl_buf_free(&result);
            } else if (!strcmp(t, "tool_use") && !user) {
                const cJSON *id = hl_json_field(b, "id"), *name = hl_json_field(b, "name");
                const cJSON *input = hl_json_field(b, "input");
                if (!cJSON_IsString(id) || !cJSON_IsString(name)) {
                    ok = bad(err, "messages", "a tool_use block needs id and name");
                    break;
                }
                char *args = input ? cJSON_PrintUnformatted(input) : strdup("{}");
                cJSON *call = cJSON_CreateObject(), *fn = cJSON_CreateObject();
                if (!calls) calls = cJSON_CreateArray();
                ok = args && calls && push(calls, call) && cJSON_AddStringToObject(call, "id", id->valuestring) &&
                     cJSON_AddStringToObject(call, "type", "function") && put(call, "function", fn) &&
                     cJSON_AddStringToObject(fn, "name", name->valuestring) &&
                     cJSON_AddStringToObject(fn, "arguments", args);
                free(args);
            } else if (!strcmp(t, "thinking") || !strcmp(t, "redacted_thinking")) {
                /* a previous turn's thinking: not part of what the model reads again */
            } else {
                ok = bad(err, "messages",
                         user ? "user content blocks must be text or tool_result (images and documents are not "
                                "supported: this server's model reads text)"
                              : "assistant content blocks must be text or tool_use");
            }
        }
    } else {
        ok = bad(err, "messages", "content must be a string or an array of content blocks");
    }
    if (ok && (text.len || calls || !user)) {
        cJSON *om = message(role->valuestring, text.p ? text.p : "");
        ok = om && push(out, om) && (!calls || put(om, "tool_calls", calls));
        calls = NULL;
    }
    cJSON_Delete(calls);
    hl_buf_free(&text);
    return ok;
}

/* tools: [{name, description, input_schema}] -> OpenAI's function tools. */
static bool map_tools(const cJSON *tools, cJSON *body, hl_error *err) {
    if (!tools) return true;
    if (!cJSON_IsArray(tools)) return bad(err, "tools", "tools must be an array");
    cJSON *arr = cJSON_CreateArray();
    if (!put(body, "tools", arr)) return hl_server_oom(err);
    for (const cJSON *t = tools->child; t; t = t->next) {
        const cJSON *name = hl_json_field(t, "name"), *type = hl_json_field(t, "type");
        if (type && !(cJSON_IsString(type) && !strcmp(type->valuestring, "custom")))
            return bad(err, "tools",
                       "only custom tools (name, description, input_schema) are supported; server "
                       "tools such as web search are not");
        if (!cJSON_IsString(name)) return bad(err, "tools", "each tool needs a name");
        cJSON *ot = cJSON_CreateObject(), *fn = cJSON_CreateObject();
        const cJSON *desc = hl_json_field(t, "description"), *schema = hl_json_field(t, "input_schema");
        bool ok = push(arr, ot) && cJSON_AddStringToObject(ot, "type", "function") && put(ot, "function", fn) &&
                  cJSON_AddStringToObject(fn, "name", name->valuestring) &&
                  (!desc || put(fn, "description", cJSON_Duplicate(desc, true))) &&
                  (!schema || put(fn, "parameters", cJSON_Duplicate(schema, true)));
        if (!ok) return hl_server_oom(err);
    }
    return true;
}

/* tool_choice {type: auto|any|tool|none, name, disable_parallel_tool_use}. */
static bool map_tool_choice(const cJSON *tc, cJSON *body, hl_error *err) {
    if (!tc) return true;
    const cJSON *type = hl_json_field(tc, "type"), *name = hl_json_field(tc, "name");
    bool no_parallel = false;
    if (!cJSON_IsString(type) || !hl_json_bool(tc, "disable_parallel_tool_use", &no_parallel, err))
        return !err->status ? bad(err, "tool_choice", "tool_choice needs a type: auto, any, tool or none") : false;
    const char *t = type->valuestring;
    bool ok;
    if (!strcmp(t, "auto") || !strcmp(t, "none")) {
        ok = cJSON_AddStringToObject(body, "tool_choice", t) != NULL;
    } else if (!strcmp(t, "any")) {
        ok = cJSON_AddStringToObject(body, "tool_choice", "required") != NULL;
    } else if (!strcmp(t, "tool")) {
        if (!cJSON_IsString(name)) return bad(err, "tool_choice", "tool_choice of type tool needs a name");
        cJSON *c = cJSON_CreateObject(), *fn = cJSON_CreateObject();
        ok = put(body, "tool_choice", c) && cJSON_AddStringToObject(c, "type", "function") && put(c, "function", fn) &&
             cJSON_AddStringToObject(fn, "name", name->valuestring);
    } else {
        return bad(err, "tool_choice", "tool_choice's type must be auto, any, tool or none");
    }
    return (ok && (!no_parallel || cJSON_AddBoolToObject(body, "parallel_tool_calls", false))) || hl_server_oom(err);
}

/* The fields hearth reads; metadata (a user id for abuse reports),
 * cache_control (hearth reuses cached prefixes by itself) and service_tier
 * (one tier here) change nothing. Any other field is refused by name. */
static const char *const FIELDS[] = {
    "model", "max_tokens", "messages",    "system",   "stop_sequences", "stream",   "temperature",   "top_p",
    "top_k", "tools",      "tool_choice", "thinking", "output_config",  "metadata", "cache_control", "service_tier"};

static bool known_fields(const cJSON *req, hl_error *err) {
    for (const cJSON *f = req->child; f; f = f->next) {
        size_t i = 0;
        while (i < sizeof FIELDS / sizeof *FIELDS && strcmp(f->string, FIELDS[i]) != 0) i++;
        if (i == sizeof FIELDS / sizeof *FIELDS && !cJSON_IsNull(f)) {
            hl_error_set(err, 400, "invalid_request_error", "unsupported_parameter", NULL,
                         "%s: this field is not supported by this server", f->string);
            return false;
        }
    }
    return true;
}

/* output_config: format {type: json_schema, schema} as OpenAI's
 * response_format; effort (a thinking budget) is refused. */
static bool map_output_config(const cJSON *oc, cJSON *body, hl_error *err) {
    if (!oc) return true;
    if (hl_json_field(oc, "effort")) return bad(err, "output_config", "output_config.effort is not supported");
    const cJSON *format = hl_json_field(oc, "format");
    if (!format) return true;
    const cJSON *type = hl_json_field(format, "type"), *schema = hl_json_field(format, "schema");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "json_schema") != 0 || !cJSON_IsObject(schema))
        return bad(err, "output_config", "output_config.format must be {\"type\": \"json_schema\", \"schema\": {...}}");
    cJSON *rf = cJSON_CreateObject(), *js = cJSON_CreateObject();
    const bool ok = put(body, "response_format", rf) && cJSON_AddStringToObject(rf, "type", "json_schema") &&
                    put(rf, "json_schema", js) && cJSON_AddStringToObject(js, "name", "output") &&
                    put(js, "schema", cJSON_Duplicate(schema, true));
    if (!rf) cJSON_Delete(js);
    return ok || hl_server_oom(err);
}

/* The Messages body as an OpenAI chat body. */
static cJSON *chat_body(const cJSON *req, bool count_only, hl_error *err) {
    if (!known_fields(req, err)) return NULL;
    cJSON *body = cJSON_CreateObject(), *msgs = cJSON_CreateArray();
    if (!put(body, "messages", msgs)) {
        cJSON_Delete(body);
        hl_server_oom(err);
        return NULL;
    }
    const cJSON *system = hl_json_field(req, "system"), *messages = hl_json_field(req, "messages");
    const cJSON *thinking = hl_json_field(req, "thinking");
    bool ok = true;
    if (thinking) {
        const cJSON *type = hl_json_field(thinking, "type");
        if (!(cJSON_IsString(type) && !strcmp(type->valuestring, "disabled")))
            ok = bad(err, "thinking", "extended thinking is not supported by this server");
    }
    if (ok && system) {
        hl_buf text = {0};
        ok = text_of(system, &text, "system", err) && push(msgs, message("system", text.p ? text.p : ""));
        hl_buf_free(&text);
    }
    if (ok && (!cJSON_IsArray(messages) || cJSON_GetArraySize(messages) == 0))
        ok = bad(err, "messages", "messages must be a non-empty array");
    for (const cJSON *m = ok ? messages->child : NULL; ok && m; m = m->next) ok = map_message(m, msgs, err);
    ok = ok && map_tools(hl_json_field(req, "tools"), body, err) &&
         map_tool_choice(hl_json_field(req, "tool_choice"), body, err) &&
         map_output_config(hl_json_field(req, "output_config"), body, err);
    if (ok && !count_only) {
        const cJSON *max = hl_json_field(req, "max_tokens");
        if (!cJSON_IsNumber(max)) {
            hl_error_set(err, 400, "invalid_request_error", "missing_field", "max_tokens",
                         "max_tokens: Field required");
            ok = false;
        }
        /* the fields of the same meaning as OpenAI's, under their names there */
        ok = ok && put(body, "max_tokens", cJSON_Duplicate(max, true)) &&
             (!hl_json_field(req, "stop_sequences") ||
              put(body, "stop", cJSON_Duplicate(hl_json_field(req, "stop_sequences"), true)));
        double temperature = 1;
        if (ok && !hl_json_num(req, "temperature", 0, 1, &temperature, err)) ok = false; /* Anthropic's range */
        static const char *const same[] = {"temperature", "top_p", "top_k", "stream"};
        for (size_t i = 0; ok && i < sizeof same / sizeof *same; i++)
            if (hl_json_field(req, same[i]))
                ok = put(body, same[i], cJSON_Duplicate(hl_json_field(req, same[i]), true));
    }
    if (!ok) {
        if (!err->status) hl_server_oom(err);
        cJSON_Delete(body);
        return NULL;
    }
    return body;
}

/* The request parsed into an OpenAI request; false with *err. */
static bool parse(hl_call *call, bool count_only, hl_oai_request *out, const char **model, cJSON **root,
                  hl_error *err) {
    cJSON *req = hl_json_parse_object(call->body, call->len, err);
    if (!req) return false;
    *root = req;
    if (!hl_json_str(req, "model", model, err)) return false;
    cJSON *body = chat_body(req, count_only, err);
    char *printed = body ? cJSON_PrintUnformatted(body) : NULL;
    cJSON_Delete(body);
    if (body && !printed) return hl_server_oom(err);
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
              put(m, "content", content) &&
              (done ? cJSON_AddStringToObject(m, "stop_reason", stop_reason(g, c->finish)) != NULL
                    : cJSON_AddNullToObject(m, "stop_reason") != NULL) &&
              (done && g->stop[0] ? cJSON_AddStringToObject(m, "stop_sequence", g->stop) != NULL
                                  : cJSON_AddNullToObject(m, "stop_sequence") != NULL) &&
              put(m, "usage", usage(g));
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
        cJSON_AddStringToObject(b, "name", name) && put(b, "input", input ? input : cJSON_CreateObject()))
        return b;
    cJSON_Delete(b);
    return NULL;
}

static cJSON *result(hl_gen *g) {
    const hl_choice_out *c = &g->choice[0];
    cJSON *content = cJSON_CreateArray();
    bool ok = content != NULL;
    if (ok && (c->text.len || !c->n_calls)) ok = push(content, text_block(c->text.p ? c->text.p : ""));
    for (int32_t k = 0; ok && k < c->n_calls; k++)
        ok = push(content,
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
    if (!e || !cJSON_AddNumberToObject(e, "index", g->n_blocks) || !put(e, "content_block", block)) {
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
    bool ok = e && cJSON_AddNumberToObject(e, "index", g->open_block) && put(e, "delta", d) &&
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
    if (!e || !put(e, "message", message_json(g, content, false))) {
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
    bool ok = e && put(e, "delta", d) &&
              cJSON_AddStringToObject(d, "stop_reason", stop_reason(g, g->choice[0].finish)) &&
              (g->stop[0] ? cJSON_AddStringToObject(d, "stop_sequence", g->stop) != NULL
                          : cJSON_AddNullToObject(d, "stop_sequence") != NULL) &&
              put(e, "usage", usage(g)); /* input_tokens too: message_start went out before the prompt was read */
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
