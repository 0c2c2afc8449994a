/* The Jinja interpreter behind chat templates: parses a template once into an
 * AST (hl_jinja_parse) and renders it (hl_jinja_render) with variables held in
 * an environment. Semantics follow Python jinja2 as Hugging Face transformers
 * configures it for chat templates: ImmutableSandboxedEnvironment with
 * trim_blocks and lstrip_blocks, the loopcontrols extension (break/continue),
 * {% generation %} blocks, transformers' tojson (json.dumps with
 * ensure_ascii=False) and the globals raise_exception and strftime_now.
 * Features outside the supported subset fail with HEARTH_ERR_UNSUPPORTED and
 * "template line N: unsupported Jinja feature '<name>'". Every allocation of a
 * render comes from the environment's arena, which is freed as a whole. */
#ifndef HEARTH_TEXT_JINJA_H
#define HEARTH_TEXT_JINJA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "hearth.h"

typedef struct hl_jinja_tmpl hl_jinja_tmpl;
typedef struct hl_jinja_env hl_jinja_env;

typedef enum jv_kind {
    JV_UNDEF, /* jinja2's Undefined: prints as "", false, iterates as empty */
    JV_NONE,
    JV_BOOL,
    JV_INT,
    JV_FLOAT,
    JV_STR,
    JV_LIST, /* list or tuple (jl->tuple) */
    JV_DICT, /* insertion-ordered mapping */
    JV_NS,   /* namespace(): a dict whose attributes `set` may assign */
    JV_LOOP, /* the `loop` variable of a for loop */
    JV_MACRO,
    JV_BUILTIN, /* a global function: range, namespace, raise_exception ... */
} jv_kind;

typedef struct jlist jlist;
typedef struct jdict jdict;
typedef struct jloop jloop;
typedef struct jmacro jmacro;

/* A value. Strings are UTF-8, not NUL-terminated, and live in the arena (or in
 * the template); values are immutable except namespaces and the loop state. */
typedef struct jv {
    jv_kind k;
    uint32_t aux; /* JV_BUILTIN: which one */
    union {
        bool b;
        int64_t i;
        double f;
        struct {
            const char *p;
            size_t n;
        } s; /* JV_STR; JV_UNDEF: what was undefined (for messages) */
        jlist *l;
        jdict *d; /* JV_DICT, JV_NS */
        jloop *loop;
        const jmacro *m; /* JV_MACRO */
    } u;
} jv;

struct jlist {
    size_t n, cap;
    jv *v;
    bool tuple;
};

struct jdict {
    size_t n, cap;
    jv *keys;
    jv *vals;
};

/* Resource limits for one render; hostile templates stop at these with
 * HEARTH_ERR_FORMAT (OUT_OF_MEMORY for max_memory) instead of exhausting the
 * machine. */
typedef struct hl_jinja_limits {
    size_t max_output;       /* bytes of rendered text (default 16 MiB) */
    size_t max_memory;       /* bytes of arena for values (default 256 MiB) */
    uint64_t max_iterations; /* loop iterations in total (default 1,000,000) */
    uint32_t max_depth;      /* nesting of evaluation and macro calls (default 256) */
} hl_jinja_limits;

hl_jinja_limits hl_jinja_default_limits(void);

/* Parses `len` bytes of template source. Errors: FORMAT (syntax error,
 * "template line N: ..."), UNSUPPORTED (a Jinja feature outside the subset,
 * "template line N: unsupported Jinja feature 'NAME'"), OUT_OF_MEMORY. */
hearth_status hl_jinja_parse(const char *src, size_t len, hl_jinja_tmpl **out);
void hl_jinja_tmpl_free(hl_jinja_tmpl *t);

/* An environment holds the global variables and the arena of one render.
 * `limits` may be NULL for the defaults; `now` is what strftime_now formats
 * (local time). Errors: OUT_OF_MEMORY. */
hearth_status hl_jinja_env_init(const hl_jinja_limits *limits, time_t now, hl_jinja_env **out);
void hl_jinja_env_free(hl_jinja_env *env);

/* Value builders; they allocate in the environment's arena and return false
 * (with OUT_OF_MEMORY set) when it is exhausted. */
jv hl_jv_none(void);
jv hl_jv_bool(bool b);
jv hl_jv_int(int64_t i);
jv hl_jv_float(double f);
bool hl_jv_str(hl_jinja_env *env, const char *p, size_t n, jv *out); /* copies p */
bool hl_jv_list(hl_jinja_env *env, jv *out);
bool hl_jv_dict(hl_jinja_env *env, jv *out);
bool hl_jv_list_push(hl_jinja_env *env, jv list, jv item);
bool hl_jv_dict_set(hl_jinja_env *env, jv dict, jv key, jv val); /* replaces an equal key */

/* Defines the global variable `name` (copied) for the render. */
hearth_status hl_jinja_env_set(hl_jinja_env *env, const char *name, jv val);

/* Renders the template; *out receives a malloc'd NUL-terminated string (free
 * with free()) and *len its length. Errors: FORMAT (a runtime error in the
 * template, or a limit reached; "chat template line N: ..."), INVALID_ARG (the
 * template called raise_exception; the message is the template's),
 * UNSUPPORTED, OUT_OF_MEMORY (also past max_memory). */
hearth_status hl_jinja_render(hl_jinja_env *env, const hl_jinja_tmpl *tmpl, char **out, size_t *len);

#endif
