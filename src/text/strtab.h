/* A string interner: stores distinct byte strings, gives each a dense id in
 * order of first insertion (0, 1, 2, ...), and finds a string's id in O(1)
 * through an open-addressing hash index (linear probing, load <= 1/2). The
 * vocabulary uses one for token texts (id = token id) and one for the byte
 * strings BPE works on. Immutable lookups are thread-safe. */
#ifndef HEARTH_TEXT_STRTAB_H
#define HEARTH_TEXT_STRTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hearth.h"

typedef struct hl_strtab {
    char *pool; /* all strings back to back */
    size_t pool_len, pool_cap;
    size_t *off;    /* [n + 1] string i is pool[off[i], off[i+1]) */
    uint32_t *hash; /* [n] */
    int32_t n, cap; /* strings stored, capacity of off/hash */
    int32_t *index; /* [index_cap] string id or -1; index_cap a power of two */
    size_t index_cap;
} hl_strtab;

/* An empty table; hl_strtab_free() releases it. `expect` sizes it up front. */
hearth_status hl_strtab_init(hl_strtab *t, int32_t expect);
void hl_strtab_free(hl_strtab *t);

/* Adds s (len bytes) unless present. *id receives its id; *added says whether
 * it was new. OUT_OF_MEMORY, or UNSUPPORTED past INT32_MAX strings. */
hearth_status hl_strtab_intern(hl_strtab *t, const char *s, size_t len, int32_t *id, bool *added);

/* The id of s, or -1. */
int32_t hl_strtab_find(const hl_strtab *t, const char *s, size_t len);

/* String `id` (not NUL-terminated) and its length. */
static inline const char *hl_strtab_str(const hl_strtab *t, int32_t id, size_t *len) {
    *len = t->off[id + 1] - t->off[id];
    return t->pool + t->off[id];
}

#endif
