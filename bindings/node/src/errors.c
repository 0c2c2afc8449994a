/* HearthError: every failure the addon reports is an instance of the JS
 * class index.js defines (and hands over once through setErrorClass), with
 * hearth's one-line message and a code string named after hearth_status
 * ("ERR_IO" for HEARTH_ERR_IO), so callers can branch on err.code. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "addon.h"

/* The environment's HearthError constructor (napi instance data). */
typedef struct hn_env_data {
    napi_ref error_class;
} hn_env_data;

static void env_data_free(napi_env env, void *data, void *hint) {
    (void)hint;
    hn_env_data *d = data;
    if (d->error_class) napi_delete_reference(env, d->error_class);
    free(d);
}

napi_value hn_set_error_class(napi_env env, napi_callback_info info) {
    napi_value argv[1];
    if (!hn_args(env, info, 1, argv)) return NULL;
    napi_valuetype t;
    HN_CALL(napi_typeof(env, argv[0], &t));
    if (t != napi_function) {
        napi_throw_type_error(env, NULL, "setErrorClass expects a class");
        return NULL;
    }
    hn_env_data *d;
    if (napi_get_instance_data(env, (void **)&d) != napi_ok || !d) {
        d = calloc(1, sizeof *d);
        if (!d) {
            napi_throw_error(env, NULL, "out of memory");
            return NULL;
        }
        if (napi_set_instance_data(env, d, env_data_free, NULL) != napi_ok) {
            free(d);
            hn_napi_failed(env, "napi_set_instance_data");
            return NULL;
        }
    }
    if (d->error_class) napi_delete_reference(env, d->error_class);
    d->error_class = NULL;
    HN_CALL(napi_create_reference(env, argv[0], 1, &d->error_class));
    return NULL;
}

napi_value hn_error_new(napi_env env, const char *code, const char *message) {
    napi_value msg, js_code, ctor, err;
    hn_env_data *d = NULL;
    if (napi_create_string_utf8(env, message, NAPI_AUTO_LENGTH, &msg) != napi_ok ||
        napi_create_string_utf8(env, code, NAPI_AUTO_LENGTH, &js_code) != napi_ok)
        return NULL;
    if (napi_get_instance_data(env, (void **)&d) == napi_ok && d && d->error_class &&
        napi_get_reference_value(env, d->error_class, &ctor) == napi_ok && ctor) {
        napi_value argv[2] = {msg, js_code};
        if (napi_new_instance(env, ctor, 2, argv, &err) == napi_ok) return err;
        return NULL;
    }
    /* before index.js handed the class over: a plain Error with the code */
    return napi_create_error(env, js_code, msg, &err) == napi_ok ? err : NULL;
}

void hn_throw(napi_env env, const char *code, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    napi_value err = hn_error_new(env, code, msg);
    if (err) napi_throw(env, err);
    else hn_napi_failed(env, "hn_error_new");
}

const char *hn_status_code(hearth_status st) {
    static const char *const codes[] = {
        [HEARTH_OK] = "OK",
        [HEARTH_ERR_INVALID_ARG] = "ERR_INVALID_ARG",
        [HEARTH_ERR_IO] = "ERR_IO",
        [HEARTH_ERR_FORMAT] = "ERR_FORMAT",
        [HEARTH_ERR_UNSUPPORTED] = "ERR_UNSUPPORTED",
        [HEARTH_ERR_OUT_OF_MEMORY] = "ERR_OUT_OF_MEMORY",
        [HEARTH_ERR_CONTEXT_FULL] = "ERR_CONTEXT_FULL",
        [HEARTH_ERR_BUFFER_TOO_SMALL] = "ERR_BUFFER_TOO_SMALL",
        [HEARTH_ERR_DEVICE] = "ERR_DEVICE",
        [HEARTH_ERR_BUSY] = "ERR_BUSY",
        [HEARTH_ERR_NETWORK] = "ERR_NETWORK",
        [HEARTH_ERR_CANCELLED] = "ERR_CANCELLED",
    };
    return (unsigned)st < sizeof codes / sizeof codes[0] && codes[st] ? codes[st] : "ERR_UNKNOWN";
}

void hn_throw_status(napi_env env, hearth_status st) {
    const char *msg = hearth_last_error();
    hn_throw(env, hn_status_code(st), "%s", msg[0] ? msg : hearth_status_str(st));
}

void hn_napi_failed(napi_env env, const char *call) {
    bool pending = false;
    if (napi_is_exception_pending(env, &pending) == napi_ok && pending) return;
    const napi_extended_error_info *info = NULL;
    napi_get_last_error_info(env, &info);
    char msg[512];
    snprintf(msg, sizeof msg, "hearth.node: %s failed: %s", call,
             info && info->error_message ? info->error_message : "unknown Node-API error");
    napi_throw_error(env, NULL, msg);
}
