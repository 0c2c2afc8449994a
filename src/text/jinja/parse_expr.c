/* Jinja expressions: tokens -> expression nodes, by recursive descent with
 * jinja2's grammar and precedence (parser.py), lowest first:
 *   x if c else y | or | and | not | comparisons (== != < <= > >= in, not in,
 *   chained) | + - | ~ | * / // % | ** | unary - + | primary with postfix
 *   .attr [item] [a:b:c] (call), then filters "|f(args)" and tests "is [not] t".
 * Also the token helpers the statement parser (parser.c) shares. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/jinja/parse.h"

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

hearth_status hl_jp_expected(parser *P, const char *what) {
    return hl_jfail(HEARTH_ERR_FORMAT, cur(P)->line, "syntax error: expected %s, got %s", what, tok_desc(cur(P)));
}

hearth_status hl_jp_expect_op(parser *P, const char *op) {
    if (!is_op(cur(P), op)) {
        char what[16];
        snprintf(what, sizeof what, "'%s'", op);
        return hl_jp_expected(P, what);
    }
    next(P);
    return HEARTH_OK;
}

hearth_status hl_jp_expect_name(parser *P, const char **out) {
    if (cur(P)->k != TK_NAME) return hl_jp_expected(P, "a name");
    *out = cur(P)->s;
    next(P);
    return HEARTH_OK;
}

hearth_status hl_jp_new_node(parser *P, jnode_kind kind, int line, jnode **out) {
    *out = hl_ja_alloc(P->a, sizeof **out);
    if (!*out) return HEARTH_ERR_OUT_OF_MEMORY;
    (*out)->kind = kind;
    (*out)->line = line;
    return HEARTH_OK;
}

hearth_status hl_jp_vec_push(parser *P, vec *v, void *x) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 4;
        void **bigger = hl_ja_alloc(P->a, cap * sizeof *bigger);
        if (!bigger) return HEARTH_ERR_OUT_OF_MEMORY;
        if (v->n) memcpy(bigger, v->v, v->n * sizeof *bigger);
        v->v = bigger;
        v->cap = cap;
    }
    v->v[v->n++] = x;
    return HEARTH_OK;
}

static hearth_status parse_or(parser *P, jnode **out);
static hearth_status parse_unary(parser *P, bool with_filter, jnode **out);
static hearth_status parse_primary(parser *P, jnode **out);
static hearth_status parse_postfix(parser *P, jnode *node, jnode **out);

hearth_status hl_jp_enter(parser *P) {
    if (++P->depth > MAX_NESTING)
        return hl_jfail(HEARTH_ERR_UNSUPPORTED, cur(P)->line, "unsupported Jinja feature 'nesting deeper than %d'",
                        MAX_NESTING);
    return HEARTH_OK;
}

/* Call arguments after '(' up to ')': positional into kids, name=value into
 * names/kids2. */
static hearth_status parse_args(parser *P, jnode *call) {
    vec pos = {0}, kw = {0}, kwn = {0};
    HL_TRY(hl_jp_expect_op(P, "("));
    while (!is_op(cur(P), ")")) {
        if (pos.n + kw.n) HL_TRY(hl_jp_expect_op(P, ","));
        if (is_op(cur(P), ")")) break;
        if (is_op(cur(P), "*") || is_op(cur(P), "**"))
            return hl_jfail(HEARTH_ERR_UNSUPPORTED, cur(P)->line, "unsupported Jinja feature '*args in a call'");
        if (cur(P)->k == TK_NAME && is_op(peek(P, 1), "=")) {
            HL_TRY(hl_jp_vec_push(P, &kwn, (void *)cur(P)->s));
            next(P);
            next(P);
            jnode *v;
            HL_TRY(hl_jp_parse_expr(P, &v));
            HL_TRY(hl_jp_vec_push(P, &kw, v));
        } else {
            if (kw.n)
                return hl_jfail(HEARTH_ERR_FORMAT, cur(P)->line,
                                "syntax error: positional argument after a keyword argument");
            jnode *v;
            HL_TRY(hl_jp_parse_expr(P, &v));
            HL_TRY(hl_jp_vec_push(P, &pos, v));
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
    HL_TRY(hl_jp_expect_name(P, out));
    if (is_op(cur(P), ".") && peek(P, 1)->k == TK_NAME)
        return hl_jfail(HEARTH_ERR_UNSUPPORTED, cur(P)->line,
                        "unsupported Jinja feature 'dotted filter or test name %s.%s'", *out, peek(P, 1)->s);
    return HEARTH_OK;
}

hearth_status hl_jp_parse_filter(parser *P, jnode *obj, jnode **out) {
    int line = cur(P)->line;
    jnode *f;
    HL_TRY(hl_jp_new_node(P, N_FILTER, line, &f));
    HL_TRY(parse_dotted(P, &f->name));
    if (!hl_jfilter_known(f->name))
        return hl_jfail(HEARTH_ERR_UNSUPPORTED, line, "unsupported Jinja feature 'filter %s'", f->name);
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
            HL_TRY(hl_jp_parse_filter(P, node, &node));
        } else if (is_name(cur(P), "is")) {
            int line = cur(P)->line;
            next(P);
            jnode *t;
            HL_TRY(hl_jp_new_node(P, N_TEST, line, &t));
            if (is_name(cur(P), "not")) {
                t->op = 1;
                next(P);
            }
            HL_TRY(parse_dotted(P, &t->name));
            if (!hl_jtest_known(t->name))
                return hl_jfail(HEARTH_ERR_UNSUPPORTED, line, "unsupported Jinja feature 'test %s'", t->name);
            t->a = node;
            jtok *c = cur(P);
            if (is_op(c, "(")) {
                HL_TRY(parse_args(P, t));
                if (t->n_kids2)
                    return hl_jfail(HEARTH_ERR_UNSUPPORTED, line,
                                    "unsupported Jinja feature 'keyword argument to a test'");
            } else if ((c->k == TK_NAME && strcmp(c->s, "else") && strcmp(c->s, "or") && strcmp(c->s, "and")) ||
                       c->k == TK_STRING || c->k == TK_INT || c->k == TK_FLOAT || is_op(c, "[") || is_op(c, "{")) {
                jnode *arg;
                HL_TRY(parse_primary(P, &arg));
                HL_TRY(parse_postfix(P, arg, &arg));
                t->kids = hl_ja_alloc(P->a, sizeof *t->kids);
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
        if (!is_op(cur(P), ":") && !is_op(cur(P), "]")) HL_TRY(hl_jp_parse_expr(P, &parts[n]));
        if (is_op(cur(P), ":") && n < 2) {
            n++;
            next(P);
            continue;
        }
        break;
    }
    HL_TRY(hl_jp_expect_op(P, "]"));
    jnode *node;
    if (n == 0) {
        if (!parts[0]) return hl_jfail(HEARTH_ERR_FORMAT, line, "syntax error: empty subscript []");
        HL_TRY(hl_jp_new_node(P, N_ITEM, line, &node));
        node->b = parts[0];
    } else {
        HL_TRY(hl_jp_new_node(P, N_SLICE, line, &node));
        node->kids = hl_ja_alloc(P->a, 3 * sizeof *node->kids);
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
                HL_TRY(hl_jp_new_node(P, N_ATTR, c->line, &n));
                n->name = cur(P)->s;
            } else if (cur(P)->k == TK_INT) {
                HL_TRY(hl_jp_new_node(P, N_ITEM, c->line, &n));
                HL_TRY(hl_jp_new_node(P, N_LIT, c->line, &n->b));
                n->b->lit = hl_jv_int(cur(P)->i);
            } else {
                return hl_jp_expected(P, "an attribute name");
            }
            next(P);
            n->a = node;
            node = n;
        } else if (is_op(c, "[")) {
            HL_TRY(parse_subscript(P, node, &node));
        } else if (is_op(c, "(")) {
            jnode *n;
            HL_TRY(hl_jp_new_node(P, N_CALL, c->line, &n));
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
            HL_TRY(hl_jp_expect_op(P, ","));
            if (is_op(cur(P), close)) break;
        }
        jnode *k;
        HL_TRY(hl_jp_parse_expr(P, &k));
        HL_TRY(hl_jp_vec_push(P, &keys, k));
        if (dict) {
            HL_TRY(hl_jp_expect_op(P, ":"));
            jnode *v;
            HL_TRY(hl_jp_parse_expr(P, &v));
            HL_TRY(hl_jp_vec_push(P, &vals, v));
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
    HL_TRY(hl_jp_enter(P));
    if (c->k == TK_NAME) {
        HL_TRY(hl_jp_new_node(P, N_LIT, c->line, &n));
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
        HL_TRY(hl_jp_new_node(P, N_LIT, c->line, &n));
        size_t total = 0, k = 0;
        while (peek(P, k)->k == TK_STRING) total += peek(P, k++)->n;
        char *s = hl_ja_alloc(P->a, total + 1);
        if (!s) return HEARTH_ERR_OUT_OF_MEMORY;
        total = 0;
        while (cur(P)->k == TK_STRING) {
            memcpy(s + total, cur(P)->s, cur(P)->n);
            total += cur(P)->n;
            next(P);
        }
        n->lit = hl_jv_strv(s, total);
    } else if (c->k == TK_INT || c->k == TK_FLOAT) {
        HL_TRY(hl_jp_new_node(P, N_LIT, c->line, &n));
        n->lit = c->k == TK_INT ? hl_jv_int(c->i) : hl_jv_float(c->f);
        next(P);
    } else if (is_op(c, "(")) {
        next(P);
        if (is_op(cur(P), ")")) {
            next(P);
            HL_TRY(hl_jp_new_node(P, N_LIST, c->line, &n));
            n->op = 1;
        } else {
            HL_TRY(hl_jp_parse_expr(P, &n));
            if (is_op(cur(P), ",")) {
                jnode *t;
                HL_TRY(hl_jp_new_node(P, N_LIST, c->line, &t));
                t->op = 1;
                vec items = {0};
                HL_TRY(hl_jp_vec_push(P, &items, n));
                while (is_op(cur(P), ",")) {
                    next(P);
                    if (is_op(cur(P), ")")) break;
                    HL_TRY(hl_jp_parse_expr(P, &n));
                    HL_TRY(hl_jp_vec_push(P, &items, n));
                }
                t->kids = (jnode **)items.v;
                t->n_kids = items.n;
                n = t;
            }
            HL_TRY(hl_jp_expect_op(P, ")"));
        }
    } else if (is_op(c, "[")) {
        next(P);
        HL_TRY(hl_jp_new_node(P, N_LIST, c->line, &n));
        HL_TRY(parse_items(P, n, "]", false));
    } else if (is_op(c, "{")) {
        next(P);
        HL_TRY(hl_jp_new_node(P, N_DICT, c->line, &n));
        HL_TRY(parse_items(P, n, "}", true));
    } else {
        return hl_jp_expected(P, "an expression");
    }
    P->depth--;
    *out = n;
    return HEARTH_OK;
}

static hearth_status parse_unary(parser *P, bool with_filter, jnode **out) {
    jtok *c = cur(P);
    jnode *node;
    HL_TRY(hl_jp_enter(P));
    if (is_op(c, "-") || is_op(c, "+")) {
        next(P);
        HL_TRY(hl_jp_new_node(P, N_UNARY, c->line, &node));
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
        HL_TRY(hl_jp_new_node(P, N_BINARY, cur(P)->line, &n));
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
        if (n_ops == 64)
            return hl_jfail(HEARTH_ERR_UNSUPPORTED, line,
                            "unsupported Jinja feature 'more than 64 chained comparisons'");
        ops_buf[n_ops++] = code;
        jnode *rhs;
        HL_TRY(parse_math1(P, &rhs));
        HL_TRY(hl_jp_vec_push(P, &kids, rhs));
    }
    if (!n_ops) {
        *out = lhs;
        return HEARTH_OK;
    }
    jnode *n;
    HL_TRY(hl_jp_new_node(P, N_COMPARE, line, &n));
    n->a = lhs;
    n->kids = (jnode **)kids.v;
    n->n_kids = kids.n;
    n->ops = hl_ja_alloc(P->a, (size_t)n_ops * sizeof *n->ops);
    if (!n->ops) return HEARTH_ERR_OUT_OF_MEMORY;
    memcpy(n->ops, ops_buf, (size_t)n_ops * sizeof *n->ops);
    *out = n;
    return HEARTH_OK;
}

static hearth_status parse_not(parser *P, jnode **out) {
    if (is_name(cur(P), "not")) {
        jnode *n;
        HL_TRY(hl_jp_new_node(P, N_UNARY, cur(P)->line, &n));
        next(P);
        n->op = 'n';
        HL_TRY(hl_jp_enter(P));
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
    HL_TRY(hl_jp_enter(P));
    HL_TRY(parse_or(P, &node));
    while (with_condexpr && is_name(cur(P), "if")) {
        jnode *n;
        HL_TRY(hl_jp_new_node(P, N_COND, cur(P)->line, &n));
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

hearth_status hl_jp_parse_expr(parser *P, jnode **out) { return parse_condexpr(P, true, out); }

/* An expression, or a bare tuple "a, b" (as in {{ a, b }} or set x = a, b). */
hearth_status hl_jp_parse_tuple(parser *P, bool with_condexpr, jnode **out) {
    jnode *first;
    HL_TRY(parse_condexpr(P, with_condexpr, &first));
    if (!is_op(cur(P), ",")) {
        *out = first;
        return HEARTH_OK;
    }
    jnode *t;
    HL_TRY(hl_jp_new_node(P, N_LIST, first->line, &t));
    t->op = 1;
    vec items = {0};
    HL_TRY(hl_jp_vec_push(P, &items, first));
    while (is_op(cur(P), ",")) {
        next(P);
        if (cur(P)->k != TK_NAME && cur(P)->k != TK_STRING && cur(P)->k != TK_INT && cur(P)->k != TK_FLOAT &&
            !is_op(cur(P), "(") && !is_op(cur(P), "[") && !is_op(cur(P), "{") && !is_op(cur(P), "-"))
            break;
        jnode *n;
        HL_TRY(parse_condexpr(P, with_condexpr, &n));
        HL_TRY(hl_jp_vec_push(P, &items, n));
    }
    t->kids = (jnode **)items.v;
    t->n_kids = items.n;
    *out = t;
    return HEARTH_OK;
}
