/* libFuzzer harness for the JSON Schema to GBNF converter: any input must
 * convert to OK or an error status without crashing, leaking or hanging,
 * and every grammar it writes must compile (bar the grammar compiler's size
 * limits, which a hostile schema may reach) and run on a few texts. The
 * input is the schema text; the prefixed form is tried too. Not built by
 * CMake; build and run it from the repository root: */
// clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Iinclude -Isrc src/base/status.c src/grammar/*.c tests/fuzz/fuzz_json_schema.c -o fuzz_json_schema -lcjson -lm && ./fuzz_json_schema -max_total_time=60 -dict=tests/fuzz/json_schema.dict CORPUS_DIR
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"

static void check_grammar(const char *gbnf) {
    hl_grammar *g;
    if (hl_grammar_parse(gbnf, strlen(gbnf), &g) != HEARTH_OK) {
        /* only the compiler's size limits may refuse a converter's output */
        if (!strstr(hearth_last_error(), "limit")) abort();
        return;
    }
    static const char *const texts[] = {"{}", "[]", "\"a\"", "0", "-1.5", "null", "true", "{\"a\": [1, \"b\"]}", ""};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) hl_grammar_matches(g, texts[i], strlen(texts[i]));
    hl_grammar_free(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *gbnf = NULL;
    if (hl_json_schema_to_gbnf((const char *)data, size, &gbnf) == HEARTH_OK) {
        check_grammar(gbnf);
        free(gbnf);
        /* the prefixed rules, made a grammar by a root that names them */
        char *rules = NULL;
        if (hl_json_schema_to_gbnf_rules((const char *)data, size, "t.", "args", &rules) != HEARTH_OK) abort();
        size_t n = strlen(rules) + 32;
        char *full = malloc(n);
        if (full) {
            strcpy(full, "root ::= args\n");
            strcat(full, rules);
            check_grammar(full);
            free(full);
        }
        free(rules);
    }
    return 0;
}
