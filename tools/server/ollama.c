/* Ollama's API (docs/api.md of ollama/ollama) as a thin translation onto the
 * same engine: GET / and /api/version, GET /api/tags and /api/ps (the one
 * model), POST /api/show, POST /api/chat and /api/generate (newline-
 * delimited JSON streaming by default, `stream: false` for one object), and
 * POST /api/embed and /api/embeddings on an embedding model. A chat or
 * generate body is rewritten as an OpenAI chat or completion body (messages,
 * tools, `format` as response_format, `options` as sampling fields) and
 * parsed by oai_request.c, so every check and the scheduler, sampler,
 * grammar and tool-call parser are the ones /v1 uses; only the answer's
 * shape is Ollama's (gen.h's dialect). Any model name is accepted: this
 * server holds one model. Errors are {"error": "message"} with Ollama's
 * statuses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gen.h"

/* The version clients see at /api/version: Ollama's API as of this one. */
#define HL_OLLAMA_VERSION "0.12.0"

char *hl_ollama_error_body(const hl_error *e, size_t *len) {
    cJSON *j = cJSON_CreateObject();
    char *s = j && cJSON_AddStringToObject(j, "error", e->message) ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    *len = s ? strlen(s) : 0;
    return s;
}

/* RFC 3339 UTC time with nanoseconds, as Ollama's created_at and modified_at. */
static void rfc3339_now(char *buf, size_t size) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char day[32];
    strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, size, "%s.%09ldZ", day, (long)ts.tv_nsec);
}

/* ------------------------------------------------------------ requests -- */

static bool put(cJSON *obj, const char *key, cJSON *item) {
    if (!item) return false;
    if (!cJSON_AddItemToObject(obj, key, item)) {
        cJSON_Delete(item);
        return false;
    }
    return true;
}

/* A copy of src[key] into dst[as] when present (not null). */
static bool copy_field(cJSON *dst, const char *as, const cJSON *src, const char *key) {
    const cJSON *v = hl_json_field(src, key);
    return !v || put(dst, as, cJSON_Duplicate(v, true));
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
                if (!put(body, OPTION_FIELDS[i].openai, cJSON_Duplicate(o, true))) {
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
        ok = ok && cJSON_AddStringToObject(rf, "type", "json_schema") && put(rf, "json_schema", js) &&
             cJSON_AddStringToObject(js, "name", "format") && put(js, "schema", cJSON_Duplicate(format, true));
    } else {
        cJSON_Delete(rf);
        hl_error_set(err, 400, "invalid_request_error", "invalid_value", "format",
                     "'format' must be \"json\" or a JSON Schema object");
        return false;
    }
    if (!ok || !put(body, "response_format", rf)) {
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
        ok = put(out, "tool_calls", arr);
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
            cJSON *call = cJSON_CreateObject(), *f = cJSON_CreateObject();
            ok = printed && call && f && cJSON_AddItemToArray(arr, call) && cJSON_AddStringToObject(call, "id", id) &&
                 cJSON_AddStringToObject(call, "type", "function") && put(call, "function", f) &&
                 cJSON_AddStringToObject(f, "name", name->valuestring) &&
                 cJSON_AddStringToObject(f, "arguments", printed);
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
 * options, tools; refusals of think and keep_alive's meaning. */
static bool map_common(const cJSON *req, cJSON *body, double repeat[2], uint32_t n_ctx_slot, hl_error *err) {
    bool stream = true, think = false;
    if (!hl_json_bool(req, "stream", &stream, err) || !hl_json_bool(req, "think", &think, err)) return false;
    if (think)
        return refuse(err, "think", "'%s' is not supported: hearth returns a thinking model's text as it is", "think");
    return cJSON_AddBoolToObject(body, "stream", stream) && map_format(hl_json_field(req, "format"), body, err) &&
           map_options(hl_json_field(req, "options"), body, repeat, n_ctx_slot, err) &&
           copy_field(body, "tools", req, "tools");
}

/* /api/chat's body as an OpenAI chat body. */
static cJSON *chat_body(const cJSON *req, double repeat[2], uint32_t n_ctx_slot, hl_error *err) {
    const cJSON *msgs = hl_json_field(req, "messages");
    if (msgs && !cJSON_IsArray(msgs)) {
        hl_error_set(err, 400, "invalid_request_error", "invalid_type", "messages", "'messages' must be an array");
        return NULL;
    }
    cJSON *body = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    if (!body || !put(body, "messages", arr)) {
        cJSON_Delete(body);
        hl_server_oom(err);
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

/* /api/generate's body: raw, the prompt as a completion; else the
 * conversation [system, user: prompt] through the model's template. */
static cJSON *generate_body(const cJSON *req, bool *chat, double repeat[2], uint32_t n_ctx_slot, hl_error *err) {
    const char *prompt = "", *system = NULL;
    bool raw = false;
    if (!hl_json_str(req, "prompt", &prompt, err) || !hl_json_str(req, "system", &system, err) ||
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
        ok = put(body, "messages", arr);
        if (sys)
            ok = ok && cJSON_AddItemToArray(arr, sys) && cJSON_AddStringToObject(sys, "role", "system") &&
                 cJSON_AddStringToObject(sys, "content", system);
        else if (system) ok = false;
        ok = ok && user && cJSON_AddItemToArray(arr, user) && cJSON_AddStringToObject(user, "role", "user") &&
             cJSON_AddStringToObject(user, "content", prompt);
    }
    if (!ok) {
        cJSON_Delete(body);
        hl_server_oom(err);
        return NULL;
    }
    if (!map_common(req, body, repeat, n_ctx_slot, err)) {
        cJSON_Delete(body);
        return NULL;
    }
    return body;
}

/* ------------------------------------------------------------- answers -- */

/* Ollama's done_reason: "stop" for an end of text, a stop string, a tool
 * call or a complete grammar; "length" for max_tokens or a full context. */
static const char *done_reason(hearth_finish_reason f) { return f == HEARTH_FINISH_LENGTH ? "length" : "stop"; }

/* The message's tool_calls in Ollama's shape: [{"function": {"name",
 * "arguments": {...}}}] (arguments an object). */
static bool add_calls(cJSON *msg, const hl_choice_out *c) {
    if (!c->n_calls) return true;
    cJSON *arr = cJSON_CreateArray();
    if (!put(msg, "tool_calls", arr)) return false;
    for (int32_t k = 0; k < c->n_calls; k++) {
        cJSON *call = cJSON_CreateObject(), *fn = cJSON_CreateObject();
        cJSON *args = cJSON_Parse(c->calls[k].args.p ? c->calls[k].args.p : "{}");
        if (!call || !cJSON_AddItemToArray(arr, call) || !put(call, "function", fn) ||
            !cJSON_AddStringToObject(fn, "name", c->calls[k].name) ||
            !put(fn, "arguments", args ? args : cJSON_CreateObject())) {
            if (!call) cJSON_Delete(fn);
            return false;
        }
    }
    return true;
}

/* The first object of every answer: {"model", "created_at"}. */
static cJSON *head(const hl_gen *g) {
    char at[48];
    rfc3339_now(at, sizeof at);
    cJSON *o = cJSON_CreateObject();
    if (o && cJSON_AddStringToObject(o, "model", g->model_name) && cJSON_AddStringToObject(o, "created_at", at))
        return o;
    cJSON_Delete(o);
    return NULL;
}

/* "message" (chat) or "response" (generate) with text; the chat message
 * carries the choice's tool calls when c is given. */
static bool add_text(cJSON *o, const hl_gen *g, const char *text, size_t len, const hl_choice_out *c) {
    char *s = malloc(len + 1);
    if (!s) return false;
    memcpy(s, text, len);
    s[len] = '\0';
    bool ok;
    if (!g->dialect->generate) {
        cJSON *msg = cJSON_CreateObject();
        ok = put(o, "message", msg) && cJSON_AddStringToObject(msg, "role", "assistant") &&
             cJSON_AddStringToObject(msg, "content", s) && (!c || add_calls(msg, c));
    } else {
        ok = cJSON_AddStringToObject(o, "response", s) != NULL;
    }
    free(s);
    return ok;
}

/* Whole nanoseconds (Ollama's durations are integers). */
static double ns(double seconds) { return (double)(int64_t)(seconds * 1e9); }

/* done, done_reason and the durations (nanoseconds) and counts. The prompt
 * is evaluated from submission to the first piece; generation from there
 * to the last. The model is loaded before the server starts: load 0. */
static bool add_done(cJSON *o, const hl_gen *g) {
    const double start = g->t_start, first = g->t_first ? g->t_first : start, end = g->t_end ? g->t_end : first;
    return cJSON_AddBoolToObject(o, "done", true) &&
           cJSON_AddStringToObject(o, "done_reason", done_reason(g->choice[0].finish)) &&
           cJSON_AddNumberToObject(o, "total_duration", ns(end - start)) &&
           cJSON_AddNumberToObject(o, "load_duration", 0) &&
           cJSON_AddNumberToObject(o, "prompt_eval_count", g->n_prompt - g->n_cached) &&
           cJSON_AddNumberToObject(o, "prompt_eval_duration", ns(first - start)) &&
           cJSON_AddNumberToObject(o, "eval_count", g->choice[0].n_generated) &&
           cJSON_AddNumberToObject(o, "eval_duration", ns(end - first));
}

static cJSON *result(hl_gen *g) {
    const hl_choice_out *c = &g->choice[0];
    cJSON *o = head(g);
    if (o && add_text(o, g, c->text.p ? c->text.p : "", c->text.len, c) && add_done(o, g)) return o;
    cJSON_Delete(o);
    return NULL;
}

/* One line per piece of text; a choice's tool calls, collected from their
 * deltas, in a line of their own when it ends (Ollama sends whole calls). */
static bool stream_event(hl_gen *g, const hl_event *ev, hl_buf *out) {
    hl_choice_out *c = &g->choice[0];
    if (!hl_gen_collect_calls(c, ev)) return false;
    if (ev->len) {
        cJSON *o = head(g);
        if (!o || !add_text(o, g, ev->text, ev->len, NULL) || !cJSON_AddBoolToObject(o, "done", false)) {
            cJSON_Delete(o);
            return false;
        }
        if (!hl_gen_frame(g, out, o)) return false;
    }
    if (ev->finish == HEARTH_FINISH_NONE || !c->n_calls) return true;
    cJSON *o = head(g);
    if (!o || !add_text(o, g, "", 0, c) || !cJSON_AddBoolToObject(o, "done", false)) {
        cJSON_Delete(o);
        return false;
    }
    return hl_gen_frame(g, out, o);
}

/* The last line: empty text, done and the figures; or {"error"}. */
static bool stream_end(hl_gen *g, hl_buf *out) {
    if (g->err.status) {
        cJSON *e = cJSON_CreateObject();
        if (!e || !cJSON_AddStringToObject(e, "error", g->err.message)) {
            cJSON_Delete(e);
            return false;
        }
        return hl_gen_frame(g, out, e);
    }
    cJSON *o = head(g);
    if (!o || !add_text(o, g, "", 0, NULL) || !add_done(o, g)) {
        cJSON_Delete(o);
        return false;
    }
    return hl_gen_frame(g, out, o);
}

static const hl_dialect ollama_chat = {
    .framing = HL_FRAMING_NDJSON, .result = result, .event = stream_event, .end = stream_end};
static const hl_dialect ollama_generate = {
    .framing = HL_FRAMING_NDJSON, .generate = true, .result = result, .event = stream_event, .end = stream_end};

/* ------------------------------------------------------------ handlers -- */

/* /api/generate with an empty prompt loads the model (here: it is loaded). */
static void loaded(hl_reply *rep, const char *name) {
    char at[48];
    rfc3339_now(at, sizeof at);
    cJSON *o = cJSON_CreateObject();
    bool ok = o && cJSON_AddStringToObject(o, "model", name) && cJSON_AddStringToObject(o, "created_at", at) &&
              cJSON_AddStringToObject(o, "response", "") && cJSON_AddBoolToObject(o, "done", true) &&
              cJSON_AddStringToObject(o, "done_reason", "load");
    hl_reply_json(rep, 200, ok ? o : (cJSON_Delete(o), NULL));
}

static void generation(hl_call *call, hl_reply *rep, bool chat_endpoint) {
    hl_server *srv = call->srv;
    hl_error err = {0};
    cJSON *req = NULL, *body = NULL;
    char *printed = NULL;
    const char *name = NULL;
    double repeat[2] = {1.1, 64}; /* Ollama's defaults: repeat_penalty, repeat_last_n */
    bool chat = chat_endpoint;
    const uint32_t n_ctx_slot = hearth_engine_n_ctx_seq(call->engine);
    if (!hl_server_generates(call->engine, &err) || !(req = hl_json_parse_object(call->body, call->len, &err)) ||
        !hl_json_str(req, "model", &name, &err))
        goto fail;
    if (!chat_endpoint) {
        const cJSON *p = hl_json_field(req, "prompt");
        if (!p || (cJSON_IsString(p) && !p->valuestring[0])) {
            loaded(rep, name ? name : srv->cfg.alias);
            cJSON_Delete(req);
            return;
        }
    }
    body = chat_endpoint ? chat_body(req, repeat, n_ctx_slot, &err)
                         : generate_body(req, &chat, repeat, n_ctx_slot, &err);
    if (!body) goto fail;
    if (!(printed = cJSON_PrintUnformatted(body))) {
        hl_server_oom(&err);
        goto fail;
    }
    /* Ollama's sampling defaults; options given override them */
    hearth_request_params defaults = hearth_request_default_params();
    defaults.sampling.seed = hl_server_unique(srv);
    defaults.sampling.temp = 0.8f;
    defaults.sampling.top_k = 40;
    defaults.sampling.top_p = 0.9f;
    defaults.sampling.min_p = 0.0f;
    hl_oai_request oreq;
    if (!hl_oai_parse(chat ? HL_OAI_CHAT : HL_OAI_COMPLETION, printed, strlen(printed), &defaults, &oreq, &err))
        goto fail;
    if (repeat[0] <= 0 || repeat[1] < -1 || repeat[1] > 1e6) {
        hl_oai_request_free(&oreq);
        hl_error_set(&err, 400, "invalid_request_error", "invalid_value", "options",
                     "repeat_penalty must be > 0 and repeat_last_n in -1 .. 1000000");
        goto fail;
    }
    oreq.params.sampling.repeat_penalty = (float)repeat[0];
    /* repeat_last_n -1: the whole context */
    oreq.params.sampling.repeat_last_n = repeat[1] < 0 ? (int32_t)n_ctx_slot : (int32_t)repeat[1];
    hl_gen_run(call, rep, &oreq, chat_endpoint ? &ollama_chat : &ollama_generate, name, NULL);
    cJSON_Delete(req);
    cJSON_Delete(body);
    free(printed);
    return;
fail:
    cJSON_Delete(req);
    cJSON_Delete(body);
    free(printed);
    hl_reply_error(rep, &err);
}

void hl_handle_ollama_chat(hl_call *call, hl_reply *rep) { generation(call, rep, true); }
void hl_handle_ollama_generate(hl_call *call, hl_reply *rep) { generation(call, rep, false); }
