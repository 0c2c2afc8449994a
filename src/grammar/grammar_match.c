/* The grammar matcher: a pushdown recognizer over bytes, like llama.cpp's
 * llama_grammar (a set of stacks of positions in rule alternatives; a stack
 * whose top is a rule reference is expanded into one stack per alternative
 * of that rule before a byte is read; a reference that ends its
 * alternative is not kept below the stack, so right recursion such as
 * `r ::= x r |` does not deepen it). Here stacks are hash-consed node
 * chains (grammar_internal.h): expanding and advancing a stack costs a few
 * node look-ups, not a copy, equal stacks are found by their index, and
 * every node a step visits is marked with the step's epoch so no stack is
 * expanded twice in a step. A character class is read one byte at a time:
 * the stack keeps the character's leading bytes, and each byte must leave
 * some member of the class possible (RFC 3629 forms only: no overlong
 * encodings, surrogates or code points past U+10FFFF). */
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_internal.h"

/* A partial character: bit 31 set, its length L (2..4) in bits 28-29, the
 * continuation bytes still to come in bits 24-25, and the code point bits
 * read so far in bits 0-20. */
#define PARTIAL(acc, rem, len) (0x80000000u | ((uint32_t)(len) << 28) | ((uint32_t)(rem) << 24) | (acc))
#define PARTIAL_LEN(p) (((p) >> 28) & 3)
#define PARTIAL_REM(p) (((p) >> 24) & 3)
#define PARTIAL_ACC(p) ((p)&0x1FFFFF)

#define MAX_NODES (1u << 23) /* 160 MiB of nodes: far past any sane grammar state */

static const uint32_t utf8_min[5] = {0, 0, 0x80, 0x800, 0x10000};

/* Grows *buf (elements of `size` bytes) to at least `need` elements. */
static hearth_status grow(void **buf, uint32_t *cap, uint64_t need, size_t size) {
    if (need <= *cap) return HEARTH_OK;
    uint64_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    if (c > UINT32_MAX) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "grammar: state buffer too large");
    void *p = hl_malloc(c * size);
    if (!p) return HEARTH_ERR_OUT_OF_MEMORY;
    if (*cap) memcpy(p, *buf, (size_t)*cap * size);
    free(*buf);
    *buf = p;
    *cap = (uint32_t)c;
    return HEARTH_OK;
}

static uint32_t node_hash(uint32_t pos, uint32_t parent, uint32_t partial) {
    uint32_t h = pos * 0x9E3779B1u ^ parent * 0x85EBCA6Bu ^ partial * 0xC2B2AE35u;
    return h ^ (h >> 15);
}

static void rehash(hl_grammar_state *s) {
    memset(s->buckets, 0xFF, ((size_t)s->mask + 1) * sizeof *s->buckets);
    /* In index order, so each chain keeps its newest node first (rollback
     * pops from the chain heads). */
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        hl_gnode *n = &s->nodes[i];
        uint32_t h = node_hash(n->pos, n->parent, n->partial) & s->mask;
        n->next = s->buckets[h];
        s->buckets[h] = i;
    }
}

/* The node (pos, parent, partial), made if new. */
static hearth_status intern(hl_grammar_state *s, uint32_t pos, uint32_t parent, uint32_t partial, uint32_t *out) {
    uint32_t h = node_hash(pos, parent, partial);
    for (uint32_t i = s->buckets[h & s->mask]; i != HL_GNIL; i = s->nodes[i].next) {
        const hl_gnode *n = &s->nodes[i];
        if (n->pos == pos && n->parent == parent && n->partial == partial) {
            *out = i;
            return HEARTH_OK;
        }
    }
    if (s->n_nodes >= MAX_NODES)
        return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "grammar: the matcher's stacks grew past %u nodes", MAX_NODES);
    HL_TRY(grow((void **)&s->nodes, &s->cap_nodes, (uint64_t)s->n_nodes + 1, sizeof *s->nodes));
    if (s->n_nodes > s->mask) { /* keep the load factor at most 1 */
        uint32_t *b = hl_malloc(((size_t)s->mask + 1) * 2 * sizeof *b);
        if (!b) return HEARTH_ERR_OUT_OF_MEMORY;
        free(s->buckets);
        s->buckets = b;
        s->mask = s->mask * 2 + 1;
        rehash(s);
    }
    uint32_t i = s->n_nodes++;
    s->nodes[i] = (hl_gnode){pos, parent, partial, s->buckets[h & s->mask], 0};
    s->buckets[h & s->mask] = i;
    *out = i;
    return HEARTH_OK;
}

void hl_gm_rollback(hl_grammar_state *s, uint32_t n_nodes) {
    while (s->n_nodes > n_nodes) {
        const hl_gnode *n = &s->nodes[--s->n_nodes];
        s->buckets[node_hash(n->pos, n->parent, n->partial) & s->mask] = n->next;
    }
}

static void next_epoch(hl_grammar_state *s) {
    if (++s->epoch == UINT32_MAX) {
        for (uint32_t i = 0; i < s->n_nodes; i++) s->nodes[i].epoch = 0;
        s->epoch = 1;
    }
}

/* Adds node n to the output set unless this step has it already. */
static hearth_status emit(hl_grammar_state *s, uint32_t n) {
    if (s->nodes[n].epoch == s->epoch) return HEARTH_OK;
    s->nodes[n].epoch = s->epoch;
    HL_TRY(grow((void **)&s->sets, &s->cap_sets, (uint64_t)s->n_sets + 1, sizeof *s->sets));
    s->sets[s->n_sets++] = n;
    return HEARTH_OK;
}

static hearth_status push_work(hl_grammar_state *s, uint32_t pos, uint32_t parent) {
    HL_TRY(grow((void **)&s->work, &s->cap_work, (uint64_t)s->n_work + 2, sizeof *s->work));
    s->work[s->n_work++] = pos;
    s->work[s->n_work++] = parent;
    return HEARTH_OK;
}

/* Expands the queued (pos, parent) positions into stacks whose tops read a
 * byte, appended to s->sets; *done when one is the empty stack. */
static hearth_status expand(hl_grammar_state *s, uint32_t out_from, bool *done) {
    const hl_grammar *g = s->g;
    while (s->n_work) {
        uint32_t parent = s->work[--s->n_work];
        uint32_t pos = s->work[--s->n_work];
        /* The end of an alternative returns to the node below. Nodes below
         * never sit on an END (a reference that ends its alternative pushes
         * nothing), so this runs at most once. */
        while (g->elems[pos].type == HL_GE_END) {
            if (parent == HL_GNIL) break;
            pos = s->nodes[parent].pos;
            parent = s->nodes[parent].parent;
        }
        if (g->elems[pos].type == HL_GE_END) {
            *done = true;
            continue;
        }
        uint32_t n;
        HL_TRY(intern(s, pos, parent, 0, &n));
        if (s->nodes[n].epoch == s->epoch) continue;
        hl_gelem e = g->elems[pos];
        if (e.type == HL_GE_REF) {
            s->nodes[n].epoch = s->epoch;
            uint32_t below = parent;
            if (g->elems[pos + 1].type != HL_GE_END) HL_TRY(intern(s, pos + 1, parent, 0, &below));
            for (uint32_t a = g->rule_alts[e.value]; a < g->rule_alts[e.value + 1]; a++)
                HL_TRY(push_work(s, g->alt_start[a], below));
        } else if (e.type == HL_GE_BYTE || g->classes[e.value].n_ranges) {
            HL_TRY(emit(s, n));
            if (s->n_sets - out_from > HL_GRAMMAR_MAX_STACKS)
                return hl_fail(HEARTH_ERR_INVALID_ARG,
                               "grammar: more than %u ways to go on at one byte; the grammar is too ambiguous "
                               "(alternatives that match the same text)",
                               HL_GRAMMAR_MAX_STACKS);
        }
    }
    return HEARTH_OK;
}

hearth_status hl_gm_step(hl_grammar_state *s, uint32_t in, uint32_t n_in, uint8_t b, bool *done) {
    const hl_grammar *g = s->g;
    uint32_t out_from = s->n_sets;
    next_epoch(s);
    *done = false;
    s->n_work = 0;
    hearth_status st = HEARTH_OK;
    for (uint32_t k = 0; k < n_in && st == HEARTH_OK; k++) {
        hl_gnode t = s->nodes[s->sets[in + k]];
        hl_gelem e = g->elems[t.pos];
        if (e.type == HL_GE_BYTE) {
            if (b == e.value) st = push_work(s, t.pos + 1, t.parent);
            continue;
        }
        const hl_gclass *c = &g->classes[e.value];
        uint32_t acc, rem, len;
        if (!t.partial) {
            if (!(c->lead[b >> 6] >> (b & 63) & 1)) continue;
            if (b < 0x80) { /* lead holds ASCII members exactly */
                st = push_work(s, t.pos + 1, t.parent);
                continue;
            }
            len = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2;
            acc = b & (0x7Fu >> len);
            rem = len - 1;
        } else {
            if ((b & 0xC0) != 0x80) continue;
            len = PARTIAL_LEN(t.partial);
            rem = PARTIAL_REM(t.partial) - 1;
            acc = PARTIAL_ACC(t.partial) << 6 | (b & 0x3Fu);
            if (rem == 0) {
                if (acc >= utf8_min[len] && hl_gclass_has(c, acc)) st = push_work(s, t.pos + 1, t.parent);
                continue;
            }
            /* Some member must still start with these bytes. */
            uint32_t lo = acc << (6 * rem), hi = lo | ((1u << (6 * rem)) - 1);
            if (lo < utf8_min[len]) lo = utf8_min[len];
            if (hi > 0x10FFFF) hi = 0x10FFFF;
            if (lo > hi || !hl_gclass_overlaps(c, lo, hi)) continue;
        }
        uint32_t n;
        st = intern(s, t.pos, t.parent, PARTIAL(acc, rem, len), &n);
        if (st == HEARTH_OK) st = emit(s, n);
    }
    if (st == HEARTH_OK) st = expand(s, out_from, done);
    return st;
}

void hl_gm_next_bytes(const hl_grammar_state *s, uint32_t in, uint32_t n_in, uint64_t bytes[4]) {
    memset(bytes, 0, 4 * sizeof *bytes);
    for (uint32_t k = 0; k < n_in; k++) {
        const hl_gnode *t = &s->nodes[s->sets[in + k]];
        hl_gelem e = s->g->elems[t->pos];
        if (e.type == HL_GE_BYTE) {
            bytes[e.value >> 6] |= 1ull << (e.value & 63);
        } else if (t->partial) {
            bytes[2] |= ~0ull; /* 0x80..0xBF */
        } else {
            for (int i = 0; i < 4; i++) bytes[i] |= s->g->classes[e.value].lead[i];
        }
    }
}

hearth_status hl_grammar_state_init(const hl_grammar *g, hl_grammar_state **out) {
    *out = NULL;
    hl_grammar_state *s = hl_calloc(1, sizeof *s);
    if (!s) return HEARTH_ERR_OUT_OF_MEMORY;
    s->g = g;
    s->mask = 255;
    s->buckets = hl_malloc(256 * sizeof *s->buckets);
    s->compact_at = 4096;
    hearth_status st = s->buckets ? HEARTH_OK : HEARTH_ERR_OUT_OF_MEMORY;
    if (st == HEARTH_OK) {
        memset(s->buckets, 0xFF, 256 * sizeof *s->buckets);
        next_epoch(s);
        for (uint32_t a = g->rule_alts[g->root]; a < g->rule_alts[g->root + 1] && st == HEARTH_OK; a++)
            st = push_work(s, g->alt_start[a], HL_GNIL);
        if (st == HEARTH_OK) st = expand(s, 0, &s->cur_done);
        s->n_cur = s->n_sets;
    }
    if (st != HEARTH_OK) {
        hl_grammar_state_free(s);
        return st;
    }
    *out = s;
    return HEARTH_OK;
}

void hl_grammar_state_free(hl_grammar_state *s) {
    if (!s) return;
    free(s->nodes);
    free(s->buckets);
    free(s->sets);
    free(s->work);
    free(s->spare);
    free(s->remap);
    free(s);
}

hearth_status hl_grammar_state_copy(hl_grammar_state *dst, const hl_grammar_state *src) {
    if (dst == src) return HEARTH_OK;
    /* New buffers first, so a failure leaves dst as it was. */
    hl_gnode *nodes = NULL;
    uint32_t *buckets = NULL, *sets = NULL;
    bool new_nodes = dst->cap_nodes < src->n_nodes, new_buckets = dst->mask != src->mask,
         new_sets = dst->cap_sets < src->n_cur;
    if (new_nodes) nodes = hl_malloc(((size_t)src->cap_nodes ? src->cap_nodes : 1) * sizeof *nodes);
    if (new_buckets) buckets = hl_malloc(((size_t)src->mask + 1) * sizeof *buckets);
    if (new_sets) sets = hl_malloc(((size_t)src->cap_sets ? src->cap_sets : 1) * sizeof *sets);
    if ((new_nodes && !nodes) || (new_buckets && !buckets) || (new_sets && !sets)) {
        free(nodes);
        free(buckets);
        free(sets);
        return HEARTH_ERR_OUT_OF_MEMORY;
    }
    if (new_nodes) {
        free(dst->nodes);
        dst->nodes = nodes;
        dst->cap_nodes = src->cap_nodes;
    }
    if (new_buckets) {
        free(dst->buckets);
        dst->buckets = buckets;
        dst->mask = src->mask;
    }
    if (new_sets) {
        free(dst->sets);
        dst->sets = sets;
        dst->cap_sets = src->cap_sets;
    }
    dst->g = src->g;
    if (src->n_nodes) memcpy(dst->nodes, src->nodes, (size_t)src->n_nodes * sizeof *dst->nodes);
    memcpy(dst->buckets, src->buckets, ((size_t)src->mask + 1) * sizeof *dst->buckets);
    if (src->n_cur) memcpy(dst->sets, src->sets, (size_t)src->n_cur * sizeof *dst->sets);
    dst->n_nodes = src->n_nodes;
    dst->n_sets = dst->n_cur = src->n_cur;
    dst->cur_done = src->cur_done;
    dst->epoch = src->epoch;
    dst->compact_at = src->compact_at;
    return HEARTH_OK;
}

/* Keeps only the nodes of the stacks sets[from, from + n) (renumbered,
 * oldest first) and makes those stacks the current set. */
static hearth_status compact(hl_grammar_state *s, uint32_t from, uint32_t n) {
    HL_TRY(grow((void **)&s->spare, &s->cap_spare, s->n_nodes, sizeof *s->spare));
    HL_TRY(grow((void **)&s->remap, &s->cap_remap, s->n_nodes, sizeof *s->remap));
    memset(s->remap, 0xFF, (size_t)s->n_nodes * sizeof *s->remap);
    uint32_t k = 0;
    s->n_work = 0;
    for (uint32_t i = 0; i < n; i++) {
        /* Queue the not yet kept nodes of this stack, top first, then keep
         * them bottom first so a parent is numbered before its children. */
        for (uint32_t t = s->sets[from + i]; t != HL_GNIL && s->remap[t] == HL_GNIL; t = s->nodes[t].parent)
            HL_TRY(push_work(s, t, 0));
        while (s->n_work) {
            s->n_work -= 2;
            uint32_t t = s->work[s->n_work];
            hl_gnode nd = s->nodes[t];
            if (nd.parent != HL_GNIL) nd.parent = s->remap[nd.parent];
            nd.epoch = 0;
            s->spare[k] = nd;
            s->remap[t] = k++;
        }
    }
    for (uint32_t i = 0; i < n; i++) s->sets[i] = s->remap[s->sets[from + i]];
    hl_gnode *old = s->nodes;
    s->nodes = s->spare;
    s->spare = old;
    uint32_t cap = s->cap_nodes;
    s->cap_nodes = s->cap_spare;
    s->cap_spare = cap;
    s->n_nodes = k;
    s->epoch = 1;
    rehash(s);
    s->n_sets = s->n_cur = n;
    s->compact_at = k * 4 > 4096 ? k * 4 : 4096;
    return HEARTH_OK;
}

bool hl_grammar_accept(hl_grammar_state *s, const char *bytes, size_t n) {
    uint32_t keep_nodes = s->n_nodes, keep_sets = s->n_sets;
    uint32_t in = 0, n_in = s->n_cur;
    bool done = s->cur_done;
    for (size_t i = 0; i < n; i++) {
        uint32_t out = s->n_sets;
        if (hl_gm_step(s, in, n_in, (uint8_t)bytes[i], &done) != HEARTH_OK) goto fail;
        uint32_t n_out = s->n_sets - out;
        if (n_out == 0 && !done) goto fail;
        /* Only the newest set is needed: move it just past the current one. */
        memmove(s->sets + keep_sets, s->sets + out, (size_t)n_out * sizeof *s->sets);
        s->n_sets = keep_sets + n_out;
        in = keep_sets;
        n_in = n_out;
    }
    if (n == 0) return true;
    if (s->n_nodes > s->compact_at) {
        if (compact(s, in, n_in) != HEARTH_OK) goto fail;
    } else {
        memmove(s->sets, s->sets + in, (size_t)n_in * sizeof *s->sets);
        s->n_sets = s->n_cur = n_in;
    }
    s->cur_done = done;
    return true;
fail:
    hl_gm_rollback(s, keep_nodes);
    s->n_sets = keep_sets;
    return false;
}

bool hl_grammar_is_complete(const hl_grammar_state *s) { return s->cur_done; }

bool hl_grammar_can_continue(const hl_grammar_state *s) { return s->n_cur > 0; }

bool hl_grammar_matches(const hl_grammar *g, const char *str, size_t n) {
    hl_grammar_state *s;
    if (hl_grammar_state_init(g, &s) != HEARTH_OK) return false;
    bool ok = true;
    /* In pieces, so the state compacts its nodes between them. */
    for (size_t i = 0; i < n && ok; i += 256) ok = hl_grammar_accept(s, str + i, n - i < 256 ? n - i : 256);
    ok = ok && hl_grammar_is_complete(s);
    hl_grammar_state_free(s);
    return ok;
}
