/* The JSON Schema converter's private interface, shared by its four files:
 * json_schema.c walks a schema (types, arrays, scalars, enum, anyOf, $ref),
 * json_schema_object.c builds objects and merges allOf, json_schema_emit.c
 * holds the text builder, the rule table, the shared JSON primitives and
 * the grammars of literals, numbers, integer ranges and formats, and
 * json_schema_regex.c translates a `pattern`. */
#ifndef HEARTH_GRAMMAR_JSON_SCHEMA_INTERNAL_H
#define HEARTH_GRAMMAR_JSON_SCHEMA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/status.h"
#include "base/strbuf.h"
#include "hearth.h"

/* Nesting bound for schemas, $ref chains, constant values and pattern
 * groups: deeper input is an error rather than a deep recursion. */
#define HL_JS_MAX_DEPTH 64
/* Largest count a repetition may carry (minLength, maxItems, {m,n} of a
 * pattern): the grammar compiler expands repetitions, so a huge count would
 * be a huge grammar. */
#define HL_JS_MAX_REPEAT 10000
/* Integers, and the integer part of numbers, have at most this many digits,
 * so a model cannot write digits forever. */
#define HL_JS_MAX_DIGITS 16

/* Appends one grammar element, after a space unless at the start or after
 * '(' or a space. */
void hl_js_elem(hl_str *b, const char *s);

/* The shared rules a schema's grammar may reference, each emitted once, on
 * demand (with the prefix). */
typedef enum hl_js_prim {
    HL_JS_SPACE,
    HL_JS_CHAR,
    HL_JS_STRING,
    HL_JS_INTEGRAL,
    HL_JS_FRACTION,
    HL_JS_INTEGER,
    HL_JS_NUMBER,
    HL_JS_BOOLEAN,
    HL_JS_NULL,
    HL_JS_VALUE,
    HL_JS_OBJECT,
    HL_JS_ARRAY,
    HL_JS_YEAR,
    HL_JS_LEAP_YEAR,
    HL_JS_DATE,
    HL_JS_TIME,
    HL_JS_DATE_TIME,
    HL_JS_UUID,
    HL_JS_N_PRIMS
} hl_js_prim;

typedef struct hl_js_rule {
    char *name;
    char *body; /* NULL while reserved (a $ref being converted) */
} hl_js_rule;

/* A $ref being or already converted: its rule, and the guard count when its
 * conversion began (see hl_js_conv.guard). */
typedef struct hl_js_ref {
    char *ref;
    size_t rule;
    int guard;
    bool done;
} hl_js_ref;

typedef struct hl_js_conv {
    const cJSON *doc; /* the schema document, for $ref */
    char *prefix;     /* sanitized rule-name prefix, "" for none */
    hl_js_rule *rules;
    size_t n_rules, cap_rules;
    size_t *slots; /* open-addressed name index: rule index + 1, 0 empty */
    size_t n_slots;
    hl_js_ref *refs;
    size_t n_refs, cap_refs;
    uint32_t prims; /* bit per hl_js_prim referenced */
    hl_str ptr;     /* JSON pointer of the schema being converted */
    int depth;
    /* Counts the object and array bodies entered: a $ref met again at the
     * same count recurs without consuming input (left recursion). */
    int guard;
} hl_js_conv;

/* Fails with INVALID_ARG, "json_schema at POINTER: " + the formatted text. */
hearth_status hl_js_fail(hl_js_conv *c, const char *fmt, ...) HL_PRINTF(2, 3);

/* Appends the (prefixed) name of primitive `p` to `out` and marks it used. */
void hl_js_prim_ref(hl_js_conv *c, hl_js_prim p, hl_str *out);
/* The same for the whitespace rule, which follows every value. */
void hl_js_space(hl_js_conv *c, hl_str *out);

/* Appends the grammar of the values schema `s` accepts, each followed by
 * space; rules it needs are named from `hint`. */
hearth_status hl_js_visit(hl_js_conv *c, const cJSON *s, const char *hint, hl_str *out);
/* The object grammar of an object schema (properties, required,
 * additionalProperties), and of an allOf of object schemas. */
hearth_status hl_js_build_object(hl_js_conv *c, const cJSON *s, const char *hint, hl_str *out);
hearth_status hl_js_build_allof(hl_js_conv *c, const cJSON *s, const char *hint, hl_str *out);
/* INVALID_ARG naming the first keyword of `s` outside the subset. */
hearth_status hl_js_check_keywords(hl_js_conv *c, const cJSON *s);
/* The first constraining keyword of `s` not in `allowed`, or NULL. */
const char *hl_js_other_constraint(const cJSON *s, const char *const *allowed, size_t n_allowed);
/* The schema a local $ref names, or NULL with the error set. */
const cJSON *hl_js_resolve_ref(hl_js_conv *c, const char *ref);

/* The error pointer: push a segment (RFC 6901 escaped) or a segment and an
 * index, returning the length that hl_js_ptr_pop restores. */
size_t hl_js_ptr_push(hl_js_conv *c, const char *seg);
size_t hl_js_ptr_push_index(hl_js_conv *c, const char *seg, size_t i);
void hl_js_ptr_pop(hl_js_conv *c, size_t mark);

/* Adds rule `hint` (prefixed, sanitized, made unique) with `body`; the name
 * chosen goes to *index. A rule with the same name and body is reused.
 * body NULL reserves the name (set it later with hl_js_rule_set). */
hearth_status hl_js_rule_add(hl_js_conv *c, const char *hint, const char *body, size_t *index);
hearth_status hl_js_rule_set(hl_js_conv *c, size_t index, const char *body);

/* Decodes one UTF-8 character from s[*i, n); false if malformed (overlong,
 * surrogate, over U+10FFFF, truncated). */
bool hl_js_utf8_next(const char *s, size_t n, size_t *i, uint32_t *cp);

/* Appends the grammar of the JSON text of code point cp inside a string:
 * the character itself where JSON allows it (non-ASCII also as a \u
 * escape), else its escape (RFC 8259 section 7). */
void hl_js_emit_json_char(hl_str *out, uint32_t cp);
/* The grammar of the JSON string literal holding s[0, n) (UTF-8), quotes
 * included, without trailing space. INVALID_ARG for malformed UTF-8. */
hearth_status hl_js_emit_json_string(hl_js_conv *c, const char *s, size_t n, hl_str *out);
/* The grammar of the JSON number v as Python's json.dumps and cJSON print
 * it, without trailing space. */
void hl_js_emit_number_literal(double v, hl_str *out);
/* Appends `[...]` matching the code points of the sorted, disjoint ranges
 * lo[i]..hi[i]; nothing if there are none. */
void hl_js_emit_class(const uint32_t *lo, const uint32_t *hi, size_t n, bool negate, hl_str *out);

/* Alternatives (separated by |) matching the \u escapes, surrogate pairs
 * for astral characters, of the non-ASCII code points in the sorted ranges
 * (surrogates excluded); nothing if there are none. */
void hl_js_emit_escaped_ranges(const uint32_t *lo, const uint32_t *hi, size_t n, hl_str *out);
/* The grammar of the integers in [lo, hi] (inclusive; |lo|, |hi| below
 * 10^HL_JS_MAX_DIGITS) in JSON's notation, without trailing space. */
void hl_js_emit_int_range(int64_t lo, int64_t hi, hl_str *out);
/* The grammar of JSON numbers (no exponent) in [lo, hi]; has_lo/has_hi false
 * for an open side. The bounds are integers. */
void hl_js_emit_number_range(hl_js_conv *c, bool has_lo, int64_t lo, bool has_hi, int64_t hi, hl_str *out);

/* The grammar of a JSON string's contents that match `pattern` (n bytes)
 * as a whole. INVALID_ARG naming the construct outside the subset. */
hearth_status hl_js_emit_pattern(hl_js_conv *c, const char *pattern, size_t n, hl_str *out);

/* Writes the rules (the primitives used appended) as GBNF text. */
hearth_status hl_js_write_rules(hl_js_conv *c, char **out);
void hl_js_conv_free(hl_js_conv *c);

#endif
