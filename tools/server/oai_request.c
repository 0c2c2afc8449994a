/* Parsing OpenAI request bodies (see oai_request.h): field by field with
 * the types and ranges OpenAI documents, into hearth_request_params. Fields
 * OpenAI does not define are ignored, as its own server ignores them; a
 * defined field hearth does not implement is refused (oai_structured.c);
 * null means "not given". No engine or model call happens here: token ids,
 * the prompt's length and the chat template are the engine's to check. */
#include "oai_request.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INVALID "invalid_request_error"

void hl_error_set(hl_error *e, unsigned status, const char *type, const char *code, const char *param, const char *fmt,
                  ...) {
    e->status = status;
    e->type = type;
    e->code = code;
    e->param = param;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
}

static bool wrong_type(hl_error *err, const char *name, const char *what) {
    hl_error_set(err, 400, INVALID, "invalid_type", name, "'%s' must be %s", name, what);
    return false;
}

const cJSON *hl_json_field(const cJSON *obj, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsNull(v) ? NULL : v;
}

bool hl_json_num(const cJSON *obj, const char *name, double lo, double hi, double *out, hl_error *err) {
    const cJSON *v = hl_json_field(obj, name);
    if (!v) return true;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return wrong_type(err, name, "a number");
    if (v->valuedouble < lo || v->valuedouble > hi) {
        hl_error_set(err, 400, INVALID, "invalid_value", name, "'%s' must be in [%g, %g], got %g", name, lo, hi,
                     v->valuedouble);
        return false;
    }
    *out = v->valuedouble;
    return true;
}

bool hl_json_int(const cJSON *obj, const char *name, int64_t lo, int64_t hi, int64_t *out, hl_error *err) {
    const cJSON *v = hl_json_field(obj, name);
    if (!v) return true;
    double d = v->valuedouble;
    if (!cJSON_IsNumber(v) || !isfinite(d) || d != floor(d)) return wrong_type(err, name, "an integer");
    /* compared as doubles: lo and hi stay within 2^53 here, or are INT64's ends */
    if (d < (double)lo || d > (double)hi || d >= 9223372036854775808.0) {
        hl_error_set(err, 400, INVALID, "invalid_value", name, "'%s' must be in [%lld, %lld], got %g", name,
                     (long long)lo, (long long)hi, d);
        return false;
    }
    *out = (int64_t)d;
    return true;
}

bool hl_json_bool(const cJSON *obj, const char *name, bool *out, hl_error *err) {
    const cJSON *v = hl_json_field(obj, name);
    if (!v) return true;
    if (!cJSON_IsBool(v)) return wrong_type(err, name, "a boolean");
    *out = cJSON_IsTrue(v);
    return true;
}

bool hl_json_str(const cJSON *obj, const char *name, const char **out, hl_error *err) {
    const cJSON *v = hl_json_field(obj, name);
    if (!v) return true;
    if (!cJSON_IsString(v)) return wrong_type(err, name, "a string");
    *out = v->valuestring;
    return true;
}

bool hl_json_tokens(const cJSON *arr, const char *name, int32_t **out, size_t *n, hl_error *err) {
    *out = NULL;
    *n = 0;
    if (!cJSON_IsArray(arr)) return wrong_type(err, name, "an array of token ids");
    size_t count = (size_t)cJSON_GetArraySize(arr);
    if (count == 0) return true;
    int32_t *ids = malloc(count * sizeof *ids);
    if (!ids) {
        hl_error_set(err, 500, "server_error", NULL, NULL, "out of memory reading '%s'", name);
        return false;
    }
    size_t i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, arr) {
        double d = v->valuedouble;
        if (!cJSON_IsNumber(v) || !isfinite(d) || d != floor(d) || d < 0 || d > INT32_MAX) {
            free(ids);
            return wrong_type(err, name, "an array of token ids (integers >= 0)");
        }
        ids[i++] = (int32_t)d;
    }
    *out = ids;
    *n = count;
    return true;
}

cJSON *hl_json_parse_object(const char *body, size_t len, hl_error *err) {
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(body, len, &end, false);
    if (root && end) /* only whitespace may follow the value */
        while (end < body + len && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')) end++;
    if (!root || end != body + len) {
        size_t at = end && end >= body && end <= body + len ? (size_t)(end - body) : len;
        hl_error_set(err, 400, INVALID, "invalid_json", NULL, "the body is not valid JSON (at byte %zu of %zu)", at,
                     len);
        cJSON_Delete(root);
        return NULL;
    }
    if (!cJSON_IsObject(root)) {
        hl_error_set(err, 400, INVALID, "invalid_json", NULL, "the body must be a JSON object");
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

/* Content given as parts must be text parts [{"type": "text", "text":
 * ...}] (OpenAI's multi-part form; text is all a language model reads):
 * the library joins them. */
static bool check_parts(const cJSON *content, hl_error *err) {
    const cJSON *part;
    cJSON_ArrayForEach(part, content) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
        if (!cJSON_IsObject(part) || !cJSON_IsString(type) || strcmp(type->valuestring, "text") != 0 ||
            !cJSON_IsString(text)) {
            hl_error_set(err, 400, INVALID, "invalid_value", "messages",
                         "content parts must be {\"type\": \"text\", \"text\": \"...\"}: this server reads text only");
            return false;
        }
    }
    return true;
}

/* messages: checked here for the error's shape, then printed as the JSON
 * the engine renders (tool calls, tool results and every other field go to
 * the chat template as given). */
static bool parse_messages(cJSON *root, hl_oai_request *r, hl_error *err) {
    cJSON *msgs = cJSON_GetObjectItemCaseSensitive(root, "messages");
    if (!msgs || cJSON_IsNull(msgs)) {
        hl_error_set(err, 400, INVALID, "missing_field", "messages", "'messages' is required");
        return false;
    }
    if (!cJSON_IsArray(msgs)) return wrong_type(err, "messages", "an array of messages");
    if (cJSON_GetArraySize(msgs) == 0) {
        hl_error_set(err, 400, INVALID, "invalid_value", "messages", "'messages' must hold at least one message");
        return false;
    }
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        if (!cJSON_IsObject(m)) return wrong_type(err, "messages", "an array of objects with 'role' and 'content'");
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
        const cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
        if (!cJSON_IsString(role)) return wrong_type(err, "messages", "messages whose 'role' is a string");
        if (cJSON_IsArray(content) && !check_parts(content, err)) return false;
        /* null or absent: an assistant turn that only called tools */
        if (content && !cJSON_IsString(content) && !cJSON_IsNull(content) && !cJSON_IsArray(content))
            return wrong_type(err, "messages", "messages whose 'content' is a string or an array of text parts");
        if (calls && !cJSON_IsNull(calls) && !cJSON_IsArray(calls))
            return wrong_type(err, "messages", "messages whose 'tool_calls' is an array");
    }
    if (!(r->messages_json = hl_json_print(msgs, "messages", err))) return false;
    r->params.messages_json = r->messages_json;
    return true;
}

/* prompt: a string, one string in an array, or an array of token ids. */
static bool parse_prompt(cJSON *root, hl_oai_request *r, hl_error *err) {
    cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "prompt");
    if (!p || cJSON_IsNull(p)) {
        hl_error_set(err, 400, INVALID, "missing_field", "prompt", "'prompt' is required");
        return false;
    }
    if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1 && cJSON_IsString(p->child)) p = p->child;
    if (cJSON_IsString(p)) {
        r->params.prompt = p->valuestring;
        return true;
    }
    if (!cJSON_IsArray(p)) return wrong_type(err, "prompt", "a string or an array of token ids");
    if (!hl_json_tokens(p, "prompt", &r->tokens, &r->params.n_tokens, err)) return false;
    if (r->params.n_tokens == 0) {
        hl_error_set(err, 400, INVALID, "invalid_value", "prompt", "'prompt' is empty");
        return false;
    }
    r->params.tokens = r->tokens;
    return true;
}

/* stop: a string or an array of strings; empty strings stop nothing. */
static bool parse_stop(cJSON *root, hl_oai_request *r, hl_error *err) {
    cJSON *s = cJSON_GetObjectItemCaseSensitive(root, "stop");
    if (!s || cJSON_IsNull(s)) return true;
    if (!cJSON_IsString(s) && !cJSON_IsArray(s)) return wrong_type(err, "stop", "a string or an array of strings");
    size_t n = cJSON_IsString(s) ? 1 : (size_t)cJSON_GetArraySize(s);
    if (n > HL_OAI_MAX_STOP) {
        hl_error_set(err, 400, INVALID, "invalid_value", "stop", "at most %d stop strings, got %zu", HL_OAI_MAX_STOP,
                     n);
        return false;
    }
    if (n == 0) return true;
    r->stop = calloc(n, sizeof *r->stop);
    if (!r->stop) {
        hl_error_set(err, 500, "server_error", NULL, NULL, "out of memory reading 'stop'");
        return false;
    }
    const cJSON *v = cJSON_IsString(s) ? s : s->child;
    for (; v; v = cJSON_IsString(s) ? NULL : v->next) {
        if (!cJSON_IsString(v)) return wrong_type(err, "stop", "a string or an array of strings");
        if (v->valuestring[0]) r->stop[r->params.n_stop++] = v->valuestring;
    }
    r->params.stop = r->stop;
    return true;
}

/* logprobs: chat takes a boolean and top_logprobs; completions an integer
 * (the alternatives wanted). */
static bool parse_logprobs(const cJSON *root, hl_oai_request *r, hl_error *err) {
    int64_t top = 0;
    if (r->kind == HL_OAI_COMPLETION) {
        const cJSON *v = hl_json_field(root, "logprobs");
        if (!hl_json_int(root, "logprobs", 0, HEARTH_MAX_TOP_LOGPROBS, &top, err)) return false;
        r->params.logprobs = v != NULL;
    } else {
        if (!hl_json_bool(root, "logprobs", &r->params.logprobs, err) ||
            !hl_json_int(root, "top_logprobs", 0, HEARTH_MAX_TOP_LOGPROBS, &top, err))
            return false;
        if (top > 0 && !r->params.logprobs) {
            hl_error_set(err, 400, INVALID, "invalid_value", "top_logprobs", "'top_logprobs' needs 'logprobs': true");
            return false;
        }
    }
    r->params.top_logprobs = (int32_t)top;
    return true;
}

static bool parse_sampling(const cJSON *root, hl_oai_request *r, hl_error *err) {
    hearth_sampler_params *s = &r->params.sampling;
    double temp = s->temp, top_p = s->top_p, min_p = s->min_p;
    double presence = s->presence_penalty, frequency = s->frequency_penalty;
    int64_t top_k = s->top_k, seed = 0, max_tokens = -1;
    if (!hl_json_num(root, "temperature", 0, 100, &temp, err) || !hl_json_num(root, "top_p", 1e-9, 1, &top_p, err) ||
        !hl_json_num(root, "min_p", 0, 1, &min_p, err) || !hl_json_int(root, "top_k", 0, INT32_MAX, &top_k, err) ||
        !hl_json_num(root, "presence_penalty", -2, 2, &presence, err) ||
        !hl_json_num(root, "frequency_penalty", -2, 2, &frequency, err) ||
        !hl_json_int(root, "seed", INT64_MIN, INT64_MAX, &seed, err) ||
        !hl_json_int(root, "max_tokens", 1, INT32_MAX, &max_tokens, err) ||
        !hl_json_int(root, "max_completion_tokens", 1, INT32_MAX, &max_tokens, err) ||
        !hl_json_bool(root, "ignore_eos", &r->params.ignore_eos, err))
        return false;
    s->temp = (float)temp;
    s->top_p = (float)top_p;
    s->min_p = (float)min_p;
    s->top_k = (int32_t)top_k;
    s->presence_penalty = (float)presence;
    s->frequency_penalty = (float)frequency;
    r->seed_given = hl_json_field(root, "seed") != NULL;
    if (r->seed_given) s->seed = (uint64_t)seed;
    if (max_tokens > 0) r->params.max_tokens = (int32_t)max_tokens;
    return true;
}

static bool parse_stream(const cJSON *root, hl_oai_request *r, hl_error *err) {
    if (!hl_json_bool(root, "stream", &r->stream, err)) return false;
    const cJSON *opts = hl_json_field(root, "stream_options");
    if (!opts) return true;
    if (!cJSON_IsObject(opts)) return wrong_type(err, "stream_options", "an object");
    return hl_json_bool(opts, "include_usage", &r->include_usage, err);
}

bool hl_oai_parse(hl_oai_kind kind, const char *body, size_t len, const hearth_request_params *defaults,
                  hl_oai_request *out, hl_error *err) {
    *out = (hl_oai_request){.kind = kind, .params = *defaults, .n = 1};
    out->root = hl_json_parse_object(body, len, err);
    if (!out->root) return false;
    int64_t n = 1;
    bool ok = hl_json_str(out->root, "model", &out->model, err) &&
              (kind == HL_OAI_CHAT ? parse_messages(out->root, out, err) : parse_prompt(out->root, out, err)) &&
              hl_json_int(out->root, "n", 1, HL_OAI_MAX_N, &n, err) && parse_sampling(out->root, out, err) &&
              parse_stop(out->root, out, err) && parse_logprobs(out->root, out, err) &&
              parse_stream(out->root, out, err) && hl_oai_parse_structured(out->root, out, err) &&
              hl_oai_check_unsupported(out->root, kind, err);
    out->n = (int32_t)n;
    if (!ok) hl_oai_request_free(out);
    return ok;
}

void hl_oai_request_free(hl_oai_request *r) {
    cJSON_Delete(r->root);
    free(r->messages_json);
    free(r->tools_json);
    free(r->schema_json);
    free(r->logit_bias);
    free(r->tokens);
    free(r->stop);
    *r = (hl_oai_request){0};
}

bool hl_json_put(cJSON *obj, const char *key, cJSON *item) {
    if (!item) return false;
    if (!cJSON_AddItemToObject(obj, key, item)) {
        cJSON_Delete(item);
        return false;
    }
    return true;
}

bool hl_json_push(cJSON *arr, cJSON *item) {
    if (!item) return false;
    if (!cJSON_AddItemToArray(arr, item)) {
        cJSON_Delete(item);
        return false;
    }
    return true;
}

bool hl_error_oom(hl_error *err) {
    hl_error_set(err, 500, "server_error", NULL, NULL, "out of memory");
    return false;
}

bool hl_error_bad(hl_error *err, const char *param, const char *msg) {
    hl_error_set(err, 400, "invalid_request_error", "invalid_value", param, "%s", msg);
    return false;
}

bool hl_json_known_fields(const cJSON *obj, const char *const *names, size_t n, hl_error *err) {
    for (const cJSON *f = obj->child; f; f = f->next) {
        size_t i = 0;
        while (i < n && strcmp(f->string, names[i]) != 0) i++;
        if (i == n && !cJSON_IsNull(f)) {
            /* param is static: the field's name goes in the message */
            hl_error_set(err, 400, "invalid_request_error", "unsupported_parameter", NULL,
                         "'%s' is not supported by this server", f->string);
            return false;
        }
    }
    return true;
}

cJSON *hl_json_message(const char *role, const char *content) {
    cJSON *m = cJSON_CreateObject();
    if (m && cJSON_AddStringToObject(m, "role", role) && cJSON_AddStringToObject(m, "content", content)) return m;
    cJSON_Delete(m);
    return NULL;
}

/* {"type": "function", "function": fn}, fn taken; NULL when memory runs out. */
static cJSON *typed_function(cJSON *fn) {
    cJSON *o = cJSON_CreateObject();
    if (o && cJSON_AddStringToObject(o, "type", "function") && hl_json_put(o, "function", fn)) return o;
    if (!o) cJSON_Delete(fn);
    cJSON_Delete(o);
    return NULL;
}

/* {"name": name}, or NULL. */
static cJSON *named(const char *name) {
    cJSON *o = cJSON_CreateObject();
    if (o && cJSON_AddStringToObject(o, "name", name)) return o;
    cJSON_Delete(o);
    return NULL;
}

cJSON *hl_oai_tool_call(const char *id, const char *name, const char *arguments) {
    cJSON *fn = named(name);
    if (fn && !cJSON_AddStringToObject(fn, "arguments", arguments)) {
        cJSON_Delete(fn);
        return NULL;
    }
    cJSON *call = fn ? typed_function(fn) : NULL;
    if (call && cJSON_AddStringToObject(call, "id", id)) return call;
    cJSON_Delete(call);
    return NULL;
}

cJSON *hl_oai_function_tool(const char *name, const cJSON *description, const cJSON *parameters, const cJSON *strict) {
    cJSON *fn = named(name);
    const bool ok = fn && (!description || hl_json_put(fn, "description", cJSON_Duplicate(description, true))) &&
                    (!parameters || hl_json_put(fn, "parameters", cJSON_Duplicate(parameters, true))) &&
                    (!strict || hl_json_put(fn, "strict", cJSON_Duplicate(strict, true)));
    if (ok) return typed_function(fn);
    cJSON_Delete(fn);
    return NULL;
}

cJSON *hl_oai_named_tool_choice(const char *name) {
    cJSON *fn = named(name);
    return fn ? typed_function(fn) : NULL;
}
