/* Reads a JSON fixture into a cJSON tree (tests only). */
#ifndef HEARTH_TESTS_JSON_FILE_H
#define HEARTH_TESTS_JSON_FILE_H

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

/* Parses the file at `path`; NULL (with a message) if it cannot be read or parsed. */
static inline cJSON *json_file_read(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open fixture %s\n", path);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    if (!buf || got != (size_t)n) {
        free(buf);
        fprintf(stderr, "cannot read fixture %s\n", path);
        return NULL;
    }
    buf[n] = '\0';
    cJSON *root = cJSON_Parse(buf);
    free(buf);
    if (!root) fprintf(stderr, "fixture %s is not valid JSON\n", path);
    return root;
}

#endif
