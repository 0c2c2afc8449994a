/* Multi-sequence batches on the default model: sequences decoded together
 * in one batch against each decoded alone (the same greedy tokens, logits
 * within rounding), prefix copies between sequences, removing a sequence's
 * end, and the batch's argument errors (nothing changes on error). */
#include <math.h>
#include <string.h>

#include "check.h"
#include "hearth.h"

#define N_GEN 24
#define N_CTX_SEQ 128

static const char *PROMPTS[3] = {
    "The quick brown fox jumps over the lazy dog. Then it",
    "Once upon a time, in a land far away, there lived a",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
};

static hearth_context *new_ctx(hearth_model *m, uint32_t n_seq) {
    hearth_context_params cp = hearth_context_default_params();
    cp.n_ctx = N_CTX_SEQ * n_seq;
    cp.n_seq_max = n_seq;
    cp.n_threads = 2;
    hearth_context *ctx = NULL;
    CHECK(hearth_context_init(m, &cp, &ctx) == HEARTH_OK);
    return ctx;
}

static size_t tokenize(hearth_model *m, const char *text, int32_t *toks) {
    size_t n = 0;
    CHECK(hearth_tokenize(m, text, strlen(text), true, true, toks, 64, &n) == HEARTH_OK);
    return n;
}

static int32_t argmax(const float *x, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

static float max_diff(const float *a, const float *b, int32_t n) {
    float d = 0.0f;
    for (int32_t i = 0; i < n; i++) d = fmaxf(d, fabsf(a[i] - b[i]));
    return d;
}

/* Greedy tokens of one prompt decoded alone with hearth_decode. */
static void greedy_alone(hearth_model *m, const char *prompt, int32_t *out) {
    hearth_context *ctx = new_ctx(m, 1);
    int32_t toks[64];
    const size_t n = tokenize(m, prompt, toks);
    CHECK(hearth_decode(ctx, toks, (uint32_t)n) == HEARTH_OK);
    for (int i = 0; i < N_GEN; i++) {
        out[i] = argmax(hearth_get_logits(ctx), hearth_model_n_vocab(m));
        CHECK(hearth_decode(ctx, &out[i], 1) == HEARTH_OK);
    }
    hearth_context_free(ctx);
}

/* The three prompts in sequences 0..2: their prompts in one batch (each
 * sequence's last token asks for logits), then one token of each per batch.
 * Greedy tokens equal each prompt decoded alone. */
static void test_together(hearth_model *m) {
    const int32_t nv = hearth_model_n_vocab(m);
    int32_t alone[3][N_GEN], together[3][N_GEN];
    for (int s = 0; s < 3; s++) greedy_alone(m, PROMPTS[s], alone[s]);

    hearth_context *ctx = new_ctx(m, 3);
    int32_t tok[192], seq[192];
    int8_t want[192];
    int32_t n = 0, last[3];
    for (int s = 0; s < 3; s++) {
        const size_t k = tokenize(m, PROMPTS[s], tok + n);
        for (size_t i = 0; i < k; i++, n++) {
            seq[n] = s;
            want[n] = i == k - 1;
        }
        last[s] = n - 1;
    }
    hearth_batch b = {.n_tokens = n, .token = tok, .seq_id = seq, .logits = want};
    CHECK(hearth_decode_batch(ctx, &b) == HEARTH_OK);
    CHECK(hearth_get_logits_ith(ctx, 0) == NULL && hearth_get_logits_ith(ctx, n) == NULL);
    for (int i = 0; i < N_GEN; i++) {
        int32_t next[3], seqs[3] = {0, 1, 2};
        for (int s = 0; s < 3; s++) together[s][i] = next[s] = argmax(hearth_get_logits_ith(ctx, last[s]), nv);
        b = (hearth_batch){.n_tokens = 3, .token = next, .seq_id = seqs, .logits = (const int8_t[]){1, 1, 1}};
        CHECK(hearth_decode_batch(ctx, &b) == HEARTH_OK);
        for (int s = 0; s < 3; s++) last[s] = s;
    }
    for (int s = 0; s < 3; s++) {
        CHECK_MSG(!memcmp(alone[s], together[s], sizeof alone[s]), "sequence %d: batched greedy tokens differ", s);
        CHECK(hearth_kv_seq_len(ctx, s) > N_GEN);
    }
    /* the last logits of sequence 2 in the batch vs alone, at the same tokens */
    hearth_context *one = new_ctx(m, 1);
    int32_t toks[64 + N_GEN];
    const size_t k = tokenize(m, PROMPTS[2], toks);
    memcpy(toks + k, alone[2], sizeof alone[2]);
    CHECK(hearth_decode(one, toks, (uint32_t)(k + N_GEN)) == HEARTH_OK);
    const float d = max_diff(hearth_get_logits(one), hearth_get_logits_ith(ctx, 2), nv);
    CHECK_MSG(d < 1.5f, "sequence 2 batched vs alone: logits differ by %g", d);
    CHECK(hearth_get_logits(ctx) == hearth_get_logits_ith(ctx, 2));
    hearth_context_free(one);
    hearth_context_free(ctx);
}

/* A prompt decoded once in sequence 0, copied to 1 and 2 (n > 1 choices of
 * one prompt), then a shorter prefix copied and continued: each continues as
 * if it had decoded the tokens itself. */
static void test_copy_and_remove(hearth_model *m) {
    const int32_t nv = hearth_model_n_vocab(m);
    hearth_context *ctx = new_ctx(m, 3);
    int32_t toks[64];
    const size_t n = tokenize(m, PROMPTS[0], toks);
    CHECK(hearth_decode(ctx, toks, (uint32_t)n) == HEARTH_OK);
    const int32_t first = argmax(hearth_get_logits(ctx), nv);
    CHECK(hearth_kv_seq_cp(ctx, 0, 1, -1) == HEARTH_OK && hearth_kv_seq_len(ctx, 1) == n);
    CHECK(hearth_kv_seq_cp(ctx, 0, 2, 5) == HEARTH_OK && hearth_kv_seq_len(ctx, 2) == 5);
    /* sequence 1 takes the greedy token; sequence 2 re-decodes the prompt's
     * rest; sequence 0 is cut back to 5 tokens and also re-decodes it */
    CHECK(hearth_kv_seq_rm(ctx, 0, 5, -1) == HEARTH_OK && hearth_kv_seq_len(ctx, 0) == 5);
    int32_t tok[128], seq[128];
    int8_t want[128];
    int32_t k = 0;
    tok[k] = first, seq[k] = 1, want[k++] = 1;
    for (int s = 2; s >= 0; s -= 2)
        for (size_t i = 5; i < n; i++) tok[k] = toks[i], seq[k] = s, want[k++] = i == n - 1;
    hearth_batch b = {.n_tokens = k, .token = tok, .seq_id = seq, .logits = want};
    CHECK(hearth_decode_batch(ctx, &b) == HEARTH_OK);
    CHECK(argmax(hearth_get_logits_ith(ctx, k - 1), nv) == first);            /* sequence 0 */
    CHECK(argmax(hearth_get_logits_ith(ctx, (int32_t)(n - 5)), nv) == first); /* sequence 2 */
    /* sequence 1: one step past the prompt, as decoding it alone gives */
    hearth_context *one = new_ctx(m, 1);
    toks[n] = first;
    CHECK(hearth_decode(one, toks, (uint32_t)n + 1) == HEARTH_OK);
    const float d = max_diff(hearth_get_logits(one), hearth_get_logits_ith(ctx, 0), nv);
    CHECK_MSG(d < 1.5f && argmax(hearth_get_logits(one), nv) == argmax(hearth_get_logits_ith(ctx, 0), nv),
              "copied prefix vs decoded: logits differ by %g", d);
    hearth_context_free(one);
    /* removing the middle of a sequence is refused; everything is kept */
    CHECK(hearth_kv_seq_rm(ctx, 1, 2, 4) == HEARTH_ERR_UNSUPPORTED && hearth_kv_seq_len(ctx, 1) == n + 1);
    CHECK(hearth_kv_seq_rm(ctx, -1, 0, -1) == HEARTH_OK);
    for (int s = 0; s < 3; s++) CHECK(hearth_kv_seq_len(ctx, s) == 0);
    hearth_context_free(ctx);
}

static void test_errors(hearth_model *m) {
    hearth_context *ctx = new_ctx(m, 2);
    int32_t tok[4] = {1, 2, 3, 4}, seq[4] = {0, 0, 1, 1}, pos[4] = {0, 1, 0, 1};
    CHECK(hearth_context_n_seq_max(ctx) == 2 && hearth_context_n_ctx_seq(ctx) == N_CTX_SEQ);
    hearth_batch b = {.n_tokens = 4, .token = tok, .pos = pos, .seq_id = seq};
    CHECK(hearth_decode_batch(ctx, &b) == HEARTH_OK);
    CHECK(hearth_kv_seq_len(ctx, 0) == 2 && hearth_kv_seq_len(ctx, 1) == 2);
    CHECK(hearth_get_logits_ith(ctx, 3) != NULL && hearth_get_logits_ith(ctx, 2) == NULL);
    /* a gap, a repeat, a sequence out of range, too many outputs, too many tokens */
    pos[0] = 3;
    CHECK(hearth_decode_batch(ctx, &b) == HEARTH_ERR_INVALID_ARG && strstr(hearth_last_error(), "position"));
    pos[0] = 2, pos[1] = 2;
    CHECK(hearth_decode_batch(ctx, &b) == HEARTH_ERR_INVALID_ARG);
    pos[1] = 3, seq[3] = 2;
    CHECK(hearth_decode_batch(ctx, &b) == HEARTH_ERR_INVALID_ARG && strstr(hearth_last_error(), "n_seq_max"));
    seq[3] = 1;
    b.logits = (const int8_t[]){1, 1, 1, 0};
    CHECK(hearth_decode_batch(ctx, &b) == HEARTH_ERR_INVALID_ARG && strstr(hearth_last_error(), "logits"));
    CHECK(hearth_kv_seq_len(ctx, 0) == 2 && hearth_kv_seq_len(ctx, 1) == 2); /* nothing changed */
    /* a position below the length rewrites from there */
    b = (hearth_batch){.n_tokens = 1, .token = tok, .pos = (const int32_t[]){1}, .seq_id = (const int32_t[]){1}};
    CHECK(hearth_decode_batch(ctx, &b) == HEARTH_OK && hearth_kv_seq_len(ctx, 1) == 2);
    CHECK(hearth_kv_seq_rm(ctx, 1, 0, -1) == HEARTH_OK);
    CHECK(hearth_kv_seq_cp(ctx, 0, 0, -1) == HEARTH_ERR_INVALID_ARG);
    CHECK(hearth_kv_seq_cp(ctx, 0, 1, 3) == HEARTH_ERR_INVALID_ARG && hearth_kv_seq_len(ctx, 1) == 0);
    CHECK(hearth_kv_seq_cp(ctx, 0, 5, -1) == HEARTH_ERR_INVALID_ARG);
    hearth_context_free(ctx);

    hearth_context_params cp = hearth_context_default_params();
    cp.n_ctx = 8;
    cp.n_seq_max = 2;
    CHECK(hearth_context_init(m, &cp, &ctx) == HEARTH_OK);
    CHECK(hearth_context_n_ctx_seq(ctx) == 4); /* a sequence's positions end at n_ctx_seq */
    b = (hearth_batch){.n_tokens = 4, .token = tok, .seq_id = (const int32_t[]){1, 1, 1, 1}};
    CHECK(hearth_decode_batch(ctx, &b) == HEARTH_OK && hearth_kv_seq_len(ctx, 1) == 4);
    b.n_tokens = 1;
    CHECK(hearth_decode_batch(ctx, &b) == HEARTH_ERR_CONTEXT_FULL && hearth_kv_seq_len(ctx, 1) == 4);
    CHECK(hearth_decode(ctx, tok, 4) == HEARTH_OK && hearth_context_n_past(ctx) == 4);
    hearth_context_free(ctx);
}

int main(void) {
    hearth_model *m;
    CHECK(hearth_model_load(check_model_path(), NULL, &m) == HEARTH_OK);
    if (!m) return check_report();
    test_together(m);
    test_copy_and_remove(m);
    test_errors(m);
    hearth_model_free(m);
    return check_report();
}
