/* `hearth embed MODEL TEXT...`: one pooled embedding per text, through an
 * embeddings context of the library (hearth_context_params.embeddings):
 * the texts are tokenized with special tokens, several at once go into one
 * batch as separate sequences, and the library pools (mean, CLS, last) and
 * L2-normalises each sequence's vector. stdout gets one vector per line
 * (space-separated floats) or, with --json, one JSON object. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define EMBED_BATCH_TOKENS 2048 /* KV cells of the context, at most (a longer text gets a batch of its own) */
#define EMBED_BATCH_SEQS 64     /* texts of one batch, at most */

typedef struct embed_opts {
    const char *model;
    const char **texts; /* the TEXT arguments (argv entries) */
    size_t n_texts;
    const char *file; /* -f FILE: one text per line ("-": stdin) */
    bool json, normalize, verbose;
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
static int parse_embed_args(int argc, char **argv, embed_opts *o) {
    *o = (embed_opts){.normalize = true, .pooling = HEARTH_POOLING_UNSPECIFIED, .ctx = hearth_context_default_params()};
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
            embed_usage(stdout);
            return -1;
        } else if (!strcmp(a, "-f") || !strcmp(a, "--file") || !strcmp(a, "--pooling")) {
            if (!val) {
                fprintf(stderr, "hearth: %s needs a value; see hearth embed --help\n", a);
                return 2;
            }
            i++;
            if (strcmp(a, "--pooling") != 0) o->file = val;
            else if (!parse_pooling(val, &o->pooling)) return 2;
        } else if (!strcmp(a, "--json")) {
            o->json = true;
        } else if (!strcmp(a, "--no-normalize")) {
            o->normalize = false;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            o->verbose = true;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "hearth: unknown option '%s'; see hearth embed --help\n", a);
            return 2;
        } else if (!o->model) {
            o->model = a;
        } else {
            o->texts[o->n_texts++] = a;
        }
    }
    if (!o->model) {
        fprintf(stderr, "hearth: embed needs a MODEL file; see hearth embed --help\n");
        return 2;
    }
    if (!o->n_texts && !o->file) {
        fprintf(stderr, "hearth: embed needs TEXT arguments or -f FILE; see hearth embed --help\n");
        return 2;
    }
    return 0;
}

typedef struct embed_state {
    hearth_model *model;
    hearth_context *ctx;
    char *file_text;
    const char **texts; /* every text: the arguments, then the file's lines */
    size_t *lens;
    size_t n;
    int32_t **tokens; /* [n] each text's token ids */
    size_t *n_tokens;
    float *vectors; /* [n][n_embd] */
} embed_state;

static void embed_state_free(embed_state *s) {
    for (size_t i = 0; s->tokens && i < s->n; i++) free(s->tokens[i]);
    free(s->tokens);
    free(s->n_tokens);
    free(s->vectors);
    free(s->texts);
    free(s->lens);
    free(s->file_text);
    hearth_context_free(s->ctx);
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

/* Tokenizes every text (special tokens added and parsed); a text that
 * gives no token or more than the model's context is an error. */
static int tokenize_texts(embed_state *s) {
    const int32_t n_ctx_train = hearth_model_n_ctx_train(s->model);
    s->tokens = calloc(s->n, sizeof *s->tokens);
    s->n_tokens = calloc(s->n, sizeof *s->n_tokens);
    if (!s->tokens || !s->n_tokens) return cli_fail("embed");
    for (size_t i = 0; i < s->n; i++) {
        size_t n_max = s->lens[i] + 8;
        if (!(s->tokens[i] = malloc(n_max * sizeof **s->tokens))) return cli_fail("tokenize");
        hearth_status st = hearth_tokenize(s->model, s->texts[i], s->lens[i], true, true, s->tokens[i], n_max,
                                           &s->n_tokens[i]);
        if (st == HEARTH_ERR_BUFFER_TOO_SMALL) {
            free(s->tokens[i]);
            n_max = s->n_tokens[i];
            if (!(s->tokens[i] = malloc(n_max * sizeof **s->tokens))) return cli_fail("tokenize");
            st = hearth_tokenize(s->model, s->texts[i], s->lens[i], true, true, s->tokens[i], n_max, &s->n_tokens[i]);
        }
        if (st != HEARTH_OK) return cli_fail("tokenize");
        if (s->n_tokens[i] == 0) {
            fprintf(stderr, "hearth: text %zu is empty: it gives no token to embed\n", i);
            return 1;
        }
        if (n_ctx_train > 0 && s->n_tokens[i] > (size_t)n_ctx_train) {
            fprintf(stderr,
                    "hearth: text %zu is %zu tokens, longer than the model's context of %d tokens: shorten or split "
                    "it\n",
                    i, s->n_tokens[i], (int)n_ctx_train);
            return 1;
        }
    }
    return 0;
}

/* Texts [first, end) of the batch starting at `first` (one text at least). */
static size_t batch_end(const embed_state *s, size_t first, size_t longest, size_t *n_tok) {
    /* texts per batch: as many as EMBED_BATCH_TOKENS tokens of the longest text make, so that the context's
     * KV cache (n_seq_max sequences of the longest text) stays within max(EMBED_BATCH_TOKENS, longest) cells */
    size_t per = longest >= EMBED_BATCH_TOKENS ? 1 : EMBED_BATCH_TOKENS / longest, end = first, tok = 0;
    if (per > EMBED_BATCH_SEQS) per = EMBED_BATCH_SEQS;
    while (end < s->n && end - first < per) tok += s->n_tokens[end++];
    *n_tok = tok;
    return end;
}

/* Embeds every text into s->vectors: the batches run one after another in
 * one context of n_seq_max = the largest batch's texts, each sequence
 * holding the longest text, n_batch (= n_ubatch: a sequence in one pass) the
 * largest batch's tokens. */
static int embed_texts(const embed_opts *o, embed_state *s) {
    size_t max_seqs = 0, max_tok = 0, longest = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->n_tokens[i] > longest) longest = s->n_tokens[i];
    for (size_t first = 0, end, tok; first < s->n; first = end) {
        end = batch_end(s, first, longest, &tok);
        if (end - first > max_seqs) max_seqs = end - first;
        if (tok > max_tok) max_tok = tok;
    }
    hearth_context_params cp = o->ctx;
    cp.embeddings = true;
    cp.pooling_type = o->pooling;
    cp.embd_normalize = o->normalize;
    cp.n_seq_max = (uint32_t)max_seqs;
    cp.n_ctx = (uint32_t)(longest * max_seqs);
    cp.n_batch = cp.n_ubatch = (uint32_t)max_tok;
    if (hearth_context_init(s->model, &cp, &s->ctx) != HEARTH_OK) return cli_fail("context");
    const int32_t n_embd = hearth_model_n_embd(s->model);
    s->vectors = malloc(s->n * (size_t)n_embd * sizeof *s->vectors);
    int32_t *token = malloc(max_tok * sizeof *token), *seq = malloc(max_tok * sizeof *seq);
    int rc = s->vectors && token && seq ? 0 : cli_fail("embed");
    for (size_t first = 0, end, tok; !rc && first < s->n; first = end) {
        end = batch_end(s, first, longest, &tok);
        size_t k = 0;
        for (size_t i = first; i < end; i++)
            for (size_t t = 0; t < s->n_tokens[i]; t++, k++) {
                token[k] = s->tokens[i][t];
                seq[k] = (int32_t)(i - first);
            }
        hearth_kv_seq_rm(s->ctx, -1, 0, -1); /* each batch's texts start their sequences afresh */
        const hearth_batch b = {.n_tokens = (int32_t)k, .token = token, .seq_id = seq};
        if (hearth_decode_batch(s->ctx, &b) != HEARTH_OK) {
            rc = cli_fail("embed");
            break;
        }
        for (size_t i = first; i < end; i++) {
            const float *v = hearth_get_embeddings_seq(s->ctx, (int32_t)(i - first));
            if (!v) {
                fprintf(stderr, "hearth: embed: no pooled vector for text %zu\n", i);
                rc = 1;
                break;
            }
            memcpy(s->vectors + i * (size_t)n_embd, v, (size_t)n_embd * sizeof *v);
        }
    }
    free(token);
    free(seq);
    return rc;
}

static void print_json_string(const char *str) {
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)str; *p; p++) {
        if (*p == '"' || *p == '\\') printf("\\%c", *p);
        else if (*p < 0x20) printf("\\u%04x", *p);
        else putchar(*p);
    }
    putchar('"');
}

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

static int embed(const embed_opts *o, embed_state *s) {
    int rc = gather_texts(o, s);
    if (rc) return rc;
    hearth_model_params mp = hearth_model_default_params();
    mp.n_gpu_layers = (int32_t)o->n_gpu_layers;
    if (cli_model_load(o->model, &mp, &s->model)) return 1;
    const int32_t pooling = o->pooling != HEARTH_POOLING_UNSPECIFIED ? o->pooling : hearth_model_pooling_type(s->model);
    if (pooling == HEARTH_POOLING_NONE) {
        if (o->pooling == HEARTH_POOLING_NONE)
            fprintf(stderr, "hearth: --pooling none gives no vector per text: use --pooling mean, cls or last\n");
        else
            fprintf(stderr, "hearth: %s has no pooling of its own (pooling_type none%s): give --pooling last or mean\n",
                    hearth_model_desc(s->model), hearth_model_can_generate(s->model) ? ", a generation model" : "");
        return 1;
    }
    if ((rc = tokenize_texts(s)) || (rc = embed_texts(o, s))) return rc;
    return print_vectors(o, s);
}

int cmd_embed(int argc, char **argv) {
    embed_opts o;
    int rc = parse_embed_args(argc, argv, &o);
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
