/* Minimal assertion helpers shared by the C tests: CHECK records a failure
 * with file and line and continues; tests end with `return check_report();`. */
#ifndef HEARTH_TESTS_CHECK_H
#define HEARTH_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                             \
    do {                                                                        \
        check_count++;                                                          \
        if (!(cond)) {                                                          \
            check_failures++;                                                   \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                       \
    } while (0)

#define CHECK_MSG(cond, ...)                                                    \
    do {                                                                        \
        check_count++;                                                          \
        if (!(cond)) {                                                          \
            check_failures++;                                                   \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
        }                                                                       \
    } while (0)

static inline int check_report(void) {
    printf("%d checks, %d failed\n", check_count, check_failures);
    return check_failures ? 1 : 0;
}

/* The path of a model named by environment variable `env` (set by
 * tests/CMakeLists.txt), or exit 77 (skip) when it is missing. */
static inline const char *check_model_path_from(const char *env) {
    const char *p = getenv(env);
    FILE *f = p ? fopen(p, "rb") : NULL;
    if (!f) {
        printf("SKIP: model not found (%s); run scripts/fetch_model.sh\n", p ? p : "environment variable unset");
        exit(77);
    }
    fclose(f);
    return p;
}

/* The default model (HEARTH_MODEL), or exit 77 (skip). */
static inline const char *check_model_path(void) { return check_model_path_from("HEARTH_MODEL"); }

/* A path under the tests/ folder (fixtures). Returns a static buffer. */
static inline const char *check_test_path(const char *rel) {
    static char buf[4096];
    const char *dir = getenv("HEARTH_TEST_DIR");
    snprintf(buf, sizeof buf, "%s/%s", dir ? dir : "tests", rel);
    return buf;
}

#endif
