/* hearth against llama.cpp on the default model (SmolLM2-135M-Instruct Q4_1):
 * for each reference prompt (tests/reference/greedy/smollm2.json), hearth's
 * tokenization equals llama.cpp's, its greedy continuation equals llama.cpp's
 * token for token for 64 tokens, and at every step its logits are close to
 * llama.cpp's on llama.cpp's top-32 tokens (greedy_check.h). */
#include "greedy_check.h"

/* Largest |hearth - llama.cpp| logit accepted. hearth's AVX2 kernels follow
 * llama.cpp's x86 order of operations, so the logits agree to the fixture's
 * 5 decimals. Any drift shows up far above this: an ulp of difference flips
 * 8-bit activation roundings, which 30 layers amplify to ~0.3..1 (measured
 * before the kernels followed llama.cpp's order; llama.cpp with flash
 * attention on vs off also differs by 1.2). */
#define MAX_LOGIT_DIFF 1e-3f

/* With flash attention on (the tiled path: F32 probabilities and another
 * order of sums) logits move about as far as llama.cpp's own flash attention
 * moves them from its path without (1.2 above): measured 1.2 here, 1.9 on
 * Gemma 3 and 0.41 on Qwen2.5-Coder (test_greedy_models; AVX2, 2026-11-25).
 * With llama.cpp's token fed back, a step's token then differs only at a
 * near tie: measured 627 of 640 steps equal here (3 of 10 prompts with all
 * 64), 503/512 on Gemma 3 (2 of 8) and 253/256 on Qwen2.5-Coder (2 of 4).
 * At least FA_MIN_EQUAL_PCT % of the steps must give llama.cpp's token. */
#define FA_MAX_LOGIT_DIFF 4.0f
#define FA_MIN_EQUAL_PCT 95

int main(void) {
    const char *model_path = check_model_path();
    hearth_model *m;
    CHECK(hearth_model_load(model_path, NULL, &m) == HEARTH_OK);
    if (!m) return check_report();
    greedy_check(m, "reference/greedy/smollm2.json", true, HEARTH_FLASH_ATTN_OFF, MAX_LOGIT_DIFF);
    const greedy_result fa = greedy_check(m, "reference/greedy/smollm2.json", false, HEARTH_FLASH_ATTN_ON, FA_MAX_LOGIT_DIFF);
    CHECK_MSG(fa.n_equal * 100 >= fa.n_steps * FA_MIN_EQUAL_PCT, "flash attention: %d of %d greedy tokens equal llama.cpp's",
              fa.n_equal, fa.n_steps);
    hearth_model_free(m);
    return check_report();
}
