/* Monotonic time and timed waits (see clock.h). */
#include "clock.h"

#include <time.h>

double hl_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

bool hl_cond_init_monotonic(pthread_cond_t *cv) {
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0) return false;
    const bool ok = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 && pthread_cond_init(cv, &attr) == 0;
    pthread_condattr_destroy(&attr);
    return ok;
}

void hl_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, double until) {
    const struct timespec ts = {.tv_sec = (time_t)until, .tv_nsec = (long)((until - (double)(time_t)until) * 1e9)};
    pthread_cond_timedwait(cv, mu, &ts);
}
