/* What the server's files share: the server's state, one HTTP request as a
 * handler sees it (hl_call) and what a handler answers (hl_reply, a whole
 * body or a stream). server.c routes to the handlers of completions.c,
 * embeddings.c, endpoints.c and metrics.c. */
#ifndef HEARTH_SERVER_IMPL_H
#define HEARTH_SERVER_IMPL_H

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "hearth.h"
#include "oai_request.h"
#include "server.h"

struct hl_server {
    hl_server_config cfg;
    struct MHD_Daemon *daemon;
    int port;
    _Atomic(hearth_engine *) engine; /* NULL while the model loads */
    atomic_bool stopping;            /* hl_server_stop began: running requests end */
    atomic_int active;               /* requests between their headers and their end */
    atomic_uint_fast64_t counter;    /* response ids and default seeds */
    uint64_t salt;                   /* makes ids differ between runs */
};

/* One HTTP request, complete (its body read). */
typedef struct hl_call {
    hl_server *srv;
    hearth_engine *engine; /* set for routes that need the model */
    int fd;                /* the client's socket (to notice it leaving) */
    const char *body;      /* len bytes + NUL */
    size_t len;
} hl_call;

/* A handler's answer: status 0 closes the connection without one (the client
 * is gone); otherwise a body, or a stream when reader is set. */
typedef struct hl_reply {
    unsigned status;
    const char *content_type; /* static */
    char *body;               /* malloc'd, taken by the server */
    size_t len;
    unsigned retry_after;             /* seconds for a Retry-After header; 0: none */
    const char *allow;                /* the Allow header of a 405 (static) */
    MHD_ContentReaderCallback reader; /* streaming: called until the end */
    void *reader_cls;
    MHD_ContentReaderFreeCallback reader_free;
} hl_reply;

typedef void (*hl_handler_fn)(hl_call *call, hl_reply *rep);

/* Error replies in OpenAI's shape (503 busy gets Retry-After). */
void hl_reply_error(hl_reply *rep, const hl_error *e);
/* A 200 (or `status`) JSON reply from a tree, which is freed. */
void hl_reply_json(hl_reply *rep, unsigned status, cJSON *json);

/* A fresh 64-bit number for ids and seeds: different for every call. */
uint64_t hl_server_unique(hl_server *srv);

/* the handlers */
void hl_handle_chat(hl_call *call, hl_reply *rep);
void hl_handle_completions(hl_call *call, hl_reply *rep);
void hl_handle_embeddings(hl_call *call, hl_reply *rep);
void hl_handle_health(hl_call *call, hl_reply *rep);
void hl_handle_models(hl_call *call, hl_reply *rep);
void hl_handle_slots(hl_call *call, hl_reply *rep);
void hl_handle_tokenize(hl_call *call, hl_reply *rep);
void hl_handle_detokenize(hl_call *call, hl_reply *rep);
void hl_handle_metrics(hl_call *call, hl_reply *rep);

#endif
