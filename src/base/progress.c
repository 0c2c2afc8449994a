/* Progress reports (progress.h): throttled calls to the caller's callback
 * with a rate smoothed by an exponential moving average over half-second
 * samples (so a resumed download's first bytes, already on disk, do not count
 * as speed). */
#include "base/progress.h"

#include "base/clock.h"

#define REPORT_EVERY 0.1 /* seconds between callbacks */
#define SAMPLE_EVERY 0.5 /* seconds between rate samples */
#define SMOOTHING 0.3    /* weight of the newest sample */

void hl_progress_init(hl_progress *p, hearth_progress_fn fn, void *user, const char *what, uint64_t total) {
    *p = (hl_progress){.fn = fn, .user = user, .what = what, .total = total, .t0 = hl_now()};
    p->last_report = -1.0;
}

bool hl_progress_report(hl_progress *p, uint64_t done, bool last) {
    if (!p->fn || p->cancelled) return !p->cancelled;
    const double now = hl_now();
    done += p->base;
    if (!p->sampled) {
        p->sample_t = now;
        p->sample_done = done;
        p->sampled = true;
    } else if (now - p->sample_t >= SAMPLE_EVERY) {
        const double inst = (double)(done >= p->sample_done ? done - p->sample_done : 0) / (now - p->sample_t);
        p->rate = p->rate > 0 ? SMOOTHING * inst + (1 - SMOOTHING) * p->rate : inst;
        p->sample_t = now;
        p->sample_done = done;
    }
    if (!last && p->last_report >= 0 && now - p->last_report < REPORT_EVERY) return true;
    p->last_report = now;
    const hearth_progress r = {
        .what = p->what,
        .done = done,
        .total = p->total,
        .rate = p->rate,
        .eta = p->total && p->rate > 0 && done <= p->total ? (double)(p->total - done) / p->rate : -1.0,
        .elapsed = now - p->t0,
        .finished = last,
    };
    if (!p->fn(&r, p->user)) p->cancelled = true;
    return !p->cancelled;
}
