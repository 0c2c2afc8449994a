/* A request's engine work as the connection sees it (see job.h).
 *
 * Lifetime: the job lives while the connection holds it (until
 * hl_job_free) and while any of its choices has not had its last piece (the
 * engine calls back until then). Whoever lets go last frees it: the
 * connection in hl_job_free, or the engine thread in the callback of the
 * last final piece. `mu` guards the queue and those two counts; the callback
 * never blocks on anything but `mu`, which is held only for a queue push or
 * pop. */
#include "job.h"

#include "clock.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Pieces a stream may have waiting for its client: a client that reads so
 * slowly that this many pile up is cancelled rather than buffered without
 * bound (about 4096 tokens of text: longer than most answers). */
#define HL_JOB_MAX_EVENTS 4096
/* How often a waiting worker checks whether its client is still there: the
 * slot of a vanished client is freed within this plus one engine step. */
#define HL_PEER_CHECK_S 0.05

typedef struct hl_choice {
    hl_job *job;
    uint64_t id; /* the engine's request id */
} hl_choice;

struct hl_job {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* an event arrived or a choice ended */
    hearth_engine *engine;
    int fd;
    const atomic_bool *stopping;
    int32_t n;         /* choices submitted */
    bool cancelled;    /* the connection's side only */
    double next_check; /* the connection's side only; monotonic seconds */
    /* under mu */
    hl_park park;   /* the connection while it waits for a piece */
    int32_t n_live; /* choices accepted that have not had their last piece */
    bool closed;    /* the connection let go */
    hl_event *head, *tail;
    size_t n_queued;
    hl_choice choice[]; /* [n] */
};

static void drop_events(hl_job *job) {
    while (job->head) {
        hl_event *ev = job->head;
        job->head = ev->next;
        free(ev);
    }
    job->tail = NULL;
    job->n_queued = 0;
}

static void destroy(hl_job *job) {
    drop_events(job);
    pthread_cond_destroy(&job->cv);
    pthread_mutex_destroy(&job->mu);
    free(job);
}

/* Bytes the piece's tool-call deltas take: the array, then each id, name
 * (NUL-terminated) and arguments. */
static size_t calls_size(const hearth_piece *pc) {
    size_t n = (size_t)pc->n_tool_calls * sizeof(hearth_tool_call_delta);
    for (int32_t i = 0; i < pc->n_tool_calls; i++) {
        const hearth_tool_call_delta *d = &pc->tool_calls[i];
        n += (d->id ? strlen(d->id) + 1 : 0) + (d->name ? strlen(d->name) + 1 : 0) + d->arguments_len + 1;
    }
    return n;
}

/* Copies the deltas to `at` (aligned for the array). */
static hearth_tool_call_delta *copy_calls(const hearth_piece *pc, char *at) {
    hearth_tool_call_delta *calls = (hearth_tool_call_delta *)at;
    char *s = at + (size_t)pc->n_tool_calls * sizeof *calls;
    for (int32_t i = 0; i < pc->n_tool_calls; i++) {
        const hearth_tool_call_delta *d = &pc->tool_calls[i];
        calls[i] = (hearth_tool_call_delta){.index = d->index, .arguments_len = d->arguments_len};
        if (d->id) {
            calls[i].id = s;
            s = stpcpy(s, d->id) + 1;
        }
        if (d->name) {
            calls[i].name = s;
            s = stpcpy(s, d->name) + 1;
        }
        calls[i].arguments = s;
        if (d->arguments_len) memcpy(s, d->arguments, d->arguments_len);
        s[d->arguments_len] = '\0';
        s += d->arguments_len + 1;
    }
    return calls;
}

static hl_event *event_new(int32_t choice, const hearth_piece *pc) {
    size_t err_len = pc->error ? strlen(pc->error) + 1 : 0, stop_len = pc->stop ? strlen(pc->stop) + 1 : 0;
    const size_t align = _Alignof(hearth_tool_call_delta), head = sizeof(hl_event) + pc->len + 1 + err_len + stop_len;
    const size_t calls_at = (head + align - 1) / align * align;
    hl_event *ev = malloc(pc->n_tool_calls > 0 ? calls_at + calls_size(pc) : head);
    if (!ev) return NULL;
    int32_t n_top = pc->n_top < 0 ? 0 : pc->n_top > HEARTH_MAX_TOP_LOGPROBS ? HEARTH_MAX_TOP_LOGPROBS : pc->n_top;
    *ev = (hl_event){.choice = choice,
                     .token = pc->token,
                     .logprob = pc->logprob,
                     .n_top = n_top,
                     .finish = pc->finish,
                     .n_prompt = pc->n_prompt,
                     .n_cached = pc->n_cached,
                     .n_generated = pc->n_generated,
                     .len = pc->len};
    if (n_top) memcpy(ev->top, pc->top, (size_t)n_top * sizeof *ev->top);
    if (pc->len) memcpy(ev->text, pc->text, pc->len);
    ev->text[pc->len] = '\0';
    if (err_len) {
        char *err = ev->text + pc->len + 1;
        memcpy(err, pc->error, err_len);
        ev->error = err;
    }
    if (stop_len) {
        char *stop = ev->text + pc->len + 1 + err_len;
        memcpy(stop, pc->stop, stop_len);
        ev->stop = stop;
    }
    if (pc->n_tool_calls > 0) {
        ev->n_calls = pc->n_tool_calls;
        ev->calls = copy_calls(pc, (char *)ev + calls_at);
    }
    return ev;
}

/* On the engine thread: queue the piece and return. */
static bool on_piece(const hearth_piece *pc, void *user) {
    hl_choice *c = user;
    hl_job *job = c->job;
    bool final = pc->finish != HEARTH_FINISH_NONE;
    pthread_mutex_lock(&job->mu);
    bool keep = !job->closed;
    /* a final piece is queued past the limit: the connection must see the end */
    if (keep && (final || job->n_queued < HL_JOB_MAX_EVENTS)) {
        hl_event *ev = event_new((int32_t)(c - job->choice), pc);
        if (ev) {
            if (job->tail) job->tail->next = ev;
            else job->head = ev;
            job->tail = ev;
            job->n_queued++;
        }
        keep = ev != NULL;
    } else keep = false;
    if (final) job->n_live--;
    pthread_cond_signal(&job->cv);
    if (!job->closed) hl_park_wake(&job->park);
    bool last = final && job->closed && job->n_live == 0;
    pthread_mutex_unlock(&job->mu);
    if (last) destroy(job);
    return keep;
}

/* The connection's side, while it holds the job (the ids do not change). */
static void cancel_all(hl_job *job) {
    for (int32_t i = 0; i < job->n; i++) hearth_engine_cancel(job->engine, job->choice[i].id);
    job->cancelled = true;
}

hearth_status hl_job_start(hearth_engine *engine, const hearth_request_params *p, int32_t n, const hl_job_conn *c,
                           hl_job **out, char *msg, size_t msg_size) {
    *out = NULL;
    hl_job *job = calloc(1, sizeof *job + (size_t)n * sizeof job->choice[0]);
    const bool mu_ok = job && pthread_mutex_init(&job->mu, NULL) == 0;
    const bool cv_ok = mu_ok && hl_cond_init_monotonic(&job->cv);
    if (!cv_ok) {
        if (mu_ok) pthread_mutex_destroy(&job->mu);
        free(job);
        snprintf(msg, msg_size, "out of memory starting a request");
        return HEARTH_ERR_OUT_OF_MEMORY;
    }
    job->engine = engine;
    job->fd = c->fd;
    job->stopping = c->stopping;
    hl_park_init(&job->park, c->watch, c->conn, c->fd, &job->mu);
    job->next_check = hl_now_s() + HL_PEER_CHECK_S;
    hearth_request_params rp = *p;
    rp.on_piece = on_piece;
    for (int32_t i = 0; i < n; i++) {
        job->choice[i].job = job;
        rp.user = &job->choice[i];
        rp.sampling.seed = p->sampling.seed + (uint64_t)i;
        pthread_mutex_lock(&job->mu);
        job->n_live++;
        pthread_mutex_unlock(&job->mu);
        hearth_status st = hearth_engine_submit(engine, &rp, &job->choice[i].id);
        if (st != HEARTH_OK) {
            snprintf(msg, msg_size, "%s", hearth_last_error());
            pthread_mutex_lock(&job->mu);
            job->n_live--;
            pthread_mutex_unlock(&job->mu);
            hl_job_free(job);
            return st;
        }
        job->n = i + 1;
    }
    *out = job;
    return HEARTH_OK;
}

hl_job_wait hl_job_next(hl_job *job, hl_event **ev, bool park) {
    pthread_mutex_lock(&job->mu);
    for (;;) {
        double t = hl_now_s();
        if (job->park.gone || t >= job->next_check) {
            job->next_check = t + HL_PEER_CHECK_S;
            bool gone = job->park.gone;
            pthread_mutex_unlock(&job->mu);
            if (gone || hl_peer_gone(job->fd)) {
                cancel_all(job);
                return HL_JOB_GONE;
            }
            if (!job->cancelled && atomic_load(job->stopping)) cancel_all(job);
            pthread_mutex_lock(&job->mu);
        }
        if (job->head) {
            *ev = job->head;
            job->head = (*ev)->next;
            if (!job->head) job->tail = NULL;
            job->n_queued--;
            pthread_mutex_unlock(&job->mu);
            (*ev)->next = NULL;
            return HL_JOB_EVENT;
        }
        if (job->n_live == 0) {
            pthread_mutex_unlock(&job->mu);
            return HL_JOB_DONE;
        }
        if (park) {
            hl_park_suspend(&job->park);
            pthread_mutex_unlock(&job->mu);
            return HL_JOB_PARKED;
        }
        hl_cond_wait_until(&job->cv, &job->mu, job->next_check);
    }
}

void hl_job_free(hl_job *job) {
    if (!job) return;
    hl_park_fini(&job->park);
    pthread_mutex_lock(&job->mu);
    bool running = job->n_live > 0;
    pthread_mutex_unlock(&job->mu);
    if (running && !job->cancelled) cancel_all(job);
    pthread_mutex_lock(&job->mu);
    job->closed = true;
    drop_events(job);
    bool last = job->n_live == 0;
    pthread_mutex_unlock(&job->mu);
    if (last) destroy(job);
}
