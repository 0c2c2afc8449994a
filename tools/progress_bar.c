/* The progress line of downloads and slow model loads, drawn on stderr from
 * the library's hearth_progress reports: on a terminal one line redrawn in
 * place with '\r' (percent, bytes of total, rate, time left); otherwise a
 * line every few seconds and at the end, so logs stay short. */
#include <stdio.h>
#include <unistd.h>

#include "cli.h"

#define LOG_EVERY 5.0  /* seconds between lines off a terminal */
#define LOAD_QUIET 1.0 /* a load shows no bar until it has taken this long */

void cli_progress_init(cli_progress *b, const char *verb) {
    *b = (cli_progress){.verb = verb, .tty = isatty(STDERR_FILENO) != 0, .last_line = -LOG_EVERY};
}

/* "12.3 MiB" into buf. */
static const char *bytes(double n, char *buf, size_t size) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (n >= 1024 && u < 4) n /= 1024, u++;
    snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", n, units[u]);
    return buf;
}

/* "1:05:09", "4:05" or "9 s" into buf. */
static const char *duration(double s, char *buf, size_t size) {
    const long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, size, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else if (t >= 60) snprintf(buf, size, "%ld:%02ld", t / 60, t % 60);
    else snprintf(buf, size, "%ld s", t);
    return buf;
}

bool cli_progress_draw(const hearth_progress *p, void *user) {
    cli_progress *b = user;
    if (b->quiet_first && !p->finished && p->elapsed < LOAD_QUIET) return true;
    if (b->quiet_first && p->finished && !b->drawn) return true;
    if (!b->tty && !p->finished && p->elapsed - b->last_line < LOG_EVERY) return true;
    b->last_line = p->elapsed;
    char done[32], total[32], rate[32], eta[32], line[256];
    int n = snprintf(line, sizeof line, "%s %s: ", b->verb, p->what);
    if (p->total)
        n += snprintf(line + n, sizeof line - (size_t)n, "%3.0f%% %s / %s", 100.0 * (double)p->done / (double)p->total,
                      bytes((double)p->done, done, sizeof done), bytes((double)p->total, total, sizeof total));
    else n += snprintf(line + n, sizeof line - (size_t)n, "%s", bytes((double)p->done, done, sizeof done));
    if (n > 0 && (size_t)n < sizeof line && p->rate > 0)
        n += snprintf(line + n, sizeof line - (size_t)n, ", %s/s", bytes(p->rate, rate, sizeof rate));
    if (n > 0 && (size_t)n < sizeof line && !p->finished && p->eta >= 0)
        snprintf(line + n, sizeof line - (size_t)n, ", %s left", duration(p->eta, eta, sizeof eta));
    else if (n > 0 && (size_t)n < sizeof line && p->finished)
        snprintf(line + n, sizeof line - (size_t)n, " in %s", duration(p->elapsed, eta, sizeof eta));
    if (b->tty) fprintf(stderr, "\r\033[Khearth: %s%s", line, p->finished ? "\n" : "");
    else fprintf(stderr, "hearth: %s\n", line);
    fflush(stderr);
    b->drawn = !p->finished;
    return true;
}

int cli_model_load(const char *name, hearth_model_params *mp, hearth_model **out) {
    char *path = NULL;
    if (cli_resolve(name, &path)) return 1;
    cli_progress bar;
    cli_progress_init(&bar, "loading");
    bar.quiet_first = true;
    mp->progress = cli_progress_draw;
    mp->progress_user = &bar;
    const hearth_status st = hearth_model_load(path, mp, out);
    mp->progress = NULL;
    hearth_free(path);
    if (bar.drawn && bar.tty) fputc('\n', stderr);
    return st == HEARTH_OK ? 0 : cli_fail(name);
}

int cli_resolve(const char *name, char **path) {
    cli_progress bar;
    cli_progress_init(&bar, "pulling");
    hearth_fetch_params fp = hearth_fetch_default_params();
    fp.progress = cli_progress_draw;
    fp.progress_user = &bar;
    const hearth_status st = hearth_model_resolve(name, &fp, path);
    if (bar.drawn && bar.tty) fputc('\n', stderr);
    return st == HEARTH_OK ? 0 : cli_fail(name);
}
