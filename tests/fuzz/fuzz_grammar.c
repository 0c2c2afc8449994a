/* libFuzzer harness for the GBNF engine (src/grammar/): any text must parse
 * to OK or an error status without crashing, leaking or hanging; when it
 * parses, matching a few byte strings (including the fuzz input itself and
 * bytes that split UTF-8 characters) and the allowed-token walk over a tiny
 * vocabulary must not crash either. Not built by CMake; build and run it
 * from the repository root: */
// clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Iinclude -Isrc src/base/status.c src/grammar/gbnf_*.c src/grammar/grammar_match.c src/grammar/token_trie.c tests/fuzz/fuzz_grammar.c -o fuzz_grammar && ./fuzz_grammar -max_total_time=60 CORPUS_DIR
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"

static const char *const vocab[] = {
    "a",    "ab", "\"", "{", "}", " ",    "\n", "0", "12", "\xc3", "\xa9", "\xc3\xa9", "\xf0\x9f\x98\x80",
    "x\"y", "[",  "]",  "(", ")", "true", "\\"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hl_grammar *g;
    if (hl_grammar_parse((const char *)data, size, &g) != HEARTH_OK) return 0;
    static const char *const probes[] = {"", "a", "ab", "{\"a\": 1}", "\xc3\xa9", "\xf0\x9f", "\x80", "()", "0"};
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) hl_grammar_matches(g, probes[i], strlen(probes[i]));
    hl_grammar_matches(g, (const char *)data, size < 64 ? size : 64);
    hl_grammar_state *s;
    static hl_token_trie *trie;
    if (!trie) {
        size_t lens[sizeof vocab / sizeof vocab[0]];
        for (size_t i = 0; i < sizeof vocab / sizeof vocab[0]; i++) lens[i] = strlen(vocab[i]);
        if (hl_token_trie_build(vocab, lens, (int32_t)(sizeof vocab / sizeof vocab[0]), &trie) != HEARTH_OK) abort();
    }
    if (hl_grammar_state_init(g, &s) == HEARTH_OK) {
        uint8_t allowed[sizeof vocab / sizeof vocab[0]];
        /* Walk greedily: take the first allowed token a few times. */
        for (int step = 0; step < 8; step++) {
            if (hl_grammar_allowed_tokens(s, trie, allowed) != HEARTH_OK) break;
            size_t k = 0;
            while (k < sizeof allowed && !allowed[k]) k++;
            if (k == sizeof allowed || !hl_grammar_accept(s, vocab[k], strlen(vocab[k]))) break;
        }
        hl_grammar_state_free(s);
    }
    hl_grammar_free(g);
    return 0;
}
