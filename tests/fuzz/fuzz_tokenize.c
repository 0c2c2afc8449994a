/* libFuzzer harness for the tokenizer: any byte string (valid UTF-8 or not,
 * with or without special-token text) must tokenize without a crash, give ids
 * inside the vocabulary, and stream back through the detokenizer. Uses the
 * vocabulary of the model at $HEARTH_MODEL. Not built by CMake; from the
 * repository root: */
// clang -g -O1 -mavx2 -mfma -mf16c -fsanitize=fuzzer,address,undefined -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Iinclude -Isrc $(find src -name '*.c' ! -name '*_avx512*') tests/fuzz/fuzz_tokenize.c -o fuzz_tokenize -lpcre2-8 -lm -lpthread
// HEARTH_MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf ./fuzz_tokenize -max_total_time=60 -max_len=4096
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "hearth.h"

static hearth_model *model;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    hearth_model_params p = hearth_model_default_params();
    p.vocab_only = true;
    const char *path = getenv("HEARTH_MODEL");
    if (!path || hearth_model_load(path, &p, &model) != HEARTH_OK) {
        fprintf(stderr, "fuzz_tokenize: set HEARTH_MODEL to a loadable model (%s)\n", hearth_last_error());
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int32_t ids[8192];
    const int32_t n_vocab = hearth_model_n_vocab(model);
    for (int parse_special = 0; parse_special < 2; parse_special++) {
        size_t n = 0;
        hearth_status st = hearth_tokenize(model, (const char *)data, size, true, parse_special, ids, 8192, &n);
        if (st == HEARTH_ERR_BUFFER_TOO_SMALL) n = 8192;
        else if (st != HEARTH_OK) abort();
        hearth_detok *d;
        if (hearth_detok_init(model, true, &d) != HEARTH_OK) abort();
        char buf[4096];
        size_t len;
        for (size_t i = 0; i < n; i++) {
            if (ids[i] < 0 || ids[i] >= n_vocab) abort();
            if (hearth_detok_push(d, ids[i], buf, sizeof buf, &len) != HEARTH_OK) abort();
        }
        if (hearth_detok_flush(d, buf, sizeof buf, &len) != HEARTH_OK) abort();
        hearth_detok_free(d);
    }
    return 0;
}
