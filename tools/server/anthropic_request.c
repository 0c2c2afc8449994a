/* Anthropic's Messages bodies rewritten as OpenAI chat bodies
 * (api_request.h): system, text/tool_use/tool_result blocks, tools with
 * input_schema, tool_choice, output_config.format, stop_sequences,
 * temperature 0..1, top_p, top_k; unknown fields, images, documents and
 * extended thinking refused by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_request.h"

/* The text of a content value: a string, or text blocks joined with "\n"
 * into buf. Other block types are not text: false. */
static bool text_of(const cJSON *content, hl_buf *buf, const char *param, hl_error *err) {
    if (cJSON_IsString(content)) return hl_buf_adds(buf, content->valuestring) || hl_error_oom(err);
    if (!cJSON_IsArray(content))
        return hl_error_bad(err, param, "content must be a string or an array of content blocks");
    for (const cJSON *b = content->child; b; b = b->next) {
        const cJSON *type = hl_json_field(b, "type"), *text = hl_json_field(b, "text");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") != 0 || !cJSON_IsString(text))
            return hl_error_bad(err, param,
                                "only text blocks are supported here (images and documents are not: this "
                                "server's model reads text)");
        if ((buf->len && !hl_buf_adds(buf, "\n")) || !hl_buf_adds(buf, text->valuestring)) return hl_error_oom(err);
    }
    return true;
}

/* One Anthropic message into OpenAI messages appended to `out`: a user's
 * tool_result blocks become tool messages (before its text), an
 * assistant's tool_use blocks its tool_calls. */
static bool map_message(const cJSON *m, cJSON *out, hl_error *err) {
    const cJSON *role = hl_json_field(m, "role"), *content = hl_json_field(m, "content");
    if (!cJSON_IsString(role) || (strcmp(role->valuestring, "user") && strcmp(role->valuestring, "assistant")))
        return hl_error_bad(err, "messages", "each message needs a role of \"user\" or \"assistant\"");
    if (!content) return hl_error_bad(err, "messages", "each message needs content");
    const bool user = !strcmp(role->valuestring, "user");
    hl_buf text = {0};
    cJSON *calls = NULL;
    bool ok = true;
    if (cJSON_IsString(content)) {
        ok = hl_buf_adds(&text, content->valuestring) || hl_error_oom(err);
    } else if (cJSON_IsArray(content)) {
        for (const cJSON *b = content->child; ok && b; b = b->next) {
            const cJSON *type = hl_json_field(b, "type");
            const char *t = cJSON_IsString(type) ? type->valuestring : "";
            if (!strcmp(t, "text")) {
                const cJSON *s = hl_json_field(b, "text");
                ok = cJSON_IsString(s) ? (!text.len || hl_buf_adds(&text, "\n")) && hl_buf_adds(&text, s->valuestring)
                                       : hl_error_bad(err, "messages", "a text block needs text");
            } else if (!strcmp(t, "tool_result") && user) {
                const cJSON *id = hl_json_field(b, "tool_use_id"), *c = hl_json_field(b, "content");
                hl_buf result = {0};
                ok = cJSON_IsString(id) ? !c || text_of(c, &result, "messages", err)
                                        : hl_error_bad(err, "messages", "a tool_result block needs tool_use_id");
                cJSON *tm = ok ? hl_json_message("tool", result.p ? result.p : "") : NULL;
                ok = ok && tm && cJSON_AddStringToObject(tm, "tool_call_id", id->valuestring) && hl_json_push(out, tm);
                hl_buf_free(&result);
            } else if (!strcmp(t, "tool_use") && !user) {
                const cJSON *id = hl_json_field(b, "id"), *name = hl_json_field(b, "name");
                const cJSON *input = hl_json_field(b, "input");
                if (!cJSON_IsString(id) || !cJSON_IsString(name)) {
                    ok = hl_error_bad(err, "messages", "a tool_use block needs id and name");
                    break;
                }
                char *args = input ? cJSON_PrintUnformatted(input) : strdup("{}");
                if (!calls) calls = cJSON_CreateArray();
                ok = (args && calls &&
                      hl_json_push(calls, hl_oai_tool_call(id->valuestring, name->valuestring, args))) ||
                     hl_error_oom(err);
                free(args);
            } else if (!strcmp(t, "thinking") || !strcmp(t, "redacted_thinking")) {
                /* a previous turn's thinking: not part of what the model reads again */
            } else {
                ok = hl_error_bad(err, "messages",
                                  user
                                      ? "user content blocks must be text or tool_result (images and documents are not "
                                        "supported: this server's model reads text)"
                                      : "assistant content blocks must be text or tool_use");
            }
        }
    } else {
        ok = hl_error_bad(err, "messages", "content must be a string or an array of content blocks");
    }
    if (ok && (text.len || calls || !user)) {
        cJSON *om = hl_json_message(role->valuestring, text.p ? text.p : "");
        ok = om && hl_json_push(out, om) && (!calls || hl_json_put(om, "tool_calls", calls));
        calls = NULL;
    }
    cJSON_Delete(calls);
    hl_buf_free(&text);
    return ok;
}

/* tools: [{name, description, input_schema}] -> OpenAI's function tools. */
static bool map_tools(const cJSON *tools, cJSON *body, hl_error *err) {
    if (!tools) return true;
    if (!cJSON_IsArray(tools)) return hl_error_bad(err, "tools", "tools must be an array");
    cJSON *arr = cJSON_CreateArray();
    if (!hl_json_put(body, "tools", arr)) return hl_error_oom(err);
    for (const cJSON *t = tools->child; t; t = t->next) {
        const cJSON *name = hl_json_field(t, "name"), *type = hl_json_field(t, "type");
        if (type && !(cJSON_IsString(type) && !strcmp(type->valuestring, "custom")))
            return hl_error_bad(err, "tools",
                                "only custom tools (name, description, input_schema) are supported; server "
                                "tools such as web search are not");
        if (!cJSON_IsString(name)) return hl_error_bad(err, "tools", "each tool needs a name");
        if (!hl_json_push(arr, hl_oai_function_tool(name->valuestring, hl_json_field(t, "description"),
                                                    hl_json_field(t, "input_schema"), NULL)))
            return hl_error_oom(err);
    }
    return true;
}

/* tool_choice {type: auto|any|tool|none, name, disable_parallel_tool_use}. */
static bool map_tool_choice(const cJSON *tc, cJSON *body, hl_error *err) {
    if (!tc) return true;
    const cJSON *type = hl_json_field(tc, "type"), *name = hl_json_field(tc, "name");
    bool no_parallel = false;
    if (!cJSON_IsString(type) || !hl_json_bool(tc, "disable_parallel_tool_use", &no_parallel, err))
        return !err->status ? hl_error_bad(err, "tool_choice", "tool_choice needs a type: auto, any, tool or none")
                            : false;
    const char *t = type->valuestring;
    bool ok;
    if (!strcmp(t, "auto") || !strcmp(t, "none")) {
        ok = cJSON_AddStringToObject(body, "tool_choice", t) != NULL;
    } else if (!strcmp(t, "any")) {
        ok = cJSON_AddStringToObject(body, "tool_choice", "required") != NULL;
    } else if (!strcmp(t, "tool")) {
        if (!cJSON_IsString(name)) return hl_error_bad(err, "tool_choice", "tool_choice of type tool needs a name");
        ok = hl_json_put(body, "tool_choice", hl_oai_named_tool_choice(name->valuestring));
    } else {
        return hl_error_bad(err, "tool_choice", "tool_choice's type must be auto, any, tool or none");
    }
    return (ok && (!no_parallel || cJSON_AddBoolToObject(body, "parallel_tool_calls", false))) || hl_error_oom(err);
}

/* The fields hearth reads; metadata (a user id for abuse reports),
 * cache_control (hearth reuses cached prefixes by itself) and service_tier
 * (one tier here) change nothing. Any other field is refused by name. */
static const char *const FIELDS[] = {
    "model", "max_tokens", "messages",    "system",   "stop_sequences", "stream",   "temperature",   "top_p",
    "top_k", "tools",      "tool_choice", "thinking", "output_config",  "metadata", "cache_control", "service_tier"};

/* output_config: format {type: json_schema, schema} as OpenAI's
 * response_format; effort (a thinking budget) is refused. */
static bool map_output_config(const cJSON *oc, cJSON *body, hl_error *err) {
    if (!oc) return true;
    if (hl_json_field(oc, "effort")) return hl_error_bad(err, "output_config", "output_config.effort is not supported");
    const cJSON *format = hl_json_field(oc, "format");
    if (!format) return true;
    const cJSON *type = hl_json_field(format, "type"), *schema = hl_json_field(format, "schema");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "json_schema") != 0 || !cJSON_IsObject(schema))
        return hl_error_bad(err, "output_config",
                            "output_config.format must be {\"type\": \"json_schema\", \"schema\": {...}}");
    cJSON *rf = cJSON_CreateObject(), *js = cJSON_CreateObject();
    const bool ok = hl_json_put(body, "response_format", rf) && cJSON_AddStringToObject(rf, "type", "json_schema") &&
                    hl_json_put(rf, "json_schema", js) && cJSON_AddStringToObject(js, "name", "output") &&
                    hl_json_put(js, "schema", cJSON_Duplicate(schema, true));
    if (!rf) cJSON_Delete(js);
    return ok || hl_error_oom(err);
}

cJSON *hl_anthropic_chat_body(const cJSON *req, bool count_only, hl_error *err) {
    if (!hl_json_known_fields(req, FIELDS, sizeof FIELDS / sizeof *FIELDS, err)) return NULL;
    cJSON *body = cJSON_CreateObject(), *msgs = cJSON_CreateArray();
    if (!hl_json_put(body, "messages", msgs)) {
        cJSON_Delete(body);
        hl_error_oom(err);
        return NULL;
    }
    const cJSON *system = hl_json_field(req, "system"), *messages = hl_json_field(req, "messages");
    const cJSON *thinking = hl_json_field(req, "thinking");
    bool ok = true;
    if (thinking) {
        const cJSON *type = hl_json_field(thinking, "type");
        if (!(cJSON_IsString(type) && !strcmp(type->valuestring, "disabled")))
            ok = hl_error_bad(err, "thinking", "extended thinking is not supported by this server");
    }
    if (ok && system) {
        hl_buf text = {0};
        ok = text_of(system, &text, "system", err) &&
             hl_json_push(msgs, hl_json_message("system", text.p ? text.p : ""));
        hl_buf_free(&text);
    }
    if (ok && (!cJSON_IsArray(messages) || cJSON_GetArraySize(messages) == 0))
        ok = hl_error_bad(err, "messages", "messages must be a non-empty array");
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
        ok = ok && hl_json_put(body, "max_tokens", cJSON_Duplicate(max, true)) &&
             (!hl_json_field(req, "stop_sequences") ||
              hl_json_put(body, "stop", cJSON_Duplicate(hl_json_field(req, "stop_sequences"), true)));
        double temperature = 1;
        if (ok && !hl_json_num(req, "temperature", 0, 1, &temperature, err)) ok = false; /* Anthropic's range */
        static const char *const same[] = {"temperature", "top_p", "top_k", "stream"};
        for (size_t i = 0; ok && i < sizeof same / sizeof *same; i++)
            if (hl_json_field(req, same[i]))
                ok = hl_json_put(body, same[i], cJSON_Duplicate(hl_json_field(req, same[i]), true));
    }
    if (!ok) {
        if (!err->status) hl_error_oom(err);
        cJSON_Delete(body);
        return NULL;
    }
    return body;
}
