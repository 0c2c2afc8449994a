/* hl_str (strbuf.h): appends that double the capacity as needed. */
#include "base/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hearth_status reserve(hl_str *b, size_t extra) {
    if (b->oom) return HEARTH_ERR_OUT_OF_MEMORY;
    if (b->n + extra + 1 <= b->cap) return HEARTH_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->n + extra + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory growing a string to %zu bytes", cap);
    }
    b->p = p;
    b->cap = cap;
    return HEARTH_OK;
}

hearth_status hl_str_put(hl_str *b, const char *s, size_t n) {
    HL_TRY(reserve(b, n));
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return HEARTH_OK;
}

hearth_status hl_str_puts(hl_str *b, const char *s) { return hl_str_put(b, s, strlen(s)); }

hearth_status hl_str_printf(hl_str *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return hl_fail(HEARTH_ERR_INVALID_ARG, "bad format '%s'", fmt);
    HL_TRY(reserve(b, (size_t)n));
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
    return HEARTH_OK;
}

hearth_status hl_str_status(const hl_str *b) { return b->oom ? HEARTH_ERR_OUT_OF_MEMORY : HEARTH_OK; }

void hl_str_free(hl_str *b) {
    free(b->p);
    *b = (hl_str){0};
}
