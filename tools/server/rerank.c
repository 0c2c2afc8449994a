/* POST /v1/rerank (also /rerank, /v1/reranking, /reranking) as llama-server
 * and Jina's reranker API take it: `query` (a string), `documents` (a
 * non-empty array of strings), `top_n` (default: every document),
 * `return_documents` (Jina: each result carries {"text": document}); the
 * answer is {"model", "object": "list", "usage", "results": [{"index",
 * "relevance_score"}]}, best first. With `texts` in place of `documents`
 * the request is Hugging Face TEI's and the answer its bare array of
 * {"index", "score"} (`return_text` adds "text"). Each pair is tokenized by
 * the library (hearth_tokenize_rerank: [CLS] query [SEP] document for BERT
 * cross-encoders) and every pair goes to the engine in one call, which
 * batches it with other clients'; a score is the classification head's first
 * output, the raw logit, as llama-server gives it. */
#include <stdlib.h>
#include <string.h>

#include "server_impl.h"

typedef struct rerank_req {
    const char *query;
    const cJSON *docs;
    int32_t n;
    int64_t top_n;
    bool tei, return_text;
} rerank_req;

typedef struct scored {
    int32_t index;
    float score;
} scored;

static int by_score(const void *a, const void *b) {
    const scored *x = a, *y = b;
    return x->score < y->score ? 1 : x->score > y->score ? -1 : x->index - y->index;
}

/* The fields read (truncate, TEI's: only false, which is what hearth does: a pair over a slot is refused). */
static const char *const FIELDS[] = {"model",       "query",   "documents", "texts", "top_n", "return_documents",
                                     "return_text", "truncate"};

static bool read_request(const cJSON *req, rerank_req *r, hl_error *err) {
    bool truncate = false;
    if (!hl_json_known_fields(req, FIELDS, sizeof FIELDS / sizeof *FIELDS, err) ||
        !hl_json_bool(req, "truncate", &truncate, err) || !hl_json_str(req, "query", &r->query, err))
        return false;
    if (truncate)
        return hl_error_bad(err, "truncate", "truncate: true is not supported: a pair longer than a slot is refused");
    if (!r->query) {
        hl_error_set(err, 400, "invalid_request_error", "missing_field", "query", "'query' is required");
        return false;
    }
    const cJSON *docs = hl_json_field(req, "documents");
    r->tei = !docs && hl_json_field(req, "texts");
    if (r->tei) docs = hl_json_field(req, "texts");
    const char *field = r->tei ? "texts" : "documents";
    if (!cJSON_IsArray(docs) || cJSON_GetArraySize(docs) == 0) {
        hl_error_set(err, 400, "invalid_request_error",
                     !docs                 ? "missing_field"
                     : cJSON_IsArray(docs) ? "invalid_value"
                                           : "invalid_type",
                     field, "'%s' must be a non-empty array of strings", field);
        return false;
    }
    r->docs = docs;
    r->n = cJSON_GetArraySize(docs);
    if (r->n > HL_EMBED_MAX_INPUTS) {
        hl_error_set(err, 400, "invalid_request_error", "invalid_value", field,
                     "'%s' has %d documents; at most %d may be given at once", field, (int)r->n, HL_EMBED_MAX_INPUTS);
        return false;
    }
    int32_t i = 0;
    for (const cJSON *d = docs->child; d; d = d->next, i++)
        if (!cJSON_IsString(d)) {
            hl_error_set(err, 400, "invalid_request_error", "invalid_type", field, "%s[%d] is not a string", field,
                         (int)i);
            return false;
        }
    r->top_n = r->n;
    return hl_json_int(req, "top_n", 1, INT32_MAX, &r->top_n, err) &&
           hl_json_bool(req, r->tei ? "return_text" : "return_documents", &r->return_text, err);
}

/* The pairs' tokens into in (the arrays sized r->n). */
static bool tokenize_pairs(const hearth_model *m, const rerank_req *r, hl_embed_inputs *in, hl_error *err) {
    const size_t q_len = strlen(r->query);
    int32_t i = 0;
    for (const cJSON *d = r->docs->child; d; d = d->next, i++) {
        const size_t d_len = strlen(d->valuestring);
        size_t n_max = q_len + d_len + 16, n = 0;
        hearth_status st = HEARTH_ERR_BUFFER_TOO_SMALL;
        for (int tries = 0; st == HEARTH_ERR_BUFFER_TOO_SMALL && tries < 2; tries++, n_max = n) {
            free(in->tokens[i]);
            if (!(in->tokens[i] = malloc(n_max * sizeof **in->tokens))) return hl_error_oom(err);
            st = hearth_tokenize_rerank(m, r->query, q_len, d->valuestring, d_len, in->tokens[i], n_max, &n);
        }
        if (st == HEARTH_ERR_OUT_OF_MEMORY) return hl_error_oom(err);
        if (st != HEARTH_OK) {
            hl_error_set(err, 400, "invalid_request_error", "invalid_value", "documents", "document %d: %s", (int)i,
                         hearth_last_error());
            return false;
        }
        in->n_tokens[i] = (int32_t)n;
        in->n_total += (int64_t)n;
    }
    in->n = i;
    return true;
}

static cJSON *response(const char *model, const rerank_req *r, const scored *s, int64_t n_total) {
    cJSON *results = cJSON_CreateArray();
    bool ok = results != NULL;
    const int32_t n_out = r->top_n < r->n ? (int32_t)r->top_n : r->n;
    for (int32_t k = 0; ok && k < n_out; k++) {
        cJSON *o = cJSON_CreateObject();
        ok = o && cJSON_AddItemToArray(results, o);
        if (!ok) {
            cJSON_Delete(o);
            break;
        }
        ok = cJSON_AddNumberToObject(o, "index", s[k].index) &&
             cJSON_AddNumberToObject(o, r->tei ? "score" : "relevance_score", s[k].score);
        if (ok && r->return_text) {
            const char *text = cJSON_GetArrayItem(r->docs, s[k].index)->valuestring;
            cJSON *doc = r->tei ? NULL : cJSON_AddObjectToObject(o, "document");
            ok = r->tei ? cJSON_AddStringToObject(o, "text", text) != NULL
                        : doc && cJSON_AddStringToObject(doc, "text", text);
        }
    }
    if (!ok || r->tei) {
        if (!ok) cJSON_Delete(results);
        return ok ? results : NULL;
    }
    cJSON *res = cJSON_CreateObject(), *usage = res ? cJSON_AddObjectToObject(res, "usage") : NULL;
    ok = usage && cJSON_AddStringToObject(res, "model", model) && cJSON_AddStringToObject(res, "object", "list") &&
         cJSON_AddNumberToObject(usage, "prompt_tokens", (double)n_total) &&
         cJSON_AddNumberToObject(usage, "total_tokens", (double)n_total);
    if (ok && cJSON_AddItemToObject(res, "results", results)) return res;
    cJSON_Delete(results);
    cJSON_Delete(res);
    return NULL;
}

void hl_handle_rerank(hl_call *call, hl_reply *rep) {
    hl_error err = {0};
    if (hearth_engine_pooling_type(call->engine) != HEARTH_POOLING_RANK) {
        hl_error_set(&err, 400, "invalid_request_error", "model_not_reranker", "model",
                     "this model does not rerank: start hearth serve with a reranker (a cross-encoder whose file "
                     "gives pooling_type rank, such as bge-reranker)");
        hl_reply_error(rep, &err);
        return;
    }
    const hearth_model *model = hearth_engine_model(call->engine);
    const int32_t n_cls_out = hearth_model_n_cls_out(model);
    cJSON *req = hl_json_parse_object(call->body, call->len, &err);
    rerank_req r = {0};
    hl_embed_inputs in = {0};
    float *out = NULL;
    scored *s = NULL;
    if (!req || !hl_server_model_name(req, &err) || !read_request(req, &r, &err)) goto fail;
    in.tokens = calloc((size_t)r.n, sizeof *in.tokens);
    in.n_tokens = calloc((size_t)r.n, sizeof *in.n_tokens);
    in.n = r.n; /* for hl_embed_inputs_free while tokenizing */
    out = malloc((size_t)r.n * (size_t)n_cls_out * sizeof *out);
    s = malloc((size_t)r.n * sizeof *s);
    if (!in.tokens || !in.n_tokens || !out || !s) {
        hl_error_oom(&err);
        goto fail;
    }
    if (!tokenize_pairs(model, &r, &in, &err)) goto fail;
    const hearth_status st = hearth_engine_embed_batch(call->engine, in.n, (const int32_t *const *)in.tokens,
                                                       in.n_tokens, out);
    if (st != HEARTH_OK) {
        hl_embed_error(&err, st, hearth_last_error(), "documents");
        goto fail;
    }
    for (int32_t i = 0; i < r.n; i++) s[i] = (scored){i, out[(size_t)i * n_cls_out]};
    qsort(s, (size_t)r.n, sizeof *s, by_score);
    cJSON *res = response(call->model_name, &r, s, in.n_total);
    if (!res) {
        hl_error_oom(&err);
        goto fail;
    }
    hl_reply_json(rep, 200, res);
    cJSON_Delete(req);
    hl_embed_inputs_free(&in);
    free(out);
    free(s);
    return;
fail:
    cJSON_Delete(req);
    hl_embed_inputs_free(&in);
    free(out);
    free(s);
    hl_reply_error(rep, &err);
}
