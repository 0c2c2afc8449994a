/* Streamed answers: an MHD content reader that pulls frames from a
 * producer and writes them out in whatever pieces the connection takes:
 * server-sent events ending with `data: [DONE]` (OpenAI), or
 * newline-delimited JSON (Ollama). The reader runs on one of MHD's event
 * threads, so a producer never blocks: with nothing to give it parks the
 * connection (watch.h) and says HL_SSE_WAIT. */
#ifndef HEARTH_SERVER_SSE_H
#define HEARTH_SERVER_SSE_H

#include <cjson/cJSON.h>

#include "buf.h"
#include "server_impl.h"

/* How a stream's frames are written. */
typedef enum hl_framing {
    HL_FRAMING_SSE,        /* `data: <json>` frames, then `data: [DONE]` (OpenAI) */
    HL_FRAMING_SSE_EVENTS, /* `event: <its "type">` and `data: <json>` frames, no [DONE] (Anthropic, Responses) */
    HL_FRAMING_SSE_DATA,   /* `data: <json>` frames, no [DONE] (llama-server's /completion) */
    HL_FRAMING_NDJSON,     /* one JSON object per line (Ollama) */
} hl_framing;

typedef enum hl_sse_step {
    HL_SSE_MORE,  /* frames were added; ask again */
    HL_SSE_END,   /* the last frames were added: [DONE] follows */
    HL_SSE_ABORT, /* the client is gone or memory ran out: close the connection */
    HL_SSE_WAIT,  /* nothing added: the connection is parked until there is */
} hl_sse_step;

/* Appends at least one whole frame to out, says the stream ends, or parks
 * the connection (then adds nothing). */
typedef hl_sse_step (*hl_sse_next_fn)(void *user, hl_buf *out);

/* Appends `data: <json>\n\n` and frees json; false when json is NULL or
 * memory runs out. */
bool hl_sse_frame(hl_buf *out, cJSON *json);

/* Appends one frame of json in framing f and frees json; false as hl_sse_frame. */
bool hl_stream_frame(hl_buf *out, cJSON *json, hl_framing f);

/* Makes rep a streamed answer in framing f (text/event-stream, or
 * application/x-ndjson) fed by next(user); free_fn(user) runs when the
 * connection is done with it (also when this fails: false). */
bool hl_sse_reply(hl_reply *rep, hl_sse_next_fn next, void (*free_fn)(void *user), void *user, hl_framing f);

#endif
