/* hl_str: a growable NUL-terminated string for text the library builds
 * (grammars, prompts, parser output). An append that cannot allocate
 * records the error, returns OUT_OF_MEMORY and sets `oom`, after which
 * appends do nothing: a builder may append freely and check once with
 * hl_str_status(). Zero-initialise; free with hl_str_free(). */
#ifndef HEARTH_BASE_STRBUF_H
#define HEARTH_BASE_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

typedef struct hl_str {
    char *p; /* NUL-terminated once anything was appended; NULL before */
    size_t n, cap;
    bool oom;
} hl_str;

hearth_status hl_str_put(hl_str *b, const char *s, size_t n);
hearth_status hl_str_puts(hl_str *b, const char *s);
hearth_status hl_str_printf(hl_str *b, const char *fmt, ...) HL_PRINTF(2, 3);
/* OUT_OF_MEMORY if an append failed (the message is already set), else OK. */
hearth_status hl_str_status(const hl_str *b);
void hl_str_free(hl_str *b);

#endif
