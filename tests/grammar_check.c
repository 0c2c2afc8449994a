/* grammar_check: a command-line matcher for tests written in other
 * languages (tests/python/test_grammar_reference.py). Not a ctest.
 *   grammar_check GRAMMAR_FILE          GBNF from the file
 *   grammar_check --schema SCHEMA_FILE  a JSON Schema, through hl_json_schema_to_gbnf
 * then reads stdin line by line, each line a JSON string literal (the text
 * to match, decoded with cJSON), and prints 1 if the whole text is a
 * sentence of the grammar, else 0, one line per input line. A grammar or
 * schema that does not compile: its error on stderr, exit status 2. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            char *b = realloc(buf, cap *= 2);
            if (!b) free(buf);
            buf = b;
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

int main(int argc, char **argv) {
    int schema = argc == 3 && strcmp(argv[1], "--schema") == 0;
    if (argc != 2 + schema) {
        fprintf(stderr, "usage: grammar_check GRAMMAR_FILE | grammar_check --schema SCHEMA_FILE < LINES\n");
        return 2;
    }
    size_t len;
    char *text = read_file(argv[1 + schema], &len);
    if (!text) {
        fprintf(stderr, "grammar_check: cannot read %s\n", argv[1 + schema]);
        return 2;
    }
    if (schema) {
        char *gbnf;
        if (hl_json_schema_to_gbnf(text, len, &gbnf) != HEARTH_OK) {
            fprintf(stderr, "%s\n", hearth_last_error());
            free(text);
            return 2;
        }
        free(text);
        text = gbnf;
        len = strlen(gbnf);
    }
    hl_grammar *g;
    hearth_status st = hl_grammar_parse(text, len, &g);
    free(text);
    if (st != HEARTH_OK) {
        fprintf(stderr, "%s\n", hearth_last_error());
        return 2;
    }
    size_t cap = 0;
    char *line = NULL;
    ssize_t n;
    int rc = 0;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        cJSON *j = cJSON_ParseWithLength(line, (size_t)n);
        if (!cJSON_IsString(j)) {
            fprintf(stderr, "grammar_check: a line is not a JSON string: %s", line);
            cJSON_Delete(j);
            rc = 2;
            break;
        }
        /* cJSON strings stop at NUL: texts with NUL bytes are not supported here. */
        const char *s = cJSON_GetStringValue(j);
        printf("%d\n", hl_grammar_matches(g, s, strlen(s)) ? 1 : 0);
        cJSON_Delete(j);
    }
    free(line);
    hl_grammar_free(g);
    return rc;
}
