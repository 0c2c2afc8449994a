/* `hearth embed MODEL TEXT...`: one pooled embedding per text, by the
 * library's hearth_embed (special tokens, several texts per batch, pooling
 * and L2 normalisation are its). stdout gets one vector per line
 * (space-separated floats) or, with --json, one JSON object.
 * `hearth rerank MODEL QUERY DOCUMENT...`: a reranker's score of each
 * document for the query, by the library's hearth_rerank, best first; the
 * same options and text gathering (the first text is the query). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct embed_opts {
    const char *model;
    const char **texts; /* the TEXT arguments (argv entries) */
    size_t n_texts;
    const char *file; /* -f FILE: one text per line ("-": stdin) */
    bool json, normalize, verbose;
    bool rerank;     /* hearth rerank */
    long top_n;      /* rerank: documents printed; 0 = all */
    int32_t pooling; /* hearth_pooling_type; UNSPECIFIED: the model's */
    hearth_context_params ctx;
    long n_gpu_layers;
} embed_opts;

static void embed_usage(FILE *out) {
    fprintf(
        out,
        "usage: hearth embed MODEL [TEXT...] [options]\n"
        "\n"
        "Prints the embedding of each TEXT (and of each line of -f FILE) with the GGUF model MODEL:\n"
        "one vector per line, n_embd space-separated floats, in the order the texts were given.\n"
        "Each text is tokenized with the model's special tokens ([CLS] ... [SEP] for BERT), its\n"
        "tokens' hidden states pooled as the model says (or --pooling) and scaled to unit L2 norm.\n"
        "An embedding model (bert: all-MiniLM, bge, e5, gte) embeds as it is; a generation model\n"
        "needs --pooling last or mean.\n"
        "\n"
        "input:\n"
        "  -f, --file FILE          one text per line of FILE (\"-\": stdin), after the TEXT arguments\n"
        "  --                       the arguments after it are texts, even those that start with '-'\n"
        "output:\n"
        "      --json               one JSON object: {\"model\", \"n_embd\", \"data\": [{\"index\", \"embedding\"}]}\n"
        "      --pooling MODE       mean, cls or last (default: the model's pooling_type); none is refused:\n"
        "                           it gives no vector per text\n"
        "      --no-normalize       the pooled vectors as they are, not scaled to unit length\n"
        "performance:\n"
        "  -t, --threads N          CPU threads (default: physical cores, %d here)\n"
        "  -ngl, --n-gpu-layers N   layers to put on the GPU; -1 = all, auto = as many as fit (default 0)\n"
        "  --device LIST            devices for those layers: cuda0, opencl0,opencl1 ... (hearth info)\n"
        "other:\n"
        "  -v, --verbose            log loading details to stderr (or set HEARTH_LOG=debug|info|warn|error)\n"
        "  -h, --help               this help\n"
        "\n"
        "A text longer than the model's context (n_ctx_train tokens) is an error (exit status 1).\n",
        hearth_cpu_physical_cores());
}

static void rerank_usage(FILE *out) {
    fprintf(out,
            "usage: hearth rerank MODEL QUERY [DOCUMENT...] [options]\n"
            "\n"
            "Scores each DOCUMENT (and each line of -f FILE) for QUERY with the reranker MODEL (a\n"
            "cross-encoder whose GGUF gives pooling_type rank, such as bge-reranker) and prints one\n"
            "line per document, best first: the score (the raw logit; higher is more relevant), a tab,\n"
            "the document's index in the order given, a tab, the document. The pair is tokenized as\n"
            "llama.cpp's server does it ([CLS] QUERY [SEP] DOCUMENT for BERT).\n"
            "\n"
            "  -f, --file FILE          documents, one per line (\"-\": stdin), after the DOCUMENT arguments\n"
            "  --                       the arguments after it are texts, even those that start with '-'\n"
            "      --top-n N            print the N best documents only (default: all)\n"
            "      --json               one JSON object: {\"model\", \"results\": [{\"index\", \"relevance_score\",\n"
            "                           \"document\"}]}, best first\n"
            "  -t, --threads N          CPU threads (default: physical cores, %d here)\n"
            "  -ngl, --n-gpu-layers N   layers to put on the GPU; -1 = all (default 0)\n"
            "  --device LIST            devices for those layers (hearth info)\n"
            "  -v, --verbose            log loading details to stderr\n"
            "  -h, --help               this help\n",
            hearth_cpu_physical_cores());
}

static bool parse_pooling(const char *val, int32_t *out) {
    static const struct {
        const char *name;
        int32_t value;
    } names[] = {{"none", HEARTH_POOLING_NONE},
                 {"mean", HEARTH_POOLING_MEAN},
                 {"cls", HEARTH_POOLING_CLS},
                 {"last", HEARTH_POOLING_LAST}};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++)
        if (!strcmp(val, names[k].name)) {
            *out = names[k].value;
            return true;
        }
    fprintf(stderr, "hearth: --pooling expects mean, cls, last or none, got '%s'\n", val);
    return false;
}

/* Returns 0 to go on, -1 after printing --help, else the exit status (2). */
static int parse_embed_args(int argc, char **argv, bool rerank, embed_opts *o) {
    *o = (embed_opts){.normalize = true,
                      .rerank = rerank,
                      .pooling = HEARTH_POOLING_UNSPECIFIED,
                      .ctx = hearth_context_default_params()};
    const char *cmd = rerank ? "rerank" : "embed";
    o->texts = calloc((size_t)argc, sizeof *o->texts);
    if (!o->texts) return 2;
    bool options = true; /* until "--": later arguments are texts, even "-x" */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (options && !strcmp(a, "--")) {
            options = false;
            continue;
        }
        if (!options) {
            if (!o->model) o->model = a;
            else o->texts[o->n_texts++] = a;
            continue;
        }
        const bool shared_opt = !strcmp(a, "-t") || !strcmp(a, "--threads") || !strcmp(a, "-ngl") ||
                                !strcmp(a, "--n-gpu-layers") || !strcmp(a, "--device");
        if (shared_opt) {
            if (cli_parse_ctx_opt(argc, argv, &i, "embed", &o->ctx, &o->n_gpu_layers) < 0) return 2;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            if (o->rerank) rerank_usage(stdout);
            else embed_usage(stdout);
            return -1;
        } else if (o->rerank && !strcmp(a, "--top-n")) {
            if (!val || !cli_parse_int(a, val, 1, INT32_MAX, &o->top_n)) {
                if (!val) fprintf(stderr, "hearth: --top-n needs a value; see hearth rerank --help\n");
                return 2;
            }
            i++;
        } else if (!strcmp(a, "-f") || !strcmp(a, "--file") || (!o->rerank && !strcmp(a, "--pooling"))) {
            if (!val) {
                fprintf(stderr, "hearth: %s needs a value; see hearth %s --help\n", a, cmd);
                return 2;
            }
            i++;
            if (strcmp(a, "--pooling") != 0) o->file = val;
            else if (!parse_pooling(val, &o->pooling)) return 2;
        } else if (!strcmp(a, "--json")) {
            o->json = true;
        } else if (!o->rerank && !strcmp(a, "--no-normalize")) {
            o->normalize = false;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            o->verbose = true;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "hearth: unknown option '%s'; see hearth %s --help\n", a, cmd);
            return 2;
        } else if (!o->model) {
            o->model = a;
        } else {
            o->texts[o->n_texts++] = a;
        }
    }
    if (!o->model) {
        fprintf(stderr, "hearth: %s needs a MODEL file; see hearth %s --help\n", cmd, cmd);
        return 2;
    }
    if (o->rerank ? !o->n_texts || (o->n_texts == 1 && !o->file) : !o->n_texts && !o->file) {
        fprintf(stderr, "hearth: %s needs %s; see hearth %s --help\n", cmd,
                o->rerank ? "a QUERY and DOCUMENT arguments or -f FILE" : "TEXT arguments or -f FILE", cmd);
        return 2;
    }
    return 0;
}

typedef struct embed_state {
    hearth_model *model;
    char *file_text;
    const char **texts; /* every text: the arguments, then the file's lines */
    size_t *lens;
    size_t n;
    float *vectors; /* [n][n_embd] */
} embed_state;

static void embed_state_free(embed_state *s) {
    free(s->vectors);
    free(s->texts);
    free(s->lens);
    free(s->file_text);
    hearth_model_free(s->model);
}

/* The arguments' texts, then -f's lines (a final newline ends the last
 * line; a CR before a newline is dropped). */
static int gather_texts(const embed_opts *o, embed_state *s) {
    size_t file_len = 0, n_lines = 0;
    if (o->file) {
        s->file_text = cli_read_file(strcmp(o->file, "-") ? o->file : "/dev/stdin", "text file", &file_len);
        if (!s->file_text) return 1;
        for (size_t i = 0; i < file_len; i++) n_lines += s->file_text[i] == '\n';
        n_lines += file_len > 0 && s->file_text[file_len - 1] != '\n';
    }
    s->texts = calloc(o->n_texts + n_lines + 1, sizeof *s->texts);
    s->lens = calloc(o->n_texts + n_lines + 1, sizeof *s->lens);
    if (!s->texts || !s->lens) return cli_fail("embed");
    for (size_t i = 0; i < o->n_texts; i++) {
        s->texts[s->n] = o->texts[i];
        s->lens[s->n++] = strlen(o->texts[i]);
    }
    for (size_t start = 0; start < file_len;) {
        const char *nl = memchr(s->file_text + start, '\n', file_len - start);
        size_t end = nl ? (size_t)(nl - s->file_text) : file_len, len = end - start;
        if (len > 0 && s->file_text[start + len - 1] == '\r') len--;
        s->texts[s->n] = s->file_text + start;
        s->lens[s->n++] = len;
        start = end + 1;
    }
    if (s->n == 0) {
        fprintf(stderr, "hearth: %s holds no text\n", o->file);
        return 1;
    }
    return 0;
}

/* Embeds every text into s->vectors. */
static int embed_texts(const embed_opts *o, embed_state *s) {
    hearth_context_params cp = o->ctx;
    cp.pooling_type = o->pooling;
    cp.embd_normalize = o->normalize;
    s->vectors = malloc((s->n + 1) * (size_t)hearth_model_n_embd(s->model) * sizeof *s->vectors);
    if (!s->vectors || hearth_embed(s->model, s->texts, s->lens, s->n, &cp, s->vectors) != HEARTH_OK)
        return cli_fail("embed");
    return 0;
}

static void print_json_string_n(const char *str, size_t len) {
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)str; p < (const unsigned char *)str + len; p++) {
        if (*p == '"' || *p == '\\') printf("\\%c", *p);
        else if (*p < 0x20) printf("\\u%04x", *p);
        else putchar(*p);
    }
    putchar('"');
}

static void print_json_string(const char *str) { print_json_string_n(str, strlen(str)); }

static void print_float(float x) {
    if (isfinite(x)) printf("%.7g", (double)x);
    else printf("null");
}

static int print_vectors(const embed_opts *o, const embed_state *s) {
    const int32_t n_embd = hearth_model_n_embd(s->model);
    if (o->json) {
        printf("{\"model\": ");
        print_json_string(o->model);
        printf(", \"n_embd\": %d, \"data\": [", (int)n_embd);
    }
    for (size_t i = 0; i < s->n; i++) {
        const float *v = s->vectors + i * (size_t)n_embd;
        if (o->json) printf("%s{\"index\": %zu, \"embedding\": [", i ? ", " : "", i);
        for (int32_t k = 0; k < n_embd; k++) {
            if (k) fputs(o->json ? ", " : " ", stdout);
            print_float(v[k]);
        }
        fputs(o->json ? "]}" : "\n", stdout);
    }
    if (o->json) printf("]}\n");
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "hearth: cannot write the embeddings to stdout\n");
        return 1;
    }
    return 0;
}

typedef struct ranked {
    size_t index;
    float score;
} ranked;

static int by_score(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    return x->score < y->score ? 1 : x->score > y->score ? -1 : (x->index > y->index) - (x->index < y->index);
}

/* s->texts[0] is the query, the rest the documents. */
static int rerank(const embed_opts *o, embed_state *s) {
    const size_t n = s->n - 1;
    ranked *r = calloc(n, sizeof *r);
    s->vectors = malloc(n * sizeof *s->vectors);
    if (!r || !s->vectors ||
        hearth_rerank(s->model, s->texts[0], s->lens[0], s->texts + 1, s->lens + 1, n, &o->ctx, s->vectors) !=
            HEARTH_OK) {
        free(r);
        return cli_fail("rerank");
    }
    for (size_t i = 0; i < n; i++) r[i] = (ranked){i, s->vectors[i]};
    qsort(r, n, sizeof *r, by_score);
    const size_t n_out = o->top_n > 0 && (size_t)o->top_n < n ? (size_t)o->top_n : n;
    if (o->json) {
        printf("{\"model\": ");
        print_json_string(o->model);
        printf(", \"results\": [");
    }
    for (size_t k = 0; k < n_out; k++) {
        const char *doc = s->texts[1 + r[k].index];
        const int len = (int)s->lens[1 + r[k].index];
        if (o->json) {
            printf("%s{\"index\": %zu, \"relevance_score\": ", k ? ", " : "", r[k].index);
            print_float(r[k].score);
            printf(", \"document\": ");
            print_json_string_n(doc, (size_t)len);
            putchar('}');
        } else {
            print_float(r[k].score);
            printf("\t%zu\t%.*s\n", r[k].index, len, doc);
        }
    }
    if (o->json) printf("]}\n");
    free(r);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "hearth: cannot write the scores to stdout\n");
        return 1;
    }
    return 0;
}

static int embed(const embed_opts *o, embed_state *s) {
    int rc = gather_texts(o, s);
    if (rc) return rc;
    hearth_model_params mp = hearth_model_default_params();
    mp.n_gpu_layers = (int32_t)o->n_gpu_layers;
    if (cli_model_load(o->model, &mp, &s->model)) return 1;
    if (o->rerank) return rerank(o, s);
    const int32_t pooling = o->pooling != HEARTH_POOLING_UNSPECIFIED ? o->pooling : hearth_model_pooling_type(s->model);
    if (pooling == HEARTH_POOLING_NONE) {
        if (o->pooling == HEARTH_POOLING_NONE)
            fprintf(stderr, "hearth: --pooling none gives no vector per text: use --pooling mean, cls or last\n");
        else
            fprintf(stderr, "hearth: %s has no pooling of its own (pooling_type none%s): give --pooling last or mean\n",
                    hearth_model_desc(s->model), hearth_model_can_generate(s->model) ? ", a generation model" : "");
        return 1;
    }
    if ((rc = embed_texts(o, s))) return rc;
    return print_vectors(o, s);
}

static int run_cmd(int argc, char **argv, bool rerank) {
    embed_opts o;
    int rc = parse_embed_args(argc, argv, rerank, &o);
    if (rc) {
        free(o.texts);
        return rc < 0 ? 0 : rc;
    }
    cli_log_init(o.verbose);
    embed_state s = {0};
    rc = embed(&o, &s);
    embed_state_free(&s);
    free(o.texts);
    return rc;
}

int cmd_embed(int argc, char **argv) { return run_cmd(argc, argv, false); }

int cmd_rerank(int argc, char **argv) { return run_cmd(argc, argv, true); }
