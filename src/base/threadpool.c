/* Fork-join thread pool (see threadpool.h). A task is published by bumping
 * `generation`; each worker runs its share and increments `n_done`. Workers
 * spin on the generation for a while (tasks arrive microseconds apart during a
 * forward pass) before sleeping on the condition variable. */
#include "base/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#define SPIN_ITERS 200000
#define YIELD_AFTER_SPINS 20000

struct hl_pool {
    int n_threads;
    pthread_t *threads;
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    atomic_uint generation;
    atomic_int n_done;
    atomic_bool stop;
    /* the current task, valid while n_done < nth */
    hl_task_fn task;
    void *arg;
    int nth;
};

typedef struct worker_arg {
    hl_pool *pool;
    int ith;
} worker_arg;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static unsigned wait_for_generation(hl_pool *pool, unsigned seen) {
    for (int i = 0; i < SPIN_ITERS; i++) {
        unsigned g = atomic_load_explicit(&pool->generation, memory_order_acquire);
        if (g != seen || atomic_load(&pool->stop)) return g;
        cpu_relax();
    }
    pthread_mutex_lock(&pool->mutex);
    unsigned g;
    while ((g = atomic_load(&pool->generation)) == seen && !atomic_load(&pool->stop))
        pthread_cond_wait(&pool->cond, &pool->mutex);
    pthread_mutex_unlock(&pool->mutex);
    return g;
}

static void *worker_main(void *p) {
    worker_arg wa = *(worker_arg *)p;
    free(p);
    hl_pool *pool = wa.pool;
    unsigned seen = 0;
    for (;;) {
        seen = wait_for_generation(pool, seen);
        if (atomic_load(&pool->stop)) break;
        if (wa.ith < pool->nth) pool->task(pool->arg, wa.ith, pool->nth);
        atomic_fetch_add_explicit(&pool->n_done, 1, memory_order_release);
    }
    return NULL;
}

hearth_status hl_pool_init(int n_threads, hl_pool **out) {
    *out = NULL;
    if (n_threads < 1) return hl_fail(HEARTH_ERR_INVALID_ARG, "n_threads must be >= 1 (got %d)", n_threads);
    hl_pool *pool = hl_calloc(1, sizeof *pool);
    if (!pool) return HEARTH_ERR_OUT_OF_MEMORY;
    pool->threads = hl_calloc((size_t)n_threads, sizeof(pthread_t));
    if (!pool->threads) {
        free(pool);
        return HEARTH_ERR_OUT_OF_MEMORY;
    }
    pthread_mutex_init(&pool->mutex, NULL);
    pthread_cond_init(&pool->cond, NULL);
    pool->n_threads = 1;
    for (int i = 1; i < n_threads; i++) {
        worker_arg *wa = hl_malloc(sizeof *wa);
        if (!wa) {
            hl_pool_free(pool);
            return HEARTH_ERR_OUT_OF_MEMORY;
        }
        *wa = (worker_arg){pool, i};
        if (pthread_create(&pool->threads[i], NULL, worker_main, wa) != 0) {
            free(wa);
            hl_pool_free(pool);
            return hl_fail(HEARTH_ERR_IO, "could not start CPU thread %d of %d: lower n_threads", i, n_threads);
        }
        pool->n_threads++;
    }
    *out = pool;
    return HEARTH_OK;
}

void hl_pool_free(hl_pool *pool) {
    if (!pool) return;
    pthread_mutex_lock(&pool->mutex);
    atomic_store(&pool->stop, true);
    pthread_cond_broadcast(&pool->cond);
    pthread_mutex_unlock(&pool->mutex);
    for (int i = 1; i < pool->n_threads; i++) pthread_join(pool->threads[i], NULL);
    pthread_mutex_destroy(&pool->mutex);
    pthread_cond_destroy(&pool->cond);
    free(pool->threads);
    free(pool);
}

int hl_pool_n_threads(const hl_pool *pool) { return pool->n_threads; }

void hl_pool_run(hl_pool *pool, int nth, hl_task_fn task, void *arg) {
    if (nth > pool->n_threads) nth = pool->n_threads;
    if (nth < 1) nth = 1;
    if (nth == 1) {
        task(arg, 0, 1);
        return;
    }
    pool->task = task;
    pool->arg = arg;
    pool->nth = nth;
    atomic_store_explicit(&pool->n_done, 0, memory_order_relaxed);
    pthread_mutex_lock(&pool->mutex);
    atomic_fetch_add_explicit(&pool->generation, 1, memory_order_release);
    pthread_cond_broadcast(&pool->cond);
    pthread_mutex_unlock(&pool->mutex);
    task(arg, 0, nth);
    /* every worker reports, including those with no share (ith >= nth); when
     * the machine is oversubscribed a worker may be descheduled, so after a
     * while the caller yields its core instead of spinning out its time slice */
    for (long spins = 0; atomic_load_explicit(&pool->n_done, memory_order_acquire) < pool->n_threads - 1; spins++) {
        if (spins < YIELD_AFTER_SPINS) cpu_relax();
        else sched_yield();
    }
}
