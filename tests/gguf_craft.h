/* Builds GGUF images in memory for the reader's tests: a growable byte buffer
 * with writers for the header, metadata of every type and tensor infos, laid
 * out as the spec says (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md).
 * The header counts are patched in by cr_finish(); tests that craft hostile
 * files overwrite any field afterwards with cr_put_u64()/cr_put_u32(). */
#ifndef HEARTH_TESTS_GGUF_CRAFT_H
#define HEARTH_TESTS_GGUF_CRAFT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"

typedef struct craft {
    uint8_t *p;
    size_t len, cap;
    uint64_t n_kv, n_tensors; /* counted as written, patched by cr_finish() */
} craft;

#define CR_N_TENSORS_AT 8 /* header offsets of the counts */
#define CR_N_KV_AT 16

static inline void cr_bytes(craft *c, const void *src, size_t n) {
    if (c->len + n > c->cap) {
        size_t cap = c->cap ? c->cap : 256;
        while (cap < c->len + n) cap *= 2;
        uint8_t *p = realloc(c->p, cap);
        if (!p) abort();
        c->p = p;
        c->cap = cap;
    }
    memcpy(c->p + c->len, src, n);
    c->len += n;
}

static inline void cr_u8(craft *c, uint8_t v) { cr_bytes(c, &v, 1); }
static inline void cr_u16(craft *c, uint16_t v) { cr_bytes(c, &v, 2); }
static inline void cr_u32(craft *c, uint32_t v) { cr_bytes(c, &v, 4); }
static inline void cr_u64(craft *c, uint64_t v) { cr_bytes(c, &v, 8); }
static inline void cr_i64(craft *c, int64_t v) { cr_bytes(c, &v, 8); }
static inline void cr_f32(craft *c, float v) { cr_bytes(c, &v, 4); }
static inline void cr_f64(craft *c, double v) { cr_bytes(c, &v, 8); }

static inline void cr_str(craft *c, const char *s) {
    cr_u64(c, strlen(s));
    cr_bytes(c, s, strlen(s));
}

static inline void cr_put_u32(craft *c, size_t at, uint32_t v) { memcpy(c->p + at, &v, 4); }
static inline void cr_put_u64(craft *c, size_t at, uint64_t v) { memcpy(c->p + at, &v, 8); }

/* Header with placeholder counts. */
static inline void cr_begin(craft *c, uint32_t version) {
    memset(c, 0, sizeof *c);
    cr_bytes(c, "GGUF", 4);
    cr_u32(c, version);
    cr_u64(c, 0);
    cr_u64(c, 0);
}

/* Key and value type; the caller writes the value. */
static inline void cr_key(craft *c, const char *key, gguf_type type) {
    cr_str(c, key);
    cr_u32(c, type);
    c->n_kv++;
}

/* Array header; the caller writes n elements. */
static inline void cr_arr(craft *c, gguf_type elem_type, uint64_t n) {
    cr_u32(c, elem_type);
    cr_u64(c, n);
}

static inline void cr_kv_u32(craft *c, const char *key, uint32_t v) {
    cr_key(c, key, GGUF_TYPE_UINT32);
    cr_u32(c, v);
}

static inline void cr_kv_str(craft *c, const char *key, const char *v) {
    cr_key(c, key, GGUF_TYPE_STRING);
    cr_str(c, v);
}

static inline void cr_str_n(craft *c, const char *s, uint64_t n) {
    cr_u64(c, n);
    cr_bytes(c, s, (size_t)n);
}

static inline void cr_kv_bool(craft *c, const char *key, bool b) {
    cr_key(c, key, GGUF_TYPE_BOOL);
    cr_u8(c, b);
}

static inline void cr_kv_strs(craft *c, const char *key, const char *const *s, int n) {
    cr_key(c, key, GGUF_TYPE_ARRAY);
    cr_arr(c, GGUF_TYPE_STRING, (uint64_t)n);
    for (int i = 0; i < n; i++) cr_str(c, s[i]);
}

static inline void cr_kv_copy_strs(craft *c, const char *key, const gguf_array *a) {
    cr_key(c, key, GGUF_TYPE_ARRAY);
    cr_arr(c, GGUF_TYPE_STRING, a->n);
    for (uint64_t i = 0; i < a->n; i++) cr_str_n(c, a->strs[i].data, a->strs[i].len);
}

/* An array of n 4-byte values (int32, uint32, float32) read from v. */
static inline void cr_kv_arr32(craft *c, const char *key, gguf_type elem_type, const void *v, uint64_t n) {
    cr_key(c, key, GGUF_TYPE_ARRAY);
    cr_arr(c, elem_type, n);
    cr_bytes(c, v, (size_t)n * 4);
}

static inline void cr_tensor(craft *c, const char *name, uint32_t type, uint32_t n_dims, const int64_t *ne,
                             uint64_t offset) {
    cr_str(c, name);
    cr_u32(c, n_dims);
    for (uint32_t d = 0; d < n_dims; d++) cr_i64(c, ne[d]);
    cr_u32(c, type);
    cr_u64(c, offset);
    c->n_tensors++;
}

/* Byte j of every crafted data section. */
static inline uint8_t cr_pattern(uint64_t j) { return (uint8_t)(j * 7 + 3); }

/* Patches the counts, pads to `alignment` and appends `data_bytes` of data;
 * the image ends exactly there. */
static inline void cr_finish(craft *c, uint32_t alignment, uint64_t data_bytes) {
    cr_put_u64(c, CR_N_TENSORS_AT, c->n_tensors);
    cr_put_u64(c, CR_N_KV_AT, c->n_kv);
    while (c->len % alignment) cr_u8(c, 0);
    for (uint64_t j = 0; j < data_bytes; j++) cr_u8(c, cr_pattern(j));
}

static inline void cr_free(craft *c) {
    free(c->p);
    memset(c, 0, sizeof *c);
}

#endif
