/* The compiled form of a GBNF grammar, shared by the parser (gbnf_parse.c,
 * gbnf_compile.c), the matcher (grammar_match.c) and the token trie walk
 * (token_trie.c). A grammar is a flat array of elements: each rule is a list
 * of alternatives, each alternative a run of elements closed by an END
 * element. Terminals are either one literal byte or a character class; a
 * class is matched byte by byte over the UTF-8 encoding of its code points
 * (RFC 3629), the bytes of a character read so far kept with the stack that
 * reads it (grammar_match.c), so one stack per class instead of one per
 * UTF-8 byte-range sequence. */
#ifndef HEARTH_GRAMMAR_GRAMMAR_INTERNAL_H
#define HEARTH_GRAMMAR_GRAMMAR_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "grammar/grammar.h"

enum {
    HL_GE_END = 0,   /* end of an alternative */
    HL_GE_BYTE = 1,  /* one literal byte: value */
    HL_GE_CLASS = 2, /* one character of class `value` */
    HL_GE_REF = 3,   /* rule `value` */
    HL_GE_ALT = 4,   /* between alternatives, only while parsing */
};

/* Bounds that keep a hostile grammar from exhausting memory or the C stack. */
#define HL_GRAMMAR_MAX_REPEAT 10000u    /* m and n of x{m,n} */
#define HL_GRAMMAR_MAX_ELEMS (1u << 22) /* elements after expanding repetitions */
#define HL_GRAMMAR_MAX_NESTING 256      /* ( ) groups inside each other */
#define HL_GRAMMAR_MAX_STACKS 8192u     /* ways to continue after one byte */

typedef struct hl_gelem {
    uint32_t type;  /* HL_GE_* */
    uint32_t value; /* the byte, class index or rule index */
} hl_gelem;

/* A set of code points: sorted, disjoint, non-adjacent inclusive ranges,
 * never containing the surrogates U+D800..U+DFFF (not characters, RFC 3629
 * section 3), plus the lead bytes that can begin one of its characters. */
typedef struct hl_gclass {
    uint32_t *ranges; /* [n_ranges][2]: lo, hi */
    uint32_t n_ranges;
    uint64_t lead[4]; /* bit b: byte b starts the UTF-8 form of a member */
} hl_gclass;

struct hl_grammar {
    hl_gelem *elems; /* [n_elems] */
    uint32_t n_elems;
    uint32_t *alt_start; /* [n_alts]: index in elems where an alternative begins */
    uint32_t *rule_alts; /* [n_rules + 1]: rule r's alternatives are alt_start[rule_alts[r] .. rule_alts[r+1]) */
    uint32_t n_rules;
    hl_gclass *classes; /* [n_classes] */
    uint32_t n_classes;
    uint32_t root; /* the rule named root */
};

/* The parsed grammar before compilation (gbnf_parse.c -> gbnf_compile.c):
 * one element list per rule, alternatives separated by HL_GE_ALT, with the
 * source offset of every element for error messages. */
typedef struct hl_gbnf_rule {
    const char *name; /* the user's rule name (a helper rule: its user rule's) */
    uint32_t name_len;
    uint32_t ref_off; /* offset of the first reference; UINT32_MAX: none */
    bool defined;
    bool helper;   /* made for a group or a repetition */
    hl_gelem *e;   /* [n] */
    uint32_t *src; /* [n] byte offsets in the text */
    uint32_t n, cap;
} hl_gbnf_rule;

typedef struct hl_gbnf {
    const char *text;
    size_t len;
    hl_gbnf_rule *rules; /* [n_rules] */
    uint32_t n_rules, cap_rules;
    hl_gclass *classes; /* [n_classes] */
    uint32_t n_classes, cap_classes;
} hl_gbnf;

/* Records "grammar line L column C: <fmt>" for byte offset `off` of text and
 * returns INVALID_ARG. */
hearth_status hl_gbnf_error(const char *text, size_t len, size_t off, const char *fmt, ...) HL_PRINTF(4, 5);
/* Checks the parsed rules (undefined rules, root, left recursion) and builds
 * the compiled grammar; takes the classes out of p. */
hearth_status hl_gbnf_compile(hl_gbnf *p, hl_grammar **out);

/* The matcher (grammar_match.c). A stack of grammar positions is a chain
 * of nodes, hash-consed so that equal stacks are the same node and sets of
 * stacks are deduplicated by node index. A node is a position in `elems`,
 * the node below it (what follows when the current alternative ends; NIL at
 * the bottom) and, on a class element, the bytes of a character read so
 * far. Top nodes always sit on a BYTE or CLASS element; the empty stack
 * (the whole sentence read) is a flag beside a set. Nodes are only
 * appended, and removed from the end (rollback), so the trie walk can try
 * a byte and undo it; accepted states are compacted now and then. */
#define HL_GNIL UINT32_MAX

typedef struct hl_gnode {
    uint32_t pos;     /* index in elems */
    uint32_t parent;  /* node below; HL_GNIL: none */
    uint32_t partial; /* 0, or a character's leading bytes: HL_PARTIAL_* */
    uint32_t next;    /* next node in the same hash bucket */
    uint32_t epoch;   /* last step that reached this node */
} hl_gnode;

struct hl_grammar_state {
    const hl_grammar *g;
    hl_gnode *nodes; /* [cap_nodes] */
    uint32_t n_nodes, cap_nodes;
    uint32_t *buckets; /* [mask + 1] heads of the node hash chains */
    uint32_t mask;
    uint32_t *sets; /* [cap_sets] node indices of stack sets, one after another */
    uint32_t n_sets, cap_sets;
    uint32_t n_cur; /* the current set is sets[0, n_cur) */
    bool cur_done;  /* ... and holds the empty stack */
    uint32_t *work; /* [cap_work] (pos, parent) pairs still to expand */
    uint32_t n_work, cap_work;
    uint32_t epoch;
    uint32_t compact_at; /* compact after an accept that leaves more nodes */
    hl_gnode *spare;     /* [cap_spare] compaction scratch */
    uint32_t cap_spare;
    uint32_t *remap; /* [cap_remap] old node index -> kept index */
    uint32_t cap_remap;
};

/* Reads byte b from the stacks sets[in, in + n_in), appending the stacks
 * that result to s->sets (from the n_sets at the call) and setting *done
 * when the empty stack results. Errors: OUT_OF_MEMORY, INVALID_ARG (more
 * than HL_GRAMMAR_MAX_STACKS stacks). */
hearth_status hl_gm_step(hl_grammar_state *s, uint32_t in, uint32_t n_in, uint8_t b, bool *done);
/* Removes the nodes from index n_nodes on (the newest first). */
void hl_gm_rollback(hl_grammar_state *s, uint32_t n_nodes);
/* Every byte some stack of sets[in, in + n_in) might read (a superset). */
void hl_gm_next_bytes(const hl_grammar_state *s, uint32_t in, uint32_t n_in, uint64_t bytes[4]);

/* Whether code point cp is in the class. */
bool hl_gclass_has(const hl_gclass *c, uint32_t cp);
/* Whether some code point in [lo, hi] is in the class. */
bool hl_gclass_overlaps(const hl_gclass *c, uint32_t lo, uint32_t hi);
/* Fills c->lead from c->ranges. */
void hl_gclass_fill_lead(hl_gclass *c);

#endif
