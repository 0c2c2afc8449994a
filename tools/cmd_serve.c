/* `hearth serve MODEL`: the OpenAI-compatible HTTP server. Parses the
 * options, starts listening (so /health answers 503 while the model
 * loads), loads the model into an engine, serves until SIGINT or SIGTERM,
 * then stops gracefully and exits 0. The HTTP layer is tools/server/. */
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
        "usage: hearth serve MODEL [options]\n"
        "\n"
        "Serves the GGUF model MODEL over HTTP with OpenAI's API (/v1/chat/completions,\n"
        "/v1/completions, /v1/models) and /health, /metrics, /slots, /tokenize, /detokenize.\n"
        "Requests run together in slots (continuous batching); more wait in a queue.\n"
        "An embedding model (bert, nomic-bert) serves /v1/embeddings instead of generating; a\n"
        "reranker (a cross-encoder whose file gives pooling_type rank) serves /v1/rerank.\n"
        "\n"
        "network:\n"
        "      --host HOST          address to listen on (default 127.0.0.1)\n"
        "      --port N             port; 0 = any free port, printed at start (default 8080)\n"
        "      --api-key KEY        require 'Authorization: Bearer KEY' (repeat for more keys)\n"
        "      --api-key-file FILE  keys from FILE, one per line\n"
        "      --max-body BYTES     largest request body (default 1048576)\n"
        "      --timeout SECONDS    close connections idle this long; 0 = never (default 600)\n"
        "      --cors-origin ORIGIN let pages from ORIGIN call the server (CORS; repeat; * = any)\n"
        "      --no-webui           GET / from a browser answers Ollama's text, not the chat page\n"
        "model:\n"
        "      --alias NAME         the model id clients see (default: MODEL's file name)\n"
        "      --strict-model       answer 404 to a request naming another model (default: any name serves)\n"
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
    const char *model;
    const char *chat_template;
    hl_server_config cfg;
    hearth_engine_params engine;
    long n_gpu_layers;
    cli_load load;
    const char *keys[MAX_API_KEYS];
    const char *origins[MAX_API_KEYS]; /* --cors-origin */
    char *key_file_text;               /* owns the keys read from --api-key-file */
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

/* Returns 0 to go on, -1 after --help, else the exit status (2). */
static int parse_args(int argc, char **argv, serve_opts *o) {
    o->cfg = (hl_server_config){.host = "127.0.0.1",
                                .port = 8080,
                                .max_body = 1 << 20,
                                .timeout_s = 600,
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
            o->cfg.alias = val;
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
        } else if (!o->model) {
            o->model = a;
        } else {
            fprintf(stderr, "hearth: unexpected argument '%s'; see hearth serve --help\n", a);
            return 2;
        }
#undef IS
#undef NEED_VALUE
    }
    if (!o->model) {
        fprintf(stderr, "hearth: serve needs a MODEL file; see hearth serve --help\n");
        return 2;
    }
    if (!o->cfg.alias) {
        const char *slash = strrchr(o->model, '/');
        o->cfg.alias = slash ? slash + 1 : o->model;
    }
    return 0;
}

/* Loads the model and its engine; 0 or the exit status after the error. */
static int load(const serve_opts *o, hearth_model **model, hearth_engine **engine) {
    hearth_model_params mp = hearth_model_default_params();
    mp.n_gpu_layers = (int32_t)o->n_gpu_layers;
    cli_fit_context(&o->engine.ctx, &mp);
    cli_load_apply(&o->load, &mp);
    if (cli_model_load(o->model, &mp, model)) return 1;
    hearth_engine_params ep = o->engine;
    if (!hearth_model_can_generate(*model)) ep.ctx.embeddings = true; /* an encoder only embeds */
    if (ep.ctx.embeddings && ep.ctx.pooling_type == HEARTH_POOLING_UNSPECIFIED &&
        hearth_model_pooling_type(*model) == HEARTH_POOLING_NONE) {
        fprintf(stderr, "hearth: %s gives no pooling type: serving embeddings needs --pooling mean, cls or last\n",
                o->model);
        return 1;
    }
    char *tmpl = NULL;
    if (o->chat_template) {
        size_t len;
        if (!(tmpl = cli_read_file(o->chat_template, "chat template", &len))) return 1;
        ep.chat_template = tmpl;
    }
    hearth_status st = hearth_engine_init(*model, &ep, engine);
    free(tmpl);
    return st == HEARTH_OK ? 0 : cli_fail("engine");
}

int cmd_serve(int argc, char **argv) {
    serve_opts o = {0};
    int rc = parse_args(argc, argv, &o);
    if (rc) {
        free(o.key_file_text);
        return rc < 0 ? 0 : rc;
    }
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
        free(o.key_file_text);
        return 1;
    }
    const char *host = o.cfg.host;
    bool v6 = strchr(host, ':') != NULL;
    fprintf(stderr, "hearth: listening on http://%s%s%s:%d (model %s, %u slot%s)\n", v6 ? "[" : "", host, v6 ? "]" : "",
            hl_server_port(srv), o.cfg.alias, o.engine.ctx.n_seq_max, o.engine.ctx.n_seq_max == 1 ? "" : "s");
    hearth_model *model = NULL;
    hearth_engine *engine = NULL;
    rc = load(&o, &model, &engine);
    if (rc == 0) {
        hl_server_ready(srv, engine);
        fprintf(stderr, "hearth: ready: %s\n", hearth_model_desc(model));
        int sig;
        sigwait(&stop, &sig);
        fprintf(stderr, "hearth: %s: stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    }
    hl_server_stop(srv);
    hearth_engine_free(engine);
    hearth_model_free(model);
    free(o.key_file_text);
    return rc;
}
