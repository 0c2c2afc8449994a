/* Sampling: greedy, temperature draws that follow the softmax, top-k, top-p,
 * min-p, the repetition, presence and frequency penalties, logit bias,
 * grammars (every draw inside the language, end of generation only where it
 * is complete, lazy triggers, no way forward), seeds, and parameter
 * validation. Uses the default model's vocabulary (loaded with vocab_only). */
#include <math.h>
#include <string.h>

#include "check.h"
#include "hearth.h"

static float *logits;
static int32_t n_vocab;

/* Logits with probabilities proportional to p[i] for ids 0..n-1 (others ~0). */
static void set_probs(const double *p, int n) {
    for (int32_t i = 0; i < n_vocab; i++) logits[i] = -1e4f;
    for (int i = 0; i < n; i++) logits[i] = (float)log(p[i]);
}

static hearth_sampler *make(const hearth_model *m, float temp, int32_t top_k, float top_p, float min_p, uint64_t seed) {
    hearth_sampler_params sp = hearth_sampler_default_params();
    sp.temp = temp;
    sp.top_k = top_k;
    sp.top_p = top_p;
    sp.min_p = min_p;
    sp.seed = seed;
    hearth_sampler *s = NULL;
    CHECK(hearth_sampler_init(m, &sp, &s) == HEARTH_OK);
    return s;
}

static void draw_counts(hearth_sampler *s, int n_draws, int *counts, int n_counts) {
    memset(counts, 0, sizeof(int) * (size_t)n_counts);
    for (int i = 0; i < n_draws; i++) {
        int32_t t = hearth_sampler_sample(s, logits);
        CHECK(t >= 0 && t < n_vocab);
        if (t < n_counts) counts[t]++;
    }
}

static void test_greedy_and_penalty(const hearth_model *m) {
    const double p[] = {0.2, 0.5, 0.3};
    set_probs(p, 3);
    hearth_sampler *s = make(m, 0.0f, 40, 0.95f, 0.05f, 1);
    CHECK(hearth_sampler_sample(s, logits) == 1);
    hearth_sampler_free(s);

    hearth_sampler_params sp = hearth_sampler_default_params();
    sp.temp = 0.0f;
    sp.repeat_penalty = 2.0f;
    CHECK(hearth_sampler_init(m, &sp, &s) == HEARTH_OK);
    for (int32_t i = 0; i < n_vocab; i++) logits[i] = -5.0f;
    logits[7] = 3.0f;
    logits[9] = 2.0f;
    hearth_sampler_accept(s, 7);
    hearth_sampler_accept(s, 7); /* counted once: 3 / 2 = 1.5 < 2 */
    CHECK(hearth_sampler_sample(s, logits) == 9);
    CHECK(logits[7] == 3.0f); /* the caller's logits are not modified */
    hearth_sampler_free(s);
}

static void test_presence_frequency(const hearth_model *m) {
    hearth_sampler_params sp = hearth_sampler_default_params();
    sp.temp = 0.0f;
    sp.presence_penalty = 1.0f;
    sp.frequency_penalty = 0.5f;
    hearth_sampler *s;
    CHECK(hearth_sampler_init(m, &sp, &s) == HEARTH_OK);
    for (int32_t i = 0; i < n_vocab; i++) logits[i] = -5.0f;
    logits[7] = 3.0f;
    logits[9] = 2.0f;
    logits[11] = 1.2f;
    hearth_sampler_accept(s, 7); /* 3 - 1 - 0.5 = 1.5 < 2 */
    CHECK(hearth_sampler_sample(s, logits) == 9);
    hearth_sampler_reset(s);
    hearth_sampler_accept(s, 9);
    hearth_sampler_accept(s, 7);
    hearth_sampler_accept(s, 7); /* 7: 3 - 1 - 1 = 1; 9: 2 - 1.5 = 0.5; 11: 1.2 */
    CHECK(hearth_sampler_sample(s, logits) == 11);
    hearth_sampler_free(s);
}

static void test_logit_bias(const hearth_model *m) {
    hearth_sampler_params sp = hearth_sampler_default_params();
    sp.temp = 0.0f;
    const hearth_logit_bias bias[] = {{7, -100.0f}, {11, 4.5f}};
    sp.logit_bias = bias;
    sp.n_logit_bias = 2;
    hearth_sampler *s;
    CHECK(hearth_sampler_init(m, &sp, &s) == HEARTH_OK);
    for (int32_t i = 0; i < n_vocab; i++) logits[i] = -5.0f;
    logits[7] = 30.0f;
    logits[9] = 2.0f;
    logits[11] = -2.0f; /* -2 + 4.5 = 2.5 > 2 */
    CHECK(hearth_sampler_sample(s, logits) == 11);
    hearth_sampler_free(s);
    const hearth_logit_bias bad[] = {{n_vocab, 1.0f}}, nan_bias[] = {{3, NAN}};
    sp.logit_bias = bad;
    sp.n_logit_bias = 1;
    CHECK(hearth_sampler_init(m, &sp, &s) == HEARTH_ERR_INVALID_ARG && s == NULL);
    CHECK(strstr(hearth_last_error(), "outside the vocabulary") != NULL);
    sp.logit_bias = nan_bias;
    CHECK(hearth_sampler_init(m, &sp, &s) == HEARTH_ERR_INVALID_ARG);
}

/* Samples until an end-of-generation token (at most 64 tokens) from logits
 * that favour random tokens; the text goes to buf. Returns the last token. */
static int32_t sample_text(const hearth_model *m, hearth_sampler *s, uint32_t seed, char *buf, size_t size) {
    size_t at = 0;
    int32_t t = -1;
    for (int step = 0; step < 64; step++) {
        for (int32_t i = 0; i < n_vocab; i++)
            logits[i] = (float)((seed * 2654435761u + (uint32_t)i * 40503u) % 997) / 100.0f;
        seed = seed * 1103515245u + 12345u;
        t = hearth_sampler_sample(s, logits);
        if (t == HEARTH_TOKEN_NONE || hearth_token_is_eog(m, t)) break;
        size_t len = 0;
        CHECK(hearth_token_to_piece(m, t, true, buf + at, size - at - 1, &len) == HEARTH_OK);
        at += len;
    }
    buf[at] = '\0';
    return t;
}

static void test_grammar(const hearth_model *m) {
    hearth_sampler_params sp = hearth_sampler_default_params();
    sp.temp = 1.0f;
    sp.grammar = "root ::= (\"yes\" | \"no\") \"!\"{1,3}";
    hearth_sampler *s;
    CHECK(hearth_sampler_init(m, &sp, &s) == HEARTH_OK);
    char text[4096];
    for (uint32_t trial = 0; trial < 20; trial++) {
        hearth_sampler_reset(s);
        const int32_t last = sample_text(m, s, trial, text, sizeof text);
        CHECK_MSG(hearth_token_is_eog(m, last), "trial %u ended with token %d", trial, (int)last);
        const size_t n = strlen(text), bangs = n - (text[0] == 'y' ? 3 : 2);
        CHECK_MSG((!strncmp(text, "yes", 3) || !strncmp(text, "no", 2)) && bangs >= 1 && bangs <= 3 &&
                      strspn(text + n - bangs, "!") == bangs,
                  "trial %u: '%s'", trial, text);
    }
    hearth_sampler_free(s);

    /* a JSON schema, greedy */
    sp = hearth_sampler_default_params();
    sp.temp = 0.0f;
    sp.json_schema = "{\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\", \"minimum\": 1, "
                     "\"maximum\": 9}}, \"required\": [\"n\"], \"additionalProperties\": false}";
    CHECK(hearth_sampler_init(m, &sp, &s) == HEARTH_OK);
    CHECK(hearth_token_is_eog(m, sample_text(m, s, 5, text, sizeof text)));
    size_t end = strlen(text);
    while (end && strchr(" \t\n", text[end - 1])) end--; /* the grammar's bounded trailing whitespace */
    CHECK_MSG(end >= 7 && text[0] == '{' && strstr(text, "\"n\"") && text[end - 1] == '}', "'%s'", text);
    hearth_sampler_free(s);

    /* lazy: free text until the trigger, then the grammar */
    sp = hearth_sampler_default_params();
    sp.temp = 1.0f;
    sp.top_k = 0;
    sp.grammar = "root ::= \"<call>\" [0-9] \"</call>\"";
    const char *triggers[] = {"<call>"};
    sp.grammar_triggers = triggers;
    sp.n_grammar_triggers = 1;
    CHECK(hearth_sampler_init(m, &sp, &s) == HEARTH_OK);
    for (int32_t i = 0; i < n_vocab; i++) logits[i] = -10.0f;
    int32_t tok[16];
    size_t n_tok = 0;
    CHECK(hearth_tokenize(m, "Hi <call>", 9, false, false, tok, 16, &n_tok) == HEARTH_OK);
    for (size_t i = 0; i < n_tok; i++) { /* the text up to the trigger, token by token */
        logits[tok[i]] = 10.0f;
        CHECK(hearth_sampler_sample(s, logits) == tok[i]);
        logits[tok[i]] = -10.0f;
    }
    CHECK(hearth_token_is_eog(m, sample_text(m, s, 9, text, sizeof text)));
    CHECK_MSG(strlen(text) == 8 && text[0] >= '0' && text[0] <= '9' && !strcmp(text + 1, "</call>"), "'%s'", text);
    hearth_sampler_free(s);

    /* no way forward: the one character the grammar wants is banned */
    sp = hearth_sampler_default_params();
    sp.grammar = "root ::= \"~\"";
    CHECK(hearth_tokenize(m, "~", 1, false, false, tok, 16, &n_tok) == HEARTH_OK && n_tok == 1);
    hearth_logit_bias ban[16];
    size_t n_ban = 0;
    for (int32_t i = 0; i < n_vocab && n_ban < 16; i++) {
        char piece[64];
        size_t len = 0;
        if (hearth_token_to_piece(m, i, true, piece, sizeof piece, &len) == HEARTH_OK && len && piece[0] == '~')
            ban[n_ban++] = (hearth_logit_bias){i, -100.0f};
    }
    sp.logit_bias = ban;
    sp.n_logit_bias = n_ban;
    CHECK(hearth_sampler_init(m, &sp, &s) == HEARTH_OK);
    for (int32_t i = 0; i < n_vocab; i++) logits[i] = 0.0f;
    CHECK(hearth_sampler_sample(s, logits) == HEARTH_TOKEN_NONE);
    hearth_sampler_free(s);

    /* refusals */
    sp = hearth_sampler_default_params();
    sp.grammar = "root ::= \"a\" |\nroot2 ::= b";
    CHECK(hearth_sampler_init(m, &sp, &s) == HEARTH_ERR_INVALID_ARG && s == NULL);
    CHECK_MSG(strstr(hearth_last_error(), "line 2") != NULL, "%s", hearth_last_error());
    sp.grammar = "root ::= \"a\"";
    sp.json_schema = "{}";
    CHECK(hearth_sampler_init(m, &sp, &s) == HEARTH_ERR_INVALID_ARG);
    sp.grammar = NULL;
    sp.json_schema = "{\"type\": \"string\", \"not\": {}}";
    CHECK(hearth_sampler_init(m, &sp, &s) == HEARTH_ERR_INVALID_ARG);
    CHECK(strstr(hearth_last_error(), "'not'") != NULL);
    sp.json_schema = NULL;
    sp.grammar = "root ::= \"<call>\"";
    const char *wrong[] = {"<other>"};
    sp.grammar_triggers = wrong;
    sp.n_grammar_triggers = 1;
    CHECK(hearth_sampler_init(m, &sp, &s) == HEARTH_ERR_INVALID_ARG);
}

static void test_distribution(const hearth_model *m) {
    const double p[] = {0.5, 0.3, 0.2};
    set_probs(p, 3);
    int counts[3];
    const int n = 20000; /* proportion sd <= 0.0036: the 0.015 bound is > 4 sd */
    hearth_sampler *s = make(m, 1.0f, 0, 1.0f, 0.0f, 42);
    draw_counts(s, n, counts, 3);
    for (int i = 0; i < 3; i++)
        CHECK_MSG(fabs(counts[i] / (double)n - p[i]) < 0.015, "token %d: %d/%d", i, counts[i], n);
    hearth_sampler_free(s);

    /* temperature 0.5 squares the probabilities: 25:9:4 */
    s = make(m, 0.5f, 0, 1.0f, 0.0f, 43);
    draw_counts(s, n, counts, 3);
    CHECK(fabs(counts[0] / (double)n - 25.0 / 38) < 0.015);
    CHECK(fabs(counts[2] / (double)n - 4.0 / 38) < 0.015);
    hearth_sampler_free(s);
}

static void test_truncation(const hearth_model *m) {
    const double p[] = {0.5, 0.3, 0.2};
    set_probs(p, 3);
    int counts[3];
    hearth_sampler *s = make(m, 1.0f, 2, 1.0f, 0.0f, 7); /* top-k 2 */
    draw_counts(s, 3000, counts, 3);
    CHECK(counts[2] == 0 && counts[0] > 0 && counts[1] > 0);
    hearth_sampler_free(s);
    s = make(m, 1.0f, 0, 0.7f, 0.0f, 7); /* top-p 0.7: 0.5 + 0.3 */
    draw_counts(s, 3000, counts, 3);
    CHECK(counts[2] == 0 && counts[1] > 0);
    hearth_sampler_free(s);
    s = make(m, 1.0f, 0, 1.0f, 0.5f, 7); /* min-p 0.5: p >= 0.25 */
    draw_counts(s, 3000, counts, 3);
    CHECK(counts[2] == 0 && counts[1] > 0);
    hearth_sampler_free(s);
    s = make(m, 5.0f, 1, 1.0f, 0.0f, 7); /* top-k 1 is greedy at any temperature */
    draw_counts(s, 500, counts, 3);
    CHECK(counts[0] == 500);
    hearth_sampler_free(s);
}

static void test_seeds(const hearth_model *m) {
    for (int32_t i = 0; i < n_vocab; i++) logits[i] = (float)((i * 7919) % 1000) / 100.0f;
    int32_t a[64], b[64], c[64];
    hearth_sampler *s1 = make(m, 1.5f, 0, 1.0f, 0.0f, 1234), *s2 = make(m, 1.5f, 0, 1.0f, 0.0f, 1234),
                   *s3 = make(m, 1.5f, 0, 1.0f, 0.0f, 99);
    int same12 = 1, same13 = 1;
    for (int i = 0; i < 64; i++) {
        a[i] = hearth_sampler_sample(s1, logits);
        b[i] = hearth_sampler_sample(s2, logits);
        c[i] = hearth_sampler_sample(s3, logits);
        same12 &= a[i] == b[i];
        same13 &= a[i] == c[i];
    }
    CHECK(same12);
    CHECK(!same13);
    hearth_sampler_reset(s1);
    CHECK(hearth_sampler_sample(s1, logits) == a[0]);
    hearth_sampler_free(s1);
    hearth_sampler_free(s2);
    hearth_sampler_free(s3);
}

static void test_bad_params(const hearth_model *m) {
    hearth_sampler *s = NULL;
    hearth_sampler_params sp = hearth_sampler_default_params();
    sp.top_p = 0.0f;
    CHECK(hearth_sampler_init(m, &sp, &s) == HEARTH_ERR_INVALID_ARG && s == NULL);
    CHECK(strstr(hearth_last_error(), "top_p") != NULL);
    sp = hearth_sampler_default_params();
    sp.min_p = 1.5f;
    CHECK(hearth_sampler_init(m, &sp, &s) == HEARTH_ERR_INVALID_ARG);
    sp = hearth_sampler_default_params();
    sp.repeat_penalty = 0.0f;
    CHECK(hearth_sampler_init(m, &sp, &s) == HEARTH_ERR_INVALID_ARG);
    sp = hearth_sampler_default_params();
    sp.repeat_last_n = -1;
    CHECK(hearth_sampler_init(m, &sp, &s) == HEARTH_ERR_INVALID_ARG);
    sp = hearth_sampler_default_params();
    sp.frequency_penalty = 2.5f;
    CHECK(hearth_sampler_init(m, &sp, &s) == HEARTH_ERR_INVALID_ARG &&
          strstr(hearth_last_error(), "frequency_penalty"));
}

int main(void) {
    hearth_model_params mp = hearth_model_default_params();
    mp.vocab_only = true;
    hearth_model *m;
    CHECK(hearth_model_load(check_model_path(), &mp, &m) == HEARTH_OK);
    n_vocab = hearth_model_n_vocab(m);
    logits = malloc(sizeof(float) * (size_t)n_vocab);
    test_greedy_and_penalty(m);
    test_presence_frequency(m);
    test_logit_bias(m);
    test_grammar(m);
    test_distribution(m);
    test_truncation(m);
    test_seeds(m);
    test_bad_params(m);
    free(logits);
    hearth_model_free(m);
    return check_report();
}
