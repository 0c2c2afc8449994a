/* model.embed(texts, {normalize, pooling}): pooled embeddings through an
 * embeddings context of the library (hearth_context_params.embeddings),
 * made for the call on a libuv worker with the loader's threads, attention
 * and cache types. Texts are tokenized with special tokens; several go into
 * one batch as separate sequences; the library pools and normalises. The
 * promise resolves on the JS thread with one Float32Array per text, or
 * rejects with HearthError. Disposing the model meanwhile leaves it to the
 * job (hn_model_embed_done). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addon.h"

#define BATCH_TOKENS 2048 /* KV cells of the context, at most (a longer text gets a batch of its own) */
#define BATCH_SEQS 64     /* texts of one batch, at most */

typedef struct embed_job {
    hn_model *m; /* a reference (refs, n_embedding) */
    hearth_context_params cp;
    char **text; /* [n] UTF-8 copies */
    size_t n;
    int32_t **tokens; /* [n] */
    size_t *n_tokens;
    int32_t n_embd;
    float *out; /* [n][n_embd] */
    hearth_status st;
    char error[1024]; /* hearth_last_error() is per thread: copied on the worker */
    napi_deferred deferred;
    napi_async_work work;
} embed_job;

static void job_free(napi_env env, embed_job *j) {
    if (j->work) napi_delete_async_work(env, j->work);
    for (size_t i = 0; j->tokens && i < j->n; i++) free(j->tokens[i]);
    free(j->tokens);
    free(j->n_tokens);
    free(j->out);
    hn_strings_free(j->text, j->n);
    free(j);
}

static hearth_status fail(embed_job *j, hearth_status st, const char *msg) {
    snprintf(j->error, sizeof j->error, "%s", msg);
    return j->st = st;
}

static size_t batch_end(const embed_job *j, size_t first, size_t longest, size_t *n_tok) {
    /* texts per batch: as many as BATCH_TOKENS tokens of the longest text make, so that the context's
     * KV cache (n_seq_max sequences of the longest text) stays within max(BATCH_TOKENS, longest) cells */
    size_t per = longest >= BATCH_TOKENS ? 1 : BATCH_TOKENS / longest, end = first, tok = 0;
    if (per > BATCH_SEQS) per = BATCH_SEQS;
    while (end < j->n && end - first < per) tok += j->n_tokens[end++];
    *n_tok = tok;
    return end;
}

static hearth_status embed_run(embed_job *j) {
    hearth_model *model = j->m->model;
    if (j->n == 0) return HEARTH_OK;
    const int32_t n_ctx_train = hearth_model_n_ctx_train(model);
    size_t longest = 0;
    for (size_t i = 0; i < j->n; i++) {
        const size_t len = strlen(j->text[i]);
        size_t n_max = len + 8;
        hearth_status st = HEARTH_ERR_BUFFER_TOO_SMALL;
        for (int tries = 0; st == HEARTH_ERR_BUFFER_TOO_SMALL && tries < 2; tries++) {
            free(j->tokens[i]);
            if (!(j->tokens[i] = malloc(n_max * sizeof **j->tokens)))
                return fail(j, HEARTH_ERR_OUT_OF_MEMORY, "out of memory");
            st = hearth_tokenize(model, j->text[i], len, true, true, j->tokens[i], n_max, &j->n_tokens[i]);
            n_max = j->n_tokens[i];
        }
        if (st != HEARTH_OK) return j->st = st;
        char msg[200];
        if (j->n_tokens[i] == 0) {
            snprintf(msg, sizeof msg, "text %zu is empty: it gives no token to embed", i);
            return fail(j, HEARTH_ERR_INVALID_ARG, msg);
        }
        if (n_ctx_train > 0 && j->n_tokens[i] > (size_t)n_ctx_train) {
            snprintf(msg, sizeof msg, "text %zu is %zu tokens, longer than the model's context of %d tokens", i,
                     j->n_tokens[i], (int)n_ctx_train);
            return fail(j, HEARTH_ERR_CONTEXT_FULL, msg);
        }
        if (j->n_tokens[i] > longest) longest = j->n_tokens[i];
    }
    size_t max_seqs = 0, max_tok = 0;
    for (size_t first = 0, end, tok; first < j->n; first = end) {
        end = batch_end(j, first, longest, &tok);
        if (end - first > max_seqs) max_seqs = end - first;
        if (tok > max_tok) max_tok = tok;
    }
    /* one context for every batch: n_seq_max the largest batch's texts, each
     * sequence holding the longest text, a batch in one pass */
    j->cp.n_seq_max = (uint32_t)max_seqs;
    j->cp.n_ctx = (uint32_t)(longest * max_seqs);
    j->cp.n_batch = j->cp.n_ubatch = (uint32_t)max_tok;
    hearth_context *ctx = NULL;
    if ((j->st = hearth_context_init(model, &j->cp, &ctx)) != HEARTH_OK) return j->st;
    int32_t *token = malloc(max_tok * sizeof *token), *seq = malloc(max_tok * sizeof *seq);
    if (!token || !seq) fail(j, HEARTH_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t first = 0, end, tok; j->st == HEARTH_OK && first < j->n; first = end) {
        end = batch_end(j, first, longest, &tok);
        size_t k = 0;
        for (size_t i = first; i < end; i++)
            for (size_t t = 0; t < j->n_tokens[i]; t++, k++) {
                token[k] = j->tokens[i][t];
                seq[k] = (int32_t)(i - first);
            }
        hearth_kv_seq_rm(ctx, -1, 0, -1); /* each batch's texts start their sequences afresh */
        const hearth_batch b = {.n_tokens = (int32_t)k, .token = token, .seq_id = seq};
        if ((j->st = hearth_decode_batch(ctx, &b)) != HEARTH_OK) break;
        for (size_t i = first; i < end; i++) {
            const float *v = hearth_get_embeddings_seq(ctx, (int32_t)(i - first));
            if (!v) {
                fail(j, HEARTH_ERR_INVALID_ARG, "the context gave no pooled vector");
                break;
            }
            memcpy(j->out + i * (size_t)j->n_embd, v, (size_t)j->n_embd * sizeof *v);
        }
    }
    free(token);
    free(seq);
    hearth_context_free(ctx);
    return j->st;
}

/* On the worker: no JS values here. */
static void execute(napi_env env, void *data) {
    (void)env;
    embed_job *j = data;
    if (embed_run(j) != HEARTH_OK && !j->error[0]) {
        const char *msg = hearth_last_error();
        snprintf(j->error, sizeof j->error, "%s", msg[0] ? msg : hearth_status_str(j->st));
    }
}

/* [Float32Array(n_embd) for each text], copied from j->out. */
static napi_value vectors(napi_env env, const embed_job *j) {
    napi_value arr, buf, typed;
    if (napi_create_array_with_length(env, j->n, &arr) != napi_ok) return NULL;
    const size_t bytes = (size_t)j->n_embd * sizeof(float);
    for (size_t i = 0; i < j->n; i++) {
        void *dst;
        if (napi_create_arraybuffer(env, bytes, &dst, &buf) != napi_ok ||
            napi_create_typedarray(env, napi_float32_array, (size_t)j->n_embd, buf, 0, &typed) != napi_ok ||
            napi_set_element(env, arr, (uint32_t)i, typed) != napi_ok)
            return NULL;
        memcpy(dst, j->out + i * (size_t)j->n_embd, bytes);
    }
    return arr;
}

/* Back on the JS thread. */
static void complete(napi_env env, napi_status status, void *data) {
    embed_job *j = data;
    napi_value result = NULL;
    bool ok = false;
    if (status == napi_ok && j->st == HEARTH_OK) {
        ok = (result = vectors(env, j)) != NULL;
        if (!ok) napi_get_and_clear_last_exception(env, &result);
    } else if (status == napi_ok) {
        result = hn_error_new(env, hn_status_code(j->st), j->error);
    } else {
        result = hn_error_new(env, "ERR_CANCELLED", "the embedding was cancelled");
    }
    hn_model_embed_done(j->m);
    hn_model_unref(j->m);
    if (!result) napi_get_undefined(env, &result);
    if (ok) napi_resolve_deferred(env, j->deferred, result);
    else napi_reject_deferred(env, j->deferred, result);
    job_free(env, j);
}

/* embed(handle, texts: string[], pooling: number (-1 the model's), normalize: boolean) -> Promise<Float32Array[]>.
 * index.js checks pooling's name. */
napi_value hn_embed(napi_env env, napi_callback_info info) {
    napi_value argv[4], promise, name;
    if (!hn_args(env, info, 4, argv)) return NULL;
    hn_model *m = hn_model_live(env, argv[0]);
    int32_t pooling = HEARTH_POOLING_UNSPECIFIED;
    bool normalize = true;
    if (!m || napi_get_value_int32(env, argv[2], &pooling) != napi_ok ||
        napi_get_value_bool(env, argv[3], &normalize) != napi_ok) {
        if (m) hn_throw(env, "ERR_INVALID_ARG", "embed(handle, texts, pooling, normalize): bad arguments");
        return NULL;
    }
    const int32_t resolved = pooling != HEARTH_POOLING_UNSPECIFIED ? pooling : hearth_model_pooling_type(m->model);
    if (resolved == HEARTH_POOLING_NONE) {
        hn_throw(env, "ERR_INVALID_ARG", "%s",
                 pooling == HEARTH_POOLING_NONE
                     ? "pooling 'none' gives no vector per text: use 'mean', 'cls' or 'last'"
                     : "the model has no pooling of its own (pooling_type none; a generation model?): give "
                       "pooling 'last' or 'mean'");
        return NULL;
    }
    embed_job *j = calloc(1, sizeof *j);
    if (!j) {
        hn_throw(env, "ERR_OUT_OF_MEMORY", "out of memory");
        return NULL;
    }
    if (!hn_strings(env, argv[1], "texts", &j->text, &j->n)) {
        free(j);
        return NULL;
    }
    j->m = m;
    j->cp = m->ctx;
    j->cp.embeddings = true;
    j->cp.pooling_type = pooling;
    j->cp.embd_normalize = normalize;
    j->n_embd = hearth_model_n_embd(m->model);
    j->tokens = calloc(j->n + 1, sizeof *j->tokens);
    j->n_tokens = calloc(j->n + 1, sizeof *j->n_tokens);
    j->out = malloc((j->n + 1) * (size_t)j->n_embd * sizeof *j->out);
    if (!j->tokens || !j->n_tokens || !j->out) {
        hn_throw(env, "ERR_OUT_OF_MEMORY", "out of memory");
        job_free(env, j);
        return NULL;
    }
    if (napi_create_string_utf8(env, "hearth.embed", NAPI_AUTO_LENGTH, &name) != napi_ok ||
        napi_create_promise(env, &j->deferred, &promise) != napi_ok ||
        napi_create_async_work(env, NULL, name, execute, complete, j, &j->work) != napi_ok ||
        napi_queue_async_work(env, j->work) != napi_ok) {
        hn_napi_failed(env, "queueing the embedding");
        job_free(env, j);
        return NULL;
    }
    m->refs++;
    m->n_embedding++;
    return promise;
}
