/* Log dispatch to the user's callback (see log.h). */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>

static hearth_log_fn log_fn;
static void *log_user;

void hearth_log_set(hearth_log_fn fn, void *user) {
    log_fn = fn;
    log_user = user;
}

void hl_log(hearth_log_level level, const char *fmt, ...) {
    if (!log_fn) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_fn(level, msg, log_user);
}
