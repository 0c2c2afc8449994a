/* hearth.node, the Node-API addon under bindings/node/index.js: what its
 * files share. module.c lists the exports; errors.c makes HearthError
 * objects; args.c reads JS values; model.c owns a Model (a hearth_model and
 * its hearth_engine), model_options.c reads its loader options and
 * model_load.c loads one on a libuv worker; vocab.c
 * tokenizes; embed.c computes embeddings on a libuv worker; request_params.c turns generation options into a
 * hearth_request_params; stream.c carries a request's pieces from the
 * engine's thread to JavaScript; system.c answers about devices and the
 * build; grammar.c turns JSON Schemas into grammars.
 *
 * Threads: every function here runs on the JS thread, except
 * model_load.c's execute step (a libuv worker) and stream.c's piece
 * callback (the engine's thread); those two touch no JS value. */
#ifndef HEARTH_NODE_ADDON_H
#define HEARTH_NODE_ADDON_H

#define NAPI_VERSION 8
#include <node_api.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "hearth.h"

/* Calls a napi_* function; on failure returns NULL from the calling
 * napi_callback, leaving the pending JS exception (Node-API sets one for
 * most failures; hn_napi_failed() adds one when it did not). */
#define HN_CALL(call)                                                                                                  \
    do {                                                                                                               \
        if ((call) != napi_ok) {                                                                                       \
            hn_napi_failed(env, #call);                                                                                \
            return NULL;                                                                                               \
        }                                                                                                              \
    } while (0)

/* ------------------------------------------------------------- errors.c -- */

/* Keeps exports.HearthError's constructor for the errors below. */
napi_value hn_set_error_class(napi_env env, napi_callback_info info);
/* A HearthError(message, code) value; NULL when it could not be made. */
napi_value hn_error_new(napi_env env, const char *code, const char *message);
/* Throws HearthError with `code` ("ERR_INVALID_ARG") and a printf-style message. */
void hn_throw(napi_env env, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Throws HearthError for a failed hearth call: hearth_last_error() with the
 * status's code. */
void hn_throw_status(napi_env env, hearth_status st);
/* The code string of a status: "ERR_IO" for HEARTH_ERR_IO. */
const char *hn_status_code(hearth_status st);
/* Throws an Error for a failed napi_* call unless one is pending. */
void hn_napi_failed(napi_env env, const char *call);

/* --------------------------------------------------------------- args.c -- */

/* The call's arguments: argv[0..n) (missing ones are undefined). */
bool hn_args(napi_env env, napi_callback_info info, size_t n, napi_value *argv);
/* True when v is undefined or null (an option left out). */
bool hn_is_nullish(napi_env env, napi_value v);
/* A JS string as a malloc'd UTF-8 copy (free() it); NULL after throwing
 * ERR_INVALID_ARG naming `what` when v is not a string. *len may be NULL. */
char *hn_string(napi_env env, napi_value v, const char *what, size_t *len);
napi_value hn_string_new(napi_env env, const char *s, size_t len);
/* obj[key] = x, or the string s (NULL: null); false on a Node-API failure. */
bool hn_set_num(napi_env env, napi_value obj, const char *key, double x);
bool hn_set_str(napi_env env, napi_value obj, const char *key, const char *s);

/* Options: each reads obj[key] when present (not undefined or null) into
 * *out and leaves *out as it is otherwise. False after throwing
 * ERR_INVALID_ARG ("options.maxTokens must be an integer") on a wrong type
 * or a value out of [lo, hi]. obj may be nullish (no options). */
bool hn_opt_int(napi_env env, napi_value obj, const char *key, int64_t lo, int64_t hi, int32_t *out);
bool hn_opt_float(napi_env env, napi_value obj, const char *key, float *out);
bool hn_opt_bool(napi_env env, napi_value obj, const char *key, bool *out);
/* A non-negative integer up to 2^64 - 1: a Number (exact, <= 2^53) or a BigInt. */
bool hn_opt_u64(napi_env env, napi_value obj, const char *key, uint64_t *out, bool *present);
/* obj[key] itself (undefined when obj is nullish). */
napi_value hn_opt(napi_env env, napi_value obj, const char *key);

/* A string or an array of strings as malloc'd copies: *out[0..*n), free
 * with hn_strings_free(). Nullish gives none. False after throwing. */
bool hn_strings(napi_env env, napi_value v, const char *what, char ***out, size_t *n);
void hn_strings_free(char **s, size_t n);

/* ------------------------------------------------------ model_options.c -- */

/* A Model's loader options as hearth's params, with the storage they point into. */
typedef struct hn_model_options {
    hearth_model_params mp;
    hearth_engine_params ep;
    float *split;        /* mp.tensor_split's storage (padded to the GPU count), or NULL */
    char *chat_template; /* ep.chat_template's storage, or NULL */
    char *devices;       /* mp.devices's storage, or NULL */
} hn_model_options;

/* Reads the loader options (nGpuLayers, nCtx, flashAttn, chatTemplate ...)
 * into o; false after throwing ERR_INVALID_ARG naming the option. Free o
 * with hn_model_options_free() either way. */
bool hn_model_options_read(napi_env env, napi_value opts, hn_model_options *o);
void hn_model_options_free(hn_model_options *o);

/* -------------------------------------------------------------- model.c -- */

/* A loaded model and its engine, shared by the JS handle, its requests and
 * its thread-safe function; freed when the last of them lets go. */
typedef struct hn_model {
    napi_env env;
    hearth_model *model;           /* NULL once disposed */
    hearth_engine *engine;         /* NULL once disposed, and for a model that cannot generate (bert) */
    hearth_context_params ctx;     /* the loader's context options (threads, attention ...), for embed() */
    int32_t n_embedding;           /* embed() jobs computing on a worker now (JS thread only) */
    bool close_pending;            /* disposed while they did: the last one frees the model */
    char *name;                    /* the file's base name: the "model" of chat results */
    napi_threadsafe_function tsfn; /* wakes the JS side of this model's requests */
    int32_t refs;                  /* JS thread only */
    int32_t n_armed;               /* requests whose JS side waits: the tsfn keeps the event loop alive */
    bool hooked;                   /* hn_model_cleanup is registered with the environment */
    /* Guards its requests' buffers, shared with the engine's thread
     * (stream.c's piece callback); taken before the engine's own lock. */
    pthread_mutex_t mu;
} hn_model;

/* The model behind a handle made by the loaders; NULL after throwing
 * ERR_INVALID_ARG when v is not one. Disposed models are returned too. */
hn_model *hn_model_get(napi_env env, napi_value v);
/* As hn_model_get(), and throws ERR_DISPOSED when the model is disposed. */
hn_model *hn_model_live(napi_env env, napi_value v);
/* Loads path and starts its engine (any thread: no JS). On error nothing is
 * left and the status is returned with hearth_last_error() set. */
hearth_status hn_model_open(const char *path, const hn_model_options *o, hearth_model **model, hearth_engine **engine);
/* The JS handle of a freshly opened model (takes model and engine, freeing
 * them on failure); cp: its context options, kept for embed(). NULL with an
 * exception pending on failure. */
napi_value hn_model_wrap(napi_env env, const char *path, hearth_model *model, hearth_engine *engine,
                         const hearth_context_params *cp);
void hn_model_unref(hn_model *m);

napi_value hn_model_load(napi_env env, napi_callback_info info);
napi_value hn_model_info(napi_env env, napi_callback_info info);
napi_value hn_model_metadata(napi_env env, napi_callback_info info);
napi_value hn_model_stats(napi_env env, napi_callback_info info);
napi_value hn_model_dispose(napi_env env, napi_callback_info info);

/* Frees the model of a disposed handle once no embed() job uses it. */
void hn_model_embed_done(hn_model *m);

/* --------------------------------------------------------- model_load.c -- */

napi_value hn_model_load_async(napi_env env, napi_callback_info info);

/* -------------------------------------------------------------- vocab.c -- */

napi_value hn_tokenize(napi_env env, napi_callback_info info);
napi_value hn_detokenize(napi_env env, napi_callback_info info);

/* ----------------------------------------------------- request_params.c -- */

/* What a request needs kept alive until hearth_engine_submit() has copied it. */
typedef struct hn_request_input {
    char *prompt;
    char *messages_json; /* the conversation as JSON text */
    char **stop;         /* [n_stop] */
    size_t n_stop;
    hearth_logit_bias *logit_bias; /* [n_logit_bias] */
    size_t n_logit_bias;
    char *grammar, *json_schema; /* GBNF; a JSON Schema's text */
    char *tools, *tool_choice;   /* JSON text of the tools; "auto", "none", "required" or a name */
} hn_request_input;

/* Fills p from the prompt (a string) or the messages (the conversation as
 * JSON text, from index.js), the generation options, and `constraints`
 * ({grammar, jsonSchema, tools, toolChoice}: strings or null, made by
 * index.js from the structured-output and tool options); in keeps the
 * copies. False after throwing; free `in` either way. */
bool hn_request_read(napi_env env, napi_value prompt, napi_value messages, napi_value opts, napi_value constraints,
                     hearth_request_params *p, hn_request_input *in);
void hn_request_input_free(hn_request_input *in);

/* ------------------------------------------------------------- stream.c -- */

/* Called on the JS thread for each request the engine's thread woke. */
void hn_stream_call_js(napi_env env, napi_value js_cb, void *context, void *data);

napi_value hn_submit(napi_env env, napi_callback_info info);
napi_value hn_take(napi_env env, napi_callback_info info);
napi_value hn_cancel(napi_env env, napi_callback_info info);

/* -------------------------------------------------------------- embed.c -- */

/* embed(handle, texts, pooling, normalize) -> Promise<Float32Array[]>. */
napi_value hn_embed(napi_env env, napi_callback_info info);
/* rerank(handle, query, documents) -> Promise<Float32Array> (a score per document). */
napi_value hn_rerank(napi_env env, napi_callback_info info);

/* ------------------------------------------------------------- system.c -- */

napi_value hn_gpu_devices(napi_env env, napi_callback_info info);
napi_value hn_supports_gpu_offload(napi_env env, napi_callback_info info);
napi_value hn_system_info(napi_env env, napi_callback_info info);

/* ------------------------------------------------------------ grammar.c -- */

napi_value hn_json_schema_to_grammar(napi_env env, napi_callback_info info);

#endif
