/* Speed of the grammar engine's allowed-token walk (src/grammar/): builds
 * the token trie of a model's vocabulary (loaded vocab_only), then times
 * hl_grammar_allowed_tokens for a JSON grammar (llama.cpp's
 * grammars/json.gbnf) at a few states: the start, inside a key string,
 * after a colon, inside a number, inside a string value with a partial
 * UTF-8 character. Prints the trie build time and, per state, the median
 * and best of 21 walks in microseconds and how many tokens are allowed.
 * Build: cc -O2 -Isrc -Iinclude bench/grammar_bench.c build/libhearth.a
 *        -lpcre2-8 -lcjson -lcurl -lssl -lcrypto -lOpenCL -lm -lpthread -ldl
 *        -o build/grammar_bench (-lOpenCL when the library was built with OpenCL)
 * Run:   build/grammar_bench models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_time.h"
#include "grammar/grammar.h"
#include "hearth.h"

static const char JSON_GBNF[] =
    "root   ::= object\n"
    "value  ::= object | array | string | number | (\"true\" | \"false\" | \"null\") ws\n"
    "object ::= \"{\" ws ( string \":\" ws value (\",\" ws string \":\" ws value)* )? \"}\" ws\n"
    "array  ::= \"[\" ws ( value (\",\" ws value)* )? \"]\" ws\n"
    "string ::= \"\\\"\" ( [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4}) )* \"\\\"\" "
    "ws\n"
    "number ::= (\"-\"? ([0-9] | [1-9] [0-9]{0,15})) (\".\" [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws\n"
    "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n";

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: grammar_bench MODEL.gguf\n");
        return 2;
    }
    hearth_model_params mp = hearth_model_default_params();
    mp.vocab_only = true;
    hearth_model *m;
    if (hearth_model_load(argv[1], &mp, &m) != HEARTH_OK) {
        fprintf(stderr, "%s\n", hearth_last_error());
        return 1;
    }
    int32_t n = hearth_model_n_vocab(m);
    char **pieces = malloc((size_t)n * sizeof *pieces);
    size_t *lens = malloc((size_t)n * sizeof *lens), total = 0;
    for (int32_t i = 0; i < n; i++) {
        char buf[512];
        size_t len = 0;
        if (hearth_token_to_piece(m, i, false, buf, sizeof buf, &len) != HEARTH_OK) len = 0;
        pieces[i] = malloc(len ? len : 1);
        memcpy(pieces[i], buf, len);
        lens[i] = len;
        total += len;
    }
    hl_token_trie *t;
    double t0 = bench_now();
    if (hl_token_trie_build((const char *const *)pieces, lens, n, &t) != HEARTH_OK) return 1;
    printf("vocab %d tokens, %zu bytes; trie build %.1f ms\n", n, total, 1e3 * (bench_now() - t0));

    hl_grammar *g;
    if (hl_grammar_parse(JSON_GBNF, strlen(JSON_GBNF), &g) != HEARTH_OK) {
        fprintf(stderr, "%s\n", hearth_last_error());
        return 1;
    }
    static const char *const states[][2] = {
        {"start", ""},
        {"object open", "{"},
        {"in key", "{\"na"},
        {"after colon", "{\"name\": "},
        {"in number", "{\"n\": 12"},
        {"in string value", "{\"n\": \"hello wor"},
        {"mid UTF-8 char", "{\"n\": \"caf\xc3"},
        {"nested array", "{\"a\": [[1, 2], [3"},
    };
    uint8_t *allowed = malloc((size_t)n);
    for (size_t k = 0; k < sizeof states / sizeof states[0]; k++) {
        hl_grammar_state *s;
        if (hl_grammar_state_init(g, &s) != HEARTH_OK || !hl_grammar_accept(s, states[k][1], strlen(states[k][1])))
            return 1;
        double us[21];
        for (int r = 0; r < 21; r++) {
            double a = bench_now();
            if (hl_grammar_allowed_tokens(s, t, allowed) != HEARTH_OK) return 1;
            us[r] = 1e6 * (bench_now() - a);
        }
        bench_sort(us, 21);
        int32_t n_allowed = 0;
        for (int32_t i = 0; i < n; i++) n_allowed += allowed[i];
        printf("%-16s %-22s median %9.1f us  best %9.1f us  allowed %6d\n", states[k][0], states[k][1], us[10], us[0],
               n_allowed);
        hl_grammar_state_free(s);
    }
    free(allowed);
    hl_grammar_free(g);
    hl_token_trie_free(t);
    for (int32_t i = 0; i < n; i++) free(pieces[i]);
    free(pieces);
    free(lens);
    hearth_model_free(m);
    return 0;
}
