/* The bridge between the engine's thread and a connection: one HTTP
 * request's engine requests (n choices) and the queue their pieces wait in.
 * The piece callback copies each piece into an event and returns at once;
 * the connection takes events with hl_job_next(), which also notices a
 * client that went away (and the server stopping) and cancels the requests,
 * so their slots are free within one engine step. A stream's connection does
 * not wait for events: it parks (MHD suspends it) and the next piece wakes
 * it (watch.h). */
#ifndef HEARTH_SERVER_JOB_H
#define HEARTH_SERVER_JOB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hearth.h"
#include "watch.h"

/* One piece of one choice, copied out of the callback. */
typedef struct hl_event {
    struct hl_event *next;
    int32_t choice; /* 0 .. n-1 */
    int32_t token;  /* as hearth_piece */
    float logprob;
    int32_t n_top;
    hearth_token_logprob top[HEARTH_MAX_TOP_LOGPROBS];
    hearth_finish_reason finish;
    int32_t n_prompt, n_cached, n_generated;
    const char *error; /* FINISH_ERROR: the message (in this allocation) */
    const char *stop;  /* FINISH_STOP by a stop string: it (in this allocation); else NULL */
    int32_t n_calls;   /* tool-call deltas, their strings in this allocation */
    hearth_tool_call_delta *calls;
    size_t len;
    char text[]; /* len bytes + NUL */
} hl_event;

typedef struct hl_job hl_job;

/* The connection a job answers. */
typedef struct hl_job_conn {
    hl_watch *watch;
    struct MHD_Connection *conn;
    int fd;                      /* the client's socket */
    const atomic_bool *stopping; /* the server's flag */
} hl_job_conn;

/* Submits n requests made from *p (choice i samples with seed p->sampling.seed
 * + i); their callback and user are the job's. On failure nothing is left
 * running, the engine's status is returned and its message copied into msg. */
hearth_status hl_job_start(hearth_engine *engine, const hearth_request_params *p, int32_t n, const hl_job_conn *c,
                           hl_job **out, char *msg, size_t msg_size);

typedef enum hl_job_wait {
    HL_JOB_EVENT,  /* *ev holds the next event: free it with free() */
    HL_JOB_DONE,   /* every choice has had its last event */
    HL_JOB_GONE,   /* the client closed its connection: the requests are cancelled */
    HL_JOB_PARKED, /* no event yet: the connection is suspended until one comes */
} hl_job_wait;

/* The next event. Without `park` it blocks until there is one (a worker
 * thread's wait); with it, called from an MHD callback of the connection, it
 * parks the connection instead of waiting. When the server is stopping it
 * cancels the requests and goes on delivering their last (CANCELLED) events. */
hl_job_wait hl_job_next(hl_job *job, hl_event **ev, bool park);

/* The connection is done with the job: cancels what still runs and drops its
 * events. The memory goes when the engine has delivered every last piece. */
void hl_job_free(hl_job *job);

#endif
