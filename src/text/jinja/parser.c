/* Jinja parser: tokens -> AST (jnode), the statements: if/elif/else, for
 * (with loop filter and else), set (also ns.attr and block set), macro, call
 * block, filter block, with, break/continue, generation; other tags fail as
 * unsupported features. Expressions are parse_expr.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/jinja/parse.h"

/* ------------------------------------------------------------ statements -- */

static hearth_status parse_body(parser *P, const char *const *stops, jnode ***kids, size_t *n_kids);

static hearth_status expect_block_end(parser *P) {
    if (cur(P)->k != TK_BLOCK_END) return hl_jp_expected(P, "'%}'");
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
        HL_TRY(hl_jp_expect_name(P, &name));
        HL_TRY(hl_jp_vec_push(P, &names, (void *)name));
        if (!is_op(cur(P), ",")) break;
        next(P);
    }
    if (paren) HL_TRY(hl_jp_expect_op(P, ")"));
    n->names = (const char **)names.v;
    n->n_names = names.n;
    return HEARTH_OK;
}

static hearth_status parse_if(parser *P, int line, jnode **out) {
    static const char *const stops[] = {"elif", "else", "endif", NULL};
    jnode *n;
    HL_TRY(hl_jp_new_node(P, N_IF, line, &n));
    HL_TRY(hl_jp_parse_tuple(P, false, &n->a));
    HL_TRY(expect_block_end(P));
    HL_TRY(parse_body(P, stops, &n->kids, &n->n_kids));
    if (is_name(cur(P), "elif")) {
        int l = cur(P)->line;
        next(P);
        n->kids2 = hl_ja_alloc(P->a, sizeof *n->kids2);
        if (!n->kids2) return HEARTH_ERR_OUT_OF_MEMORY;
        n->n_kids2 = 1;
        HL_TRY(hl_jp_enter(P));
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
    HL_TRY(hl_jp_new_node(P, N_FOR, line, &n));
    HL_TRY(parse_targets(P, n));
    if (!is_name(cur(P), "in")) return hl_jp_expected(P, "'in'");
    next(P);
    HL_TRY(hl_jp_parse_tuple(P, false, &n->a));
    if (is_name(cur(P), "if")) {
        next(P);
        HL_TRY(hl_jp_parse_expr(P, &n->b));
    }
    if (is_name(cur(P), "recursive"))
        return hl_jfail(HEARTH_ERR_UNSUPPORTED, cur(P)->line, "unsupported Jinja feature 'recursive loop'");
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
    if (!first_bar) HL_TRY(hl_jp_parse_filter(P, node, &node));
    while (is_op(cur(P), "|")) {
        next(P);
        HL_TRY(hl_jp_parse_filter(P, node, &node));
    }
    *out = node;
    return HEARTH_OK;
}

static hearth_status parse_set(parser *P, int line, jnode **out) {
    static const char *const end[] = {"endset", NULL};
    jnode *n;
    HL_TRY(hl_jp_new_node(P, N_SET, line, &n));
    if (cur(P)->k == TK_NAME && is_op(peek(P, 1), ".") && peek(P, 2)->k == TK_NAME) {
        n->names = hl_ja_alloc(P->a, sizeof *n->names);
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
        HL_TRY(hl_jp_parse_tuple(P, true, &n->a));
        HL_TRY(expect_block_end(P));
        *out = n;
        return HEARTH_OK;
    }
    if (n->n_names != 1 || n->name) return hl_jp_expected(P, "'='");
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
    HL_TRY(hl_jp_expect_op(P, "("));
    while (!is_op(cur(P), ")")) {
        if (names.n) HL_TRY(hl_jp_expect_op(P, ","));
        const char *name = NULL;
        HL_TRY(hl_jp_expect_name(P, &name));
        HL_TRY(hl_jp_vec_push(P, &names, (void *)name));
        jnode *def = NULL;
        if (is_op(cur(P), "=")) {
            next(P);
            HL_TRY(hl_jp_parse_expr(P, &def));
        } else if (defs.n && defs.v[defs.n - 1]) {
            return hl_jfail(HEARTH_ERR_FORMAT, cur(P)->line,
                            "syntax error: non-default argument follows default argument");
        }
        HL_TRY(hl_jp_vec_push(P, &defs, def));
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
    HL_TRY(hl_jp_new_node(P, N_MACRO, line, &n));
    HL_TRY(hl_jp_expect_name(P, &n->name));
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
    HL_TRY(hl_jp_new_node(P, N_CALLBLOCK, line, &n));
    if (is_op(cur(P), "(")) HL_TRY(parse_params(P, n));
    HL_TRY(hl_jp_parse_expr(P, &n->a));
    if (n->a->kind != N_CALL) return hl_jfail(HEARTH_ERR_FORMAT, line, "syntax error: {%% call %%} needs a macro call");
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
    HL_TRY(hl_jp_new_node(P, N_WITH, line, &n));
    vec names = {0}, vals = {0};
    while (cur(P)->k != TK_BLOCK_END) {
        if (names.n) HL_TRY(hl_jp_expect_op(P, ","));
        const char *name = NULL;
        HL_TRY(hl_jp_expect_name(P, &name));
        HL_TRY(hl_jp_expect_op(P, "="));
        jnode *v;
        HL_TRY(hl_jp_parse_expr(P, &v));
        HL_TRY(hl_jp_vec_push(P, &names, (void *)name));
        HL_TRY(hl_jp_vec_push(P, &vals, v));
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
    if (c->k != TK_NAME) return hl_jp_expected(P, "a tag name");
    const char *tag = c->s;
    next(P);
    if (!strcmp(tag, "if")) return parse_if(P, line, out);
    if (!strcmp(tag, "for")) return parse_for(P, line, out);
    if (!strcmp(tag, "set")) return parse_set(P, line, out);
    if (!strcmp(tag, "macro")) return parse_macro(P, line, out);
    if (!strcmp(tag, "call")) return parse_call_block(P, line, out);
    if (!strcmp(tag, "with")) return parse_with(P, line, out);
    if (!strcmp(tag, "break") || !strcmp(tag, "continue")) {
        if (!P->loops) return hl_jfail(HEARTH_ERR_FORMAT, line, "syntax error: '%s' outside loop", tag);
        HL_TRY(hl_jp_new_node(P, tag[0] == 'b' ? N_BREAK : N_CONTINUE, line, out));
        return expect_block_end(P);
    }
    if (!strcmp(tag, "filter")) {
        static const char *const end[] = {"endfilter", NULL};
        jnode *n;
        HL_TRY(hl_jp_new_node(P, N_FILTERBLOCK, line, &n));
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
        HL_TRY(hl_jp_new_node(P, N_WITH, line, &n));
        HL_TRY(expect_block_end(P));
        HL_TRY(parse_body(P, end, &n->kids, &n->n_kids));
        HL_TRY(close_tag(P));
        *out = n;
        return HEARTH_OK;
    }
    if (!strncmp(tag, "end", 3) || !strcmp(tag, "elif") || !strcmp(tag, "else"))
        return hl_jfail(HEARTH_ERR_FORMAT, line, "syntax error: unexpected {%% %s %%}", tag);
    return hl_jfail(HEARTH_ERR_UNSUPPORTED, line, "unsupported Jinja feature '%s'", tag);
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
    HL_TRY(hl_jp_enter(P));
    for (;;) {
        jtok *c = cur(P);
        jnode *n = NULL;
        if (c->k == TK_EOF) {
            if (stops) {
                const char *const *last = stops;
                while (last[1]) last++;
                return hl_jfail(HEARTH_ERR_FORMAT, c->line, "syntax error: missing {%% %s %%}", *last);
            }
            break;
        } else if (c->k == TK_TEXT) {
            HL_TRY(hl_jp_new_node(P, N_TEXT, c->line, &n));
            n->lit = hl_jv_strv(c->s, c->n);
            next(P);
        } else if (c->k == TK_VAR_BEGIN) {
            next(P);
            HL_TRY(hl_jp_new_node(P, N_OUTPUT, c->line, &n));
            HL_TRY(hl_jp_parse_tuple(P, true, &n->a));
            if (cur(P)->k != TK_VAR_END) return hl_jp_expected(P, "'}}'");
            next(P);
        } else if (c->k == TK_BLOCK_BEGIN) {
            next(P);
            if (cur(P)->k == TK_NAME && in_list(stops, cur(P)->s)) break;
            HL_TRY(parse_statement(P, &n));
        } else {
            return hl_jp_expected(P, "template text or a tag");
        }
        HL_TRY(hl_jp_vec_push(P, &body, n));
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
        st = hl_jp_new_node(&P, N_WITH, 1, &t->root);
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
    hl_ja_free(&t->arena);
    free(t);
}
