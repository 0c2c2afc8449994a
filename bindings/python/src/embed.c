/* Engine.embed(): pooled embeddings of texts by the library's hearth_embed,
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
    float *out; /* [n][n_embd] */
    hearth_status st;
} embed_job;

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
    if (j.n == 0) return Py_BuildValue("(y#i)", "", (Py_ssize_t)0, (int)n_embd);
    j.text = calloc(j.n, sizeof *j.text);
    j.len = calloc(j.n, sizeof *j.len);
    j.out = malloc(j.n * (size_t)n_embd * sizeof *j.out);
    PyObject *keep = PyList_GetSlice(list, 0, (Py_ssize_t)j.n), *result = NULL; /* the bytes stay alive */
    bool ok = keep && j.text && j.len && j.out;
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
        Py_BEGIN_ALLOW_THREADS j.st = hearth_embed(j.model, j.text, j.len, j.n, &j.cp, j.out);
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
                                   : hp_raise(j.st, NULL);
    }
    free(j.out);
    free(j.text);
    free(j.len);
    Py_XDECREF(keep);
    return result;
}
