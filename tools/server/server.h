/* The OpenAI-compatible HTTP server (`hearth serve`): what the tool calls.
 * The server listens before the model is loaded (GET /health answers 503
 * until hl_server_ready) and serves the engine it is given; it does not
 * load models or handle signals itself. */
#ifndef HEARTH_SERVER_SERVER_H
#define HEARTH_SERVER_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include "hearth.h"

/* A model served: the name clients give as `model`, and its GGUF file. */
typedef struct hl_model_file {
    const char *name;
    const char *path;
} hl_model_file;

/* Loads the GGUF file at path into a model and an engine for it (the
 * caller's parameters); on failure returns the status with a one-line
 * reason in err. Called from the server's workers, at most once at a time
 * for one model (different models may load at once). */
typedef hearth_status (*hl_load_fn)(void *user, const char *path, hearth_model **model, hearth_engine **engine,
                                    char *err, size_t err_size);

typedef struct hl_server_config {
    const char *host;            /* address to listen on: a name or an IPv4/IPv6 literal */
    int port;                    /* 0: any free port (see hl_server_port) */
    const hl_model_file *models; /* n_models >= 1 models; the first one serves requests naming none */
    size_t n_models;
    bool store;          /* the models of hearth's store are served too (by the names hearth list shows) */
    unsigned models_max; /* models loaded at once; 0: no limit (least recently used ones unload first) */
    double keep_alive_s; /* an idle model unloads after this many seconds; < 0: never (Ollama's
                            keep_alive in a request sets it for its model) */
    hl_load_fn load;
    void *load_user;
    const char *const *api_keys; /* n_api_keys keys; none: no key needed */
    size_t n_api_keys;
    size_t max_body;                 /* bytes; a larger request body (or declared Content-Length) gets 413 */
    unsigned timeout_s;              /* a connection neither sending nor reading this long closes; 0: never */
    double read_timeout_s;           /* a request's headers and body must arrive within this many seconds of
                              the connection being ready for it (accepted, or its previous answer
                              sent); 0: no deadline */
    unsigned max_connections;        /* open at once; 0: the file-descriptor limit less a reserve */
    unsigned max_connections_per_ip; /* from one address at once; 0: no limit */
    int n_threads_http;              /* workers running request handlers (>= 1) */
    const char *tls_key_pem;         /* PEM private key and certificate: serve HTTPS; NULL: HTTP */
    const char *tls_cert_pem;
    bool verbose;      /* one line per request on stderr */
    bool strict_model; /* a request naming another model than the alias gets 404 (default: any name serves) */
    const char *const *cors_origins; /* n_cors_origins origins browsers may call from ("*": any); none: no CORS */
    size_t n_cors_origins;
    bool no_webui; /* GET / answers Ollama's "Ollama is running" to browsers too, not the chat page */
} hl_server_config;

typedef struct hl_server hl_server;

/* Seconds from "300", "-1", or a duration such as "5m", "1h30m", "10s",
 * "500ms" (Go's time.ParseDuration units h, m, s, ms, as Ollama's
 * keep_alive takes them). False when text is neither. */
bool hl_duration_parse(const char *text, double *seconds);

/* Raises the soft file-descriptor limit to the hard one, binds, listens and
 * starts serving (with one model, GET /health answers 503 until
 * hl_server_preload). The config and its strings must outlive the server.
 * On failure returns NULL with a one-line reason in err. */
hl_server *hl_server_start(const hl_server_config *cfg, char *err, size_t err_size);

/* The port it listens on (the one chosen when config.port was 0). */
int hl_server_port(const hl_server *srv);
/* The connection limit in force (config.max_connections or its default). */
unsigned hl_server_max_connections(const hl_server *srv);

/* Loads the first model now, kept loaded until a request's keep_alive says
 * otherwise, and marks the server ready (/health 200); false with the reason
 * in err. */
bool hl_server_preload(hl_server *srv, char *err, size_t err_size);
/* Marks the server ready without loading anything (models load on demand). */
void hl_server_ready(hl_server *srv);

/* Stops accepting connections, ends running requests (streams get an error
 * event and [DONE], waiting requests 503), waits for their responses to go
 * out (a few seconds at most), closes every connection, unloads the models
 * and frees the server. */
void hl_server_stop(hl_server *srv);

#endif
