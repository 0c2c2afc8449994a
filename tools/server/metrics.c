/* GET /metrics: the engine's counters in Prometheus' text exposition format
 * (version 0.0.4), every name prefixed hearth_. Gauges are read at the
 * call; counters only grow; the latency histograms are cumulative, as
 * Prometheus expects. */
#include <math.h>

#include "buf.h"
#include "server_impl.h"

static bool metric(hl_buf *b, const char *name, const char *type, const char *help, double value) {
    return hl_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type, name, value);
}

static bool histogram(hl_buf *b, const char *name, const char *help, const hearth_histogram *h) {
    bool ok = hl_buf_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    for (int i = 0; ok && i < HEARTH_HIST_BUCKETS; i++) {
        if (isinf(h->le[i]))
            ok = hl_buf_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)h->count[i]);
        else ok = hl_buf_printf(b, "%s_bucket{le=\"%g\"} %llu\n", name, h->le[i], (unsigned long long)h->count[i]);
    }
    return ok && hl_buf_printf(b, "%s_sum %.17g\n%s_count %llu\n", name, h->sum, name, (unsigned long long)h->n);
}

static double ratio(double a, double b) { return b > 0 ? a / b : 0; }

void hl_handle_metrics(hl_call *call, hl_reply *rep) {
    hearth_engine_stats s;
    hearth_engine_stats_get(call->engine, &s);
    hl_buf b = {0};
    bool ok =
        metric(&b, "hearth_requests_running", "gauge", "Requests in slots (reading their prompt or generating).",
               s.n_running) &&
        metric(&b, "hearth_requests_waiting", "gauge", "Requests queued for a slot.", s.n_waiting) &&
        metric(&b, "hearth_slots", "gauge", "Slots: requests that can run at once.", s.n_slots) &&
        metric(&b, "hearth_requests_finished_total", "counter", "Requests finished, for any reason.",
               (double)s.n_requests) &&
        metric(&b, "hearth_prompt_tokens_total", "counter", "Prompt tokens decoded (cached ones not counted).",
               (double)s.n_prompt_tokens) &&
        metric(&b, "hearth_prompt_tokens_cached_total", "counter", "Prompt tokens reused from a slot's cache.",
               (double)s.n_cached_tokens) &&
        metric(&b, "hearth_generated_tokens_total", "counter", "Tokens generated.", (double)s.n_generated_tokens) &&
        metric(&b, "hearth_prompt_seconds_total", "counter", "Engine time spent on prompt tokens.", s.prompt_seconds) &&
        metric(&b, "hearth_generation_seconds_total", "counter", "Engine time spent on generated tokens.",
               s.generation_seconds) &&
        metric(&b, "hearth_prompt_tokens_per_second", "gauge", "Prompt tokens per second of prompt time, overall.",
               ratio((double)s.n_prompt_tokens, s.prompt_seconds)) &&
        metric(&b, "hearth_generation_tokens_per_second", "gauge",
               "Generated tokens per second of generation time, overall.",
               ratio((double)s.n_generated_tokens, s.generation_seconds)) &&
        metric(&b, "hearth_kv_cache_used_cells", "gauge", "KV cache cells holding tokens, all slots.", s.kv_used) &&
        metric(&b, "hearth_kv_cache_usage_ratio", "gauge", "Share of the KV cache holding tokens (0 to 1).",
               ratio(s.kv_used, s.kv_size)) &&
        histogram(&b, "hearth_time_to_first_token_seconds", "From a request's arrival to its first token.", &s.ttft) &&
        histogram(&b, "hearth_inter_token_latency_seconds", "Between consecutive tokens of a request.", &s.inter_token);
    if (!ok) {
        hl_buf_free(&b);
        hl_error e;
        hl_error_set(&e, 500, "server_error", NULL, NULL, "out of memory");
        hl_reply_error(rep, &e);
        return;
    }
    *rep = (hl_reply){.status = 200, .content_type = "text/plain; version=0.0.4; charset=utf-8"};
    rep->body = hl_buf_take(&b, &rep->len);
}
