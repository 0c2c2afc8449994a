/* The grammar-writing half of the JSON Schema converter: the
 * table of named rules (unique names, reuse of identical rules), the shared
 * JSON primitives (RFC 8259 strings and numbers, bounded whitespace, the
 * RFC 3339 date and time formats, UUIDs), and the grammars of constant
 * strings and numbers, character classes, and integer and number ranges.
 * The notation is llama.cpp's GBNF (grammars/README.md there); characters
 * outside printable ASCII are always written as \x, \u or \U escapes. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/json_schema_internal.h"

/* ------------------------------------------------------------ elements */

void hl_js_elem(hl_str *b, const char *s) {
    if (b->n > 0 && b->p[b->n - 1] != ' ' && b->p[b->n - 1] != '(') hl_str_puts(b, " ");
    hl_str_puts(b, s);
}

hearth_status hl_js_fail(hl_js_conv *c, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return hl_fail(HEARTH_ERR_INVALID_ARG, "json_schema at %s: %s", c->ptr.n ? c->ptr.p : "/", msg);
}

/* ------------------------------------------------------------- primitives */

/* Bodies name other primitives as @name (the prefix goes where @ is). */
static const struct {
    const char *name;
    const char *body;
    uint32_t deps;
} prims[HL_JS_N_PRIMS] = {
    /* At most one newline and 20 spaces or tabs between tokens (llama.cpp's
     * SPACE_RULE): enough for an indented document, bounded for a model. */
    [HL_JS_SPACE] = {"space", "( \" \" | \"\\n\" [ \\t]{0,20} )?", 0},
    /* RFC 8259 section 7: unescaped characters are all but the quote, the
     * backslash and U+0000-U+001F; \u escapes of UTF-16 surrogates come in
     * high-low pairs (a lone one names no character). */
    [HL_JS_CHAR] =
        {"char",
         "[^\\x22\\x5C\\x00-\\x1F] | \"\\\\\" ( [\\x22\\x5C/bfnrt] | \"u\" ( [0-9a-cA-CefEF] [0-9a-fA-F]{3} | "
         "[dD] [0-7] [0-9a-fA-F]{2} | [dD] [89abAB] [0-9a-fA-F]{2} \"\\\\u\" [dD] [c-fC-F] [0-9a-fA-F]{2} ) )",
         0},
    [HL_JS_STRING] = {"string", "\"\\\"\" @char* \"\\\"\" @space", 1u << HL_JS_CHAR | 1u << HL_JS_SPACE},
    /* RFC 8259 section 6: no leading zeros; at most 16 digits. */
    [HL_JS_INTEGRAL] = {"integral-part", "\"0\" | [1-9] [0-9]{0,15}", 0},
    [HL_JS_FRACTION] = {"fraction", "\".\" [0-9]{1,20}", 0},
    [HL_JS_INTEGER] = {"integer", "\"-\"? @integral-part @space", 1u << HL_JS_INTEGRAL | 1u << HL_JS_SPACE},
    [HL_JS_NUMBER] = {"number", "\"-\"? @integral-part @fraction? ( [eE] [+\\x2D]? [0-9]{1,3} )? @space",
                      1u << HL_JS_INTEGRAL | 1u << HL_JS_FRACTION | 1u << HL_JS_SPACE},
    [HL_JS_BOOLEAN] = {"boolean", "( \"true\" | \"false\" ) @space", 1u << HL_JS_SPACE},
    [HL_JS_NULL] = {"null", "\"null\" @space", 1u << HL_JS_SPACE},
    [HL_JS_VALUE] = {"value", "@object | @array | @string | @number | @boolean | @null",
                     1u << HL_JS_OBJECT | 1u << HL_JS_ARRAY | 1u << HL_JS_STRING | 1u << HL_JS_NUMBER |
                         1u << HL_JS_BOOLEAN | 1u << HL_JS_NULL},
    [HL_JS_OBJECT] = {"object",
                      "\"{\" @space ( @string \":\" @space @value ( \",\" @space @string \":\" @space @value )* )? "
                      "\"}\" @space",
                      1u << HL_JS_STRING | 1u << HL_JS_VALUE | 1u << HL_JS_SPACE},
    [HL_JS_ARRAY] = {"array", "\"[\" @space ( @value ( \",\" @space @value )* )? \"]\" @space",
                     1u << HL_JS_VALUE | 1u << HL_JS_SPACE},
    /* RFC 3339 section 5.6 full-date, years 0001-9999 (Python's datetime has
     * no year 0). A leap year is a multiple of 4 that is not a multiple of
     * 100 unless of 400 (RFC 3339 appendix C): the last two digits decide,
     * or, when they are 00, the first two. */
    [HL_JS_YEAR] = {"year", "[0-9]{3} [1-9] | [0-9]{2} [1-9] \"0\" | [0-9] [1-9] \"00\" | [1-9] \"000\"", 0},
    [HL_JS_LEAP_YEAR] = {"leap-year",
                         "[0-9]{2} ( \"0\" [48] | [2468] [048] | [13579] [26] ) | "
                         "( \"0\" [48] | [2468] [048] | [13579] [26] ) \"00\"",
                         0},
    [HL_JS_DATE] = {"date",
                    "@year \"-\" ( ( \"0\" [13578] | \"1\" [02] ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"3\" [01] ) | "
                    "( \"0\" [469] | \"11\" ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"30\" ) | "
                    "\"02-\" ( \"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8] ) ) | @leap-year \"-02-29\"",
                    1u << HL_JS_YEAR | 1u << HL_JS_LEAP_YEAR},
    /* RFC 3339 full-time: hours 00-23, no leap second, fractions of up to
     * 9 digits, Z or a numeric offset. */
    [HL_JS_TIME] = {"time",
                    "( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{1,9} )? "
                    "( \"Z\" | [+\\x2D] ( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] )",
                    0},
    [HL_JS_DATE_TIME] = {"date-time", "@date \"T\" @time", 1u << HL_JS_DATE | 1u << HL_JS_TIME},
    /* RFC 4122 section 3: 8-4-4-4-12 hexadecimal digits. */
    [HL_JS_UUID] = {"uuid",
                    "[0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" "
                    "[0-9a-fA-F]{12}",
                    0},
};

void hl_js_space(hl_js_conv *c, hl_str *out) { hl_js_prim_ref(c, HL_JS_SPACE, out); }

void hl_js_prim_ref(hl_js_conv *c, hl_js_prim p, hl_str *out) {
    c->prims |= 1u << p;
    if (out->n > 0 && out->p[out->n - 1] != ' ' && out->p[out->n - 1] != '(') hl_str_puts(out, " ");
    hl_str_puts(out, c->prefix);
    hl_str_puts(out, prims[p].name);
}

/* ------------------------------------------------------------ rule table */

static size_t name_hash(const char *s) {
    size_t h = 1469598103934665603u; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

/* The rule named `name`, or SIZE_MAX. */
static size_t rule_find(const hl_js_conv *c, const char *name) {
    if (!c->n_slots) return SIZE_MAX;
    for (size_t i = name_hash(name) & (c->n_slots - 1);; i = (i + 1) & (c->n_slots - 1)) {
        if (!c->slots[i]) return SIZE_MAX;
        if (!strcmp(c->rules[c->slots[i] - 1].name, name)) return c->slots[i] - 1;
    }
}

static hearth_status index_grow(hl_js_conv *c) {
    size_t n = c->n_slots ? c->n_slots * 2 : 64;
    size_t *slots = hl_calloc(n, sizeof *slots);
    if (!slots) return HEARTH_ERR_OUT_OF_MEMORY;
    for (size_t r = 0; r < c->n_rules; r++) {
        size_t i = name_hash(c->rules[r].name) & (n - 1);
        while (slots[i]) i = (i + 1) & (n - 1);
        slots[i] = r + 1;
    }
    free(c->slots);
    c->slots = slots;
    c->n_slots = n;
    return HEARTH_OK;
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = hl_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

hearth_status hl_js_rule_add(hl_js_conv *c, const char *hint, const char *body, size_t *index) {
    /* Rule names are [a-zA-Z0-9-]; long hints are cut (uniqueness comes
     * from the numeric suffix). */
    char base[160];
    size_t n = 0;
    for (const char *p = c->prefix; *p && n < 60; p++) base[n++] = *p;
    for (const char *p = hint; *p && n < 120; p++) {
        char ch = *p;
        base[n++] = ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')) ? ch : '-';
    }
    base[n] = '\0';
    char name[180];
    snprintf(name, sizeof name, "%s", base);
    for (unsigned k = 2;; k++) {
        size_t r = rule_find(c, name);
        if (r == SIZE_MAX) break;
        if (body && c->rules[r].body && !strcmp(c->rules[r].body, body)) {
            *index = r;
            return HEARTH_OK;
        }
        snprintf(name, sizeof name, "%s-%u", base, k);
    }
    if (c->n_rules == c->cap_rules) {
        size_t cap = c->cap_rules ? c->cap_rules * 2 : 32;
        hl_js_rule *rules = realloc(c->rules, cap * sizeof *rules);
        if (!rules) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "json_schema: out of memory for %zu rules", cap);
        c->rules = rules;
        c->cap_rules = cap;
    }
    if ((c->n_rules + 1) * 2 > c->n_slots) HL_TRY(index_grow(c));
    hl_js_rule *r = &c->rules[c->n_rules];
    r->name = dup_str(name);
    r->body = body ? dup_str(body) : NULL;
    if (!r->name || (body && !r->body)) {
        free(r->name);
        free(r->body);
        return HEARTH_ERR_OUT_OF_MEMORY;
    }
    size_t i = name_hash(name) & (c->n_slots - 1);
    while (c->slots[i]) i = (i + 1) & (c->n_slots - 1);
    c->slots[i] = ++c->n_rules;
    *index = c->n_rules - 1;
    return HEARTH_OK;
}

hearth_status hl_js_rule_set(hl_js_conv *c, size_t index, const char *body) {
    char *b = dup_str(body);
    if (!b) return HEARTH_ERR_OUT_OF_MEMORY;
    free(c->rules[index].body);
    c->rules[index].body = b;
    return HEARTH_OK;
}

hearth_status hl_js_write_rules(hl_js_conv *c, char **out) {
    /* The primitives the rules use, and those they use in turn. */
    for (uint32_t before = 0; before != c->prims;) {
        before = c->prims;
        for (int p = 0; p < HL_JS_N_PRIMS; p++)
            if (c->prims & 1u << p) c->prims |= prims[p].deps;
    }
    hl_str b = {0};
    for (size_t r = 0; r < c->n_rules; r++)
        hl_str_printf(&b, "%s ::= ", c->rules[r].name), hl_str_puts(&b, c->rules[r].body), hl_str_puts(&b, "\n");
    for (int p = 0; p < HL_JS_N_PRIMS; p++) {
        if (!(c->prims & 1u << p)) continue;
        hl_str_puts(&b, c->prefix);
        hl_str_puts(&b, prims[p].name);
        hl_str_puts(&b, " ::= ");
        for (const char *s = prims[p].body; *s; s++) {
            if (*s == '@') hl_str_puts(&b, c->prefix);
            else hl_str_put(&b, s, 1);
        }
        hl_str_puts(&b, "\n");
    }
    if (b.oom) {
        hl_str_free(&b);
        return HEARTH_ERR_OUT_OF_MEMORY;
    }
    *out = b.p;
    return HEARTH_OK;
}

void hl_js_conv_free(hl_js_conv *c) {
    for (size_t r = 0; r < c->n_rules; r++) free(c->rules[r].name), free(c->rules[r].body);
    for (size_t r = 0; r < c->n_refs; r++) free(c->refs[r].ref);
    free(c->rules);
    free(c->slots);
    free(c->refs);
    free(c->prefix);
    hl_str_free(&c->ptr);
}

/* ------------------------------------------------------- characters, text */

bool hl_js_utf8_next(const char *s, size_t n, size_t *i, uint32_t *cp) {
    const unsigned char *u = (const unsigned char *)s + *i;
    size_t left = n - *i;
    uint32_t c0 = u[0];
    size_t len = c0 < 0x80 ? 1 : (c0 & 0xE0) == 0xC0 ? 2 : (c0 & 0xF0) == 0xE0 ? 3 : (c0 & 0xF8) == 0xF0 ? 4 : 0;
    if (!len || len > left) return false;
    uint32_t v = len == 1 ? c0 : len == 2 ? c0 & 0x1F : len == 3 ? c0 & 0x0F : c0 & 0x07;
    for (size_t k = 1; k < len; k++) {
        if ((u[k] & 0xC0) != 0x80) return false;
        v = v << 6 | (u[k] & 0x3F);
    }
    static const uint32_t min_of_len[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < min_of_len[len] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return false;
    *i += len;
    *cp = v;
    return true;
}

/* Writes cp as it appears inside a GBNF "literal". */
static void lit_cp(hl_str *b, uint32_t cp) {
    if (cp == '"') hl_str_puts(b, "\\\"");
    else if (cp == '\\') hl_str_puts(b, "\\\\");
    else if (cp >= 0x20 && cp < 0x7F) {
        char ch = (char)cp;
        hl_str_put(b, &ch, 1);
    } else if (cp < 0x80) hl_str_printf(b, "\\x%02X", (unsigned)cp);
    else if (cp < 0x10000) hl_str_printf(b, "\\u%04X", (unsigned)cp);
    else hl_str_printf(b, "\\U%08X", (unsigned)cp);
}

/* Writes cp as a GBNF class endpoint. */
static void class_cp(hl_str *b, uint32_t cp) {
    if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9')) {
        char ch = (char)cp;
        hl_str_put(b, &ch, 1);
    } else if (cp < 0x80) hl_str_printf(b, "\\x%02X", (unsigned)cp);
    else if (cp < 0x10000) hl_str_printf(b, "\\u%04X", (unsigned)cp);
    else hl_str_printf(b, "\\U%08X", (unsigned)cp);
}

/* The JSON escape \uXXXX of a UTF-16 unit: hex letters in either case. */
static void emit_u_escape(hl_str *b, uint32_t unit) {
    char hex[5];
    snprintf(hex, sizeof hex, "%04x", (unsigned)unit);
    hl_js_elem(b, "\"\\\\u");
    bool open = true;
    for (int k = 0; k < 4; k++) {
        char h = hex[k];
        if (h >= '0' && h <= '9') {
            if (!open) hl_js_elem(b, "\""), open = true;
            hl_str_put(b, &h, 1);
        } else {
            if (open) hl_str_puts(b, "\""), open = false;
            hl_str_printf(b, " [%c%c]", h, h - 'a' + 'A');
        }
    }
    if (open) hl_str_puts(b, "\"");
}

void hl_js_emit_json_char(hl_str *out, uint32_t cp) {
    static const char short_esc[] = {['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't'};
    if (cp == '"' || cp == '\\') {
        hl_js_elem(out, cp == '"' ? "\"\\\\\\\"\"" : "\"\\\\\\\\\"");
    } else if (cp < 0x20) {
        if (cp < sizeof short_esc && short_esc[cp]) {
            char s[8];
            snprintf(s, sizeof s, "\"\\\\%c\"", short_esc[cp]);
            hl_js_elem(out, s);
        } else {
            emit_u_escape(out, cp);
        }
    } else if (cp < 0x80) {
        hl_js_elem(out, "\"");
        lit_cp(out, cp);
        hl_str_puts(out, "\"");
    } else {
        hl_js_elem(out, "( \"");
        lit_cp(out, cp);
        hl_str_puts(out, "\" | ");
        if (cp < 0x10000) {
            emit_u_escape(out, cp);
        } else {
            uint32_t v = cp - 0x10000;
            emit_u_escape(out, 0xD800 + (v >> 10));
            emit_u_escape(out, 0xDC00 + (v & 0x3FF));
        }
        hl_str_puts(out, " )");
    }
}

hearth_status hl_js_emit_json_string(hl_js_conv *c, const char *s, size_t n, hl_str *out) {
    /* Printable ASCII goes in one literal run with the quotes; anything
     * else is an element of its own. */
    hl_js_elem(out, "\"\\\"");
    bool open = true;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        if (!hl_js_utf8_next(s, n, &i, &cp)) return hl_js_fail(c, "a string is not valid UTF-8");
        if (cp >= 0x20 && cp < 0x7F && cp != '"' && cp != '\\') {
            if (!open) hl_js_elem(out, "\""), open = true;
            lit_cp(out, cp);
        } else {
            if (open) hl_str_puts(out, "\""), open = false;
            hl_js_emit_json_char(out, cp);
        }
    }
    if (!open) hl_js_elem(out, "\"");
    hl_str_puts(out, "\\\"\"");
    return hl_str_status(out);
}

void hl_js_emit_number_literal(double v, hl_str *out) {
    char s[40];
    if (v == (double)(int64_t)v && v > -9007199254740992.0 && v < 9007199254740992.0) {
        /* An integral value may be written 3 or 3.0 (JSON Schema compares
         * numbers by value, 2020-12 validation section 6.1.3). */
        snprintf(s, sizeof s, "%s%.0f", signbit(v) && v == 0 ? "-" : "", v);
        hl_js_elem(out, "\"");
        hl_str_puts(out, s);
        hl_str_puts(out, "\" \".0\"?");
        return;
    }
    /* The shortest form that reads back as v, as Python's repr finds it. */
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(s, sizeof s, "%.*g", prec, v);
        if (strtod(s, NULL) == v) break;
    }
    hl_js_elem(out, "\"");
    hl_str_puts(out, s);
    hl_str_puts(out, "\"");
}

void hl_js_emit_class(const uint32_t *lo, const uint32_t *hi, size_t n, bool negate, hl_str *out) {
    if (!n && !negate) return;
    hl_js_elem(out, negate ? "[^" : "[");
    for (size_t i = 0; i < n; i++) {
        class_cp(out, lo[i]);
        if (hi[i] > lo[i]) {
            if (hi[i] > lo[i] + 1) hl_str_puts(out, "-");
            class_cp(out, hi[i]);
        }
    }
    hl_str_puts(out, "]");
}

/* ------------------------------------------------- digit-string ranges */

/* Ranges of fixed-length digit strings, in base 10 (integers) or 16 (the
 * hex digits of \u escapes, either case). Digits are values 0..base-1. */

static void any_digits(hl_str *b, size_t n, int base) {
    if (n == 0) return;
    hl_js_elem(b, base == 10 ? "[0-9]" : "[0-9a-fA-F]");
    if (n > 1) hl_str_printf(b, "{%zu}", n);
}

static void digit_class(hl_str *b, int lo, int hi, int base) {
    static const char hex[] = "0123456789abcdef";
    if (lo == hi && lo < 10) {
        hl_str_printf(b, "%s\"%c\"", b->n && b->p[b->n - 1] != ' ' && b->p[b->n - 1] != '(' ? " " : "", hex[lo]);
        return;
    }
    hl_js_elem(b, "[");
    if (lo <= 9) hl_str_printf(b, lo == (hi < 9 ? hi : 9) ? "%c" : "%c-%c", hex[lo], hex[hi < 9 ? hi : 9]);
    if (base == 16 && hi >= 10) {
        int l = lo > 10 ? lo : 10;
        hl_str_printf(b, l == hi ? "%c%c" : "%c-%c", hex[l], l == hi ? hex[l] - 32 : hex[hi]);
        if (l != hi) hl_str_printf(b, "%c-%c", hex[l] - 32, hex[hi] - 32);
    }
    hl_str_puts(b, "]");
}

static bool all_of(const uint8_t *s, size_t n, int d) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != d) return false;
    return true;
}

/* n-digit strings (leading zeros allowed) >= x, and <= x. */
static void at_least(hl_str *b, const uint8_t *x, size_t n, int base) {
    if (all_of(x, n, 0)) {
        any_digits(b, n, base);
        return;
    }
    hl_js_elem(b, "(");
    digit_class(b, x[0], x[0], base);
    at_least(b, x + 1, n - 1, base);
    if (x[0] < base - 1) hl_str_puts(b, " |"), digit_class(b, x[0] + 1, base - 1, base), any_digits(b, n - 1, base);
    hl_str_puts(b, " )");
}

static void at_most(hl_str *b, const uint8_t *x, size_t n, int base) {
    if (all_of(x, n, base - 1)) {
        any_digits(b, n, base);
        return;
    }
    hl_js_elem(b, "(");
    digit_class(b, x[0], x[0], base);
    at_most(b, x + 1, n - 1, base);
    if (x[0] > 0) hl_str_puts(b, " |"), digit_class(b, 0, x[0] - 1, base), any_digits(b, n - 1, base);
    hl_str_puts(b, " )");
}

/* n-digit strings between lo and hi (lo <= hi), as in llama.cpp's
 * _generate_min_max_int: the common prefix, then the first differing
 * digit's three cases (lo's digit, the digits between, hi's digit). */
static void digits_between(hl_str *b, const uint8_t *lo, const uint8_t *hi, size_t n, int base) {
    size_t k = 0;
    while (k < n && lo[k] == hi[k]) digit_class(b, lo[k], lo[k], base), k++;
    if (k == n) return;
    lo += k, hi += k, n -= k;
    if (all_of(lo + 1, n - 1, 0) && all_of(hi + 1, n - 1, base - 1)) {
        digit_class(b, lo[0], hi[0], base);
        any_digits(b, n - 1, base);
        return;
    }
    hl_js_elem(b, "(");
    digit_class(b, lo[0], lo[0], base);
    at_least(b, lo + 1, n - 1, base);
    if (lo[0] + 1 <= hi[0] - 1)
        hl_str_puts(b, " |"), digit_class(b, lo[0] + 1, hi[0] - 1, base), any_digits(b, n - 1, base);
    hl_str_puts(b, " |");
    digit_class(b, hi[0], hi[0], base);
    at_most(b, hi + 1, n - 1, base);
    hl_str_puts(b, " )");
}

/* The n digits of v in `base`, most significant first. */
static void to_digits(uint64_t v, size_t n, int base, uint8_t *d) {
    for (size_t i = n; i-- > 0; v /= (unsigned)base) d[i] = (uint8_t)(v % (unsigned)base);
}

/* "\\u" and four hex digits between lo and hi (UTF-16 units). */
static void u_escape_range(hl_str *b, uint32_t lo, uint32_t hi) {
    uint8_t l[4], h[4];
    to_digits(lo, 4, 16, l);
    to_digits(hi, 4, 16, h);
    hl_js_elem(b, "\"\\\\u\"");
    digits_between(b, l, h, 4, 16);
}

void hl_js_emit_escaped_ranges(const uint32_t *lo, const uint32_t *hi, size_t n, hl_str *out) {
    bool first = true;
    for (size_t i = 0; i < n; i++) {
        /* the BMP part outside the surrogates, then the astral part */
        uint32_t parts[2][2] = {{lo[i] > 0x80 ? lo[i] : 0x80, hi[i] < 0xD7FF ? hi[i] : 0xD7FF},
                                {lo[i] > 0xE000 ? lo[i] : 0xE000, hi[i] < 0xFFFF ? hi[i] : 0xFFFF}};
        for (int k = 0; k < 2; k++)
            if (parts[k][0] <= parts[k][1]) {
                hl_str_puts(out, first ? "" : " |");
                first = false;
                u_escape_range(out, parts[k][0], parts[k][1]);
            }
        if (hi[i] < 0x10000) continue;
        /* astral: a high surrogate, then the low surrogates it takes */
        uint32_t a = (lo[i] > 0x10000 ? lo[i] : 0x10000) - 0x10000, z = hi[i] - 0x10000;
        uint32_t ah = 0xD800 + (a >> 10), zh = 0xD800 + (z >> 10);
        uint32_t al = 0xDC00 + (a & 0x3FF), zl = 0xDC00 + (z & 0x3FF);
        uint32_t pieces[3][4] = {
            {ah, ah, al, ah == zh ? zl : 0xDFFF}, {ah + 1, zh - 1, 0xDC00, 0xDFFF}, {zh, zh, 0xDC00, zl}};
        for (int k = 0; k < (ah == zh ? 1 : 3); k++) {
            if (pieces[k][0] > pieces[k][1]) continue;
            hl_str_puts(out, first ? "" : " |");
            first = false;
            u_escape_range(out, pieces[k][0], pieces[k][1]);
            u_escape_range(out, pieces[k][2], pieces[k][3]);
        }
    }
}

/* Decimal numerals without leading zeros of the values in [lo, hi]. */
static void uint_range(hl_str *b, uint64_t lo, uint64_t hi) {
    hl_js_elem(b, "(");
    bool first = true;
    if (lo == 0) {
        hl_js_elem(b, "\"0\"");
        first = false;
        lo = 1;
    }
    uint64_t pow = 1;
    for (size_t d = 1; d <= 20 && lo <= hi; d++, pow *= 10) {
        uint64_t top = d < 20 ? pow * 10 - 1 : UINT64_MAX;
        if (lo > top) continue;
        uint64_t b_end = hi < top ? hi : top;
        uint8_t ld[20], hd[20];
        to_digits(lo, d, 10, ld);
        to_digits(b_end, d, 10, hd);
        if (!first) hl_str_puts(b, " |");
        first = false;
        digits_between(b, ld, hd, d, 10);
        if (b_end == hi) break;
        lo = b_end + 1;
    }
    hl_str_puts(b, " )");
}

void hl_js_emit_int_range(int64_t lo, int64_t hi, hl_str *out) {
    hl_js_elem(out, "(");
    if (lo < 0) {
        hl_js_elem(out, "\"-\"");
        uint_range(out, hi < 0 ? (uint64_t)-hi : 1, (uint64_t)-lo);
        if (hi >= 0) hl_str_puts(out, " |");
    }
    if (hi >= 0) uint_range(out, lo > 0 ? (uint64_t)lo : 0, (uint64_t)hi);
    hl_str_puts(out, " )");
}

/* Unsigned numbers (integer part, optional fraction) in [lo, hi], hi open
 * when !has_hi: an integer part below hi takes any fraction, hi itself only
 * zeros. */
static void unsigned_number_range(hl_js_conv *c, uint64_t lo, bool has_hi, uint64_t hi, hl_str *out) {
    static const uint64_t max = 9999999999999999u; /* HL_JS_MAX_DIGITS nines */
    hl_js_elem(out, "(");
    if (!has_hi || hi > lo) {
        uint_range(out, lo, has_hi ? hi - 1 : max);
        hl_js_prim_ref(c, HL_JS_FRACTION, out);
        hl_str_puts(out, "?");
    }
    if (has_hi) {
        if (hi > lo) hl_str_puts(out, " |");
        hl_str_printf(out, " \"%llu\" ( \".\" \"0\"{1,20} )?", (unsigned long long)hi);
    }
    hl_str_puts(out, " )");
}

void hl_js_emit_number_range(hl_js_conv *c, bool has_lo, int64_t lo, bool has_hi, int64_t hi, hl_str *out) {
    hl_js_elem(out, "(");
    bool neg = !has_lo || lo < 0, pos = !has_hi || hi >= 0;
    if (neg) {
        /* magnitudes in [max(-hi, 0), -lo] */
        hl_js_elem(out, "\"-\"");
        unsigned_number_range(c, has_hi && hi < 0 ? (uint64_t)-hi : 0, has_lo, has_lo ? (uint64_t)-lo : 0, out);
        if (pos) hl_str_puts(out, " |");
    }
    if (pos) unsigned_number_range(c, has_lo && lo > 0 ? (uint64_t)lo : 0, has_hi, has_hi ? (uint64_t)hi : 0, out);
    hl_str_puts(out, " )");
}
