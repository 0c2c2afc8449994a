/* model.embed(texts, {normalize, pooling}): pooled embeddings by the
 * library's hearth_embed on a libuv worker, with the loader's threads,
 * attention and cache types; model.rerank(query, documents): a reranker's
 * scores by its hearth_rerank, the same way. The promise resolves on the JS
 * thread with one Float32Array per text (rerank: one Float32Array of a
 * score per document), or rejects with HearthError. Disposing the model
 * meanwhile leaves it to the job (hn_model_embed_done). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addon.h"

typedef struct embed_job {
    hn_model *m; /* a reference (refs, n_embedding) */
    hearth_context_params cp;
    char **text; /* [n] UTF-8 copies */
    size_t n;
    char *query; /* rerank: a UTF-8 copy; NULL for embed */
    int32_t n_embd;
    float *out; /* [n][n_embd] */
    hearth_status st;
    char error[1024]; /* hearth_last_error() is per thread: copied on the worker */
    napi_deferred deferred;
    napi_async_work work;
} embed_job;

static void job_free(napi_env env, embed_job *j) {
    if (j->work) napi_delete_async_work(env, j->work);
    free(j->out);
    free(j->query);
    hn_strings_free(j->text, j->n);
    free(j);
}

/* On the worker: no JS values here. */
static void execute(napi_env env, void *data) {
    (void)env;
    embed_job *j = data;
    const char *const *texts = (const char *const *)j->text;
    j->st = j->query ? hearth_rerank(j->m->model, j->query, strlen(j->query), texts, NULL, j->n, &j->cp, j->out)
                     : hearth_embed(j->m->model, texts, NULL, j->n, &j->cp, j->out);
    if (j->st != HEARTH_OK) {
        const char *msg = hearth_last_error();
        snprintf(j->error, sizeof j->error, "%s", msg[0] ? msg : hearth_status_str(j->st));
    }
}

/* A Float32Array of n floats copied from src. */
static napi_value float32_array(napi_env env, const float *src, size_t n) {
    napi_value buf, typed;
    void *dst;
    if (napi_create_arraybuffer(env, n * sizeof(float), &dst, &buf) != napi_ok ||
        napi_create_typedarray(env, napi_float32_array, n, buf, 0, &typed) != napi_ok)
        return NULL;
    if (n) memcpy(dst, src, n * sizeof(float));
    return typed;
}

/* [Float32Array(n_embd) for each text] (rerank: Float32Array(n) of scores), copied from j->out. */
static napi_value vectors(napi_env env, const embed_job *j) {
    if (j->query) return float32_array(env, j->out, j->n);
    napi_value arr, typed;
    if (napi_create_array_with_length(env, j->n, &arr) != napi_ok) return NULL;
    for (size_t i = 0; i < j->n; i++)
        if (!(typed = float32_array(env, j->out + i * (size_t)j->n_embd, (size_t)j->n_embd)) ||
            napi_set_element(env, arr, (uint32_t)i, typed) != napi_ok)
            return NULL;
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
        result = hn_error_new(env, "ERR_CANCELLED",
                              j->query ? "the reranking was cancelled" : "the embedding was cancelled");
    }
    hn_model_embed_done(j->m);
    hn_model_unref(j->m);
    if (!result) napi_get_undefined(env, &result);
    if (ok) napi_resolve_deferred(env, j->deferred, result);
    else napi_reject_deferred(env, j->deferred, result);
    job_free(env, j);
}

/* Queues j on a worker; its promise, or NULL with j freed and an exception pending. */
static napi_value queue(napi_env env, embed_job *j) {
    napi_value promise, name;
    if (napi_create_string_utf8(env, j->query ? "hearth.rerank" : "hearth.embed", NAPI_AUTO_LENGTH, &name) != napi_ok ||
        napi_create_promise(env, &j->deferred, &promise) != napi_ok ||
        napi_create_async_work(env, NULL, name, execute, complete, j, &j->work) != napi_ok ||
        napi_queue_async_work(env, j->work) != napi_ok) {
        hn_napi_failed(env, j->query ? "queueing the reranking" : "queueing the embedding");
        job_free(env, j);
        return NULL;
    }
    j->m->refs++;
    j->m->n_embedding++;
    return promise;
}

/* embed(handle, texts: string[], pooling: number (-1 the model's), normalize: boolean) -> Promise<Float32Array[]>.
 * index.js checks pooling's name. */
napi_value hn_embed(napi_env env, napi_callback_info info) {
    napi_value argv[4];
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
    j->cp.pooling_type = pooling;
    j->cp.embd_normalize = normalize;
    j->n_embd = hearth_model_n_embd(m->model);
    j->out = malloc((j->n + 1) * (size_t)j->n_embd * sizeof *j->out);
    if (!j->out) {
        hn_throw(env, "ERR_OUT_OF_MEMORY", "out of memory");
        job_free(env, j);
        return NULL;
    }
    return queue(env, j);
}

/* rerank(handle, query: string, documents: string[]) -> Promise<Float32Array>. */
napi_value hn_rerank(napi_env env, napi_callback_info info) {
    napi_value argv[3];
    if (!hn_args(env, info, 3, argv)) return NULL;
    hn_model *m = hn_model_live(env, argv[0]);
    if (!m) return NULL;
    embed_job *j = calloc(1, sizeof *j);
    if (!j) {
        hn_throw(env, "ERR_OUT_OF_MEMORY", "out of memory");
        return NULL;
    }
    if (!(j->query = hn_string(env, argv[1], "query", NULL)) ||
        !hn_strings(env, argv[2], "documents", &j->text, &j->n)) {
        free(j->query);
        free(j);
        return NULL;
    }
    j->m = m;
    j->cp = m->ctx;
    j->out = malloc((j->n + 1) * sizeof *j->out);
    if (!j->out) {
        hn_throw(env, "ERR_OUT_OF_MEMORY", "out of memory");
        job_free(env, j);
        return NULL;
    }
    return queue(env, j);
}
