/* llama-server's own endpoints (tools/server/README.md of llama.cpp), which
 * editors and scripts use: POST /completion with its native fields and
 * answer (content, stop_type, stopping_word, tokens_predicted,
 * tokens_evaluated, tokens_cached, generation_settings, timings,
 * completion_probabilities for n_probs; streamed as data frames without
 * [DONE]), GET /props and POST /apply-template. A /completion body is
 * rewritten as an OpenAI completions body with llama-server's sampling
 * defaults (temperature 0.8, top_k 40, top_p 0.95, min_p 0.05) and parsed by
 * oai_request.c; fields whose meaning hearth does not implement are refused
 * unless given as the value that turns them off. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_request.h"
#include "gen.h"

/* ------------------------------------------------------------- answers -- */

/* {"id", "token", "bytes", "logprob"} of a token. */
static cJSON *token_json(const hl_gen *g, int32_t id, float logprob) {
    char piece[256];
    size_t len = 0;
    if (hearth_token_to_piece(g->model, id, true, piece, sizeof piece - 1, &len) != HEARTH_OK) len = 0;
    piece[len] = '\0';
    cJSON *o = cJSON_CreateObject(), *bytes = cJSON_CreateArray();
    bool ok = o && hl_json_put(o, "bytes", bytes) && cJSON_AddNumberToObject(o, "id", id) &&
              cJSON_AddStringToObject(o, "token", piece) && cJSON_AddNumberToObject(o, "logprob", logprob);
    if (!o) cJSON_Delete(bytes);
    for (size_t i = 0; ok && i < len; i++)
        ok = cJSON_AddItemToArray(bytes, cJSON_CreateNumber((unsigned char)piece[i]));
    if (ok) return o;
    cJSON_Delete(o);
    return NULL;
}

/* The event's entry of completion_probabilities appended to arr (none for
 * an event without a sampled token). */
static bool add_probs(const hl_gen *g, const hl_event *ev, cJSON *arr) {
    if (!hl_gen_has_logprob(g, ev)) return true;
    cJSON *e = token_json(g, ev->token, ev->logprob);
    if (!hl_json_push(arr, e)) return false;
    cJSON *top = cJSON_AddArrayToObject(e, "top_logprobs");
    bool ok = top != NULL;
    for (int32_t i = 0; ok && i < ev->n_top; i++)
        ok = hl_json_push(top, token_json(g, ev->top[i].token, ev->top[i].logprob));
    return ok;
}

/* Non-streaming: each token's probabilities into g->echo's array. */
static bool collect(hl_gen *g, const hl_event *ev) {
    cJSON *arr = cJSON_GetObjectItemCaseSensitive(g->echo, "completion_probabilities");
    return !arr || add_probs(g, ev, arr);
}

static const char *stop_type(const hl_gen *g) {
    const hearth_finish_reason f = g->choice[0].finish;
    return f == HEARTH_FINISH_LENGTH               ? "limit"
           : f == HEARTH_FINISH_STOP && g->stop[0] ? "word"
           : f == HEARTH_FINISH_NONE               ? "none"
                                                   : "eos";
}

/* llama-server's timings: milliseconds and rates of the prompt and the generation. */
static cJSON *timings(const hl_gen *g) {
    const double start = g->t_start, first = g->t_first ? g->t_first : start, end = g->t_end ? g->t_end : first;
    const double prompt_ms = (first - start) * 1e3, predicted_ms = (end - first) * 1e3;
    const int32_t prompt_n = g->n_prompt - g->n_cached, predicted_n = g->choice[0].n_generated;
    cJSON *t = cJSON_CreateObject();
    if (t && cJSON_AddNumberToObject(t, "cache_n", g->n_cached) && cJSON_AddNumberToObject(t, "prompt_n", prompt_n) &&
        cJSON_AddNumberToObject(t, "prompt_ms", prompt_ms) &&
        cJSON_AddNumberToObject(t, "prompt_per_token_ms", prompt_n ? prompt_ms / prompt_n : 0) &&
        cJSON_AddNumberToObject(t, "prompt_per_second", prompt_ms > 0 ? prompt_n * 1e3 / prompt_ms : 0) &&
        cJSON_AddNumberToObject(t, "predicted_n", predicted_n) &&
        cJSON_AddNumberToObject(t, "predicted_ms", predicted_ms) &&
        cJSON_AddNumberToObject(t, "predicted_per_token_ms", predicted_n ? predicted_ms / predicted_n : 0) &&
        cJSON_AddNumberToObject(t, "predicted_per_second", predicted_ms > 0 ? predicted_n * 1e3 / predicted_ms : 0))
        return t;
    cJSON_Delete(t);
    return NULL;
}

/* The sampling the request ran with, as llama-server's generation_settings names it. */
static cJSON *settings(const hl_gen *g) {
    const hearth_request_params *p = &g->req.params;
    const hearth_sampler_params *sp = &p->sampling;
    cJSON *o = cJSON_CreateObject(), *stop = cJSON_CreateArray();
    bool ok = o && hl_json_put(o, "stop", stop);
    for (size_t i = 0; ok && i < p->n_stop; i++) ok = hl_json_push(stop, cJSON_CreateString(p->stop[i]));
    ok = ok && cJSON_AddNumberToObject(o, "n_predict", p->max_tokens) &&
         cJSON_AddNumberToObject(o, "seed", (double)sp->seed) && cJSON_AddNumberToObject(o, "temperature", sp->temp) &&
         cJSON_AddNumberToObject(o, "top_k", sp->top_k) && cJSON_AddNumberToObject(o, "top_p", sp->top_p) &&
         cJSON_AddNumberToObject(o, "min_p", sp->min_p) &&
         cJSON_AddNumberToObject(o, "repeat_penalty", sp->repeat_penalty) &&
         cJSON_AddNumberToObject(o, "repeat_last_n", sp->repeat_last_n) &&
         cJSON_AddNumberToObject(o, "presence_penalty", sp->presence_penalty) &&
         cJSON_AddNumberToObject(o, "frequency_penalty", sp->frequency_penalty) &&
         cJSON_AddBoolToObject(o, "ignore_eos", p->ignore_eos) &&
         cJSON_AddNumberToObject(o, "n_probs", p->logprobs ? p->top_logprobs : 0) &&
         cJSON_AddBoolToObject(o, "stream", g->req.stream);
    if (ok) return o;
    cJSON_Delete(o);
    return NULL;
}

/* The final object (streaming: the last frame, without content). */
static cJSON * final(hl_gen *g, const char *content) {
    const hl_choice_out *c = &g->choice[0];
    const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(g->echo, "prompt");
    cJSON *o = cJSON_CreateObject();
    bool ok = o && cJSON_AddNumberToObject(o, "index", 0) && cJSON_AddStringToObject(o, "content", content) &&
              cJSON_AddNumberToObject(o, "id_slot", -1) && cJSON_AddBoolToObject(o, "stop", true) &&
              cJSON_AddStringToObject(o, "model", g->model_name) &&
              cJSON_AddNumberToObject(o, "tokens_predicted", c->n_generated) &&
              cJSON_AddNumberToObject(o, "tokens_evaluated", g->n_prompt) &&
              hl_json_put(o, "generation_settings", settings(g)) &&
              hl_json_put(o, "prompt", prompt ? cJSON_Duplicate(prompt, true) : cJSON_CreateString("")) &&
              cJSON_AddBoolToObject(o, "has_new_line", strchr(content, '\n') != NULL) &&
              cJSON_AddBoolToObject(o, "truncated", false) && cJSON_AddStringToObject(o, "stop_type", stop_type(g)) &&
              cJSON_AddStringToObject(o, "stopping_word", g->stop) &&
              cJSON_AddNumberToObject(o, "tokens_cached", g->n_cached) && hl_json_put(o, "timings", timings(g));
    const cJSON *probs = cJSON_GetObjectItemCaseSensitive(g->echo, "completion_probabilities");
    if (ok && probs && !g->req.stream) ok = hl_json_put(o, "completion_probabilities", cJSON_Duplicate(probs, true));
    if (ok) return o;
    cJSON_Delete(o);
    return NULL;
}

static cJSON *result(hl_gen *g) {
    const hl_choice_out *c = &g->choice[0];
    return final(g, c->text.p ? c->text.p : "");
}

/* A partial frame: {"index", "content", "tokens", "stop": false, "id_slot", "tokens_predicted", "tokens_evaluated"}. */
static bool stream_event(hl_gen *g, const hl_event *ev, hl_buf *out) {
    cJSON *probs = cJSON_GetObjectItemCaseSensitive(g->echo, "completion_probabilities");
    if (!ev->len && !(probs && hl_gen_has_logprob(g, ev))) return true;
    char *text = malloc(ev->len + 1);
    if (!text) return false;
    memcpy(text, ev->text, ev->len);
    text[ev->len] = '\0';
    cJSON *o = cJSON_CreateObject(), *tokens = o ? cJSON_AddArrayToObject(o, "tokens") : NULL;
    bool ok = tokens && cJSON_AddNumberToObject(o, "index", 0) && cJSON_AddStringToObject(o, "content", text) &&
              (ev->token < 0 || hearth_token_is_eog(g->model, ev->token) ||
               cJSON_AddItemToArray(tokens, cJSON_CreateNumber(ev->token))) &&
              cJSON_AddBoolToObject(o, "stop", false) && cJSON_AddNumberToObject(o, "id_slot", -1) &&
              cJSON_AddNumberToObject(o, "tokens_predicted", ev->n_generated) &&
              cJSON_AddNumberToObject(o, "tokens_evaluated", ev->n_prompt);
    free(text);
    if (ok && probs) {
        cJSON *arr = cJSON_AddArrayToObject(o, "completion_probabilities");
        ok = arr && add_probs(g, ev, arr);
    }
    if (!ok) {
        cJSON_Delete(o);
        return false;
    }
    return hl_gen_frame(g, out, o);
}

/* The last frame: stop true with the figures; an error frame on failure. */
static bool stream_end(hl_gen *g, hl_buf *out) {
    if (g->err.status) {
        cJSON *e = cJSON_CreateObject(), *in = e ? cJSON_AddObjectToObject(e, "error") : NULL;
        if (!in || !cJSON_AddNumberToObject(in, "code", g->err.status) ||
            !cJSON_AddStringToObject(in, "message", g->err.message) ||
            !cJSON_AddStringToObject(in, "type", g->err.type ? g->err.type : "server_error")) {
            cJSON_Delete(e);
            return false;
        }
        return hl_gen_frame(g, out, e);
    }
    return hl_gen_frame(g, out, final(g, ""));
}

static const hl_dialect native = {
    .framing = HL_FRAMING_SSE_DATA, .result = result, .collect = collect, .event = stream_event, .end = stream_end};

/* ------------------------------------------------------------ handlers -- */

/* Runs a /completion body (req, the caller's). */
static void completion(hl_call *call, hl_reply *rep, const cJSON *req) {
    hl_error err = {0};
    cJSON *body = NULL, *echo = NULL;
    char *printed = NULL;
    int64_t n_probs = 0;
    double repeat[2] = {1.0, 64}; /* llama-server's defaults */
    if (!(body = hl_native_completions_body(req, &n_probs, repeat, &err))) goto fail;
    if (!(printed = cJSON_PrintUnformatted(body))) {
        hl_error_oom(&err);
        goto fail;
    }
    hearth_request_params defaults = hearth_request_default_params();
    defaults.sampling.seed = hl_server_unique(call->srv);
    defaults.sampling.temp = 0.8f;
    defaults.sampling.top_k = 40;
    defaults.sampling.top_p = 0.95f;
    defaults.sampling.min_p = 0.05f;
    hl_oai_request oreq;
    if (!hl_oai_parse(HL_OAI_COMPLETION, printed, strlen(printed), &defaults, &oreq, &err)) goto fail;
    oreq.params.sampling.repeat_penalty = (float)repeat[0];
    oreq.params.sampling.repeat_last_n = repeat[1] < 0 ? (int32_t)hearth_engine_n_ctx_seq(call->engine)
                                                       : (int32_t)repeat[1];
    /* what the answer repeats: the prompt, and the probabilities as they are collected */
    echo = cJSON_CreateObject();
    const cJSON *prompt = hl_json_field(req, "prompt");
    if (!echo || (prompt && !hl_json_put(echo, "prompt", cJSON_Duplicate(prompt, true))) ||
        (n_probs > 0 && !cJSON_AddArrayToObject(echo, "completion_probabilities"))) {
        hl_oai_request_free(&oreq);
        hl_error_oom(&err);
        goto fail;
    }
    hl_gen_run(call, rep, &oreq, &native, NULL, echo);
    cJSON_Delete(body);
    free(printed);
    return;
fail:
    cJSON_Delete(echo);
    cJSON_Delete(body);
    free(printed);
    hl_reply_error(rep, &err);
}

void hl_handle_completion(hl_call *call, hl_reply *rep) {
    hl_error err = {0};
    cJSON *req = NULL;
    if (!hl_server_generates(call->engine, &err) || !(req = hl_json_parse_object(call->body, call->len, &err))) {
        hl_reply_error(rep, &err);
        return;
    }
    completion(call, rep, req);
    cJSON_Delete(req);
}

/* The infill fields of a /infill body into *in (strings point into req);
 * false with *err. */
static bool read_infill(const cJSON *req, hearth_infill *in, hearth_infill_chunk **chunks, hl_error *err) {
    if (!hl_json_str(req, "input_prefix", &in->prefix, err) || !hl_json_str(req, "input_suffix", &in->suffix, err) ||
        !hl_json_str(req, "prompt", &in->prompt, err))
        return false;
    if (!in->prefix || !in->suffix)
        return hl_error_bad(err, in->prefix ? "input_suffix" : "input_prefix",
                            "input_prefix and input_suffix are required (strings)");
    const cJSON *extra = hl_json_field(req, "input_extra");
    if (extra && !cJSON_IsArray(extra))
        return hl_error_bad(err, "input_extra",
                            "input_extra must be an array of {\"filename\": string, \"text\": string}");
    in->n_extra = extra ? (size_t)cJSON_GetArraySize(extra) : 0;
    *chunks = calloc(in->n_extra ? in->n_extra : 1, sizeof **chunks);
    if (!*chunks) return hl_error_oom(err);
    in->extra = *chunks;
    size_t i = 0;
    for (const cJSON *c = extra ? extra->child : NULL; c; c = c->next, i++) {
        const cJSON *text = hl_json_field(c, "text"), *name = hl_json_field(c, "filename");
        if (!cJSON_IsString(text) || (name && !cJSON_IsString(name)))
            return hl_error_bad(err, "input_extra",
                                "each input_extra chunk needs a string text (and a string filename)");
        (*chunks)[i] = (hearth_infill_chunk){.filename = name ? name->valuestring : NULL, .text = text->valuestring};
    }
    return true;
}

/* The FIM prompt's tokens as a JSON array, for the completions body. */
static cJSON *infill_tokens(const hearth_model *m, const hearth_infill *in, hl_error *err) {
    size_t n = 0;
    hearth_status st = hearth_tokenize_infill(m, in, NULL, 0, &n);
    int32_t *t = st == HEARTH_ERR_BUFFER_TOO_SMALL || st == HEARTH_OK ? malloc((n ? n : 1) * sizeof *t) : NULL;
    if (t) st = hearth_tokenize_infill(m, in, t, n, &n);
    cJSON *arr = st == HEARTH_OK ? cJSON_CreateIntArray(t, (int)n) : NULL;
    free(t);
    if (!arr && st == HEARTH_OK) hl_error_oom(err);
    else if (!arr)
        hl_error_set(err, st == HEARTH_ERR_UNSUPPORTED ? 501 : 400, "invalid_request_error", "not_supported", NULL,
                     "%s", hearth_last_error());
    return arr;
}

/* POST /infill: a /completion whose prompt is the FIM prompt of
 * input_prefix, input_suffix, input_extra and prompt, for a batch of
 * min(2048, a slot) tokens (llama-server's default n_batch) and the slot. */
void hl_handle_infill(hl_call *call, hl_reply *rep) {
    hl_error err = {0};
    hearth_infill in = {.n_predict = -1};
    hearth_infill_chunk *chunks = NULL;
    cJSON *req = NULL, *rest = NULL, *tokens = NULL;
    if (!hl_server_generates(call->engine, &err) || !(req = hl_json_parse_object(call->body, call->len, &err)) ||
        !read_infill(req, &in, &chunks, &err))
        goto fail;
    in.n_ctx = (int32_t)hearth_engine_n_ctx_seq(call->engine);
    in.n_batch = in.n_ctx < 2048 ? in.n_ctx : 2048;
    if (!(tokens = infill_tokens(hearth_engine_model(call->engine), &in, &err))) goto fail;
    /* the rest of the body is a /completion's, its prompt the FIM tokens */
    if (!(rest = cJSON_Duplicate(req, true))) {
        hl_error_oom(&err);
        goto fail;
    }
    static const char *const fields[] = {"input_prefix", "input_suffix", "input_extra", "prompt"};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        cJSON_DeleteItemFromObjectCaseSensitive(rest, fields[i]);
    if (!hl_json_put(rest, "prompt", tokens)) {
        tokens = NULL;
        hl_error_oom(&err);
        goto fail;
    }
    tokens = NULL;
    completion(call, rep, rest);
    free(chunks);
    cJSON_Delete(req);
    cJSON_Delete(rest);
    return;
fail:
    free(chunks);
    cJSON_Delete(tokens);
    cJSON_Delete(req);
    cJSON_Delete(rest);
    hl_reply_error(rep, &err);
}

/* GET /props: the server's settings as llama-server reports them. */
void hl_handle_props(hl_call *call, hl_reply *rep) {
    const hearth_model *m = hearth_engine_model(call->engine);
    char *tmpl = NULL, bos[128] = "", eos[128] = "";
    size_t len = 0;
    hearth_model_chat_template(m, &tmpl);
    if (hearth_token_bos(m) >= 0 &&
        hearth_token_to_piece(m, hearth_token_bos(m), true, bos, sizeof bos - 1, &len) == HEARTH_OK)
        bos[len] = '\0';
    if (hearth_token_eos(m) >= 0 &&
        hearth_token_to_piece(m, hearth_token_eos(m), true, eos, sizeof eos - 1, &len) == HEARTH_OK)
        eos[len] = '\0';
    size_t n_slots = 0;
    hearth_engine_slots(call->engine, NULL, 0, &n_slots);
    cJSON *o = cJSON_CreateObject(), *gs = o ? cJSON_AddObjectToObject(o, "default_generation_settings") : NULL;
    cJSON *mod = gs ? cJSON_AddObjectToObject(o, "modalities") : NULL;
    bool ok = mod && cJSON_AddNumberToObject(gs, "n_ctx", hearth_engine_n_ctx_seq(call->engine)) &&
              cJSON_AddNumberToObject(o, "total_slots", (double)n_slots) &&
              cJSON_AddStringToObject(o, "model_alias", call->model_name) &&
              cJSON_AddStringToObject(o, "chat_template", tmpl ? tmpl : "") &&
              cJSON_AddStringToObject(o, "bos_token", bos) && cJSON_AddStringToObject(o, "eos_token", eos) &&
              cJSON_AddBoolToObject(mod, "vision", false) && cJSON_AddBoolToObject(mod, "audio", false) &&
              cJSON_AddStringToObject(o, "build_info", hearth_build_info());
    free(tmpl);
    if (!ok) {
        cJSON_Delete(o);
        o = NULL;
    }
    hl_reply_json(rep, 200, o);
}

/* POST /apply-template: {"messages"} -> {"prompt"}, the engine's template applied. */
void hl_handle_apply_template(hl_call *call, hl_reply *rep) {
    hl_error err = {0};
    hearth_request_params defaults = hearth_request_default_params();
    hl_oai_request req;
    if (!hl_server_generates(call->engine, &err) ||
        !hl_oai_parse(HL_OAI_CHAT, call->body, call->len, &defaults, &req, &err)) {
        hl_reply_error(rep, &err);
        return;
    }
    char *prompt = NULL;
    const hearth_status st = hearth_engine_render(call->engine, &req.params, &prompt);
    hl_oai_request_free(&req);
    if (st != HEARTH_OK) {
        hl_error_set(&err, 400, "invalid_request_error", "invalid_value", "messages", "%s", hearth_last_error());
        hl_reply_error(rep, &err);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    if (o && !cJSON_AddStringToObject(o, "prompt", prompt)) {
        cJSON_Delete(o);
        o = NULL;
    }
    hearth_chat_free(prompt);
    hl_reply_json(rep, 200, o);
}
