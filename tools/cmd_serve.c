/* `hearth serve MODEL...`: the OpenAI-compatible HTTP server. Parses the
 * options, starts listening (with one model, /health answers 503 while it
 * loads), loads the one model (several models, or --models-dir, load on a
 * request's demand), serves until SIGINT or SIGTERM, then stops gracefully
 * and exits 0. The HTTP layer is tools/server/; this file gives it the
 * models and how to load one. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "server/server.h"

/* Keys given with --api-key and --api-key-file, together. */
#define MAX_API_KEYS 64

static void serve_usage(FILE *out) {
    fprintf(
        out,
        "usage: hearth serve MODEL... [options]\n"
        "       hearth serve --models-dir DIR [MODEL...] [options]\n"
        "\n"
        "Serves the GGUF model MODEL over HTTP with OpenAI's API (/v1/chat/completions,\n"
        "/v1/completions, /v1/models) and /health, /metrics, /slots, /tokenize, /detokenize.\n"
        "Requests run together in slots (continuous batching); more wait in a queue.\n"
        "MODEL is a file or a name hearth pull takes. With several (or --models-dir), a request's\n"
        "\"model\" picks one, loaded on demand into its own engine (the first one when it names none).\n"
        "An embedding model (bert, nomic-bert) serves /v1/embeddings instead of generating; a\n"
        "reranker (a cross-encoder whose file gives pooling_type rank) serves /v1/rerank.\n"
        "\n"
        "network:\n"
        "      --host HOST          address to listen on (default 127.0.0.1)\n"
        "      --port N             port; 0 = any free port, printed at start (default 8080)\n"
        "      --api-key KEY        require 'Authorization: Bearer KEY' (repeat for more keys)\n"
        "      --api-key-file FILE  keys from FILE, one per line\n"
        "      --max-body BYTES     largest request body; a larger declared one gets 413 at once (default 1048576)\n"
        "      --timeout SECONDS    close a connection that neither sends nor reads this long; 0 = never\n"
        "                           (default 600)\n"
        "      --read-timeout SECONDS  a request's headers and body must arrive within this long of the\n"
        "                           connection being ready for it (accepted, or its last answer sent), else\n"
        "                           it is closed: slow senders and idle keep-alive connections; 0 = never\n"
        "                           (default 15)\n"
        "      --max-connections N  connections open at once (default: the open-file limit, raised to its\n"
        "                           hard maximum, less 64)\n"
        "      --max-connections-per-ip N  connections from one address at once; 0 = no limit (default 0)\n"
        "      --threads-http N     threads running request handlers; streams and idle connections need\n"
        "                           none (default: 2 x --parallel, at least 16)\n"
        "      --ssl-key-file FILE  serve HTTPS with this PEM private key ...\n"
        "      --ssl-cert-file FILE ... and this PEM certificate (both are needed)\n"
        "      --cors-origin ORIGIN let pages from ORIGIN call the server (CORS; repeat; * = any)\n"
        "      --no-webui           GET / from a browser answers Ollama's text, not the chat page\n"
        "model:\n"
        "      --alias NAME         the model id clients see, with one MODEL (default: its file name)\n"
        "      --strict-model       with one model, answer 404 to a request naming another (default: any\n"
        "                           name serves it; with several, an unknown name always gets 404)\n"
        "      --models-dir DIR     serve every .gguf file in DIR too, named by its file name\n"
        "      --store              serve the models of hearth's store too (HEARTH_MODELS; by the names\n"
        "                           hearth list shows), and those pulled while serving\n"
        "      --models-max N       models loaded at once; the least recently used idle one unloads to make\n"
        "                           room; 0 = no limit (default 3; a load that runs out of memory also\n"
        "                           unloads idle ones)\n"
        "      --keep-alive TIME    an idle model unloads after TIME (seconds, or 5m, 1h ...; -1 = never);\n"
        "                           Ollama's keep_alive in a request sets it for its model (default: 5m with\n"
        "                           several models, -1 with one)\n"
        "      --chat-template FILE the Jinja chat template in FILE instead of the model's\n"
        "      --embeddings         serve /v1/embeddings with a generation model instead of generating\n"
        "                           (an embedding model always does)\n"
        "      --pooling TYPE       how embeddings pool a text's tokens: mean, cls, last, or rank (a\n"
        "                           reranker's scores at /v1/rerank) (default: the model's)\n"
        "context:\n"
        "      --context-shift      a generation that fills its slot drops the oldest tokens after --keep\n"
        "                           and goes on (default: it ends with finish_reason \"length\")\n"
        "      --keep N             with --context-shift: prompt tokens always kept, after the BOS\n"
        "                           (default 0; -1 = the whole prompt)\n"
        "performance:\n"
        "      --parallel N         slots: requests generating at once (default 4)\n"
        "      --queue N            requests that may wait for a slot (default 64)\n"
        "  -c, --ctx-size N         KV cache over all slots, in tokens (default: each slot gets\n"
        "                           the model's context, at most 4096)\n"
        "  -b, --batch-size N       most tokens of one step (default 512)\n"
        "  -ub, --ubatch-size N     tokens per forward pass, at most -b; a step runs in passes of it (default 512)\n"
        "  -t, --threads N          CPU threads (default: physical cores, %d here)\n"
        "  -ngl, --n-gpu-layers N   layers to put on the GPU; -1 = all, auto = as many as fit beside a\n"
        "                           context of -c tokens (give -c for all slots; default 0)\n"
        "  --device LIST            devices for those layers: cuda0, opencl0,opencl1 ... (default: CUDA\n"
        "                           devices, else OpenCL GPUs; env HEARTH_DEVICE)\n" CLI_LOAD_HELP
        "  -fa, --flash-attn MODE   attention on the CPU: on (tiled, fast on long contexts), off\n"
        "                           (llama.cpp's exact order without flash attention), auto = on (default "
        "auto)\n" CLI_CACHE_TYPE_HELP CLI_ROPE_HELP "other:\n"
        "  -v, --verbose            log each request and loading details to stderr\n"
        "  -h, --help               this help\n",
        hearth_cpu_physical_cores());
}

typedef struct serve_opts {
    hl_model_file *models; /* names and paths malloc'd */
    size_t n_models, cap_models;
    const char *models_dir;
    const char *alias;
    const char *keep_alive;
    const char *chat_template;
    char *chat_template_text;
    hl_server_config cfg;
    hearth_engine_params engine;
    long n_gpu_layers;
    cli_load load;
    const char *keys[MAX_API_KEYS];
    const char *origins[MAX_API_KEYS]; /* --cors-origin */
    char *key_file_text;               /* owns the keys read from --api-key-file */
    const char *tls_key_file, *tls_cert_file;
    char *tls_key_pem, *tls_cert_pem; /* their contents */
} serve_opts;

static bool add_key(serve_opts *o, const char *key) {
    if (o->cfg.n_api_keys == MAX_API_KEYS) {
        fprintf(stderr, "hearth: at most %d API keys\n", MAX_API_KEYS);
        return false;
    }
    o->keys[o->cfg.n_api_keys++] = key;
    return true;
}

/* One key per line; blank lines and surrounding spaces are skipped. */
static bool read_key_file(serve_opts *o, const char *path) {
    size_t len;
    if (o->key_file_text) {
        fprintf(stderr, "hearth: give --api-key-file once (put every key in it)\n");
        return false;
    }
    o->key_file_text = cli_read_file(path, "API key file", &len);
    if (!o->key_file_text) return false;
    for (char *line = o->key_file_text, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        while (*line == ' ' || *line == '\t') line++;
        size_t n = strlen(line);
        while (n && (line[n - 1] == ' ' || line[n - 1] == '\t' || line[n - 1] == '\r')) line[--n] = '\0';
        if (n && !add_key(o, line)) return false;
    }
    return true;
}

/* A model to serve: a file (named by its file name) or a name hearth pull
 * takes (named as given). */
static bool add_model_as(serve_opts *o, const char *name, const char *path) {
    for (size_t i = 0; i < o->n_models; i++) {
        if (strcmp(o->models[i].name, name) != 0) continue;
        char *a = realpath(o->models[i].path, NULL), *b = realpath(path, NULL);
        const bool same = a && b && !strcmp(a, b); /* given twice (a MODEL also in --models-dir): once */
        free(a);
        free(b);
        if (same) return true;
        fprintf(stderr, "hearth: two models are named '%s': give one of them another name or folder\n", name);
        return false;
    }
    if (o->n_models == o->cap_models) {
        size_t cap = o->cap_models ? 2 * o->cap_models : 8;
        hl_model_file *grown = realloc(o->models, cap * sizeof *grown);
        if (!grown) return false;
        o->models = grown;
        o->cap_models = cap;
    }
    char *n = strdup(name), *p = strdup(path);
    if (!n || !p) {
        free(n);
        free(p);
        return false;
    }
    o->models[o->n_models++] = (hl_model_file){.name = n, .path = p};
    return true;
}

static bool add_model(serve_opts *o, const char *model) {
    const size_t len = strlen(model);
    const char *slash = strrchr(model, '/');
    const bool file = len > 5 && !strcmp(model + len - 5, ".gguf");
    return add_model_as(o, file && slash ? slash + 1 : model, model);
}

/* Every .gguf file of dir (the first part of a split model only), by name. */
static bool add_dir(serve_opts *o, const char *dir) {
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    if (n < 0) {
        fprintf(stderr, "hearth: cannot read --models-dir '%s': %s\n", dir, strerror(errno));
        return false;
    }
    bool ok = true;
    for (int i = 0; i < n; i++) {
        const char *f = names[i]->d_name;
        const size_t len = strlen(f);
        const char *part = strstr(f, "-of-");
        bool later_part = part && part > f + 5 && strncmp(part - 6, "-00001", 6) != 0;
        if (ok && len > 5 && !strcmp(f + len - 5, ".gguf") && !later_part) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, f);
            ok = add_model_as(o, f, path);
        }
        free(names[i]);
    }
    free(names);
    return ok;
}

/* Every model of hearth's store, by the name hearth list shows. */
static bool add_store(serve_opts *o) {
    hearth_stored_model *stored = NULL;
    size_t n = 0;
    if (hearth_model_list(NULL, &stored, &n) != HEARTH_OK) {
        fprintf(stderr, "hearth: --store: %s\n", hearth_last_error());
        return false;
    }
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++) ok = add_model_as(o, stored[i].name, stored[i].path);
    hearth_model_list_free(stored, n);
    return ok;
}

/* --keep-alive: seconds ("-1": never), or a duration such as 5m or 1h30m. */
static bool parse_keep_alive(const char *text, double *seconds) {
    const bool ok = hl_duration_parse(text, seconds);
    if (!ok) fprintf(stderr, "hearth: --keep-alive takes seconds or a duration such as 5m or 1h30m (got '%s')\n", text);
    return ok;
}

/* Returns 0 to go on, -1 after --help, else the exit status (2). */
static int parse_args(int argc, char **argv, serve_opts *o) {
    o->cfg = (hl_server_config){.host = "127.0.0.1",
                                .port = 8080,
                                .models_max = 3,
                                .max_body = 1 << 20,
                                .timeout_s = 600,
                                .read_timeout_s = 15,
                                .api_keys = o->keys,
                                .cors_origins = o->origins};
    o->engine = hearth_engine_default_params();
    cli_load_init(&o->load);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        long l;
#define IS(short_, long_) (!strcmp(a, short_) || !strcmp(a, long_))
#define NEED_VALUE()                                                                                                   \
    do {                                                                                                               \
        if (!val) {                                                                                                    \
            fprintf(stderr, "hearth: %s needs a value; see hearth serve --help\n", a);                                 \
            return 2;                                                                                                  \
        }                                                                                                              \
        i++;                                                                                                           \
    } while (0)
        int shared = cli_parse_ctx_opt(argc, argv, &i, "serve", &o->engine.ctx, &o->n_gpu_layers);
        if (!shared) shared = cli_parse_load_opt(argc, argv, &i, "serve", &o->load);
        if (shared) {
            if (shared < 0) return 2;
        } else if (IS("-h", "--help")) {
            serve_usage(stdout);
            return -1;
        } else if (IS("--host", "--host")) {
            NEED_VALUE();
            o->cfg.host = val;
        } else if (IS("--port", "--port")) {
            NEED_VALUE();
            if (!cli_parse_int(a, val, 0, 65535, &l)) return 2;
            o->cfg.port = (int)l;
        } else if (IS("--api-key", "--api-key")) {
            NEED_VALUE();
            if (!val[0]) {
                fprintf(stderr, "hearth: --api-key needs a non-empty key\n");
                return 2;
            }
            if (!add_key(o, val)) return 2;
        } else if (IS("--api-key-file", "--api-key-file")) {
            NEED_VALUE();
            if (!read_key_file(o, val)) return 2;
        } else if (IS("--max-body", "--max-body")) {
            NEED_VALUE();
            if (!cli_parse_int(a, val, 1, 1L << 30, &l)) return 2;
            o->cfg.max_body = (size_t)l;
        } else if (IS("--timeout", "--timeout")) {
            NEED_VALUE();
            if (!cli_parse_int(a, val, 0, 1L << 24, &l)) return 2;
            o->cfg.timeout_s = (unsigned)l;
        } else if (IS("--read-timeout", "--read-timeout")) {
            NEED_VALUE();
            if (!cli_parse_int(a, val, 0, 1L << 24, &l)) return 2;
            o->cfg.read_timeout_s = (double)l;
        } else if (IS("--max-connections", "--max-connections")) {
            NEED_VALUE();
            if (!cli_parse_int(a, val, 1, 1L << 30, &l)) return 2;
            o->cfg.max_connections = (unsigned)l;
        } else if (IS("--max-connections-per-ip", "--max-connections-per-ip")) {
            NEED_VALUE();
            if (!cli_parse_int(a, val, 0, 1L << 30, &l)) return 2;
            o->cfg.max_connections_per_ip = (unsigned)l;
        } else if (IS("--threads-http", "--threads-http")) {
            NEED_VALUE();
            if (!cli_parse_int(a, val, 1, 1024, &l)) return 2;
            o->cfg.n_threads_http = (int)l;
        } else if (IS("--ssl-key-file", "--ssl-key-file")) {
            NEED_VALUE();
            o->tls_key_file = val;
        } else if (IS("--ssl-cert-file", "--ssl-cert-file")) {
            NEED_VALUE();
            o->tls_cert_file = val;
        } else if (IS("--cors-origin", "--cors-origin")) {
            NEED_VALUE();
            if (o->cfg.n_cors_origins == MAX_API_KEYS) {
                fprintf(stderr, "hearth: at most %d --cors-origin\n", MAX_API_KEYS);
                return 2;
            }
            o->origins[o->cfg.n_cors_origins++] = val;
        } else if (IS("--no-webui", "--no-webui")) {
            o->cfg.no_webui = true;
        } else if (IS("--strict-model", "--strict-model")) {
            o->cfg.strict_model = true;
        } else if (IS("--alias", "--alias")) {
            NEED_VALUE();
            o->alias = val;
        } else if (IS("--models-dir", "--models-dir")) {
            NEED_VALUE();
            o->models_dir = val;
        } else if (IS("--store", "--store")) {
            o->cfg.store = true;
        } else if (IS("--models-max", "--models-max")) {
            NEED_VALUE();
            if (!cli_parse_int(a, val, 0, 4096, &l)) return 2;
            o->cfg.models_max = (unsigned)l;
        } else if (IS("--keep-alive", "--keep-alive")) {
            NEED_VALUE();
            o->keep_alive = val;
        } else if (IS("--chat-template", "--chat-template")) {
            NEED_VALUE();
            o->chat_template = val;
        } else if (IS("--embeddings", "--embeddings")) {
            o->engine.ctx.embeddings = true;
        } else if (IS("--pooling", "--pooling")) {
            NEED_VALUE();
            static const char *const names[] = {"mean", "cls", "last", "rank"};
            static const int32_t types[] = {HEARTH_POOLING_MEAN, HEARTH_POOLING_CLS, HEARTH_POOLING_LAST,
                                            HEARTH_POOLING_RANK};
            size_t k = 0;
            while (k < 4 && strcmp(val, names[k]) != 0) k++;
            if (k == 4) {
                fprintf(stderr, "hearth: --pooling takes mean, cls, last or rank (got '%s')\n", val);
                return 2;
            }
            o->engine.ctx.pooling_type = types[k];
        } else if (IS("--parallel", "-np")) {
            NEED_VALUE();
            if (!cli_parse_int(a, val, 1, 256, &l)) return 2;
            o->engine.ctx.n_seq_max = (uint32_t)l;
        } else if (IS("--queue", "--queue")) {
            NEED_VALUE();
            if (!cli_parse_int(a, val, 0, 1L << 20, &l)) return 2;
            o->engine.n_queue_max = (int32_t)l;
        } else if (IS("--context-shift", "--context-shift")) {
            o->engine.context_shift = true;
        } else if (IS("--keep", "--keep")) {
            NEED_VALUE();
            if (!cli_parse_int(a, val, -1, 1L << 30, &l)) return 2;
            o->engine.n_keep = (int32_t)l;
        } else if (IS("-v", "--verbose")) {
            o->cfg.verbose = true;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "hearth: unknown option '%s'; see hearth serve --help\n", a);
            return 2;
        } else if (!add_model(o, a)) {
            return 2;
        }
#undef IS
#undef NEED_VALUE
    }
    if (o->models_dir && !add_dir(o, o->models_dir)) return 2;
    if (o->cfg.store && !add_store(o)) return 2;
    if (!o->n_models) {
        fprintf(stderr, "hearth: serve needs a MODEL (or --models-dir with .gguf files, or --store with models in "
                        "it: hearth pull NAME); see hearth serve --help\n");
        return 2;
    }
    if (o->alias && o->n_models > 1) {
        fprintf(stderr, "hearth: --alias names one model; with several, each is named by its file name\n");
        return 2;
    }
    if (o->alias) {
        char *name = strdup(o->alias);
        if (!name) return 2;
        free((char *)o->models[0].name);
        o->models[0].name = name;
    }
    o->cfg.models = o->models;
    o->cfg.n_models = o->n_models;
    double keep = o->n_models > 1 ? 300 : -1;
    if (o->keep_alive && !parse_keep_alive(o->keep_alive, &keep)) return 2;
    o->cfg.keep_alive_s = keep;
    if (!o->tls_key_file != !o->tls_cert_file) {
        fprintf(stderr, "hearth: HTTPS needs both --ssl-key-file and --ssl-cert-file\n");
        return 2;
    }
    if (!o->cfg.n_threads_http)
        o->cfg.n_threads_http = o->engine.ctx.n_seq_max * 2 > 16 ? (int)o->engine.ctx.n_seq_max * 2 : 16;
    return 0;
}

/* The PEM files of --ssl-key-file and --ssl-cert-file into the config. */
static bool read_tls(serve_opts *o) {
    size_t len;
    if (!o->tls_key_file) return true;
    o->cfg.tls_key_pem = o->tls_key_pem = cli_read_file(o->tls_key_file, "TLS private key", &len);
    o->cfg.tls_cert_pem = o->tls_cert_pem = o->tls_key_pem ? cli_read_file(o->tls_cert_file, "TLS certificate", &len)
                                                           : NULL;
    return o->tls_cert_pem != NULL;
}

static void opts_free(serve_opts *o) {
    for (size_t i = 0; i < o->n_models; i++) {
        free((char *)o->models[i].name);
        free((char *)o->models[i].path);
    }
    free(o->models);
    free(o->chat_template_text);
    free(o->key_file_text);
    free(o->tls_key_pem);
    free(o->tls_cert_pem);
}

/* hl_load_fn: the model at path (a file or a name hearth pull takes) and
 * its engine, with the command's parameters. */
static hearth_status load(void *user, const char *path, hearth_model **model, hearth_engine **engine, char *err,
                          size_t err_size) {
    const serve_opts *o = user;
    hearth_model_params mp = hearth_model_default_params();
    mp.n_gpu_layers = (int32_t)o->n_gpu_layers;
    cli_fit_context(&o->engine.ctx, &mp);
    cli_load_apply(&o->load, &mp);
    char *file = NULL;
    hearth_status st = hearth_model_resolve(path, NULL, &file);
    if (st == HEARTH_OK) st = hearth_model_load(file, &mp, model);
    hearth_free(file);
    if (st != HEARTH_OK) {
        snprintf(err, err_size, "%s", hearth_last_error());
        return st;
    }
    hearth_engine_params ep = o->engine;
    ep.chat_template = o->chat_template_text;
    if (!hearth_model_can_generate(*model)) ep.ctx.embeddings = true; /* an encoder only embeds */
    if (ep.ctx.embeddings && ep.ctx.pooling_type == HEARTH_POOLING_UNSPECIFIED &&
        hearth_model_pooling_type(*model) == HEARTH_POOLING_NONE) {
        snprintf(err, err_size, "the file gives no pooling type: serving embeddings needs --pooling mean, cls or last");
        st = HEARTH_ERR_INVALID_ARG;
    } else if ((st = hearth_engine_init(*model, &ep, engine)) != HEARTH_OK) {
        snprintf(err, err_size, "%s", hearth_last_error());
    }
    if (st != HEARTH_OK) {
        hearth_model_free(*model);
        *model = NULL;
    }
    return st;
}

int cmd_serve(int argc, char **argv) {
    serve_opts o = {0};
    int rc = parse_args(argc, argv, &o);
    size_t len;
    if (!rc && (!read_tls(&o) ||
                (o.chat_template && !(o.chat_template_text = cli_read_file(o.chat_template, "chat template", &len)))))
        rc = 1;
    if (rc) {
        opts_free(&o);
        return rc < 0 ? 0 : rc;
    }
    o.cfg.load = load;
    o.cfg.load_user = &o;
    cli_log_init(o.cfg.verbose);
    /* Every thread started from here on (the server's, the engine's)
     * inherits this mask, so the signals reach only sigwait() below. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN); /* a client gone mid-write is an error return, not a death */
    char err[256];
    hl_server *srv = hl_server_start(&o.cfg, err, sizeof err);
    if (!srv) {
        fprintf(stderr, "hearth: %s\n", err);
        opts_free(&o);
        return 1;
    }
    const char *host = o.cfg.host;
    bool v6 = strchr(host, ':') != NULL;
    fprintf(stderr, "hearth: listening on http%s://%s%s%s:%d (model %s%s, %u slot%s each, at most %u connections)\n",
            o.cfg.tls_key_pem ? "s" : "", v6 ? "[" : "", host, v6 ? "]" : "", hl_server_port(srv), o.models[0].name,
            o.n_models > 1 ? " and others, loaded on demand" : "", o.engine.ctx.n_seq_max,
            o.engine.ctx.n_seq_max == 1 ? "" : "s", hl_server_max_connections(srv));
    if (o.n_models > 1) hl_server_ready(srv);
    else if (!hl_server_preload(srv, err, sizeof err)) {
        fprintf(stderr, "hearth: %s\n", err);
        rc = 1;
    }
    if (rc == 0) {
        fprintf(stderr, "hearth: ready\n");
        int sig;
        sigwait(&stop, &sig);
        fprintf(stderr, "hearth: %s: stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    }
    hl_server_stop(srv);
    opts_free(&o);
    return rc;
}
