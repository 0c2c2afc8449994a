/* Jinja parser: tokens -> AST (jnode). Recursive descent with jinja2's grammar
 * and precedence (parser.py), lowest first:
 *   x if c else y | or | and | not | comparisons (== != < <= > >= in, not in,
 *   chained) | + - | ~ | * / // % | ** | unary - + | primary with postfix
 *   .attr [item] [a:b:c] (call), then filters "|f(args)" and tests "is [not] t".
 * Statements: if/elif/else, for (with loop filter and else), set (also
 * ns.attr and block set), macro, call block, filter block, with,
 * break/continue, generation. Other tags fail as unsupported features. */
#include <stdio.h>
#include <stdlib.h>
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

static jtok *cur(parser *P) { return &P->t[P->pos]; }
static jtok *peek(parser *P, size_t k) { return &P->t[P->pos + k < P->n ? P->pos + k : P->n - 1]; }
static void next(parser *P) {
    if (P->pos + 1 < P->n) P->pos++;
}
static bool is_op(const jtok *t, const char *op) { return t->k == TK_OP && !strcmp(t->s, op); }
static bool is_name(const jtok *t, const char *name) { return t->k == TK_NAME && !strcmp(t->s, name); }

static const char *tok_desc(const jtok *t) {
    switch (t->k) {
    case TK_TEXT: return "template text";
    case TK_VAR_BEGIN: return "'{{'";
    case TK_VAR_END: return "'}}'";
    case TK_BLOCK_BEGIN: return "'{%'";
    case TK_BLOCK_END: return "'%}'";
    case TK_STRING: return "a string";
    case TK_INT: return "an integer";
    case TK_FLOAT: return "a number";
    case TK_EOF: return "the end of the template";
    case TK_NAME:
    case TK_OP: return t->s;
    }
    return "?";
}

static hearth_status expected(parser *P, const char *what) {
    return jfail(HEARTH_ERR_FORMAT, cur(P)->line, "syntax error: expected %s, got %s", what, tok_desc(cur(P)));
}

static hearth_status expect_op(parser *P, const char *op) {
    if (!is_op(cur(P), op)) {
        char what[16];
        snprintf(what, sizeof what, "'%s'", op);
        return expected(P, what);
    }
    next(P);
    return HEARTH_OK;
}

static hearth_status expect_name(parser *P, const char **out) {
    if (cur(P)->k != TK_NAME) return expected(P, "a name");
    *out = cur(P)->s;
    next(P);
    return HEARTH_OK;
}

static hearth_status new_node(parser *P, jnode_kind kind, int line, jnode **out) {
    *out = ja_alloc(P->a, sizeof **out);
    if (!*out) return HEARTH_ERR_OUT_OF_MEMORY;
    (*out)->kind = kind;
    (*out)->line = line;
    return HEARTH_OK;
}

/* A growable array of node pointers (or names) while parsing. */
typedef struct vec {
    void **v;
    size_t n, cap;
} vec;

static hearth_status vec_push(parser *P, vec *v, void *x) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 4;
        void **bigger = ja_alloc(P->a, cap * sizeof *bigger);
        if (!bigger) return HEARTH_ERR_OUT_OF_MEMORY;
        if (v->n) memcpy(bigger, v->v, v->n * sizeof *bigger);
        v->v = bigger;
        v->cap = cap;
    }
    v->v[v->n++] = x;
    return HEARTH_OK;
}

static hearth_status parse_expr(parser *P, jnode **out);
static hearth_status parse_or(parser *P, jnode **out);
static hearth_status parse_unary(parser *P, bool with_filter, jnode **out);
static hearth_status parse_primary(parser *P, jnode **out);
static hearth_status parse_postfix(parser *P, jnode *node, jnode **out);

static hearth_status enter(parser *P) {
    if (++P->depth > MAX_NESTING)
        return jfail(HEARTH_ERR_UNSUPPORTED, cur(P)->line, "unsupported Jinja feature 'nesting deeper than %d'", MAX_NESTING);
    return HEARTH_OK;
}

/* Call arguments after '(' up to ')': positional into kids, name=value into
 * names/kids2. */
static hearth_status parse_args(parser *P, jnode *call) {
    vec pos = {0}, kw = {0}, kwn = {0};
    HL_TRY(expect_op(P, "("));
    while (!is_op(cur(P), ")")) {
        if (pos.n + kw.n) HL_TRY(expect_op(P, ","));
        if (is_op(cur(P), ")")) break;
        if (is_op(cur(P), "*") || is_op(cur(P), "**"))
            return jfail(HEARTH_ERR_UNSUPPORTED, cur(P)->line, "unsupported Jinja feature '*args in a call'");
        if (cur(P)->k == TK_NAME && is_op(peek(P, 1), "=")) {
            HL_TRY(vec_push(P, &kwn, (void *)cur(P)->s));
            next(P);
            next(P);
            jnode *v;
            HL_TRY(parse_expr(P, &v));
            HL_TRY(vec_push(P, &kw, v));
        } else {
            if (kw.n) return jfail(HEARTH_ERR_FORMAT, cur(P)->line, "syntax error: positional argument after a keyword argument");
            jnode *v;
            HL_TRY(parse_expr(P, &v));
            HL_TRY(vec_push(P, &pos, v));
        }
    }
    next(P);
    call->kids = (jnode **)pos.v;
    call->n_kids = pos.n;
    call->kids2 = (jnode **)kw.v;
    call->n_kids2 = kw.n;
    call->names = (const char **)kwn.v;
    call->n_names = kwn.n;
    return HEARTH_OK;
}

/* A dotted filter or test name. */
static hearth_status parse_dotted(parser *P, const char **out) {
    HL_TRY(expect_name(P, out));
    if (is_op(cur(P), ".") && peek(P, 1)->k == TK_NAME)
        return jfail(HEARTH_ERR_UNSUPPORTED, cur(P)->line, "unsupported Jinja feature 'dotted filter or test name %s.%s'",
                     *out, peek(P, 1)->s);
    return HEARTH_OK;
}

static hearth_status parse_filter(parser *P, jnode *obj, jnode **out) {
    int line = cur(P)->line;
    jnode *f;
    HL_TRY(new_node(P, N_FILTER, line, &f));
    HL_TRY(parse_dotted(P, &f->name));
    if (!jfilter_known(f->name)) return jfail(HEARTH_ERR_UNSUPPORTED, line, "unsupported Jinja feature 'filter %s'", f->name);
    f->a = obj;
    if (is_op(cur(P), "(")) HL_TRY(parse_args(P, f));
    *out = f;
    return HEARTH_OK;
}

/* Filters and tests after a unary expression, in any order. */
static hearth_status parse_filter_expr(parser *P, jnode *node, jnode **out) {
    for (;;) {
        if (is_op(cur(P), "|")) {
            next(P);
            HL_TRY(parse_filter(P, node, &node));
        } else if (is_name(cur(P), "is")) {
            int line = cur(P)->line;
            next(P);
            jnode *t;
            HL_TRY(new_node(P, N_TEST, line, &t));
            if (is_name(cur(P), "not")) {
                t->op = 1;
                next(P);
            }
            HL_TRY(parse_dotted(P, &t->name));
            if (!jtest_known(t->name)) return jfail(HEARTH_ERR_UNSUPPORTED, line, "unsupported Jinja feature 'test %s'", t->name);
            t->a = node;
            jtok *c = cur(P);
            if (is_op(c, "(")) {
                HL_TRY(parse_args(P, t));
                if (t->n_kids2) return jfail(HEARTH_ERR_UNSUPPORTED, line, "unsupported Jinja feature 'keyword argument to a test'");
            } else if ((c->k == TK_NAME && strcmp(c->s, "else") && strcmp(c->s, "or") && strcmp(c->s, "and")) ||
                       c->k == TK_STRING || c->k == TK_INT || c->k == TK_FLOAT || is_op(c, "[") || is_op(c, "{")) {
                jnode *arg;
                HL_TRY(parse_primary(P, &arg));
                HL_TRY(parse_postfix(P, arg, &arg));
                t->kids = ja_alloc(P->a, sizeof *t->kids);
                if (!t->kids) return HEARTH_ERR_OUT_OF_MEMORY;
                t->kids[0] = arg;
                t->n_kids = 1;
            }
            node = t;
        } else {
            *out = node;
            return HEARTH_OK;
        }
    }
}

/* Subscript after '[': an index or a slice a:b:c. */
static hearth_status parse_subscript(parser *P, jnode *obj, jnode **out) {
    int line = cur(P)->line;
    next(P);
    jnode *parts[3] = {0};
    int n = 0;
    for (;;) {
        if (!is_op(cur(P), ":") && !is_op(cur(P), "]")) HL_TRY(parse_expr(P, &parts[n]));
        if (is_op(cur(P), ":") && n < 2) {
            n++;
            next(P);
            continue;
        }
        break;
    }
    HL_TRY(expect_op(P, "]"));
    jnode *node;
    if (n == 0) {
        if (!parts[0]) return jfail(HEARTH_ERR_FORMAT, line, "syntax error: empty subscript []");
        HL_TRY(new_node(P, N_ITEM, line, &node));
        node->b = parts[0];
    } else {
        HL_TRY(new_node(P, N_SLICE, line, &node));
        node->kids = ja_alloc(P->a, 3 * sizeof *node->kids);
        if (!node->kids) return HEARTH_ERR_OUT_OF_MEMORY;
        memcpy(node->kids, parts, sizeof parts);
        node->n_kids = 3;
    }
    node->a = obj;
    *out = node;
    return HEARTH_OK;
}

static hearth_status parse_postfix(parser *P, jnode *node, jnode **out) {
    for (;;) {
        jtok *c = cur(P);
        if (is_op(c, ".")) {
            next(P);
            jnode *n;
            if (cur(P)->k == TK_NAME) {
                HL_TRY(new_node(P, N_ATTR, c->line, &n));
                n->name = cur(P)->s;
            } else if (cur(P)->k == TK_INT) {
                HL_TRY(new_node(P, N_ITEM, c->line, &n));
                HL_TRY(new_node(P, N_LIT, c->line, &n->b));
                n->b->lit = hl_jv_int(cur(P)->i);
            } else {
                return expected(P, "an attribute name");
            }
            next(P);
            n->a = node;
            node = n;
        } else if (is_op(c, "[")) {
            HL_TRY(parse_subscript(P, node, &node));
        } else if (is_op(c, "(")) {
            jnode *n;
            HL_TRY(new_node(P, N_CALL, c->line, &n));
            n->a = node;
            HL_TRY(parse_args(P, n));
            node = n;
        } else {
            *out = node;
            return HEARTH_OK;
        }
    }
}

/* Items of a list, tuple or dict literal after the opening bracket. */
static hearth_status parse_items(parser *P, jnode *node, const char *close, bool dict) {
    vec keys = {0}, vals = {0};
    while (!is_op(cur(P), close)) {
        if (keys.n) {
            HL_TRY(expect_op(P, ","));
            if (is_op(cur(P), close)) break;
        }
        jnode *k;
        HL_TRY(parse_expr(P, &k));
        HL_TRY(vec_push(P, &keys, k));
        if (dict) {
            HL_TRY(expect_op(P, ":"));
            jnode *v;
            HL_TRY(parse_expr(P, &v));
            HL_TRY(vec_push(P, &vals, v));
        }
    }
    next(P);
    node->kids = (jnode **)keys.v;
    node->n_kids = keys.n;
    node->kids2 = (jnode **)vals.v;
    node->n_kids2 = vals.n;
    return HEARTH_OK;
}

static hearth_status parse_primary(parser *P, jnode **out) {
    jtok *c = cur(P);
    jnode *n;
    HL_TRY(enter(P));
    if (c->k == TK_NAME) {
        HL_TRY(new_node(P, N_LIT, c->line, &n));
        const char *s = c->s;
        if (!strcmp(s, "true") || !strcmp(s, "True")) n->lit = hl_jv_bool(true);
        else if (!strcmp(s, "false") || !strcmp(s, "False")) n->lit = hl_jv_bool(false);
        else if (!strcmp(s, "none") || !strcmp(s, "None")) n->lit = hl_jv_none();
        else {
            n->kind = N_NAME;
            n->name = s;
        }
        next(P);
    } else if (c->k == TK_STRING) {
        HL_TRY(new_node(P, N_LIT, c->line, &n));
        size_t total = 0, k = 0;
        while (peek(P, k)->k == TK_STRING) total += peek(P, k++)->n;
        char *s = ja_alloc(P->a, total + 1);
        if (!s) return HEARTH_ERR_OUT_OF_MEMORY;
        total = 0;
        while (cur(P)->k == TK_STRING) {
            memcpy(s + total, cur(P)->s, cur(P)->n);
            total += cur(P)->n;
            next(P);
        }
        n->lit = jv_strv(s, total);
    } else if (c->k == TK_INT || c->k == TK_FLOAT) {
        HL_TRY(new_node(P, N_LIT, c->line, &n));
        n->lit = c->k == TK_INT ? hl_jv_int(c->i) : hl_jv_float(c->f);
        next(P);
    } else if (is_op(c, "(")) {
        next(P);
        if (is_op(cur(P), ")")) {
            next(P);
            HL_TRY(new_node(P, N_LIST, c->line, &n));
            n->op = 1;
        } else {
            HL_TRY(parse_expr(P, &n));
            if (is_op(cur(P), ",")) {
                jnode *t;
                HL_TRY(new_node(P, N_LIST, c->line, &t));
                t->op = 1;
                vec items = {0};
                HL_TRY(vec_push(P, &items, n));
                while (is_op(cur(P), ",")) {
                    next(P);
                    if (is_op(cur(P), ")")) break;
                    HL_TRY(parse_expr(P, &n));
                    HL_TRY(vec_push(P, &items, n));
                }
                t->kids = (jnode **)items.v;
                t->n_kids = items.n;
                n = t;
            }
            HL_TRY(expect_op(P, ")"));
        }
    } else if (is_op(c, "[")) {
        next(P);
        HL_TRY(new_node(P, N_LIST, c->line, &n));
        HL_TRY(parse_items(P, n, "]", false));
    } else if (is_op(c, "{")) {
        next(P);
        HL_TRY(new_node(P, N_DICT, c->line, &n));
        HL_TRY(parse_items(P, n, "}", true));
    } else {
        return expected(P, "an expression");
    }
    P->depth--;
    *out = n;
    return HEARTH_OK;
}

static hearth_status parse_unary(parser *P, bool with_filter, jnode **out) {
    jtok *c = cur(P);
    jnode *node;
    HL_TRY(enter(P));
    if (is_op(c, "-") || is_op(c, "+")) {
        next(P);
        HL_TRY(new_node(P, N_UNARY, c->line, &node));
        node->op = c->s[0];
        HL_TRY(parse_unary(P, false, &node->a));
    } else {
        HL_TRY(parse_primary(P, &node));
    }
    HL_TRY(parse_postfix(P, node, &node));
    if (with_filter) HL_TRY(parse_filter_expr(P, node, &node));
    P->depth--;
    *out = node;
    return HEARTH_OK;
}

typedef hearth_status (*level_fn)(parser *P, jnode **out);

/* One left-associative binary level: operators in `ops` (NULL-terminated,
 * each with its code in `codes`) between operands of `sub`. */
static hearth_status parse_binary(parser *P, level_fn sub, const char *const *ops, const char *codes, jnode **out) {
    jnode *lhs;
    HL_TRY(sub(P, &lhs));
    for (;;) {
        int k = -1;
        for (int i = 0; ops[i]; i++)
            if (is_op(cur(P), ops[i]) || is_name(cur(P), ops[i])) k = i;
        if (k < 0) break;
        jnode *n;
        HL_TRY(new_node(P, N_BINARY, cur(P)->line, &n));
        next(P);
        n->op = codes[k];
        n->a = lhs;
        HL_TRY(sub(P, &n->b));
        lhs = n;
    }
    *out = lhs;
    return HEARTH_OK;
}

static hearth_status parse_unary_f(parser *P, jnode **out) { return parse_unary(P, true, out); }
static hearth_status parse_pow(parser *P, jnode **out) {
    static const char *const ops[] = {"**", NULL};
    return parse_binary(P, parse_unary_f, ops, "P", out);
}
static hearth_status parse_math2(parser *P, jnode **out) {
    static const char *const ops[] = {"*", "/", "//", "%", NULL};
    return parse_binary(P, parse_pow, ops, "*/D%", out);
}
static hearth_status parse_concat(parser *P, jnode **out) {
    static const char *const ops[] = {"~", NULL};
    return parse_binary(P, parse_math2, ops, "~", out);
}
static hearth_status parse_math1(parser *P, jnode **out) {
    static const char *const ops[] = {"+", "-", NULL};
    return parse_binary(P, parse_concat, ops, "+-", out);
}

static hearth_status parse_compare(parser *P, jnode **out) {
    static const char *const ops[] = {"==", "!=", "<", "<=", ">", ">="};
    static const char codes[] = "en<l>g";
    jnode *lhs;
    HL_TRY(parse_math1(P, &lhs));
    vec kids = {0};
    int ops_buf[64], n_ops = 0;
    int line = cur(P)->line;
    for (;;) {
        int code = 0;
        for (int i = 0; i < 6; i++)
            if (is_op(cur(P), ops[i])) code = codes[i];
        if (code) {
            next(P);
        } else if (is_name(cur(P), "in")) {
            code = 'i';
            next(P);
        } else if (is_name(cur(P), "not") && is_name(peek(P, 1), "in")) {
            code = 'I';
            next(P);
            next(P);
        } else {
            break;
        }
        if (n_ops == 64) return jfail(HEARTH_ERR_UNSUPPORTED, line, "unsupported Jinja feature 'more than 64 chained comparisons'");
        ops_buf[n_ops++] = code;
        jnode *rhs;
        HL_TRY(parse_math1(P, &rhs));
        HL_TRY(vec_push(P, &kids, rhs));
    }
    if (!n_ops) {
        *out = lhs;
        return HEARTH_OK;
    }
    jnode *n;
    HL_TRY(new_node(P, N_COMPARE, line, &n));
    n->a = lhs;
    n->kids = (jnode **)kids.v;
    n->n_kids = kids.n;
    n->ops = ja_alloc(P->a, (size_t)n_ops * sizeof *n->ops);
    if (!n->ops) return HEARTH_ERR_OUT_OF_MEMORY;
    memcpy(n->ops, ops_buf, (size_t)n_ops * sizeof *n->ops);
    *out = n;
    return HEARTH_OK;
}

static hearth_status parse_not(parser *P, jnode **out) {
    if (is_name(cur(P), "not")) {
        jnode *n;
        HL_TRY(new_node(P, N_UNARY, cur(P)->line, &n));
        next(P);
        n->op = 'n';
        HL_TRY(enter(P));
        HL_TRY(parse_not(P, &n->a));
        P->depth--;
        *out = n;
        return HEARTH_OK;
    }
    return parse_compare(P, out);
}
static hearth_status parse_and(parser *P, jnode **out) {
    static const char *const ops[] = {"and", NULL};
    return parse_binary(P, parse_not, ops, "a", out);
}
static hearth_status parse_or(parser *P, jnode **out) {
    static const char *const ops[] = {"or", NULL};
    return parse_binary(P, parse_and, ops, "o", out);
}

/* Conditional expressions: a if c else b (the else part optional). */
static hearth_status parse_condexpr(parser *P, bool with_condexpr, jnode **out) {
    jnode *node;
    HL_TRY(enter(P));
    HL_TRY(parse_or(P, &node));
    while (with_condexpr && is_name(cur(P), "if")) {
        jnode *n;
        HL_TRY(new_node(P, N_COND, cur(P)->line, &n));
        next(P);
        n->b = node;
        HL_TRY(parse_or(P, &n->a));
        if (is_name(cur(P), "else")) {
            next(P);
            HL_TRY(parse_condexpr(P, true, &n->c));
        }
        node = n;
    }
    P->depth--;
    *out = node;
    return HEARTH_OK;
}

static hearth_status parse_expr(parser *P, jnode **out) { return parse_condexpr(P, true, out); }

/* An expression, or a bare tuple "a, b" (as in {{ a, b }} or set x = a, b). */
static hearth_status parse_tuple(parser *P, bool with_condexpr, jnode **out) {
    jnode *first;
    HL_TRY(parse_condexpr(P, with_condexpr, &first));
    if (!is_op(cur(P), ",")) {
        *out = first;
        return HEARTH_OK;
    }
    jnode *t;
    HL_TRY(new_node(P, N_LIST, first->line, &t));
    t->op = 1;
    vec items = {0};
    HL_TRY(vec_push(P, &items, first));
    while (is_op(cur(P), ",")) {
        next(P);
        if (cur(P)->k != TK_NAME && cur(P)->k != TK_STRING && cur(P)->k != TK_INT && cur(P)->k != TK_FLOAT &&
            !is_op(cur(P), "(") && !is_op(cur(P), "[") && !is_op(cur(P), "{") && !is_op(cur(P), "-"))
            break;
        jnode *n;
        HL_TRY(parse_condexpr(P, with_condexpr, &n));
        HL_TRY(vec_push(P, &items, n));
    }
    t->kids = (jnode **)items.v;
    t->n_kids = items.n;
    *out = t;
    return HEARTH_OK;
}

/* ------------------------------------------------------------ statements -- */

static hearth_status parse_body(parser *P, const char *const *stops, jnode ***kids, size_t *n_kids);

static hearth_status expect_block_end(parser *P) {
    if (cur(P)->k != TK_BLOCK_END) return expected(P, "'%}'");
    next(P);
    return HEARTH_OK;
}

/* After a body stopped at one of its end tags: consumes "{% endX %}". The
 * caller has checked the name. */
static hearth_status close_tag(parser *P) {
    next(P); /* the tag name */
    return expect_block_end(P);
}

/* Target names of for/set: a, or a, b, or (a, b). */
static hearth_status parse_targets(parser *P, jnode *n) {
    vec names = {0};
    bool paren = is_op(cur(P), "(");
    if (paren) next(P);
    for (;;) {
        const char *name = NULL;
        HL_TRY(expect_name(P, &name));
        HL_TRY(vec_push(P, &names, (void *)name));
        if (!is_op(cur(P), ",")) break;
        next(P);
    }
    if (paren) HL_TRY(expect_op(P, ")"));
    n->names = (const char **)names.v;
    n->n_names = names.n;
    return HEARTH_OK;
}

static hearth_status parse_if(parser *P, int line, jnode **out) {
    static const char *const stops[] = {"elif", "else", "endif", NULL};
    jnode *n;
    HL_TRY(new_node(P, N_IF, line, &n));
    HL_TRY(parse_tuple(P, false, &n->a));
    HL_TRY(expect_block_end(P));
    HL_TRY(parse_body(P, stops, &n->kids, &n->n_kids));
    if (is_name(cur(P), "elif")) {
        int l = cur(P)->line;
        next(P);
        n->kids2 = ja_alloc(P->a, sizeof *n->kids2);
        if (!n->kids2) return HEARTH_ERR_OUT_OF_MEMORY;
        n->n_kids2 = 1;
        HL_TRY(enter(P));
        HL_TRY(parse_if(P, l, &n->kids2[0])); /* consumes up to and including endif */
        P->depth--;
        *out = n;
        return HEARTH_OK;
    }
    if (is_name(cur(P), "else")) {
        static const char *const end[] = {"endif", NULL};
        next(P);
        HL_TRY(expect_block_end(P));
        HL_TRY(parse_body(P, end, &n->kids2, &n->n_kids2));
    }
    HL_TRY(close_tag(P));
    *out = n;
    return HEARTH_OK;
}

static hearth_status parse_for(parser *P, int line, jnode **out) {
    static const char *const stops[] = {"else", "endfor", NULL};
    static const char *const end[] = {"endfor", NULL};
    jnode *n;
    HL_TRY(new_node(P, N_FOR, line, &n));
    HL_TRY(parse_targets(P, n));
    if (!is_name(cur(P), "in")) return expected(P, "'in'");
    next(P);
    HL_TRY(parse_tuple(P, false, &n->a));
    if (is_name(cur(P), "if")) {
        next(P);
        HL_TRY(parse_expr(P, &n->b));
    }
    if (is_name(cur(P), "recursive")) return jfail(HEARTH_ERR_UNSUPPORTED, cur(P)->line, "unsupported Jinja feature 'recursive loop'");
    HL_TRY(expect_block_end(P));
    P->loops++;
    HL_TRY(parse_body(P, stops, &n->kids, &n->n_kids));
    P->loops--;
    if (is_name(cur(P), "else")) {
        next(P);
        HL_TRY(expect_block_end(P));
        HL_TRY(parse_body(P, end, &n->kids2, &n->n_kids2));
    }
    HL_TRY(close_tag(P));
    *out = n;
    return HEARTH_OK;
}

/* Filters of a block set or filter block ("| f | g(x)"), applied in order to
 * a NULL placeholder. */
static hearth_status parse_filter_chain(parser *P, bool first_bar, jnode **out) {
    jnode *node = NULL;
    if (!first_bar) HL_TRY(parse_filter(P, node, &node));
    while (is_op(cur(P), "|")) {
        next(P);
        HL_TRY(parse_filter(P, node, &node));
    }
    *out = node;
    return HEARTH_OK;
}

static hearth_status parse_set(parser *P, int line, jnode **out) {
    static const char *const end[] = {"endset", NULL};
    jnode *n;
    HL_TRY(new_node(P, N_SET, line, &n));
    if (cur(P)->k == TK_NAME && is_op(peek(P, 1), ".") && peek(P, 2)->k == TK_NAME) {
        n->names = ja_alloc(P->a, sizeof *n->names);
        if (!n->names) return HEARTH_ERR_OUT_OF_MEMORY;
        n->names[0] = cur(P)->s;
        n->n_names = 1;
        n->name = peek(P, 2)->s;
        P->pos += 3;
    } else {
        HL_TRY(parse_targets(P, n));
    }
    if (is_op(cur(P), "=")) {
        next(P);
        HL_TRY(parse_tuple(P, true, &n->a));
        HL_TRY(expect_block_end(P));
        *out = n;
        return HEARTH_OK;
    }
    if (n->n_names != 1 || n->name) return expected(P, "'='");
    HL_TRY(parse_filter_chain(P, true, &n->b));
    HL_TRY(expect_block_end(P));
    HL_TRY(parse_body(P, end, &n->kids, &n->n_kids));
    HL_TRY(close_tag(P));
    *out = n;
    return HEARTH_OK;
}

/* Parameters "(a, b=default, ...)" of a macro or a call block's caller. */
static hearth_status parse_params(parser *P, jnode *n) {
    vec names = {0}, defs = {0};
    HL_TRY(expect_op(P, "("));
    while (!is_op(cur(P), ")")) {
        if (names.n) HL_TRY(expect_op(P, ","));
        const char *name = NULL;
        HL_TRY(expect_name(P, &name));
        HL_TRY(vec_push(P, &names, (void *)name));
        jnode *def = NULL;
        if (is_op(cur(P), "=")) {
            next(P);
            HL_TRY(parse_expr(P, &def));
        } else if (defs.n && defs.v[defs.n - 1]) {
            return jfail(HEARTH_ERR_FORMAT, cur(P)->line, "syntax error: non-default argument follows default argument");
        }
        HL_TRY(vec_push(P, &defs, def));
    }
    next(P);
    n->names = (const char **)names.v;
    n->n_names = names.n;
    n->kids2 = (jnode **)defs.v;
    n->n_kids2 = defs.n;
    return HEARTH_OK;
}

static hearth_status parse_macro(parser *P, int line, jnode **out) {
    static const char *const end[] = {"endmacro", NULL};
    jnode *n;
    HL_TRY(new_node(P, N_MACRO, line, &n));
    HL_TRY(expect_name(P, &n->name));
    HL_TRY(parse_params(P, n));
    HL_TRY(expect_block_end(P));
    int loops = P->loops;
    P->loops = 0;
    HL_TRY(parse_body(P, end, &n->kids, &n->n_kids));
    P->loops = loops;
    HL_TRY(close_tag(P));
    *out = n;
    return HEARTH_OK;
}

static hearth_status parse_call_block(parser *P, int line, jnode **out) {
    static const char *const end[] = {"endcall", NULL};
    jnode *n;
    HL_TRY(new_node(P, N_CALLBLOCK, line, &n));
    if (is_op(cur(P), "(")) HL_TRY(parse_params(P, n));
    HL_TRY(parse_expr(P, &n->a));
    if (n->a->kind != N_CALL) return jfail(HEARTH_ERR_FORMAT, line, "syntax error: {%% call %%} needs a macro call");
    HL_TRY(expect_block_end(P));
    int loops = P->loops; /* the body is the caller macro's */
    P->loops = 0;
    HL_TRY(parse_body(P, end, &n->kids, &n->n_kids));
    P->loops = loops;
    HL_TRY(close_tag(P));
    *out = n;
    return HEARTH_OK;
}

static hearth_status parse_with(parser *P, int line, jnode **out) {
    static const char *const end[] = {"endwith", NULL};
    jnode *n;
    HL_TRY(new_node(P, N_WITH, line, &n));
    vec names = {0}, vals = {0};
    while (cur(P)->k != TK_BLOCK_END) {
        if (names.n) HL_TRY(expect_op(P, ","));
        const char *name = NULL;
        HL_TRY(expect_name(P, &name));
        HL_TRY(expect_op(P, "="));
        jnode *v;
        HL_TRY(parse_expr(P, &v));
        HL_TRY(vec_push(P, &names, (void *)name));
        HL_TRY(vec_push(P, &vals, v));
    }
    next(P);
    n->names = (const char **)names.v;
    n->n_names = names.n;
    n->kids2 = (jnode **)vals.v;
    n->n_kids2 = vals.n;
    HL_TRY(parse_body(P, end, &n->kids, &n->n_kids));
    HL_TRY(close_tag(P));
    *out = n;
    return HEARTH_OK;
}

/* A {% ... %} statement; the current token is its name. */
static hearth_status parse_statement(parser *P, jnode **out) {
    jtok *c = cur(P);
    int line = c->line;
    if (c->k != TK_NAME) return expected(P, "a tag name");
    const char *tag = c->s;
    next(P);
    if (!strcmp(tag, "if")) return parse_if(P, line, out);
    if (!strcmp(tag, "for")) return parse_for(P, line, out);
    if (!strcmp(tag, "set")) return parse_set(P, line, out);
    if (!strcmp(tag, "macro")) return parse_macro(P, line, out);
    if (!strcmp(tag, "call")) return parse_call_block(P, line, out);
    if (!strcmp(tag, "with")) return parse_with(P, line, out);
    if (!strcmp(tag, "break") || !strcmp(tag, "continue")) {
        if (!P->loops) return jfail(HEARTH_ERR_FORMAT, line, "syntax error: '%s' outside loop", tag);
        HL_TRY(new_node(P, tag[0] == 'b' ? N_BREAK : N_CONTINUE, line, out));
        return expect_block_end(P);
    }
    if (!strcmp(tag, "filter")) {
        static const char *const end[] = {"endfilter", NULL};
        jnode *n;
        HL_TRY(new_node(P, N_FILTERBLOCK, line, &n));
        HL_TRY(parse_filter_chain(P, false, &n->b));
        HL_TRY(expect_block_end(P));
        HL_TRY(parse_body(P, end, &n->kids, &n->n_kids));
        HL_TRY(close_tag(P));
        *out = n;
        return HEARTH_OK;
    }
    if (!strcmp(tag, "generation")) {
        /* transformers' AssistantTracker: the body renders as it is */
        static const char *const end[] = {"endgeneration", NULL};
        jnode *n;
        HL_TRY(new_node(P, N_WITH, line, &n));
        HL_TRY(expect_block_end(P));
        HL_TRY(parse_body(P, end, &n->kids, &n->n_kids));
        HL_TRY(close_tag(P));
        *out = n;
        return HEARTH_OK;
    }
    if (!strncmp(tag, "end", 3) || !strcmp(tag, "elif") || !strcmp(tag, "else"))
        return jfail(HEARTH_ERR_FORMAT, line, "syntax error: unexpected {%% %s %%}", tag);
    return jfail(HEARTH_ERR_UNSUPPORTED, line, "unsupported Jinja feature '%s'", tag);
}

static bool in_list(const char *const *list, const char *s) {
    for (; list && *list; list++)
        if (!strcmp(*list, s)) return true;
    return false;
}

/* Statements until a {% tag %} named in `stops` (left current: the tag name)
 * or the end of the template (an error when stops is not NULL). */
static hearth_status parse_body(parser *P, const char *const *stops, jnode ***kids, size_t *n_kids) {
    vec body = {0};
    HL_TRY(enter(P));
    for (;;) {
        jtok *c = cur(P);
        jnode *n = NULL;
        if (c->k == TK_EOF) {
            if (stops) {
                const char *const *last = stops;
                while (last[1]) last++;
                return jfail(HEARTH_ERR_FORMAT, c->line, "syntax error: missing {%% %s %%}", *last);
            }
            break;
        } else if (c->k == TK_TEXT) {
            HL_TRY(new_node(P, N_TEXT, c->line, &n));
            n->lit = jv_strv(c->s, c->n);
            next(P);
        } else if (c->k == TK_VAR_BEGIN) {
            next(P);
            HL_TRY(new_node(P, N_OUTPUT, c->line, &n));
            HL_TRY(parse_tuple(P, true, &n->a));
            if (cur(P)->k != TK_VAR_END) return expected(P, "'}}'");
            next(P);
        } else if (c->k == TK_BLOCK_BEGIN) {
            next(P);
            if (cur(P)->k == TK_NAME && in_list(stops, cur(P)->s)) break;
            HL_TRY(parse_statement(P, &n));
        } else {
            return expected(P, "template text or a tag");
        }
        HL_TRY(vec_push(P, &body, n));
    }
    P->depth--;
    *kids = (jnode **)body.v;
    *n_kids = body.n;
    return HEARTH_OK;
}

hearth_status hl_jinja_parse(const char *src, size_t len, hl_jinja_tmpl **out) {
    if (!src || !out) return hl_fail(HEARTH_ERR_INVALID_ARG, "chat template: NULL template");
    *out = NULL;
    hl_jinja_tmpl *t = hl_calloc(1, sizeof *t);
    if (!t) return HEARTH_ERR_OUT_OF_MEMORY;
    t->arena.cap = (size_t)1 << 30;
    jtok *toks;
    size_t n_toks;
    parser P = {.a = &t->arena};
    hearth_status st = hl_jinja_lex(&t->arena, src, len, &toks, &n_toks);
    if (st == HEARTH_OK) {
        P.t = toks;
        P.n = n_toks;
        st = new_node(&P, N_WITH, 1, &t->root);
    }
    if (st == HEARTH_OK) st = parse_body(&P, NULL, &t->root->kids, &t->root->n_kids);
    if (st != HEARTH_OK) {
        hl_jinja_tmpl_free(t);
        return st;
    }
    *out = t;
    return HEARTH_OK;
}

void hl_jinja_tmpl_free(hl_jinja_tmpl *t) {
    if (!t) return;
    ja_free(&t->arena);
    free(t);
}
