/* Ollama's POST /api/pull and DELETE /api/delete (docs/api.md of
 * ollama/ollama) over hearth's store (hearth_model_resolve() and
 * hearth_model_remove(), hearth.h "models by name").
 *
 * Names: one Ollama could pull ("NAME[:TAG]", "NAMESPACE/NAME[:TAG]") means
 * "ollama:NAME[:TAG]", the Ollama registry's, also where hearth's catalog
 * has the same name; "ollama:...", "hf.co/OWNER/REPO[:QUANT]"
 * (huggingface.co/...) and catalog names with a quant ("llama3.2:1b:Q8_0",
 * never an Ollama name) are taken as hearth takes them; paths and URLs are
 * refused, so that a client reaches only the store and the registries.
 *
 * A pull streams newline-delimited JSON as Ollama does: "pulling manifest",
 * "pulling WHAT" with total and completed as bytes arrive (at most one such
 * line waits for the client: a newer report replaces it), then "verifying
 * sha256 digest", "writing manifest" and "success" once the download is
 * verified and in the store; an error is a last line {"error": "..."}.
 * "digest" is left out of the progress lines: hearth's progress does not
 * report the blob's digest, and Ollama's CLI cuts its bar's label from it.
 * The download runs on a thread of its own; the connection parks while no
 * line waits (watch.h) and the thread wakes it. The client leaving or the
 * server stopping cancels the download at its next progress report (the
 * partial file stays for a resume). The pulled model is served at once
 * under the name the client gave (hl_models_add). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "buf.h"
#include "sse.h"
#include "server_impl.h"

#define HL_PULL_NAME_MAX 512

/* A pull as its connection and its thread share it. Lifetime: until both
 * the connection let go (closed) and the thread ended (done); whichever is
 * last frees it. The thread touches srv only under mu while !closed (the
 * server outlives its connections). */
typedef struct hl_pull {
    pthread_mutex_t mu;
    hl_server *srv;
    char name[HL_PULL_NAME_MAX];  /* as the client gave it (the served name) */
    char store[HL_PULL_NAME_MAX]; /* as hearth_model_resolve() takes it */
    /* under mu */
    hl_park park;       /* the connection while no line waits */
    hl_buf lines;       /* lines not yet handed to the connection */
    size_t progress_at; /* where the last line, a progress line, starts; SIZE_MAX: it is not one */
    bool reported;      /* a progress line was made */
    bool done;          /* the thread ended: its last line is in lines */
    bool closed;        /* the connection let go */
} hl_pull;

static bool has_prefix(const char *s, const char *prefix) { return strncasecmp(s, prefix, strlen(prefix)) == 0; }

/* The name hearth_model_resolve() takes for a name a client gave (see the
 * top); false with *err (400). */
static bool store_name(const char *name, char out[HL_PULL_NAME_MAX], hl_error *err) {
    const size_t len = strlen(name);
    const char *colon = strchr(name, ':');
    const bool as_is = has_prefix(name, "ollama:") || has_prefix(name, "hf.co/") ||
                       has_prefix(name, "huggingface.co/") || (colon && strchr(colon + 1, ':') && !strchr(name, '/'));
    if (!len || len + 7 >= HL_PULL_NAME_MAX) {
        hl_error_set(err, 400, "invalid_request_error", "invalid_value", "model", "'model' must be a model name");
        return false;
    }
    if (!as_is &&
        (strstr(name, "://") || strchr("/.~", name[0]) || (len >= 5 && !strcasecmp(name + len - 5, ".gguf")))) {
        hl_error_set(err, 400, "invalid_request_error", "invalid_value", "model",
                     "'%s' is a path or URL: give a model name (NAME[:TAG], hf.co/OWNER/REPO[:QUANT])", name);
        return false;
    }
    snprintf(out, HL_PULL_NAME_MAX, "%s%s", as_is ? "" : "ollama:", name);
    return true;
}

/* The body's "model" (or "name") into name; false with *err. */
static bool read_name(const cJSON *req, char name[HL_PULL_NAME_MAX], hl_error *err) {
    const char *s = NULL;
    if (!hl_json_str(req, "model", &s, err) || (!s && !hl_json_str(req, "name", &s, err))) return false;
    if (!s) {
        hl_error_set(err, 400, "invalid_request_error", "missing_field", "model", "'model' is required");
        return false;
    }
    snprintf(name, HL_PULL_NAME_MAX, "%s", s);
    return true;
}

/* A failed hearth_model_resolve() as the client sees it: the registry's 404
 * is 404, a name hearth cannot take 400, anything else 500. */
static void fetch_error(hl_error *err, hearth_status st, const char *msg) {
    const unsigned status = st == HEARTH_ERR_INVALID_ARG                          ? 400
                            : st == HEARTH_ERR_NETWORK && strstr(msg, "HTTP 404") ? 404
                                                                                  : 500;
    hl_error_set(err, status, status == 500 ? "server_error" : "invalid_request_error", NULL, "model", "%s", msg);
}

/* Serves the pulled model at once; false with *err when the list is full. */
static bool serve_pulled(hl_server *srv, const char *name, const char *path, hl_error *err) {
    if (hl_models_add(srv->models, name, path)) return true;
    hl_error_set(err, 500, "server_error", NULL, NULL,
                 "'%s' is in the store, but this server serves no more models (restart it to serve it)", name);
    return false;
}

/* ------------------------------------------------------- stream false -- */

typedef struct hl_pull_wait {
    hl_server *srv;
    int fd;
    bool gone; /* the client left */
} hl_pull_wait;

/* On the worker: goes on while the client is there and the server runs. */
static bool wait_progress(const hearth_progress *hp, void *user) {
    (void)hp;
    hl_pull_wait *w = user;
    w->gone = w->gone || hl_peer_gone(w->fd);
    return !w->gone && !atomic_load(&w->srv->stopping);
}

static void pull_whole(hl_call *call, hl_reply *rep, const char *name, const char *store) {
    hl_pull_wait w = {.srv = call->srv, .fd = call->fd};
    hearth_fetch_params fp = hearth_fetch_default_params();
    fp.progress = wait_progress;
    fp.progress_user = &w;
    char *path = NULL;
    hl_error err = {0};
    const hearth_status st = hearth_model_resolve(store, &fp, &path);
    if (st == HEARTH_ERR_CANCELLED && w.gone) {
        *rep = (hl_reply){.status = 0, .api = rep->api};
        return;
    }
    if (st == HEARTH_ERR_CANCELLED)
        hl_error_set(&err, 503, "server_error", "server_shutting_down", NULL, "the server is shutting down");
    else if (st != HEARTH_OK) fetch_error(&err, st, hearth_last_error());
    const bool ok = st == HEARTH_OK && serve_pulled(call->srv, name, path, &err);
    hearth_free(path);
    if (!ok) {
        hl_reply_error(rep, &err);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    if (o && !cJSON_AddStringToObject(o, "status", "success")) {
        cJSON_Delete(o);
        o = NULL;
    }
    hl_reply_json(rep, 200, o);
}

/* ------------------------------------------------------------ stream -- */

/* Under mu: appends one line (a progress line replaces the waiting one)
 * and wakes the connection. */
static void put_line(hl_pull *p, cJSON *line, bool progress) {
    if (progress && p->progress_at != SIZE_MAX) p->lines.len = p->progress_at;
    const size_t at = p->lines.len;
    if (hl_stream_frame(&p->lines, line, HL_FRAMING_NDJSON)) p->progress_at = progress ? at : SIZE_MAX;
    else p->lines.len = at; /* out of memory: the line is lost, the stream goes on */
    hl_park_wake(&p->park);
}

static void put_status(hl_pull *p, const char *status) {
    cJSON *o = cJSON_CreateObject();
    if (o && !cJSON_AddStringToObject(o, "status", status)) {
        cJSON_Delete(o);
        o = NULL;
    }
    put_line(p, o, false);
}

static void put_error(hl_pull *p, const char *msg) {
    cJSON *o = cJSON_CreateObject();
    if (o && !cJSON_AddStringToObject(o, "error", msg)) {
        cJSON_Delete(o);
        o = NULL;
    }
    put_line(p, o, false);
}

/* Under mu: {"status": "pulling WHAT", "total": N, "completed": K} (total
 * once known). */
static void put_progress(hl_pull *p, const char *what, uint64_t done, uint64_t total) {
    char status[HL_PULL_NAME_MAX + 16];
    snprintf(status, sizeof status, "pulling %s", what);
    cJSON *o = cJSON_CreateObject();
    bool ok = o && cJSON_AddStringToObject(o, "status", status) &&
              (!total || cJSON_AddNumberToObject(o, "total", (double)total)) &&
              cJSON_AddNumberToObject(o, "completed", (double)done);
    if (!ok) {
        cJSON_Delete(o);
        o = NULL;
    }
    put_line(p, o, true);
    p->reported = true;
}

/* On the pull's thread: queues the report; false (cancel) once the client
 * left or the server stops. */
static bool on_progress(const hearth_progress *hp, void *user) {
    hl_pull *p = user;
    pthread_mutex_lock(&p->mu);
    const bool go = !p->closed && !p->park.gone && !atomic_load(&p->srv->stopping);
    if (go) put_progress(p, hp->what, hp->done, hp->total);
    pthread_mutex_unlock(&p->mu);
    return go;
}

/* Under mu, with the connection there: the lines after the download. */
static void put_outcome(hl_pull *p, hearth_status st, const char *path, const char *msg) {
    hl_error err = {0};
    if (st == HEARTH_ERR_CANCELLED && atomic_load(&p->srv->stopping)) {
        put_error(p, "the server is shutting down");
    } else if (st != HEARTH_OK) {
        put_error(p, msg);
    } else {
        struct stat sb;
        /* already in the store: no download reported its bytes */
        if (!p->reported && stat(path, &sb) == 0) put_progress(p, p->name, (uint64_t)sb.st_size, (uint64_t)sb.st_size);
        put_status(p, "verifying sha256 digest");
        put_status(p, "writing manifest");
        if (serve_pulled(p->srv, p->name, path, &err)) put_status(p, "success");
        else put_error(p, err.message);
    }
}

static void pull_destroy(hl_pull *p) {
    hl_buf_free(&p->lines);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

static void *pull_main(void *arg) {
    hl_pull *p = arg;
    hearth_fetch_params fp = hearth_fetch_default_params();
    fp.progress = on_progress;
    fp.progress_user = p;
    char *path = NULL;
    const hearth_status st = hearth_model_resolve(p->store, &fp, &path);
    pthread_mutex_lock(&p->mu);
    if (!p->closed) put_outcome(p, st, path, hearth_last_error());
    p->done = true;
    if (!p->closed) hl_park_wake(&p->park);
    const bool last = p->closed;
    pthread_mutex_unlock(&p->mu);
    hearth_free(path);
    if (last) pull_destroy(p);
    return NULL;
}

/* On an event thread: hands on the waiting lines, or parks. */
static hl_sse_step pull_next(void *user, hl_buf *out) {
    hl_pull *p = user;
    pthread_mutex_lock(&p->mu);
    hl_sse_step step;
    if (p->lines.len) {
        step = hl_buf_add(out, p->lines.p, p->lines.len) ? HL_SSE_MORE : HL_SSE_ABORT;
        hl_buf_clear(&p->lines);
        p->progress_at = SIZE_MAX;
    } else if (p->done) step = HL_SSE_END;
    else if (p->park.gone) step = HL_SSE_ABORT;
    else {
        hl_park_suspend(&p->park);
        step = HL_SSE_WAIT;
    }
    pthread_mutex_unlock(&p->mu);
    return step;
}

/* The connection lets go: a running pull cancels at its next report. */
static void pull_free(void *user) {
    hl_pull *p = user;
    hl_park_fini(&p->park);
    pthread_mutex_lock(&p->mu);
    p->closed = true;
    const bool last = p->done;
    pthread_mutex_unlock(&p->mu);
    if (last) pull_destroy(p);
}

/* Starts the pull's thread (detached); false when it cannot be had. */
static bool start_thread(hl_pull *p) {
    pthread_attr_t attr;
    pthread_t t;
    if (pthread_attr_init(&attr) != 0) return false;
    const bool ok = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0 &&
                    pthread_create(&t, &attr, pull_main, p) == 0;
    pthread_attr_destroy(&attr);
    return ok;
}

static void pull_stream(hl_call *call, hl_reply *rep, const char *name, const char *store) {
    hl_error err = {0};
    hl_pull *p = calloc(1, sizeof *p);
    if (p && pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p);
        p = NULL;
    }
    if (!p) {
        hl_error_set(&err, 500, "server_error", NULL, NULL, "out of memory");
        hl_reply_error(rep, &err);
        return;
    }
    p->srv = call->srv;
    p->progress_at = SIZE_MAX;
    snprintf(p->name, sizeof p->name, "%s", name);
    snprintf(p->store, sizeof p->store, "%s", store);
    hl_park_init(&p->park, call->srv->watch, call->conn, call->fd, &p->mu);
    pthread_mutex_lock(&p->mu);
    put_status(p, "pulling manifest");
    pthread_mutex_unlock(&p->mu);
    if (!start_thread(p)) {
        hl_park_fini(&p->park);
        pull_destroy(p);
        hl_error_set(&err, 500, "server_error", NULL, NULL, "cannot start a thread for the pull");
        hl_reply_error(rep, &err);
        return;
    }
    if (!hl_sse_reply(rep, pull_next, pull_free, p, HL_FRAMING_NDJSON)) {
        hl_error_set(&err, 500, "server_error", NULL, NULL, "out of memory");
        hl_reply_error(rep, &err);
    }
}

void hl_handle_ollama_pull(hl_call *call, hl_reply *rep) {
    hl_error err = {0};
    char name[HL_PULL_NAME_MAX], store[HL_PULL_NAME_MAX];
    bool stream = true, insecure = false; /* insecure: hearth's downloads are verified by digest either way */
    cJSON *req = hl_json_parse_object(call->body, call->len, &err);
    const bool ok = req && read_name(req, name, &err) && store_name(name, store, &err) &&
                    hl_json_bool(req, "stream", &stream, &err) && hl_json_bool(req, "insecure", &insecure, &err);
    cJSON_Delete(req);
    if (!ok) hl_reply_error(rep, &err);
    else if (stream) pull_stream(call, rep, name, store);
    else pull_whole(call, rep, name, store);
}

/* ------------------------------------------------------------ delete -- */

static bool same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* The file of the model served under `name` into path; false when none is. */
static bool served_path(hl_models *ms, const char *name, char *path, size_t size) {
    hl_model_info *list;
    size_t n;
    bool found = false;
    if (!hl_models_list(ms, &list, &n)) return false;
    for (size_t i = 0; i < n && !found; i++)
        if (!strcmp(list[i].name, name)) found = (size_t)snprintf(path, size, "%s", list[i].path) < size;
    hl_models_list_end(ms, list, n);
    return found;
}

/* The name hearth's store lists for the file at path into out; false when
 * the store does not hold it. */
static bool stored_name(const char *path, char out[HL_PULL_NAME_MAX]) {
    hearth_stored_model *stored = NULL;
    size_t n = 0;
    bool found = false;
    if (hearth_model_list(NULL, &stored, &n) != HEARTH_OK) return false;
    for (size_t i = 0; i < n && !found; i++)
        if (same_file(stored[i].path, path))
            found = (size_t)snprintf(out, HL_PULL_NAME_MAX, "%s", stored[i].name) < HL_PULL_NAME_MAX;
    hearth_model_list_free(stored, n);
    return found;
}

/* Stops serving every name of the file at path; false when requests hold
 * one (the names before it are no longer served). */
static bool forget_file(hl_models *ms, const char *path) {
    hl_model_info *list;
    size_t n;
    if (!hl_models_list(ms, &list, &n)) return false;
    const char **names = calloc(n ? n : 1, sizeof *names);
    size_t k = 0;
    for (size_t i = 0; names && i < n; i++)
        if (same_file(list[i].path, path)) names[k++] = list[i].name; /* entries never move or go */
    hl_models_list_end(ms, list, n);
    bool ok = names != NULL;
    for (size_t i = 0; ok && i < k; i++) ok = hl_models_forget(ms, names[i]);
    free(names);
    return ok;
}

/* The file `name` stands for: the served model's (*served), else the
 * store's (found without the network); false with *err when neither has it. */
static bool model_file(hl_models *ms, const char *name, char *path, size_t size, bool *served, hl_error *err) {
    *served = served_path(ms, name, path, size);
    if (*served) return true;
    char store[HL_PULL_NAME_MAX], *found = NULL;
    if (!store_name(name, store, err)) return false;
    hearth_fetch_params fp = hearth_fetch_default_params();
    fp.offline = true;
    const bool ok = hearth_model_resolve(store, &fp, &found) == HEARTH_OK &&
                    (size_t)snprintf(path, size, "%s", found) < size;
    hearth_free(found);
    if (!ok) hl_error_set(err, 404, "invalid_request_error", "model_not_found", "model", "model '%s' not found", name);
    return ok;
}

/* Stops serving the model `name` and deletes it from the store; false
 * with *err. */
static bool delete_model(hl_models *ms, const char *name, hl_error *err) {
    char path[4096], stored[HL_PULL_NAME_MAX];
    bool served;
    if (!model_file(ms, name, path, sizeof path, &served, err)) return false;
    if (!stored_name(path, stored)) {
        if (served)
            hl_error_set(err, 400, "invalid_request_error", "invalid_value", "model",
                         "'%s' is served from %s, which is not in hearth's store: only models pulled into the store "
                         "are deleted",
                         name, path);
        else hl_error_set(err, 404, "invalid_request_error", "model_not_found", "model", "model '%s' not found", name);
        return false;
    }
    if (!forget_file(ms, path)) {
        hl_error_set(err, 409, "invalid_request_error", "model_in_use", "model",
                     "model '%s' is in use by running requests: delete it once they end", name);
        return false;
    }
    if (hearth_model_remove(stored, NULL) != HEARTH_OK) {
        hl_error_set(err, 500, "server_error", NULL, "model", "%s", hearth_last_error());
        return false;
    }
    fprintf(stderr, "hearth: deleted %s (%s)\n", name, path);
    return true;
}

void hl_handle_ollama_delete(hl_call *call, hl_reply *rep) {
    hl_error err = {0};
    char name[HL_PULL_NAME_MAX];
    cJSON *req = hl_json_parse_object(call->body, call->len, &err);
    const bool ok = req && read_name(req, name, &err);
    cJSON_Delete(req);
    if (ok && delete_model(call->srv->models, name, &err))
        *rep = (hl_reply){.status = 200, .api = rep->api, .content_type = "application/json"};
    else hl_reply_error(rep, &err);
}
