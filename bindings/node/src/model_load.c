/* Model.load(path, options): reading and validating the file and starting
 * the engine happen on a libuv worker thread (napi_create_async_work), so
 * the event loop keeps running during a load of seconds; the promise
 * resolves on the JS thread with the model handle or rejects with
 * HearthError. */
#include <stdlib.h>
#include <string.h>

#include "addon.h"

typedef struct load_job {
    char *path;
    hn_model_options opts;
    hearth_model *model; /* the result, or NULL */
    hearth_engine *engine;
    hearth_status st;
    char error[1024]; /* hearth_last_error() is per thread: copied on the worker */
    napi_deferred deferred;
    napi_async_work work;
} load_job;

static void job_free(napi_env env, load_job *j) {
    if (j->work) napi_delete_async_work(env, j->work);
    free(j->path);
    hn_model_options_free(&j->opts);
    free(j);
}

/* On the worker: no JS values here. */
static void execute(napi_env env, void *data) {
    (void)env;
    load_job *j = data;
    j->st = hn_model_open(j->path, &j->opts, &j->model, &j->engine);
    if (j->st != HEARTH_OK) {
        const char *msg = hearth_last_error();
        strncpy(j->error, msg[0] ? msg : hearth_status_str(j->st), sizeof j->error - 1);
    }
}

/* Back on the JS thread. */
static void complete(napi_env env, napi_status status, void *data) {
    load_job *j = data;
    napi_value result = NULL;
    bool ok = false;
    if (status == napi_ok && j->st == HEARTH_OK) {
        result = hn_model_wrap(env, j->path, j->model, j->engine, &j->opts.ep.ctx); /* takes model and engine */
        ok = result != NULL;
        if (!ok) napi_get_and_clear_last_exception(env, &result);
    } else if (status == napi_ok) {
        result = hn_error_new(env, hn_status_code(j->st), j->error);
    } else {
        hearth_engine_free(j->engine); /* the work was cancelled: the environment is going away */
        hearth_model_free(j->model);
        result = hn_error_new(env, "ERR_CANCELLED", "the model load was cancelled");
    }
    if (!result) napi_get_undefined(env, &result);
    if (ok) napi_resolve_deferred(env, j->deferred, result);
    else napi_reject_deferred(env, j->deferred, result);
    job_free(env, j);
}

/* modelLoadAsync(path, options) -> Promise<handle>. */
napi_value hn_model_load_async(napi_env env, napi_callback_info info) {
    napi_value argv[2], promise, name;
    if (!hn_args(env, info, 2, argv)) return NULL;
    load_job *j = calloc(1, sizeof *j);
    if (!j) {
        hn_throw(env, "ERR_OUT_OF_MEMORY", "out of memory");
        return NULL;
    }
    if (!(j->path = hn_string(env, argv[0], "path", NULL)) || !hn_model_options_read(env, argv[1], &j->opts) ||
        napi_create_string_utf8(env, "hearth.load", NAPI_AUTO_LENGTH, &name) != napi_ok ||
        napi_create_promise(env, &j->deferred, &promise) != napi_ok ||
        napi_create_async_work(env, NULL, name, execute, complete, j, &j->work) != napi_ok ||
        napi_queue_async_work(env, j->work) != napi_ok) {
        hn_napi_failed(env, "queueing the model load");
        job_free(env, j); /* a created promise that is never settled is collected with it */
        return NULL;
    }
    return promise;
}
