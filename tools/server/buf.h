/* A growable byte buffer for the server's outgoing text (request bodies,
 * SSE frames, the Prometheus page): append and printf, NUL-terminated,
 * every growth checked. */
#ifndef HEARTH_SERVER_BUF_H
#define HEARTH_SERVER_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct hl_buf {
    char *p;    /* NULL until the first append; then NUL-terminated */
    size_t len; /* bytes, without the NUL */
    size_t cap; /* bytes allocated */
} hl_buf;

/* Makes room for `extra` more bytes (and the NUL) past len, for a caller
 * that writes at p + len itself; false when memory runs out. */
bool hl_buf_reserve(hl_buf *b, size_t extra);
/* Appends n bytes; false (the buffer unchanged) when memory runs out. */
bool hl_buf_add(hl_buf *b, const void *data, size_t n);
bool hl_buf_adds(hl_buf *b, const char *s);
bool hl_buf_printf(hl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Empties the buffer and keeps its memory for reuse. */
void hl_buf_clear(hl_buf *b);
/* Takes the text out (the caller frees it) and leaves the buffer empty. */
char *hl_buf_take(hl_buf *b, size_t *len);
void hl_buf_free(hl_buf *b);

#endif
