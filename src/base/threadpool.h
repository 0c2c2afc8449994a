/* A fork-join thread pool for the CPU backend: hl_pool_run() runs one task on
 * n_threads threads (the caller is thread 0) and returns when all are done.
 * Workers spin briefly between tasks, because a forward pass issues hundreds
 * of short tasks per token, then sleep on a condition variable. */
#ifndef HEARTH_BASE_THREADPOOL_H
#define HEARTH_BASE_THREADPOOL_H

#include "base/status.h"

typedef struct hl_pool hl_pool;

/* task(arg, ith, nth): thread ith of nth does its share of the work. */
typedef void (*hl_task_fn)(void *arg, int ith, int nth);

/* Starts n_threads - 1 workers. Errors: INVALID_ARG (n_threads < 1),
 * OUT_OF_MEMORY, HEARTH_ERR_IO (thread creation failed). */
hearth_status hl_pool_init(int n_threads, hl_pool **out);
void hl_pool_free(hl_pool *pool);
int hl_pool_n_threads(const hl_pool *pool);

/* Runs task on min(nth, n_threads) threads and waits for all of them. Not
 * reentrant: one caller thread per pool. */
void hl_pool_run(hl_pool *pool, int nth, hl_task_fn task, void *arg);

/* Splits [0, n) evenly: thread ith of nth gets [*begin, *end). */
static inline void hl_split(long long n, int ith, int nth, long long *begin, long long *end) {
    long long per = (n + nth - 1) / nth;
    *begin = per * ith < n ? per * ith : n;
    *end = *begin + per < n ? *begin + per : n;
}

#endif
