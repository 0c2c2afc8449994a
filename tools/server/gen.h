/* One generation request of any API (OpenAI's chat and completions,
 * Ollama's chat and generate), from its parsed request to its answer: the
 * request's n choices go to the engine as one job (job.h); then either every
 * piece is collected and the answer built whole, or each piece is streamed
 * as it comes. What differs between the APIs -- the JSON of the answer, of
 * a streamed piece and of the stream's end, and the stream's framing (sse.h)
 * -- is an hl_dialect. */
#ifndef HEARTH_SERVER_GEN_H
#define HEARTH_SERVER_GEN_H

#include "buf.h"
#include "job.h"
#include "oai_response.h"
#include "server_impl.h"
#include "sse.h"

/* A tool call as its deltas build it (non-streaming). */
typedef struct hl_call_out {
    char *id, *name;
    hl_buf args;
} hl_call_out;

/* What one choice has produced so far. */
typedef struct hl_choice_out {
    hl_buf text;        /* whole text (non-streaming) */
    size_t n_text;      /* bytes of text so far: completions' text_offset */
    cJSON *logprobs;    /* non-streaming with logprobs */
    hl_call_out *calls; /* [n_calls] non-streaming */
    int32_t n_calls;
    int32_t n_generated;
    hearth_finish_reason finish;
} hl_choice_out;

typedef struct hl_gen hl_gen;

typedef struct hl_dialect {
    hl_framing framing;    /* how its streams are written */
    const char *id_prefix; /* of the answer's id ("msg"); NULL: OpenAI's "chatcmpl" or "cmpl" */
    bool generate;         /* Ollama's /api/generate: "response" text rather than a chat "message" */
    /* The whole answer after every piece was collected (g->err is clear). */
    cJSON *(*result)(hl_gen *g);
    /* Not streaming: each event after the core collected it (may be NULL). */
    bool (*collect)(hl_gen *g, const hl_event *ev);
    /* Streaming: frames before the first event (may be NULL), the frames
     * of one event (accounted already), and the frames after the last one
     * (g->err set when a choice failed). Each adds with hl_gen_frame. */
    bool (*start)(hl_gen *g, hl_buf *out);
    bool (*event)(hl_gen *g, const hl_event *ev, hl_buf *out);
    bool (*end)(hl_gen *g, hl_buf *out);
} hl_dialect;

/* One request in flight. */
struct hl_gen {
    hl_server *srv;
    const hearth_model *model;
    const hl_dialect *dialect;
    hl_oai_request req;
    hl_oai_meta meta;
    char id[40];
    char model_name[256]; /* what the answer names (Ollama: the request's model, else the alias) */
    hl_job *job;
    int32_t n_prompt, n_cached;
    double t_start, t_first, t_end; /* monotonic seconds: submitted, first piece, last piece */
    hl_error err;                   /* the first choice that ended badly */
    bool started;                   /* streaming: the opening frames are out */
    char stop[256];                 /* the stop string that ended choice 0 (truncated), or "" */
    int32_t n_blocks, open_block;   /* Anthropic streams: content blocks begun, the open one (-1: none) */
    int32_t open_call;              /* the tool call whose block is open (-1: text or none) */
    size_t text_from;               /* Responses streams: where the open message item's text begins */
    int64_t n_events;               /* Responses streams: events sent (their sequence_number) */
    cJSON *echo;                    /* fields the answers repeat (Responses: the request's settings); owned */
    hl_choice_out choice[];         /* [req.n] */
};

/* Runs `req` (parsed, taken over: freed here) on the call's engine and
 * answers in the dialect; model_name (copied; NULL: the alias) is the name
 * the answers give; echo (taken; may be NULL) becomes g->echo. */
void hl_gen_run(hl_call *call, hl_reply *rep, hl_oai_request *req, const hl_dialect *d, const char *model_name,
                cJSON *echo);

/* Adds one frame of json (taken) in the dialect's framing; false when json
 * is NULL or memory runs out. */
bool hl_gen_frame(const hl_gen *g, hl_buf *out, cJSON *json);

/* OpenAI's finish_reason of a choice that ended well, else NULL. */
const char *hl_gen_finish_name(hearth_finish_reason f);

/* The choice's tool calls as OpenAI's message tool_calls array (NULL for
 * none; *ok false when memory ran out). */
cJSON *hl_gen_calls_json(const hl_choice_out *c, bool *ok);

/* Adds the event's tool-call deltas to the choice's calls; false when memory ran out. */
bool hl_gen_collect_calls(hl_choice_out *c, const hl_event *ev);

/* Whether the event carries a token for logprobs. */
bool hl_gen_has_logprob(const hl_gen *g, const hl_event *ev);

#endif
