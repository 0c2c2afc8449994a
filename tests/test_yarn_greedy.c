/* YaRN rope scaling set on the context, against llama.cpp: Qwen2.5-Coder 0.5B
 * with llama.cpp's `--rope-scaling yarn --rope-scale 4 --yarn-orig-ctx 32768`
 * over a prompt of about 2.6k tokens (tests/reference/yarn/: the fixture and
 * the script that made it with llama-cpp-python). hearth decodes llama.cpp's
 * prompt tokens with the same settings and flash attention off (llama.cpp's
 * order of operations), then at each of the 32 steps its argmax must be
 * llama.cpp's greedy token and its logits close to llama.cpp's top 16;
 * llama.cpp's token is fed back. Skipped (77) without the model
 * (HEARTH_MODEL_QWEN2). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "greedy_check.h"

/* The fixture comes from llama.cpp built for AVX2 (the machine at hand had no
 * AVX-512), whose F16 attention products and K-quant sums add in another
 * order than the AVX-512 build hearth's kernels follow (the greedy fixtures
 * of test_greedy_models.c, made on AVX-512, agree to 1e-3). Over 2.6k tokens
 * that moves logits of order 15 by up to 0.18 without YaRN (measured on
 * this prompt, 2026-11-26) and 0.354 with it (YaRN sharpens attention by
 * mscale^2 = 1.3), so the bound is loose; the tokens carry the test: without
 * YaRN hearth's first greedy token is another one (16, not 12). */
#define MAX_LOGIT_DIFF 0.5f

int main(void) {
    /* The sanitizer runs (HEARTH_TEST_SHORT) skip it: 2.6k tokens of a 0.5B
     * model take minutes there, and the YaRN rope's memory use is the same
     * code the tiny YaRN models of test_tiny_models run. */
    if (getenv("HEARTH_TEST_SHORT")) {
        printf("SKIP: HEARTH_TEST_SHORT (the tiny YaRN models cover this path under the sanitizers)\n");
        return 77;
    }
    const char *path = check_model_path_from("HEARTH_MODEL_QWEN2");
    cJSON *ref = json_file_read(check_test_path("reference/yarn/qwen2_yarn.json"));
    CHECK(ref != NULL);
    if (!ref) return check_report();
    hearth_model *m = NULL;
    if (hearth_model_load(path, NULL, &m) != HEARTH_OK) {
        CHECK_MSG(false, "load: %s", hearth_last_error());
        cJSON_Delete(ref);
        return check_report();
    }
    printf("reference: %s\n", cJSON_GetObjectItem(ref, "generator")->valuestring);
    hearth_context_params cp = hearth_context_default_params();
    cp.n_ctx = (uint32_t)cJSON_GetObjectItem(ref, "n_ctx")->valueint;
    cp.n_batch = (uint32_t)cJSON_GetObjectItem(ref, "n_batch")->valueint;
    cp.flash_attn = HEARTH_FLASH_ATTN_OFF;
    CHECK(strcmp(cJSON_GetObjectItem(ref, "rope_scaling")->valuestring, "yarn") == 0);
    cp.rope_scaling_type = HEARTH_ROPE_SCALING_YARN;
    cp.rope_freq_scale = (float)cJSON_GetObjectItem(ref, "rope_freq_scale")->valuedouble;
    cp.yarn_orig_ctx = (uint32_t)cJSON_GetObjectItem(ref, "yarn_orig_ctx")->valueint;
    hearth_context *ctx = NULL;
    CHECK_MSG(hearth_context_init(m, &cp, &ctx) == HEARTH_OK, "context: %s", hearth_last_error());
    const cJSON *ids_json = cJSON_GetObjectItem(ref, "prompt_ids");
    const int n_prompt = cJSON_GetArraySize(ids_json);
    int32_t *ids = calloc((size_t)n_prompt, sizeof *ids);
    for (int i = 0; i < n_prompt; i++) ids[i] = cJSON_GetArrayItem(ids_json, i)->valueint;
    CHECK_MSG(n_prompt > 2048, "the prompt is %d tokens, the test wants more than 2048", n_prompt);
    if (ctx) CHECK_MSG(hearth_decode(ctx, ids, (uint32_t)n_prompt) == HEARTH_OK, "prompt: %s", hearth_last_error());
    const int32_t n_vocab = hearth_model_n_vocab(m);
    const greedy_steps_result r = ctx ? greedy_steps(ctx, cJSON_GetObjectItem(ref, "steps"), n_vocab)
                                      : (greedy_steps_result){.first_diff = -1, .worst = INFINITY};
    printf("%d prompt tokens; greedy tokens equal to llama.cpp: %d/%d; max |logit difference| %.3g (limit %.0e)\n",
           n_prompt, r.n_equal, r.n_steps, (double)r.worst, (double)MAX_LOGIT_DIFF);
    CHECK_MSG(r.first_diff < 0, "step %d: hearth's greedy token is not llama.cpp's", r.first_diff);
    CHECK(r.n_steps == 32);
    CHECK(r.worst <= MAX_LOGIT_DIFF);
    free(ids);
    hearth_context_free(ctx);
    hearth_model_free(m);
    cJSON_Delete(ref);
    return check_report();
}
