/* POST /v1/embeddings in OpenAI's shape: `input` a string, an array of
 * strings, an array of token ids or an array of token-id arrays (strings
 * tokenized with the model's special tokens, BERT's [CLS] and [SEP]);
 * `encoding_format` "float" or "base64" (the float32 values little-endian,
 * as OpenAI sends them); `dimensions` only as the model's n_embd (hearth
 * does not truncate vectors). Every input goes to the engine in one call
 * (hearth_engine_embed_batch), which batches it with other clients' inputs;
 * the answer is {"object": "list", "data": [{"object": "embedding",
 * "index", "embedding"}], "model", "usage"}. */
#include <stdlib.h>
#include <string.h>

#include "server_impl.h"

void hl_embed_inputs_free(hl_embed_inputs *in) {
    for (int32_t i = 0; in->tokens && i < in->n; i++) free(in->tokens[i]);
    free(in->tokens);
    free(in->n_tokens);
}

bool hl_server_generates(const hearth_engine *engine, hl_error *err) {
    if (!hearth_engine_embeddings(engine)) return true;
    const bool rank = hearth_engine_pooling_type(engine) == HEARTH_POOLING_RANK;
    hl_error_set(err, 400, "invalid_request_error", "model_not_generative", "model",
                 "this model computes %s and does not generate text: use %s, or start hearth serve with a "
                 "generation model",
                 rank ? "reranking scores" : "embeddings", rank ? "/v1/rerank" : "/v1/embeddings");
    return false;
}

bool hl_server_model_name(const cJSON *req, hl_error *err) {
    const char *name = NULL;
    return hl_json_str(req, "model", &name, err);
}

/* Tokenizes text i (add_special, parse_special, as llama-server does). */
static bool tokenize(const hearth_model *m, const char *text, int32_t i, hl_embed_inputs *in, hl_error *err) {
    size_t len = strlen(text), n_max = len + 16, n = 0;
    int32_t *t = malloc(n_max * sizeof *t);
    hearth_status st = t ? hearth_tokenize(m, text, len, true, true, t, n_max, &n) : HEARTH_ERR_OUT_OF_MEMORY;
    if (st == HEARTH_ERR_BUFFER_TOO_SMALL) {
        int32_t *bigger = realloc(t, (n_max = n) * sizeof *t);
        st = bigger ? hearth_tokenize(m, text, len, true, true, bigger, n_max, &n) : HEARTH_ERR_OUT_OF_MEMORY;
        t = bigger ? bigger : t;
    }
    if (st != HEARTH_OK) {
        free(t);
        if (st == HEARTH_ERR_OUT_OF_MEMORY) return hl_error_oom(err);
        hl_error_set(err, 400, "invalid_request_error", "invalid_value", "input", "input %d: %s", (int)i,
                     hearth_last_error());
        return false;
    }
    if (n == 0) {
        free(t);
        hl_error_set(err, 400, "invalid_request_error", "invalid_value", "input",
                     "input %d is an empty string, which gives no tokens for this model", (int)i);
        return false;
    }
    in->tokens[i] = t;
    in->n_tokens[i] = (int32_t)n;
    return true;
}

/* Token ids of input i from a JSON array. */
static bool token_array(const cJSON *arr, int32_t i, hl_embed_inputs *in, hl_error *err) {
    size_t n = 0;
    if (!hl_json_tokens(arr, "input", &in->tokens[i], &n, err)) return false;
    if (n == 0) {
        hl_error_set(err, 400, "invalid_request_error", "invalid_value", "input", "input %d is an empty token array",
                     (int)i);
        return false;
    }
    in->n_tokens[i] = (int32_t)n;
    return true;
}

static bool wrong_input(hl_error *err) {
    hl_error_set(err, 400, "invalid_request_error", "invalid_type", "input",
                 "'input' must be a string, an array of strings, an array of token ids or an array of "
                 "token-id arrays");
    return false;
}

bool hl_embed_read_inputs(const hearth_model *m, const cJSON *input, hl_embed_inputs *in, hl_error *err) {
    if (!input) {
        hl_error_set(err, 400, "invalid_request_error", "missing_field", "input", "'input' is required");
        return false;
    }
    const bool one = cJSON_IsString(input) || (cJSON_IsArray(input) && cJSON_IsNumber(cJSON_GetArrayItem(input, 0)));
    if (!one && !cJSON_IsArray(input)) return wrong_input(err);
    const int n = one ? 1 : cJSON_GetArraySize(input);
    if (n == 0) {
        hl_error_set(err, 400, "invalid_request_error", "invalid_value", "input", "'input' is an empty array");
        return false;
    }
    if (n > HL_EMBED_MAX_INPUTS) {
        hl_error_set(err, 400, "invalid_request_error", "invalid_value", "input",
                     "'input' has %d inputs; at most %d may be given at once", n, HL_EMBED_MAX_INPUTS);
        return false;
    }
    in->tokens = calloc((size_t)n, sizeof *in->tokens);
    in->n_tokens = calloc((size_t)n, sizeof *in->n_tokens);
    if (!in->tokens || !in->n_tokens) return hl_error_oom(err);
    in->n = n;
    if (one) {
        if (cJSON_IsString(input) ? !tokenize(m, input->valuestring, 0, in, err) : !token_array(input, 0, in, err))
            return false;
    } else {
        const cJSON *first = cJSON_GetArrayItem(input, 0);
        int32_t i = 0;
        for (const cJSON *it = input->child; it; it = it->next, i++) {
            if (cJSON_IsString(first) && cJSON_IsString(it)) {
                if (!tokenize(m, it->valuestring, i, in, err)) return false;
            } else if (cJSON_IsArray(first) && cJSON_IsArray(it)) {
                if (!token_array(it, i, in, err)) return false;
            } else {
                return wrong_input(err);
            }
        }
    }
    for (int32_t i = 0; i < in->n; i++) in->n_total += in->n_tokens[i];
    return true;
}

void hl_embed_error(hl_error *err, hearth_status st, const char *msg, const char *param) {
    switch (st) {
    case HEARTH_ERR_INVALID_ARG:
        hl_error_set(err, 400, "invalid_request_error",
                     strstr(msg, "an embedding takes at most") ? "context_length_exceeded" : "invalid_value", param,
                     "%s", msg);
        break;
    case HEARTH_ERR_BUSY:
        hl_error_set(err, 503, "server_error", "server_busy", NULL,
                     "the server is busy (every queue place is taken): retry later");
        break;
    case HEARTH_ERR_CANCELLED:
        hl_error_set(err, 503, "server_error", "server_shutting_down", NULL, "the server is shutting down");
        break;
    default: hl_error_set(err, 500, "server_error", NULL, NULL, "%s", msg);
    }
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* `n` floats as base64 of their little-endian float32 bytes (malloc'd). */
static char *base64_floats(const float *v, int32_t n) {
    const size_t len = (size_t)n * 4;
    unsigned char *b = malloc(len ? len : 1);
    char *out = malloc((len + 2) / 3 * 4 + 1);
    if (!b || !out) {
        free(b);
        free(out);
        return NULL;
    }
    for (int32_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        for (int k = 0; k < 4; k++) b[i * 4 + k] = (unsigned char)(u >> (8 * k));
    }
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        const uint32_t x = (uint32_t)b[i] << 16 | (i + 1 < len ? (uint32_t)b[i + 1] << 8 : 0) |
                           (i + 2 < len ? (uint32_t)b[i + 2] : 0);
        out[o++] = B64[x >> 18 & 63];
        out[o++] = B64[x >> 12 & 63];
        out[o++] = i + 1 < len ? B64[x >> 6 & 63] : '=';
        out[o++] = i + 2 < len ? B64[x & 63] : '=';
    }
    out[o] = '\0';
    free(b);
    return out;
}

/* The answer of n vectors of n_embd floats; NULL when memory ran out. */
static cJSON *response(const char *model, const float *vecs, int32_t n, int32_t n_embd, bool b64, int64_t n_total) {
    cJSON *res = cJSON_CreateObject();
    bool ok = res && cJSON_AddStringToObject(res, "object", "list");
    cJSON *data = ok ? cJSON_AddArrayToObject(res, "data") : NULL;
    ok = data && cJSON_AddStringToObject(res, "model", model);
    cJSON *usage = ok ? cJSON_AddObjectToObject(res, "usage") : NULL;
    ok = usage && cJSON_AddNumberToObject(usage, "prompt_tokens", (double)n_total) &&
         cJSON_AddNumberToObject(usage, "total_tokens", (double)n_total);
    for (int32_t i = 0; ok && i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        ok = o && cJSON_AddItemToArray(data, o);
        if (!ok) {
            cJSON_Delete(o);
            break;
        }
        cJSON *emb;
        if (b64) {
            char *s = base64_floats(vecs + (size_t)i * n_embd, n_embd);
            emb = s ? cJSON_CreateString(s) : NULL;
            free(s);
        } else {
            emb = cJSON_CreateFloatArray(vecs + (size_t)i * n_embd, n_embd);
        }
        ok = emb && cJSON_AddStringToObject(o, "object", "embedding") && cJSON_AddNumberToObject(o, "index", i) &&
             cJSON_AddItemToObject(o, "embedding", emb);
        if (!ok) cJSON_Delete(emb);
    }
    if (!ok) {
        cJSON_Delete(res);
        return NULL;
    }
    return res;
}

void hl_handle_embeddings(hl_call *call, hl_reply *rep) {
    hl_error err = {0};
    if (!hearth_engine_embeddings(call->engine) || hearth_engine_pooling_type(call->engine) == HEARTH_POOLING_RANK) {
        hl_error_set(&err, 400, "invalid_request_error", "model_not_embedding", "model",
                     hearth_engine_embeddings(call->engine)
                         ? "this model is a reranker: it scores query-document pairs at /v1/rerank and gives no "
                           "embeddings"
                         : "this model does not compute embeddings; start hearth serve with an embedding model "
                           "(or with --embeddings and a --pooling for a decoder)");
        hl_reply_error(rep, &err);
        return;
    }
    const hearth_model *model = hearth_engine_model(call->engine);
    const int32_t n_embd = hearth_model_n_embd(model);
    cJSON *req = hl_json_parse_object(call->body, call->len, &err);
    const char *format = NULL;
    int64_t dims = n_embd;
    hl_embed_inputs in = {0};
    float *vecs = NULL;
    if (!req || !hl_server_model_name(req, &err) || !hl_json_str(req, "encoding_format", &format, &err) ||
        !hl_json_int(req, "dimensions", 1, INT32_MAX, &dims, &err))
        goto fail;
    if (format && strcmp(format, "float") != 0 && strcmp(format, "base64") != 0) {
        hl_error_set(&err, 400, "invalid_request_error", "invalid_value", "encoding_format",
                     "'encoding_format' must be \"float\" or \"base64\" (got \"%s\")", format);
        goto fail;
    }
    if (dims != n_embd) {
        hl_error_set(&err, 400, "invalid_request_error", "unsupported_parameter", "dimensions",
                     "'dimensions' %lld is not supported: this model's embeddings have %d dimensions and it was not "
                     "trained to be truncated",
                     (long long)dims, (int)n_embd);
        goto fail;
    }
    if (!hl_embed_read_inputs(model, hl_json_field(req, "input"), &in, &err)) goto fail;
    vecs = malloc((size_t)in.n * (size_t)n_embd * sizeof *vecs);
    if (!vecs) {
        hl_error_oom(&err);
        goto fail;
    }
    hearth_status st = hearth_engine_embed_batch(call->engine, in.n, (const int32_t *const *)in.tokens, in.n_tokens,
                                                 vecs);
    if (st != HEARTH_OK) {
        hl_embed_error(&err, st, hearth_last_error(), "input");
        goto fail;
    }
    cJSON *res = response(call->model_name, vecs, in.n, n_embd, format && !strcmp(format, "base64"), in.n_total);
    cJSON_Delete(req);
    hl_embed_inputs_free(&in);
    free(vecs);
    hl_reply_json(rep, 200, res);
    return;
fail:
    cJSON_Delete(req);
    hl_embed_inputs_free(&in);
    free(vecs);
    hl_reply_error(rep, &err);
}
