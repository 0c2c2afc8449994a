/* The worker threads (see pool.h). */
#include "pool.h"

#include <pthread.h>
#include <stdlib.h>

struct hl_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a task came, or stop */
    hl_task *head, *tail;
    size_t n_queued;
    bool quit;
    int n_threads;
    pthread_t threads[];
};

static void *worker(void *arg) {
    hl_pool *pool = arg;
    pthread_mutex_lock(&pool->mu);
    for (;;) {
        while (!pool->head && !pool->quit) pthread_cond_wait(&pool->cv, &pool->mu);
        hl_task *t = pool->head;
        if (!t) break; /* quit, and nothing left */
        pool->head = t->next;
        if (!pool->head) pool->tail = NULL;
        pool->n_queued--;
        pthread_mutex_unlock(&pool->mu);
        t->run(t);
        pthread_mutex_lock(&pool->mu);
    }
    pthread_mutex_unlock(&pool->mu);
    return NULL;
}

hl_pool *hl_pool_start(int n_threads) {
    hl_pool *pool = calloc(1, sizeof *pool + (size_t)n_threads * sizeof(pthread_t));
    if (!pool) return NULL;
    if (pthread_mutex_init(&pool->mu, NULL) != 0) {
        free(pool);
        return NULL;
    }
    if (pthread_cond_init(&pool->cv, NULL) != 0) {
        pthread_mutex_destroy(&pool->mu);
        free(pool);
        return NULL;
    }
    for (; pool->n_threads < n_threads; pool->n_threads++)
        if (pthread_create(&pool->threads[pool->n_threads], NULL, worker, pool) != 0) {
            hl_pool_stop(pool);
            return NULL;
        }
    return pool;
}

void hl_pool_push(hl_pool *pool, hl_task *task) {
    task->next = NULL;
    pthread_mutex_lock(&pool->mu);
    if (pool->tail) pool->tail->next = task;
    else pool->head = task;
    pool->tail = task;
    pool->n_queued++;
    pthread_cond_signal(&pool->cv);
    pthread_mutex_unlock(&pool->mu);
}

size_t hl_pool_queued(hl_pool *pool) {
    pthread_mutex_lock(&pool->mu);
    size_t n = pool->n_queued;
    pthread_mutex_unlock(&pool->mu);
    return n;
}

void hl_pool_stop(hl_pool *pool) {
    if (!pool) return;
    pthread_mutex_lock(&pool->mu);
    pool->quit = true;
    pthread_cond_broadcast(&pool->cv);
    pthread_mutex_unlock(&pool->mu);
    for (int i = 0; i < pool->n_threads; i++) pthread_join(pool->threads[i], NULL);
    pthread_cond_destroy(&pool->cv);
    pthread_mutex_destroy(&pool->mu);
    free(pool);
}
