/* Option parsing, logging, timing and file helpers shared by the subcommands. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

bool cli_parse_int(const char *opt, const char *val, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(val, &end, 10);
    if (errno || end == val || *end || v < lo || v > hi) {
        fprintf(stderr, "hearth: %s expects an integer in [%ld, %ld], got '%s'\n", opt, lo, hi, val);
        return false;
    }
    *out = v;
    return true;
}

bool cli_parse_float(const char *opt, const char *val, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(val, &end);
    if (errno || end == val || *end || !isfinite(v) || v < lo || v > hi) {
        fprintf(stderr, "hearth: %s expects a number in [%g, %g], got '%s'\n", opt, lo, hi, val);
        return false;
    }
    *out = v;
    return true;
}

bool cli_parse_u64(const char *opt, const char *val, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(val, &end, 10);
    if (errno || end == val || *end || val[0] == '-') {
        fprintf(stderr, "hearth: %s expects a non-negative integer, got '%s'\n", opt, val);
        return false;
    }
    *out = v;
    return true;
}

static void log_to_stderr(hearth_log_level level, const char *msg, void *user) {
    static const char *names[] = {"debug", "info", "warn", "error"};
    if (level < *(hearth_log_level *)user) return;
    fprintf(stderr, "hearth: %s: %s\n", names[level], msg);
}

void cli_log_init(bool verbose) {
    static hearth_log_level min_level;
    min_level = verbose ? HEARTH_LOG_INFO : HEARTH_LOG_WARN;
    const char *env = getenv("HEARTH_LOG");
    if (env) {
        static const char *names[] = {"debug", "info", "warn", "error"};
        for (int i = 0; i < 4; i++)
            if (strcasecmp(env, names[i]) == 0) min_level = (hearth_log_level)i;
    }
    hearth_log_set(log_to_stderr, &min_level);
}

int cli_fail(const char *what) {
    fprintf(stderr, "hearth: %s: %s\n", what, hearth_last_error());
    return 1;
}

double cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

char *cli_read_file(const char *path, const char *what, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "hearth: cannot open %s '%s': %s\n", what, path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (n == cap - 1) {
            char *bigger = realloc(buf, cap *= 2);
            if (!bigger) free(buf);
            buf = bigger;
        }
    }
    int err = ferror(f);
    fclose(f);
    if (!buf || err) {
        fprintf(stderr, "hearth: cannot read %s '%s'\n", what, path);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

bool cli_parse_flash_attn(const char *opt, const char *val, int32_t *out) {
    static const struct {
        const char *word, *number;
        int32_t value;
    } names[] = {
        {"on", "1", HEARTH_FLASH_ATTN_ON}, {"off", "0", HEARTH_FLASH_ATTN_OFF}, {"auto", "-1", HEARTH_FLASH_ATTN_AUTO}};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++)
        if (!strcmp(val, names[k].word) || !strcmp(val, names[k].number)) {
            *out = names[k].value;
            return true;
        }
    fprintf(stderr, "hearth: %s expects on, off or auto, got '%s'\n", opt, val);
    return false;
}

int cli_parse_ctx_opt(int argc, char **argv, int *i, const char *cmd, hearth_context_params *ctx, long *n_gpu_layers) {
    const char *a = argv[*i], *val = *i + 1 < argc ? argv[*i + 1] : NULL;
    const int rope = cli_parse_rope_opt(argc, argv, i, cmd, ctx);
    if (rope) return rope;
    if (!strcmp(a, "-fa") || !strcmp(a, "--flash-attn")) {
        if (!val) {
            fprintf(stderr, "hearth: %s needs a value; see hearth %s --help\n", a, cmd);
            return -2;
        }
        if (!cli_parse_flash_attn(a, val, &ctx->flash_attn)) return -2;
        (*i)++;
        return 1;
    }
    const bool ctk = !strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k");
    if (ctk || !strcmp(a, "-ctv") || !strcmp(a, "--cache-type-v")) {
        if (!val) {
            fprintf(stderr, "hearth: %s needs a value; see hearth %s --help\n", a, cmd);
            return -2;
        }
        if (hearth_kv_type_from_name(val, ctk ? &ctx->type_k : &ctx->type_v) != HEARTH_OK) {
            fprintf(stderr, "hearth: %s: %s\n", a, hearth_last_error());
            return -2;
        }
        (*i)++;
        return 1;
    }
    if ((!strcmp(a, "-ngl") || !strcmp(a, "--n-gpu-layers")) && val && !strcmp(val, "auto")) {
        *n_gpu_layers = HEARTH_N_GPU_LAYERS_AUTO;
        (*i)++;
        return 1;
    }
    if (!strcmp(a, "--device")) { /* the library reads HEARTH_DEVICE when the load names no devices */
        if (!val) {
            fprintf(stderr, "hearth: %s needs a value; see hearth %s --help\n", a, cmd);
            return -2;
        }
        setenv("HEARTH_DEVICE", val, 1);
        (*i)++;
        return 1;
    }
    static const struct {
        const char *s, *l;
        long lo, hi;
    } opts[] = {{"-t", "--threads", 1, 1024},
                {"-c", "--ctx-size", 0, 1L << 24},
                {"-b", "--batch-size", 1, 1L << 20},
                {"-ngl", "--n-gpu-layers", -1, 1L << 20},
                {"-ub", "--ubatch-size", 1, 1L << 20}};
    for (size_t k = 0; k < sizeof opts / sizeof *opts; k++) {
        if (strcmp(a, opts[k].s) && strcmp(a, opts[k].l)) continue;
        long v;
        if (!val) {
            fprintf(stderr, "hearth: %s needs a value; see hearth %s --help\n", a, cmd);
            return -2;
        }
        if (!cli_parse_int(a, val, opts[k].lo, opts[k].hi, &v)) return -2;
        (*i)++;
        if (k == 0) ctx->n_threads = (int32_t)v;
        else if (k == 1) ctx->n_ctx = (uint32_t)v;
        else if (k == 2) ctx->n_batch = (uint32_t)v;
        else if (k == 3) *n_gpu_layers = v;
        else ctx->n_ubatch = (uint32_t)v;
        return 1;
    }
    return 0;
}

void cli_load_init(cli_load *s) {
    const hearth_model_params d = hearth_model_default_params();
    *s = (cli_load){
        .main_gpu = d.main_gpu, .split_mode = d.split_mode, .use_mmap = d.use_mmap, .use_mlock = d.use_mlock};
}

/* "A,B,..." or "A/B/..." (llama.cpp takes either) of proportions >= 0. */
static bool parse_tensor_split(const char *opt, const char *val, float *ts) {
    char buf[256];
    if (strlen(val) >= sizeof buf) {
        fprintf(stderr, "hearth: %s: the list is too long\n", opt);
        return false;
    }
    strcpy(buf, val);
    int n = 0;
    for (char *item = buf, *end;; item = end + 1) {
        end = item + strcspn(item, ",/");
        const bool last = *end == '\0';
        *end = '\0';
        double v;
        if (n == CLI_MAX_SPLIT) {
            fprintf(stderr, "hearth: %s takes at most %d proportions, got more in '%s'\n", opt, CLI_MAX_SPLIT, val);
            return false;
        }
        if (!cli_parse_float(opt, item, 0.0, 1e9, &v)) return false;
        ts[n++] = (float)v;
        if (last) break;
    }
    for (; n < CLI_MAX_SPLIT; n++) ts[n] = 0.0f;
    return true;
}

int cli_parse_load_opt(int argc, char **argv, int *i, const char *cmd, cli_load *s) {
    const char *a = argv[*i], *val = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (!strcmp(a, "--no-mmap")) { /* the two flags take no value */
        s->use_mmap = false;
        return 1;
    }
    if (!strcmp(a, "--mlock")) {
        s->use_mlock = true;
        return 1;
    }
    const int k = !strcmp(a, "-ts") || !strcmp(a, "--tensor-split") ? 0
                  : !strcmp(a, "-mg") || !strcmp(a, "--main-gpu")   ? 1
                  : !strcmp(a, "-sm") || !strcmp(a, "--split-mode") ? 2
                                                                    : -1;
    if (k < 0) return 0;
    if (!val) {
        fprintf(stderr, "hearth: %s needs a value; see hearth %s --help\n", a, cmd);
        return -2;
    }
    (*i)++;
    if (k == 0) {
        s->has_tensor_split = true;
        return parse_tensor_split(a, val, s->tensor_split) ? 1 : -2;
    }
    if (k == 1) return cli_parse_int(a, val, 0, CLI_MAX_SPLIT - 1, &s->main_gpu) ? 1 : -2;
    if (!strcmp(val, "none") || !strcmp(val, "layer")) {
        s->split_mode = !strcmp(val, "none") ? HEARTH_SPLIT_NONE : HEARTH_SPLIT_LAYER;
        return 1;
    }
    if (!strcmp(val, "row"))
        fprintf(stderr, "hearth: %s row (weight matrices split over devices) is not supported yet; use layer or none\n",
                a);
    else fprintf(stderr, "hearth: %s expects none or layer, got '%s'\n", a, val);
    return -2;
}

void cli_load_apply(const cli_load *s, hearth_model_params *mp) {
    mp->split_mode = s->split_mode;
    mp->main_gpu = (int32_t)s->main_gpu;
    mp->tensor_split = s->has_tensor_split ? s->tensor_split : NULL;
    mp->use_mmap = s->use_mmap;
    mp->use_mlock = s->use_mlock;
}

void cli_fit_context(const hearth_context_params *cp, hearth_model_params *mp) {
    mp->fit_n_ctx = cp->n_ctx;
    mp->fit_type_k = cp->type_k;
    mp->fit_type_v = cp->type_v;
}
