/* hearth_chat_apply_template and hearth_chat_apply_template_json: render a
 * conversation with a Jinja chat template as transformers'
 * apply_chat_template does, through the interpreter in text/jinja/. The JSON
 * form reads OpenAI chat messages (tool calls, tool results, content parts)
 * and tools with cJSON and hands them to the template as transformers would
 * after the conversion vLLM and llama.cpp make (arguments given as JSON text
 * become the object they encode). The calls that read the template and the
 * special tokens from a model (hearth_model_chat_template,
 * hearth_chat_render) are the runtime's (runtime/chat.c): the text layer
 * does not call up into the model. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/status.h"
#include "text/jinja/jinja.h"

/* Sets the template's variables other than add_generation_prompt,
 * bos_token and eos_token. */
typedef hearth_status (*set_vars_fn)(hl_jinja_env *env, const void *ctx);

static hearth_status set_str(hl_jinja_env *env, const char *name, const char *s) {
    jv v;
    if (!hl_jv_str(env, s, strlen(s), &v)) return HEARTH_ERR_OUT_OF_MEMORY;
    return hl_jinja_env_set(env, name, v);
}

/* The shared part of both calls: parse, set the variables, render. */
static hearth_status render(const char *tmpl, set_vars_fn set_vars, const void *ctx, bool add_generation_prompt,
                            const char *bos_token, const char *eos_token, char **out) {
    hl_jinja_tmpl *t;
    HL_TRY(hl_jinja_parse(tmpl, strlen(tmpl), &t));
    hl_jinja_env *env;
    hearth_status st = hl_jinja_env_init(NULL, time(NULL), &env);
    if (st == HEARTH_OK) st = set_vars(env, ctx);
    if (st == HEARTH_OK) st = hl_jinja_env_set(env, "add_generation_prompt", hl_jv_bool(add_generation_prompt));
    if (st == HEARTH_OK) st = set_str(env, "bos_token", bos_token ? bos_token : "");
    if (st == HEARTH_OK) st = set_str(env, "eos_token", eos_token ? eos_token : "");
    size_t len;
    if (st == HEARTH_OK) st = hl_jinja_render(env, t, out, &len);
    hl_jinja_env_free(env);
    hl_jinja_tmpl_free(t);
    return st;
}

/* ------------------------------------------------------ role/content list -- */

typedef struct msg_list {
    const hearth_chat_message *msgs;
    size_t n;
} msg_list;

/* messages = [{"role": ..., "content": ...}, ...] */
static hearth_status set_messages(hl_jinja_env *env, const void *ctx) {
    const msg_list *ml = ctx;
    jv list, role_key, content_key;
    if (!hl_jv_list(env, &list) || !hl_jv_str(env, "role", 4, &role_key) || !hl_jv_str(env, "content", 7, &content_key))
        return HEARTH_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < ml->n; i++) {
        const hearth_chat_message *m = &ml->msgs[i];
        if (!m->role || !m->content)
            return hl_fail(HEARTH_ERR_INVALID_ARG, "chat message %zu has a NULL role or content", i);
        jv msg, role, content;
        if (!hl_jv_dict(env, &msg) || !hl_jv_str(env, m->role, strlen(m->role), &role) ||
            !hl_jv_str(env, m->content, strlen(m->content), &content) || !hl_jv_dict_set(env, msg, role_key, role) ||
            !hl_jv_dict_set(env, msg, content_key, content) || !hl_jv_list_push(env, list, msg))
            return HEARTH_ERR_OUT_OF_MEMORY;
    }
    return hl_jinja_env_set(env, "messages", list);
}

hearth_status hearth_chat_apply_template(const char *tmpl, const hearth_chat_message *msgs, size_t n_msgs,
                                         bool add_generation_prompt, const char *bos_token, const char *eos_token,
                                         char **out) {
    if (!out) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_chat_apply_template: NULL out");
    *out = NULL;
    if (!tmpl || (!msgs && n_msgs))
        return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_chat_apply_template: NULL template or messages");
    const msg_list ml = {msgs, n_msgs};
    return render(tmpl, set_messages, &ml, add_generation_prompt, bos_token, eos_token, out);
}

/* ------------------------------------------------------------------- JSON -- */

/* A JSON value as an interpreter value, as Python's json.loads gives it:
 * integral numbers become ints, others floats (cJSON keeps no number text,
 * so 1.0 becomes the int 1). */
static bool from_json(hl_jinja_env *env, const cJSON *j, jv *out) {
    if (cJSON_IsNull(j)) *out = hl_jv_none();
    else if (cJSON_IsBool(j)) *out = hl_jv_bool(cJSON_IsTrue(j));
    else if (cJSON_IsNumber(j)) {
        const double d = j->valuedouble;
        *out = d == (double)(int64_t)d && d > -9e15 && d < 9e15 ? hl_jv_int((int64_t)d) : hl_jv_float(d);
    } else if (cJSON_IsString(j)) return hl_jv_str(env, j->valuestring, strlen(j->valuestring), out);
    else if (cJSON_IsArray(j)) {
        if (!hl_jv_list(env, out)) return false;
        for (const cJSON *c = j->child; c; c = c->next) {
            jv v;
            if (!from_json(env, c, &v) || !hl_jv_list_push(env, *out, v)) return false;
        }
    } else {
        if (!hl_jv_dict(env, out)) return false;
        for (const cJSON *c = j->child; c; c = c->next) {
            jv k, v;
            if (!hl_jv_str(env, c->string, strlen(c->string), &k) || !from_json(env, c, &v) ||
                !hl_jv_dict_set(env, *out, k, v))
                return false;
        }
    }
    return true;
}

/* Content given as parts that are all {"type": "text", "text": ...}
 * becomes their texts joined with newlines (vLLM's and llama.cpp's rule)
 * in *out; *out NULL (not all text parts): the content passes as given. */
static hearth_status joined_text_parts(const cJSON *content, char **out) {
    *out = NULL;
    size_t n = 0;
    for (const cJSON *part = content->child; part; part = part->next) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") || !cJSON_IsString(text)) return HEARTH_OK;
        n += strlen(text->valuestring) + 1;
    }
    char *w = *out = hl_malloc(n + 1);
    if (!w) return HEARTH_ERR_OUT_OF_MEMORY;
    for (const cJSON *part = content->child; part; part = part->next) {
        const char *text = cJSON_GetObjectItemCaseSensitive(part, "text")->valuestring;
        if (part != content->child) *w++ = '\n';
        memcpy(w, text, strlen(text));
        w += strlen(text);
    }
    *w = '\0';
    return HEARTH_OK;
}

/* Rewrites a message in place to what the template sees: text parts
 * joined, and each tool call's function.arguments given as JSON text
 * replaced by the value it encodes (text that does not parse stays text). */
static hearth_status normalize_message(cJSON *msg) {
    cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
    if (cJSON_IsArray(content) && content->child) {
        char *text;
        HL_TRY(joined_text_parts(content, &text));
        if (text) {
            cJSON *s = cJSON_CreateString(text);
            free(text);
            if (!s || !cJSON_ReplaceItemInObjectCaseSensitive(msg, "content", s)) {
                cJSON_Delete(s);
                return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory joining a message's text parts");
            }
        }
    }
    const cJSON *calls = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
    for (const cJSON *call = cJSON_IsArray(calls) ? calls->child : NULL; call; call = call->next) {
        cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
        cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
        if (!cJSON_IsString(args)) continue;
        cJSON *parsed = cJSON_Parse(args->valuestring);
        if (parsed && !cJSON_ReplaceItemInObjectCaseSensitive(fn, "arguments", parsed)) {
            cJSON_Delete(parsed);
            return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory parsing a tool call's arguments");
        }
    }
    return HEARTH_OK;
}

/* Parses `text` (the argument called `what`) as a JSON array. */
static hearth_status parse_array(const char *what, const char *text, cJSON **out) {
    const char *end = NULL;
    *out = cJSON_ParseWithOpts(text, &end, true);
    if (!*out) {
        return hl_fail(HEARTH_ERR_INVALID_ARG, "%s: not valid JSON at byte %zu", what,
                       end ? (size_t)(end - text) : strlen(text));
    }
    if (!cJSON_IsArray(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        return hl_fail(HEARTH_ERR_INVALID_ARG, "%s: not a JSON array", what);
    }
    return HEARTH_OK;
}

typedef struct json_vars {
    const cJSON *messages;
    const cJSON *tools; /* NULL: none */
} json_vars;

/* messages and tools as transformers passes them: tools None when absent
 * (apply_chat_template(tools=None)), so both `tools is defined` and
 * `if tools` behave as there. */
static hearth_status set_json_vars(hl_jinja_env *env, const void *ctx) {
    const json_vars *jvars = ctx;
    jv messages, tools = hl_jv_none();
    if (!from_json(env, jvars->messages, &messages) || (jvars->tools && !from_json(env, jvars->tools, &tools)))
        return HEARTH_ERR_OUT_OF_MEMORY;
    HL_TRY(hl_jinja_env_set(env, "messages", messages));
    return hl_jinja_env_set(env, "tools", tools);
}

hearth_status hearth_chat_apply_template_json(const char *tmpl, const char *messages, const char *tools,
                                              bool add_generation_prompt, const char *bos_token, const char *eos_token,
                                              char **out) {
    if (!out) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_chat_apply_template_json: NULL out");
    *out = NULL;
    if (!tmpl || !messages)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_chat_apply_template_json: NULL template or messages");
    cJSON *msgs = NULL, *tool_list = NULL;
    hearth_status st = parse_array("messages", messages, &msgs);
    if (st == HEARTH_OK && tools) st = parse_array("tools", tools, &tool_list);
    int i = 0;
    for (cJSON *m = msgs ? msgs->child : NULL; m && st == HEARTH_OK; m = m->next, i++) {
        if (!cJSON_IsObject(m) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(m, "role")))
            st = hl_fail(HEARTH_ERR_INVALID_ARG, "messages[%d]: not an object with a string \"role\"", i);
        else st = normalize_message(m);
    }
    const json_vars jvars = {msgs, tool_list};
    if (st == HEARTH_OK) st = render(tmpl, set_json_vars, &jvars, add_generation_prompt, bos_token, eos_token, out);
    cJSON_Delete(msgs);
    cJSON_Delete(tool_list);
    return st;
}

void hearth_chat_free(char *text) { free(text); }
