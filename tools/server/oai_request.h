/* Reading client JSON: an OpenAI chat or completion request body into the
 * engine's hearth_request_params (plus what only the HTTP side needs: n,
 * stream, the model name), and the typed field readers the other endpoints
 * share. Every rejection is an hl_error in OpenAI's shape, naming the field.
 * Depends on cJSON and the types of hearth.h only, so the libFuzzer target
 * (tests/fuzz/fuzz_server_request.c) links it alone. */
#ifndef HEARTH_SERVER_OAI_REQUEST_H
#define HEARTH_SERVER_OAI_REQUEST_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "hearth.h"

/* An error as the client sees it: {"error": {"message", "type", "param", "code"}}. */
typedef struct hl_error {
    unsigned status;   /* HTTP status; 0: no error */
    const char *type;  /* "invalid_request_error", "server_error" ... (static) */
    const char *code;  /* "model_not_found" ... or NULL (static) */
    const char *param; /* the offending field or NULL (static) */
    char message[512];
} hl_error;

void hl_error_set(hl_error *e, unsigned status, const char *type, const char *code, const char *param, const char *fmt,
                  ...) __attribute__((format(printf, 6, 7)));

/* Choices (n) and stop strings one request may ask for. */
#define HL_OAI_MAX_N 16
#define HL_OAI_MAX_STOP 16

typedef enum hl_oai_kind {
    HL_OAI_CHAT,       /* POST /v1/chat/completions: messages */
    HL_OAI_COMPLETION, /* POST /v1/completions: prompt */
} hl_oai_kind;

typedef struct hl_oai_request {
    hl_oai_kind kind;
    const char *model; /* NULL when not given */
    /* prompt, messages or tokens; max_tokens, sampling, stop, logprobs,
     * ignore_eos. on_piece and user are left for the caller. */
    hearth_request_params params;
    int32_t n;       /* choices: n engine requests */
    bool seed_given; /* choice i samples with seed + i */
    bool stream, include_usage;
    /* The field that set a grammar (grammar, json_schema, response_format,
     * tools): the param of an error the engine gives about it. */
    const char *constraint_param;
    /* owned: the parsed body (the strings above point into it) and arrays */
    cJSON *root;
    char *messages_json; /* the messages printed for the engine */
    char *tools_json;
    char *schema_json; /* response_format's or json_schema's schema, printed */
    hearth_logit_bias *logit_bias;
    int32_t *tokens;
    const char **stop;
} hl_oai_request;

/* Parses `body` (len bytes, need not be NUL-terminated) as a request of
 * `kind`, starting from `defaults` (the engine's request defaults with the
 * server's seed). false with *err set (400) for malformed JSON, a wrong
 * type or a value out of range; *out then holds nothing to free. */
bool hl_oai_parse(hl_oai_kind kind, const char *body, size_t len, const hearth_request_params *defaults,
                  hl_oai_request *out, hl_error *err);
void hl_oai_request_free(hl_oai_request *r);

/* The field `name` of `obj`, or NULL when it is absent or null. */
const cJSON *hl_json_field(const cJSON *obj, const char *name);

/* Typed readers of an optional field of `obj`: absent or null leaves *out
 * unchanged and gives true; a wrong type or a value outside [lo, hi] gives
 * false with *err (400, param = name). Integers must be whole numbers. */
bool hl_json_int(const cJSON *obj, const char *name, int64_t lo, int64_t hi, int64_t *out, hl_error *err);
bool hl_json_num(const cJSON *obj, const char *name, double lo, double hi, double *out, hl_error *err);
bool hl_json_bool(const cJSON *obj, const char *name, bool *out, hl_error *err);
bool hl_json_str(const cJSON *obj, const char *name, const char **out, hl_error *err);
/* An array of token ids in [0, INT32_MAX] into *out (malloc'd, the caller
 * frees it; NULL when empty) and *n. */
bool hl_json_tokens(const cJSON *arr, const char *name, int32_t **out, size_t *n, hl_error *err);
/* The whole body as one JSON object; NULL with *err for anything else. */
cJSON *hl_json_parse_object(const char *body, size_t len, hl_error *err);

/* oai_structured.c: response_format, llama-server's grammar and
 * json_schema, logit_bias, tools, tool_choice and parallel_tool_calls into
 * r->params; and the refusal (400, code unsupported_parameter) of fields
 * with a defined meaning that hearth does not implement. */
bool hl_oai_parse_structured(cJSON *root, hl_oai_request *r, hl_error *err);
bool hl_oai_check_unsupported(const cJSON *root, hl_oai_kind kind, hl_error *err);
/* obj[key] = item, arr += item; false (item freed) when item is NULL or memory runs out. */
bool hl_json_put(cJSON *obj, const char *key, cJSON *item);
bool hl_json_push(cJSON *arr, cJSON *item);
/* Every non-null field of obj is one of names[0, n); else false with *err
 * (400 unsupported_parameter naming it). */
bool hl_json_known_fields(const cJSON *obj, const char *const *names, size_t n, hl_error *err);
/* OpenAI's tool shapes, built by every API that maps onto them; NULL when
 * memory runs out. A call of a message: {"id", "type": "function",
 * "function": {"name", "arguments"}}; a function tool: {"type": "function",
 * "function": {"name", "description"?, "parameters"?, "strict"?}} (each of
 * description, parameters, strict copied when not NULL); a tool_choice
 * naming one: {"type": "function", "function": {"name"}}. */
cJSON *hl_oai_tool_call(const char *id, const char *name, const char *arguments);
cJSON *hl_oai_function_tool(const char *name, const cJSON *description, const cJSON *parameters, const cJSON *strict);
cJSON *hl_oai_named_tool_choice(const char *name);
/* {"role": role, "content": content}, or NULL when memory runs out. */
cJSON *hl_json_message(const char *role, const char *content);
/* *err = 500 "out of memory", or 400 invalid_value of `param` with msg; false. */
bool hl_error_oom(hl_error *err);
bool hl_error_bad(hl_error *err, const char *param, const char *msg);

/* Printed JSON of `v` (malloc'd) or NULL with *err (500). */
char *hl_json_print(const cJSON *v, const char *name, hl_error *err);

#endif
