/* The small endpoints: GET /health, GET /v1/models (with meta.n_embd for an
 * embedding model), GET /slots, POST /tokenize and POST /detokenize. Each reads the engine or the model through
 * hearth.h and answers JSON. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "server_impl.h"

/* 200 {"status": "ok"} once the model is loaded; server.c answers 503 before. */
void hl_handle_health(hl_call *call, hl_reply *rep) {
    (void)call;
    cJSON *j = cJSON_CreateObject();
    if (j && !cJSON_AddStringToObject(j, "status", "ok")) {
        cJSON_Delete(j);
        j = NULL;
    }
    hl_reply_json(rep, 200, j);
}

/* One model as OpenAI lists it; a loaded one also with its description,
 * context length and, for an embedding model, its vector size (where
 * llama-server puts it). */
static bool add_model(cJSON *data, const hl_model_info *info) {
    cJSON *m = cJSON_CreateObject();
    if (!m || !cJSON_AddItemToArray(data, m)) {
        cJSON_Delete(m);
        return false;
    }
    bool ok = cJSON_AddStringToObject(m, "id", info->name) && cJSON_AddStringToObject(m, "object", "model") &&
              cJSON_AddNumberToObject(m, "created", (double)time(NULL)) &&
              cJSON_AddStringToObject(m, "owned_by", "hearth") && cJSON_AddBoolToObject(m, "loaded", !!info->engine);
    if (!ok || !info->engine) return ok;
    const hearth_model *model = hearth_engine_model(info->engine);
    ok = cJSON_AddStringToObject(m, "description", hearth_model_desc(model)) &&
         cJSON_AddNumberToObject(m, "context_length", hearth_model_n_ctx_train(model));
    if (ok && hearth_engine_embeddings(info->engine)) {
        cJSON *meta = cJSON_AddObjectToObject(m, "meta");
        ok = meta && cJSON_AddNumberToObject(meta, "n_embd", hearth_model_n_embd(model));
    }
    return ok;
}

void hl_handle_models(hl_call *call, hl_reply *rep) {
    hl_model_info *infos;
    size_t n;
    if (!hl_models_list(call->srv->models, &infos, &n)) {
        hl_reply_json(rep, 200, NULL); /* the out-of-memory answer */
        return;
    }
    cJSON *list = cJSON_CreateObject(), *data = list ? cJSON_AddArrayToObject(list, "data") : NULL;
    bool ok = data && cJSON_AddStringToObject(list, "object", "list");
    for (size_t i = 0; ok && i < n; i++) ok = add_model(data, &infos[i]);
    hl_models_list_end(call->srv->models, infos, n);
    if (!ok) {
        cJSON_Delete(list);
        list = NULL;
    }
    hl_reply_json(rep, 200, list);
}

static const char *slot_state(hearth_slot_state s) {
    return s == HEARTH_SLOT_PREFILL ? "prefill" : s == HEARTH_SLOT_GENERATE ? "generate" : "idle";
}

void hl_handle_slots(hl_call *call, hl_reply *rep) {
    size_t n = 0;
    hearth_engine_slots(call->engine, NULL, 0, &n);
    hearth_slot_info *slots = calloc(n ? n : 1, sizeof *slots);
    cJSON *arr = cJSON_CreateArray();
    bool ok = slots && arr;
    if (ok) hearth_engine_slots(call->engine, slots, n, &n);
    for (size_t i = 0; ok && i < n; i++) {
        const hearth_slot_info *s = &slots[i];
        cJSON *o = cJSON_CreateObject();
        ok = o && cJSON_AddItemToArray(arr, o);
        if (!ok) cJSON_Delete(o);
        ok = ok && cJSON_AddNumberToObject(o, "id", s->id) &&
             cJSON_AddStringToObject(o, "state", slot_state(s->state)) &&
             cJSON_AddNumberToObject(o, "request_id", (double)s->request_id) &&
             cJSON_AddNumberToObject(o, "n_prompt", s->n_prompt) &&
             cJSON_AddNumberToObject(o, "n_cached", s->n_cached) &&
             cJSON_AddNumberToObject(o, "n_generated", s->n_generated) &&
             cJSON_AddNumberToObject(o, "n_past", s->n_past) && cJSON_AddNumberToObject(o, "n_ctx", s->n_ctx);
    }
    free(slots);
    if (!ok) {
        cJSON_Delete(arr);
        arr = NULL;
    }
    hl_reply_json(rep, 200, arr);
}

/* A status of the text calls as a reply: the model's message for bad input. */
static void text_error(hl_reply *rep, hearth_status st, const char *param) {
    hl_error e;
    if (st == HEARTH_ERR_OUT_OF_MEMORY) hl_error_set(&e, 500, "server_error", NULL, NULL, "out of memory");
    else hl_error_set(&e, 400, "invalid_request_error", "invalid_value", param, "%s", hearth_last_error());
    hl_reply_error(rep, &e);
}

/* {"content": "...", "add_special": false, "parse_special": true} -> {"tokens": [...]} */
void hl_handle_tokenize(hl_call *call, hl_reply *rep) {
    hl_error err;
    cJSON *req = hl_json_parse_object(call->body, call->len, &err);
    const char *content = NULL;
    bool add_special = false, parse_special = true;
    if (!req || !hl_json_str(req, "content", &content, &err) || !hl_json_bool(req, "add_special", &add_special, &err) ||
        !hl_json_bool(req, "parse_special", &parse_special, &err)) {
        cJSON_Delete(req);
        hl_reply_error(rep, &err);
        return;
    }
    if (!content) {
        cJSON_Delete(req);
        hl_error_set(&err, 400, "invalid_request_error", "missing_field", "content", "'content' is required");
        hl_reply_error(rep, &err);
        return;
    }
    const hearth_model *model = hearth_engine_model(call->engine);
    size_t len = strlen(content), n_max = len + 16, n = 0;
    int32_t *tokens = malloc(n_max * sizeof *tokens);
    hearth_status st = tokens ? hearth_tokenize(model, content, len, add_special, parse_special, tokens, n_max, &n)
                              : HEARTH_ERR_OUT_OF_MEMORY;
    if (st == HEARTH_ERR_BUFFER_TOO_SMALL) { /* more special tokens than the guess: ask again with the count */
        int32_t *bigger = realloc(tokens, (n_max = n) * sizeof *tokens);
        st = bigger ? hearth_tokenize(model, content, len, add_special, parse_special, bigger, n_max, &n)
                    : HEARTH_ERR_OUT_OF_MEMORY;
        tokens = bigger ? bigger : tokens;
    }
    cJSON_Delete(req);
    if (st != HEARTH_OK) {
        free(tokens);
        text_error(rep, st, "content");
        return;
    }
    cJSON *res = cJSON_CreateObject(), *arr = cJSON_CreateIntArray(tokens, (int)n);
    free(tokens);
    bool ok = res && arr && cJSON_AddItemToObject(res, "tokens", arr);
    if (!ok) {
        cJSON_Delete(res);
        cJSON_Delete(arr);
        res = NULL;
    }
    hl_reply_json(rep, 200, res);
}

/* {"tokens": [...]} -> {"content": "..."}: whole UTF-8 characters, special
 * tokens written out. */
void hl_handle_detokenize(hl_call *call, hl_reply *rep) {
    hl_error err;
    cJSON *req = hl_json_parse_object(call->body, call->len, &err);
    const cJSON *arr = req ? cJSON_GetObjectItemCaseSensitive(req, "tokens") : NULL;
    int32_t *tokens = NULL;
    size_t n = 0;
    if (req && !arr)
        hl_error_set(&err, 400, "invalid_request_error", "missing_field", "tokens", "'tokens' is required");
    if (!req || !arr || !hl_json_tokens(arr, "tokens", &tokens, &n, &err)) {
        cJSON_Delete(req);
        hl_reply_error(rep, &err);
        return;
    }
    cJSON_Delete(req);
    hearth_detok *detok = NULL;
    hl_buf text = {0};
    hearth_status st = hearth_detok_init(hearth_engine_model(call->engine), true, &detok);
    for (size_t i = 0; st == HEARTH_OK && i <= n; i++) { /* n pushes, then the flush */
        size_t got = 0, room = 256;
        do { /* BUFFER_TOO_SMALL consumes nothing and says how much room one push needs */
            if (!hl_buf_reserve(&text, room)) {
                st = HEARTH_ERR_OUT_OF_MEMORY;
                break;
            }
            char *at = text.p + text.len;
            st = i < n ? hearth_detok_push(detok, tokens[i], at, room, &got)
                       : hearth_detok_flush(detok, at, room, &got);
            room = got;
        } while (st == HEARTH_ERR_BUFFER_TOO_SMALL);
        if (st == HEARTH_OK) text.p[text.len += got] = '\0';
    }
    if (st != HEARTH_OK) text_error(rep, st, "tokens");
    hearth_detok_free(detok);
    free(tokens);
    if (st != HEARTH_OK) {
        hl_buf_free(&text);
        return;
    }
    cJSON *res = cJSON_CreateObject();
    if (res && !cJSON_AddStringToObject(res, "content", text.p ? text.p : "")) {
        cJSON_Delete(res);
        res = NULL;
    }
    hl_buf_free(&text);
    hl_reply_json(rep, 200, res);
}
