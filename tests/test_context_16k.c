/* A 16k-token context on a tiny model (issue 19): the YaRN tiny model
 * (tests/reference/arch/llama-yarn-f32.gguf: trained on 256 tokens, YaRN
 * factor 4 over 64) in a context of n_ctx 16384, n_batch 2048 and n_ubatch
 * 512 reads 16384 random tokens in batches of 2048 (each run in passes of
 * 512), once with the tiled attention (flash_attn ON) and once with the exact
 * one (OFF). After every batch the last token's logits of the two must agree
 * within test_flash_attn.c's bound (flash_check.h), each must be within
 * LLAMA_MAX_DIFF of llama.cpp's logits for the same tokens
 * (reference/long/16k_reference.json, made by make_16k_reference.py beside
 * it), and creating the context must warn that n_ctx passes the model's
 * training length. The memory plan
 * of n_ctx 16384 has the compute buffers of n_ctx 4096 with the tiled path
 * (they follow n_ubatch, not n_ctx); the exact path adds only a row of n_ctx
 * scores per thread, never an n_ubatch x n_ctx matrix. HEARTH_TEST_SHORT
 * (the sanitizer runs, where decoding is slow) reads one batch of 2048
 * tokens instead. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "flash_check.h"
#include "hearth.h"
#include "json_file.h"

#define MODEL "reference/arch/llama-yarn-f32.gguf"
#define N_CTX 16384
#define N_BATCH 2048
#define N_UBATCH 512
#define N_THREADS 2
#define SEED 0x16C7

/* Against llama.cpp (its plain attention over the F16 cache, AVX2 build):
 * the largest |hearth - llama.cpp| over the vocabulary after each batch.
 * measured (x86-64 AVX2, 2026-11-26) 5.1e-4 at worst with the exact path
 * and 1.8e-3 with the tiled one, on logits up to 25; the bound is the YaRN
 * models' in test_tiny_models (YARN_MAX_DIFF), where a wrong YaRN ramp or
 * attention factor moves logits by 0.1 and more already at 256 tokens. */
#define LLAMA_MAX_DIFF 5e-3f

static cJSON *ref; /* reference/long/16k_reference.json */

/* The largest |a - b| over n floats. */
static float max_abs_diff(const float *a, const cJSON *b, int32_t n) {
    float worst = 0.0f;
    int32_t i = 0;
    for (const cJSON *v = b ? b->child : NULL; v && i < n; v = v->next, i++) {
        const float d = fabsf(a[i] - (float)v->valuedouble);
        worst = d > worst || isnan(d) ? d : worst;
    }
    return i == n ? worst : INFINITY;
}

/* llama.cpp's logits after n_past tokens, or NULL. */
static const cJSON *llama_logits(uint32_t n_past) {
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(ref, "records")) {
        if ((uint32_t)cJSON_GetObjectItem(r, "n_past")->valueint == n_past) return cJSON_GetObjectItem(r, "logits");
    }
    return NULL;
}

/* Counts the warnings that n_ctx is past the training length. */
static void on_log(hearth_log_level level, const char *msg, void *user) {
    if (level == HEARTH_LOG_WARN && strstr(msg, "larger than the 256 tokens the model was trained on")) ++*(int *)user;
}

static hearth_context_params params(uint32_t n_ctx, int32_t flash_attn) {
    hearth_context_params cp = hearth_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_batch = N_BATCH;
    cp.n_ubatch = N_UBATCH;
    cp.n_threads = N_THREADS;
    cp.flash_attn = flash_attn;
    return cp;
}

/* n_tokens random tokens into both contexts a batch at a time, comparing
 * the last logits after each batch with each other and with llama.cpp's;
 * returns the worst relative difference of on and off. */
static float read_both(hearth_model *m, hearth_context *on, hearth_context *off, int32_t n_tokens) {
    const int32_t n_vocab = hearth_model_n_vocab(m);
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)n_tokens);
    CHECK(tok != NULL);
    if (!tok) return INFINITY;
    uint64_t rng = SEED;
    for (int32_t i = 0; i < n_tokens; i++) tok[i] = (int32_t)(check_splitmix64(&rng) % (uint64_t)n_vocab);
    int32_t n_first = 0; /* the fixture's tokens are these */
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(ref, "first_tokens")) n_first += t->valueint == tok[n_first];
    CHECK_MSG(n_first == 8 && cJSON_GetObjectItem(ref, "seed")->valueint == SEED,
              "the fixture's tokens are not the test's");
    float worst = 0.0f, worst_llama[2] = {0.0f, 0.0f};
    for (int32_t i = 0; i < n_tokens; i += N_BATCH) {
        const uint32_t k = (uint32_t)(n_tokens - i < N_BATCH ? n_tokens - i : N_BATCH);
        const hearth_status a = hearth_decode(on, tok + i, k), b = hearth_decode(off, tok + i, k);
        CHECK_MSG(a == HEARTH_OK && b == HEARTH_OK, "tokens %d..%d: %s", (int)i, (int)(i + (int32_t)k),
                  hearth_last_error());
        if (a != HEARTH_OK || b != HEARTH_OK) {
            worst = INFINITY;
            break;
        }
        const float d = flash_rel_diff(hearth_get_logits(on), hearth_get_logits(off), n_vocab);
        const cJSON *ll = llama_logits((uint32_t)(i + (int32_t)k));
        const float l_on = max_abs_diff(hearth_get_logits(on), ll, n_vocab);
        const float l_off = max_abs_diff(hearth_get_logits(off), ll, n_vocab);
        printf("%5d tokens: max |on - off| / max |logit| %.3g; max |hearth - llama.cpp| on %.3g, off %.3g\n",
               (int)(i + (int32_t)k), (double)d, (double)l_on, (double)l_off);
        worst = d > worst || isnan(d) ? d : worst;
        worst_llama[0] = l_on > worst_llama[0] || isnan(l_on) ? l_on : worst_llama[0];
        worst_llama[1] = l_off > worst_llama[1] || isnan(l_off) ? l_off : worst_llama[1];
    }
    CHECK_MSG(worst_llama[0] <= LLAMA_MAX_DIFF && worst_llama[1] <= LLAMA_MAX_DIFF,
              "max |hearth - llama.cpp| over the batches: flash_attn on %.3g, off %.3g (bound %.3g)",
              (double)worst_llama[0], (double)worst_llama[1], (double)LLAMA_MAX_DIFF);
    CHECK(hearth_context_n_past(on) == (uint32_t)n_tokens && hearth_context_n_past(off) == (uint32_t)n_tokens);
    free(tok);
    return worst;
}

static void check_long_context(hearth_model *m, uint32_t n_ctx) {
    int n_warnings = 0;
    hearth_log_set(on_log, &n_warnings);
    const hearth_context_params p_on = params(n_ctx, HEARTH_FLASH_ATTN_ON);
    const hearth_context_params p_off = params(n_ctx, HEARTH_FLASH_ATTN_OFF);
    hearth_context *on = NULL, *off = NULL;
    CHECK_MSG(hearth_context_init(m, &p_on, &on) == HEARTH_OK, "flash_attn on: %s", hearth_last_error());
    CHECK_MSG(hearth_context_init(m, &p_off, &off) == HEARTH_OK, "flash_attn off: %s", hearth_last_error());
    hearth_log_set(NULL, NULL);
    CHECK_MSG(n_warnings == 2, "%d warnings that n_ctx %u passes the training length, expected one per context",
              n_warnings, n_ctx);
    if (on && off) {
        CHECK(hearth_context_flash_attn(on) && !hearth_context_flash_attn(off));
        const float worst = read_both(m, on, off, (int32_t)n_ctx);
        printf("n_ctx %u, n_batch %d, n_ubatch %d: worst max |on - off| / max |logit| %.3g (bound %.3g)\n", n_ctx,
               N_BATCH, N_UBATCH, (double)worst, (double)FLASH_REL_BOUND);
        CHECK_MSG(worst <= FLASH_REL_BOUND, "the tiled attention moves the logits by %.3g of the largest at n_ctx %u",
                  (double)worst, n_ctx);
    }
    hearth_context_free(on);
    hearth_context_free(off);
}

/* The plan of n_ctx 16384 against n_ctx 4096 with each attention path. */
static void check_memory_plan(hearth_model *m) {
    for (int32_t fa = HEARTH_FLASH_ATTN_OFF; fa <= HEARTH_FLASH_ATTN_ON; fa++) {
        hearth_context_memory big, small;
        const hearth_context_params p_big = params(N_CTX, fa), p_small = params(4096, fa);
        CHECK(hearth_context_memory_plan(m, &p_big, &big) == HEARTH_OK);
        CHECK(hearth_context_memory_plan(m, &p_small, &small) == HEARTH_OK);
        printf("flash_attn %s: n_ctx %u: KV cache %llu, compute %llu bytes; n_ctx %u: KV cache %llu, compute %llu\n",
               fa ? "on" : "off", big.n_ctx, (unsigned long long)big.kv_cache, (unsigned long long)big.compute,
               small.n_ctx, (unsigned long long)small.kv_cache, (unsigned long long)small.compute);
        CHECK(big.n_ctx == N_CTX && small.n_ctx == 4096 && big.n_ubatch == N_UBATCH && small.n_ubatch == N_UBATCH);
        CHECK(big.kv_cache == 4 * small.kv_cache);
        /* the exact path's scores and probabilities: one n_ctx row (F32 and F16) per thread */
        const uint64_t rows = fa ? 0 : (uint64_t)N_THREADS * (N_CTX - 4096) * (sizeof(float) + 2);
        CHECK_MSG(big.compute >= small.compute && big.compute - small.compute <= rows,
                  "flash_attn %s: compute %llu bytes at n_ctx %d, %llu at 4096: more than %llu apart",
                  fa ? "on" : "off", (unsigned long long)big.compute, N_CTX, (unsigned long long)small.compute,
                  (unsigned long long)rows);
    }
}

int main(void) {
    ref = json_file_read(check_test_path("reference/long/16k_reference.json"));
    CHECK(ref != NULL);
    hearth_model *m = NULL;
    CHECK_MSG(hearth_model_load(check_test_path(MODEL), NULL, &m) == HEARTH_OK, "%s: %s", MODEL, hearth_last_error());
    if (!m || !ref) return check_report();
    check_memory_plan(m);
    check_long_context(m, getenv("HEARTH_TEST_SHORT") ? 2048 : N_CTX);
    hearth_model_free(m);
    cJSON_Delete(ref);
    return check_report();
}
