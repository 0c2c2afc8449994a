/* Jinja tests ("x is t(args)") with jinja2's semantics (tests.py), dispatched
 * from one {name, fn} table; the comparison tests take jinja2's aliases
 * (eq, equalto, ==; lt, lessthan, < ...). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "text/jinja/jinja_impl.h"

/* A test's table entry and one call of it: the value, the first argument
 * (undefined when none), and the entry, whose opt says which variant of a
 * shared function runs. */
typedef struct test_def test_def;
typedef struct tcall {
    const test_def *t;
    jv v, x;
    int line;
} tcall;
struct test_def {
    const char *name;
    hearth_status (*fn)(const tcall *c, bool *out);
    int opt;
};

/* none, boolean, integer, float, string, mapping, undefined: opt is the kind. */
static hearth_status t_kind(const tcall *c, bool *out) {
    *out = c->v.k == (jv_kind)c->t->opt;
    return HEARTH_OK;
}

static hearth_status t_defined(const tcall *c, bool *out) {
    *out = c->v.k != JV_UNDEF;
    return HEARTH_OK;
}

/* true and false: opt is the boolean. */
static hearth_status t_bool(const tcall *c, bool *out) {
    *out = c->v.k == JV_BOOL && c->v.u.b == (bool)c->t->opt;
    return HEARTH_OK;
}

static hearth_status t_number(const tcall *c, bool *out) {
    *out = c->v.k == JV_INT || c->v.k == JV_FLOAT || c->v.k == JV_BOOL;
    return HEARTH_OK;
}

/* iterable and sequence. */
static hearth_status t_iterable(const tcall *c, bool *out) {
    const jv_kind k = c->v.k;
    *out = k == JV_STR || k == JV_LIST || k == JV_DICT || k == JV_UNDEF;
    return HEARTH_OK;
}

static hearth_status t_callable(const tcall *c, bool *out) {
    *out = c->v.k == JV_MACRO || c->v.k == JV_BUILTIN;
    return HEARTH_OK;
}

/* escaped: nothing is markup-safe here. */
static hearth_status t_never(const tcall *c, bool *out) {
    (void)c;
    *out = false;
    return HEARTH_OK;
}

/* lower and upper (opt 1): cased, and no letter of the other case. */
static hearth_status t_case(const tcall *c, bool *out) {
    const jv v = c->v;
    const bool upper = c->t->opt;
    *out = false;
    if (v.k != JV_STR) return HEARTH_OK;
    bool cased = false;
    for (size_t i = 0; i < v.u.s.n; i++) {
        unsigned char ch = (unsigned char)v.u.s.p[i];
        if (upper ? islower(ch) : isupper(ch)) return HEARTH_OK;
        cased = cased || isalpha(ch);
    }
    *out = cased;
    return HEARTH_OK;
}

/* filter and test (opt 't'): whether the name is one. */
static hearth_status t_known(const tcall *c, bool *out) {
    char s[32] = "";
    if (c->x.k == JV_STR) snprintf(s, sizeof s, "%.*s", (int)(c->x.u.s.n < 31 ? c->x.u.s.n : 31), c->x.u.s.p);
    *out = c->t->opt == 't' ? hl_jtest_known(s) : hl_jfilter_known(s);
    return HEARTH_OK;
}

/* odd, even, divisibleby: opt is 'o', 'e' or 'd'. */
static hearth_status t_integer(const tcall *c, bool *out) {
    const jv v = c->v, x = c->x;
    if (v.k != JV_INT && v.k != JV_BOOL)
        return hl_jfail(HEARTH_ERR_FORMAT, c->line, "test %s expects an integer, got %s", c->t->name,
                        hl_jv_type_name(v));
    int64_t i = v.k == JV_INT ? v.u.i : v.u.b;
    if (c->t->opt == 'o') *out = i % 2 != 0;
    else if (c->t->opt == 'e') *out = i % 2 == 0;
    else {
        if (x.k != JV_INT || x.u.i == 0)
            return hl_jfail(HEARTH_ERR_FORMAT, c->line, "divisibleby needs a non-zero integer");
        *out = x.u.i == -1 || i % x.u.i == 0;
    }
    return HEARTH_OK;
}

static hearth_status t_sameas(const tcall *c, bool *out) {
    const jv v = c->v, x = c->x;
    *out = v.k == x.k && (v.k == JV_NONE || v.k == JV_UNDEF || (v.k == JV_BOOL && v.u.b == x.u.b) || hl_jv_equal(v, x));
    return HEARTH_OK;
}

static hearth_status t_in(const tcall *c, bool *out) {
    const jv v = c->v, x = c->x;
    if (x.k == JV_STR && v.k == JV_STR) {
        *out = v.u.s.n == 0;
        for (size_t i = 0; !*out && i + v.u.s.n <= x.u.s.n; i++) *out = !memcmp(x.u.s.p + i, v.u.s.p, v.u.s.n);
    } else if (x.k == JV_LIST) {
        *out = false;
        for (size_t i = 0; i < x.u.l->n && !*out; i++) *out = hl_jv_equal(x.u.l->v[i], v);
    } else if (x.k == JV_DICT) {
        *out = hl_jdict_get(x.u.d, v) != NULL;
    } else {
        return hl_jfail(HEARTH_ERR_FORMAT, c->line, "test 'in' needs a container, got %s", hl_jv_type_name(x));
    }
    return HEARTH_OK;
}

/* The comparisons: opt is 'e' (==), 'n' (!=), '<', 'l' (<=), '>', 'g' (>=). */
static hearth_status t_compare(const tcall *c, bool *out) {
    const int op = c->t->opt;
    if (op == 'e' || op == 'n') {
        *out = hl_jv_equal(c->v, c->x) == (op == 'e');
        return HEARTH_OK;
    }
    int cmp;
    HL_TRY(hl_jv_compare(c->v, c->x, c->line, &cmp));
    *out = op == '<' ? cmp < 0 : op == 'l' ? cmp <= 0 : op == '>' ? cmp > 0 : cmp >= 0;
    return HEARTH_OK;
}

static const test_def TESTS[] = {
    {"boolean", t_kind, JV_BOOL},
    {"callable", t_callable, 0},
    {"defined", t_defined, 0},
    {"divisibleby", t_integer, 'd'},
    {"eq", t_compare, 'e'},
    {"equalto", t_compare, 'e'},
    {"escaped", t_never, 0},
    {"even", t_integer, 'e'},
    {"false", t_bool, false},
    {"filter", t_known, 'f'},
    {"float", t_kind, JV_FLOAT},
    {"ge", t_compare, 'g'},
    {"gt", t_compare, '>'},
    {"greaterthan", t_compare, '>'},
    {"in", t_in, 0},
    {"integer", t_kind, JV_INT},
    {"iterable", t_iterable, 0},
    {"le", t_compare, 'l'},
    {"lower", t_case, 0},
    {"lt", t_compare, '<'},
    {"lessthan", t_compare, '<'},
    {"mapping", t_kind, JV_DICT},
    {"ne", t_compare, 'n'},
    {"none", t_kind, JV_NONE},
    {"number", t_number, 0},
    {"odd", t_integer, 'o'},
    {"sameas", t_sameas, 0},
    {"sequence", t_iterable, 0},
    {"string", t_kind, JV_STR},
    {"test", t_known, 't'},
    {"true", t_bool, true},
    {"undefined", t_kind, JV_UNDEF},
    {"upper", t_case, 1},
    {"==", t_compare, 'e'},
    {"!=", t_compare, 'n'},
    {"<", t_compare, '<'},
    {"<=", t_compare, 'l'},
    {">", t_compare, '>'},
    {">=", t_compare, 'g'},
};

static const test_def *find_test(const char *name) {
    return hl_jtable_find(TESTS, sizeof TESTS / sizeof TESTS[0], sizeof TESTS[0], name);
}

bool hl_jtest_known(const char *name) { return find_test(name) != NULL; }

hearth_status hl_jtest_apply(hl_jinja_env *e, const char *name, jv v, jv *args, size_t n_args, int line, bool *out) {
    (void)e;
    const test_def *t = find_test(name);
    if (!t) return hl_jfail(HEARTH_ERR_UNSUPPORTED, line, "unsupported Jinja feature 'test %s'", name);
    const tcall c = {t, v, n_args ? args[0] : (jv){.k = JV_UNDEF}, line};
    return t->fn(&c, out);
}
