/* hl_buf: the server's growable text buffer (see buf.h). */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool hl_buf_reserve(hl_buf *b, size_t extra) {
    if (extra > (size_t)-1 / 2 - b->len) return false;
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return false;
    b->p = p;
    b->cap = cap;
    return true;
}

bool hl_buf_add(hl_buf *b, const void *data, size_t n) {
    if (!hl_buf_reserve(b, n)) return false;
    if (n) memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
    return true;
}

bool hl_buf_adds(hl_buf *b, const char *s) { return hl_buf_add(b, s, strlen(s)); }

bool hl_buf_printf(hl_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !hl_buf_reserve(b, (size_t)n)) return false;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return true;
}

void hl_buf_clear(hl_buf *b) {
    b->len = 0;
    if (b->p) b->p[0] = '\0';
}

char *hl_buf_take(hl_buf *b, size_t *len) {
    char *p = b->p;
    if (len) *len = b->len;
    *b = (hl_buf){0};
    return p;
}

void hl_buf_free(hl_buf *b) {
    free(b->p);
    *b = (hl_buf){0};
}
