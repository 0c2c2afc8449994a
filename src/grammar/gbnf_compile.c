/* From parsed GBNF rules to the compiled grammar: the checks that need the
 * whole grammar (every referenced rule defined, a `root` rule, no left
 * recursion) and the flat element arrays the matcher walks; plus the
 * code point classes' queries. Left recursion is refused because the
 * matcher expands a rule reference before reading a byte: a rule that can
 * reach itself without consuming a byte would expand forever (llama.cpp
 * refuses it too, llama_grammar_detect_left_recursion; here "can be empty"
 * is computed exactly, through rules that are empty only indirectly). */
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_internal.h"

bool hl_gclass_overlaps(const hl_gclass *c, uint32_t lo, uint32_t hi) {
    /* The first range whose end is >= lo, by binary search. */
    uint32_t a = 0, b = c->n_ranges;
    while (a < b) {
        uint32_t m = (a + b) / 2;
        if (c->ranges[2 * m + 1] < lo) a = m + 1;
        else b = m;
    }
    return a < c->n_ranges && c->ranges[2 * a] <= hi;
}

bool hl_gclass_has(const hl_gclass *c, uint32_t cp) { return hl_gclass_overlaps(c, cp, cp); }

void hl_gclass_fill_lead(hl_gclass *c) {
    memset(c->lead, 0, sizeof c->lead);
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t lo, hi;
        if (b < 0x80) {
            lo = hi = b;
        } else if (b >= 0xC2 && b <= 0xDF) { /* RFC 3629: C0, C1 would be overlong */
            lo = (b & 0x1F) << 6;
            hi = lo | 0x3F;
        } else if (b >= 0xE0 && b <= 0xEF) {
            lo = (b & 0x0F) << 12;
            hi = lo | 0xFFF;
            if (lo < 0x800) lo = 0x800;
        } else if (b >= 0xF0 && b <= 0xF4) {
            lo = (b & 0x07) << 18;
            hi = lo | 0x3FFFF;
            if (lo < 0x10000) lo = 0x10000;
            if (hi > 0x10FFFF) hi = 0x10FFFF;
        } else {
            continue;
        }
        if (hl_gclass_overlaps(c, lo, hi)) c->lead[b >> 6] |= 1ull << (b & 63);
    }
}

/* Which rules can match the empty string: a fixed point over all rules. */
static bool *nullable_rules(const hl_gbnf *p) {
    bool *nul = hl_calloc(p->n_rules ? p->n_rules : 1, sizeof *nul);
    if (!nul) return NULL;
    for (bool changed = true; changed;) {
        changed = false;
        for (uint32_t r = 0; r < p->n_rules; r++) {
            if (nul[r]) continue;
            const hl_gbnf_rule *R = &p->rules[r];
            bool all = true; /* every element so far in this alternative can be empty */
            for (uint32_t i = 0; i <= R->n; i++) {
                if (i == R->n || R->e[i].type == HL_GE_ALT) {
                    if (all) {
                        nul[r] = changed = true;
                        break;
                    }
                    all = true;
                } else if (R->e[i].type != HL_GE_REF || !nul[R->e[i].value]) {
                    all = false;
                }
            }
        }
    }
    return nul;
}

/* A depth-first search over "rule r can begin with rule s" edges; a back
 * edge is left recursion, reported at the reference that closes it. */
static hearth_status check_left_recursion(const hl_gbnf *p, const bool *nul) {
    uint32_t n = p->n_rules;
    uint8_t *color = hl_calloc(n ? n : 1, 1); /* 0 unseen, 1 on the path, 2 done */
    uint32_t *stack_r = hl_malloc((n ? n : 1) * sizeof *stack_r);
    uint32_t *stack_i = hl_malloc((n ? n : 1) * sizeof *stack_i);
    bool *stack_skip = hl_malloc((n ? n : 1) * sizeof *stack_skip);
    hearth_status st = HEARTH_OK;
    if (!color || !stack_r || !stack_i || !stack_skip) st = HEARTH_ERR_OUT_OF_MEMORY;
    for (uint32_t start = 0; start < n && st == HEARTH_OK; start++) {
        if (color[start]) continue;
        uint32_t depth = 0;
        stack_r[0] = start;
        stack_i[0] = 0;
        stack_skip[0] = false; /* past a non-empty element of this alternative */
        color[start] = 1;
        depth = 1;
        while (depth && st == HEARTH_OK) {
            uint32_t r = stack_r[depth - 1];
            const hl_gbnf_rule *R = &p->rules[r];
            uint32_t i = stack_i[depth - 1];
            if (i >= R->n) {
                color[r] = 2;
                depth--;
                continue;
            }
            stack_i[depth - 1] = i + 1;
            hl_gelem e = R->e[i];
            if (e.type == HL_GE_ALT) {
                stack_skip[depth - 1] = false;
                continue;
            }
            if (stack_skip[depth - 1]) continue;
            if (e.type != HL_GE_REF) {
                stack_skip[depth - 1] = true;
                continue;
            }
            if (!nul[e.value]) stack_skip[depth - 1] = true;
            if (color[e.value] == 1) {
                const hl_gbnf_rule *S = &p->rules[e.value];
                st = hl_gbnf_error(p->text, p->len, R->src[i],
                                   "left recursion: rule '%.*s' can reach itself without consuming any input",
                                   (int)(S->name_len > 64 ? 64 : S->name_len), S->name);
            } else if (color[e.value] == 0) {
                color[e.value] = 1;
                stack_r[depth] = e.value;
                stack_i[depth] = 0;
                stack_skip[depth] = false;
                depth++;
            }
        }
    }
    free(color);
    free(stack_r);
    free(stack_i);
    free(stack_skip);
    return st;
}

hearth_status hl_gbnf_compile(hl_gbnf *p, hl_grammar **out) {
    /* Undefined rules: the one referenced first in the text. */
    uint32_t undef = UINT32_MAX, root = UINT32_MAX;
    for (uint32_t r = 0; r < p->n_rules; r++) {
        const hl_gbnf_rule *R = &p->rules[r];
        if (!R->defined && (undef == UINT32_MAX || R->ref_off < p->rules[undef].ref_off)) undef = r;
        if (!R->helper && R->name_len == 4 && memcmp(R->name, "root", 4) == 0) root = r;
    }
    if (undef != UINT32_MAX) {
        const hl_gbnf_rule *U = &p->rules[undef];
        return hl_gbnf_error(p->text, p->len, U->ref_off, "undefined rule '%.*s'",
                             (int)(U->name_len > 64 ? 64 : U->name_len), U->name);
    }
    if (root == UINT32_MAX || !p->rules[root].defined)
        return hl_gbnf_error(p->text, p->len, 0, "no rule named 'root' (the start rule must be called root)");

    bool *nul = nullable_rules(p);
    if (!nul) return HEARTH_ERR_OUT_OF_MEMORY;
    hearth_status st = check_left_recursion(p, nul);
    free(nul);
    if (st != HEARTH_OK) return st;

    uint64_t n_elems = 0, n_alts = 0;
    for (uint32_t r = 0; r < p->n_rules; r++) {
        n_elems += p->rules[r].n + 1; /* each ALT becomes an END, plus the last END */
        n_alts += 1;
        for (uint32_t i = 0; i < p->rules[r].n; i++) n_alts += p->rules[r].e[i].type == HL_GE_ALT;
    }
    hl_grammar *g = hl_calloc(1, sizeof *g);
    if (!g) return HEARTH_ERR_OUT_OF_MEMORY;
    g->elems = hl_malloc(n_elems * sizeof *g->elems);
    g->alt_start = hl_malloc(n_alts * sizeof *g->alt_start);
    g->rule_alts = hl_malloc((p->n_rules + 1) * sizeof *g->rule_alts);
    if (!g->elems || !g->alt_start || !g->rule_alts) {
        hl_grammar_free(g);
        return HEARTH_ERR_OUT_OF_MEMORY;
    }
    uint32_t ne = 0, na = 0;
    for (uint32_t r = 0; r < p->n_rules; r++) {
        const hl_gbnf_rule *R = &p->rules[r];
        g->rule_alts[r] = na;
        g->alt_start[na++] = ne;
        for (uint32_t i = 0; i < R->n; i++) {
            if (R->e[i].type == HL_GE_ALT) {
                g->elems[ne++] = (hl_gelem){HL_GE_END, 0};
                g->alt_start[na++] = ne;
            } else {
                g->elems[ne++] = R->e[i];
            }
        }
        g->elems[ne++] = (hl_gelem){HL_GE_END, 0};
    }
    g->rule_alts[p->n_rules] = na;
    g->n_elems = ne;
    g->n_rules = p->n_rules;
    g->root = root;
    g->classes = p->classes;
    g->n_classes = p->n_classes;
    p->classes = NULL;
    p->n_classes = p->cap_classes = 0;
    *out = g;
    return HEARTH_OK;
}

void hl_grammar_free(hl_grammar *g) {
    if (!g) return;
    for (uint32_t i = 0; i < g->n_classes; i++) free(g->classes[i].ranges);
    free(g->classes);
    free(g->elems);
    free(g->alt_start);
    free(g->rule_alts);
    free(g);
}
