/* The tiled attention (flash_attn ON) against the exact one (OFF) end to
 * end, on long contexts: the tiny models of every architecture
 * (tests/reference/arch/: GQA, qwen2, qwen3, Gemma 3's sliding windows, a
 * Mistral-style window in every layer) at 4096 tokens and the default model
 * (SmolLM2) at 2048. For each, a prompt
 * of random tokens in passes of 512, then 16 tokens one at a time (the split
 * of a decode over the threads), with both paths; the logits after every
 * step must agree within a bound relative to the largest logit, and the
 * greedy token must be the same where the exact path's best two are not
 * near a tie. Then two sequences in one batch with the tiled path (a prompt
 * chunk of one beside a decode token of the other, at different depths)
 * give the logits each gives alone, bit for bit: the tiled path cuts a
 * token's keys at fixed positions (cpu/flash_attn.c), and the rest of the
 * forward pass already takes the same order for a sequence whatever shares
 * its batch. HEARTH_TEST_SHORT (the sanitizer run, where decoding is slow)
 * quarters the lengths. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "flash_check.h"
#include "hearth.h"

#define N_DECODE 16
#define N_BATCH 512
#define TIE 0.05f /* relative gap between the exact path's best two under which the greedy tokens may differ */

/* argmax, and whether the runner-up is within TIE of it (relative to the largest |logit|). */
static int32_t argmax(const float *x, int32_t n, bool *near_tie) {
    int32_t best = 0, second = -1;
    float mx = 1e-6f;
    for (int32_t i = 1; i < n; i++) {
        if (x[i] > x[best]) {
            second = best;
            best = i;
        } else if (second < 0 || x[i] > x[second]) second = i;
    }
    for (int32_t i = 0; i < n; i++) mx = fabsf(x[i]) > mx ? fabsf(x[i]) : mx;
    *near_tie = second >= 0 && x[best] - x[second] < TIE * mx;
    return best;
}

static hearth_context *context(hearth_model *m, uint32_t n_ctx, uint32_t n_seq, int32_t flash_attn) {
    hearth_context_params cp = hearth_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_batch = N_BATCH;
    cp.n_threads = 2;
    cp.n_seq_max = n_seq;
    cp.flash_attn = flash_attn;
    hearth_context *ctx = NULL;
    const hearth_status st = hearth_context_init(m, &cp, &ctx);
    CHECK_MSG(st == HEARTH_OK, "context: %s", hearth_last_error());
    return ctx;
}

/* Prompt then N_DECODE single tokens with both paths; returns the worst relative difference. */
static float long_context(hearth_model *m, const char *name, int32_t n_prompt) {
    const int32_t n_vocab = hearth_model_n_vocab(m), n = n_prompt + N_DECODE;
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)n);
    uint64_t rng = 0x5EED;
    for (int32_t i = 0; i < n; i++) tok[i] = (int32_t)(check_splitmix64(&rng) % (uint64_t)n_vocab);
    hearth_context *on = context(m, (uint32_t)n, 1, HEARTH_FLASH_ATTN_ON);
    hearth_context *off = context(m, (uint32_t)n, 1, HEARTH_FLASH_ATTN_OFF);
    float worst = 0.0f;
    int n_same = 0, n_ties = 0;
    if (on && off) {
        CHECK(hearth_context_flash_attn(on) && !hearth_context_flash_attn(off));
        CHECK(hearth_decode(on, tok, (uint32_t)n_prompt) == HEARTH_OK);
        CHECK(hearth_decode(off, tok, (uint32_t)n_prompt) == HEARTH_OK);
        for (int32_t step = 0; step <= N_DECODE; step++) {
            const float *a = hearth_get_logits(on), *b = hearth_get_logits(off);
            const float d = flash_rel_diff(a, b, n_vocab);
            worst = d > worst || isnan(d) ? d : worst;
            bool tie_a, tie_b;
            const bool same = argmax(a, n_vocab, &tie_a) == argmax(b, n_vocab, &tie_b);
            n_same += same;
            n_ties += !same && tie_b;
            CHECK_MSG(same || tie_b, "%s: step %d: the greedy tokens differ without a near tie", name, (int)step);
            if (step == N_DECODE) break;
            CHECK(hearth_decode(on, &tok[n_prompt + step], 1) == HEARTH_OK);
            CHECK(hearth_decode(off, &tok[n_prompt + step], 1) == HEARTH_OK);
        }
    }
    printf("%-34s %d tokens: max |on - off| / max |logit| %.3g (bound %.3g); argmax equal %d/%d (%d near ties)\n", name,
           (int)n, (double)worst, (double)FLASH_REL_BOUND, n_same, N_DECODE + 1, n_ties);
    CHECK_MSG(worst <= FLASH_REL_BOUND, "%s: tiled attention moves the logits by %.3g of the largest", name,
              (double)worst);
    hearth_context_free(on);
    hearth_context_free(off);
    free(tok);
    return worst;
}

/* Sequence 0 reads a prompt, sequence 1 a shorter one; then one batch holds
 * a chunk of sequence 0's continuation and a decode token of sequence 1. Its
 * logits must equal those of each sequence run alone. */
static void two_sequences(hearth_model *m, const char *name, int32_t n0, int32_t n1) {
    enum { CHUNK = 37 };
    const int32_t n_vocab = hearth_model_n_vocab(m);
    const uint32_t n_ctx_seq = (uint32_t)(n0 + CHUNK + 1);
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)(n0 + CHUNK + n1 + 1));
    uint64_t rng = 0xBA7C4;
    for (int32_t i = 0; i < n0 + CHUNK + n1 + 1; i++) tok[i] = (int32_t)(check_splitmix64(&rng) % (uint64_t)n_vocab);
    const int32_t *t0 = tok, *t1 = tok + n0 + CHUNK;
    hearth_context *both = context(m, 2 * n_ctx_seq, 2, HEARTH_FLASH_ATTN_ON);
    hearth_context *alone = context(m, n_ctx_seq, 1, HEARTH_FLASH_ATTN_ON);
    if (!both || !alone) goto done;
    float *want0 = malloc(sizeof(float) * (size_t)n_vocab), *want1 = malloc(sizeof(float) * (size_t)n_vocab);
    CHECK(hearth_decode(alone, t0, (uint32_t)(n0 + CHUNK)) == HEARTH_OK);
    memcpy(want0, hearth_get_logits(alone), sizeof(float) * (size_t)n_vocab);
    hearth_context_reset(alone);
    CHECK(hearth_decode(alone, t1, (uint32_t)(n1 + 1)) == HEARTH_OK);
    memcpy(want1, hearth_get_logits(alone), sizeof(float) * (size_t)n_vocab);

    /* the prompts, each in its own batches */
    for (int32_t s = 0; s < 2; s++) {
        const int32_t len = s ? n1 : n0, *t = s ? t1 : t0;
        for (int32_t i = 0; i < len; i += N_BATCH) {
            const int32_t k = len - i < N_BATCH ? len - i : N_BATCH;
            int32_t seq[N_BATCH];
            for (int32_t j = 0; j < k; j++) seq[j] = s;
            const hearth_batch b = {.n_tokens = k, .token = t + i, .seq_id = seq};
            CHECK(hearth_decode_batch(both, &b) == HEARTH_OK);
        }
    }
    int32_t ids[CHUNK + 1], seq[CHUNK + 1];
    int8_t logits[CHUNK + 1] = {0};
    for (int32_t j = 0; j < CHUNK; j++) {
        ids[j] = t0[n0 + j];
        seq[j] = 0;
    }
    ids[CHUNK] = t1[n1];
    seq[CHUNK] = 1;
    logits[CHUNK - 1] = logits[CHUNK] = 1;
    const hearth_batch b = {.n_tokens = CHUNK + 1, .token = ids, .seq_id = seq, .logits = logits};
    CHECK(hearth_decode_batch(both, &b) == HEARTH_OK);
    const float *got0 = hearth_get_logits_ith(both, CHUNK - 1), *got1 = hearth_get_logits_ith(both, CHUNK);
    CHECK(got0 && got1);
    if (got0 && got1) {
        const float d0 = flash_rel_diff(got0, want0, n_vocab), d1 = flash_rel_diff(got1, want1, n_vocab);
        printf("%-34s two sequences (%d + %d, %d tokens): max |batched - alone| / max |logit| %.3g, %.3g\n", name,
               (int)(n0 + CHUNK), (int)(n1 + 1), CHUNK + 1, (double)d0, (double)d1);
        CHECK_MSG(d0 == 0.0f && d1 == 0.0f, "%s: batched sequences differ from alone", name);
    }
    free(want0);
    free(want1);
done:
    hearth_context_free(both);
    hearth_context_free(alone);
    free(tok);
}

int main(void) {
    static const char *const tiny[] = {"llama3-f32",  "mistral-q8_0", "qwen2-f16",          "qwen3-q8_0",
                                       "gemma3-q8_0", "gemma3-f16",   "mistral-window-q8_0"};
    hearth_log_set(NULL, NULL); /* n_ctx past the tiny models' training length: no warning */
    const int32_t div = getenv("HEARTH_TEST_SHORT") ? 4 : 1;
    for (size_t i = 0; i < sizeof tiny / sizeof *tiny; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "reference/arch/%s.gguf", tiny[i]);
        hearth_model *m = NULL;
        CHECK_MSG(hearth_model_load(check_test_path(rel), NULL, &m) == HEARTH_OK, "%s: %s", rel, hearth_last_error());
        if (!m) continue;
        long_context(m, tiny[i], 4096 / div - N_DECODE);
        two_sequences(m, tiny[i], 1500 / div, 700 / div);
        hearth_model_free(m);
    }
    hearth_model *m = NULL;
    const char *path = check_model_path();
    CHECK(hearth_model_load(path, NULL, &m) == HEARTH_OK);
    if (m) {
        long_context(m, "SmolLM2-135M Q4_1", 2048 / div - N_DECODE);
        two_sequences(m, "SmolLM2-135M Q4_1", 600 / div, 300 / div);
    }
    hearth_model_free(m);
    return check_report();
}
