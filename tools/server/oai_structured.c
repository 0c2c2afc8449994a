/* The request fields that constrain what a model may write (see
 * oai_request.h): OpenAI's response_format (text, json_object,
 * json_schema), llama-server's grammar and json_schema, logit_bias, and the
 * tools fields. Only shapes are checked here; the grammar, the schema and
 * the tools are compiled by the engine at submit, whose one-line error
 * comes back as a 400 naming constraint_param. Also the refusal of defined
 * fields hearth does not implement, so none is silently ignored. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "oai_request.h"

#define INVALID "invalid_request_error"

char *hl_json_print(const cJSON *v, const char *name, hl_error *err) {
    char *s = cJSON_PrintUnformatted(v);
    if (!s) hl_error_set(err, 500, "server_error", NULL, NULL, "out of memory reading '%s'", name);
    return s;
}

static bool invalid(hl_error *err, const char *param, const char *msg) {
    hl_error_set(err, 400, INVALID, "invalid_value", param, "%s", msg);
    return false;
}

/* A schema (an object or a boolean) printed for the engine. */
static bool take_schema(hl_oai_request *r, const cJSON *schema, const char *param, hl_error *err) {
    if (r->constraint_param)
        return invalid(err, param, "give one of response_format (json_object or json_schema), json_schema and grammar");
    if (!cJSON_IsObject(schema) && !cJSON_IsBool(schema))
        return invalid(err, param, "a JSON schema must be an object (or true/false)");
    if (!(r->schema_json = hl_json_print(schema, param, err))) return false;
    r->params.sampling.json_schema = r->schema_json;
    r->constraint_param = param;
    return true;
}

/* response_format: {"type": "text" | "json_object" | "json_schema",
 * "json_schema": {"name", "schema", "strict", "description"}}. json_object
 * is any JSON object, the schema {"type": "object"}. */
static bool parse_response_format(const cJSON *root, hl_oai_request *r, hl_error *err) {
    const cJSON *rf = hl_json_field(root, "response_format");
    if (!rf) return true;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(rf, "type");
    if (!cJSON_IsObject(rf) || !cJSON_IsString(type))
        return invalid(err, "response_format", "'response_format' must be an object with a string 'type'");
    if (!strcmp(type->valuestring, "text")) return true;
    if (!strcmp(type->valuestring, "json_object")) {
        cJSON *any = cJSON_CreateObject();
        bool ok = any && cJSON_AddStringToObject(any, "type", "object") && take_schema(r, any, "response_format", err);
        if (!any && !err->status) hl_error_set(err, 500, "server_error", NULL, NULL, "out of memory");
        cJSON_Delete(any);
        return ok;
    }
    if (strcmp(type->valuestring, "json_schema") != 0)
        return invalid(err, "response_format", "'response_format.type' must be 'text', 'json_object' or 'json_schema'");
    const cJSON *js = hl_json_field(rf, "json_schema");
    if (!cJSON_IsObject(js))
        return invalid(err, "response_format", "'response_format.json_schema' must be an object with a 'schema'");
    const cJSON *name = hl_json_field(js, "name"), *strict = hl_json_field(js, "strict");
    if (name && !cJSON_IsString(name))
        return invalid(err, "response_format", "'response_format.json_schema.name' must be a string");
    if (strict && !cJSON_IsBool(strict))
        return invalid(err, "response_format", "'response_format.json_schema.strict' must be a boolean");
    const cJSON *schema = hl_json_field(js, "schema");
    if (!schema) return invalid(err, "response_format", "'response_format.json_schema.schema' is required");
    return take_schema(r, schema, "response_format", err);
}

/* llama-server's fields: json_schema (a schema) and grammar (GBNF). */
static bool parse_grammar(const cJSON *root, hl_oai_request *r, hl_error *err) {
    const cJSON *schema = hl_json_field(root, "json_schema"), *grammar = hl_json_field(root, "grammar");
    if (schema && !take_schema(r, schema, "json_schema", err)) return false;
    if (!grammar) return true;
    if (!cJSON_IsString(grammar)) return invalid(err, "grammar", "'grammar' must be a string of GBNF rules");
    if (r->constraint_param)
        return invalid(err, "grammar",
                       "give one of response_format (json_object or json_schema), json_schema and grammar");
    r->params.sampling.grammar = grammar->valuestring;
    r->constraint_param = "grammar";
    return true;
}

/* logit_bias: {"token id": bias in [-100, 100]} (OpenAI's map). */
static bool parse_logit_bias(const cJSON *root, hl_oai_request *r, hl_error *err) {
    const cJSON *lb = hl_json_field(root, "logit_bias");
    if (!lb) return true;
    if (!cJSON_IsObject(lb))
        return invalid(err, "logit_bias", "'logit_bias' must be an object mapping token ids to biases");
    const int n = cJSON_GetArraySize(lb);
    if (n == 0) return true;
    if (!(r->logit_bias = calloc((size_t)n, sizeof *r->logit_bias))) {
        hl_error_set(err, 500, "server_error", NULL, NULL, "out of memory reading 'logit_bias'");
        return false;
    }
    const cJSON *e;
    size_t i = 0;
    cJSON_ArrayForEach(e, lb) {
        char *end;
        const long id = strtol(e->string, &end, 10);
        if (!e->string[0] || *end || id < 0 || id > INT32_MAX) {
            hl_error_set(err, 400, INVALID, "invalid_value", "logit_bias",
                         "'logit_bias' keys must be token ids (integers >= 0), got '%s'", e->string);
            return false;
        }
        if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || e->valuedouble < -100 || e->valuedouble > 100) {
            hl_error_set(err, 400, INVALID, "invalid_value", "logit_bias",
                         "'logit_bias' of token %ld must be a number in [-100, 100]", id);
            return false;
        }
        r->logit_bias[i++] = (hearth_logit_bias){.token = (int32_t)id, .bias = (float)e->valuedouble};
    }
    r->params.sampling.logit_bias = r->logit_bias;
    r->params.sampling.n_logit_bias = i;
    return true;
}

/* tools (chat), tool_choice: "none" | "auto" | "required" | {"type":
 * "function", "function": {"name"}}, parallel_tool_calls. The tools'
 * contents (names, schemas) are the engine's to check. */
static bool parse_tools(const cJSON *root, hl_oai_request *r, hl_error *err) {
    const cJSON *tools = hl_json_field(root, "tools"), *choice = hl_json_field(root, "tool_choice");
    if (!hl_json_bool(root, "parallel_tool_calls", &r->params.parallel_tool_calls, err)) return false;
    if (!tools) {
        if (choice) return invalid(err, "tool_choice", "'tool_choice' is only allowed when 'tools' are given");
        return true;
    }
    if (r->kind != HL_OAI_CHAT) return invalid(err, "tools", "'tools' is a field of /v1/chat/completions");
    if (!cJSON_IsArray(tools)) return invalid(err, "tools", "'tools' must be an array of tool definitions");
    if (cJSON_GetArraySize(tools) == 0) return true; /* no tools: a plain chat */
    if (r->constraint_param)
        return invalid(err, "tools",
                       "a request with tools cannot also constrain its text (response_format, json_schema, grammar)");
    if (!(r->tools_json = hl_json_print(tools, "tools", err))) return false;
    r->params.tools_json = r->tools_json;
    r->params.tool_choice = "auto";
    r->constraint_param = "tools";
    if (!choice) return true;
    if (cJSON_IsString(choice)) {
        if (strcmp(choice->valuestring, "none") && strcmp(choice->valuestring, "auto") &&
            strcmp(choice->valuestring, "required"))
            return invalid(err, "tool_choice", "'tool_choice' must be 'none', 'auto', 'required' or a function");
        r->params.tool_choice = choice->valuestring;
        r->constraint_param = "tool_choice";
        return true;
    }
    const cJSON *fn = cJSON_IsObject(choice) ? hl_json_field(choice, "function") : NULL;
    const cJSON *name = fn ? hl_json_field(fn, "name") : NULL;
    if (!cJSON_IsString(name))
        return invalid(err, "tool_choice",
                       "'tool_choice' must be a string or {\"type\": \"function\", \"function\": {\"name\": ...}}");
    r->params.tool_choice = name->valuestring;
    r->constraint_param = "tool_choice";
    return true;
}

bool hl_oai_parse_structured(cJSON *root, hl_oai_request *r, hl_error *err) {
    return parse_response_format(root, r, err) && parse_grammar(root, r, err) && parse_logit_bias(root, r, err) &&
           parse_tools(root, r, err);
}

/* Defined fields hearth does not implement, and the value each may take
 * that asks for nothing (NULL: any value but null is refused). */
typedef struct unsupported {
    const char *name;
    bool chat, completion; /* the endpoints that define it */
    bool (*harmless)(const cJSON *v);
} unsupported;

static bool is_false(const cJSON *v) { return cJSON_IsFalse(v); }
static bool is_one(const cJSON *v) { return cJSON_IsNumber(v) && v->valuedouble == 1; }
static bool is_empty_string(const cJSON *v) { return cJSON_IsString(v) && !v->valuestring[0]; }
/* modalities: ["text"] only */
static bool text_only(const cJSON *v) {
    return cJSON_IsArray(v) && cJSON_GetArraySize(v) == 1 && cJSON_IsString(v->child) &&
           !strcmp(v->child->valuestring, "text");
}

static const unsupported UNSUPPORTED[] = {
    {"functions", true, false, NULL}, /* the deprecated form of tools */
    {"function_call", true, false, NULL},      {"audio", true, false, NULL},
    {"modalities", true, false, text_only},    {"prediction", true, false, NULL},
    {"web_search_options", true, false, NULL}, {"reasoning_effort", true, false, NULL},
    {"echo", false, true, is_false},           {"best_of", false, true, is_one},
    {"suffix", false, true, is_empty_string},
};

bool hl_oai_check_unsupported(const cJSON *root, hl_oai_kind kind, hl_error *err) {
    for (size_t i = 0; i < sizeof UNSUPPORTED / sizeof UNSUPPORTED[0]; i++) {
        const unsupported *u = &UNSUPPORTED[i];
        if (!(kind == HL_OAI_CHAT ? u->chat : u->completion)) continue;
        const cJSON *v = hl_json_field(root, u->name);
        if (!v || (u->harmless && u->harmless(v))) continue;
        hl_error_set(err, 400, INVALID, "unsupported_parameter", u->name, "'%s' is not supported by this server",
                     u->name);
        return false;
    }
    return true;
}
