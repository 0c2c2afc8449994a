/* `hearth bench MODEL`: prompt-processing and generation speed measured the way
 * llama.cpp's llama-bench measures it, and printed in its formats (markdown
 * table, JSON, CSV), so the two can be put side by side column for column.
 *
 * Method (llama-bench's, tools/llama-bench/llama-bench.cpp): the context
 * is first filled with the test's depth (-d: D random tokens decoded untimed
 * as a prompt, in calls of n_batch and passes of n_ubatch; kept for the
 * next test of the same depth, as llama-bench keeps its saved state); each
 * test runs once untimed as a warm-up (pp: the whole prompt; tg: one token)
 * and then -r times on top of the depth, the cache cut back to the depth
 * before each (hearth_context_truncate keeps the depth's cells). llama-bench
 * warms up on an empty context; here the warm-up runs at the depth, the
 * path that is timed. ppN decodes N random
 * in-vocabulary tokens (fixed seed) in one hearth_decode call with
 * n_batch >= N (passes of n_ubatch); tgN decodes N random tokens one call at
 * a time, as llama-bench does (it never samples; neither do we). Only the
 * decode calls are timed, with a monotonic clock; t/s is the mean and sample
 * standard deviation over the repetitions of N / time. Results go to stdout,
 * progress and errors to stderr. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

#define MAX_LIST 16           /* values in one -p / -n / -d / -ub / -fa / -ctk / -ctv list */
#define MAX_TOKENS (1L << 16) /* largest -p / -n */
#define MAX_DEPTH (1L << 24)  /* largest -d: the library's largest n_ctx */
#define N_BATCH_MIN 2048      /* n_batch at least (llama-bench's default): the depth's decode calls */
#define N_UBATCH_DEFAULT 512
#define TOKEN_SEED 0x5EEDu /* the random tokens are the same on every run */

typedef enum bench_format { FMT_MD, FMT_JSON, FMT_CSV } bench_format;

typedef struct bench_opts {
    const char *model;
    long n_prompt[MAX_LIST], n_gen[MAX_LIST], n_depth[MAX_LIST], n_ubatch[MAX_LIST];
    int n_prompt_count, n_gen_count, n_depth_count, n_ubatch_count;
    long n_threads, reps, n_gpu_layers;
    cli_load load;                /* -ts, -mg, -sm, --no-mmap, --mlock */
    long n_ctx;                   /* -c; 0: each context as large as its longest test needs */
    int32_t flash_attn[MAX_LIST]; /* hearth_flash_attn values, a context each */
    int flash_attn_count;
    bool fa_column;                             /* -fa given other than auto: the md table shows it, as llama-bench */
    bool ub_column;                             /* -ub other than 512 or several: an n_ubatch column, as llama-bench */
    int32_t type_k[MAX_LIST], type_v[MAX_LIST]; /* hearth_kv_type values (-ctk, -ctv), a context each */
    int type_k_count, type_v_count;
    bool ctk_column, ctv_column; /* -ctk / -ctv other than f16 or several: type_k / type_v columns */
    bench_format format;
    bool progress, verbose;
    hearth_context_params ctx; /* the defaults with the rope options (cli_rope.c) */
} bench_opts;

/* What every output row repeats about the model and the settings. */
typedef struct bench_env {
    const char *model_path;
    const char *model_type; /* hearth_model_desc: "llama 135M Q4_1" */
    uint64_t model_size;    /* bytes of weights */
    uint64_t model_n_params;
    char cpu_info[128];
    uint32_t n_batch;
    char backends[48];    /* where the layers run, llama-bench's names: "CPU", "CUDA", "OpenCL" */
    int32_t n_gpu_layers; /* the layers the load offloaded (what -ngl auto came to) */
} bench_env;

/* One test (ppN or tgN at depth n_depth) and its timings. */
typedef struct bench_result {
    long n_prompt, n_gen; /* one of them is 0 */
    long n_depth;         /* tokens in the context before the test */
    long n_ubatch;
    int32_t flash_attn;     /* as asked: -1 auto, 0 off, 1 on */
    int32_t type_k, type_v; /* the KV cache's types (hearth_kv_type) */
    char test_time[32];     /* UTC, ISO 8601, when the test started */
    uint64_t *ns;           /* [reps] nanoseconds per repetition */
    long reps;
} bench_result;

static void bench_usage(FILE *out) {
    fprintf(out,
            "usage: hearth bench MODEL [options]\n"
            "\n"
            "Measures prompt processing (ppN) and generation (tgN) speed in tokens per second, the way\n"
            "llama.cpp's llama-bench does, and prints the same table: mean +- sd over the repetitions.\n"
            "Each test runs once untimed as a warm-up, then -r times from an empty context. ppN decodes\n"
            "N random tokens in one batch; tgN decodes N random tokens one at a time (no sampling, like\n"
            "llama-bench). Only the decode calls are timed.\n"
            "\n"
            "options:\n"
            "  -m, --model FILE         the GGUF model (or give it as the first argument)\n"
            "  -p, --n-prompt N[,N...]  prompt lengths to test; 0 = no prompt test (default 512)\n"
            "  -n, --n-gen N[,N...]     generation lengths to test; 0 = no generation test (default 128)\n"
            "  -d, --n-depth N[,N...]   tokens in the context before each test, decoded untimed (default 0);\n"
            "                           rows read pp512 @ d4096\n"
            "  -ub, --ubatch-size N[,N...]  tokens per forward pass (default 512); each value is a run\n"
            "  -c, --ctx-size N         the context's length (default: the longest depth + test needs)\n"
            "  -t, --threads N          CPU threads (default: physical cores, %d here)\n"
            "  -r, --repetitions N      timed runs of each test (default 5)\n"
            "  -ngl, --n-gpu-layers N   layers to put on the GPU; -1 = all, auto = as many as fit beside the\n"
            "                           context (default 0; no GPU backend\n"
            "                           in this build: accepted, and the model runs on the CPU)\n"
            "  --device LIST            devices for those layers: cuda0, opencl0,opencl1 ... (default: CUDA\n"
            "                           devices, else OpenCL GPUs; env HEARTH_DEVICE)\n" CLI_LOAD_HELP
            "  -fa, --flash-attn V[,V...]  attention on the CPU: on (tiled), off (llama.cpp's exact order) or\n"
            "                           auto (= on); 1, 0, -1 too, as llama-bench; each value is a run (default auto)\n"
            "  -ctk, --cache-type-k T[,T...]  KV cache type of the keys: f16, bf16, q8_0, q4_0; each value is a\n"
            "                           run (default f16)\n"
            "  -ctv, --cache-type-v T[,T...]  of the values, the same types; q8_0 and q4_0 need -fa on or auto\n"
            "                           (default f16)\n"
            "  -o, --output FORMAT      md (a table like llama-bench's), json or csv (default md)\n" CLI_ROPE_HELP
            "      --progress           print each step to stderr\n"
            "  -v, --verbose            log loading details to stderr (or set HEARTH_LOG=debug|info|warn|error)\n"
            "  -h, --help               this help\n"
            "\n"
            "N is at most %ld (-d: %ld). json and csv carry llama-bench's field names plus every sample\n"
            "(samples_ns, samples_ts).\n",
            hearth_cpu_physical_cores(), MAX_TOKENS, MAX_DEPTH);
}

/* Parses "N[,N...]" of values in [lo, hi] into list[]; false (with a message) on error. */
static bool parse_list(const char *opt, const char *val, long lo, long hi, long *list, int *count) {
    char buf[256];
    if (strlen(val) >= sizeof buf) {
        fprintf(stderr, "hearth: %s: the list is too long\n", opt);
        return false;
    }
    strcpy(buf, val);
    *count = 0;
    char *item = buf;
    for (;;) {
        char *comma = strchr(item, ',');
        if (comma) *comma = '\0';
        if (*count == MAX_LIST) {
            fprintf(stderr, "hearth: %s takes at most %d values\n", opt, MAX_LIST);
            return false;
        }
        if (!cli_parse_int(opt, item, lo, hi, &list[(*count)++])) return false;
        if (!comma) return true;
        item = comma + 1;
    }
}

static bool parse_format(const char *opt, const char *val, bench_format *out) {
    static const char *names[] = {"md", "json", "csv"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(val, names[i])) {
            *out = (bench_format)i;
            return true;
        }
    fprintf(stderr, "hearth: %s expects md, json or csv, got '%s'\n", opt, val);
    return false;
}

/* "T[,T...]" of -ctk or -ctv (hearth_kv_type names) into list[]; false
 * (with a message) on error. *column: a value other than f16, or several. */
static bool parse_kv_type_list(const char *opt, const char *val, int32_t *list, int *count, bool *column) {
    char buf[256];
    if (strlen(val) >= sizeof buf) {
        fprintf(stderr, "hearth: %s: the list is too long\n", opt);
        return false;
    }
    strcpy(buf, val);
    *count = 0;
    for (char *item = buf, *comma; item; item = comma ? comma + 1 : NULL) {
        comma = strchr(item, ',');
        if (comma) *comma = '\0';
        if (*count == MAX_LIST) {
            fprintf(stderr, "hearth: %s takes at most %d values\n", opt, MAX_LIST);
            return false;
        }
        if (hearth_kv_type_from_name(item, &list[(*count)++]) != HEARTH_OK) {
            fprintf(stderr, "hearth: %s: %s\n", opt, hearth_last_error());
            return false;
        }
        *column |= list[*count - 1] != HEARTH_KV_F16;
    }
    *column |= *count > 1;
    return true;
}

/* "V[,V...]" of -fa into o->flash_attn; false (with a message) on error. */
static bool parse_flash_attn_list(const char *opt, const char *val, bench_opts *o) {
    char buf[256];
    if (strlen(val) >= sizeof buf) {
        fprintf(stderr, "hearth: %s: the list is too long\n", opt);
        return false;
    }
    strcpy(buf, val);
    o->flash_attn_count = 0;
    for (char *item = buf, *comma; item; item = comma ? comma + 1 : NULL) {
        comma = strchr(item, ',');
        if (comma) *comma = '\0';
        if (o->flash_attn_count == MAX_LIST) {
            fprintf(stderr, "hearth: %s takes at most %d values\n", opt, MAX_LIST);
            return false;
        }
        if (!cli_parse_flash_attn(opt, item, &o->flash_attn[o->flash_attn_count++])) return false;
        if (o->flash_attn[o->flash_attn_count - 1] != HEARTH_FLASH_ATTN_AUTO) o->fa_column = true;
    }
    o->fa_column |= o->flash_attn_count > 1;
    return true;
}

static long list_max(const long *list, int count) {
    long m = 0;
    for (int i = 0; i < count; i++) m = list[i] > m ? list[i] : m;
    return m;
}

/* With -c, every test must fit on top of its depth: 0, or 2 after saying
 * which does not. */
static int check_ctx(const bench_opts *o) {
    if (!o->n_ctx) return 0;
    for (int d = 0; d < o->n_depth_count; d++)
        for (int kind = 0; kind < 2; kind++) {
            const long *list = kind == 0 ? o->n_prompt : o->n_gen;
            for (int i = 0; i < (kind == 0 ? o->n_prompt_count : o->n_gen_count); i++) {
                const long need = o->n_depth[d] + list[i];
                if (list[i] == 0 || need <= o->n_ctx) continue;
                fprintf(stderr, "hearth: %s%ld @ d%ld needs a context of %ld tokens, -c is %ld: raise -c or lower -d\n",
                        kind == 0 ? "pp" : "tg", list[i], o->n_depth[d], need, o->n_ctx);
                return 2;
            }
        }
    return 0;
}

/* Returns 0 to go on, -1 after --help, otherwise the exit status. */
static int parse_args(int argc, char **argv, bench_opts *o) {
    *o = (bench_opts){.n_prompt = {512},
                      .n_gen = {128},
                      .n_prompt_count = 1,
                      .n_gen_count = 1,
                      .n_depth = {0},
                      .n_depth_count = 1,
                      .n_ubatch = {N_UBATCH_DEFAULT},
                      .n_ubatch_count = 1,
                      .n_threads = hearth_cpu_physical_cores(),
                      .reps = 5,
                      .flash_attn = {HEARTH_FLASH_ATTN_AUTO},
                      .flash_attn_count = 1,
                      .type_k = {HEARTH_KV_F16},
                      .type_v = {HEARTH_KV_F16},
                      .type_k_count = 1,
                      .type_v_count = 1,
                      .format = FMT_MD,
                      .ctx = hearth_context_default_params()};
    cli_load_init(&o->load);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
#define IS(short_, long_) (!strcmp(a, short_) || !strcmp(a, long_))
#define NEED_VALUE()                                                                                                   \
    do {                                                                                                               \
        if (!val) {                                                                                                    \
            fprintf(stderr, "hearth: %s needs a value; see hearth bench --help\n", a);                                 \
            return 2;                                                                                                  \
        }                                                                                                              \
        i++;                                                                                                           \
    } while (0)
        bool ok = true;
        int load; /* cli_parse_load_opt's answer: -ts, -mg, -sm, --no-mmap, --mlock */
        if (IS("-h", "--help")) {
            bench_usage(stdout);
            return -1;
        } else if (IS("-m", "--model")) {
            NEED_VALUE();
            o->model = val;
        } else if (IS("-p", "--n-prompt")) {
            NEED_VALUE();
            ok = parse_list(a, val, 0, MAX_TOKENS, o->n_prompt, &o->n_prompt_count);
        } else if (IS("-n", "--n-gen")) {
            NEED_VALUE();
            ok = parse_list(a, val, 0, MAX_TOKENS, o->n_gen, &o->n_gen_count);
        } else if (IS("-d", "--n-depth")) {
            NEED_VALUE();
            ok = parse_list(a, val, 0, MAX_DEPTH, o->n_depth, &o->n_depth_count);
        } else if (IS("-ub", "--ubatch-size")) {
            NEED_VALUE();
            ok = parse_list(a, val, 1, MAX_DEPTH, o->n_ubatch, &o->n_ubatch_count);
            o->ub_column = o->n_ubatch_count > 1 || o->n_ubatch[0] != N_UBATCH_DEFAULT;
        } else if (IS("-c", "--ctx-size")) {
            NEED_VALUE();
            ok = cli_parse_int(a, val, 1, MAX_DEPTH, &o->n_ctx);
        } else if (IS("-t", "--threads")) {
            NEED_VALUE();
            ok = cli_parse_int(a, val, 1, 1024, &o->n_threads);
        } else if (IS("-r", "--repetitions")) {
            NEED_VALUE();
            ok = cli_parse_int(a, val, 1, 1000, &o->reps);
        } else if (IS("-ngl", "--n-gpu-layers")) {
            NEED_VALUE();
            if (!strcmp(val, "auto")) o->n_gpu_layers = HEARTH_N_GPU_LAYERS_AUTO;
            else ok = cli_parse_int(a, val, -1, 1L << 20, &o->n_gpu_layers);
        } else if ((load = cli_parse_load_opt(argc, argv, &i, "bench", &o->load)) != 0) {
            ok = load > 0;
        } else if (!strcmp(a, "--device")) { /* read by the load as HEARTH_DEVICE */
            NEED_VALUE();
            setenv("HEARTH_DEVICE", val, 1);
        } else if (IS("-fa", "--flash-attn")) {
            NEED_VALUE();
            ok = parse_flash_attn_list(a, val, o);
        } else if (IS("-ctk", "--cache-type-k")) {
            NEED_VALUE();
            ok = parse_kv_type_list(a, val, o->type_k, &o->type_k_count, &o->ctk_column);
        } else if (IS("-ctv", "--cache-type-v")) {
            NEED_VALUE();
            ok = parse_kv_type_list(a, val, o->type_v, &o->type_v_count, &o->ctv_column);
        } else if (!strncmp(a, "--rope-", 7) || !strncmp(a, "--yarn-", 7)) {
            const int rope = cli_parse_rope_opt(argc, argv, &i, "bench", &o->ctx);
            if (rope == 0) fprintf(stderr, "hearth: unknown option '%s'; see hearth bench --help\n", a);
            ok = rope > 0;
        } else if (IS("-o", "--output")) {
            NEED_VALUE();
            ok = parse_format(a, val, &o->format);
        } else if (IS("--progress", "--progress")) {
            o->progress = true;
        } else if (IS("-v", "--verbose")) {
            o->verbose = true;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "hearth: unknown option '%s'; see hearth bench --help\n", a);
            return 2;
        } else if (!o->model) {
            o->model = a;
        } else {
            fprintf(stderr, "hearth: unexpected argument '%s'; see hearth bench --help\n", a);
            return 2;
        }
        if (!ok) return 2;
#undef IS
#undef NEED_VALUE
    }
    if (!o->model) {
        fprintf(stderr, "hearth: bench needs a MODEL file; see hearth bench --help\n");
        return 2;
    }
    return check_ctx(o);
}

/* ---------------------------------------------------------------- timing -- */

/* splitmix64 (Steele et al. 2014): a small, fixed-seed source of token ids. */
static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int32_t *random_tokens(long n, int32_t n_vocab) {
    int32_t *t = malloc((size_t)n * sizeof *t);
    uint64_t s = TOKEN_SEED;
    for (long i = 0; t && i < n; i++) t[i] = (int32_t)(splitmix64(&s) % (uint64_t)n_vocab);
    return t;
}

/* Fills the empty context with n_depth tokens, untimed, in decode calls of
 * n_batch tokens as llama-bench's test_prompt does. */
static hearth_status fill_depth(hearth_context *ctx, const int32_t *tokens, long n_depth, long n_batch) {
    hearth_context_reset(ctx);
    hearth_status st = HEARTH_OK;
    for (long done = 0; done < n_depth && st == HEARTH_OK; done += n_batch)
        st = hearth_decode(ctx, tokens + done, (uint32_t)(n_depth - done < n_batch ? n_depth - done : n_batch));
    return st;
}

/* One pass of a test on top of the first n_depth tokens of the context (the
 * cache is cut back to them): n_prompt tokens in one call, or n_gen tokens
 * one call each. Sets *ns to the time the calls took. */
static hearth_status decode_once(hearth_context *ctx, const int32_t *tokens, long n_depth, long n_prompt, long n_gen,
                                 uint64_t *ns) {
    hearth_context_truncate(ctx, (uint32_t)n_depth);
    tokens += n_depth;
    hearth_status st = HEARTH_OK;
    double t0 = cli_now();
    if (n_prompt > 0) st = hearth_decode(ctx, tokens, (uint32_t)n_prompt);
    for (long i = 0; i < n_gen && st == HEARTH_OK; i++) st = hearth_decode(ctx, tokens + i, 1);
    double dt = cli_now() - t0;
    *ns = dt > 1e-9 ? (uint64_t)(dt * 1e9) : 1;
    return st;
}

/* "pp512", "tg128 @ d4096" (llama-bench's test column) */
static const char *test_name(const bench_result *r, char *buf, size_t size) {
    int len = snprintf(buf, size, r->n_prompt > 0 ? "pp%ld" : "tg%ld", r->n_prompt > 0 ? r->n_prompt : r->n_gen);
    if (r->n_depth > 0) snprintf(buf + len, size - (size_t)len, " @ d%ld", r->n_depth);
    return buf;
}

/* The depth (unless the context holds it: *filled tokens of the fill),
 * a warm-up on top of it (the whole prompt, or one generated token, as
 * llama-bench), then the timed repetitions. Returns 0 or the exit status. */
static int run_test(hearth_context *ctx, const int32_t *tokens, long n_batch, long *filled, const bench_opts *o,
                    bench_result *r) {
    char name[32];
    test_name(r, name, sizeof name);
    time_t now = time(NULL);
    strftime(r->test_time, sizeof r->test_time, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    if (r->n_depth != *filled) {
        if (o->progress) fprintf(stderr, "hearth: bench %s: depth\n", name);
        *filled = -1;
        if (fill_depth(ctx, tokens, r->n_depth, n_batch) != HEARTH_OK) return cli_fail(name);
        *filled = r->n_depth;
    }
    if (o->progress) fprintf(stderr, "hearth: bench %s: warm-up\n", name);
    uint64_t ns;
    if (decode_once(ctx, tokens, r->n_depth, r->n_prompt, r->n_gen > 0 ? 1 : 0, &ns) != HEARTH_OK)
        return cli_fail(name);
    for (long i = 0; i < r->reps; i++) {
        if (o->progress) fprintf(stderr, "hearth: bench %s: run %ld/%ld\n", name, i + 1, r->reps);
        if (decode_once(ctx, tokens, r->n_depth, r->n_prompt, r->n_gen, &r->ns[i]) != HEARTH_OK) return cli_fail(name);
    }
    return 0;
}

/* ------------------------------------------------------------ statistics -- */

static double sample_ts(const bench_result *r, long i) {
    return 1e9 * (double)(r->n_prompt + r->n_gen) / (double)r->ns[i];
}

/* Mean and sample standard deviation (n - 1; 0 for one sample), as llama-bench. */
static void mean_sd(const bench_result *r, bool ts, double *mean, double *sd) {
    double sum = 0, sq = 0;
    for (long i = 0; i < r->reps; i++) sum += ts ? sample_ts(r, i) : (double)r->ns[i];
    *mean = sum / (double)r->reps;
    for (long i = 0; i < r->reps; i++) {
        double d = (ts ? sample_ts(r, i) : (double)r->ns[i]) - *mean;
        sq += d * d;
    }
    *sd = r->reps > 1 ? sqrt(sq / (double)(r->reps - 1)) : 0.0;
}

/* ---------------------------------------------------------------- output -- */

/* llama-bench's columns; n_ubatch (width 8), type_k, type_v (6), fa (3)
 * and mmap (4) after threads when -ub / -ctk / -ctv / -fa / --no-mmap were
 * given. */
static void md_header(const bench_opts *o) {
    printf("| %-30s | %10s | %10s | %-10s | %7s |%s%s%s%s%s %15s | %20s |\n", "model", "size", "params", "backend",
           "threads", o->ub_column ? " n_ubatch |" : "", o->ctk_column ? " type_k |" : "",
           o->ctv_column ? " type_v |" : "", o->fa_column ? "  fa |" : "", o->load.use_mmap ? "" : " mmap |", "test",
           "t/s");
    printf("| %s | %s | %s | %s | %s |%s%s%s%s%s %s | %s |\n", "------------------------------",
           "---------:", "---------:", "----------", "------:", o->ub_column ? " -------: |" : "",
           o->ctk_column ? " -----: |" : "", o->ctv_column ? " -----: |" : "", o->fa_column ? " --: |" : "",
           o->load.use_mmap ? "" : " ---: |", "--------------:", "-------------------:");
}

static void md_row(const bench_env *e, const bench_opts *o, const bench_result *r) {
    char size[32], params[32], ts[64], name[32];
    double gib = (double)e->model_size / (1 << 30), mib = (double)e->model_size / (1 << 20);
    if (e->model_size < (1u << 30)) snprintf(size, sizeof size, "%.2f MiB", mib);
    else snprintf(size, sizeof size, "%.2f GiB", gib);
    if (e->model_n_params < 1000000000u) snprintf(params, sizeof params, "%.2f M", (double)e->model_n_params / 1e6);
    else snprintf(params, sizeof params, "%.2f B", (double)e->model_n_params / 1e9);
    double mean, sd;
    mean_sd(r, true, &mean, &sd);
    snprintf(ts, sizeof ts, "%.2f ± %.2f", mean, sd);
    /* "±" is two bytes in UTF-8: one more byte of width keeps the column */
    char fa[16] = "", ub[16] = "", tk[16] = "", tv[16] = "";
    if (o->fa_column) snprintf(fa, sizeof fa, " %3d |", (int)r->flash_attn);
    if (o->ub_column) snprintf(ub, sizeof ub, " %8ld |", r->n_ubatch);
    if (o->ctk_column) snprintf(tk, sizeof tk, " %6s |", hearth_kv_type_name(r->type_k));
    if (o->ctv_column) snprintf(tv, sizeof tv, " %6s |", hearth_kv_type_name(r->type_v));
    printf("| %-30s | %10s | %10s | %-10s | %7ld |%s%s%s%s%s %15s | %21s |\n", e->model_type, size, params, e->backends,
           o->n_threads, ub, tk, tv, fa, o->load.use_mmap ? "" : "    0 |", test_name(r, name, sizeof name), ts);
}

/* A JSON string literal: quotes, backslashes and control characters escaped. */
static void json_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

/* A CSV field: always quoted, inner quotes doubled (RFC 4180). */
static void csv_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        if (*s == '"') putchar('"');
        putchar(*s);
    }
    putchar('"');
}

/* The samples as "a, b, c" (JSON array body or one CSV field). */
static void print_samples(const bench_result *r, bool ts) {
    for (long i = 0; i < r->reps; i++) {
        if (ts) printf("%s%.3f", i ? ", " : "", sample_ts(r, i));
        else printf("%s%llu", i ? ", " : "", (unsigned long long)r->ns[i]);
    }
}

/* The fields of one result, named as llama-bench names them, as strings. */
enum { N_FIELDS = 23, FIELD_LEN = 4096 }; /* a path fits */
static const char *const field_names[N_FIELDS] = {
    "build_info",     "cpu_info", "backends",  "model_filename", "model_type",   "model_size",
    "model_n_params", "n_batch",  "n_ubatch",  "n_threads",      "n_gpu_layers", "type_k",
    "type_v",         "n_prompt", "n_gen",     "n_depth",        "test_time",    "avg_ns",
    "stddev_ns",      "avg_ts",   "stddev_ts", "flash_attn",     "use_mmap"};
/* the fields that are strings in JSON */
static const bool field_is_str[N_FIELDS] = {[0] = 1, [1] = 1, [2] = 1, [3] = 1, [4] = 1, [11] = 1, [12] = 1, [16] = 1};

static void field_values(const bench_env *e, const bench_opts *o, const bench_result *r, char v[N_FIELDS][FIELD_LEN]) {
    double avg_ns, sd_ns, avg_ts, sd_ts;
    mean_sd(r, false, &avg_ns, &sd_ns);
    mean_sd(r, true, &avg_ts, &sd_ts);
    snprintf(v[0], FIELD_LEN, "%s", hearth_build_info());
    snprintf(v[1], FIELD_LEN, "%s", e->cpu_info);
    snprintf(v[2], FIELD_LEN, "%s", e->backends);
    snprintf(v[3], FIELD_LEN, "%s", e->model_path);
    snprintf(v[4], FIELD_LEN, "%s", e->model_type);
    snprintf(v[5], FIELD_LEN, "%llu", (unsigned long long)e->model_size);
    snprintf(v[6], FIELD_LEN, "%llu", (unsigned long long)e->model_n_params);
    snprintf(v[7], FIELD_LEN, "%u", e->n_batch);
    snprintf(v[8], FIELD_LEN, "%ld", r->n_ubatch);
    snprintf(v[9], FIELD_LEN, "%ld", o->n_threads);
    snprintf(v[10], FIELD_LEN, "%ld",
             o->n_gpu_layers == HEARTH_N_GPU_LAYERS_AUTO ? (long)e->n_gpu_layers : o->n_gpu_layers);
    snprintf(v[11], FIELD_LEN, "%s", hearth_kv_type_name(r->type_k));
    snprintf(v[12], FIELD_LEN, "%s", hearth_kv_type_name(r->type_v));
    snprintf(v[13], FIELD_LEN, "%ld", r->n_prompt);
    snprintf(v[14], FIELD_LEN, "%ld", r->n_gen);
    snprintf(v[15], FIELD_LEN, "%ld", r->n_depth);
    snprintf(v[16], FIELD_LEN, "%s", r->test_time);
    snprintf(v[17], FIELD_LEN, "%.0f", avg_ns);
    snprintf(v[18], FIELD_LEN, "%.0f", sd_ns);
    snprintf(v[19], FIELD_LEN, "%.6f", avg_ts);
    snprintf(v[20], FIELD_LEN, "%.6f", sd_ts);
    snprintf(v[21], FIELD_LEN, "%d", (int)r->flash_attn);
    snprintf(v[22], FIELD_LEN, "%s", o->load.use_mmap ? "true" : "false");
}

static void json_row(const bench_env *e, const bench_opts *o, const bench_result *r, bool first) {
    char v[N_FIELDS][FIELD_LEN];
    field_values(e, o, r, v);
    printf("%s  {\n", first ? "" : ",\n");
    for (int i = 0; i < N_FIELDS; i++) {
        printf("    \"%s\": ", field_names[i]);
        if (field_is_str[i]) json_str(v[i]);
        else fputs(v[i], stdout);
        printf(",\n");
    }
    printf("    \"samples_ns\": [ ");
    print_samples(r, false);
    printf(" ],\n    \"samples_ts\": [ ");
    print_samples(r, true);
    printf(" ]\n  }");
}

static void csv_header(void) {
    for (int i = 0; i < N_FIELDS; i++) printf("%s,", field_names[i]);
    printf("samples_ns,samples_ts\n");
}

static void csv_row(const bench_env *e, const bench_opts *o, const bench_result *r) {
    char v[N_FIELDS][FIELD_LEN];
    field_values(e, o, r, v);
    for (int i = 0; i < N_FIELDS; i++) {
        csv_str(v[i]);
        putchar(',');
    }
    printf("\"");
    print_samples(r, false);
    printf("\",\"");
    print_samples(r, true);
    printf("\"\n");
}

static void print_header(const bench_opts *o) {
    if (o->format == FMT_MD) md_header(o);
    else if (o->format == FMT_JSON) printf("[\n");
    else csv_header();
}

static void print_result(const bench_env *e, const bench_opts *o, const bench_result *r, bool first) {
    if (o->format == FMT_MD) md_row(e, o, r);
    else if (o->format == FMT_JSON) json_row(e, o, r, first);
    else csv_row(e, o, r);
    fflush(stdout);
}

static void print_footer(const bench_opts *o) {
    if (o->format == FMT_MD) printf("\nbuild: %s\n", hearth_build_info());
    else if (o->format == FMT_JSON) printf("\n]\n");
}

/* ------------------------------------------------------------------ main -- */

/* The CPU's marketing name from /proc/cpuinfo (what llama-bench reports). */
static void cpu_name(char *buf, size_t size) {
    snprintf(buf, size, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) || !colon) continue;
        colon += 1 + (colon[1] == ' ');
        colon[strcspn(colon, "\n")] = '\0';
        snprintf(buf, size, "%s", colon);
        break;
    }
    fclose(f);
}

typedef struct bench_state {
    hearth_model *model;
    hearth_context *ctx;
    int32_t *tokens;
    uint64_t *ns;
} bench_state;

/* The context of one -ub, -fa, -ctk and -ctv value: room for the deepest,
 * longest test (or -c), the whole prompt in one decode call. */
static hearth_context_params context_params(const bench_opts *o, long n_ubatch, int32_t flash_attn, int32_t type_k,
                                            int32_t type_v) {
    const long max_p = list_max(o->n_prompt, o->n_prompt_count), max_n = list_max(o->n_gen, o->n_gen_count);
    hearth_context_params cp = o->ctx;
    cp.n_ctx = (uint32_t)(o->n_ctx ? o->n_ctx
                                   : list_max(o->n_depth, o->n_depth_count) + (max_p > max_n ? max_p : max_n));
    cp.n_batch = (uint32_t)(max_p > N_BATCH_MIN ? max_p : N_BATCH_MIN);
    cp.n_ubatch = (uint32_t)n_ubatch;
    cp.n_threads = (int32_t)o->n_threads;
    cp.flash_attn = flash_attn;
    cp.type_k = type_k;
    cp.type_v = type_v;
    return cp;
}

static int setup(const bench_opts *o, bench_state *s, bench_env *e) {
    const hearth_context_params cp = context_params(o, o->n_ubatch[0], HEARTH_FLASH_ATTN_AUTO, o->type_k[0],
                                                    o->type_v[0]);
    hearth_model_params mp = hearth_model_default_params();
    mp.n_gpu_layers = (int32_t)o->n_gpu_layers;
    mp.fit_n_ctx = cp.n_ctx; /* in F16 (fit_type 0), the largest of every -ctk/-ctv the contexts may take */
    cli_load_apply(&o->load, &mp);
    if (cli_model_load(o->model, &mp, &s->model)) return 1;
    e->n_gpu_layers = hearth_model_n_gpu_layers(s->model);
    hearth_context_memory mem;
    if (hearth_context_memory_plan(s->model, &cp, &mem) != HEARTH_OK) return cli_fail("context");
    s->tokens = random_tokens((long)cp.n_ctx, hearth_model_n_vocab(s->model));
    s->ns = malloc((size_t)o->reps * sizeof *s->ns);
    if (!s->tokens || !s->ns) {
        fprintf(stderr, "hearth: out of memory\n");
        return 1;
    }
    *e = (bench_env){.model_path = o->model,
                     .model_type = hearth_model_desc(s->model),
                     .model_size = hearth_model_size(s->model),
                     .model_n_params = hearth_model_n_params(s->model),
                     .n_batch = mem.n_batch};
    /* the backends of the devices holding layers, each once (device[0] is
     * the host, named only when it runs every layer) */
    size_t len = 0;
    for (int32_t i = 1; i < mem.n_devices; i++) {
        const char *label = mem.device[i].backend_label;
        bool seen = false;
        for (int32_t j = 1; j < i; j++) seen |= !strcmp(mem.device[j].backend_label, label);
        if (!seen && len < sizeof e->backends)
            len += (size_t)snprintf(e->backends + len, sizeof e->backends - len, "%s%s", len ? "," : "", label);
    }
    if (!len) snprintf(e->backends, sizeof e->backends, "%s", mem.device[0].backend_label);
    cpu_name(e->cpu_info, sizeof e->cpu_info);
    return 0;
}

/* For each -ub, -ctk, -ctv and -fa value (a context each) and each depth,
 * runs every ppN, then every tgN (llama-bench's order), printing each row
 * as soon as it is measured. */
static int bench(const bench_opts *o, bench_state *s) {
    bench_env e;
    int rc = setup(o, s, &e);
    if (rc) return rc;
    bool first = true; /* the header waits for the first context: a failure prints only its line */
    for (int c = 0; c < o->n_ubatch_count * o->type_k_count * o->type_v_count * o->flash_attn_count; c++) {
        const int u = c / (o->type_k_count * o->type_v_count * o->flash_attn_count);
        const int k = c / (o->type_v_count * o->flash_attn_count) % o->type_k_count;
        const int v = c / o->flash_attn_count % o->type_v_count, f = c % o->flash_attn_count;
        hearth_context_free(s->ctx);
        s->ctx = NULL;
        const hearth_context_params cp = context_params(o, o->n_ubatch[u], o->flash_attn[f], o->type_k[k],
                                                        o->type_v[v]);
        if (hearth_context_init(s->model, &cp, &s->ctx) != HEARTH_OK) return cli_fail("context");
        if (first) print_header(o);
        long filled = 0; /* the depth the context holds */
        for (int d = 0; d < o->n_depth_count; d++)
            for (int kind = 0; kind < 2; kind++) {
                const long *list = kind == 0 ? o->n_prompt : o->n_gen;
                const int count = kind == 0 ? o->n_prompt_count : o->n_gen_count;
                for (int i = 0; i < count; i++) {
                    if (list[i] == 0) continue;
                    bench_result r = {.n_prompt = kind == 0 ? list[i] : 0,
                                      .n_gen = kind == 1 ? list[i] : 0,
                                      .n_depth = o->n_depth[d],
                                      .n_ubatch = o->n_ubatch[u],
                                      .flash_attn = o->flash_attn[f],
                                      .type_k = o->type_k[k],
                                      .type_v = o->type_v[v],
                                      .ns = s->ns,
                                      .reps = o->reps};
                    if ((rc = run_test(s->ctx, s->tokens, (long)cp.n_batch, &filled, o, &r))) return rc;
                    print_result(&e, o, &r, first);
                    first = false;
                }
            }
    }
    print_footer(o);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "hearth: cannot write to stdout\n");
        return 1;
    }
    return 0;
}

int cmd_bench(int argc, char **argv) {
    bench_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    if (list_max(o.n_prompt, o.n_prompt_count) == 0 && list_max(o.n_gen, o.n_gen_count) == 0) {
        fprintf(stderr, "hearth: nothing to measure: -p and -n are both 0\n");
        return 2;
    }
    cli_log_init(o.verbose);
    bench_state s = {0};
    rc = bench(&o, &s);
    free(s.ns);
    free(s.tokens);
    hearth_context_free(s.ctx);
    hearth_model_free(s.model);
    return rc;
}
