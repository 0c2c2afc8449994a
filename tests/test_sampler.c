/* Sampling: greedy, temperature draws that follow the softmax, top-k, top-p,
 * min-p, repetition penalty, seeds, and parameter validation. Uses the default
 * model's vocabulary size (loaded with vocab_only). */
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

static void test_distribution(const hearth_model *m) {
    const double p[] = {0.5, 0.3, 0.2};
    set_probs(p, 3);
    int counts[3];
    const int n = 20000; /* proportion sd <= 0.0036: the 0.015 bound is > 4 sd */
    hearth_sampler *s = make(m, 1.0f, 0, 1.0f, 0.0f, 42);
    draw_counts(s, n, counts, 3);
    for (int i = 0; i < 3; i++) CHECK_MSG(fabs(counts[i] / (double)n - p[i]) < 0.015, "token %d: %d/%d", i, counts[i], n);
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
}

int main(void) {
    hearth_model_params mp = hearth_model_default_params();
    mp.vocab_only = true;
    hearth_model *m;
    CHECK(hearth_model_load(check_model_path(), &mp, &m) == HEARTH_OK);
    n_vocab = hearth_model_n_vocab(m);
    logits = malloc(sizeof(float) * (size_t)n_vocab);
    test_greedy_and_penalty(m);
    test_distribution(m);
    test_truncation(m);
    test_seeds(m);
    test_bad_params(m);
    free(logits);
    hearth_model_free(m);
    return check_report();
}
