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

#include "api_request.h"
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

/* ------------------------------------------------------------- answers -- */

/* Ollama's done_reason: "stop" for an end of text, a stop string, a tool
 * call or a complete grammar; "length" for max_tokens or a full context. */
static const char *done_reason(hearth_finish_reason f) { return f == HEARTH_FINISH_LENGTH ? "length" : "stop"; }

/* The message's tool_calls in Ollama's shape: [{"function": {"name",
 * "arguments": {...}}}] (arguments an object). */
static bool add_calls(cJSON *msg, const hl_choice_out *c) {
    if (!c->n_calls) return true;
    cJSON *arr = cJSON_CreateArray();
    if (!hl_json_put(msg, "tool_calls", arr)) return false;
    for (int32_t k = 0; k < c->n_calls; k++) {
        cJSON *call = cJSON_CreateObject(), *fn = cJSON_CreateObject();
        cJSON *args = cJSON_Parse(c->calls[k].args.p ? c->calls[k].args.p : "{}");
        if (!call || !cJSON_AddItemToArray(arr, call) || !hl_json_put(call, "function", fn) ||
            !cJSON_AddStringToObject(fn, "name", c->calls[k].name) ||
            !hl_json_put(fn, "arguments", args ? args : cJSON_CreateObject())) {
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
        ok = hl_json_put(o, "message", msg) && cJSON_AddStringToObject(msg, "role", "assistant") &&
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
            loaded(rep, name ? name : call->model_name);
            cJSON_Delete(req);
            return;
        }
    }
    body = chat_endpoint ? hl_ollama_chat_body(req, repeat, n_ctx_slot, &err)
                         : hl_ollama_generate_body(req, &chat, repeat, n_ctx_slot, &err);
    if (!body) goto fail;
    if (!(printed = cJSON_PrintUnformatted(body))) {
        hl_error_oom(&err);
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
