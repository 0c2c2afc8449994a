/* The Model handle: a hearth_model, the hearth_engine that schedules every
 * request made on it, and the thread-safe function that wakes JavaScript
 * when a request has text. JS holds it as an external tagged with a type
 * tag (so a stray object passed in is refused, not dereferenced).
 *
 * Lifetime: the JS handle, each request still known to JS or the engine,
 * and the thread-safe function each hold a reference (hn_model.refs, JS
 * thread only). Disposing (model.dispose(), the handle being garbage
 * collected, or the environment's cleanup at process or worker exit)
 * cancels the requests, stops the engine (its thread joined), frees the
 * model and releases the thread-safe function; the struct goes with the
 * last reference. The cleanup hook is registered after the thread-safe
 * function is made, so at exit it runs first (Node runs them last in,
 * first out): the engine's thread is stopped before Node tears down the
 * thread-safe function it calls. */
#include <stdlib.h>
#include <string.h>

#include "addon.h"

static const napi_type_tag MODEL_TAG = {0x6865617274686d6fULL, 0x64656c2d6e6f6465ULL}; /* "hearthmodel-node" */

hearth_status hn_model_open(const char *path, const hn_model_options *o, hearth_model **model, hearth_engine **engine) {
    *engine = NULL;
    /* a model name ("llama3.2:1b", hf.co/..., ollama:...) becomes a local
     * file, downloaded into the store first when it is not there */
    char *file = NULL;
    hearth_status st = hearth_model_resolve(path, NULL, &file);
    if (st == HEARTH_OK) st = hearth_model_load(file, &o->mp, model);
    hearth_free(file);
    if (st != HEARTH_OK) return st;
    if (!hearth_model_can_generate(*model)) return HEARTH_OK; /* an encoder (bert): embed() only, no engine */
    st = hearth_engine_init(*model, &o->ep, engine);
    if (st != HEARTH_OK) {
        hearth_model_free(*model);
        *model = NULL;
    }
    return st;
}

/* ------------------------------------------------------------ lifetime -- */

void hn_model_unref(hn_model *m) {
    if (--m->refs > 0) return;
    pthread_mutex_destroy(&m->mu);
    free(m->name);
    free(m);
}

static void model_cleanup(void *arg);

/* Cancels the requests, stops the engine and frees the model; the struct
 * stays for the references still held. Idempotent. */
static void model_close(hn_model *m, bool from_hook) {
    if (m->hooked && !from_hook) napi_remove_env_cleanup_hook(m->env, model_cleanup, m);
    m->hooked = false;
    if (!m->model || m->close_pending) return;
    hearth_engine_free(m->engine); /* every request gets its last piece (CANCELLED), paused ones too */
    m->engine = NULL;
    if (m->n_embedding > 0) {
        m->close_pending = true; /* the last embed() job frees the model */
    } else {
        hearth_model_free(m->model);
        m->model = NULL;
    }
    /* the pieces just delivered still reach JS: release lets the queue drain */
    if (m->tsfn) napi_release_threadsafe_function(m->tsfn, napi_tsfn_release);
}

/* The environment's cleanup hook (process or worker exit). */
static void model_cleanup(void *arg) { model_close(arg, true); }

static void handle_finalize(napi_env env, void *data, void *hint) {
    (void)env, (void)hint;
    model_close(data, false);
    hn_model_unref(data);
}

static void tsfn_finalize(napi_env env, void *data, void *hint) {
    (void)env, (void)hint;
    hn_model_unref(data);
}

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

void hn_model_embed_done(hn_model *m) {
    if (--m->n_embedding > 0 || !m->close_pending) return;
    hearth_model_free(m->model);
    m->model = NULL;
    m->close_pending = false;
}

napi_value hn_model_wrap(napi_env env, const char *path, hearth_model *model, hearth_engine *engine,
                         const hearth_context_params *cp) {
    hn_model *m = calloc(1, sizeof *m);
    char *name = strdup(base_name(path));
    if (!m || !name) {
        free(m);
        free(name);
        hearth_engine_free(engine);
        hearth_model_free(model);
        hn_throw(env, "ERR_OUT_OF_MEMORY", "out of memory");
        return NULL;
    }
    *m = (hn_model){.env = env, .model = model, .engine = engine, .ctx = *cp, .name = name, .refs = 1};
    pthread_mutex_init(&m->mu, NULL);
    napi_value res_name, handle = NULL;
    /* no queue bound here: each request has at most one call pending
     * (stream.c), and its text waits in its own bounded buffer */
    if (napi_create_string_utf8(env, "hearth.stream", NAPI_AUTO_LENGTH, &res_name) == napi_ok &&
        napi_create_threadsafe_function(env, NULL, NULL, res_name, 0, 1, m, tsfn_finalize, m, hn_stream_call_js,
                                        &m->tsfn) == napi_ok) {
        m->refs++;
        /* the event loop stays alive only while JS waits for a request (n_armed) */
        napi_unref_threadsafe_function(env, m->tsfn);
        m->hooked = napi_add_env_cleanup_hook(env, model_cleanup, m) == napi_ok;
        if (napi_create_external(env, m, handle_finalize, NULL, &handle) == napi_ok &&
            napi_type_tag_object(env, handle, &MODEL_TAG) == napi_ok)
            return handle;
    }
    hn_napi_failed(env, "creating the model handle");
    if (!handle) handle_finalize(env, m, NULL); /* else the external's finalizer frees it */
    return NULL;
}

hn_model *hn_model_get(napi_env env, napi_value v) {
    bool ok = false;
    void *m = NULL;
    napi_valuetype t = napi_undefined;
    napi_typeof(env, v, &t);
    if (t != napi_external || napi_check_object_type_tag(env, v, &MODEL_TAG, &ok) != napi_ok || !ok ||
        napi_get_value_external(env, v, &m) != napi_ok) {
        hn_throw(env, "ERR_INVALID_ARG", "not a hearth model handle");
        return NULL;
    }
    return m;
}

hn_model *hn_model_live(napi_env env, napi_value v) {
    hn_model *m = hn_model_get(env, v);
    if (m && (!m->model || m->close_pending)) {
        hn_throw(env, "ERR_DISPOSED", "the model has been disposed");
        return NULL;
    }
    return m;
}

/* ---------------------------------------------------------- JS entries -- */

/* modelLoad(path, options) -> handle, loading on the calling (JS) thread. */
napi_value hn_model_load(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    if (!hn_args(env, info, 2, argv)) return NULL;
    hn_model_options o = {0};
    char *path = hn_string(env, argv[0], "path", NULL);
    if (!path || !hn_model_options_read(env, argv[1], &o)) {
        hn_model_options_free(&o);
        free(path);
        return NULL;
    }
    hearth_model *model;
    hearth_engine *engine;
    const hearth_status st = hn_model_open(path, &o, &model, &engine);
    const hearth_context_params cp = o.ep.ctx;
    hn_model_options_free(&o);
    napi_value handle = NULL;
    if (st != HEARTH_OK) hn_throw_status(env, st);
    else handle = hn_model_wrap(env, path, model, engine, &cp);
    free(path);
    return handle;
}

/* modelDispose(handle): frees the model and its engine now. */
napi_value hn_model_dispose(napi_env env, napi_callback_info info) {
    napi_value argv[1];
    if (!hn_args(env, info, 1, argv)) return NULL;
    hn_model *m = hn_model_get(env, argv[0]);
    if (m) model_close(m, false);
    return NULL;
}
