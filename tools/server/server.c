/* The HTTP daemon: listening, routing, API keys, the body limit, turning a
 * handler's hl_reply into an MHD response, and a graceful stop.
 *
 * Connections cost no thread. libmicrohttpd's event threads (epoll) read
 * requests and write answers; a request whose body is complete is answered
 * at once when its route is quick (it only reads state), else its
 * connection is suspended and a worker (pool.h) runs the handler, then
 * resumes it to send the answer. A stream's content reader runs on the event
 * thread and parks the connection while the engine has no piece for it; the
 * piece wakes it (job.c, watch.h). The watch thread enforces the read
 * deadline and notices parked clients that leave.
 *
 * A body whose declared Content-Length is over max_body gets 413 before it
 * is read when the client asked for 100-continue or it is over
 * HL_DRAIN_MAX (MHD then closes); any other error is answered after the
 * body is read, so that a client never has its connection reset under an
 * unread upload. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <limits.h>
#include <math.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "oai_response.h"
#include "server_impl.h"

/* MHD's event threads: they only move bytes and build frames. */
#define HL_EVENT_THREADS 2
/* Requests that may wait for a worker; past this they get 503. */
#define HL_MAX_QUEUED 1024
/* File descriptors kept for everything but connections (model files,
 * epoll and wake-up descriptors, logs). */
#define HL_FD_RESERVE 64
/* The largest declared body over --max-body that is read (and dropped)
 * before its 413; a larger one is answered at once. */
#define HL_DRAIN_MAX (64ull << 20)
/* How long hl_server_stop waits for running requests to send their end. */
#define HL_STOP_GRACE_S 5.0

/* Which model a route serves. */
typedef enum hl_route_model {
    HL_MODEL_NONE,    /* none, or the list */
    HL_MODEL_CURRENT, /* the most recently used loaded one (state and counters) */
    HL_MODEL_NAMED,   /* the body's "model" (Ollama's /api/show: "name"), loaded if need be; none: the first */
} hl_route_model;

typedef struct hl_route {
    const char *path;
    const char *method;
    hl_handler_fn fn;
    bool open;  /* served without an API key */
    hl_api api; /* whose shapes it answers in */
    bool quick; /* answered on the event thread: reads state, never waits */
    hl_route_model model;
} hl_route;

#define OPENAI HL_API_OPENAI
#define OLLAMA HL_API_OLLAMA
#define ANTHROPIC HL_API_ANTHROPIC
#define QUICK true
#define POOL false
#define NONE HL_MODEL_NONE
#define CURRENT HL_MODEL_CURRENT
#define NAMED HL_MODEL_NAMED
static const hl_route routes[] = {
    {"/health", "GET", hl_handle_health, true, OPENAI, QUICK, NONE},
    {"/metrics", "GET", hl_handle_metrics, false, OPENAI, QUICK, CURRENT},
    {"/slots", "GET", hl_handle_slots, false, OPENAI, QUICK, CURRENT},
    {"/v1/models", "GET", hl_handle_models, false, OPENAI, QUICK, NONE},
    {"/v1/chat/completions", "POST", hl_handle_chat, false, OPENAI, POOL, NAMED},
    {"/v1/completions", "POST", hl_handle_completions, false, OPENAI, POOL, NAMED},
    {"/v1/responses", "POST", hl_handle_responses, false, OPENAI, POOL, NAMED},
    {"/v1/embeddings", "POST", hl_handle_embeddings, false, OPENAI, POOL, NAMED},
    {"/v1/rerank", "POST", hl_handle_rerank, false, OPENAI, POOL, NAMED},
    {"/v1/reranking", "POST", hl_handle_rerank, false, OPENAI, POOL, NAMED},
    {"/rerank", "POST", hl_handle_rerank, false, OPENAI, POOL, NAMED},
    {"/reranking", "POST", hl_handle_rerank, false, OPENAI, POOL, NAMED},
    /* llama-server's own, and its un-prefixed aliases of OpenAI's */
    {"/completion", "POST", hl_handle_completion, false, OPENAI, POOL, NAMED},
    {"/infill", "POST", hl_handle_infill, false, OPENAI, POOL, NAMED},
    {"/props", "GET", hl_handle_props, false, OPENAI, QUICK, CURRENT},
    {"/apply-template", "POST", hl_handle_apply_template, false, OPENAI, POOL, NAMED},
    {"/chat/completions", "POST", hl_handle_chat, false, OPENAI, POOL, NAMED},
    {"/completions", "POST", hl_handle_completions, false, OPENAI, POOL, NAMED},
    {"/models", "GET", hl_handle_models, false, OPENAI, QUICK, NONE},
    {"/tokenize", "POST", hl_handle_tokenize, false, OPENAI, POOL, NAMED},
    {"/detokenize", "POST", hl_handle_detokenize, false, OPENAI, POOL, NAMED},
    {"/v1/messages", "POST", hl_handle_anthropic_messages, false, ANTHROPIC, POOL, NAMED},
    {"/v1/messages/count_tokens", "POST", hl_handle_anthropic_count_tokens, false, ANTHROPIC, POOL, NAMED},
    /* Ollama's API; / and /api/version answer without a key, as clients
     * probe them to find the server */
    {"/", "GET", hl_handle_ollama_root, true, OLLAMA, QUICK, NONE},
    {"/api/version", "GET", hl_handle_ollama_version, true, OLLAMA, QUICK, NONE},
    {"/api/tags", "GET", hl_handle_ollama_tags, false, OLLAMA, QUICK, NONE},
    {"/api/ps", "GET", hl_handle_ollama_ps, false, OLLAMA, QUICK, NONE},
    {"/api/show", "POST", hl_handle_ollama_show, false, OLLAMA, POOL, NAMED},
    {"/api/chat", "POST", hl_handle_ollama_chat, false, OLLAMA, POOL, NAMED},
    {"/api/generate", "POST", hl_handle_ollama_generate, false, OLLAMA, POOL, NAMED},
    {"/api/embed", "POST", hl_handle_ollama_embed, false, OLLAMA, POOL, NAMED},
    {"/api/embeddings", "POST", hl_handle_ollama_embeddings, false, OLLAMA, POOL, NAMED},
    {"/api/pull", "POST", hl_handle_ollama_pull, false, OLLAMA, POOL, NONE},
    {"/api/delete", "DELETE", hl_handle_ollama_delete, false, OLLAMA, POOL, NONE},
};
#undef OPENAI
#undef OLLAMA
#undef ANTHROPIC
#undef QUICK
#undef POOL
#undef NONE
#undef CURRENT
#undef NAMED

typedef enum hl_stage {
    HL_STAGE_READ,     /* headers in; the body arriving */
    HL_STAGE_RUNNING,  /* a worker runs the handler; the connection is suspended */
    HL_STAGE_ANSWERED, /* rep holds the answer to send */
} hl_stage;

/* One request, from its headers to its completion (MHD's con_cls). */
typedef struct hl_request {
    hl_task task; /* first: the worker's task is the request */
    hl_server *srv;
    struct MHD_Connection *conn;
    hl_stage stage;
    hl_reply rep;        /* ANSWERED */
    hl_served *served;   /* the model held for the request (or its stream) */
    double keep_alive_s; /* Ollama's keep_alive for it; NAN: none given */
    const hl_route *route;
    bool preflight;    /* a CORS preflight (OPTIONS) of a known path */
    hl_api api;        /* the route's, or by the path's prefix for an unknown one */
    hl_error err;      /* decided before the body is read: 404, 405, 401, 413 */
    const char *allow; /* with 405 */
    hl_buf body;
    double t0;       /* monotonic seconds at arrival */
    unsigned status; /* what was answered, for the log */
    char line[160];  /* "METHOD /path", for the log */
} hl_request;

uint64_t hl_server_unique(hl_server *srv) {
    /* splitmix64 of a counter: distinct for every call, not guessable in order */
    uint64_t z = srv->salt + 0x9E3779B97F4A7C15ull * (atomic_fetch_add(&srv->counter, 1) + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void hl_reply_error(hl_reply *rep, const hl_error *e) {
    *rep = (hl_reply){.status = e->status, .api = rep->api, .content_type = "application/json"};
    rep->body = rep->api == HL_API_OLLAMA      ? hl_ollama_error_body(e, &rep->len)
                : rep->api == HL_API_ANTHROPIC ? hl_anthropic_error_body(e, &rep->len)
                                               : hl_oai_error_body(e, &rep->len);
    if (!rep->body) rep->status = 0; /* no memory even for the error: drop the connection */
    if (e->status == 503) rep->retry_after = 1;
}

void hl_reply_json(hl_reply *rep, unsigned status, cJSON *json) {
    char *s = json ? cJSON_PrintUnformatted(json) : NULL;
    cJSON_Delete(json);
    if (!s) {
        hl_error e;
        hl_error_set(&e, 500, "server_error", NULL, NULL, "out of memory");
        hl_reply_error(rep, &e);
        return;
    }
    *rep = (hl_reply){
        .status = status, .api = rep->api, .content_type = "application/json", .body = s, .len = strlen(s)};
}

/* Equal strings, in a time that depends on the key's length only, so the
 * answer's timing does not tell an attacker how much of a key was right. */
static bool same_key(const char *given, const char *key) {
    size_t n_given = strlen(given), n_key = strlen(key);
    unsigned char diff = n_given != n_key;
    for (size_t i = 0; i < n_key; i++) diff |= (unsigned char)key[i] ^ (unsigned char)(i < n_given ? given[i] : 0);
    return diff == 0;
}

/* The key of "Authorization: Bearer KEY", or of "x-api-key: KEY" (Anthropic's clients). */
static bool authorized(const hl_server *srv, struct MHD_Connection *conn) {
    if (srv->cfg.n_api_keys == 0) return true;
    const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    const char *x = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "x-api-key");
    const char *given = h && strncasecmp(h, "Bearer ", 7) == 0 ? h + 7 : x ? x : "";
    while (*given == ' ') given++;
    bool ok = false;
    for (size_t i = 0; i < srv->cfg.n_api_keys; i++) ok |= same_key(given, srv->cfg.api_keys[i]);
    return ok;
}

static void too_large(const hl_server *srv, hl_request *r) {
    hl_buf_free(&r->body);
    hl_error_set(&r->err, 413, "invalid_request_error", "request_too_large", NULL,
                 "the request body is over the server's limit of %zu bytes (--max-body)", srv->cfg.max_body);
}

/* At the headers: which route, and whether the request may go on. */
static void admit(const hl_server *srv, struct MHD_Connection *conn, const char *url, const char *method,
                  hl_request *r) {
    bool path_known = false;
    r->api = strncmp(url, "/api/", 5) == 0 ? HL_API_OLLAMA : HL_API_OPENAI;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        if (strcmp(url, routes[i].path) != 0) continue;
        path_known = true;
        r->api = routes[i].api;
        r->allow = routes[i].method;
        if (strcmp(method, routes[i].method) == 0) r->route = &routes[i];
    }
    /* a browser's GET / (Accept: text/html) gets the chat page instead of Ollama's text */
    static const hl_route webui = {"/", "GET", hl_handle_webui, true, HL_API_OPENAI, true, HL_MODEL_NONE};
    const char *accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    if (r->route && r->route->fn == hl_handle_ollama_root && !srv->cfg.no_webui && accept &&
        strstr(accept, "text/html")) {
        r->route = &webui;
        r->api = webui.api;
    }
    r->preflight = path_known && srv->cfg.n_cors_origins && !strcmp(method, "OPTIONS");
    if (r->preflight) return; /* answered without a key: browsers send none with it */
    const char *length = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    char *end;
    errno = 0;
    unsigned long long declared = length ? strtoull(length, &end, 10) : 0;
    if (length && (errno == ERANGE || declared > srv->cfg.max_body)) too_large(srv, r);
    else if (!path_known)
        hl_error_set(&r->err, 404, "invalid_request_error", "not_found", NULL, "no endpoint %s %s", method, url);
    else if (!r->route)
        hl_error_set(&r->err, 405, "invalid_request_error", "method_not_allowed", NULL, "%s takes %s, not %s", url,
                     r->allow, method);
    else if (!r->route->open && !authorized(srv, conn))
        hl_error_set(&r->err, 401, "invalid_request_error", "invalid_api_key", NULL,
                     "a valid API key is needed: send the header 'Authorization: Bearer KEY' (or 'x-api-key: KEY')");
}

static void read_body(const hl_server *srv, hl_request *r, const char *data, size_t size) {
    if (r->err.status) return; /* dropped: the answer is already decided */
    if (size > srv->cfg.max_body - r->body.len) too_large(srv, r);
    else if (!hl_buf_add(&r->body, data, size)) {
        hl_buf_free(&r->body);
        hl_error_set(&r->err, 500, "server_error", NULL, NULL, "out of memory reading the request body");
    }
}

/* The Origin header when --cors-origin allows it ("*" allows any), else NULL. */
static const char *allowed_origin(const hl_server *srv, struct MHD_Connection *conn) {
    const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
    for (size_t i = 0; origin && i < srv->cfg.n_cors_origins; i++)
        if (!strcmp(srv->cfg.cors_origins[i], "*") || !strcmp(srv->cfg.cors_origins[i], origin)) return origin;
    return NULL;
}

/* CORS headers (the Fetch standard's): the allowed origin on every answer,
 * and on a preflight the methods (the path's and OPTIONS), the headers the
 * browser asked for, and how long it may cache that. */
static bool add_cors(const hl_server *srv, struct MHD_Connection *conn, struct MHD_Response *res, const hl_request *r) {
    const char *origin = allowed_origin(srv, conn);
    if (!origin) return true;
    bool ok = MHD_add_response_header(res, "Access-Control-Allow-Origin", origin) == MHD_YES &&
              MHD_add_response_header(res, "Vary", "Origin") == MHD_YES;
    if (!ok || !r->preflight) return ok;
    char methods[64];
    snprintf(methods, sizeof methods, "%s, OPTIONS", r->allow ? r->allow : "GET, POST");
    const char *asked = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Access-Control-Request-Headers");
    return MHD_add_response_header(res, "Access-Control-Allow-Methods", methods) == MHD_YES &&
           MHD_add_response_header(res, "Access-Control-Allow-Headers",
                                   asked ? asked : "Authorization, Content-Type, x-api-key") == MHD_YES &&
           MHD_add_response_header(res, "Access-Control-Max-Age", "600") == MHD_YES;
}

/* A stream and the model it holds: the model is let go after the stream's
 * own memory, when MHD is done with the response (which is after
 * NOTIFY_COMPLETED). */
typedef struct hl_held_stream {
    hl_reply rep;
    hl_models *models;
    hl_served *served;
    double keep_alive_s;
} hl_held_stream;

static ssize_t held_read(void *cls, uint64_t pos, char *buf, size_t max) {
    hl_held_stream *h = cls;
    return h->rep.reader(h->rep.reader_cls, pos, buf, max);
}

static void held_free(void *cls) {
    hl_held_stream *h = cls;
    h->rep.reader_free(h->rep.reader_cls);
    hl_models_release(h->models, h->served, h->keep_alive_s);
    free(h);
}

/* MHD's response for rep (which it takes); a stream takes the request's model. */
static struct MHD_Response *make_response(hl_server *srv, hl_reply *rep, hl_request *r) {
    if (!rep->reader) return MHD_create_response_from_buffer(rep->len, rep->body, MHD_RESPMEM_MUST_FREE);
    struct MHD_Response *res = NULL;
    hl_held_stream *h = r->served ? malloc(sizeof *h) : NULL;
    if (h) {
        *h = (hl_held_stream){.rep = *rep, .models = srv->models, .served = r->served, .keep_alive_s = r->keep_alive_s};
        r->served = NULL;
        res = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, held_read, h, held_free);
        if (!res) held_free(h);
    } else if (!r->served) {
        res = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, rep->reader, rep->reader_cls,
                                                rep->reader_free);
        if (!res) rep->reader_free(rep->reader_cls);
    } else {
        rep->reader_free(rep->reader_cls); /* no memory: the model is let go at NOTIFY_COMPLETED */
    }
    return res;
}

static enum MHD_Result send_reply(hl_server *srv, struct MHD_Connection *conn, hl_reply *rep, hl_request *r) {
    if (rep->status == 0) {
        free(rep->body);
        return MHD_NO; /* closes the connection */
    }
    struct MHD_Response *res = make_response(srv, rep, r);
    if (!res) {
        if (!rep->reader) free(rep->body);
        return MHD_NO;
    }
    char retry[16];
    snprintf(retry, sizeof retry, "%u", rep->retry_after);
    bool ok = MHD_add_response_header(res, MHD_HTTP_HEADER_CONTENT_TYPE, rep->content_type) == MHD_YES &&
              (!rep->retry_after || MHD_add_response_header(res, MHD_HTTP_HEADER_RETRY_AFTER, retry) == MHD_YES) &&
              (!rep->allow || MHD_add_response_header(res, MHD_HTTP_HEADER_ALLOW, rep->allow) == MHD_YES) &&
              (!rep->reader || MHD_add_response_header(res, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache") == MHD_YES) &&
              (!atomic_load(&srv->stopping) ||
               MHD_add_response_header(res, MHD_HTTP_HEADER_CONNECTION, "close") == MHD_YES) &&
              add_cors(srv, conn, res, r);
    enum MHD_Result queued = ok ? MHD_queue_response(conn, rep->status, res) : MHD_NO;
    MHD_destroy_response(res);
    return queued;
}

/* Why a request whose body is complete cannot be served now, in e; false
 * when it can. */
static bool refused(hl_server *srv, const hl_request *r, hl_error *e) {
    if (r->err.status) *e = r->err;
    else if (atomic_load(&srv->stopping))
        hl_error_set(e, 503, "server_error", "server_shutting_down", NULL, "the server is shutting down");
    else if (!atomic_load(&srv->ready) && (r->route->model != HL_MODEL_NONE || r->route->fn == hl_handle_health))
        hl_error_set(e, 503, "server_error", "model_loading", NULL, "the model is loading: retry shortly");
    else return false;
    return true;
}

/* The model the request names ("model"; Ollama's /api/show may say "name")
 * and Ollama's keep_alive for it, read from the body; a body that is not
 * JSON names none (its handler says what is wrong with it). */
static bool named_model(hl_request *r, char name[256], hl_error *e) {
    name[0] = '\0';
    cJSON *body = r->body.len ? cJSON_ParseWithLength(r->body.p, r->body.len) : NULL;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(body, "model");
    if (!cJSON_IsString(m)) m = cJSON_GetObjectItemCaseSensitive(body, "name");
    if (cJSON_IsString(m)) snprintf(name, 256, "%s", m->valuestring);
    const cJSON *keep = r->api == HL_API_OLLAMA ? cJSON_GetObjectItemCaseSensitive(body, "keep_alive") : NULL;
    bool ok = !keep || cJSON_IsNull(keep) || hl_keep_alive_parse(keep, &r->keep_alive_s, e);
    cJSON_Delete(body);
    return ok;
}

/* Holds the model the route serves in r->served; false with *e. */
static bool hold_model(hl_server *srv, hl_request *r, hl_error *e) {
    if (r->route->model == HL_MODEL_CURRENT) {
        r->served = hl_models_current(srv->models);
        if (!r->served) hl_error_set(e, 503, "server_error", "no_model_loaded", NULL, "no model is loaded now");
        return r->served != NULL;
    }
    char name[256];
    return named_model(r, name, e) && hl_models_acquire(srv->models, name[0] ? name : NULL, &r->served, e);
}

static void let_go(hl_server *srv, hl_request *r) {
    hl_models_release(srv->models, r->served, r->keep_alive_s);
    r->served = NULL;
}

/* The route's handler: the answer to a request whose body is complete. A
 * stream keeps its model held until it ends (send_reply). */
static void answer(hl_server *srv, struct MHD_Connection *conn, hl_request *r, hl_reply *rep) {
    hl_error e = {0};
    if (refused(srv, r, &e) || (r->route->model != HL_MODEL_NONE && !hold_model(srv, r, &e))) {
        hl_reply_error(rep, &e);
        return;
    }
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    hl_call call = {.srv = srv,
                    .engine = r->served ? hl_served_engine(r->served) : NULL,
                    .model_name = r->served ? hl_served_name(r->served) : NULL,
                    .conn = conn,
                    .fd = info ? info->connect_fd : -1,
                    .body = r->body.p ? r->body.p : "",
                    .len = r->body.len};
    r->route->fn(&call, rep);
    if (!rep->reader) let_go(srv, r);
}

/* On a worker: the handler, then the connection resumes to send its answer. */
static void run_request(hl_task *task) {
    hl_request *r = (hl_request *)task;
    answer(r->srv, r->conn, r, &r->rep);
    r->stage = HL_STAGE_ANSWERED;
    MHD_resume_connection(r->conn);
}

static hl_conn *conn_of(struct MHD_Connection *conn) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

static enum MHD_Result reply(hl_server *srv, struct MHD_Connection *conn, hl_request *r) {
    if (r->err.status == 405) r->rep.allow = r->allow;
    hl_buf_free(&r->body);
    r->status = r->rep.status;
    return send_reply(srv, conn, &r->rep, r);
}

/* A request whose body is complete: answered here when that is quick, else
 * handed to a worker with the connection suspended. */
static enum MHD_Result dispatch(hl_server *srv, struct MHD_Connection *conn, hl_request *r) {
    hl_watch_conn_phase(conn_of(conn), HL_CONN_BUSY);
    r->rep = (hl_reply){.api = r->api};
    hl_error e = {0};
    if (r->preflight) {
        char *empty = strdup("");
        r->rep = (hl_reply){.status = empty ? 204 : 0, .content_type = "text/plain", .body = empty};
    } else if (refused(srv, r, &e)) {
        hl_reply_error(&r->rep, &e);
    } else if (r->route->quick) {
        answer(srv, conn, r, &r->rep);
    } else if (hl_pool_queued(srv->pool) >= HL_MAX_QUEUED) {
        hl_error_set(&e, 503, "server_error", "server_busy", NULL,
                     "the server is busy (%d requests wait for a worker): retry later", HL_MAX_QUEUED);
        hl_reply_error(&r->rep, &e);
    } else {
        r->stage = HL_STAGE_RUNNING;
        r->conn = conn;
        r->task.run = run_request;
        MHD_suspend_connection(conn); /* before the worker can resume it */
        hl_pool_push(srv->pool, &r->task);
        return MHD_YES;
    }
    return reply(srv, conn, r);
}

/* A declared body over the limit is answered before it comes when the
 * client waits for that (Expect: 100-continue) or the body is too large to
 * read through; else it is read and dropped first, so that a client sending
 * it before reading gets the 413, not a reset. */
static bool answer_at_once(struct MHD_Connection *conn, const hl_request *r) {
    if (r->err.status != 413) return false;
    const char *expect = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
    const char *length = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    return (expect && !strcasecmp(expect, "100-continue")) || !length || strtoull(length, NULL, 10) > HL_DRAIN_MAX;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
    (void)version;
    hl_server *srv = cls;
    hl_request *r = *con_cls;
    if (!r) { /* the headers: decide what can be decided now, then read the body */
        r = calloc(1, sizeof *r);
        if (!r) return MHD_NO;
        *con_cls = r;
        atomic_fetch_add(&srv->active, 1);
        r->srv = srv;
        r->keep_alive_s = NAN;
        r->t0 = hl_now_s();
        snprintf(r->line, sizeof r->line, "%s %s", method, url);
        admit(srv, conn, url, method, r);
        if (!answer_at_once(conn, r)) return MHD_YES;
        r->rep = (hl_reply){.api = r->api};
        hl_reply_error(&r->rep, &r->err); /* MHD drops the body and closes */
        return reply(srv, conn, r);
    }
    if (*upload_data_size) {
        read_body(srv, r, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (r->stage == HL_STAGE_ANSWERED) return reply(srv, conn, r);
    return dispatch(srv, conn, r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe) {
    hl_server *srv = cls;
    hl_request *r = *con_cls;
    hl_watch_conn_phase(conn_of(conn), HL_CONN_READING); /* the next request's deadline runs */
    if (!r) return;
    if (srv->cfg.verbose)
        fprintf(stderr, "hearth: %s -> %u, %.3f s%s\n", r->line, r->status, hl_now_s() - r->t0,
                toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (connection closed early)");
    let_go(srv, r); /* held still only when its answer was never sent */
    hl_buf_free(&r->body);
    free(r);
    *con_cls = NULL;
    atomic_fetch_sub(&srv->active, 1);
}

/* A connection opened or closed: the watch follows it (its socket context). */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
    hl_server *srv = cls;
    if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        hl_watch_conn_closed(srv->watch, *socket_context);
        *socket_context = NULL;
        return;
    }
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    *socket_context = info ? hl_watch_conn_open(srv->watch, info->connect_fd) : NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    fprintf(stderr, "hearth: http: ");
    vfprintf(stderr, fmt, ap);
}

/* A listening socket on host:port; its port (the chosen one for port 0) in *port. */
static int listen_on(const char *host, int *port, char *err, size_t err_size) {
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    char service[16];
    snprintf(service, sizeof service, "%d", *port);
    struct addrinfo *res;
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0) {
        snprintf(err, err_size, "cannot resolve the host '%s': %s", host, gai_strerror(rc));
        return -1;
    }
    int fd = -1, e = 0;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        int one = 1;
        if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0 &&
            bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0)
            break;
        e = errno;
        if (fd >= 0) close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (fd >= 0 && getsockname(fd, (struct sockaddr *)&ss, &len) != 0) {
        e = errno;
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        snprintf(err, err_size, "cannot listen on %s port %d: %s", host, *port, strerror(e));
        return -1;
    }
    *port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                           : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

/* Raises the soft limit on open files to the hard one; returns the soft
 * limit in force. */
static rlim_t raise_fd_limit(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
    if (rl.rlim_cur < rl.rlim_max) {
        struct rlimit up = {.rlim_cur = rl.rlim_max, .rlim_max = rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &up) == 0) rl = up;
    }
    return rl.rlim_cur;
}

/* The daemon's options for cfg (in *opts, ended by MHD_OPTION_END). */
static void daemon_options(hl_server *srv, int fd, struct MHD_OptionItem opts[16]) {
    const hl_server_config *cfg = &srv->cfg;
    size_t n = 0;
#define OPT(o, v, p) opts[n++] = (struct MHD_OptionItem){(o), (intptr_t)(v), (p)}
    /* the logger first: MHD reads its options in order and logs as it goes */
    OPT(MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL);
    OPT(MHD_OPTION_LISTEN_SOCKET, fd, NULL);
    OPT(MHD_OPTION_THREAD_POOL_SIZE, HL_EVENT_THREADS, NULL);
    OPT(MHD_OPTION_CONNECTION_LIMIT, srv->max_connections, NULL);
    if (cfg->max_connections_per_ip) OPT(MHD_OPTION_PER_IP_CONNECTION_LIMIT, cfg->max_connections_per_ip, NULL);
    OPT(MHD_OPTION_CONNECTION_TIMEOUT, cfg->timeout_s, NULL);
    OPT(MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv);
    OPT(MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv);
    if (cfg->tls_key_pem) {
        OPT(MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)cfg->tls_key_pem);
        OPT(MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)cfg->tls_cert_pem);
    }
    OPT(MHD_OPTION_END, 0, NULL);
#undef OPT
}

hl_server *hl_server_start(const hl_server_config *cfg, char *err, size_t err_size) {
    if (cfg->tls_key_pem && !MHD_is_feature_supported(MHD_FEATURE_TLS)) {
        snprintf(err, err_size, "this libmicrohttpd was built without TLS: HTTPS cannot be served");
        return NULL;
    }
    hl_server *srv = calloc(1, sizeof *srv);
    if (!srv) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    srv->cfg = *cfg;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    srv->salt = ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) ^ ((uint64_t)getpid() << 40);
    rlim_t fds = raise_fd_limit();
    rlim_t room = fds > 2 * HL_FD_RESERVE ? fds - HL_FD_RESERVE : HL_FD_RESERVE;
    srv->max_connections = cfg->max_connections ? cfg->max_connections : room > UINT_MAX ? UINT_MAX : (unsigned)room;
    srv->port = cfg->port;
    int fd = listen_on(cfg->host, &srv->port, err, err_size);
    if (fd < 0) {
        free(srv);
        return NULL;
    }
    srv->models = hl_models_new(&srv->cfg);
    srv->watch = srv->models ? hl_watch_start(cfg->read_timeout_s, &srv->stopping) : NULL;
    srv->pool = srv->watch ? hl_pool_start(cfg->n_threads_http > 0 ? cfg->n_threads_http : 1) : NULL;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC;
    if (cfg->tls_key_pem) flags |= MHD_USE_TLS;
    if (cfg->verbose) flags |= MHD_USE_ERROR_LOG;
    struct MHD_OptionItem opts[16];
    daemon_options(srv, fd, opts);
    if (srv->pool)
        srv->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, srv, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    if (!srv->daemon) {
        close(fd);
        hl_pool_stop(srv->pool);
        hl_watch_stop(srv->watch);
        hl_models_free(srv->models);
        snprintf(err, err_size, "cannot start the HTTP server on %s port %d%s", cfg->host, srv->port,
                 cfg->tls_key_pem ? " (is the key and certificate PEM a matching pair?)" : "");
        free(srv);
        return NULL;
    }
    return srv;
}

int hl_server_port(const hl_server *srv) { return srv->port; }

unsigned hl_server_max_connections(const hl_server *srv) { return srv->max_connections; }

bool hl_server_preload(hl_server *srv, char *err, size_t err_size) {
    hl_served *s;
    hl_error e;
    if (!hl_models_acquire(srv->models, NULL, &s, &e)) {
        snprintf(err, err_size, "%s", e.message);
        return false;
    }
    hl_models_release(srv->models, s, NAN);
    hl_server_ready(srv);
    return true;
}

void hl_server_ready(hl_server *srv) { atomic_store(&srv->ready, true); }

static void wait_until(hl_server *srv, double t_end, bool (*done)(hl_server *)) {
    while (!done(srv) && hl_now_s() < t_end) nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
}
static bool no_request(hl_server *srv) { return atomic_load(&srv->active) == 0; }
static bool none_parked(hl_server *srv) { return hl_watch_n_parked(srv->watch) == 0; }

void hl_server_stop(hl_server *srv) {
    if (!srv) return;
    MHD_socket listen_fd = MHD_quiesce_daemon(srv->daemon);
    /* running requests see the flag (job.c, the watch), cancel their work
     * and send their end; requests on open connections get 503 */
    atomic_store(&srv->stopping, true);
    wait_until(srv, hl_now_s() + HL_STOP_GRACE_S, no_request);
    hl_pool_stop(srv->pool); /* the handlers still running end (they see the flag) */
    /* MHD must not stop with a connection suspended: wake the stragglers */
    hl_watch_wake_all(srv->watch);
    wait_until(srv, hl_now_s() + 1.0, none_parked);
    MHD_stop_daemon(srv->daemon);
    hl_watch_stop(srv->watch);
    hl_models_free(srv->models);
    if (listen_fd != MHD_INVALID_SOCKET) close(listen_fd);
    free(srv);
}
