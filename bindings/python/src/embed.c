/* Engine.embed() and Engine.rerank(): pooled embeddings of texts by the
 * library's hearth_embed, a reranker's scores by its hearth_rerank,
 * with the threads, attention and cache types open() was given. The GIL is
 * released while it computes; close() meanwhile leaves the model to the
 * last such call. */
#include <stdlib.h>
#include <string.h>

#include "hp.h"

typedef struct embed_job {
    hearth_model *model;
    hearth_context_params cp;
    size_t n;
    const char **text; /* [n] UTF-8, lens[i] bytes (owned by the Python bytes objects) */
    size_t *len;
    const char *query; /* rerank: the query, query_len bytes */
    size_t query_len;
    float *out; /* [n][n_embd], or [n] scores */
    hearth_status st;
} embed_job;

/* The list's bytes into j->text / j->len (j->n of them); a new reference
 * to a slice of the list that keeps them alive, or NULL with an error. */
static PyObject *job_texts(PyObject *list, embed_job *j, size_t n_out) {
    j->text = calloc(j->n ? j->n : 1, sizeof *j->text);
    j->len = calloc(j->n ? j->n : 1, sizeof *j->len);
    j->out = malloc((j->n ? j->n : 1) * n_out * sizeof *j->out);
    PyObject *keep = PyList_GetSlice(list, 0, (Py_ssize_t)j->n);
    if (!keep) return NULL;
    if (!j->text || !j->len || !j->out) {
        Py_DECREF(keep);
        return PyErr_NoMemory();
    }
    for (size_t i = 0; i < j->n; i++) {
        char *text;
        Py_ssize_t len;
        PyObject *item = PyList_GetItem(keep, (Py_ssize_t)i); /* borrowed */
        if (!item || PyBytes_AsStringAndSize(item, &text, &len) != 0) {
            Py_DECREF(keep);
            return NULL;
        }
        j->text[i] = text, j->len[i] = (size_t)len;
    }
    return keep;
}

/* Runs the job without the GIL (rerank when j->query is set); a close()
 * that came meanwhile frees the model after the last such call. */
static void run_job(hp_engine *e, embed_job *j) {
    e->n_embedding++;
    Py_INCREF(e);
    Py_BEGIN_ALLOW_THREADS j->st = j->query ? hearth_rerank(j->model, j->query, j->query_len, j->text, j->len, j->n,
                                                            &j->cp, j->out)
                                            : hearth_embed(j->model, j->text, j->len, j->n, &j->cp, j->out);
    Py_END_ALLOW_THREADS e->n_embedding--;
    if (e->close_pending && e->n_embedding == 0) { /* close() ran meanwhile: free the model now */
        hearth_model *model = e->model;
        e->model = NULL;
        e->close_pending = false;
        Py_BEGIN_ALLOW_THREADS hearth_model_free(model);
        Py_END_ALLOW_THREADS
    }
    Py_DECREF(e);
}

static void job_free(embed_job *j) {
    free(j->out);
    free(j->text);
    free(j->len);
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
    j.cp.pooling_type = pooling;
    j.cp.embd_normalize = normalize;
    const int32_t n_embd = hearth_model_n_embd(e->model);
    PyObject *keep = job_texts(list, &j, (size_t)n_embd), *result = NULL;
    if (keep) {
        run_job(e, &j);
        result = j.st == HEARTH_OK ? Py_BuildValue("(y#i)", (const char *)j.out,
                                                   (Py_ssize_t)(j.n * (size_t)n_embd * sizeof *j.out), (int)n_embd)
                                   : hp_raise(j.st, NULL);
    }
    job_free(&j);
    Py_XDECREF(keep);
    return result;
}

/* rerank(query: bytes, documents: list[bytes]) -> bytes: one native float32
 * score per document, in order (hearth_rerank). */
PyObject *hp_engine_rerank(PyObject *self, PyObject *args) {
    hp_engine *e = (hp_engine *)self;
    PyObject *list;
    const char *query;
    Py_ssize_t query_len;
    if (!PyArg_ParseTuple(args, "y#O!", &query, &query_len, &PyList_Type, &list)) return NULL;
    if (!e->model || e->close_pending) return hp_raise(HEARTH_ERR_INVALID_ARG, "the model is closed");
    embed_job j = {.model = e->model,
                   .cp = e->ctx,
                   .n = (size_t)PyList_Size(list),
                   .query = query,
                   .query_len = (size_t)query_len};
    PyObject *keep = job_texts(list, &j, 1), *result = NULL;
    if (keep) {
        run_job(e, &j);
        result = j.st == HEARTH_OK ? PyBytes_FromStringAndSize((const char *)j.out, (Py_ssize_t)(j.n * sizeof *j.out))
                                   : hp_raise(j.st, NULL);
    }
    job_free(&j);
    Py_XDECREF(keep);
    return result;
}
