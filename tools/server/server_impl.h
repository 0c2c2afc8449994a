/* What the server's files share: the server's state, one HTTP request as a
 * handler sees it (hl_call) and what a handler answers (hl_reply, a whole
 * body or a stream). server.c routes to the handlers of completions.c,
 * embeddings.c, rerank.c, endpoints.c and metrics.c. */
#ifndef HEARTH_SERVER_IMPL_H
#define HEARTH_SERVER_IMPL_H

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "hearth.h"
#include "models.h"
#include "oai_request.h"
#include "pool.h"
#include "server.h"
#include "watch.h"

struct hl_server {
    hl_server_config cfg;
    struct MHD_Daemon *daemon;
    hl_watch *watch; /* read deadlines, parked connections */
    hl_pool *pool;   /* runs the handlers */
    int port;
    unsigned max_connections;
    hl_models *models;
    atomic_bool ready;            /* hl_server_preload or hl_server_ready done */
    atomic_bool stopping;         /* hl_server_stop began: running requests end */
    atomic_int active;            /* requests between their headers and their end */
    atomic_uint_fast64_t counter; /* response ids and default seeds */
    uint64_t salt;                /* makes ids differ between runs */
};

/* One HTTP request, complete (its body read). */
typedef struct hl_call {
    hl_server *srv;
    hearth_engine *engine;  /* the model's engine, for routes that need one */
    const char *model_name; /* its name (as listed) */
    struct MHD_Connection *conn;
    int fd;           /* the client's socket (to notice it leaving) */
    const char *body; /* len bytes + NUL */
    size_t len;
} hl_call;

/* A handler's answer: status 0 closes the connection without one (the client
 * is gone); otherwise a body, or a stream when reader is set. */
/* Whose shapes a route answers in (its errors above all). */
typedef enum hl_api {
    HL_API_OPENAI,    /* {"error": {"message", "type", "param", "code"}} */
    HL_API_OLLAMA,    /* {"error": "message"} */
    HL_API_ANTHROPIC, /* {"type": "error", "error": {"type", "message"}} */
} hl_api;

typedef struct hl_reply {
    unsigned status;
    hl_api api;               /* set by the server before the handler; the reply builders keep it */
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

/* Error replies in the route's API's shape (503 busy gets Retry-After). */
void hl_reply_error(hl_reply *rep, const hl_error *e);
/* A 200 (or `status`) JSON reply from a tree, which is freed. */
void hl_reply_json(hl_reply *rep, unsigned status, cJSON *json);

/* A fresh 64-bit number for ids and seeds: different for every call. */
uint64_t hl_server_unique(hl_server *srv);

/* the handlers */
void hl_handle_chat(hl_call *call, hl_reply *rep);
void hl_handle_completions(hl_call *call, hl_reply *rep);
void hl_handle_embeddings(hl_call *call, hl_reply *rep);
void hl_handle_rerank(hl_call *call, hl_reply *rep);
void hl_handle_ollama_root(hl_call *call, hl_reply *rep);
void hl_handle_webui(hl_call *call, hl_reply *rep); /* the chat page, GET / from a browser */
void hl_handle_ollama_version(hl_call *call, hl_reply *rep);
void hl_handle_ollama_tags(hl_call *call, hl_reply *rep);
void hl_handle_ollama_ps(hl_call *call, hl_reply *rep);
void hl_handle_ollama_show(hl_call *call, hl_reply *rep);
void hl_handle_ollama_chat(hl_call *call, hl_reply *rep);
void hl_handle_ollama_generate(hl_call *call, hl_reply *rep);
void hl_handle_ollama_embed(hl_call *call, hl_reply *rep);
void hl_handle_ollama_embeddings(hl_call *call, hl_reply *rep);
void hl_handle_ollama_pull(hl_call *call, hl_reply *rep);   /* ollama_pull.c */
void hl_handle_ollama_delete(hl_call *call, hl_reply *rep); /* ollama_pull.c */
/* Ollama's error body {"error": "message"} (malloc'd, *len bytes); NULL when memory runs out. */
char *hl_ollama_error_body(const hl_error *e, size_t *len);
void hl_handle_anthropic_messages(hl_call *call, hl_reply *rep);
void hl_handle_responses(hl_call *call, hl_reply *rep);
void hl_handle_completion(hl_call *call, hl_reply *rep);
void hl_handle_infill(hl_call *call, hl_reply *rep);
void hl_handle_props(hl_call *call, hl_reply *rep);
void hl_handle_apply_template(hl_call *call, hl_reply *rep);
void hl_handle_anthropic_count_tokens(hl_call *call, hl_reply *rep);
/* Anthropic's error body (malloc'd, *len bytes); NULL when memory runs out. */
char *hl_anthropic_error_body(const hl_error *e, size_t *len);

/* Shared by embeddings.c and rerank.c. */
#define HL_EMBED_MAX_INPUTS 2048 /* inputs (documents) one request may give: OpenAI's limit */
typedef struct hl_embed_inputs {
    int32_t n;
    int32_t **tokens; /* [n] each malloc'd */
    int32_t *n_tokens;
    int64_t n_total;
} hl_embed_inputs;
void hl_embed_inputs_free(hl_embed_inputs *in);
/* OpenAI's `input` in any of its four forms (a string, strings, token ids,
 * token-id arrays) into in; false with *err (400). */
bool hl_embed_read_inputs(const hearth_model *m, const cJSON *input, hl_embed_inputs *in, hl_error *err);
/* The engine's refusal of hearth_engine_embed_batch as the client sees it; `param` names the field. */
void hl_embed_error(hl_error *err, hearth_status st, const char *msg, const char *param);
/* The engine generates text (an embeddings engine: 400, naming the endpoint it serves). */
bool hl_server_generates(const hearth_engine *engine, hl_error *err);
/* The request's `model` is a string when given (server.c chose the model by it). */
bool hl_server_model_name(const cJSON *req, hl_error *err);
void hl_handle_health(hl_call *call, hl_reply *rep);
void hl_handle_models(hl_call *call, hl_reply *rep);
void hl_handle_slots(hl_call *call, hl_reply *rep);
void hl_handle_tokenize(hl_call *call, hl_reply *rep);
void hl_handle_detokenize(hl_call *call, hl_reply *rep);
void hl_handle_metrics(hl_call *call, hl_reply *rep);

#endif
