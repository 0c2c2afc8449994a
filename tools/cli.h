/* Shared pieces of the `hearth` command: subcommand entry points, strict
 * number parsing for options, logging to stderr, and a clock. */
#ifndef HEARTH_TOOLS_CLI_H
#define HEARTH_TOOLS_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "hearth.h"

int cmd_run(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_quantize(int argc, char **argv);

/* Parse an option value strictly (the whole string, within [lo, hi]). On
 * failure print "hearth: OPT expects ..., got 'VAL'" to stderr and return false. */
bool cli_parse_int(const char *opt, const char *val, long lo, long hi, long *out);
bool cli_parse_float(const char *opt, const char *val, double lo, double hi, double *out);
bool cli_parse_u64(const char *opt, const char *val, uint64_t *out);

/* Sends library log messages at or above `min_level` to stderr. The level
 * comes from HEARTH_LOG (debug|info|warn|error) when set, else from `verbose`
 * (info) or warn. */
void cli_log_init(bool verbose);

/* Prints "hearth: <what>: <last error>" to stderr; returns the exit status 1. */
int cli_fail(const char *what);

/* Monotonic time in seconds. */
double cli_now(void);

#endif
