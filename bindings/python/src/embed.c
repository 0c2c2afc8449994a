/* Engine.embed(): pooled embeddings of texts through an embeddings context
 * of the library (hearth_context_params.embeddings), made for the call
 * with the threads, attention and cache types open() was given. Texts are
 * tokenized with special tokens; several go into one batch as separate
 * sequences; the library pools and normalises. The GIL is released while
 * it computes; close() meanwhile leaves the model to the last such call. */
#include <stdlib.h>
#include <string.h>

#include "hp.h"

#define BATCH_TOKENS 2048 /* KV cells of the context, at most (a longer text gets a batch of its own) */
#define BATCH_SEQS 64     /* texts of one batch, at most */

typedef struct embed_job {
    const hearth_model *model;
    hearth_context_params cp;
    size_t n;
    const char **text; /* [n] UTF-8, lens[i] bytes (owned by the Python bytes objects) */
    size_t *len;
    int32_t **tokens; /* [n] */
    size_t *n_tokens;
    float *out; /* [n][n_embd] */
    hearth_status st;
    char msg[256]; /* the error of a check of ours (else hearth_last_error()) */
} embed_job;

static hearth_status fail(embed_job *j, hearth_status st, const char *msg) {
    snprintf(j->msg, sizeof j->msg, "%s", msg);
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

/* Runs without the GIL. */
static hearth_status embed_run(embed_job *j) {
    const int32_t n_ctx_train = hearth_model_n_ctx_train(j->model), n_embd = hearth_model_n_embd(j->model);
    size_t longest = 0;
    for (size_t i = 0; i < j->n; i++) {
        size_t n_max = j->len[i] + 8;
        hearth_status st = HEARTH_ERR_BUFFER_TOO_SMALL;
        for (int tries = 0; st == HEARTH_ERR_BUFFER_TOO_SMALL && tries < 2; tries++) {
            free(j->tokens[i]);
            if (!(j->tokens[i] = malloc(n_max * sizeof **j->tokens))) return j->st = HEARTH_ERR_OUT_OF_MEMORY;
            st = hearth_tokenize(j->model, j->text[i], j->len[i], true, true, j->tokens[i], n_max, &j->n_tokens[i]);
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
    if ((j->st = hearth_context_init((hearth_model *)j->model, &j->cp, &ctx)) != HEARTH_OK) return j->st;
    int32_t *token = malloc(max_tok * sizeof *token), *seq = malloc(max_tok * sizeof *seq);
    if (!token || !seq) j->st = HEARTH_ERR_OUT_OF_MEMORY;
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
            memcpy(j->out + i * (size_t)n_embd, v, (size_t)n_embd * sizeof *v);
        }
    }
    free(token);
    free(seq);
    hearth_context_free(ctx);
    return j->st;
}

/* embed(texts: list[bytes], pooling: int, normalize: bool) -> (bytes, n_embd):
 * the vectors as native float32, text after text. pooling: a
 * hearth_pooling_type (-1 the model's); hearth/_model.py checks it. */
PyObject *hp_engine_embed(PyObject *self, PyObject *args) {
    hp_engine *e = (hp_engine *)self;
    PyObject *list;
    int pooling, normalize;
    if (!PyArg_ParseTuple(args, "O!ip", &PyList_Type, &list, &pooling, &normalize)) return NULL;
    if (!e->model || e->close_pending) return hp_raise(HEARTH_ERR_INVALID_ARG, "the model is closed");
    const int32_t resolved = pooling != HEARTH_POOLING_UNSPECIFIED ? pooling : hearth_model_pooling_type(e->model);
    if (resolved == HEARTH_POOLING_NONE)
        return hp_raise(HEARTH_ERR_INVALID_ARG,
                        pooling == HEARTH_POOLING_NONE
                            ? "pooling 'none' gives no vector per text: use 'mean', 'cls' or 'last'"
                            : "the model has no pooling of its own (pooling_type none; a generation model?): "
                              "give pooling='last' or 'mean'");
    embed_job j = {.model = e->model, .cp = e->ctx, .n = (size_t)PyList_Size(list)};
    j.cp.embeddings = true;
    j.cp.pooling_type = pooling;
    j.cp.embd_normalize = normalize;
    const int32_t n_embd = hearth_model_n_embd(e->model);
    if (j.n == 0) return Py_BuildValue("(y#i)", "", (Py_ssize_t)0, (int)n_embd);
    j.text = calloc(j.n, sizeof *j.text);
    j.len = calloc(j.n, sizeof *j.len);
    j.tokens = calloc(j.n, sizeof *j.tokens);
    j.n_tokens = calloc(j.n, sizeof *j.n_tokens);
    j.out = malloc(j.n * (size_t)n_embd * sizeof *j.out);
    PyObject *keep = PyList_GetSlice(list, 0, (Py_ssize_t)j.n), *result = NULL; /* the bytes stay alive */
    bool ok = keep && j.text && j.len && j.tokens && j.n_tokens && j.out;
    if (!ok && keep) PyErr_NoMemory();
    for (size_t i = 0; ok && i < j.n; i++) {
        char *text;
        Py_ssize_t len;
        PyObject *item = PyList_GetItem(keep, (Py_ssize_t)i); /* borrowed */
        ok = item && PyBytes_AsStringAndSize(item, &text, &len) == 0;
        if (ok) j.text[i] = text, j.len[i] = (size_t)len;
    }
    if (ok) {
        e->n_embedding++;
        Py_INCREF(e);
        Py_BEGIN_ALLOW_THREADS embed_run(&j);
        Py_END_ALLOW_THREADS e->n_embedding--;
        if (e->close_pending && e->n_embedding == 0) { /* close() ran meanwhile: free the model now */
            hearth_model *model = e->model;
            e->model = NULL;
            e->close_pending = false;
            Py_BEGIN_ALLOW_THREADS hearth_model_free(model);
            Py_END_ALLOW_THREADS
        }
        Py_DECREF(e);
        result = j.st == HEARTH_OK ? Py_BuildValue("(y#i)", (const char *)j.out,
                                                   (Py_ssize_t)(j.n * (size_t)n_embd * sizeof *j.out), (int)n_embd)
                                   : hp_raise(j.st, j.msg[0] ? j.msg : NULL);
    }
    for (size_t i = 0; j.tokens && i < j.n; i++) free(j.tokens[i]);
    free(j.tokens);
    free(j.n_tokens);
    free(j.out);
    free(j.text);
    free(j.len);
    Py_XDECREF(keep);
    return result;
}
