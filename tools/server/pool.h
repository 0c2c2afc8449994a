/* The server's workers: a fixed set of threads that run the handlers of
 * requests (parsing, templates, waiting for a whole answer or for
 * embeddings), so that MHD's event threads never block. Tasks run in the
 * order they came. */
#ifndef HEARTH_SERVER_POOL_H
#define HEARTH_SERVER_POOL_H

#include <stdbool.h>
#include <stddef.h>

/* A task: embedded in the caller's own struct, which must live until run
 * has been called (run may free it). */
typedef struct hl_task {
    struct hl_task *next;
    void (*run)(struct hl_task *task);
} hl_task;

typedef struct hl_pool hl_pool;

/* Starts n_threads workers. NULL when a thread or memory cannot be had. */
hl_pool *hl_pool_start(int n_threads);
/* Queues a task; a worker runs it. Never fails. */
void hl_pool_push(hl_pool *pool, hl_task *task);
/* Tasks queued and not yet taken by a worker. */
size_t hl_pool_queued(hl_pool *pool);
/* Runs the tasks still queued, joins the workers and frees the pool. */
void hl_pool_stop(hl_pool *pool);

#endif
