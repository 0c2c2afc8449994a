/* Shared by the tests that replay llama.cpp's records on the tiny
 * random-weight models (test_tiny_models.c, test_context_shift.c): reading
 * a fixture's fields, and opening a model of tests/ with a context. */
#ifndef HEARTH_TESTS_TINY_CHECK_H
#define HEARTH_TESTS_TINY_CHECK_H

#include <stdbool.h>

#include "check.h"
#include "hearth.h"
#include "json_file.h"

/* obj[key] as an int; -1 when it is not a number. */
static inline int json_int(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItem(obj, key);
    return cJSON_IsNumber(v) ? v->valueint : -1;
}

/* Loads tests/<file> and makes a context of n_ctx cells, 2 threads and
 * attention path `flash_attn` (hearth_flash_attn). A failure is recorded
 * (CHECK), nothing is left allocated and false is returned. */
static inline bool tiny_open(const char *file, int n_ctx, int32_t flash_attn, hearth_model **m, hearth_context **ctx) {
    *m = NULL;
    *ctx = NULL;
    hearth_status st = hearth_model_load(check_test_path(file), NULL, m);
    CHECK_MSG(st == HEARTH_OK, "%s: load: %s", file, hearth_last_error());
    if (st != HEARTH_OK) return false;
    hearth_context_params cp = hearth_context_default_params();
    cp.n_ctx = (uint32_t)n_ctx;
    cp.n_threads = 2;
    cp.flash_attn = flash_attn;
    st = hearth_context_init(*m, &cp, ctx);
    CHECK_MSG(st == HEARTH_OK, "%s: context: %s", file, hearth_last_error());
    if (st != HEARTH_OK) {
        hearth_model_free(*m);
        *m = NULL;
        return false;
    }
    return true;
}

/* The fixture's "tokens" into tokens[max]; returns how many it holds (a
 * count over max is recorded as a failure and cut to max). */
static inline int tiny_tokens(const cJSON *ref, int32_t *tokens, int max) {
    const cJSON *tok_json = cJSON_GetObjectItem(ref, "tokens");
    int n = cJSON_GetArraySize(tok_json);
    CHECK(n > 0 && n <= max);
    if (n > max) n = max;
    for (int i = 0; i < n; i++) tokens[i] = cJSON_GetArrayItem(tok_json, i)->valueint;
    return n;
}

#endif
