/* Error reporting inside the library: every fallible internal call returns a
 * hearth_status and, on failure, leaves a one-line, actionable message in a
 * thread-local buffer that hearth_last_error() returns to the user. */
#ifndef HEARTH_BASE_STATUS_H
#define HEARTH_BASE_STATUS_H

#include <stddef.h>

#include "hearth.h"

#if defined(__GNUC__)
#define HL_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define HL_PRINTF(a, b)
#endif

/* Records `fmt` as the last error of this thread and returns `st`. */
hearth_status hl_fail(hearth_status st, const char *fmt, ...) HL_PRINTF(2, 3);

/* Clears the last error of this thread. */
void hl_clear_error(void);

/* Propagates a failing status to the caller; the message is already set. */
#define HL_TRY(expr)                                                                                                   \
    do {                                                                                                               \
        hearth_status hl_try_st_ = (expr);                                                                             \
        if (hl_try_st_ != HEARTH_OK) return hl_try_st_;                                                                \
    } while (0)

/* Allocation that records an out-of-memory error (with the byte count and the
 * call site) instead of returning a silent NULL. Free with free(). */
#define hl_malloc(n) hl_malloc_at((n), __FILE__, __LINE__)
#define hl_calloc(n, size) hl_calloc_at((n), (size), __FILE__, __LINE__)
void *hl_malloc_at(size_t n, const char *file, int line);
void *hl_calloc_at(size_t n, size_t size, const char *file, int line);

#endif
