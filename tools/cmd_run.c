/* `hearth run MODEL [PROMPT]`: load a model, process the prompt in batches,
 * then generate token by token, streaming the text to stdout. stdout carries
 * only the generated text; stderr a short summary with load time and tok/s.
 * With --chat MESSAGE the prompt is the model's chat template rendered over
 * [--system TEXT,] MESSAGE. Also parses the options of `hearth chat`. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static void run_usage(FILE *out, bool chat) {
    if (chat)
        fprintf(out, "usage: hearth chat MODEL [options]\n"
                     "\n"
                     "Chats with the GGUF model MODEL: type a message and press Enter; the answer streams to\n"
                     "stdout. The conversation is rendered with the model's chat template, and the KV cache is\n"
                     "kept between turns. /exit or Ctrl-D ends the chat; Ctrl-C stops an answer (at the prompt,\n"
                     "it ends the chat).\n"
                     "\n"
                     "chat:\n"
                     "      --system TEXT        a system message first\n"
                     "      --chat-template FILE use the Jinja template in FILE instead of the model's\n"
                     "generation:\n"
                     "  -n, --n-predict N        tokens per answer, at most (default -1: until the end-of-turn token\n"
                     "                           or a full context)\n");
    else
        fprintf(out,
                "usage: hearth run MODEL [PROMPT] [options]\n"
                "\n"
                "Generates text from PROMPT with the GGUF model MODEL. The text goes to stdout as it is\n"
                "produced; a summary (load time, prompt and generation tok/s) goes to stderr.\n"
                "\n"
                "prompt:\n"
                "  -p, --prompt TEXT        the prompt (instead of the PROMPT argument)\n"
                "  -f, --file FILE          read the prompt from FILE\n"
                "      --no-parse-special   treat special-token text like <|im_start|> as plain text\n"
                "      --chat MESSAGE       prompt with the model's chat template over MESSAGE (a user turn)\n"
                "      --system TEXT        with --chat: a system message first\n"
                "      --chat-template FILE with --chat: the Jinja template in FILE instead of the model's\n"
                "generation:\n"
                "  -n, --n-predict N        tokens to generate, at most (default 128; -1 = until the context is full,\n"
                "                           or without end with --context-shift)\n"
                "      --context-shift      when the context is full, drop the oldest tokens after --keep and go on\n"
                "                           (the cached keys are re-rotated, nothing is recomputed); default: stop\n"
                "      --keep N             with --context-shift: prompt tokens always kept, after the BOS\n"
                "                           (default 0; -1 = the whole prompt)\n");
    fprintf(
        out,
        "      --temp T             temperature; 0 = greedy (default 0.8)\n"
        "      --top-k K            keep the K most likely tokens; 0 = off (default 40)\n"
        "      --top-p P            nucleus sampling threshold in (0, 1]; 1 = off (default 0.95)\n"
        "      --min-p P            drop tokens below P x the top probability; 0 = off (default 0.05)\n"
        "      --repeat-penalty R   penalty for the last 64 tokens; 1 = off (default 1.0)\n"
        "      --seed S             random seed; the same seed gives the same text (default: random)\n"
        "%s"
        "performance:\n"
        "  -t, --threads N          CPU threads (default: physical cores, %d here)\n"
        "  -c, --ctx-size N         context length in tokens (default: the model's, at most 4096)\n"
        "  -b, --batch-size N       prompt tokens per decode call (default 512)\n"
        "  -ub, --ubatch-size N     tokens per forward pass, at most -b; the buffers are sized for it (default 512)\n"
        "  -ngl, --n-gpu-layers N   layers to put on the GPU; -1 = all and the output layer, auto = as\n"
        "                           many as fit beside the context -c (default 0; without a usable GPU\n"
        "                           the model runs on the CPU and says why)\n"
        "  --device LIST            devices for those layers: cuda0, opencl0,opencl1 ... (hearth info lists\n"
        "                           them; default: CUDA devices, else OpenCL GPUs; env HEARTH_DEVICE)\n" CLI_LOAD_HELP
        "  -fa, --flash-attn MODE   attention on the CPU: on (tiled, fast on long contexts), off\n"
        "                           (llama.cpp's exact order without flash attention), auto = on (default "
        "auto)\n" CLI_CACHE_TYPE_HELP CLI_ROPE_HELP "other:\n"
        "  -v, --verbose            log loading details to stderr (or set HEARTH_LOG=debug|info|warn|error)\n"
        "  -h, --help               this help\n",
        chat ? ""
             : "structured output (one of):\n"
               "      --grammar GBNF       only text this GBNF grammar (llama.cpp's notation, rule root) accepts\n"
               "      --grammar-file FILE  the grammar in FILE\n"
               "  -j, --json-schema JSON   only JSON that this JSON Schema accepts (the subset in README)\n"
               "      --json               only a JSON object\n",
        hearth_cpu_physical_cores());
}

int cli_parse_run_args(int argc, char **argv, run_opts *o, bool chat) {
    const char *cmd = chat ? "chat" : "run";
    *o = (run_opts){.n_predict = chat ? -1 : 128,
                    .sampling = hearth_sampler_default_params(),
                    .ctx = hearth_context_default_params(),
                    .parse_special = true};
    cli_load_init(&o->load);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        long l;
        double d;
#define IS(short_, long_) (!strcmp(a, short_) || !strcmp(a, long_))
#define NEED_VALUE()                                                                                                   \
    do {                                                                                                               \
        if (!val) {                                                                                                    \
            fprintf(stderr, "hearth: %s needs a value; see hearth %s --help\n", a, cmd);                               \
            return 2;                                                                                                  \
        }                                                                                                              \
        i++;                                                                                                           \
    } while (0)
        int shared = cli_parse_ctx_opt(argc, argv, &i, cmd, &o->ctx, &o->n_gpu_layers);
        if (!shared) shared = cli_parse_load_opt(argc, argv, &i, cmd, &o->load);
        if (shared) {
            if (shared < 0) return 2;
        } else if (IS("-h", "--help")) {
            run_usage(stdout, chat);
            return -1;
        } else if (IS("--chat", "--chat") && !chat) {
            NEED_VALUE();
            o->chat = val;
        } else if (IS("--system", "--system")) {
            NEED_VALUE();
            o->system = val;
        } else if (IS("--chat-template", "--chat-template")) {
            NEED_VALUE();
            o->chat_template = val;
        } else if (!chat && IS("-p", "--prompt")) {
            NEED_VALUE();
            o->prompt = val;
        } else if (!chat && IS("-f", "--file")) {
            NEED_VALUE();
            o->prompt_file = val;
        } else if (IS("-n", "--n-predict")) {
            NEED_VALUE();
            if (!cli_parse_int(a, val, -1, 1L << 30, &o->n_predict)) return 2;
        } else if (!chat && IS("--context-shift", "--context-shift")) {
            o->context_shift = true;
        } else if (!chat && IS("--keep", "--keep")) {
            NEED_VALUE();
            if (!cli_parse_int(a, val, -1, 1L << 30, &o->n_keep)) return 2;
        } else if (IS("--temp", "--temperature")) {
            NEED_VALUE();
            if (!cli_parse_float(a, val, 0.0, 100.0, &d)) return 2;
            o->sampling.temp = (float)d;
        } else if (IS("--top-k", "--top-k")) {
            NEED_VALUE();
            if (!cli_parse_int(a, val, 0, 1L << 30, &l)) return 2;
            o->sampling.top_k = (int32_t)l;
        } else if (IS("--top-p", "--top-p")) {
            NEED_VALUE();
            if (!cli_parse_float(a, val, 1e-6, 1.0, &d)) return 2;
            o->sampling.top_p = (float)d;
        } else if (IS("--min-p", "--min-p")) {
            NEED_VALUE();
            if (!cli_parse_float(a, val, 0.0, 1.0, &d)) return 2;
            o->sampling.min_p = (float)d;
        } else if (IS("--repeat-penalty", "--repeat-penalty")) {
            NEED_VALUE();
            if (!cli_parse_float(a, val, 1e-3, 100.0, &d)) return 2;
            o->sampling.repeat_penalty = (float)d;
        } else if (IS("--seed", "--seed")) {
            NEED_VALUE();
            if (!cli_parse_u64(a, val, &o->sampling.seed)) return 2;
            o->seed_set = true;
        } else if (!chat && IS("--grammar", "--grammar")) {
            NEED_VALUE();
            o->sampling.grammar = val;
        } else if (!chat && IS("--grammar-file", "--grammar-file")) {
            NEED_VALUE();
            o->grammar_file = val;
        } else if (!chat && IS("-j", "--json-schema")) {
            NEED_VALUE();
            o->sampling.json_schema = val;
        } else if (!chat && IS("--json", "--json")) {
            o->sampling.json_schema = "{\"type\": \"object\"}";
        } else if (IS("--no-parse-special", "--no-parse-special")) {
            o->parse_special = false;
        } else if (IS("-v", "--verbose")) {
            o->verbose = true;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "hearth: unknown option '%s'; see hearth %s --help\n", a, cmd);
            return 2;
        } else if (!o->model) {
            o->model = a;
        } else if (!o->prompt && !chat) {
            o->prompt = a;
        } else {
            fprintf(stderr, "hearth: unexpected argument '%s'%s; see hearth %s --help\n", a,
                    chat ? "" : " (quote the prompt)", cmd);
            return 2;
        }
#undef IS
#undef NEED_VALUE
    }
    if (!o->model) {
        fprintf(stderr, "hearth: %s needs a MODEL file; see hearth %s --help\n", cmd, cmd);
        return 2;
    }
    if ((o->prompt != NULL) + (o->prompt_file != NULL) + (o->chat != NULL) > 1) {
        fprintf(stderr, "hearth: give the prompt as text, with -f or with --chat, only one of them\n");
        return 2;
    }
    if ((o->sampling.grammar != NULL) + (o->grammar_file != NULL) + (o->sampling.json_schema != NULL) > 1) {
        fprintf(stderr, "hearth: give one of --grammar, --grammar-file, --json-schema and --json\n");
        return 2;
    }
    if (!chat && !o->chat && (o->system || o->chat_template)) {
        fprintf(stderr, "hearth: --system and --chat-template go with --chat MESSAGE (or hearth chat)\n");
        return 2;
    }
    if (!o->seed_set) o->sampling.seed = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
    return 0;
}

typedef struct run_state {
    hearth_model *model;
    hearth_context *ctx;
    hearth_sampler *smpl;
    hearth_detok *detok;
    int32_t *tokens;
    char *prompt_copy;
    char *grammar_copy; /* --grammar-file's text */
    char *chat_prompt;
    chat_template tmpl;
} run_state;

static void run_state_free(run_state *s) {
    hearth_detok_free(s->detok);
    hearth_sampler_free(s->smpl);
    hearth_context_free(s->ctx);
    hearth_model_free(s->model);
    free(s->tokens);
    free(s->prompt_copy);
    free(s->grammar_copy);
    hearth_chat_free(s->chat_prompt);
    chat_template_free(&s->tmpl);
}

static int tokenize_prompt(run_state *s, const run_opts *o, const char *text, size_t len, size_t *n_prompt) {
    size_t n_max = len + 8;
    s->tokens = malloc(n_max * sizeof *s->tokens);
    if (!s->tokens) return cli_fail("tokenize");
    if (hearth_tokenize(s->model, text, len, true, o->parse_special, s->tokens, n_max, n_prompt) != HEARTH_OK)
        return cli_fail("tokenize");
    if (*n_prompt == 0) {
        int32_t bos = hearth_token_bos(s->model);
        if (bos < 0) {
            fprintf(stderr, "hearth: the prompt is empty; give one as an argument, with -p or with -f\n");
            return 2;
        }
        s->tokens[(*n_prompt)++] = bos;
    }
    uint32_t n_ctx = hearth_context_n_ctx(s->ctx);
    if (*n_prompt >= n_ctx) {
        fprintf(
            stderr,
            "hearth: the prompt is %zu tokens but the context holds %u: raise -c/--ctx-size or shorten the prompt\n",
            *n_prompt, n_ctx);
        return 1;
    }
    return 0;
}

static int generate(run_state *s, const run_opts *o, size_t n_prompt, long *n_gen, double *t_prompt, double *t_gen) {
    double t0 = cli_now();
    if (hearth_decode(s->ctx, s->tokens, (uint32_t)n_prompt) != HEARTH_OK) return cli_fail("prompt");
    for (size_t i = 0; i < n_prompt; i++) hearth_sampler_accept(s->smpl, s->tokens[i]);
    double t1 = cli_now();
    *t_prompt = t1 - t0;
    uint32_t room = hearth_context_n_ctx(s->ctx) - (uint32_t)n_prompt;
    long limit = o->n_predict < 0 || o->n_predict > (long)room ? (long)room : o->n_predict;
    if (o->context_shift) limit = o->n_predict < 0 ? LONG_MAX : o->n_predict;
    /* llama-cli's n_keep: the whole prompt for -1 (or more than it), else N
     * after the BOS, which always stays */
    const size_t bos = s->tokens[0] == hearth_token_bos(s->model);
    const size_t n_keep = o->n_keep < 0 || (size_t)o->n_keep + bos > n_prompt ? n_prompt : (size_t)o->n_keep + bos;
    const cli_gen g = {.ctx = s->ctx,
                       .model = s->model,
                       .smpl = s->smpl,
                       .detok = s->detok,
                       .context_shift = o->context_shift,
                       .n_keep = (uint32_t)n_keep};
    int rc = cli_generate(&g, limit, n_gen);
    *t_gen = cli_now() - t1;
    if (!rc && !o->context_shift && limit == (long)room && *n_gen == limit && o->n_predict != limit)
        fprintf(stderr,
                "\nhearth: the context is full (%u tokens): stopped; raise -c/--ctx-size or add --context-shift\n",
                hearth_context_n_ctx(s->ctx));
    return rc;
}

/* The prompt of --chat: the template over [system,] user. */
static int chat_prompt(const run_opts *o, run_state *s, const char **prompt, size_t *len) {
    int rc = chat_template_load(s->model, o->chat_template, &s->tmpl);
    if (rc) return rc;
    hearth_chat_message msgs[2] = {{"system", o->system ? o->system : ""}, {"user", o->chat}};
    rc = chat_render(&s->tmpl, o->system ? msgs : msgs + 1, o->system ? 2 : 1, &s->chat_prompt);
    if (rc) return rc;
    *prompt = s->chat_prompt;
    *len = strlen(*prompt);
    return 0;
}

static int run(const run_opts *o, run_state *s) {
    size_t prompt_len = o->prompt ? strlen(o->prompt) : 0;
    const char *prompt = o->prompt ? o->prompt : "";
    if (o->prompt_file) {
        s->prompt_copy = cli_read_file(o->prompt_file, "prompt file", &prompt_len);
        if (!s->prompt_copy) return 1;
        prompt = s->prompt_copy;
    }
    hearth_model_params mp = hearth_model_default_params();
    mp.n_gpu_layers = (int32_t)o->n_gpu_layers;
    cli_fit_context(&o->ctx, &mp);
    cli_load_apply(&o->load, &mp);
    double t0 = cli_now();
    if (cli_model_load(o->model, &mp, &s->model)) return 1;
    double t_load = cli_now() - t0;
    if (o->chat) {
        int rc = chat_prompt(o, s, &prompt, &prompt_len);
        if (rc) return rc;
    }
    if (hearth_context_init(s->model, &o->ctx, &s->ctx) != HEARTH_OK) return cli_fail("context");
    hearth_sampler_params sp = o->sampling;
    if (o->grammar_file) {
        size_t len;
        if (!(s->grammar_copy = cli_read_file(o->grammar_file, "grammar file", &len))) return 1;
        sp.grammar = s->grammar_copy;
    }
    if (hearth_sampler_init(s->model, &sp, &s->smpl) != HEARTH_OK) return cli_fail("sampler");
    if (hearth_detok_init(s->model, false, &s->detok) != HEARTH_OK) return cli_fail("detokenizer");
    size_t n_prompt = 0;
    int rc = tokenize_prompt(s, o, prompt, prompt_len, &n_prompt);
    if (rc) return rc;
    long n_gen = 0;
    double t_prompt = 0, t_gen = 0;
    rc = generate(s, o, n_prompt, &n_gen, &t_prompt, &t_gen);
    if (rc) return rc;
    fprintf(stderr, "\nhearth: %s | load %.0f ms | prompt %zu tokens, %.1f tok/s | generated %ld tokens, %.1f tok/s\n",
            hearth_model_desc(s->model), t_load * 1e3, n_prompt, n_prompt / (t_prompt > 0 ? t_prompt : 1e-9), n_gen,
            n_gen > 0 ? n_gen / t_gen : 0.0);
    return 0;
}

int cmd_run(int argc, char **argv) {
    run_opts o;
    int rc = cli_parse_run_args(argc, argv, &o, false);
    if (rc) return rc < 0 ? 0 : rc;
    cli_log_init(o.verbose);
    run_state s = {0};
    rc = run(&o, &s);
    run_state_free(&s);
    return rc;
}
