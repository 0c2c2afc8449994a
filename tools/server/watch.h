/* The server's watch: one thread that looks at every connection a few
 * times a second, so that no connection needs a thread of its own.
 *
 * - Read deadline (slowloris): a connection must deliver a request's headers
 *   and body within read_timeout_s of being ready for it (accepted, or its
 *   previous answer sent); past that its socket is shut down, which MHD sees
 *   as the client closing. An idle keep-alive connection closes the same way.
 * - Parked connections: a connection whose answer waits for the engine is
 *   suspended in MHD (which then neither reads nor notices a client leaving);
 *   the watch checks each parked client's socket and wakes the connection
 *   when the client has gone or the server is stopping.
 *
 * A park belongs to a producer (a job) and is guarded by the producer's own
 * mutex; the watch takes its list lock, then a park's mutex, never the
 * reverse, so a producer must not register or unregister while holding it. */
#ifndef HEARTH_SERVER_WATCH_H
#define HEARTH_SERVER_WATCH_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

typedef struct hl_watch hl_watch;

/* Starts the thread. `stopping` is the server's flag. NULL when a thread or
 * memory cannot be had. */
hl_watch *hl_watch_start(double read_timeout_s, const atomic_bool *stopping);
/* Stops the thread and frees the watch (no connection may be left). */
void hl_watch_stop(hl_watch *w);
/* Connections parked now (the server waits for 0 before stopping MHD). */
int hl_watch_n_parked(hl_watch *w);
/* Wakes every parked connection as if its client had gone (the last step of
 * a stop whose grace ran out). */
void hl_watch_wake_all(hl_watch *w);

/* The client of socket fd shut down or reset its side (a pipelined request
 * waiting unread does not count). Never blocks. */
bool hl_peer_gone(int fd);

/* --- connections (MHD's NOTIFY_CONNECTION; the socket context) --- */

typedef enum hl_conn_phase {
    HL_CONN_READING, /* waiting for, or receiving, a request: the deadline runs */
    HL_CONN_BUSY,    /* the request is complete: being answered */
} hl_conn_phase;

typedef struct hl_conn hl_conn;
/* A connection was accepted on socket fd: tracked (ready for a request)
 * until hl_watch_conn_closed. NULL when memory runs out (it is then not
 * watched). */
hl_conn *hl_watch_conn_open(hl_watch *w, int fd);
/* MHD closes the connection (before it closes the socket). */
void hl_watch_conn_closed(hl_watch *w, hl_conn *c);
/* The connection's phase; READING restarts its deadline. */
void hl_watch_conn_phase(hl_conn *c, hl_conn_phase phase);

/* --- parks --- */

typedef struct hl_park {
    struct MHD_Connection *conn;
    int fd;              /* the client's socket */
    pthread_mutex_t *mu; /* the producer's mutex: guards the fields below */
    bool parked;         /* the connection is suspended, waiting for the producer */
    bool gone;           /* the client closed its side (seen by the watch) */
    bool stop_seen;      /* woken once for the server stopping */
    hl_watch *w;
    struct hl_park *prev, *next; /* the watch's list (under its lock) */
} hl_park;

/* Registers a park for conn (whose socket is fd), guarded by mu. */
void hl_park_init(hl_park *p, hl_watch *w, struct MHD_Connection *conn, int fd, pthread_mutex_t *mu);
/* Unregisters it; the caller must not hold *p->mu, and the park must not be parked. */
void hl_park_fini(hl_park *p);
/* Under *p->mu, from an MHD callback of the connection: suspends it until
 * hl_park_wake. */
void hl_park_suspend(hl_park *p);
/* Under *p->mu, from any thread: resumes the connection if it is parked. */
void hl_park_wake(hl_park *p);

#endif
