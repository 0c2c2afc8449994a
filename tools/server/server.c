/* The HTTP daemon: listening, routing, API keys, the body limit, turning a
 * handler's hl_reply into an MHD response, and a graceful stop.
 *
 * libmicrohttpd runs one thread per connection, so a handler may block: a
 * non-streaming completion waits in its handler for the engine, and a stream
 * waits inside its content reader (sse.c). Every request's body is read to
 * its end before the answer goes out, errors included, so that a client
 * never has its connection reset under an unread upload; a body past
 * max_body is read and dropped, then answered with 413. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "oai_response.h"
#include "server_impl.h"

/* Connections served at once (each one is a thread while it is open). */
#define HL_MAX_CONNECTIONS 512
/* How long hl_server_stop waits for running requests to send their end. */
#define HL_STOP_GRACE_S 5.0

typedef struct hl_route {
    const char *path;
    const char *method;
    hl_handler_fn fn;
    bool open;  /* served without an API key */
    hl_api api; /* whose shapes it answers in */
} hl_route;

#define OPENAI HL_API_OPENAI
#define OLLAMA HL_API_OLLAMA
#define ANTHROPIC HL_API_ANTHROPIC
static const hl_route routes[] = {
    {"/health", "GET", hl_handle_health, true, OPENAI},
    {"/metrics", "GET", hl_handle_metrics, false, OPENAI},
    {"/slots", "GET", hl_handle_slots, false, OPENAI},
    {"/v1/models", "GET", hl_handle_models, false, OPENAI},
    {"/v1/chat/completions", "POST", hl_handle_chat, false, OPENAI},
    {"/v1/completions", "POST", hl_handle_completions, false, OPENAI},
    {"/v1/responses", "POST", hl_handle_responses, false, OPENAI},
    {"/v1/embeddings", "POST", hl_handle_embeddings, false, OPENAI},
    {"/v1/rerank", "POST", hl_handle_rerank, false, OPENAI},
    {"/v1/reranking", "POST", hl_handle_rerank, false, OPENAI},
    {"/rerank", "POST", hl_handle_rerank, false, OPENAI},
    {"/reranking", "POST", hl_handle_rerank, false, OPENAI},
    /* llama-server's own, and its un-prefixed aliases of OpenAI's */
    {"/completion", "POST", hl_handle_completion, false, OPENAI},
    {"/infill", "POST", hl_handle_infill, false, OPENAI},
    {"/props", "GET", hl_handle_props, false, OPENAI},
    {"/apply-template", "POST", hl_handle_apply_template, false, OPENAI},
    {"/chat/completions", "POST", hl_handle_chat, false, OPENAI},
    {"/completions", "POST", hl_handle_completions, false, OPENAI},
    {"/models", "GET", hl_handle_models, false, OPENAI},
    {"/tokenize", "POST", hl_handle_tokenize, false, OPENAI},
    {"/detokenize", "POST", hl_handle_detokenize, false, OPENAI},
    {"/v1/messages", "POST", hl_handle_anthropic_messages, false, ANTHROPIC},
    {"/v1/messages/count_tokens", "POST", hl_handle_anthropic_count_tokens, false, ANTHROPIC},
    /* Ollama's API; / and /api/version answer without a key, as clients
     * probe them to find the server */
    {"/", "GET", hl_handle_ollama_root, true, OLLAMA},
    {"/api/version", "GET", hl_handle_ollama_version, true, OLLAMA},
    {"/api/tags", "GET", hl_handle_ollama_tags, false, OLLAMA},
    {"/api/ps", "GET", hl_handle_ollama_ps, false, OLLAMA},
    {"/api/show", "POST", hl_handle_ollama_show, false, OLLAMA},
    {"/api/chat", "POST", hl_handle_ollama_chat, false, OLLAMA},
    {"/api/generate", "POST", hl_handle_ollama_generate, false, OLLAMA},
    {"/api/embed", "POST", hl_handle_ollama_embed, false, OLLAMA},
    {"/api/embeddings", "POST", hl_handle_ollama_embeddings, false, OLLAMA},
};
#undef OPENAI
#undef OLLAMA
#undef ANTHROPIC

/* One request, from its headers to its completion (MHD's con_cls). */
typedef struct hl_request {
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

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

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
    static const hl_route webui = {"/", "GET", hl_handle_webui, true, HL_API_OPENAI};
    const char *accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    if (r->route && r->route->fn == hl_handle_ollama_root && !srv->cfg.no_webui && accept &&
        strstr(accept, "text/html")) {
        r->route = &webui;
        r->api = webui.api;
    }
    r->preflight = path_known && srv->cfg.n_cors_origins && !strcmp(method, "OPTIONS");
    if (r->preflight) return; /* answered without a key: browsers send none with it */
    if (!path_known)
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
    if (size > srv->cfg.max_body - r->body.len) {
        hl_buf_free(&r->body);
        hl_error_set(&r->err, 413, "invalid_request_error", "request_too_large", NULL,
                     "the request body is over the server's limit of %zu bytes (--max-body)", srv->cfg.max_body);
    } else if (!hl_buf_add(&r->body, data, size)) {
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

static enum MHD_Result send_reply(hl_server *srv, struct MHD_Connection *conn, hl_reply *rep, const hl_request *r) {
    if (rep->status == 0) {
        free(rep->body);
        return MHD_NO; /* closes the connection */
    }
    struct MHD_Response *res = rep->reader
                                   ? MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, rep->reader,
                                                                       rep->reader_cls, rep->reader_free)
                                   : MHD_create_response_from_buffer(rep->len, rep->body, MHD_RESPMEM_MUST_FREE);
    if (!res) {
        if (rep->reader) rep->reader_free(rep->reader_cls);
        else free(rep->body);
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

/* The answer to a request whose body is complete. */
static void answer(hl_server *srv, struct MHD_Connection *conn, hl_request *r, hl_reply *rep) {
    hearth_engine *engine = atomic_load(&srv->engine);
    hl_error e = {0};
    if (r->err.status) e = r->err;
    else if (atomic_load(&srv->stopping))
        hl_error_set(&e, 503, "server_error", "server_shutting_down", NULL, "the server is shutting down");
    else if (!engine)
        hl_error_set(&e, 503, "server_error", "model_loading", NULL, "the model is loading: retry shortly");
    if (e.status) {
        hl_reply_error(rep, &e);
        return;
    }
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    hl_call call = {.srv = srv,
                    .engine = engine,
                    .fd = info ? info->connect_fd : -1,
                    .body = r->body.p ? r->body.p : "",
                    .len = r->body.len};
    r->route->fn(&call, rep);
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
        r->t0 = now_s();
        snprintf(r->line, sizeof r->line, "%s %s", method, url);
        admit(srv, conn, url, method, r);
        return MHD_YES;
    }
    if (*upload_data_size) {
        read_body(srv, r, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    hl_reply rep = {.api = r->api};
    if (r->preflight) {
        char *empty = strdup("");
        rep = (hl_reply){.status = empty ? 204 : 0, .content_type = "text/plain", .body = empty};
    } else {
        answer(srv, conn, r, &rep);
    }
    if (r->err.status == 405) rep.allow = r->allow;
    hl_buf_free(&r->body);
    r->status = rep.status;
    return send_reply(srv, conn, &rep, r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)conn;
    hl_server *srv = cls;
    hl_request *r = *con_cls;
    if (!r) return;
    if (srv->cfg.verbose)
        fprintf(stderr, "hearth: %s -> %u, %.3f s%s\n", r->line, r->status, now_s() - r->t0,
                toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (connection closed early)");
    hl_buf_free(&r->body);
    free(r);
    *con_cls = NULL;
    atomic_fetch_sub(&srv->active, 1);
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
            bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 128) == 0)
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

hl_server *hl_server_start(const hl_server_config *cfg, char *err, size_t err_size) {
    hl_server *srv = calloc(1, sizeof *srv);
    if (!srv) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    srv->cfg = *cfg;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    srv->salt = ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) ^ ((uint64_t)getpid() << 40);
    srv->port = cfg->port;
    int fd = listen_on(cfg->host, &srv->port, err, err_size);
    if (fd < 0) {
        free(srv);
        return NULL;
    }
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC;
    if (cfg->verbose) flags |= MHD_USE_ERROR_LOG;
    /* the logger first: MHD reads its options in order and logs as it goes */
    srv->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
                                   MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT,
                                   (unsigned)HL_MAX_CONNECTIONS, MHD_OPTION_CONNECTION_TIMEOUT, cfg->timeout_s,
                                   MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv, MHD_OPTION_END);
    if (!srv->daemon) {
        close(fd);
        snprintf(err, err_size, "cannot start the HTTP server on %s port %d", cfg->host, srv->port);
        free(srv);
        return NULL;
    }
    return srv;
}

int hl_server_port(const hl_server *srv) { return srv->port; }

void hl_server_ready(hl_server *srv, hearth_engine *engine) { atomic_store(&srv->engine, engine); }

void hl_server_stop(hl_server *srv) {
    if (!srv) return;
    MHD_socket listen_fd = MHD_quiesce_daemon(srv->daemon);
    /* running requests see the flag within 50 ms (job.c), cancel their work
     * and send their end; requests on open connections get 503 */
    atomic_store(&srv->stopping, true);
    for (double t0 = now_s(); atomic_load(&srv->active) > 0 && now_s() - t0 < HL_STOP_GRACE_S;)
        nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    MHD_stop_daemon(srv->daemon);
    if (listen_fd != MHD_INVALID_SOCKET) close(listen_fd);
    free(srv);
}
