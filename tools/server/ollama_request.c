/* Ollama's /api/chat and /api/generate bodies rewritten as OpenAI chat or
 * completion bodies (api_request.h): messages (images refused, tool calls'
 * argument objects printed, tool results kept), tools, `format` as
 * response_format, `options` as sampling fields; think, template, suffix,
 * context and options hearth has no sampler for refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_request.h"

/* A copy of src[key] into dst[as] when present (not null). */
static bool copy_field(cJSON *dst, const char *as, const cJSON *src, const char *key) {
    const cJSON *v = hl_json_field(src, key);
    return !v || hl_json_put(dst, as, cJSON_Duplicate(v, true));
}

static bool refuse(hl_error *err, const char *param, const char *fmt, const char *what) {
    hl_error_set(err, 400, "invalid_request_error", "unsupported_parameter", param, fmt, what);
    return false;
}

/* Ollama's sampling options that map onto OpenAI fields hl_oai_parse reads. */
static const struct {
    const char *ollama, *openai;
} OPTION_FIELDS[] = {
    {"temperature", "temperature"},
    {"top_p", "top_p"},
    {"top_k", "top_k"},
    {"min_p", "min_p"},
    {"seed", "seed"},
    {"num_predict", "max_tokens"},
    {"stop", "stop"},
    {"presence_penalty", "presence_penalty"},
    {"frequency_penalty", "frequency_penalty"},
};

/* Options that hearth has no sampler for: refused unless given as the value
 * that turns them off. */
static const struct {
    const char *name;
    double off;
} OPTIONS_OFF[] = {{"mirostat", 0}, {"tfs_z", 1}, {"typical_p", 1}};

/* Options of how the server loads and runs the model (its flags set them
 * for every request; a request's values are accepted and not applied, as
 * one server holds one loaded model), and num_keep (the server's --keep). */
static const char *const OPTIONS_LOAD[] = {
    "num_ctx",    "num_batch",     "num_gpu",      "main_gpu",         "num_thread",          "low_vram",
    "use_mmap",   "use_mlock",     "numa",         "num_keep",         "vocab_only",          "f16_kv",
    "logits_all", "mirostat_tau",  "mirostat_eta", "penalize_newline", "rope_frequency_base", "rope_frequency_scale",
    "num_gqa",    "embedding_only"};

/* options into the OpenAI body (and repeat_penalty / repeat_last_n, which
 * it has no fields for, into *repeat). */
static bool map_options(const cJSON *options, cJSON *body, double repeat[2], uint32_t n_ctx_slot, hl_error *err) {
    if (!options) return true;
    if (!cJSON_IsObject(options)) {
        hl_error_set(err, 400, "invalid_request_error", "invalid_type", "options", "'options' must be an object");
        return false;
    }
    for (const cJSON *o = options->child; o; o = o->next) {
        if (cJSON_IsNull(o)) continue;
        bool known = false;
        for (size_t i = 0; !known && i < sizeof OPTION_FIELDS / sizeof *OPTION_FIELDS; i++)
            if (!strcmp(o->string, OPTION_FIELDS[i].ollama)) {
                known = true;
                /* num_predict -1 (and -2, "until the context is full") is hearth's default */
                if (!strcmp(o->string, "num_predict") && cJSON_IsNumber(o) && o->valuedouble < 0) continue;
                if (!hl_json_put(body, OPTION_FIELDS[i].openai, cJSON_Duplicate(o, true))) {
                    hl_error_set(err, 500, "server_error", NULL, NULL, "out of memory");
                    return false;
                }
            }
        for (size_t i = 0; !known && i < sizeof OPTIONS_OFF / sizeof *OPTIONS_OFF; i++)
            if (!strcmp(o->string, OPTIONS_OFF[i].name)) {
                known = true;
                if (!cJSON_IsNumber(o) || o->valuedouble != OPTIONS_OFF[i].off)
                    return refuse(err, "options", "option '%s' is not supported by this server (only its off value)",
                                  o->string);
            }
        for (size_t i = 0; !known && i < sizeof OPTIONS_LOAD / sizeof *OPTIONS_LOAD; i++)
            known = !strcmp(o->string, OPTIONS_LOAD[i]);
        if (!strcmp(o->string, "num_ctx") && cJSON_IsNumber(o) && o->valuedouble > n_ctx_slot) {
            hl_error_set(err, 400, "invalid_request_error", "invalid_value", "num_ctx",
                         "num_ctx %.0f is more than this server's context of %u tokens a request: start hearth serve "
                         "with a larger -c (or fewer --parallel slots)",
                         o->valuedouble, (unsigned)n_ctx_slot);
            return false;
        }
        if (!strcmp(o->string, "repeat_penalty") || !strcmp(o->string, "repeat_last_n")) {
            known = true;
            if (!cJSON_IsNumber(o)) {
                hl_error_set(err, 400, "invalid_request_error", "invalid_type", "options", "'%s' must be a number",
                             o->string);
                return false;
            }
            repeat[!strcmp(o->string, "repeat_last_n")] = o->valuedouble;
        }
        if (!known) return refuse(err, "options", "option '%s' is not an option hearth knows", o->string);
    }
    return true;
}

/* format: "json" -> response_format json_object; a JSON Schema -> json_schema. */
static bool map_format(const cJSON *format, cJSON *body, hl_error *err) {
    if (!format || (cJSON_IsString(format) && !format->valuestring[0])) return true;
    cJSON *rf = cJSON_CreateObject();
    bool ok = rf != NULL;
    if (cJSON_IsString(format) && !strcmp(format->valuestring, "json")) {
        ok = ok && cJSON_AddStringToObject(rf, "type", "json_object");
    } else if (cJSON_IsObject(format)) {
        cJSON *js = cJSON_CreateObject();
        ok = ok && cJSON_AddStringToObject(rf, "type", "json_schema") && hl_json_put(rf, "json_schema", js) &&
             cJSON_AddStringToObject(js, "name", "format") && hl_json_put(js, "schema", cJSON_Duplicate(format, true));
    } else {
        cJSON_Delete(rf);
        hl_error_set(err, 400, "invalid_request_error", "invalid_value", "format",
                     "'format' must be \"json\" or a JSON Schema object");
        return false;
    }
    if (!ok || !hl_json_put(body, "response_format", rf)) {
        if (!ok) cJSON_Delete(rf);
        hl_error_set(err, 500, "server_error", NULL, NULL, "out of memory");
        return false;
    }
    return true;
}

/* An Ollama message into an OpenAI one: images refused; tool_calls'
 * arguments objects printed as strings, with ids; tool results keep
 * their text. */
static cJSON *map_message(const cJSON *m, int32_t index, hl_error *err) {
    if (!cJSON_IsObject(m)) {
        hl_error_set(err, 400, "invalid_request_error", "invalid_type", "messages",
                     "'messages' must be an array of objects with 'role' and 'content'");
        return NULL;
    }
    const cJSON *images = hl_json_field(m, "images");
    if (images && (!cJSON_IsArray(images) || cJSON_GetArraySize(images) > 0)) {
        hl_error_set(err, 400, "invalid_request_error", "unsupported_parameter", "images",
                     "message %d has images: this server's model reads text only", (int)index);
        return NULL;
    }
    cJSON *out = cJSON_CreateObject();
    bool ok = out && copy_field(out, "role", m, "role") && copy_field(out, "content", m, "content");
    if (ok && !hl_json_field(m, "content")) ok = cJSON_AddStringToObject(out, "content", "") != NULL;
    const cJSON *calls = hl_json_field(m, "tool_calls");
    if (ok && cJSON_IsArray(calls)) {
        cJSON *arr = cJSON_CreateArray();
        ok = hl_json_put(out, "tool_calls", arr);
        int32_t k = 0;
        for (const cJSON *c = calls->child; ok && c; c = c->next, k++) {
            const cJSON *fn = hl_json_field(c, "function"), *args = fn ? hl_json_field(fn, "arguments") : NULL;
            const cJSON *name = fn ? hl_json_field(fn, "name") : NULL;
            if (!cJSON_IsString(name)) {
                cJSON_Delete(out);
                hl_error_set(err, 400, "invalid_request_error", "invalid_value", "messages",
                             "message %d: a tool call needs function.name", (int)index);
                return NULL;
            }
            char id[32];
            snprintf(id, sizeof id, "call_%d_%d", (int)index, (int)k);
            char *printed = args ? (cJSON_IsString(args) ? strdup(args->valuestring) : cJSON_PrintUnformatted(args))
                                 : strdup("{}");
            ok = printed && hl_json_push(arr, hl_oai_tool_call(id, name->valuestring, printed));
            free(printed);
        }
    }
    if (ok && hl_json_field(m, "tool_name")) ok = copy_field(out, "name", m, "tool_name");
    if (!ok) {
        cJSON_Delete(out);
        hl_error_set(err, 500, "server_error", NULL, NULL, "out of memory");
        return NULL;
    }
    return out;
}

/* The fields of chat and generate alike: stream (default true), format,
 * options, tools; the refusal of think. */
static bool map_common(const cJSON *req, cJSON *body, double repeat[2], uint32_t n_ctx_slot, hl_error *err) {
    bool stream = true, think = false;
    if (!hl_json_bool(req, "stream", &stream, err) || !hl_json_bool(req, "think", &think, err)) return false;
    if (think)
        return refuse(err, "think", "'%s' is not supported: hearth returns a thinking model's text as it is", "think");
    return cJSON_AddBoolToObject(body, "stream", stream) && map_format(hl_json_field(req, "format"), body, err) &&
           map_options(hl_json_field(req, "options"), body, repeat, n_ctx_slot, err) &&
           copy_field(body, "tools", req, "tools");
}

/* The fields of /api/chat and /api/generate (keep_alive: read by server.c, which holds the model). */
static const char *const CHAT_FIELDS[] = {"model",   "messages", "tools",      "format",
                                          "options", "stream",   "keep_alive", "think"};
static const char *const GENERATE_FIELDS[] = {"model",      "prompt",  "suffix",   "images", "format",
                                              "options",    "system",  "template", "stream", "raw",
                                              "keep_alive", "context", "think"};

cJSON *hl_ollama_chat_body(const cJSON *req, double repeat[2], uint32_t n_ctx_slot, hl_error *err) {
    if (!hl_json_known_fields(req, CHAT_FIELDS, sizeof CHAT_FIELDS / sizeof *CHAT_FIELDS, err)) return NULL;
    const cJSON *msgs = hl_json_field(req, "messages");
    if (msgs && !cJSON_IsArray(msgs)) {
        hl_error_set(err, 400, "invalid_request_error", "invalid_type", "messages", "'messages' must be an array");
        return NULL;
    }
    cJSON *body = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    if (!body || !hl_json_put(body, "messages", arr)) {
        cJSON_Delete(body);
        hl_error_oom(err);
        return NULL;
    }
    int32_t i = 0;
    for (const cJSON *m = msgs ? msgs->child : NULL; m; m = m->next, i++) {
        cJSON *mapped = map_message(m, i, err);
        if (!mapped || !cJSON_AddItemToArray(arr, mapped)) {
            cJSON_Delete(mapped);
            cJSON_Delete(body);
            return NULL;
        }
    }
    if (!map_common(req, body, repeat, n_ctx_slot, err)) {
        cJSON_Delete(body);
        return NULL;
    }
    return body;
}

cJSON *hl_ollama_generate_body(const cJSON *req, bool *chat, double repeat[2], uint32_t n_ctx_slot, hl_error *err) {
    const char *prompt = "", *system = NULL;
    bool raw = false;
    if (!hl_json_known_fields(req, GENERATE_FIELDS, sizeof GENERATE_FIELDS / sizeof *GENERATE_FIELDS, err) ||
        !hl_json_str(req, "prompt", &prompt, err) || !hl_json_str(req, "system", &system, err) ||
        !hl_json_bool(req, "raw", &raw, err))
        return NULL;
    static const char *const refused[] = {"template", "suffix", "context", "images"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        const cJSON *v = hl_json_field(req, refused[i]);
        if (v && !(cJSON_IsArray(v) && cJSON_GetArraySize(v) == 0) && !(cJSON_IsString(v) && !v->valuestring[0])) {
            refuse(err, refused[i],
                   !strcmp(refused[i], "template")  ? "'%s' (a Go template) is not supported: hearth renders the "
                                                      "model's own chat template; use raw for a prompt as it is"
                   : !strcmp(refused[i], "suffix")  ? "'%s' (fill-in-the-middle) is not supported by this server"
                   : !strcmp(refused[i], "context") ? "'%s' (the deprecated token context) is not supported: send "
                                                      "the conversation to /api/chat"
                                                    : "'%s' is not supported: this server's model reads text only",
                   refused[i]);
            return NULL;
        }
    }
    *chat = !raw;
    cJSON *body = cJSON_CreateObject();
    bool ok = body != NULL;
    if (ok && raw) {
        ok = cJSON_AddStringToObject(body, "prompt", prompt) != NULL;
    } else if (ok) {
        cJSON *arr = cJSON_CreateArray(), *sys = system ? cJSON_CreateObject() : NULL, *user = cJSON_CreateObject();
        ok = hl_json_put(body, "messages", arr);
        if (sys)
            ok = ok && cJSON_AddItemToArray(arr, sys) && cJSON_AddStringToObject(sys, "role", "system") &&
                 cJSON_AddStringToObject(sys, "content", system);
        else if (system) ok = false;
        ok = ok && user && cJSON_AddItemToArray(arr, user) && cJSON_AddStringToObject(user, "role", "user") &&
             cJSON_AddStringToObject(user, "content", prompt);
    }
    if (!ok) {
        cJSON_Delete(body);
        hl_error_oom(err);
        return NULL;
    }
    if (!map_common(req, body, repeat, n_ctx_slot, err)) {
        cJSON_Delete(body);
        return NULL;
    }
    return body;
}
