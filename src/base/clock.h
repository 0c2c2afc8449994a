/* Monotonic time for the library's timings (engine steps, download rates and
 * stalls, progress reports). */
#ifndef HEARTH_BASE_CLOCK_H
#define HEARTH_BASE_CLOCK_H

/* Seconds on CLOCK_MONOTONIC (an arbitrary origin; only differences mean
 * anything). Thread-safe. */
double hl_now(void);

#endif
