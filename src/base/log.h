/* Library logging: messages go to the callback set with hearth_log_set(); with
 * none set, the library prints nothing. */
#ifndef HEARTH_BASE_LOG_H
#define HEARTH_BASE_LOG_H

#include "base/status.h"

void hl_log(hearth_log_level level, const char *fmt, ...) HL_PRINTF(2, 3);

#define HL_DEBUG(...) hl_log(HEARTH_LOG_DEBUG, __VA_ARGS__)
#define HL_INFO(...) hl_log(HEARTH_LOG_INFO, __VA_ARGS__)
#define HL_WARN(...) hl_log(HEARTH_LOG_WARN, __VA_ARGS__)

#endif
