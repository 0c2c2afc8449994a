/* Measures what a long prompt joining the engine costs the streams already
 * generating (issue 11's bar: their inter-token delay while a 2,000-token
 * prompt is read stays within 2x of its value without it). N greedy streams
 * run; their inter-token delays are recorded for a window alone, then while
 * one more request's long prompt is prefilled (from its submit to its first
 * token), then alone again. The streams grow deeper during the prefill (a
 * decode step costs more at the end than at the start), so the baseline is
 * the mean of the windows before and after. Prints the median and mean
 * delay of the windows, the ratio of the prefill's mean to that baseline,
 * and the long prompt's time to first token.
 * Build: cc -O2 -Iinclude bench/prefill_stall.c build/libhearth.a -o build/prefill_stall \
 *          $(pkg-config --libs libpcre2-8 libcurl libcrypto libcjson) -lclblast -lOpenCL -lm -lpthread
 *        (a build without CUDA, -DHEARTH_CUDA=OFF; with CUDA add the CUDA libraries of the README)
 * Usage: build/prefill_stall MODEL [streams=4] [prompt_tokens=2000] [threads=2] [flash_attn=auto]
 * (flash_attn: on, off or auto, as hearth_context_params.flash_attn) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_time.h"

#include "hearth.h"

#define MAX_DELAYS 100000

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static double delays[3][MAX_DELAYS]; /* [0] alone, [1] during the prefill, [2] alone after it */
static int n_delays[3];
static int window = -1;       /* -1: not recording, else the window */
static double t_first = -1.0; /* the long prompt's first token, seconds */

typedef struct stream {
    double last;
} stream;

static bool on_stream(const hearth_piece *p, void *user) {
    stream *s = user;
    const double t = bench_now();
    pthread_mutex_lock(&mu);
    if (s->last > 0 && window >= 0 && n_delays[window] < MAX_DELAYS) delays[window][n_delays[window]++] = t - s->last;
    pthread_mutex_unlock(&mu);
    s->last = t;
    return p->finish == HEARTH_FINISH_NONE;
}

static bool on_long(const hearth_piece *p, void *user) {
    (void)user;
    pthread_mutex_lock(&mu);
    if (t_first < 0 && (p->token >= 0 || p->finish != HEARTH_FINISH_NONE)) t_first = bench_now();
    pthread_mutex_unlock(&mu);
    return false; /* one token is all it is for */
}

/* Prints a window's median and mean; returns the mean, seconds. */
static double report(const char *what, double *d, int n) {
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += d[i];
    bench_sort(d, (size_t)n);
    const double mean = n ? sum / n : 0.0;
    printf("%-26s %6d delays, median %7.2f ms, mean %7.2f ms\n", what, n, n ? d[n / 2] * 1e3 : 0.0, mean * 1e3);
    return mean;
}

static void sleep_s(double s) {
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL [streams=4] [prompt_tokens=2000] [threads=2] [flash_attn=auto]\n", argv[0]);
        return 2;
    }
    const int n_streams = argc > 2 ? atoi(argv[2]) : 4, n_long = argc > 3 ? atoi(argv[3]) : 2000;
    hearth_model *m;
    if (hearth_model_load(argv[1], NULL, &m) != HEARTH_OK) {
        fprintf(stderr, "%s\n", hearth_last_error());
        return 1;
    }
    hearth_engine_params ep = hearth_engine_default_params();
    ep.ctx.n_seq_max = (uint32_t)n_streams + 1;
    ep.ctx.n_ctx = ep.ctx.n_seq_max * (uint32_t)(n_long + 64 > 4096 ? n_long + 64 : 4096);
    ep.ctx.n_threads = argc > 4 ? atoi(argv[4]) : 2;
    if (argc > 5)
        ep.ctx.flash_attn = !strcmp(argv[5], "on")    ? HEARTH_FLASH_ATTN_ON
                            : !strcmp(argv[5], "off") ? HEARTH_FLASH_ATTN_OFF
                                                      : HEARTH_FLASH_ATTN_AUTO;
    hearth_engine *e;
    if (hearth_engine_init(m, &ep, &e) != HEARTH_OK) {
        fprintf(stderr, "%s\n", hearth_last_error());
        return 1;
    }
    static stream streams[256];
    hearth_request_params p = hearth_request_default_params();
    p.sampling.temp = 0.0f;
    p.ignore_eos = true;
    p.prompt = "Write a long story about a lighthouse keeper.";
    p.on_piece = on_stream;
    for (int i = 0; i < n_streams && i < 256; i++) {
        p.user = &streams[i];
        if (hearth_engine_submit(e, &p, NULL) != HEARTH_OK) {
            fprintf(stderr, "%s\n", hearth_last_error());
            return 1;
        }
    }
    sleep_s(1.0); /* warm-up: every stream generating */
    pthread_mutex_lock(&mu);
    window = 0;
    pthread_mutex_unlock(&mu);
    sleep_s(3.0);
    /* a prompt of n_long tokens (token ids of ordinary text, repeated) */
    int32_t *toks = malloc((size_t)n_long * sizeof *toks), base[64];
    size_t n_base = 0;
    const char *text = "The keeper climbed the stairs every evening and lit the lamp for the ships at sea. ";
    hearth_tokenize(m, text, strlen(text), false, false, base, 64, &n_base);
    for (int i = 0; i < n_long; i++) toks[i] = base[(size_t)i % n_base];
    hearth_request_params lp = hearth_request_default_params();
    lp.tokens = toks;
    lp.n_tokens = (size_t)n_long;
    lp.max_tokens = 1;
    lp.on_piece = on_long;
    pthread_mutex_lock(&mu);
    window = 1;
    pthread_mutex_unlock(&mu);
    const double t_submit = bench_now();
    if (hearth_engine_submit(e, &lp, NULL) != HEARTH_OK) {
        fprintf(stderr, "%s\n", hearth_last_error());
        return 1;
    }
    for (;;) {
        pthread_mutex_lock(&mu);
        const bool done = t_first >= 0;
        if (done) window = 2;
        pthread_mutex_unlock(&mu);
        if (done) break;
        sleep_s(0.001);
    }
    sleep_s(3.0);
    pthread_mutex_lock(&mu);
    window = -1;
    pthread_mutex_unlock(&mu);
    printf("model %s, %d streams, %d-token prompt, %d threads, flash_attn %s\n", hearth_model_desc(m), n_streams,
           n_long, (int)ep.ctx.n_threads, ep.ctx.flash_attn == HEARTH_FLASH_ATTN_OFF ? "off" : "on");
    const double before = report("streams alone, before:", delays[0], n_delays[0]);
    const double during = report("during the prefill:", delays[1], n_delays[1]);
    const double after = report("streams alone, after:", delays[2], n_delays[2]);
    printf("mean during / mean of before and after: %.2fx\n", during / ((before + after) / 2));
    printf("the long prompt's time to first token: %.2f s\n", t_first - t_submit);
    hearth_engine_free(e);
    hearth_model_free(m);
    free(toks);
    return 0;
}
