/* A request's text and tool-call deltas on their way from the engine's
 * thread to JavaScript.
 *
 * Each request has a buffer of text the engine produced and JS has not yet
 * taken, and a list of the tool-call deltas not yet taken (the deltas of one
 * call that arrive between two takes are joined into one). The piece callback (engine thread) appends to it; JS pulls with
 * take(), which returns what is there or, when nothing is, "arms" the
 * request: the next piece then wakes JS through the model's thread-safe
 * function (at most one call pending per request, so the thread-safe
 * function's queue is bounded by the number of requests).
 *
 * Backpressure: a buffer holds at most HN_STREAM_PIECES pieces. The piece
 * that fills it pauses its request in the engine (hearth_engine_pause) and
 * returns at once; the take() that empties the buffer resumes it. A paused
 * request keeps its slot and cache but sits out the engine's steps, so
 * memory stays bounded however slow the consumer while the Model's other
 * requests go on at full speed. Pause and resume are both made under
 * m->mu, the lock that guards the buffer, so a resume cannot overtake its
 * pause (lock order: m->mu, then the engine's own lock; the engine does not
 * hold its lock while it calls a piece callback). A paused request still
 * ends within a step when cancelled (break, abort, garbage collection of
 * its stream) or when the model is disposed (freeing the engine ends every
 * request).
 *
 * Lifetime: a request is referenced by its JS handle and by the engine
 * until JS has seen its end (hn_request.refs, JS thread only); it holds a
 * reference to its model. */
#include <stdlib.h>
#include <string.h>

#include "addon.h"

/* Pieces (of text or tool-call deltas) a request may hold before it is paused. */
#define HN_STREAM_PIECES 32

static const napi_type_tag REQUEST_TAG = {0x6865617274687265ULL, 0x71756573742d6e64ULL}; /* "hearthrequest-nd" */

/* A tool-call delta not yet taken. */
typedef struct hn_call {
    int32_t index;
    char *id, *name; /* in the call's first delta; else NULL */
    char *args;      /* [args_len] the arguments' next bytes */
    size_t args_len;
} hn_call;

typedef struct hn_request {
    hn_model *m;
    hearth_engine *engine; /* m->engine at submit, for the piece callback (the engine outlives its callbacks) */
    uint64_t id;           /* the engine's request id */
    napi_ref waker;        /* JS function to call when text or the end arrives */
    int32_t refs;          /* JS thread only */
    bool ended;            /* JS thread: the end reached JS and the engine's reference is gone */
    /* under m->mu */
    char *text; /* [cap] the text not yet taken: text[0, len) */
    size_t len, cap;
    int32_t n_pieces; /* non-empty pieces in text and calls */
    hn_call *calls;   /* [n_calls] tool-call deltas not yet taken */
    size_t n_calls, cap_calls;
    bool armed;                  /* JS waits for this request */
    bool queued;                 /* a thread-safe function call for it is pending */
    bool cancel;                 /* JS stopped it: the next piece returns false */
    bool oom;                    /* the buffer could not grow: the request ends with an error */
    bool paused;                 /* the buffer is full: paused in the engine until take() empties it */
    hearth_finish_reason finish; /* NONE until its last piece */
    char *error;                 /* with FINISH_ERROR */
    int32_t n_prompt, n_cached, n_generated;
} hn_request;

/* Frees the deltas' strings and empties the list (under m->mu, or with the request no longer shared). */
static void clear_calls(hn_request *r) {
    for (size_t i = 0; i < r->n_calls; i++) {
        free(r->calls[i].id);
        free(r->calls[i].name);
        free(r->calls[i].args);
    }
    r->n_calls = 0;
}

static void request_unref(napi_env env, hn_request *r) {
    if (--r->refs > 0) return;
    if (env && r->waker) napi_delete_reference(env, r->waker); /* without env: the environment is gone with it */
    clear_calls(r);
    free(r->calls);
    free(r->text);
    free(r->error);
    hn_model_unref(r->m);
    free(r);
}

/* Marks r cancelled and tells the engine; the last piece follows within a
 * step, paused or not. */
static void request_cancel(hn_request *r) {
    hn_model *m = r->m;
    pthread_mutex_lock(&m->mu);
    r->cancel = true;
    const bool running = r->finish == HEARTH_FINISH_NONE;
    pthread_mutex_unlock(&m->mu);
    if (running && m->engine) hearth_engine_cancel(m->engine, r->id);
}

/* ------------------------------------------------- the engine's thread -- */

/* Under m->mu. */
static bool append(hn_request *r, const char *text, size_t len) {
    if (r->len + len > r->cap) {
        size_t cap = r->cap ? r->cap : 256;
        while (cap < r->len + len) cap *= 2;
        char *grown = realloc(r->text, cap);
        if (!grown) return false;
        r->text = grown;
        r->cap = cap;
    }
    memcpy(r->text + r->len, text, len);
    r->len += len;
    return true;
}

/* Under m->mu: appends `d`, or joins it to the last delta when it
 * continues the same call. */
static bool append_call(hn_request *r, const hearth_tool_call_delta *d) {
    hn_call *last = r->n_calls ? &r->calls[r->n_calls - 1] : NULL;
    if (!last || last->index != d->index || d->id || d->name) {
        if (r->n_calls == r->cap_calls) {
            const size_t cap = r->cap_calls ? 2 * r->cap_calls : 4;
            hn_call *grown = realloc(r->calls, cap * sizeof *grown);
            if (!grown) return false;
            r->calls = grown;
            r->cap_calls = cap;
        }
        last = &r->calls[r->n_calls];
        *last = (hn_call){.index = d->index};
        if ((d->id && !(last->id = strdup(d->id))) || (d->name && !(last->name = strdup(d->name)))) {
            free(last->id);
            return false;
        }
        r->n_calls++;
    }
    char *args = realloc(last->args, last->args_len + d->arguments_len + 1);
    if (!args) return false;
    memcpy(args + last->args_len, d->arguments, d->arguments_len);
    last->args = args;
    last->args_len += d->arguments_len;
    return true;
}

/* Under m->mu: the piece's text and tool-call deltas. */
static bool append_piece(hn_request *r, const hearth_piece *pc) {
    if (pc->len && !append(r, pc->text, pc->len)) return false;
    for (int32_t i = 0; i < pc->n_tool_calls; i++)
        if (!append_call(r, &pc->tool_calls[i])) return false;
    if (pc->len || pc->n_tool_calls) r->n_pieces++;
    return true;
}

static bool on_piece(const hearth_piece *pc, void *user) {
    hn_request *r = user;
    hn_model *m = r->m;
    const bool last = pc->finish != HEARTH_FINISH_NONE;
    pthread_mutex_lock(&m->mu);
    bool go = !r->cancel && !r->oom;
    if (go && !append_piece(r, pc)) {
        r->oom = true;
        go = false;
    }
    if (go && !last && !r->paused && r->n_pieces >= HN_STREAM_PIECES) {
        hearth_engine_pause(r->engine, pc->id, true); /* no further piece until take() resumes it */
        r->paused = true;
    }
    r->n_prompt = pc->n_prompt;
    r->n_cached = pc->n_cached;
    r->n_generated = pc->n_generated;
    if (last) {
        r->finish = r->oom ? HEARTH_FINISH_ERROR : pc->finish;
        const char *err = r->oom ? "out of memory buffering the generated text" : pc->error;
        r->error = err ? strdup(err) : NULL;
    }
    /* the end always goes to JS: it drops the engine's reference */
    const bool call = (r->armed || last) && !r->queued;
    r->queued |= call;
    pthread_mutex_unlock(&m->mu);
    if (call) napi_call_threadsafe_function(m->tsfn, r, napi_tsfn_nonblocking); /* unbounded queue: cannot be full */
    return go;
}

/* -------------------------------------------------------- the JS thread -- */

void hn_stream_call_js(napi_env env, napi_value js_cb, void *context, void *data) {
    (void)js_cb;
    hn_model *m = context;
    hn_request *r = data;
    pthread_mutex_lock(&m->mu);
    const bool wake = r->armed, last = r->finish != HEARTH_FINISH_NONE;
    r->armed = false;
    r->queued = false;
    pthread_mutex_unlock(&m->mu);
    if (wake && --m->n_armed == 0 && env) napi_unref_threadsafe_function(env, m->tsfn);
    napi_value fn, undefined;
    /* env is NULL when Node tears the thread-safe function down at exit */
    if (wake && env && napi_get_reference_value(env, r->waker, &fn) == napi_ok && fn &&
        napi_get_undefined(env, &undefined) == napi_ok)
        napi_call_function(env, undefined, fn, 0, NULL, NULL);
    if (last && !r->ended) {
        r->ended = true;
        request_unref(env, r);
    }
}

static void request_finalize(napi_env env, void *data, void *hint) {
    (void)hint;
    hn_request *r = data;
    if (!r->ended) request_cancel(r); /* a stream dropped unfinished must not hold the engine */
    request_unref(env, r);
}

static hn_request *request_get(napi_env env, napi_value v) {
    bool ok = false;
    void *r = NULL;
    napi_valuetype t = napi_undefined;
    napi_typeof(env, v, &t);
    if (t != napi_external || napi_check_object_type_tag(env, v, &REQUEST_TAG, &ok) != napi_ok || !ok ||
        napi_get_value_external(env, v, &r) != napi_ok) {
        hn_throw(env, "ERR_INVALID_ARG", "not a hearth request handle");
        return NULL;
    }
    return r;
}

/* submit(model, prompt, messages, options, constraints, waker) -> request
 * handle. The prompt is a string, or messages the conversation as JSON
 * text (prompt is then ignored); constraints as hn_request_read() takes
 * them; waker() is called when take() would find something new. */
napi_value hn_submit(napi_env env, napi_callback_info info) {
    napi_value argv[6], handle = NULL;
    if (!hn_args(env, info, 6, argv)) return NULL;
    hn_model *m = hn_model_live(env, argv[0]);
    if (!m) return NULL;
    if (!m->engine) {
        hn_throw(env, "ERR_INVALID_ARG", "this is an embedding model: it cannot generate text; use embed()");
        return NULL;
    }
    hearth_request_params p;
    hn_request_input in;
    const bool ok = hn_request_read(env, argv[1], hn_is_nullish(env, argv[2]) ? NULL : argv[2], argv[3], argv[4], &p,
                                    &in);
    hn_request *r = ok ? calloc(1, sizeof *r) : NULL;
    if (!r) {
        if (ok) hn_throw(env, "ERR_OUT_OF_MEMORY", "out of memory");
        hn_request_input_free(&in);
        return NULL;
    }
    *r = (hn_request){.m = m, .engine = m->engine, .refs = 1};
    m->refs++;
    if (napi_create_reference(env, argv[5], 1, &r->waker) != napi_ok) {
        hn_napi_failed(env, "napi_create_reference");
        hn_request_input_free(&in);
        request_unref(env, r);
        return NULL;
    }
    p.on_piece = on_piece;
    p.user = r;
    const hearth_status st = hearth_engine_submit(m->engine, &p, &r->id);
    hn_request_input_free(&in);
    if (st != HEARTH_OK) {
        hn_throw_status(env, st);
        request_unref(env, r);
        return NULL;
    }
    r->refs++; /* the engine's, until its end reaches JS */
    if (napi_create_external(env, r, request_finalize, NULL, &handle) != napi_ok) {
        hn_napi_failed(env, "napi_create_external");
        request_finalize(env, r, NULL);
        return NULL;
    }
    if (napi_type_tag_object(env, handle, &REQUEST_TAG) != napi_ok) {
        hn_napi_failed(env, "napi_type_tag_object");
        return NULL; /* the external's finalizer cancels it */
    }
    return handle;
}

/* Under m->mu: the deltas not yet taken as [{index, id, name, arguments}]
 * (id and name null but in a call's first delta); the list is emptied. */
static napi_value take_calls(napi_env env, hn_request *r) {
    napi_value list, o, args;
    if (napi_create_array_with_length(env, r->n_calls, &list) != napi_ok) return NULL;
    for (size_t i = 0; i < r->n_calls; i++) {
        const hn_call *c = &r->calls[i];
        if (napi_create_object(env, &o) != napi_ok || !hn_set_num(env, o, "index", c->index) ||
            !hn_set_str(env, o, "id", c->id) || !hn_set_str(env, o, "name", c->name) ||
            napi_create_string_utf8(env, c->args ? c->args : "", c->args_len, &args) != napi_ok ||
            napi_set_named_property(env, o, "arguments", args) != napi_ok ||
            napi_set_element(env, list, (uint32_t)i, o) != napi_ok)
            return NULL;
    }
    clear_calls(r);
    return list;
}

/* take(request) -> null when nothing new (the waker will be called), else
 * {text, toolCalls, finish, error, promptTokens, cachedTokens,
 * completionTokens}: the text produced since the last take (possibly ''),
 * the tool-call deltas as take_calls() gives them, and finish null while
 * more follows, else 'stop' | 'length' | 'tool_calls' | 'grammar' |
 * 'cancelled' | 'error'. Taking resumes a request paused for a full
 * buffer. */
napi_value hn_take(napi_env env, napi_callback_info info) {
    napi_value argv[1], o, text = NULL, calls = NULL;
    if (!hn_args(env, info, 1, argv)) return NULL;
    hn_request *r = request_get(env, argv[0]);
    if (!r) return NULL;
    hn_model *m = r->m;
    pthread_mutex_lock(&m->mu);
    if (r->len == 0 && r->n_calls == 0 && r->finish == HEARTH_FINISH_NONE) {
        const bool arm = !r->armed;
        r->armed = true;
        pthread_mutex_unlock(&m->mu);
        /* a waiting request keeps the process alive until it is woken */
        if (arm && m->n_armed++ == 0) napi_ref_threadsafe_function(env, m->tsfn);
        napi_get_null(env, &o);
        return o;
    }
    napi_create_string_utf8(env, r->text ? r->text : "", r->len, &text);
    calls = take_calls(env, r);
    r->len = 0;
    r->n_pieces = 0;
    if (r->paused && m->engine) hearth_engine_pause(m->engine, r->id, false); /* under m->mu: after its pause */
    r->paused = false;
    const hearth_finish_reason finish = r->finish;
    const char *error = r->error; /* set with finish, then constant */
    const int32_t n_prompt = r->n_prompt, n_cached = r->n_cached, n_generated = r->n_generated;
    pthread_mutex_unlock(&m->mu);
    if (!text || !calls || napi_create_object(env, &o) != napi_ok ||
        napi_set_named_property(env, o, "text", text) != napi_ok ||
        napi_set_named_property(env, o, "toolCalls", calls) != napi_ok ||
        !hn_set_str(env, o, "finish", hearth_finish_reason_str(finish)) || !hn_set_str(env, o, "error", error) ||
        !hn_set_num(env, o, "promptTokens", n_prompt) || !hn_set_num(env, o, "cachedTokens", n_cached) ||
        !hn_set_num(env, o, "completionTokens", n_generated)) {
        hn_napi_failed(env, "building a take() result");
        return NULL;
    }
    return o;
}

/* cancel(request): stops it within one engine step; a finished one is left as it is. */
napi_value hn_cancel(napi_env env, napi_callback_info info) {
    napi_value argv[1];
    if (!hn_args(env, info, 1, argv)) return NULL;
    hn_request *r = request_get(env, argv[0]);
    if (r) request_cancel(r);
    return NULL;
}
