/* The default model requantized to the types of issue 3's speed bars (Q4_0,
 * Q8_0, Q4_K_M), against llama.cpp: hearth_model_quantize writes each file
 * (into a temporary folder), and its greedy tokens on 4 prompts x 64 steps
 * must equal those llama.cpp gives on the file llama.cpp's own quantizer made
 * (tests/reference/greedy/smollm2-*.json, make_greedy_fixtures.py), with
 * logits close on llama.cpp's top 32 (greedy_check.h). So a difference in
 * either the quantizer or those types' matrix kernels (decode, and the batch
 * panels a prompt runs through) shows here. */
#include <stdlib.h>
#include <unistd.h>

#include "greedy_check.h"

/* The kernels follow llama.cpp's order of operations for these types too, so
 * logits agree to the fixtures' 5 decimals. */
#define MAX_LOGIT_DIFF 1e-3f

static const struct {
    hearth_ftype ftype;
    const char *fixture; /* under tests/ */
} types[] = {
    {HEARTH_FTYPE_MOSTLY_Q4_0, "reference/greedy/smollm2-q4_0.json"},
    {HEARTH_FTYPE_MOSTLY_Q8_0, "reference/greedy/smollm2-q8_0.json"},
    {HEARTH_FTYPE_MOSTLY_Q4_K_M, "reference/greedy/smollm2-q4_k_m.json"},
};

int main(void) {
    const char *in = check_model_path();
    char dir[] = "/tmp/hearth-test-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char out[sizeof dir + 32];
    snprintf(out, sizeof out, "%s/model.gguf", dir);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        printf("type: %s\n", hearth_ftype_name(types[i].ftype));
        hearth_quantize_params qp = hearth_quantize_default_params();
        qp.ftype = types[i].ftype;
        qp.allow_requantize = true; /* the default model is Q4_1, as for the fixture */
        hearth_status st = hearth_model_quantize(in, out, &qp);
        CHECK_MSG(st == HEARTH_OK, "quantize: %s", hearth_last_error());
        hearth_model *m = NULL;
        if (st == HEARTH_OK) st = hearth_model_load(out, NULL, &m);
        CHECK_MSG(st == HEARTH_OK, "load: %s", hearth_last_error());
        if (m) greedy_check(m, types[i].fixture, true, HEARTH_FLASH_ATTN_OFF, MAX_LOGIT_DIFF);
        hearth_model_free(m);
    }
    unlink(out);
    rmdir(dir);
    return check_report();
}
