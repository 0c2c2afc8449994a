/* The C extension of the Python package (module hearth._hearth): a thin layer
 * over include/hearth.h on CPython's limited API (Py_LIMITED_API 3.9, one
 * abi3 wheel for every CPython >= 3.9). The Python package (hearth/) builds
 * the public API on the two types defined here: Engine (a model and its
 * hearth_engine) and Request (one submitted request's pieces). */
#ifndef HEARTH_PY_HP_H
#define HEARTH_PY_HP_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "hearth.h"

/* Raises the hearth.HearthError subclass registered for `st` (see
 * hp_set_errors) with `msg`, or with hearth_last_error() when msg is NULL.
 * Returns NULL, for `return hp_raise(...)`. */
PyObject *hp_raise(hearth_status st, const char *msg);

/* _hearth._set_errors(base, {status: class}): the exception classes of
 * hearth/errors.py, registered once at import. */
PyObject *hp_set_errors(PyObject *module, PyObject *args);

/* UTF-8 of a str that holds no NUL (C strings cross the API). *holder gets
 * the bytes object that owns the text (Py_DECREF it after use). NULL with
 * TypeError / ValueError set otherwise. */
const char *hp_utf8(PyObject *str, PyObject **holder);

/* tp_new of the types Python must not instantiate directly: TypeError. */
PyObject *hp_no_new(PyTypeObject *type, PyObject *args, PyObject *kw);

/* The types, made at module init with PyType_FromSpec. */
extern PyType_Spec hp_engine_spec;
extern PyType_Spec hp_request_spec;
extern PyObject *hp_request_type;

/* An open model, for requests and embeddings: the model pointer is NULL
 * once closed. The engine pointer is NULL too for a model that cannot
 * generate (an encoder such as bert: embeddings only). */
typedef struct hp_engine {
    PyObject_HEAD hearth_model *model;
    hearth_engine *engine;
    int32_t n_ctx_seq; /* positions each slot (request) holds */
    int32_t n_seq_max;
    hearth_context_params ctx; /* what open() was given (threads, attention, cache types), for embed() */
    int n_embedding;           /* embed() calls computing now (without the GIL) */
    bool close_pending;        /* close() ran while they did: the last one frees the model */
} hp_engine;

/* _hearth.open(path, ...) -> Engine (engine.c), and the type it makes,
 * set at module init. */
PyObject *hp_engine_open(PyObject *module, PyObject *args, PyObject *kw);
void hp_engine_set_type(PyObject *type);

/* engine.embed(texts, pooling, normalize) (embed.c): pooled embeddings
 * through an embeddings context of the library. */
PyObject *hp_engine_embed(PyObject *self, PyObject *args);
PyObject *hp_engine_rerank(PyObject *self, PyObject *args);

/* engine.submit(): queues a request and returns its Request. */
PyObject *hp_request_submit(hp_engine *engine, hearth_request_params *p);

#endif
