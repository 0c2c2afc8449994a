/* The token trie and the allowed-token walk. The trie holds every token's
 * bytes; its nodes are numbered in depth-first (pre)order, which is also
 * the byte-wise sorted order of the tokens, so a node needs only its edge
 * byte, the end of its subtree (its first child is the next node, its next
 * sibling the subtree's end) and where its tokens start in the sorted
 * list: 9 bytes a node, built from one sort. The walk carries the grammar's
 * stack set down the trie, reading one byte per edge and undoing it on the
 * way back (the matcher's nodes are only appended, so undoing is a
 * truncation), and skips a whole subtree at the first byte no stack can
 * read: the cost follows the allowed tokens' bytes, not the vocabulary. */
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_internal.h"

struct hl_token_trie {
    uint8_t *byte; /* [n_nodes] the byte on the edge into the node (root: 0) */
    uint32_t *end; /* [n_nodes] one past the last node of the node's subtree */
    uint32_t *tok; /* [n_nodes + 1] the node's own tokens are ids[tok[i], tok[i + 1]) */
    int32_t *ids;  /* [n_tokens] token ids in byte-string order */
    uint32_t n_nodes;
    int32_t n_tokens;
    uint32_t max_depth; /* the longest token, in bytes */
};

typedef struct piece {
    const uint8_t *p;
    size_t len;
    int32_t id;
} piece;

static int cmp_piece(const void *a, const void *b) {
    const piece *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = n ? memcmp(x->p, y->p, n) : 0;
    if (c) return c;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static size_t common_prefix(const piece *a, const piece *b) {
    size_t n = a->len < b->len ? a->len : b->len, i = 0;
    while (i < n && a->p[i] == b->p[i]) i++;
    return i;
}

void hl_token_trie_free(hl_token_trie *t) {
    if (!t) return;
    free(t->byte);
    free(t->end);
    free(t->tok);
    free(t->ids);
    free(t);
}

hearth_status hl_token_trie_build(const char *const *pieces, const size_t *lens, int32_t n_tokens,
                                  hl_token_trie **out) {
    *out = NULL;
    if (n_tokens < 0 || (n_tokens && (!pieces || !lens)))
        return hl_fail(HEARTH_ERR_INVALID_ARG, "hl_token_trie_build: bad vocabulary arguments");
    piece *ps = hl_malloc((size_t)(n_tokens ? n_tokens : 1) * sizeof *ps);
    hl_token_trie *t = hl_calloc(1, sizeof *t);
    if (!ps || !t) {
        free(ps);
        free(t);
        return HEARTH_ERR_OUT_OF_MEMORY;
    }
    uint64_t n_nodes = 1;
    size_t max_len = 0;
    for (int32_t i = 0; i < n_tokens; i++) {
        ps[i] = (piece){(const uint8_t *)pieces[i], lens[i], i};
        if (lens[i] > max_len) max_len = lens[i];
    }
    qsort(ps, (size_t)n_tokens, sizeof *ps, cmp_piece);
    for (int32_t i = 0; i < n_tokens; i++) n_nodes += ps[i].len - (i ? common_prefix(&ps[i - 1], &ps[i]) : 0);
    if (n_nodes >= UINT32_MAX || max_len >= UINT32_MAX) {
        free(ps);
        hl_token_trie_free(t);
        return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "token trie: vocabulary too large (%llu nodes)",
                       (unsigned long long)n_nodes);
    }
    t->n_nodes = (uint32_t)n_nodes;
    t->n_tokens = n_tokens;
    t->max_depth = (uint32_t)max_len;
    t->byte = hl_malloc(n_nodes);
    t->end = hl_malloc(n_nodes * sizeof *t->end);
    t->tok = hl_malloc((n_nodes + 1) * sizeof *t->tok);
    t->ids = hl_malloc((size_t)(n_tokens ? n_tokens : 1) * sizeof *t->ids);
    uint32_t *path = hl_malloc((max_len + 1) * sizeof *path); /* the nodes on the current string, by depth */
    if (!t->byte || !t->end || !t->tok || !t->ids || !path) {
        free(ps);
        free(path);
        hl_token_trie_free(t);
        return HEARTH_ERR_OUT_OF_MEMORY;
    }
    uint32_t n = 1;
    size_t depth = 0; /* path[0, depth] are open nodes */
    t->byte[0] = 0;
    t->tok[0] = 0;
    path[0] = 0;
    for (int32_t i = 0; i < n_tokens; i++) {
        const piece *s = &ps[i];
        t->ids[i] = s->id;
        size_t l = i ? common_prefix(&ps[i - 1], s) : 0;
        for (; depth > l; depth--) t->end[path[depth]] = n; /* subtrees the sorted order has left */
        for (size_t d = l + 1; d <= s->len; d++) {
            t->byte[n] = s->p[d - 1];
            t->tok[n] = (uint32_t)i;
            path[d] = n++;
        }
        if (s->len > depth) depth = s->len;
    }
    for (;; depth--) {
        t->end[path[depth]] = n;
        if (depth == 0) break;
    }
    t->tok[n] = (uint32_t)n_tokens;
    free(ps);
    free(path);
    *out = t;
    return HEARTH_OK;
}

typedef struct frame {
    uint32_t node, child;           /* trie node, next child to try */
    uint32_t in, n_in;              /* its stack set in s->sets */
    uint32_t keep_nodes, keep_sets; /* the matcher's sizes before this node's byte */
    uint64_t next[4];               /* bytes the set might read */
} frame;

hearth_status hl_grammar_allowed_tokens(const hl_grammar_state *s0, const hl_token_trie *t, uint8_t *allowed) {
    memset(allowed, 0, (size_t)t->n_tokens);
    /* A scratch copy: the walk appends to the matcher's buffers. */
    hl_grammar_state *s = hl_calloc(1, sizeof *s);
    frame *fr = hl_malloc(((size_t)t->max_depth + 1) * sizeof *fr);
    hearth_status st = s && fr ? hl_grammar_state_copy(s, s0) : HEARTH_ERR_OUT_OF_MEMORY;
    if (st != HEARTH_OK) {
        free(fr);
        hl_grammar_state_free(s);
        return st;
    }
    uint32_t depth = 0;
    fr[0] = (frame){.node = 0, .child = 1, .in = 0, .n_in = s->n_cur, .keep_nodes = s->n_nodes, .keep_sets = s->n_sets};
    hl_gm_next_bytes(s, 0, s->n_cur, fr[0].next);
    for (;;) {
        frame *f = &fr[depth];
        if (f->child >= t->end[f->node]) {
            hl_gm_rollback(s, f->keep_nodes);
            s->n_sets = f->keep_sets;
            if (depth == 0) break;
            depth--;
            continue;
        }
        uint32_t j = f->child;
        f->child = t->end[j];
        uint8_t b = t->byte[j];
        if (!(f->next[b >> 6] >> (b & 63) & 1)) continue;
        uint32_t keep_nodes = s->n_nodes, keep_sets = s->n_sets;
        bool done;
        st = hl_gm_step(s, f->in, f->n_in, b, &done);
        if (st != HEARTH_OK) break;
        uint32_t n_out = s->n_sets - keep_sets;
        if (n_out == 0 && !done) {
            hl_gm_rollback(s, keep_nodes);
            s->n_sets = keep_sets;
            continue;
        }
        for (uint32_t k = t->tok[j]; k < t->tok[j + 1]; k++) allowed[t->ids[k]] = 1;
        if (n_out > 0 && j + 1 < t->end[j]) {
            frame *c = &fr[++depth];
            *c = (frame){.node = j,
                         .child = j + 1,
                         .in = keep_sets,
                         .n_in = n_out,
                         .keep_nodes = keep_nodes,
                         .keep_sets = keep_sets};
            hl_gm_next_bytes(s, c->in, c->n_in, c->next);
        } else {
            hl_gm_rollback(s, keep_nodes);
            s->n_sets = keep_sets;
        }
    }
    free(fr);
    hl_grammar_state_free(s);
    return st;
}
