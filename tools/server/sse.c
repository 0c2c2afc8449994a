/* The stream behind a streamed answer (see sse.h). MHD calls the reader on
 * an event thread whenever the socket can take more; when the producer has
 * nothing yet the reader returns 0 with the connection parked, and MHD calls
 * it again once the producer wakes the connection. */
#include "sse.h"

#include <stdlib.h>
#include <string.h>

typedef struct hl_sse {
    hl_sse_next_fn next;
    void (*free_fn)(void *user);
    void *user;
    hl_buf out; /* frames not yet handed to the connection: out.p[off, len) */
    size_t off;
    bool ended; /* the last frames are in out */
    hl_framing framing;
} hl_sse;

bool hl_stream_frame(hl_buf *out, cJSON *json, hl_framing f) {
    const cJSON *type = f == HL_FRAMING_SSE_EVENTS ? cJSON_GetObjectItemCaseSensitive(json, "type") : NULL;
    char *s = json ? cJSON_PrintUnformatted(json) : NULL;
    bool ok = s != NULL;
    if (ok && f == HL_FRAMING_SSE_EVENTS)
        ok = cJSON_IsString(type) && hl_buf_adds(out, "event: ") && hl_buf_adds(out, type->valuestring) &&
             hl_buf_adds(out, "\n");
    if (ok && f != HL_FRAMING_NDJSON) ok = hl_buf_adds(out, "data: ");
    ok = ok && hl_buf_adds(out, s) && hl_buf_adds(out, f == HL_FRAMING_NDJSON ? "\n" : "\n\n");
    cJSON_Delete(json);
    free(s);
    return ok;
}

bool hl_sse_frame(hl_buf *out, cJSON *json) { return hl_stream_frame(out, json, HL_FRAMING_SSE); }

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    hl_sse *s = cls;
    while (s->off == s->out.len) {
        if (s->ended) return MHD_CONTENT_READER_END_OF_STREAM;
        hl_buf_clear(&s->out);
        s->off = 0;
        hl_sse_step step = s->next(s->user, &s->out);
        if (step == HL_SSE_ABORT) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (step == HL_SSE_WAIT) return 0;
        if (step == HL_SSE_END) {
            if (s->framing == HL_FRAMING_SSE && !hl_buf_adds(&s->out, "data: [DONE]\n\n"))
                return MHD_CONTENT_READER_END_WITH_ERROR;
            s->ended = true;
        }
    }
    size_t n = s->out.len - s->off < max ? s->out.len - s->off : max;
    memcpy(buf, s->out.p + s->off, n);
    s->off += n;
    return (ssize_t)n;
}

static void sse_free(void *cls) {
    hl_sse *s = cls;
    s->free_fn(s->user);
    hl_buf_free(&s->out);
    free(s);
}

bool hl_sse_reply(hl_reply *rep, hl_sse_next_fn next, void (*free_fn)(void *user), void *user, hl_framing f) {
    hl_sse *s = calloc(1, sizeof *s);
    if (!s) {
        free_fn(user);
        return false;
    }
    *s = (hl_sse){.next = next, .free_fn = free_fn, .user = user, .framing = f};
    *rep = (hl_reply){.status = 200,
                      .api = rep->api,
                      .content_type = f == HL_FRAMING_NDJSON ? "application/x-ndjson" : "text/event-stream",
                      .reader = sse_read,
                      .reader_cls = s,
                      .reader_free = sse_free};
    return true;
}
