/* Fork-join thread pool (see threadpool.h).
 *
 * A task is cut into nth shares; threads claim shares from one atomic word,
 * `claim` = generation << 32 | nth << 16 | next share, so whichever threads are
 * running do the work: if a worker is descheduled (another process holds its
 * core) the caller claims its share instead of waiting for it, and a share's
 * rows are computed the same whichever thread takes it. Generation, share
 * count and next share live in one word so a late worker can never claim a
 * share of a task other than the one it read: its compare-and-swap fails once
 * the generation moves on.
 *
 * Workers spin on the generation for a while (tasks arrive microseconds apart
 * during a forward pass), yielding now and then, before sleeping on the
 * condition variable. */
#include "base/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define SPIN_ITERS 100000 /* pause iterations before a worker sleeps */
#define YIELD_EVERY 1024  /* a spinning thread yields its core this often */
#define MAX_SHARES 0xffff

struct hl_pool {
    int n_threads;
    pthread_t *threads;
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    _Atomic uint64_t claim; /* generation << 32 | nth << 16 | next share */
    atomic_int n_done;      /* shares of the current task completed */
    atomic_bool stop;
    /* the current task; written before its generation is published */
    _Atomic(hl_task_fn) task;
    _Atomic(void *) arg;
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static inline uint32_t gen_of(uint64_t c) { return (uint32_t)(c >> 32); }
static inline int nth_of(uint64_t c) { return (int)(c >> 16 & MAX_SHARES); }
static inline int next_of(uint64_t c) { return (int)(c & MAX_SHARES); }

/* Claims and runs shares of the task whose claim word was `c` until none is
 * left. */
static void run_shares(hl_pool *pool, uint64_t c) {
    while (next_of(c) < nth_of(c)) {
        /* read before the CAS: if it succeeds, this generation is not finished,
         * so the caller has not moved on and these belong to it */
        hl_task_fn task = atomic_load_explicit(&pool->task, memory_order_relaxed);
        void *arg = atomic_load_explicit(&pool->arg, memory_order_relaxed);
        if (atomic_compare_exchange_weak_explicit(&pool->claim, &c, c + 1, memory_order_acquire,
                                                  memory_order_acquire)) {
            task(arg, next_of(c), nth_of(c));
            atomic_fetch_add_explicit(&pool->n_done, 1, memory_order_release);
            c = atomic_load_explicit(&pool->claim, memory_order_acquire);
        }
    }
}

/* Waits until the generation differs from `seen` (or stop); returns the claim word. */
static uint64_t wait_for_task(hl_pool *pool, uint32_t seen) {
    for (int i = 0; i < SPIN_ITERS; i++) {
        uint64_t c = atomic_load_explicit(&pool->claim, memory_order_acquire);
        if (gen_of(c) != seen || atomic_load(&pool->stop)) return c;
        if (i % YIELD_EVERY == YIELD_EVERY - 1) sched_yield();
        else cpu_relax();
    }
    pthread_mutex_lock(&pool->mutex);
    uint64_t c;
    while (gen_of(c = atomic_load(&pool->claim)) == seen && !atomic_load(&pool->stop))
        pthread_cond_wait(&pool->cond, &pool->mutex);
    pthread_mutex_unlock(&pool->mutex);
    return c;
}

static void *worker_main(void *p) {
    hl_pool *pool = p;
    uint32_t seen = 0;
    for (;;) {
        uint64_t c = wait_for_task(pool, seen);
        if (atomic_load(&pool->stop)) break;
        seen = gen_of(c);
        run_shares(pool, c);
    }
    return NULL;
}

hearth_status hl_pool_init(int n_threads, hl_pool **out) {
    *out = NULL;
    if (n_threads < 1 || n_threads > MAX_SHARES)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "n_threads must be in 1..%d (got %d)", MAX_SHARES, n_threads);
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
        if (pthread_create(&pool->threads[i], NULL, worker_main, pool) != 0) {
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
    if (nth <= 1) {
        task(arg, 0, 1);
        return;
    }
    atomic_store_explicit(&pool->task, task, memory_order_relaxed);
    atomic_store_explicit(&pool->arg, arg, memory_order_relaxed);
    atomic_store_explicit(&pool->n_done, 0, memory_order_relaxed);
    const uint32_t gen = gen_of(atomic_load_explicit(&pool->claim, memory_order_relaxed)) + 1;
    const uint64_t c = (uint64_t)gen << 32 | (uint64_t)nth << 16;
    pthread_mutex_lock(&pool->mutex);
    atomic_store_explicit(&pool->claim, c, memory_order_release);
    pthread_cond_broadcast(&pool->cond);
    pthread_mutex_unlock(&pool->mutex);
    run_shares(pool, c);
    /* wait for shares other threads are still computing */
    for (long spins = 1; atomic_load_explicit(&pool->n_done, memory_order_acquire) < nth; spins++) {
        if (spins % YIELD_EVERY == 0) sched_yield();
        else cpu_relax();
    }
}

/* Distinct (package, core) pairs in sysfs; the online CPU count when sysfs is
 * unavailable. */
int32_t hl_cpu_physical_cores(void) {
    long n_cpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (n_cpu < 1) return 1;
    int seen_pkg[1024], seen_core[1024], n_seen = 0;
    for (long cpu = 0; cpu < n_cpu && n_seen < 1024; cpu++) {
        char path[128];
        int pkg = -1, core = -1;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%ld/topology/physical_package_id", cpu);
        FILE *f = fopen(path, "r");
        if (!f) return (int32_t)n_cpu;
        if (fscanf(f, "%d", &pkg) != 1) pkg = -1;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%ld/topology/core_id", cpu);
        f = fopen(path, "r");
        if (!f) return (int32_t)n_cpu;
        if (fscanf(f, "%d", &core) != 1) core = -1;
        fclose(f);
        int known = 0;
        for (int i = 0; i < n_seen; i++) known |= seen_pkg[i] == pkg && seen_core[i] == core;
        if (!known) {
            seen_pkg[n_seen] = pkg;
            seen_core[n_seen] = core;
            n_seen++;
        }
    }
    return n_seen > 0 ? n_seen : (int32_t)n_cpu;
}
