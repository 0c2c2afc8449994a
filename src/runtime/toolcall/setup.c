/* hl_tools_prepare: what a request with tools needs before it runs. The
 * tools and tool_choice are checked (each error names the field), the
 * conversation is rendered with the tools (templates that take no tools,
 * GENERIC, get a system message that lists them and the JSON reply form,
 * merged into the first system message as llama.cpp's generic handler
 * does), and the grammar of the allowed calls is built (call_grammar.c),
 * lazy at the format's markers when the model may also answer in text. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/toolcall/toolcall_impl.h"

/* A function name the grammar and the parser take as it is: non-empty
 * printable ASCII without '"' or '\' (OpenAI allows [a-zA-Z0-9_-]). */
static bool plain_name(const char *s) {
    if (!*s) return false;
    for (; *s; s++)
        if (*s < 0x20 || *s > 0x7e || *s == '"' || *s == '\\') return false;
    return true;
}

/* Checks the tools; defs[i] borrows from `tools`, params[i] is the
 * parameters' JSON text (owned, NULL when absent). */
static hearth_status check_tools(const cJSON *tools, hl_tool_def *defs, char **params) {
    size_t i = 0;
    for (const cJSON *t = tools->child; t; t = t->next, i++) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(t, "type");
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
        if (!cJSON_IsObject(t)) return hl_fail(HEARTH_ERR_INVALID_ARG, "tools[%zu] is not an object", i);
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "function"))
            return hl_fail(HEARTH_ERR_INVALID_ARG, "tools[%zu].type must be \"function\"", i);
        if (!cJSON_IsObject(fn))
            return hl_fail(HEARTH_ERR_INVALID_ARG, "tools[%zu].function is missing or not an object", i);
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
        const cJSON *desc = cJSON_GetObjectItemCaseSensitive(fn, "description");
        const cJSON *par = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
        if (!name) return hl_fail(HEARTH_ERR_INVALID_ARG, "tools[%zu].function.name is missing", i);
        if (!cJSON_IsString(name) || !*name->valuestring)
            return hl_fail(HEARTH_ERR_INVALID_ARG, "tools[%zu].function.name must be a non-empty string", i);
        if (!plain_name(name->valuestring))
            return hl_fail(HEARTH_ERR_INVALID_ARG,
                           "tools[%zu].function.name '%s' has a character outside printable ASCII or a quote or "
                           "backslash: use letters, digits, '_' and '-'",
                           i, name->valuestring);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(defs[j].name, name->valuestring))
                return hl_fail(HEARTH_ERR_INVALID_ARG, "tools[%zu].function.name '%s' is also tools[%zu]'s", i,
                               name->valuestring, j);
        if (desc && !cJSON_IsString(desc))
            return hl_fail(HEARTH_ERR_INVALID_ARG, "tools[%zu].function.description must be a string", i);
        if (par && !cJSON_IsObject(par))
            return hl_fail(HEARTH_ERR_INVALID_ARG, "tools[%zu].function.parameters must be a JSON Schema object", i);
        if (par && !(params[i] = cJSON_PrintUnformatted(par)))
            return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory printing tools[%zu].function.parameters", i);
        defs[i] = (hl_tool_def){name->valuestring, params[i]};
    }
    return HEARTH_OK;
}

static hearth_status parse_choice(const char *choice, const hl_tool_def *defs, size_t n, hl_tool_choice_kind *kind,
                                  int *named) {
    *named = -1;
    if (!choice || !strcmp(choice, "auto")) *kind = HL_TOOL_CHOICE_AUTO;
    else if (!strcmp(choice, "none")) *kind = HL_TOOL_CHOICE_NONE;
    else if (!strcmp(choice, "required")) *kind = HL_TOOL_CHOICE_REQUIRED;
    else {
        for (size_t i = 0; i < n && *named < 0; i++)
            if (!strcmp(defs[i].name, choice)) *named = (int)i;
        if (*named < 0)
            return hl_fail(HEARTH_ERR_INVALID_ARG, "tool_choice names '%s', which is not among the tools", choice);
        *kind = HL_TOOL_CHOICE_NAMED;
    }
    return HEARTH_OK;
}

/* The system text that tells a GENERIC model about the tools and the JSON
 * reply form the grammar enforces; `named`: the one tool to call, or NULL. */
static hearth_status generic_instructions(const cJSON *tools, hl_tool_choice_kind kind, const char *named,
                                          bool parallel, hl_str *b) {
    HL_TRY(hl_str_puts(b, "You can call these tools (the JSON Schema of each one's arguments in \"parameters\"):\n"));
    for (const cJSON *t = tools->child; t; t = t->next) {
        char *fn = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(t, "function"));
        if (!fn) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory printing the tools");
        hearth_status st = hl_str_printf(b, "%s\n", fn);
        free(fn);
        HL_TRY(st);
    }
    HL_TRY(hl_str_printf(b,
                         "\nReply with one JSON object and nothing else. To call %s, reply "
                         "{\"tool_calls\": [{\"name\": <tool name>, \"arguments\": <arguments object>}%s]}",
                         parallel ? "tools" : "a tool", parallel ? ", ..." : ""));
    if (kind == HL_TOOL_CHOICE_NAMED) return hl_str_printf(b, "; call %s.", named);
    if (kind == HL_TOOL_CHOICE_REQUIRED) return hl_str_puts(b, "; call at least one tool.");
    return hl_str_puts(b, ". To answer without a tool, reply {\"response\": <your answer as a JSON string>}.");
}

/* A past call as GENERIC's reply form: {"tool_calls": [{"name",
 * "arguments"}]}, arguments given as JSON text parsed back into JSON. */
static cJSON *generic_calls(const cJSON *calls) {
    cJSON *reply = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(reply, "tool_calls");
    if (!list) {
        cJSON_Delete(reply);
        return NULL;
    }
    for (const cJSON *c = calls->child; c; c = c->next) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(c, "function");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
        cJSON *call = cJSON_CreateObject();
        cJSON *a = cJSON_IsString(args) ? cJSON_Parse(args->valuestring) : NULL;
        if (!a) a = args ? cJSON_Duplicate(args, true) : cJSON_CreateObject();
        if (!call || !cJSON_AddItemToArray(list, call) ||
            !cJSON_AddItemToObject(
                call, "name", cJSON_IsString(name) ? cJSON_CreateString(name->valuestring) : cJSON_CreateString("")) ||
            !a || !cJSON_AddItemToObject(call, "arguments", a)) {
            cJSON_Delete(a);
            cJSON_Delete(reply);
            return NULL;
        }
    }
    return reply;
}

/* GENERIC templates know no tool calls: every assistant message's
 * tool_calls become its content in the reply form the model is asked for,
 * and content null becomes "" (the polyfill llama.cpp's templates get). */
static bool generic_history(cJSON *msgs) {
    for (cJSON *m = msgs->child; m; m = m->next) {
        cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
        char *text = NULL;
        if (cJSON_IsArray(calls) && cJSON_GetArraySize(calls) > 0) {
            cJSON *reply = generic_calls(calls);
            text = reply ? cJSON_PrintUnformatted(reply) : NULL;
            cJSON_Delete(reply);
            if (!text) return false;
        }
        if (calls) cJSON_DeleteItemFromObjectCaseSensitive(m, "tool_calls");
        if (text || !content || cJSON_IsNull(content)) {
            cJSON *s = cJSON_CreateString(text ? text : "");
            cJSON_free(text);
            if (!s) return false;
            if (content) cJSON_ReplaceItemInObjectCaseSensitive(m, "content", s);
            else cJSON_AddItemToObject(m, "content", s);
        }
    }
    return true;
}

/* GENERIC's conversation: the history as above and, unless text is NULL,
 * `text` merged into the first system message (or a system message of its
 * own first). *out is cJSON's allocation; NULL when the messages are not
 * an array (the renderer reports that). */
static hearth_status generic_messages(const char *messages, const char *text, char **out) {
    *out = NULL;
    cJSON *msgs = cJSON_Parse(messages);
    if (!cJSON_IsArray(msgs)) {
        cJSON_Delete(msgs);
        return HEARTH_OK;
    }
    bool ok = generic_history(msgs);
    cJSON *first = msgs->child;
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(first, "role");
    cJSON *content = cJSON_GetObjectItemCaseSensitive(first, "content");
    if (ok && text && cJSON_IsString(role) && !strcmp(role->valuestring, "system") && cJSON_IsString(content)) {
        hl_str merged = {0};
        hearth_status st = hl_str_printf(&merged, "%s\n\n%s", content->valuestring, text);
        if (st != HEARTH_OK) {
            cJSON_Delete(msgs);
            return st;
        }
        cJSON *s = cJSON_CreateString(merged.p);
        free(merged.p);
        ok = s && cJSON_ReplaceItemInObjectCaseSensitive(first, "content", s);
        if (!ok) cJSON_Delete(s);
    } else if (ok && text) {
        cJSON *sys = cJSON_CreateObject();
        ok = sys && cJSON_AddStringToObject(sys, "role", "system") && cJSON_AddStringToObject(sys, "content", text) &&
             cJSON_InsertItemInArray(msgs, 0, sys);
        if (!ok) cJSON_Delete(sys);
    }
    if (ok) *out = cJSON_PrintUnformatted(msgs);
    cJSON_Delete(msgs);
    return *out ? HEARTH_OK : hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory adding the tools' system message");
}

/* The prompt: the tools given to the template, or for GENERIC described in
 * a system message (and not shown at all with tool_choice none) with the
 * history's calls in the reply form. */
static hearth_status render_prompt(const char *tmpl, const char *messages, const char *tools_json, const cJSON *tools,
                                   hl_tool_setup *s, const char *named, bool parallel, const char *bos,
                                   const char *eos) {
    if (s->format != HL_TOOLS_GENERIC)
        return hearth_chat_apply_template_json(tmpl, messages, tools_json, true, bos, eos, &s->prompt);
    hl_str text = {0};
    char *merged = NULL;
    hearth_status st = s->choice == HL_TOOL_CHOICE_NONE
                           ? HEARTH_OK
                           : generic_instructions(tools, s->choice, named, parallel, &text);
    if (st == HEARTH_OK) st = generic_messages(messages, text.p, &merged);
    if (st == HEARTH_OK)
        st = hearth_chat_apply_template_json(tmpl, merged ? merged : messages, NULL, true, bos, eos, &s->prompt);
    free(text.p);
    cJSON_free(merged);
    return st;
}

static hearth_status copy_triggers(hl_tool_setup *s) {
    size_t n;
    const char *const *t = hl_tool_triggers(s->format, &n);
    if (s->choice != HL_TOOL_CHOICE_AUTO || !n) return HEARTH_OK;
    if (!(s->triggers = hl_calloc(n, sizeof *s->triggers))) return HEARTH_ERR_OUT_OF_MEMORY;
    for (; s->n_triggers < n; s->n_triggers++) {
        const size_t len = strlen(t[s->n_triggers]) + 1;
        if (!(s->triggers[s->n_triggers] = hl_malloc(len))) return HEARTH_ERR_OUT_OF_MEMORY;
        memcpy(s->triggers[s->n_triggers], t[s->n_triggers], len);
    }
    return HEARTH_OK;
}

hearth_status hl_tools_prepare(const char *tmpl, const char *messages_json, const char *tools_json,
                               const char *tool_choice, bool parallel_tool_calls, const char *bos_token,
                               const char *eos_token, hl_tool_setup *out) {
    memset(out, 0, sizeof *out);
    if (!tmpl || !messages_json || !tools_json)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "hl_tools_prepare: NULL template, messages or tools");
    cJSON *tools = cJSON_Parse(tools_json);
    if (!cJSON_IsArray(tools)) {
        cJSON_Delete(tools);
        return hl_fail(HEARTH_ERR_INVALID_ARG, "tools: not a JSON array of tool definitions");
    }
    const size_t n = (size_t)cJSON_GetArraySize(tools);
    hl_tool_def *defs = hl_calloc(n ? n : 1, sizeof *defs);
    char **params = hl_calloc(n ? n : 1, sizeof *params);
    hearth_status st = defs && params ? HEARTH_OK : HEARTH_ERR_OUT_OF_MEMORY;
    if (st == HEARTH_OK && !n) st = hl_fail(HEARTH_ERR_INVALID_ARG, "tools: an empty array; give at least one tool");
    if (st == HEARTH_OK) st = check_tools(tools, defs, params);
    int named = -1;
    if (st == HEARTH_OK) st = parse_choice(tool_choice, defs, n, &out->choice, &named);
    out->format = hl_tool_format_of(tmpl);
    if (st == HEARTH_OK)
        st = render_prompt(tmpl, messages_json, tools_json, tools, out, named >= 0 ? defs[named].name : NULL,
                           parallel_tool_calls, bos_token, eos_token);
    if (st == HEARTH_OK && out->choice != HL_TOOL_CHOICE_NONE)
        st = hl_tools_grammar(out->format, defs, n, out->choice, named, parallel_tool_calls, &out->grammar);
    if (st == HEARTH_OK) st = copy_triggers(out);
    for (size_t i = 0; params && i < n; i++) cJSON_free(params[i]);
    free(params);
    free(defs);
    cJSON_Delete(tools);
    if (st != HEARTH_OK) hl_tool_setup_free(out);
    return st;
}

void hl_tool_setup_free(hl_tool_setup *s) {
    if (!s) return;
    free(s->prompt);
    free(s->grammar);
    for (size_t i = 0; i < s->n_triggers; i++) free(s->triggers[i]);
    free(s->triggers);
    memset(s, 0, sizeof *s);
}
