/* Minimal assertion helpers shared by the C tests (and the CUDA host tests,
 * so it stays valid C++): CHECK records a failure with file and line and
 * continues; tests end with `return check_report();`. */
#ifndef HEARTH_TESTS_CHECK_H
#define HEARTH_TESTS_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        check_count++;                                                                                                 \
        if (!(cond)) {                                                                                                 \
            check_failures++;                                                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                                   \
        }                                                                                                              \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                                           \
    do {                                                                                                               \
        check_count++;                                                                                                 \
        if (!(cond)) {                                                                                                 \
            check_failures++;                                                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);                                   \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fputc('\n', stderr);                                                                                       \
        }                                                                                                              \
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

/* splitmix64 (Steele, Lea, Flood 2014): the next value of the generator
 * whose state is *state; each test seeds its own state. */
static inline uint64_t check_splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Little-endian u32 at p (fixture files). */
static inline uint32_t check_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The whole file at `path` (caller frees), *size its length; NULL if it
 * cannot be read or is empty. */
static inline uint8_t *check_read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        const long len = ftell(f);
        buf = len > 0 ? (uint8_t *)malloc((size_t)len) : NULL; /* cast: C++ tests include this too */
        rewind(f);
        if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
            free(buf);
            buf = NULL;
        }
        *size = len > 0 ? (size_t)len : 0;
    }
    fclose(f);
    return buf;
}

#endif
