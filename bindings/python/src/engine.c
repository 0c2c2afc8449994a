/* Engine: a loaded model and the hearth_engine that runs every request on it.
 * Loading and closing release the GIL; requests never hold it while the
 * engine computes (see request.c). Every method raises hearth.ClosedError
 * once close() has run. */
#include <stdlib.h>
#include <string.h>

#include "hp.h"

PyObject *hp_no_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    (void)type, (void)args, (void)kw;
    PyErr_SetString(PyExc_TypeError, "hearth._hearth objects are made by _hearth.open() and Engine.submit()");
    return NULL;
}

static PyObject *engine_type;

static bool open_or_raise(hp_engine *e) {
    if (e->model && !e->close_pending) return true;
    hp_raise(HEARTH_ERR_INVALID_ARG, "the model is closed");
    return false;
}

/* Reads the floats of a sequence into a zeroed array of at least n_min
 * entries (the C API reads one per GPU). */
static float *float_list(PyObject *seq, Py_ssize_t n_min) {
    PyObject *fast = PySequence_Fast(seq, "tensor_split must be a sequence of numbers");
    if (!fast) return NULL;
    const Py_ssize_t n = PySequence_Size(fast);
    float *out = calloc((size_t)(n > n_min ? n : n_min) + 1, sizeof *out);
    if (!out) {
        Py_DECREF(fast);
        return (float *)PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_GetItem(fast, i);
        const double v = item ? PyFloat_AsDouble(item) : -1.0;
        Py_XDECREF(item);
        if (v == -1.0 && PyErr_Occurred()) {
            free(out);
            Py_DECREF(fast);
            return NULL;
        }
        out[i] = (float)v;
    }
    Py_DECREF(fast);
    return out;
}

/* A progress report for the Python callable `user` (hearth_progress_fn,
 * called on the loading thread with the GIL released): the callable gets a
 * dict of the report's fields; returning False, or raising, cancels (the
 * exception stays set on this thread and open() raises it). */
static bool progress_to_python(const hearth_progress *p, void *user) {
    PyGILState_STATE gil = PyGILState_Ensure();
    bool go_on = false;
    PyObject *report = PyErr_Occurred()
                           ? NULL /* an earlier report raised */
                           : Py_BuildValue("{s:s,s:K,s:K,s:d,s:d,s:d,s:O}", "what", p->what, "done",
                                           (unsigned long long)p->done, "total", (unsigned long long)p->total, "rate",
                                           p->rate, "eta", p->eta, "elapsed", p->elapsed, "finished",
                                           p->finished ? Py_True : Py_False);
    PyObject *answer = report ? PyObject_CallFunctionObjArgs((PyObject *)user, report, NULL) : NULL;
    if (answer) go_on = answer != Py_False;
    Py_XDECREF(answer);
    Py_XDECREF(report);
    PyGILState_Release(gil);
    return go_on;
}

/* _hearth.open(path, n_gpu_layers, main_gpu, tensor_split, use_mmap,
 * use_mlock, n_ctx, n_batch, n_threads, n_seq_max, chat_template,
 * flash_attn, devices, progress, n_ubatch, rope_scaling_type,
 * rope_freq_base, rope_freq_scale, yarn_ext_factor, yarn_attn_factor,
 * yarn_beta_fast, yarn_beta_slow, yarn_orig_ctx, context_shift, n_keep,
 * type_k, type_v) -> Engine. n_ctx is per sequence (each request's context); 0 for the
 * engine's default. hearth/_model.py checks the values' types and ranges. */
PyObject *hp_engine_open(PyObject *module, PyObject *args, PyObject *kw) {
    (void)module;
    static char *names[] = {"path",           "n_gpu_layers",    "main_gpu",        "tensor_split",
                            "use_mmap",       "use_mlock",       "n_ctx",           "n_batch",
                            "n_threads",      "n_seq_max",       "chat_template",   "flash_attn",
                            "devices",        "progress",        "n_ubatch",        "rope_scaling_type",
                            "rope_freq_base", "rope_freq_scale", "yarn_ext_factor", "yarn_attn_factor",
                            "yarn_beta_fast", "yarn_beta_slow",  "yarn_orig_ctx",   "context_shift",
                            "n_keep",         "type_k",          "type_v",          NULL};
    PyObject *path_obj, *split = Py_None, *progress = Py_None;
    hearth_model_params mp = hearth_model_default_params();
    hearth_engine_params ep = hearth_engine_default_params();
    hearth_context_params *cp = &ep.ctx;
    unsigned int n_ctx = 0;
    int use_mmap = 1, use_mlock = 0, context_shift = ep.context_shift;
    const char *tmpl = NULL;
    if (!PyArg_ParseTupleAndKeywords(
            args, kw, "O&|iiOppIIiIzizOIiffffffIpiii", names, PyUnicode_FSConverter, &path_obj, &mp.n_gpu_layers,
            &mp.main_gpu, &split, &use_mmap, &use_mlock, &n_ctx, &cp->n_batch, &cp->n_threads, &cp->n_seq_max, &tmpl,
            &cp->flash_attn, &mp.devices, &progress, &cp->n_ubatch, &cp->rope_scaling_type, &cp->rope_freq_base,
            &cp->rope_freq_scale, &cp->yarn_ext_factor, &cp->yarn_attn_factor, &cp->yarn_beta_fast, &cp->yarn_beta_slow,
            &cp->yarn_orig_ctx, &context_shift, &ep.n_keep, &cp->type_k, &cp->type_v))
        return NULL;
    ep.context_shift = context_shift;
    hearth_fetch_params fp = hearth_fetch_default_params();
    if (progress != Py_None) {
        fp.progress = mp.progress = progress_to_python;
        fp.progress_user = mp.progress_user = progress;
    }
    mp.use_mmap = use_mmap;
    mp.use_mlock = use_mlock;
    ep.chat_template = tmpl;
    if (ep.ctx.n_seq_max == 0 || n_ctx > UINT32_MAX / ep.ctx.n_seq_max) {
        Py_DECREF(path_obj);
        return hp_raise(HEARTH_ERR_INVALID_ARG, "n_seq_max must be at least 1 and n_ctx * n_seq_max below 2^32");
    }
    ep.ctx.n_ctx = n_ctx * ep.ctx.n_seq_max;
    mp.fit_n_ctx = ep.ctx.n_ctx; /* n_gpu_layers auto: room for every sequence's context */
    mp.fit_type_k = ep.ctx.type_k, mp.fit_type_v = ep.ctx.type_v;
    float *ts = NULL;
    if (split != Py_None && !(ts = float_list(split, hearth_gpu_device_count()))) {
        Py_DECREF(path_obj);
        return NULL;
    }
    mp.tensor_split = ts;

    const char *path = PyBytes_AsString(path_obj);
    hearth_model *model = NULL;
    hearth_engine *engine = NULL;
    hearth_status st;
    Py_BEGIN_ALLOW_THREADS
        /* a model name ("llama3.2:1b", hf.co/..., ollama:...) becomes a local
     * file, downloaded into the store first when it is not there */
        char *file = NULL;
    st = hearth_model_resolve(path, &fp, &file);
    if (st == HEARTH_OK) st = hearth_model_load(file, &mp, &model);
    hearth_free(file);
    /* an encoder (bert) cannot generate: no engine, embed() only */
    if (st == HEARTH_OK && hearth_model_can_generate(model) &&
        (st = hearth_engine_init(model, &ep, &engine)) != HEARTH_OK) {
        hearth_model_free(model);
        model = NULL;
    }
    Py_END_ALLOW_THREADS free(ts);
    Py_DECREF(path_obj);
    if (st == HEARTH_ERR_CANCELLED && PyErr_Occurred()) return NULL; /* the progress callable raised */
    if (st != HEARTH_OK) return hp_raise(st, NULL);

    hp_engine *e = PyObject_New(hp_engine, (PyTypeObject *)engine_type);
    if (!e) {
        hearth_engine_free(engine);
        hearth_model_free(model);
        return NULL;
    }
    e->model = model;
    e->engine = engine;
    e->ctx = ep.ctx;
    e->n_embedding = 0;
    e->close_pending = false;
    hearth_slot_info slot;
    size_t n_slots = 0;
    if (engine) {
        hearth_engine_slots(engine, &slot, 1, &n_slots);
        e->n_ctx_seq = (int32_t)slot.n_ctx;
        e->n_seq_max = (int32_t)n_slots;
    } else {
        e->n_ctx_seq = n_ctx ? (int32_t)n_ctx : hearth_model_n_ctx_train(model);
        e->n_seq_max = (int32_t)ep.ctx.n_seq_max;
    }
    return (PyObject *)e;
}

/* Frees the engine (its requests end, finish "cancelled") and the model;
 * while embed() calls still compute on the model, the last of them frees
 * it (hp_engine_embed_done). */
static void engine_close_now(hp_engine *e) {
    hearth_engine *engine = e->engine;
    hearth_model *model = e->model;
    e->engine = NULL;
    if (!model) return;
    if (e->n_embedding > 0) {
        e->close_pending = true;
        model = NULL;
    } else {
        e->model = NULL;
    }
    Py_BEGIN_ALLOW_THREADS hearth_engine_free(engine);
    hearth_model_free(model);
    Py_END_ALLOW_THREADS
}

static PyObject *engine_close(PyObject *self, PyObject *unused) {
    (void)unused;
    engine_close_now((hp_engine *)self);
    Py_RETURN_NONE;
}

static void engine_dealloc(PyObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    engine_close_now((hp_engine *)self);
    freefunc tp_free = (freefunc)PyType_GetSlot(type, Py_tp_free);
    tp_free(self);
    Py_DECREF(type);
}

static PyObject *engine_info(PyObject *self, PyObject *unused) {
    (void)unused;
    hp_engine *e = (hp_engine *)self;
    if (!open_or_raise(e)) return NULL;
    const hearth_model *m = e->model;
    return Py_BuildValue("{s:i,s:i,s:i,s:i,s:i,s:K,s:K,s:s,s:i,s:i}", "n_layer", hearth_model_n_layer(m), "n_ctx_train",
                         hearth_model_n_ctx_train(m), "n_embd", hearth_model_n_embd(m), "n_vocab",
                         hearth_model_n_vocab(m), "gpu_layers", hearth_model_n_gpu_layers(m), "n_params",
                         (unsigned long long)hearth_model_n_params(m), "size", (unsigned long long)hearth_model_size(m),
                         "desc", hearth_model_desc(m), "n_ctx", e->n_ctx_seq, "n_seq_max", e->n_seq_max);
}

/* stats() -> the engine's counters (hearth_engine_stats without the
 * histograms): requests and tokens so far, seconds, KV cells in use. */
static PyObject *engine_stats(PyObject *self, PyObject *unused) {
    (void)unused;
    hp_engine *e = (hp_engine *)self;
    if (!open_or_raise(e)) return NULL;
    hearth_engine_stats st;
    memset(&st, 0, sizeof st);
    if (e->engine) hearth_engine_stats_get(e->engine, &st);
    return Py_BuildValue("{s:i,s:i,s:i,s:K,s:K,s:K,s:K,s:d,s:d,s:I,s:I}", "n_slots", st.n_slots, "n_running",
                         st.n_running, "n_waiting", st.n_waiting, "n_requests", (unsigned long long)st.n_requests,
                         "n_prompt_tokens", (unsigned long long)st.n_prompt_tokens, "n_cached_tokens",
                         (unsigned long long)st.n_cached_tokens, "n_generated_tokens",
                         (unsigned long long)st.n_generated_tokens, "prompt_seconds", st.prompt_seconds,
                         "generation_seconds", st.generation_seconds, "kv_used", st.kv_used, "kv_size", st.kv_size);
}

/* A metadata string by index, through a buffer grown to the length needed. */
typedef hearth_status (*meta_fn)(const hearth_model *, int32_t, char *, size_t, size_t *);

static PyObject *meta_text(const hearth_model *m, int32_t i, meta_fn fn) {
    char small[256];
    size_t len = 0;
    hearth_status st = fn(m, i, small, sizeof small, &len);
    if (st == HEARTH_OK) return PyUnicode_DecodeUTF8(small, (Py_ssize_t)len, "replace");
    if (st != HEARTH_ERR_BUFFER_TOO_SMALL) return hp_raise(st, NULL);
    char *big = malloc(len + 1);
    if (!big) return PyErr_NoMemory();
    st = fn(m, i, big, len + 1, &len);
    PyObject *out = st == HEARTH_OK ? PyUnicode_DecodeUTF8(big, (Py_ssize_t)len, "replace") : hp_raise(st, NULL);
    free(big);
    return out;
}

static PyObject *engine_metadata(PyObject *self, PyObject *unused) {
    (void)unused;
    hp_engine *e = (hp_engine *)self;
    if (!open_or_raise(e)) return NULL;
    PyObject *d = PyDict_New();
    for (int32_t i = 0; d && i < hearth_model_meta_count(e->model); i++) {
        PyObject *k = meta_text(e->model, i, hearth_model_meta_key_by_index);
        PyObject *v = k ? meta_text(e->model, i, hearth_model_meta_val_str_by_index) : NULL;
        if (!v || PyDict_SetItem(d, k, v) < 0) Py_CLEAR(d);
        Py_XDECREF(k);
        Py_XDECREF(v);
    }
    return d;
}

static PyObject *engine_chat_template(PyObject *self, PyObject *unused) {
    (void)unused;
    hp_engine *e = (hp_engine *)self;
    if (!open_or_raise(e)) return NULL;
    char *tmpl = NULL;
    const hearth_status st = hearth_model_chat_template(e->model, &tmpl);
    if (st != HEARTH_OK) return hp_raise(st, NULL);
    if (!tmpl) Py_RETURN_NONE;
    PyObject *out = PyUnicode_DecodeUTF8(tmpl, (Py_ssize_t)strlen(tmpl), "replace");
    hearth_chat_free(tmpl);
    return out;
}

static PyObject *int_list(const int32_t *v, size_t n) {
    PyObject *out = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; out && i < n; i++) {
        PyObject *x = PyLong_FromLong(v[i]);
        if (!x) Py_CLEAR(out);
        else PyList_SetItem(out, (Py_ssize_t)i, x);
    }
    return out;
}

/* tokenize(text: bytes, add_special: bool, parse_special: bool) -> list[int] */
static PyObject *engine_tokenize(PyObject *self, PyObject *args) {
    hp_engine *e = (hp_engine *)self;
    const char *text;
    Py_ssize_t len;
    int add_special, parse_special;
    if (!PyArg_ParseTuple(args, "y#pp", &text, &len, &add_special, &parse_special) || !open_or_raise(e)) return NULL;
    size_t n = 0;
    hearth_status st = hearth_tokenize(e->model, text, (size_t)len, add_special, parse_special, NULL, 0, &n);
    if (st != HEARTH_OK && st != HEARTH_ERR_BUFFER_TOO_SMALL) return hp_raise(st, NULL);
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids) return PyErr_NoMemory();
    st = n ? hearth_tokenize(e->model, text, (size_t)len, add_special, parse_special, ids, n, &n) : HEARTH_OK;
    PyObject *out = st == HEARTH_OK ? int_list(ids, n) : hp_raise(st, NULL);
    free(ids);
    return out;
}

/* Reads a sequence of token ids into a malloc'd array (*n entries). */
static int32_t *token_array(PyObject *seq, size_t *n) {
    PyObject *fast = PySequence_Fast(seq, "tokens must be a sequence of ints");
    if (!fast) return NULL;
    *n = (size_t)PySequence_Size(fast);
    int32_t *ids = malloc((*n ? *n : 1) * sizeof *ids);
    if (!ids) {
        Py_DECREF(fast);
        return (int32_t *)PyErr_NoMemory();
    }
    for (size_t i = 0; i < *n; i++) {
        PyObject *item = PySequence_GetItem(fast, (Py_ssize_t)i);
        const long v = item ? PyLong_AsLong(item) : -1;
        Py_XDECREF(item);
        if (v == -1 && PyErr_Occurred()) {
            free(ids);
            Py_DECREF(fast);
            return NULL;
        }
        ids[i] = v < INT32_MIN || v > INT32_MAX ? -1 : (int32_t)v;
    }
    Py_DECREF(fast);
    return ids;
}

/* detokenize(tokens, special: bool) -> str: whole UTF-8 characters, invalid
 * bytes replaced by U+FFFD (hearth_detok). */
static PyObject *engine_detokenize(PyObject *self, PyObject *args) {
    hp_engine *e = (hp_engine *)self;
    PyObject *seq;
    int special;
    if (!PyArg_ParseTuple(args, "Op", &seq, &special) || !open_or_raise(e)) return NULL;
    size_t n;
    int32_t *ids = token_array(seq, &n);
    if (!ids) return NULL;
    hearth_detok *d = NULL;
    hearth_status st = hearth_detok_init(e->model, special, &d);
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (size_t i = 0; st == HEARTH_OK && i <= n; i++) {
        if (cap - len < 4096) {
            char *grown = realloc(text, cap = cap * 2 + 8192);
            if (!grown) {
                st = HEARTH_ERR_OUT_OF_MEMORY;
                break;
            }
            text = grown;
        }
        size_t got = 0;
        st = i < n ? hearth_detok_push(d, ids[i], text + len, cap - len, &got)
                   : hearth_detok_flush(d, text + len, cap - len, &got);
        len += got;
    }
    PyObject *out = st == HEARTH_OK ? PyUnicode_DecodeUTF8(text ? text : "", (Py_ssize_t)len, "replace")
                                    : hp_raise(st, NULL);
    hearth_detok_free(d);
    free(text);
    free(ids);
    return out;
}

/* The UTF-8 of str `str`, owned by a bytes object appended to `keep` (a
 * list that outlives the use of the pointer); NULL with an exception set. */
static const char *keep_utf8(PyObject *str, PyObject *keep) {
    PyObject *holder;
    const char *text = hp_utf8(str, &holder);
    if (!text) return NULL;
    const int err = PyList_Append(keep, holder);
    Py_DECREF(holder);
    return err ? NULL : text;
}

/* Sets p's prompt from submit()'s argument: a str (kind "text"), a sequence
 * of token ids ("tokens"), or a conversation as JSON text ("chat":
 * messages_json). Strings are kept alive by `keep`, token ids go to *tokens
 * (the caller frees them). */
static bool set_prompt(PyObject *prompt, const char *kind, hearth_request_params *p, PyObject *keep, int32_t **tokens) {
    if (!strcmp(kind, "text")) return (p->prompt = keep_utf8(prompt, keep)) != NULL;
    if (!strcmp(kind, "tokens")) return (p->tokens = *tokens = token_array(prompt, &p->n_tokens)) != NULL;
    return (p->messages_json = keep_utf8(prompt, keep)) != NULL;
}

/* A str or None as a C string kept alive by `keep` (NULL for None). False
 * with an exception set. */
static bool optional_utf8(PyObject *v, PyObject *keep, const char **out) {
    *out = NULL;
    return v == Py_None || (*out = keep_utf8(v, keep)) != NULL;
}

/* Reads the logit bias (a sequence of (token, bias) pairs) into a malloc'd
 * array of *n entries. */
static hearth_logit_bias *logit_bias_array(PyObject *pairs, size_t *n) {
    PyObject *fast = PySequence_Fast(pairs, "logit_bias must be a sequence of (token, bias) pairs");
    if (!fast) return NULL;
    *n = (size_t)PySequence_Size(fast);
    hearth_logit_bias *bias = calloc(*n + 1, sizeof *bias);
    bool ok = bias != NULL || (PyErr_NoMemory(), false);
    for (size_t i = 0; ok && i < *n; i++) {
        PyObject *pair = PySequence_GetItem(fast, (Py_ssize_t)i);
        ok = pair && PyArg_ParseTuple(pair, "if", &bias[i].token, &bias[i].bias);
        Py_XDECREF(pair);
    }
    Py_DECREF(fast);
    if (!ok) free(bias);
    return ok ? bias : NULL;
}

/* Reads the stop strings (a sequence of str) into a malloc'd array. */
static const char **stop_array(PyObject *stop, PyObject *keep, size_t *n) {
    PyObject *fast = PySequence_Fast(stop, "stop must be a sequence of str");
    if (!fast) return NULL;
    *n = (size_t)PySequence_Size(fast);
    const char **stops = calloc(*n + 1, sizeof *stops);
    bool ok = stops != NULL || (PyErr_NoMemory(), false);
    for (size_t i = 0; ok && i < *n; i++) {
        PyObject *item = PySequence_GetItem(fast, (Py_ssize_t)i);
        ok = item && (stops[i] = keep_utf8(item, keep)) != NULL;
        Py_XDECREF(item);
    }
    Py_DECREF(fast);
    if (!ok) free(stops);
    return ok ? stops : NULL;
}

/* submit(prompt, kind, max_tokens, temperature, top_k, top_p, min_p,
 * repeat_penalty, presence_penalty, frequency_penalty, seed, stop,
 * ignore_eos, logit_bias, grammar, json_schema, tools, tool_choice,
 * parallel_tool_calls) -> Request. logit_bias is a sequence of (token,
 * bias) pairs; grammar (GBNF), json_schema and tools (JSON text) and
 * tool_choice are str or None. hearth/_model.py checks the values. */
static PyObject *engine_submit(PyObject *self, PyObject *args) {
    hp_engine *e = (hp_engine *)self;
    PyObject *prompt, *stop, *bias, *grammar, *schema, *tools, *choice;
    const char *kind;
    unsigned long long seed;
    int ignore_eos, parallel;
    hearth_request_params p = hearth_request_default_params();
    hearth_sampler_params *sp = &p.sampling;
    if (!PyArg_ParseTuple(args, "OsififffffKOpOOOOOp", &prompt, &kind, &p.max_tokens, &sp->temp, &sp->top_k, &sp->top_p,
                          &sp->min_p, &sp->repeat_penalty, &sp->presence_penalty, &sp->frequency_penalty, &seed, &stop,
                          &ignore_eos, &bias, &grammar, &schema, &tools, &choice, &parallel) ||
        !open_or_raise(e))
        return NULL;
    if (!e->engine)
        return hp_raise(HEARTH_ERR_INVALID_ARG,
                        e->close_pending ? "the model is closed"
                                         : "this is an embedding model: it cannot generate text; use embed()");
    sp->seed = seed;
    p.ignore_eos = ignore_eos;
    p.parallel_tool_calls = parallel;
    PyObject *keep = PyList_New(0), *out = NULL;
    int32_t *tokens = NULL;
    const char **stops = NULL;
    hearth_logit_bias *biases = NULL;
    if (keep && set_prompt(prompt, kind, &p, keep, &tokens) && (stops = stop_array(stop, keep, &p.n_stop)) &&
        (biases = logit_bias_array(bias, &sp->n_logit_bias)) && optional_utf8(grammar, keep, &sp->grammar) &&
        optional_utf8(schema, keep, &sp->json_schema) && optional_utf8(tools, keep, &p.tools_json) &&
        optional_utf8(choice, keep, &p.tool_choice)) {
        p.stop = stops;
        sp->logit_bias = biases;
        out = hp_request_submit(e, &p);
    }
    free(biases);
    free(stops);
    free(tokens);
    Py_XDECREF(keep);
    return out;
}

static PyMethodDef engine_methods[] = {
    {"info", engine_info, METH_NOARGS, "info() -> dict of the model's and the engine's facts"},
    {"stats", engine_stats, METH_NOARGS, "stats() -> dict of the engine's counters"},
    {"metadata", engine_metadata, METH_NOARGS, "metadata() -> dict[str, str] (non-array keys)"},
    {"chat_template", engine_chat_template, METH_NOARGS, "chat_template() -> str | None"},
    {"tokenize", engine_tokenize, METH_VARARGS, "tokenize(text: bytes, add_special, parse_special) -> list[int]"},
    {"detokenize", engine_detokenize, METH_VARARGS, "detokenize(tokens, special) -> str"},
    {"submit", engine_submit, METH_VARARGS,
     "submit(prompt, kind, max_tokens, sampling..., constraints, tools) -> Request"},
    {"embed", hp_engine_embed, METH_VARARGS,
     "embed(texts: list[bytes], pooling: int, normalize: bool) -> (bytes of float32 [n][n_embd], n_embd)"},
    {"rerank", hp_engine_rerank, METH_VARARGS,
     "rerank(query: bytes, documents: list[bytes]) -> bytes of float32 [n] (one score per document)"},
    {"close", engine_close, METH_NOARGS, "close() -> None; frees the model and its memory now"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot engine_slots[] = {
    {Py_tp_new, hp_no_new},
    {Py_tp_dealloc, engine_dealloc},
    {Py_tp_methods, engine_methods},
    {Py_tp_doc, "A loaded model and its engine (made by _hearth.open)."},
    {0, NULL},
};

PyType_Spec hp_engine_spec = {"hearth._hearth.Engine", sizeof(hp_engine), 0, Py_TPFLAGS_DEFAULT, engine_slots};

void hp_engine_set_type(PyObject *type) { engine_type = type; }
