/* Monotonic time for the server's threads: seconds, condition variables
 * that time out on CLOCK_MONOTONIC, and waits until a moment. */
#ifndef HEARTH_SERVER_CLOCK_H
#define HEARTH_SERVER_CLOCK_H

#include <pthread.h>
#include <stdbool.h>

/* Seconds on CLOCK_MONOTONIC. */
double hl_now_s(void);
/* Initialises cv so that its timed waits read CLOCK_MONOTONIC; false when
 * that fails (cv is then not initialised). */
bool hl_cond_init_monotonic(pthread_cond_t *cv);
/* Waits on cv (made by hl_cond_init_monotonic, mu held) until it is
 * signalled or hl_now_s() reaches `until`. */
void hl_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, double until);

#endif
