/* hearth against llama.cpp on Gemma 3 270M (Q4_K_M; gemma3 architecture:
 * sliding-window and global layers, QK-norm, GeGLU, pre- and post-norms): for
 * each of 8 prompts (tests/reference/greedy/gemma3.json), hearth decodes
 * llama.cpp's prompt tokens (with <bos>) and its 64 greedy tokens equal
 * llama.cpp's, with logits close on llama.cpp's top 32 (greedy_check.h). The
 * prompts are fed as token ids: tokenization is checked by the tokenizer tests.
 * Skips (77) when the model file is missing (scripts/fetch_model.sh). */
#include "greedy_check.h"

/* As for the default model (test_greedy_reference.c): hearth's kernels follow
 * llama.cpp's order of operations, so logits agree to the fixture's 5
 * decimals (measured: 5.7e-6 at worst over the 512 steps). */
#define MAX_LOGIT_DIFF 1e-3f

int main(void) {
    const char *model_path = check_model_path_from("HEARTH_MODEL_GEMMA");
    hearth_model *m = NULL;
    hearth_status st = hearth_model_load(model_path, NULL, &m);
    CHECK_MSG(st == HEARTH_OK, "load: %s", hearth_last_error());
    if (!m) return check_report();
    greedy_check(m, "reference/greedy/gemma3.json", false, MAX_LOGIT_DIFF);
    hearth_model_free(m);
    return check_report();
}
