/* String interner with an open-addressing hash index (see strtab.h). */
#include "text/strtab.h"

#include <stdlib.h>
#include <string.h>

#include "base/status.h"

/* FNV-1a, 32 bit (http://www.isthe.com/chongo/tech/comp/fnv/). */
static uint32_t str_hash(const char *s, size_t len) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

static size_t slot_of(const hl_strtab *t, uint32_t hash) {
    /* Fibonacci hashing spreads FNV's low bits over the index. */
    return (size_t)((hash * 2654435769u) & (t->index_cap - 1));
}

static bool same(const hl_strtab *t, int32_t id, uint32_t hash, const char *s, size_t len) {
    size_t n;
    const char *str = hl_strtab_str(t, id, &n);
    return t->hash[id] == hash && n == len && memcmp(str, s, len) == 0;
}

static size_t find_slot(const hl_strtab *t, const char *s, size_t len, uint32_t hash) {
    size_t i = slot_of(t, hash);
    while (t->index[i] >= 0 && !same(t, t->index[i], hash, s, len)) i = (i + 1) & (t->index_cap - 1);
    return i;
}

static hearth_status rebuild_index(hl_strtab *t, size_t cap) {
    int32_t *index = hl_malloc(cap * sizeof *index);
    if (!index) return HEARTH_ERR_OUT_OF_MEMORY;
    memset(index, 0xFF, cap * sizeof *index); /* all -1 */
    free(t->index);
    t->index = index;
    t->index_cap = cap;
    for (int32_t id = 0; id < t->n; id++) {
        size_t i = slot_of(t, t->hash[id]);
        while (index[i] >= 0) i = (i + 1) & (cap - 1);
        index[i] = id;
    }
    return HEARTH_OK;
}

static hearth_status grow_ids(hl_strtab *t) {
    if (t->cap == INT32_MAX) return hl_fail(HEARTH_ERR_UNSUPPORTED, "the vocabulary has more than 2^31 strings");
    int32_t cap = t->cap > INT32_MAX / 2 ? INT32_MAX : t->cap * 2;
    size_t *off = realloc(t->off, ((size_t)cap + 1) * sizeof *off);
    if (!off) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory growing a string table to %d strings", cap);
    t->off = off;
    uint32_t *hash = realloc(t->hash, (size_t)cap * sizeof *hash);
    if (!hash) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory growing a string table to %d strings", cap);
    t->hash = hash;
    t->cap = cap;
    return HEARTH_OK;
}

static hearth_status reserve_pool(hl_strtab *t, size_t len) {
    if (t->pool_cap - t->pool_len >= len) return HEARTH_OK;
    size_t cap = t->pool_cap * 2 > t->pool_len + len ? t->pool_cap * 2 : t->pool_len + len;
    char *pool = realloc(t->pool, cap);
    if (!pool) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory growing a string pool to %zu bytes", cap);
    t->pool = pool;
    t->pool_cap = cap;
    return HEARTH_OK;
}

hearth_status hl_strtab_init(hl_strtab *t, int32_t expect) {
    memset(t, 0, sizeof *t);
    t->cap = expect > 16 ? expect : 16;
    t->off = hl_malloc(((size_t)t->cap + 1) * sizeof *t->off);
    t->hash = hl_malloc((size_t)t->cap * sizeof *t->hash);
    t->pool_cap = (size_t)t->cap * 8;
    t->pool = hl_malloc(t->pool_cap);
    if (!t->off || !t->hash || !t->pool) {
        hl_strtab_free(t);
        return HEARTH_ERR_OUT_OF_MEMORY;
    }
    t->off[0] = 0;
    size_t index_cap = 32;
    while (index_cap < (size_t)t->cap * 2) index_cap *= 2;
    hearth_status st = rebuild_index(t, index_cap);
    if (st != HEARTH_OK) hl_strtab_free(t);
    return st;
}

void hl_strtab_free(hl_strtab *t) {
    free(t->pool);
    free(t->off);
    free(t->hash);
    free(t->index);
    memset(t, 0, sizeof *t);
}

hearth_status hl_strtab_intern(hl_strtab *t, const char *s, size_t len, int32_t *id, bool *added) {
    uint32_t hash = str_hash(s, len);
    size_t slot = find_slot(t, s, len, hash);
    *added = t->index[slot] < 0;
    if (!*added) {
        *id = t->index[slot];
        return HEARTH_OK;
    }
    if (t->n == t->cap) HL_TRY(grow_ids(t));
    HL_TRY(reserve_pool(t, len));
    if (len) memcpy(t->pool + t->pool_len, s, len);
    t->pool_len += len;
    t->hash[t->n] = hash;
    t->off[t->n + 1] = t->pool_len;
    *id = t->n++;
    if ((size_t)t->n * 2 > t->index_cap) return rebuild_index(t, t->index_cap * 2);
    t->index[slot] = *id;
    return HEARTH_OK;
}

int32_t hl_strtab_find(const hl_strtab *t, const char *s, size_t len) {
    return t->index[find_slot(t, s, len, str_hash(s, len))];
}
