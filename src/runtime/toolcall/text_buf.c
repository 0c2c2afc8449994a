/* hl_tbuf: the growable strings the tool-calling files build prompts,
 * grammars and parser output in. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/toolcall/toolcall_impl.h"

static hearth_status reserve(hl_tbuf *b, size_t extra) {
    if (b->n + extra + 1 <= b->cap) return HEARTH_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->n + extra + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory growing a %zu-byte string", cap);
    b->p = p;
    b->cap = cap;
    return HEARTH_OK;
}

hearth_status hl_tbuf_put(hl_tbuf *b, const char *s, size_t n) {
    HL_TRY(reserve(b, n));
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return HEARTH_OK;
}

hearth_status hl_tbuf_puts(hl_tbuf *b, const char *s) { return hl_tbuf_put(b, s, strlen(s)); }

hearth_status hl_tbuf_printf(hl_tbuf *b, const char *fmt, ...) {
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
