/* `hearth chat MODEL`: an interactive, multi-turn chat. Each turn renders the
 * whole conversation with the chat template, tokenizes it, and decodes only
 * the tokens past the prefix already in the KV cache (the cache is cut back
 * to where the new prompt diverges, e.g. where the model's answer tokenizes
 * differently as text). Answers stream to stdout until an end-of-generation
 * token. /exit or end of input ends the chat; Ctrl-C stops an answer, and at
 * the prompt ends the chat. When the next turn would not fit in the context
 * (its prompt plus room for an answer: -n, at most a quarter of the
 * context), the oldest turns after the system message are dropped, which is
 * said once on stderr; a single message too long for the context ends the
 * chat with a one-line error. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
    (void)sig;
    interrupted = 1;
}

typedef struct chat_state {
    hearth_model *model;
    hearth_context *ctx;
    hearth_sampler *smpl;
    hearth_detok *detok;
    chat_template tmpl;
    hearth_chat_message *msgs; /* role and content strings are malloc'd */
    size_t n_msgs, cap_msgs;
    int32_t *cache; /* the tokens in the KV cache, [n_ctx] */
    uint32_t n_cache;
    int32_t *prompt; /* the rendered conversation's tokens, [n_ctx + 1] */
    bool dropped;    /* turns were dropped (said once) */
} chat_state;

static void chat_state_free(chat_state *s) {
    for (size_t i = 0; i < s->n_msgs; i++) {
        free((char *)s->msgs[i].role);
        free((char *)s->msgs[i].content);
    }
    free(s->msgs);
    free(s->cache);
    free(s->prompt);
    chat_template_free(&s->tmpl);
    hearth_detok_free(s->detok);
    hearth_sampler_free(s->smpl);
    hearth_context_free(s->ctx);
    hearth_model_free(s->model);
}

static int add_message(chat_state *s, const char *role, const char *content, size_t len) {
    if (s->n_msgs == s->cap_msgs) {
        size_t cap = s->cap_msgs ? s->cap_msgs * 2 : 8;
        hearth_chat_message *bigger = realloc(s->msgs, cap * sizeof *bigger);
        if (!bigger) goto oom;
        s->msgs = bigger;
        s->cap_msgs = cap;
    }
    char *r = strdup(role), *c = malloc(len + 1);
    if (!r || !c) {
        free(r);
        free(c);
        goto oom;
    }
    memcpy(c, content, len);
    c[len] = '\0';
    s->msgs[s->n_msgs++] = (hearth_chat_message){r, c};
    return 0;
oom:
    fprintf(stderr, "hearth: out of memory\n");
    return 1;
}

/* Brings the KV cache to the rendered conversation: keeps the common prefix,
 * decodes the rest (at least the last token, for fresh logits). */
static int sync_cache(chat_state *s, size_t n_prompt) {
    uint32_t keep = 0;
    while (keep < s->n_cache && keep < n_prompt && s->cache[keep] == s->prompt[keep]) keep++;
    if (keep == n_prompt) keep--;
    hearth_context_truncate(s->ctx, keep);
    s->n_cache = keep;
    if (hearth_decode(s->ctx, s->prompt + keep, (uint32_t)(n_prompt - keep)) != HEARTH_OK) return cli_fail("prompt");
    memcpy(s->cache + keep, s->prompt + keep, (n_prompt - keep) * sizeof *s->cache);
    s->n_cache = (uint32_t)n_prompt;
    for (size_t i = keep; i < n_prompt; i++) hearth_sampler_accept(s->smpl, s->prompt[i]);
    return 0;
}

/* The answer being generated: its text, and its tokens into the cache. */
typedef struct answer_text {
    chat_state *s;
    char *text;
    size_t len, cap;
} answer_text;

static int on_text(void *user, int32_t tok, const char *piece, size_t len) {
    answer_text *a = user;
    if (a->len + len + 1 > a->cap) {
        size_t cap = a->cap ? a->cap : 256;
        while (a->len + len + 1 > cap) cap *= 2;
        char *bigger = realloc(a->text, cap);
        if (!bigger) return cli_fail("answer");
        a->text = bigger;
        a->cap = cap;
    }
    memcpy(a->text + a->len, piece, len);
    a->len += len;
    a->text[a->len] = '\0';
    /* the last token may not have been decoded: the caller trims the cache
     * to the context's n_past */
    if (tok >= 0 && a->s->n_cache < hearth_context_n_ctx(a->s->ctx)) a->s->cache[a->s->n_cache++] = tok;
    return 0;
}

/* One answer: samples until an end-of-generation token, n_predict tokens,
 * Ctrl-C or a full context, streaming the text; the text goes into *answer
 * (malloc'd, NUL-terminated). */
static int answer(chat_state *s, const run_opts *o, char **answer, size_t *answer_len, bool *ctx_full) {
    /* room for the tokens the cache can still take, plus one sampled from the
     * logits of the last that needs no decoding */
    const long room = (long)(hearth_context_n_ctx(s->ctx) - s->n_cache) + 1;
    const long limit = o->n_predict >= 0 && o->n_predict < room ? o->n_predict : room;
    answer_text a = {.s = s};
    const cli_gen g = {.ctx = s->ctx,
                       .model = s->model,
                       .smpl = s->smpl,
                       .detok = s->detok,
                       .stop = &interrupted,
                       .on_text = on_text,
                       .user = &a};
    long n_gen;
    /* the final flush always reaches on_text, so a.text is set on success */
    int rc = cli_generate(&g, limit, &n_gen);
    s->n_cache = hearth_context_n_past(s->ctx);
    if (rc) {
        free(a.text);
        return rc;
    }
    *ctx_full = n_gen == room && n_gen != o->n_predict;
    *answer = a.text;
    *answer_len = a.len;
    return cli_emit("\n", 1);
}

/* Drops the oldest turn after the system message (a user message and the
 * answer to it); false when only the newest message is left to drop. */
static bool drop_oldest_turn(chat_state *s) {
    const size_t first = s->n_msgs && !strcmp(s->msgs[0].role, "system") ? 1 : 0;
    const size_t n = s->n_msgs - first > 2 ? 2 : 0; /* never the new user message */
    if (n == 0) return false;
    for (size_t i = first; i < first + n; i++) {
        free((char *)s->msgs[i].role);
        free((char *)s->msgs[i].content);
    }
    memmove(s->msgs + first, s->msgs + first + n, (s->n_msgs - first - n) * sizeof *s->msgs);
    s->n_msgs -= n;
    return true;
}

/* The conversation rendered and tokenized into s->prompt, dropping its
 * oldest turns while the prompt and room for an answer exceed the context. */
static int render_fitting(chat_state *s, const run_opts *o, size_t *n_prompt, hearth_status *st) {
    const uint32_t n_ctx = hearth_context_n_ctx(s->ctx);
    const size_t reserve = o->n_predict >= 0 && o->n_predict < (long)(n_ctx / 4) ? (size_t)o->n_predict : n_ctx / 4;
    for (;;) {
        char *text;
        int rc = chat_render(&s->tmpl, s->msgs, s->n_msgs, &text);
        if (rc) return rc;
        *st = hearth_tokenize(s->model, text, strlen(text), true, true, s->prompt, n_ctx + 1, n_prompt);
        hearth_chat_free(text);
        const bool fits = *st == HEARTH_OK && *n_prompt + reserve < n_ctx;
        if (fits || (*st != HEARTH_OK && *st != HEARTH_ERR_BUFFER_TOO_SMALL) || !drop_oldest_turn(s)) return 0;
        if (!s->dropped)
            fprintf(stderr, "hearth: the conversation outgrew the context (%u tokens): dropping its oldest turns\n",
                    n_ctx);
        s->dropped = true;
    }
}

/* One turn: the user's line in, the answer out. Returns 0, or the exit
 * status after printing the error that ends the chat. */
static int turn(chat_state *s, const run_opts *o, const char *line, size_t line_len) {
    uint32_t n_ctx = hearth_context_n_ctx(s->ctx);
    if (add_message(s, "user", line, line_len)) return 1;
    size_t n_prompt;
    hearth_status st;
    int rc = render_fitting(s, o, &n_prompt, &st);
    if (rc) return rc;
    if (st == HEARTH_ERR_BUFFER_TOO_SMALL || (st == HEARTH_OK && n_prompt + 1 >= n_ctx)) {
        fprintf(stderr,
                "hearth: the conversation is %zu tokens but the context holds %u: start a new chat or raise "
                "-c/--ctx-size\n",
                n_prompt, n_ctx);
        return 1;
    }
    if (st != HEARTH_OK) return cli_fail("tokenize");
    if (n_prompt == 0) {
        fprintf(stderr, "hearth: the chat template rendered an empty prompt\n");
        return 1;
    }
    rc = sync_cache(s, n_prompt);
    if (rc) return rc;
    char *reply = NULL;
    size_t reply_len = 0;
    bool ctx_full = false;
    rc = answer(s, o, &reply, &reply_len, &ctx_full);
    if (rc) {
        free(reply);
        return rc;
    }
    rc = add_message(s, "assistant", reply, reply_len);
    free(reply);
    if (rc) return rc;
    if (ctx_full) /* the next turn drops the oldest ones */
        fprintf(stderr, "hearth: the answer filled the context (%u tokens) and was cut\n", n_ctx);
    return 0;
}

static int chat(const run_opts *o, chat_state *s) {
    hearth_model_params mp = hearth_model_default_params();
    mp.n_gpu_layers = (int32_t)o->n_gpu_layers;
    cli_fit_context(&o->ctx, &mp);
    cli_load_apply(&o->load, &mp);
    if (cli_model_load(o->model, &mp, &s->model)) return 1;
    int rc = chat_template_load(s->model, o->chat_template, &s->tmpl);
    if (rc) return rc;
    if (hearth_context_init(s->model, &o->ctx, &s->ctx) != HEARTH_OK) return cli_fail("context");
    if (hearth_sampler_init(s->model, &o->sampling, &s->smpl) != HEARTH_OK) return cli_fail("sampler");
    if (hearth_detok_init(s->model, false, &s->detok) != HEARTH_OK) return cli_fail("detokenizer");
    uint32_t n_ctx = hearth_context_n_ctx(s->ctx);
    s->cache = malloc(n_ctx * sizeof *s->cache);
    s->prompt = malloc((n_ctx + 1) * sizeof *s->prompt);
    if (!s->cache || !s->prompt) return cli_fail("chat");
    if (o->system && add_message(s, "system", o->system, strlen(o->system))) return 1;
    /* SIGINT without SA_RESTART: it interrupts a read at the prompt */
    struct sigaction sa = {0};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    bool tty = isatty(STDIN_FILENO);
    char *line = NULL;
    size_t line_cap = 0;
    rc = 0;
    for (;;) {
        if (tty) {
            fputs("> ", stdout);
            fflush(stdout);
        }
        interrupted = 0;
        errno = 0;
        ssize_t n = getline(&line, &line_cap, stdin);
        if (n < 0) { /* end of input, or Ctrl-C at the prompt */
            if (tty) fputc('\n', stdout);
            break;
        }
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
        line[n] = '\0';
        if (!strcmp(line, "/exit")) break;
        if (n == 0) continue;
        rc = turn(s, o, line, (size_t)n);
        if (rc) break;
    }
    free(line);
    return rc;
}

int cmd_chat(int argc, char **argv) {
    run_opts o;
    int rc = cli_parse_run_args(argc, argv, &o, true);
    if (rc) return rc < 0 ? 0 : rc;
    cli_log_init(o.verbose);
    chat_state s = {0};
    rc = chat(&o, &s);
    chat_state_free(&s);
    return rc;
}
