/* The watch thread: read deadlines and parked connections (see watch.h). */
#define _GNU_SOURCE /* POLLRDHUP */
#include "watch.h"

#include "clock.h"

#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>

/* How often the watch looks: a parked client that left is noticed (and its
 * slot freed) within this plus one engine step. */
#define HL_WATCH_TICK_S 0.05

struct hl_conn {
    int fd;
    atomic_int phase;     /* hl_conn_phase */
    _Atomic double t0;    /* monotonic seconds when it became ready for a request */
    bool cut;             /* its socket was shut down (under the watch's lock) */
    hl_conn *prev, *next; /* under the watch's lock */
};

struct hl_watch {
    pthread_mutex_t mu; /* the lists */
    pthread_cond_t cv;  /* stop */
    pthread_t thread;
    bool quit; /* under mu */
    double read_timeout_s;
    const atomic_bool *stopping;
    atomic_int n_parked;
    hl_conn *conns;
    hl_park *parks;
};

bool hl_peer_gone(int fd) {
    /* POLLRDHUP: the peer shut down its side, also with bytes still unread
     * (a TLS close_notify); POLLHUP/POLLERR: reset */
    struct pollfd pfd = {.fd = fd, .events = POLLRDHUP};
    return poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/* Under w->mu: shuts down the sockets of connections past their deadline. */
static void cut_late(hl_watch *w, double t) {
    for (hl_conn *c = w->conns; c; c = c->next) {
        if (c->cut || atomic_load(&c->phase) != HL_CONN_READING || t - atomic_load(&c->t0) < w->read_timeout_s)
            continue;
        /* MHD reads end of file, or fails to, and closes the connection; the
         * socket stays open (so its number is not reused) until it does */
        shutdown(c->fd, SHUT_RDWR);
        c->cut = true;
    }
}

/* Under w->mu: wakes parked connections whose client left, and each one
 * once when the server stops. */
static void wake_parks(hl_watch *w) {
    bool stopping = atomic_load(w->stopping);
    for (hl_park *p = w->parks; p; p = p->next) {
        pthread_mutex_lock(p->mu);
        if (p->parked && !p->gone && hl_peer_gone(p->fd)) p->gone = true;
        bool stop = stopping && !p->stop_seen;
        if (stop) p->stop_seen = true;
        if (p->gone || stop) hl_park_wake(p);
        pthread_mutex_unlock(p->mu);
    }
}

static void *watch_main(void *arg) {
    hl_watch *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->quit) {
        double t = hl_now_s();
        if (w->read_timeout_s > 0) cut_late(w, t);
        wake_parks(w);
        hl_cond_wait_until(&w->cv, &w->mu, t + HL_WATCH_TICK_S);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

hl_watch *hl_watch_start(double read_timeout_s, const atomic_bool *stopping) {
    hl_watch *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->read_timeout_s = read_timeout_s;
    w->stopping = stopping;
    bool ok = hl_cond_init_monotonic(&w->cv);
    if (ok && pthread_mutex_init(&w->mu, NULL) != 0) {
        pthread_cond_destroy(&w->cv);
        ok = false;
    }
    if (ok && pthread_create(&w->thread, NULL, watch_main, w) != 0) {
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        ok = false;
    }
    if (!ok) {
        free(w);
        return NULL;
    }
    return w;
}

void hl_watch_stop(hl_watch *w) {
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->quit = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    while (w->conns) { /* MHD reports every close before it stops; none is left */
        hl_conn *c = w->conns;
        w->conns = c->next;
        free(c);
    }
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

int hl_watch_n_parked(hl_watch *w) { return atomic_load(&w->n_parked); }

void hl_watch_wake_all(hl_watch *w) {
    pthread_mutex_lock(&w->mu);
    for (hl_park *p = w->parks; p; p = p->next) {
        pthread_mutex_lock(p->mu);
        p->gone = true;
        hl_park_wake(p);
        pthread_mutex_unlock(p->mu);
    }
    pthread_mutex_unlock(&w->mu);
}

hl_conn *hl_watch_conn_open(hl_watch *w, int fd) {
    hl_conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->fd = fd;
    atomic_init(&c->phase, HL_CONN_READING);
    atomic_init(&c->t0, hl_now_s());
    pthread_mutex_lock(&w->mu);
    c->next = w->conns;
    if (w->conns) w->conns->prev = c;
    w->conns = c;
    pthread_mutex_unlock(&w->mu);
    return c;
}

void hl_watch_conn_closed(hl_watch *w, hl_conn *c) {
    if (!c) return;
    pthread_mutex_lock(&w->mu);
    if (c->prev) c->prev->next = c->next;
    else w->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    pthread_mutex_unlock(&w->mu);
    free(c);
}

void hl_watch_conn_phase(hl_conn *c, hl_conn_phase phase) {
    if (!c) return;
    if (phase == HL_CONN_READING) atomic_store(&c->t0, hl_now_s());
    atomic_store(&c->phase, phase);
}

void hl_park_init(hl_park *p, hl_watch *w, struct MHD_Connection *conn, int fd, pthread_mutex_t *mu) {
    *p = (hl_park){.conn = conn, .fd = fd, .mu = mu, .w = w};
    pthread_mutex_lock(&w->mu);
    p->next = w->parks;
    if (w->parks) w->parks->prev = p;
    w->parks = p;
    pthread_mutex_unlock(&w->mu);
}

void hl_park_fini(hl_park *p) {
    hl_watch *w = p->w;
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    if (p->prev) p->prev->next = p->next;
    else w->parks = p->next;
    if (p->next) p->next->prev = p->prev;
    pthread_mutex_unlock(&w->mu);
    p->w = NULL;
}

void hl_park_suspend(hl_park *p) {
    MHD_suspend_connection(p->conn);
    p->parked = true;
    atomic_fetch_add(&p->w->n_parked, 1);
}

void hl_park_wake(hl_park *p) {
    if (!p->parked) return;
    p->parked = false;
    atomic_fetch_sub(&p->w->n_parked, 1);
    MHD_resume_connection(p->conn);
}
