/* A fork-join thread pool for the CPU backend: hl_pool_run() cuts one task into
 * shares, runs them on the pool's threads (the caller included) and returns
 * when all are done. Shares are claimed, not assigned, so a descheduled worker
 * never holds up the caller. Workers spin briefly between tasks, because a
 * forward pass issues hundreds of short tasks per token, then sleep on a
 * condition variable. */
#ifndef HEARTH_BASE_THREADPOOL_H
#define HEARTH_BASE_THREADPOOL_H

#include "base/status.h"

typedef struct hl_pool hl_pool;

/* Physical cores of this machine (distinct package/core pairs in sysfs; the
 * online CPU count where sysfs has no topology): the default thread count of
 * decoding and quantizing. hearth_cpu_physical_cores() returns it. */
int32_t hl_cpu_physical_cores(void);

/* task(arg, ith, nth): share ith of nth of the work. */
typedef void (*hl_task_fn)(void *arg, int ith, int nth);

/* Starts n_threads - 1 workers. Errors: INVALID_ARG (n_threads outside
 * 1..65535), OUT_OF_MEMORY, HEARTH_ERR_IO (thread creation failed). */
hearth_status hl_pool_init(int n_threads, hl_pool **out);
void hl_pool_free(hl_pool *pool);
int hl_pool_n_threads(const hl_pool *pool);

/* Runs task(arg, ith, nth') for every share ith < nth' = min(nth, n_threads),
 * each exactly once, on whichever threads are free, and waits for all shares.
 * A share's result must not depend on the thread that runs it (per-share
 * scratch is indexed by ith). Not reentrant: one caller thread per pool. */
void hl_pool_run(hl_pool *pool, int nth, hl_task_fn task, void *arg);

/* Splits [0, n) evenly: thread ith of nth gets [*begin, *end). */
static inline void hl_split(long long n, int ith, int nth, long long *begin, long long *end) {
    long long per = (n + nth - 1) / nth;
    *begin = per * ith < n ? per * ith : n;
    *end = *begin + per < n ? *begin + per : n;
}

#endif
