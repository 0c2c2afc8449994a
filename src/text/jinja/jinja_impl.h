/* Internals shared by the Jinja interpreter's files: the arena, tokens (lexer.c),
 * AST nodes (parser.c), the render state (eval.c) and the helpers that filters,
 * tests and methods (filters.c, tests.c, methods.c) use on values (value.c). */
#ifndef HEARTH_TEXT_JINJA_IMPL_H
#define HEARTH_TEXT_JINJA_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/status.h"
#include "text/jinja/jinja.h"

/* ------------------------------------------------------------------ arena -- */

typedef struct jchunk jchunk;
typedef struct jarena {
    jchunk *head;
    size_t used; /* bytes handed out, all chunks */
    size_t cap;  /* limit on `used`; exceeding it fails the allocation */
} jarena;

/* Returns zeroed, 16-byte aligned memory, or NULL with OUT_OF_MEMORY set
 * (also when the arena would pass its cap: "rendering needs more than N MiB"). */
void *hl_ja_alloc(jarena *a, size_t n);
void hl_ja_free(jarena *a);
/* A copy of p[0..n) in the arena, NUL-terminated. */
char *hl_ja_strdup(jarena *a, const char *p, size_t n);

/* ----------------------------------------------------------------- tokens -- */

typedef enum jtok_kind {
    TK_TEXT,        /* template data between tags, whitespace control applied */
    TK_VAR_BEGIN,   /* {{ */
    TK_VAR_END,     /* }} */
    TK_BLOCK_BEGIN, /* {% */
    TK_BLOCK_END,   /* %} */
    TK_NAME,
    TK_STRING, /* escapes decoded */
    TK_INT,
    TK_FLOAT,
    TK_OP, /* operator or punctuation, text in s */
    TK_EOF,
} jtok_kind;

typedef struct jtok {
    jtok_kind k;
    int line;
    const char *s; /* text (TK_TEXT, TK_NAME, TK_STRING, TK_OP); arena */
    size_t n;
    int64_t i;
    double f;
} jtok;

/* Splits source into tokens (ending with TK_EOF). Errors: FORMAT, OUT_OF_MEMORY. */
hearth_status hl_jinja_lex(jarena *a, const char *src, size_t len, jtok **toks, size_t *n_toks);

/* ------------------------------------------------------------------- AST -- */

typedef enum jnode_kind {
    /* expressions */
    N_LIT,     /* lit */
    N_NAME,    /* name */
    N_LIST,    /* items in kids (tuple when op == 1) */
    N_DICT,    /* keys in kids, values in kids2 */
    N_ATTR,    /* a.name */
    N_ITEM,    /* a[b] */
    N_SLICE,   /* a[kids[0]:kids[1]:kids[2]], each may be NULL */
    N_CALL,    /* a(kids..., names[i]=kids2[i]...) */
    N_FILTER,  /* a | name(kids..., names=kids2...); a is NULL in a filter block */
    N_TEST,    /* a is [not] name(kids...); op = negated */
    N_UNARY,   /* op: 'n' not, '-' neg, '+' pos */
    N_BINARY,  /* a op b: arithmetic, '~', 'a' and, 'o' or */
    N_COMPARE, /* a ops[i] kids[i]...: chained comparisons */
    N_COND,    /* b if a else c (c may be NULL) */
    /* statements */
    N_TEXT,        /* lit: the text */
    N_OUTPUT,      /* {{ a }} */
    N_IF,          /* a: condition, kids: body, kids2: else (an elif is an N_IF in kids2) */
    N_FOR,         /* names: targets, a: iterable, b: filter (or NULL), kids: body, kids2: else */
    N_SET,         /* names[0] (and name for ns.attr), a: value; or kids: block body, b: filter */
    N_MACRO,       /* name, names: params, kids2: defaults (NULL when none), kids: body */
    N_CALLBLOCK,   /* a: the call expression, names: caller params, kids: caller body */
    N_FILTERBLOCK, /* b: filter chain applied to the body kids */
    N_WITH,        /* names + kids2: assignments, kids: body */
    N_BREAK,
    N_CONTINUE,
} jnode_kind;

typedef struct jnode jnode;
struct jnode {
    jnode_kind kind;
    int op; /* operator code; see parser.c */
    int line;
    const char *name;
    jv lit;
    jnode *a, *b, *c;
    jnode **kids;
    size_t n_kids;
    jnode **kids2;
    size_t n_kids2;
    const char **names;
    size_t n_names;
    int *ops; /* N_COMPARE: one operator per kid */
};

struct hl_jinja_tmpl {
    jarena arena;
    jnode *root; /* the template body: kids */
};

/* ------------------------------------------------------------ render state -- */

typedef struct jframe jframe;
struct jframe {
    jframe *parent;
    jdict *vars;
};

/* A macro, or the caller of a {% call %} block: the statement (names:
 * parameters, kids2: their defaults, kids: the body) and the frame its body's
 * free names resolve in (the root frame for macros, the call site for callers). */
struct jmacro {
    const jnode *node;
    jframe *scope;
};

struct jloop {
    jlist *items; /* after the loop filter */
    size_t index0;
};

typedef struct jbuf {
    char *p;
    size_t n, cap;
} jbuf;

typedef enum { J_NONE, J_BREAK, J_CONTINUE } jjump;

struct hl_jinja_env {
    jarena arena;
    hl_jinja_limits lim;
    time_t now;
    jframe root;
    jframe *frame; /* the innermost scope */
    jbuf *out;     /* where output goes now (a macro call swaps it) */
    uint64_t iterations;
    uint32_t depth;
    jjump jump;
    jv caller; /* the caller a {% call %} block hands to the macro it calls next */
};

/* Sets "template line N: <msg>" and returns st. */
hearth_status hl_jfail(hearth_status st, int line, const char *fmt, ...) HL_PRINTF(3, 4);

/* ---------------------------------------------------------------- values -- */

jv hl_jv_undef(const char *what);
/* Fails with the message an undefined value v carries (jinja2's wording). */
hearth_status hl_jv_undefined_error(jv v, int line);
jv hl_jv_strv(const char *p, size_t n); /* no copy */
bool hl_jv_truthy(jv v);
bool hl_jv_equal(jv a, jv b);
const char *hl_jv_type_name(jv v); /* Python's name: "str", "int", "dict" ... */
/* dict lookup by key; NULL when absent */
jv *hl_jdict_get(const jdict *d, jv key);
jv *hl_jdict_get_str(const jdict *d, const char *key);

/* str(v) and repr(v) as Python writes them, appended to b. */
hearth_status hl_jbuf_put(hl_jinja_env *e, jbuf *b, const char *p, size_t n);
hearth_status hl_jv_write_str(hl_jinja_env *e, jbuf *b, jv v);
hearth_status hl_jv_write_repr(hl_jinja_env *e, jbuf *b, jv v);
/* str(v) as an arena string. */
hearth_status hl_jv_to_str(hl_jinja_env *e, jv v, jv *out);
/* json.dumps(v, ensure_ascii, indent (< 0: none), separators, sort_keys) */
hearth_status hl_jv_write_json(hl_jinja_env *e, jbuf *b, jv v, bool ensure_ascii, int indent, jv item_sep, jv key_sep,
                               bool sort_keys, int line);
/* Python's repr of a float ("1.0", "1e+20", "0.1"). */
void hl_jv_float_repr(double f, char *buf, size_t size);
/* Python ordering for sort/min/max and < > on numbers and strings. */
hearth_status hl_jv_compare(jv a, jv b, int line, int *cmp);

/* UTF-8 helpers with Python's str semantics: length in code points, the byte
 * offset of code point i, and the width of Python whitespace at p (0 if none). */
size_t hl_ju_len(const char *p, size_t n);
size_t hl_ju_offset(const char *p, size_t n, size_t i);
size_t hl_ju_space_at(const char *p, size_t n);
size_t hl_ju_space_before(const char *p, size_t n); /* width of whitespace ending at p+n */

/* ------------------------------------------------------------ evaluation -- */

hearth_status hl_jeval(hl_jinja_env *e, const jnode *n, jv *out);

/* operators.c: op is the parser's code: unary '+' '-'; binary '+' '-' '*' '/'
 * 'D' (//) '%' 'P' (**) '~'; comparisons 'e' (==) 'n' (!=) '<' 'l' (<=) '>'
 * 'g' (>=) 'i' (in) 'I' (not in). A value a string or list result needs is
 * allocated in e's arena. */
hearth_status hl_jop_unary(int op, jv v, int line, jv *out);
hearth_status hl_jop_binary(hl_jinja_env *e, int op, jv a, jv b, int line, jv *out);
hearth_status hl_jop_compare(int op, jv a, jv b, int line, bool *out);
/* obj.name and obj[key] with jinja2's lookup rules (undefined when absent). */
hearth_status hl_jget_attr(hl_jinja_env *e, jv obj, const char *name, int line, jv *out);
hearth_status hl_jget_item(hl_jinja_env *e, jv obj, jv key, int line, jv *out);
/* The items a for loop visits: a list's items, a dict's keys, a string's characters. */
hearth_status hl_jiterate(hl_jinja_env *e, jv v, int line, jlist **out);
/* Calls a macro or builtin with evaluated arguments. */
hearth_status hl_jcall_value(hl_jinja_env *e, jv fn, jv *args, size_t n_args, const char **kw_names, jv *kw_vals,
                             size_t n_kw, int line, jv *out);

/* Filters (filters.c) and tests (tests.c) by name; false when the name is unknown. */
bool hl_jfilter_known(const char *name);
bool hl_jtest_known(const char *name);
hearth_status hl_jfilter_apply(hl_jinja_env *e, const char *name, jv v, jv *args, size_t n_args, const char **kw_names,
                               jv *kw_vals, size_t n_kw, int line, jv *out);
hearth_status hl_jtest_apply(hl_jinja_env *e, const char *name, jv v, jv *args, size_t n_args, int line, bool *out);

/* Filters, tests, methods and globals are dispatched from tables of entries
 * that start with their name ({name, fn, ...}, CPython's PyMethodDef): the
 * entry of `table` (n entries of `size` bytes) called `name`, or NULL. */
static inline const void *hl_jtable_find(const void *table, size_t n, size_t size, const char *name) {
    for (size_t i = 0; i < n; i++) {
        const void *entry = (const char *)table + i * size;
        if (!strcmp(*(const char *const *)entry, name)) return entry;
    }
    return NULL;
}

/* Methods of str, dict and loop (methods.c). *found is false when `obj` has no
 * method `name`. */
hearth_status hl_jmethod_call(hl_jinja_env *e, jv obj, const char *name, jv *args, size_t n_args, const char **kw_names,
                              jv *kw_vals, size_t n_kw, int line, bool *found, jv *out);
/* The global functions (methods.c): jv of kind JV_BUILTIN, or JV_UNDEF. */
jv hl_jbuiltin_lookup(const char *name);
hearth_status hl_jbuiltin_call(hl_jinja_env *e, uint32_t id, jv *args, size_t n_args, const char **kw_names,
                               jv *kw_vals, size_t n_kw, int line, jv *out);
/* Python's str.strip/lstrip/rstrip (which: 'b', 'l', 'r'); chars NULL: whitespace. */
jv hl_jstr_strip(jv s, const jv *chars, char which);
/* Python's str.replace(old, new, count) (filters.c); count < 0: all. */
hearth_status hl_jstr_replace(hl_jinja_env *e, jv s, jv old, jv repl, int64_t count, jv *out);

#endif
