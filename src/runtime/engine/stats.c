/* The engine's counters: Prometheus-style latency histograms (cumulative buckets with fixed upper bounds, as the
 * Prometheus exposition format's `le` buckets). */
#include <math.h>
#include <string.h>

#include "runtime/engine/engine_impl.h"

/* Upper bounds in seconds: 5 ms (a fast decode step) to a minute (a long
 * prompt queued behind others), then +inf. */
static const double BOUNDS[HEARTH_HIST_BUCKETS - 1] = {0.005, 0.01, 0.025, 0.05, 0.1,  0.25, 0.5,
                                                       1.0,   2.5,  5.0,   10.0, 30.0, 60.0};

static void hist_init(hearth_histogram *h) {
    memset(h, 0, sizeof *h);
    for (int i = 0; i < HEARTH_HIST_BUCKETS - 1; i++) h->le[i] = BOUNDS[i];
    h->le[HEARTH_HIST_BUCKETS - 1] = INFINITY;
}

void hl_stats_init(hearth_engine_stats *st, int32_t n_slots, uint32_t n_ctx) {
    memset(st, 0, sizeof *st);
    st->n_slots = n_slots;
    st->kv_size = n_ctx;
    hist_init(&st->ttft);
    hist_init(&st->inter_token);
}

void hl_hist_observe(hearth_histogram *h, double seconds) {
    for (int i = 0; i < HEARTH_HIST_BUCKETS; i++)
        if (seconds <= h->le[i]) h->count[i]++;
    h->n++;
    h->sum += seconds;
}
