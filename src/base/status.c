/* Thread-local last-error message and checked allocation (see status.h). */
#include "base/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static _Thread_local char last_error[512];

hearth_status hl_fail(hearth_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return st;
}

void hl_clear_error(void) { last_error[0] = '\0'; }

const char *hearth_last_error(void) { return last_error; }

const char *hearth_status_str(hearth_status st) {
    switch (st) {
    case HEARTH_OK: return "ok";
    case HEARTH_ERR_INVALID_ARG: return "invalid argument";
    case HEARTH_ERR_IO: return "I/O error";
    case HEARTH_ERR_FORMAT: return "bad file format";
    case HEARTH_ERR_UNSUPPORTED: return "unsupported";
    case HEARTH_ERR_OUT_OF_MEMORY: return "out of memory";
    case HEARTH_ERR_CONTEXT_FULL: return "context full";
    case HEARTH_ERR_BUFFER_TOO_SMALL: return "buffer too small";
    case HEARTH_ERR_DEVICE: return "device error";
    case HEARTH_ERR_BUSY: return "busy";
    case HEARTH_ERR_NETWORK: return "network error";
    case HEARTH_ERR_CANCELLED: return "cancelled";
    }
    return "unknown status";
}

void *hl_malloc_at(size_t n, const char *file, int line) {
    void *p = malloc(n ? n : 1);
    if (!p) hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory allocating %zu bytes (%s:%d)", n, file, line);
    return p;
}

void *hl_calloc_at(size_t n, size_t size, const char *file, int line) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory allocating %zu x %zu bytes (%s:%d)", n, size, file, line);
    return p;
}
