/* OpenAI Responses bodies rewritten as chat completions bodies
 * (api_request.h): instructions, input items (messages, function_call,
 * function_call_output), function tools, tool_choice, text.format,
 * max_output_tokens; stored-response features and unknown fields refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_request.h"

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
    if (!hl_json_known_fields(req, FIELDS, sizeof FIELDS / sizeof *FIELDS, err)) return false;
    const cJSON *v;
    bool b = false;
    if ((v = hl_json_field(req, "previous_response_id")))
        return hl_error_bad(err, "previous_response_id",
                            "previous_response_id is not supported: this server stores no responses; send the whole "
                            "conversation as input");
    if (!hl_json_bool(req, "store", &b, err)) return false;
    if (b) return hl_error_bad(err, "store", "store: true is not supported: this server stores no responses");
    if (!hl_json_bool(req, "background", &b, err)) return false;
    if (b) return hl_error_bad(err, "background", "background responses are not supported");
    if ((v = hl_json_field(req, "include")) && !(cJSON_IsArray(v) && cJSON_GetArraySize(v) == 0))
        return hl_error_bad(err, "include", "include is not supported (no reasoning or search outputs here)");
    if ((v = hl_json_field(req, "reasoning")) && hl_json_field(v, "effort") &&
        !(cJSON_IsString(hl_json_field(v, "effort")) && !strcmp(hl_json_field(v, "effort")->valuestring, "none")))
        return hl_error_bad(err, "reasoning", "reasoning effort is not supported by this server's models");
    if ((v = hl_json_field(req, "truncation")) && !(cJSON_IsString(v) && !strcmp(v->valuestring, "disabled")))
        return hl_error_bad(err, "truncation",
                            "only truncation \"disabled\" is supported: an input over the context is an "
                            "error");
    return true;
}

/* A message item's content: a string, or input_text / output_text parts joined. */
static bool content_text(const cJSON *content, hl_buf *buf, hl_error *err) {
    if (cJSON_IsString(content)) return hl_buf_adds(buf, content->valuestring) || hl_error_oom(err);
    if (!cJSON_IsArray(content))
        return hl_error_bad(err, "input", "a message's content must be a string or an array of parts");
    for (const cJSON *p = content->child; p; p = p->next) {
        const cJSON *type = hl_json_field(p, "type"), *text = hl_json_field(p, "text");
        const char *t = cJSON_IsString(type) ? type->valuestring : "";
        if ((strcmp(t, "input_text") && strcmp(t, "output_text")) || !cJSON_IsString(text))
            return hl_error_bad(err, "input",
                                "only input_text and output_text parts are supported (images and files are "
                                "not: this server's model reads text)");
        if ((buf->len && !hl_buf_adds(buf, "\n")) || !hl_buf_adds(buf, text->valuestring)) return hl_error_oom(err);
    }
    return true;
}

/* The last message of `msgs` when it is an assistant's with tool_calls
 * (consecutive function_call items join it), else a new one. */
static cJSON *calls_message(cJSON *msgs, hl_error *err) {
    cJSON *last = cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1);
    cJSON *calls = last ? cJSON_GetObjectItemCaseSensitive(last, "tool_calls") : NULL;
    if (calls) return calls;
    cJSON *m = hl_json_message("assistant", "");
    calls = cJSON_CreateArray();
    if (!hl_json_push(msgs, m) || !hl_json_put(m, "tool_calls", calls)) {
        hl_error_oom(err);
        return NULL;
    }
    return calls;
}

static bool map_item(const cJSON *it, cJSON *msgs, hl_error *err) {
    const cJSON *type = hl_json_field(it, "type"), *role = hl_json_field(it, "role");
    const char *t = cJSON_IsString(type) ? type->valuestring : "message";
    if (!strcmp(t, "message")) {
        if (!cJSON_IsString(role)) return hl_error_bad(err, "input", "a message item needs a role");
        const char *r = !strcmp(role->valuestring, "developer") ? "system" : role->valuestring;
        hl_buf text = {0};
        const bool ok = content_text(hl_json_field(it, "content"), &text, err) &&
                        (hl_json_push(msgs, hl_json_message(r, text.p ? text.p : "")) || hl_error_oom(err));
        hl_buf_free(&text);
        return ok;
    }
    if (!strcmp(t, "function_call")) {
        const cJSON *id = hl_json_field(it, "call_id"), *name = hl_json_field(it, "name");
        const cJSON *args = hl_json_field(it, "arguments");
        if (!cJSON_IsString(id) || !cJSON_IsString(name) || !cJSON_IsString(args))
            return hl_error_bad(err, "input", "a function_call item needs call_id, name and arguments");
        cJSON *calls = calls_message(msgs, err);
        return calls && (hl_json_push(calls, hl_oai_tool_call(id->valuestring, name->valuestring, args->valuestring)) ||
                         hl_error_oom(err));
    }
    if (!strcmp(t, "function_call_output")) {
        const cJSON *id = hl_json_field(it, "call_id"), *out = hl_json_field(it, "output");
        if (!cJSON_IsString(id)) return hl_error_bad(err, "input", "a function_call_output item needs call_id");
        hl_buf text = {0};
        bool ok = !out || content_text(out, &text, err);
        cJSON *m = ok ? hl_json_message("tool", text.p ? text.p : "") : NULL;
        ok = ok && ((m && cJSON_AddStringToObject(m, "tool_call_id", id->valuestring) && hl_json_push(msgs, m)) ||
                    hl_error_oom(err));
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
    if (!cJSON_IsArray(tools)) return hl_error_bad(err, "tools", "tools must be an array");
    cJSON *arr = cJSON_CreateArray();
    if (!hl_json_put(body, "tools", arr)) return hl_error_oom(err);
    for (const cJSON *t = tools->child; t; t = t->next) {
        const cJSON *type = hl_json_field(t, "type"), *name = hl_json_field(t, "name");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "function") != 0)
            return hl_error_bad(err, "tools",
                                "only function tools are supported (no built-in tools such as web search)");
        if (!cJSON_IsString(name)) return hl_error_bad(err, "tools", "each function tool needs a name");
        if (!hl_json_push(arr, hl_oai_function_tool(name->valuestring, hl_json_field(t, "description"),
                                                    hl_json_field(t, "parameters"), hl_json_field(t, "strict"))))
            return hl_error_oom(err);
    }
    return true;
}

/* tool_choice: "auto" | "none" | "required" | {type: function, name}. */
static bool map_tool_choice(const cJSON *tc, cJSON *body, hl_error *err) {
    if (!tc || cJSON_IsString(tc))
        return !tc || hl_json_put(body, "tool_choice", cJSON_Duplicate(tc, true)) || hl_error_oom(err);
    const cJSON *type = hl_json_field(tc, "type"), *name = hl_json_field(tc, "name");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "function") != 0 || !cJSON_IsString(name))
        return hl_error_bad(err, "tool_choice",
                            "tool_choice must be auto, none, required or {\"type\": \"function\", \"name\"}");
    return hl_json_put(body, "tool_choice", hl_oai_named_tool_choice(name->valuestring)) || hl_error_oom(err);
}

/* text.format: text | json_object | json_schema {name, schema, strict}. */
static bool map_text(const cJSON *text, cJSON *body, hl_error *err) {
    if (!text) return true;
    for (const cJSON *f = text->child; f; f = f->next)
        if (strcmp(f->string, "format") != 0 && !cJSON_IsNull(f))
            return hl_error_bad(err, "text", "only text.format is supported");
    const cJSON *format = hl_json_field(text, "format"), *type = format ? hl_json_field(format, "type") : NULL;
    if (!format || (cJSON_IsString(type) && !strcmp(type->valuestring, "text"))) return true;
    cJSON *rf = cJSON_CreateObject();
    bool ok = hl_json_put(body, "response_format", rf);
    if (cJSON_IsString(type) && !strcmp(type->valuestring, "json_object")) {
        ok = ok && cJSON_AddStringToObject(rf, "type", "json_object");
    } else if (cJSON_IsString(type) && !strcmp(type->valuestring, "json_schema")) {
        cJSON *js = cJSON_CreateObject();
        ok = ok && cJSON_AddStringToObject(rf, "type", "json_schema") && hl_json_put(rf, "json_schema", js);
        static const char *const keys[] = {"name", "schema", "strict", "description"};
        for (size_t i = 0; ok && i < sizeof keys / sizeof *keys; i++)
            if (hl_json_field(format, keys[i]))
                ok = hl_json_put(js, keys[i], cJSON_Duplicate(hl_json_field(format, keys[i]), true));
    } else {
        return hl_error_bad(err, "text", "text.format's type must be text, json_object or json_schema");
    }
    return ok || hl_error_oom(err);
}

cJSON *hl_responses_chat_body(const cJSON *req, hl_error *err) {
    if (!check_fields(req, err)) return NULL;
    cJSON *body = cJSON_CreateObject(), *msgs = cJSON_CreateArray();
    if (!hl_json_put(body, "messages", msgs)) {
        cJSON_Delete(body);
        hl_error_oom(err);
        return NULL;
    }
    const cJSON *instructions = hl_json_field(req, "instructions"), *input = hl_json_field(req, "input");
    bool ok = true;
    if (instructions)
        ok = cJSON_IsString(instructions)
                 ? hl_json_push(msgs, hl_json_message("system", instructions->valuestring)) || hl_error_oom(err)
                 : hl_error_bad(err, "instructions", "instructions must be a string");
    if (ok && cJSON_IsString(input)) {
        ok = hl_json_push(msgs, hl_json_message("user", input->valuestring)) || hl_error_oom(err);
    } else if (ok && cJSON_IsArray(input) && cJSON_GetArraySize(input) > 0) {
        for (const cJSON *it = input->child; ok && it; it = it->next) ok = map_item(it, msgs, err);
    } else if (ok) {
        ok = hl_error_bad(err, "input", "input must be a string or a non-empty array of items");
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
            ok = hl_json_put(body, same[i][1], cJSON_Duplicate(hl_json_field(req, same[i][0]), true)) ||
                 hl_error_oom(err);
    if (!ok) {
        cJSON_Delete(body);
        return NULL;
    }
    return body;
}
