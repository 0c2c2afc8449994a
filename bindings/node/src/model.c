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

/* ------------------------------------------------------------- options -- */

/* options.tensorSplit: proportions per GPU. hearth reads one per device, so
 * the array is padded with zeros to the device count. */
static bool read_split(napi_env env, napi_value opts, float **split) {
    *split = NULL;
    napi_value v = hn_opt(env, opts, "tensorSplit");
    if (hn_is_nullish(env, v)) return true;
    bool is_array = false;
    uint32_t n = 0;
    napi_is_array(env, v, &is_array);
    if (!is_array || napi_get_array_length(env, v, &n) != napi_ok) {
        hn_throw(env, "ERR_INVALID_ARG", "options.tensorSplit must be an array of numbers");
        return false;
    }
    const uint32_t n_dev = (uint32_t)hearth_gpu_device_count(), size = n > n_dev ? n : n_dev;
    float *s = calloc(size ? size : 1, sizeof *s);
    if (!s) {
        hn_throw(env, "ERR_OUT_OF_MEMORY", "out of memory reading options.tensorSplit");
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        napi_value e;
        double d = -1;
        if (napi_get_element(env, v, i, &e) != napi_ok || napi_get_value_double(env, e, &d) != napi_ok ||
            !(d >= 0 && d < 1e30)) {
            free(s);
            hn_throw(env, "ERR_INVALID_ARG", "options.tensorSplit[%u] must be a non-negative number", i);
            return false;
        }
        s[i] = (float)d;
    }
    *split = s;
    return true;
}

/* options.splitMode: 'none' | 'layer' | 'row'. */
static bool read_split_mode(napi_env env, napi_value opts, hearth_split_mode *mode) {
    static const char *const names[] = {[HEARTH_SPLIT_NONE] = "none", [HEARTH_SPLIT_LAYER] = "layer", [HEARTH_SPLIT_ROW] = "row"};
    napi_value v = hn_opt(env, opts, "splitMode");
    if (hn_is_nullish(env, v)) return true;
    char *s = hn_string(env, v, "options.splitMode", NULL);
    if (!s) return false;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!strcmp(s, names[i])) {
            *mode = (hearth_split_mode)i;
            free(s);
            return true;
        }
    }
    hn_throw(env, "ERR_INVALID_ARG", "options.splitMode must be 'none', 'layer' or 'row' (got '%s')", s);
    free(s);
    return false;
}

bool hn_model_params(napi_env env, napi_value opts, hearth_model_params *mp, hearth_engine_params *ep, float **split) {
    *mp = hearth_model_default_params();
    *ep = hearth_engine_default_params();
    *split = NULL;
    int32_t n_ctx = (int32_t)ep->ctx.n_ctx, n_batch = (int32_t)ep->ctx.n_batch, n_seq = (int32_t)ep->ctx.n_seq_max;
    bool ok = hn_opt_int(env, opts, "nGpuLayers", -1, INT32_MAX, &mp->n_gpu_layers) &&
              hn_opt_int(env, opts, "mainGpu", 0, INT32_MAX, &mp->main_gpu) && read_split_mode(env, opts, &mp->split_mode) &&
              hn_opt_bool(env, opts, "useMmap", &mp->use_mmap) && hn_opt_bool(env, opts, "useMlock", &mp->use_mlock) &&
              hn_opt_int(env, opts, "nCtx", 0, 1 << 24, &n_ctx) && hn_opt_int(env, opts, "nBatch", 1, INT32_MAX, &n_batch) &&
              hn_opt_int(env, opts, "nThreads", 0, 1024, &ep->ctx.n_threads) &&
              hn_opt_int(env, opts, "nSeqMax", 1, 256, &n_seq) && read_split(env, opts, split);
    ep->ctx.n_ctx = (uint32_t)n_ctx;
    ep->ctx.n_batch = (uint32_t)n_batch;
    ep->ctx.n_seq_max = (uint32_t)n_seq;
    mp->tensor_split = *split;
    return ok;
}

hearth_status hn_model_open(const char *path, const hearth_model_params *mp, const hearth_engine_params *ep,
                            hearth_model **model, hearth_engine **engine) {
    *engine = NULL;
    /* a model name ("llama3.2:1b", hf.co/..., ollama:...) becomes a local
     * file, downloaded into the store first when it is not there */
    char *file = NULL;
    hearth_status st = hearth_model_resolve(path, NULL, &file);
    if (st == HEARTH_OK) st = hearth_model_load(file, mp, model);
    hearth_free(file);
    if (st != HEARTH_OK) return st;
    st = hearth_engine_init(*model, ep, engine);
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
    pthread_cond_destroy(&m->room);
    free(m->name);
    free(m);
}

static void model_cleanup(void *arg);

/* Cancels the requests, stops the engine and frees the model; the struct
 * stays for the references still held. Idempotent. */
static void model_close(hn_model *m, bool from_hook) {
    if (m->hooked && !from_hook) napi_remove_env_cleanup_hook(m->env, model_cleanup, m);
    m->hooked = false;
    if (!m->engine) return;
    pthread_mutex_lock(&m->mu);
    m->closing = true; /* a piece callback waiting for room returns false now */
    pthread_cond_broadcast(&m->room);
    pthread_mutex_unlock(&m->mu);
    hearth_engine_free(m->engine); /* every request gets its last piece (CANCELLED) */
    m->engine = NULL;
    hearth_model_free(m->model);
    m->model = NULL;
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

napi_value hn_model_wrap(napi_env env, const char *path, hearth_model *model, hearth_engine *engine) {
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
    *m = (hn_model){.env = env, .model = model, .engine = engine, .name = name, .refs = 1};
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->room, NULL);
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
    if (m && !m->engine) {
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
    hearth_model_params mp;
    hearth_engine_params ep;
    float *split;
    char *path = hn_string(env, argv[0], "path", NULL);
    if (!path || !hn_model_params(env, argv[1], &mp, &ep, &split)) {
        free(path);
        return NULL;
    }
    hearth_model *model;
    hearth_engine *engine;
    const hearth_status st = hn_model_open(path, &mp, &ep, &model, &engine);
    free(split);
    napi_value handle = NULL;
    if (st != HEARTH_OK) hn_throw_status(env, st);
    else handle = hn_model_wrap(env, path, model, engine);
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
