/* Request: one request submitted to a hearth_engine, as Python reads it.
 *
 * The engine calls on_piece on its own thread, which never takes the GIL: the
 * piece's text and tool-call deltas are appended to the request's buffers
 * under a mutex and a condition variable wakes a waiting reader. A reader
 * (Request.next) waits with the GIL released, in slices of 50 ms between
 * which pending signals are handled (Ctrl-C raises KeyboardInterrupt in the
 * main thread within a slice); asyncio readers watch a pipe (Request.fileno)
 * that gets a byte whenever something new arrives. A reader that falls
 * behind by PAUSE_AT bytes (text and call arguments) pauses its request in
 * the engine (hearth_engine_pause) until it reads, so memory stays bounded
 * and the engine's other requests go on. The shared state outlives whichever
 * of its two owners (the Python object, the engine until the request's last
 * piece) lets go last. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hp.h"

#define WAIT_SLICE_NS 50000000L
#define PAUSE_AT 1024

/* A tool-call delta not yet read: the deltas of one call that arrive
 * between two reads are joined into one (the arguments run on). */
typedef struct call_delta {
    int32_t index;
    char *id, *name; /* in the call's first delta; else NULL */
    char *args;      /* [args_len] the arguments' next bytes */
    size_t args_len;
} call_delta;

typedef struct stream {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;   /* the Request object, and the engine until the last piece */
    char *text; /* text not yet read */
    size_t len, cap;
    call_delta *calls; /* [n_calls] tool-call deltas not yet read */
    size_t n_calls, cap_calls;
    size_t call_bytes; /* the arguments' bytes in calls */
    hearth_finish_reason finish;
    char *error; /* the message of FINISH_ERROR */
    int32_t n_prompt, n_cached, n_generated;
    bool cancel;           /* the reader asked to stop: the next piece returns false */
    bool oom;              /* no memory for the text: the request ends as an error */
    bool reported;         /* the finish was returned to the reader */
    int pipe_r, pipe_w;    /* -1 until fileno() */
    bool notified;         /* a byte is in the pipe, not yet drained */
    hearth_engine *engine; /* for the piece callback's pause (the engine outlives its callbacks) */
    bool paused;           /* the request is paused until the reader takes the text */
} stream;

typedef struct hp_request {
    PyObject_HEAD hp_engine *engine; /* a strong reference */
    stream *s;
    uint64_t id;
} hp_request;

PyObject *hp_request_type;

/* Frees the deltas' strings and empties the list. */
static void clear_calls(stream *s) {
    for (size_t i = 0; i < s->n_calls; i++) {
        free(s->calls[i].id);
        free(s->calls[i].name);
        free(s->calls[i].args);
    }
    s->n_calls = 0;
    s->call_bytes = 0;
}

static void stream_release(stream *s) {
    pthread_mutex_lock(&s->mu);
    const bool last = --s->refs == 0;
    pthread_mutex_unlock(&s->mu);
    if (!last) return;
    if (s->pipe_r >= 0) close(s->pipe_r);
    if (s->pipe_w >= 0) close(s->pipe_w);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s->text);
    free(s->error);
    clear_calls(s);
    free(s->calls);
    free(s);
}

/* Called with s->mu held: tells an asyncio reader that something arrived. */
static void notify(stream *s) {
    pthread_cond_broadcast(&s->cv);
    if (s->pipe_w >= 0 && !s->notified) {
        const char byte = 1;
        s->notified = write(s->pipe_w, &byte, 1) == 1;
    }
}

/* With s->mu held: appends `d`, or joins it to the last delta when it
 * continues the same call. False when memory ran out. */
static bool add_call(stream *s, const hearth_tool_call_delta *d) {
    call_delta *last = s->n_calls ? &s->calls[s->n_calls - 1] : NULL;
    if (!last || last->index != d->index || d->id || d->name) {
        if (s->n_calls == s->cap_calls) {
            const size_t cap = s->cap_calls ? 2 * s->cap_calls : 4;
            call_delta *grown = realloc(s->calls, cap * sizeof *grown);
            if (!grown) return false;
            s->calls = grown;
            s->cap_calls = cap;
        }
        last = &s->calls[s->n_calls];
        *last = (call_delta){.index = d->index};
        if ((d->id && !(last->id = strdup(d->id))) || (d->name && !(last->name = strdup(d->name)))) {
            free(last->id);
            return false;
        }
        s->n_calls++;
    }
    char *args = realloc(last->args, last->args_len + d->arguments_len + 1);
    if (!args) return false;
    memcpy(args + last->args_len, d->arguments, d->arguments_len);
    last->args = args;
    last->args_len += d->arguments_len;
    s->call_bytes += d->arguments_len;
    return true;
}

/* With s->mu held: appends the piece's text and tool-call deltas. False
 * when memory ran out. */
static bool add_piece(stream *s, const hearth_piece *p) {
    if (p->len && s->len + p->len > s->cap) {
        size_t cap = s->cap ? s->cap : 256;
        while (cap < s->len + p->len) cap *= 2;
        char *text = realloc(s->text, cap);
        if (!text) return false;
        s->text = text;
        s->cap = cap;
    }
    if (p->len) memcpy(s->text + s->len, p->text, p->len);
    s->len += p->len;
    for (int32_t i = 0; i < p->n_tool_calls; i++)
        if (!add_call(s, &p->tool_calls[i])) return false;
    return true;
}

/* The engine's piece callback (engine thread; no Python calls). */
static bool on_piece(const hearth_piece *p, void *user) {
    stream *s = user;
    pthread_mutex_lock(&s->mu);
    if (!s->oom && !add_piece(s, p)) s->oom = true;
    s->n_prompt = p->n_prompt;
    s->n_cached = p->n_cached;
    s->n_generated = p->n_generated;
    if (p->finish != HEARTH_FINISH_NONE) {
        s->finish = s->oom ? HEARTH_FINISH_ERROR : p->finish;
        const char *error = s->oom ? "out of memory holding the generated text" : p->error;
        if (error) s->error = strdup(error);
    }
    const bool go_on = !s->oom && !s->cancel;
    const bool last = p->finish != HEARTH_FINISH_NONE;
    if (!last && !s->paused && s->len + s->call_bytes >= PAUSE_AT) {
        /* under s->mu, so the reader's resume (also under it) comes after */
        hearth_engine_pause(s->engine, p->id, true);
        s->paused = true;
    }
    notify(s);
    pthread_mutex_unlock(&s->mu);
    if (last) stream_release(s);
    return go_on;
}

PyObject *hp_request_submit(hp_engine *engine, hearth_request_params *p) {
    stream *s = calloc(1, sizeof *s);
    if (!s) return PyErr_NoMemory();
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->refs = 2;
    s->pipe_r = s->pipe_w = -1;
    s->engine = engine->engine;
    p->on_piece = on_piece;
    p->user = s;
    uint64_t id = 0;
    const hearth_status st = hearth_engine_submit(engine->engine, p, &id);
    if (st != HEARTH_OK) {
        s->refs = 1; /* the engine never calls back */
        stream_release(s);
        return hp_raise(st, NULL);
    }
    hp_request *r = PyObject_New(hp_request, (PyTypeObject *)hp_request_type);
    if (!r) {
        hearth_engine_cancel(engine->engine, id);
        stream_release(s);
        return NULL;
    }
    Py_INCREF(engine);
    r->engine = engine;
    r->s = s;
    r->id = id;
    return (PyObject *)r;
}

static void request_cancel_now(hp_request *r) {
    pthread_mutex_lock(&r->s->mu);
    r->s->cancel = true;
    pthread_mutex_unlock(&r->s->mu);
    if (r->engine->engine) hearth_engine_cancel(r->engine->engine, r->id);
}

static void request_dealloc(PyObject *self) {
    hp_request *r = (hp_request *)self;
    PyTypeObject *type = Py_TYPE(self);
    request_cancel_now(r);
    stream_release(r->s);
    Py_DECREF(r->engine);
    freefunc tp_free = (freefunc)PyType_GetSlot(type, Py_tp_free);
    tp_free(self);
    Py_DECREF(type);
}

/* With s->mu held: whether a reader has something to take. */
static bool ready(const stream *s) {
    return s->len > 0 || s->n_calls > 0 || (s->finish != HEARTH_FINISH_NONE && !s->reported);
}

/* With s->mu held: the unread tool-call deltas as a list of (index, id,
 * name, arguments), id and name None but in a call's first delta; the
 * list is emptied. */
static PyObject *take_calls(stream *s) {
    PyObject *calls = PyList_New((Py_ssize_t)s->n_calls);
    for (size_t i = 0; calls && i < s->n_calls; i++) {
        const call_delta *d = &s->calls[i];
        PyObject *args = PyUnicode_DecodeUTF8(d->args ? d->args : "", (Py_ssize_t)d->args_len, "replace");
        PyObject *item = args ? Py_BuildValue("(izzN)", (int)d->index, d->id, d->name, args) : NULL;
        if (!item) Py_CLEAR(calls);
        else PyList_SetItem(calls, (Py_ssize_t)i, item);
    }
    if (calls) clear_calls(s);
    return calls;
}

/* With r->s->mu held: (text, finish, error, n_prompt, n_cached,
 * n_generated, calls), finish and error None while the request runs and
 * calls as take_calls() gives them; the text and calls are taken, and a
 * request paused for them resumes. */
static PyObject *take(hp_request *r) {
    stream *s = r->s;
    PyObject *calls = take_calls(s);
    PyObject *text = calls ? PyUnicode_DecodeUTF8(s->text ? s->text : "", (Py_ssize_t)s->len, "replace") : NULL;
    if (!text) {
        Py_XDECREF(calls);
        return NULL;
    }
    s->len = 0;
    if (s->paused) {
        if (r->engine->engine) hearth_engine_pause(r->engine->engine, r->id, false);
        s->paused = false;
    }
    const char *finish = hearth_finish_reason_str(s->finish);
    if (finish) s->reported = true;
    return Py_BuildValue("(NzziiiN)", text, finish, s->error, s->n_prompt, s->n_cached, s->n_generated, calls);
}

/* Request.next(): blocks (GIL released) until new text or the end arrives;
 * after the end, returns it again at once. */
static PyObject *request_next(PyObject *self, PyObject *unused) {
    (void)unused;
    stream *s = ((hp_request *)self)->s;
    for (;;) {
        bool got;
        Py_BEGIN_ALLOW_THREADS pthread_mutex_lock(&s->mu);
        if (!ready(s) && s->finish == HEARTH_FINISH_NONE) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += WAIT_SLICE_NS;
            if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
            pthread_cond_timedwait(&s->cv, &s->mu, &until);
        }
        got = ready(s) || s->finish != HEARTH_FINISH_NONE;
        pthread_mutex_unlock(&s->mu);
        Py_END_ALLOW_THREADS if (got) break;
        if (PyErr_CheckSignals() < 0) return NULL;
    }
    pthread_mutex_lock(&s->mu);
    PyObject *out = take((hp_request *)self);
    pthread_mutex_unlock(&s->mu);
    return out;
}

/* Request.poll(): what next() would return, or None at once when nothing is
 * new; drains the pipe. */
static PyObject *request_poll(PyObject *self, PyObject *unused) {
    (void)unused;
    stream *s = ((hp_request *)self)->s;
    pthread_mutex_lock(&s->mu);
    if (s->notified) {
        char drain[64];
        while (read(s->pipe_r, drain, sizeof drain) > 0) continue;
        s->notified = false;
    }
    PyObject *out = NULL;
    if (ready(s)) out = take((hp_request *)self);
    else Py_INCREF(Py_None), out = Py_None;
    pthread_mutex_unlock(&s->mu);
    return out;
}

/* Request.fileno(): a descriptor that becomes readable when poll() has
 * something (for loop.add_reader); made at the first call. */
static PyObject *request_fileno(PyObject *self, PyObject *unused) {
    (void)unused;
    stream *s = ((hp_request *)self)->s;
    pthread_mutex_lock(&s->mu);
    if (s->pipe_r < 0) {
        int fds[2];
        if (pipe(fds) != 0) {
            pthread_mutex_unlock(&s->mu);
            return PyErr_SetFromErrno(PyExc_OSError);
        }
        for (int i = 0; i < 2; i++) {
            fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
            fcntl(fds[i], F_SETFD, FD_CLOEXEC);
        }
        s->pipe_r = fds[0];
        s->pipe_w = fds[1];
        if (ready(s)) notify(s);
    }
    const int fd = s->pipe_r;
    pthread_mutex_unlock(&s->mu);
    return PyLong_FromLong(fd);
}

/* Request.cancel(): the request ends within one engine step (its last piece
 * has finish "cancelled" unless it had already ended). */
static PyObject *request_cancel(PyObject *self, PyObject *unused) {
    (void)unused;
    request_cancel_now((hp_request *)self);
    Py_RETURN_NONE;
}

static PyObject *request_id(PyObject *self, void *closure) {
    (void)closure;
    return PyLong_FromUnsignedLongLong(((hp_request *)self)->id);
}

static PyMethodDef request_methods[] = {
    {"next", request_next, METH_NOARGS, "next() -> (text, finish, error, n_prompt, n_cached, n_generated, calls)"},
    {"poll", request_poll, METH_NOARGS, "poll() -> the same tuple, or None when nothing is new; never blocks"},
    {"fileno", request_fileno, METH_NOARGS, "fileno() -> int, readable when poll() has something"},
    {"cancel", request_cancel, METH_NOARGS, "cancel() -> None; the request ends within one step"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef request_getset[] = {
    {"id", request_id, NULL, "the engine's request id", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot request_slots[] = {
    {Py_tp_new, hp_no_new},
    {Py_tp_dealloc, request_dealloc},
    {Py_tp_methods, request_methods},
    {Py_tp_getset, request_getset},
    {Py_tp_doc, "A request queued on an Engine (made by Engine.submit)."},
    {0, NULL},
};

PyType_Spec hp_request_spec = {"hearth._hearth.Request", sizeof(hp_request), 0, Py_TPFLAGS_DEFAULT, request_slots};
