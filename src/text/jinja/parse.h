/* The Jinja parser's shared state and token helpers, for parse_expr.c
 * (expressions, and the helpers below) and parser.c (statements). Internal
 * to the parser. */
#ifndef HEARTH_TEXT_JINJA_PARSE_H
#define HEARTH_TEXT_JINJA_PARSE_H

#include <stdbool.h>
#include <string.h>

#include "text/jinja/jinja_impl.h"

#define MAX_NESTING 200 /* expression and block nesting; deeper fails as unsupported */

typedef struct parser {
    jarena *a;
    jtok *t;
    size_t pos, n;
    int depth;
    int loops; /* for loops around the current statement (a macro body starts at 0) */
} parser;

/* A growable array of node pointers (or names) while parsing. */
typedef struct vec {
    void **v;
    size_t n, cap;
} vec;

static inline jtok *cur(parser *P) { return &P->t[P->pos]; }
static inline jtok *peek(parser *P, size_t k) { return &P->t[P->pos + k < P->n ? P->pos + k : P->n - 1]; }
static inline void next(parser *P) {
    if (P->pos + 1 < P->n) P->pos++;
}
static inline bool is_op(const jtok *t, const char *op) { return t->k == TK_OP && !strcmp(t->s, op); }
static inline bool is_name(const jtok *t, const char *name) { return t->k == TK_NAME && !strcmp(t->s, name); }

/* Fails with "syntax error: expected WHAT, got <the current token>". */
hearth_status hl_jp_expected(parser *P, const char *what);
/* Consumes the operator op, or fails as hl_jp_expected. */
hearth_status hl_jp_expect_op(parser *P, const char *op);
/* Consumes a name into *out, or fails as hl_jp_expected. */
hearth_status hl_jp_expect_name(parser *P, const char **out);
/* A zeroed node of the template's arena. */
hearth_status hl_jp_new_node(parser *P, jnode_kind kind, int line, jnode **out);
/* Appends x to v, growing it in the arena. */
hearth_status hl_jp_vec_push(parser *P, vec *v, void *x);
/* One level deeper (the caller decrements P->depth when done); fails beyond MAX_NESTING. */
hearth_status hl_jp_enter(parser *P);

/* An expression (conditional expressions included). */
hearth_status hl_jp_parse_expr(parser *P, jnode **out);
/* An expression, or a bare tuple "a, b". */
hearth_status hl_jp_parse_tuple(parser *P, bool with_condexpr, jnode **out);
/* One filter name with its arguments, applied to obj. */
hearth_status hl_jp_parse_filter(parser *P, jnode *obj, jnode **out);

#endif
