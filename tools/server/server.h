/* The OpenAI-compatible HTTP server (`hearth serve`): what the tool calls.
 * The server listens before the model is loaded (GET /health answers 503
 * until hl_server_ready) and serves the engine it is given; it does not
 * load models or handle signals itself. */
#ifndef HEARTH_SERVER_SERVER_H
#define HEARTH_SERVER_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include "hearth.h"

typedef struct hl_server_config {
    const char *host;            /* address to listen on: a name or an IPv4/IPv6 literal */
    int port;                    /* 0: any free port (see hl_server_port) */
    const char *alias;           /* the model id clients see and may name */
    const char *const *api_keys; /* n_api_keys keys; none: no key needed */
    size_t n_api_keys;
    size_t max_body;    /* bytes; larger request bodies get 413 */
    unsigned timeout_s; /* idle connections close after this; 0: never */
    bool verbose;       /* one line per request on stderr */
    bool strict_model;  /* a request naming another model than the alias gets 404 (default: any name serves) */
    const char *const *cors_origins; /* n_cors_origins origins browsers may call from ("*": any); none: no CORS */
    size_t n_cors_origins;
    bool no_webui; /* GET / answers Ollama's "Ollama is running" to browsers too, not the chat page */
} hl_server_config;

typedef struct hl_server hl_server;

/* Binds, listens and starts serving (every model endpoint answers 503 until
 * hl_server_ready). The config's strings must outlive the server. On failure
 * returns NULL with a one-line reason in err. */
hl_server *hl_server_start(const hl_server_config *cfg, char *err, size_t err_size);

/* The port it listens on (the one chosen when config.port was 0). */
int hl_server_port(const hl_server *srv);

/* Starts serving `engine` (which must outlive hl_server_stop). */
void hl_server_ready(hl_server *srv, hearth_engine *engine);

/* Stops accepting connections, ends running requests (streams get an error
 * event and [DONE], waiting requests 503), waits for their responses to go
 * out (a few seconds at most), closes every connection and frees the server.
 * Free the engine after this. */
void hl_server_stop(hl_server *srv);

#endif
