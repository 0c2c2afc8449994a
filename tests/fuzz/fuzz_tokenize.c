/* libFuzzer harness for the tokenizers: any byte string (valid UTF-8 or not,
 * with or without special-token text) must tokenize without a crash, give ids
 * inside the vocabulary, and stream back through the detokenizer. With a
 * SentencePiece vocabulary without add_space_prefix (Gemma 3), valid UTF-8
 * tokenized without parse_special must also come back unchanged from the
 * pieces (byte fallback loses nothing) unless it holds U+2581, which reads as
 * a space; byte-level BPE drops bytes that have no token, as llama.cpp does.
 * Uses the vocabulary of the model at $HEARTH_MODEL, loaded alone (SmolLM2:
 * BPE, Gemma 3: SentencePiece). Not built by CMake; from the repository root: */
// clang -g -O1 -fsanitize=fuzzer,address,undefined -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Iinclude -Isrc src/base/*.c src/gguf/*.c $(ls src/text/*.c | grep -v chat_template) tests/fuzz/fuzz_tokenize.c -o fuzz_tokenize -lpcre2-8 -lm -lpthread
// HEARTH_MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf ./fuzz_tokenize -max_total_time=60 -max_len=4096
// HEARTH_MODEL=models/gemma-3-270m-q4_k_m.gguf ./fuzz_tokenize -max_total_time=60 -max_len=4096
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "text/unicode.h"
#include "text/vocab_impl.h"

static gguf_file *file;
static hl_vocab *vocab;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *path = getenv("HEARTH_MODEL");
    if (!path || hl_gguf_open(path, &file) != HEARTH_OK || hl_vocab_load(file, &vocab) != HEARTH_OK) {
        fprintf(stderr, "fuzz_tokenize: set HEARTH_MODEL to a GGUF file with a vocabulary (%s)\n", hearth_last_error());
        abort();
    }
    return 0;
}

/* Well-formed UTF-8 (Unicode 15, table 3-7) without U+2581. */
static bool plain_utf8(const uint8_t *s, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t ok;
        const size_t len = hl_utf8_strict(s + i, n - i, &ok);
        if (len == 0 || ok != len) return false;
        if (len == 3 && s[i] == 0xE2 && s[i + 1] == 0x96 && s[i + 2] == 0x81) return false; /* U+2581 */
        i += len;
    }
    return true;
}

/* The pieces (control tokens silent) of ids must spell text[0, size). */
static void check_round_trip(const int32_t *ids, size_t n, const uint8_t *text, size_t size) {
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        char piece[512];
        size_t len;
        if (hl_vocab_token_to_piece(vocab, ids[i], false, piece, sizeof piece, &len) != HEARTH_OK) abort();
        if (len > size - at || memcmp(piece, text + at, len) != 0) abort();
        at += len;
    }
    if (at != size) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int32_t ids[8192];
    const int32_t n_vocab = hl_vocab_n_tokens(vocab);
    for (int parse_special = 0; parse_special < 2; parse_special++) {
        size_t n = 0;
        hearth_status st = hl_vocab_tokenize(vocab, (const char *)data, size, true, parse_special, ids, 8192, &n);
        if (st == HEARTH_ERR_BUFFER_TOO_SMALL) n = 8192;
        else if (st != HEARTH_OK) abort();
        hl_detok *d;
        if (hl_detok_init(vocab, true, &d) != HEARTH_OK) abort();
        char buf[4096];
        size_t len;
        for (size_t i = 0; i < n; i++) {
            if (ids[i] < 0 || ids[i] >= n_vocab) abort();
            if (hl_detok_push(d, ids[i], buf, sizeof buf, &len) != HEARTH_OK) abort();
        }
        if (hl_detok_flush(d, buf, sizeof buf, &len) != HEARTH_OK) abort();
        hl_detok_free(d);
        const bool lossless = vocab->type == HL_VOCAB_SPM && !vocab->add_space_prefix;
        if (lossless && !parse_special && st == HEARTH_OK && plain_utf8(data, size)) {
            check_round_trip(ids, n, data, size);
        }
    }
    return 0;
}
