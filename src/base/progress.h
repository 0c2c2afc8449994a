/* Progress of a long operation (a download, uploading weights to a GPU) for
 * a caller's hearth_progress_fn: bytes done of a total, a rate smoothed over
 * the last seconds, the time left, and throttling so the callback runs about
 * ten times a second, not once per network packet. */
#ifndef HEARTH_BASE_PROGRESS_H
#define HEARTH_BASE_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

#include "hearth.h"

typedef struct hl_progress {
    hearth_progress_fn fn; /* NULL: reports are dropped (and never cancel) */
    void *user;
    const char *what;   /* shown to the callback; not copied */
    uint64_t total;     /* bytes in all, 0 when unknown */
    uint64_t base;      /* bytes done before the current part (earlier files of a split model) */
    double t0;          /* monotonic seconds at init */
    double last_report; /* when the callback last ran */
    double sample_t;    /* the rate's last sample: time and bytes */
    uint64_t sample_done;
    bool sampled;
    double rate;    /* bytes/s, smoothed */
    bool cancelled; /* the callback returned false */
} hl_progress;

void hl_progress_init(hl_progress *p, hearth_progress_fn fn, void *user, const char *what, uint64_t total);

/* Reports base + done bytes. Throttled to one call per 100 ms unless `last`.
 * Returns false once the callback has asked to cancel (and from then on). */
bool hl_progress_report(hl_progress *p, uint64_t done, bool last);

#endif
