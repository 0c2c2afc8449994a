/* A JSON Schema `pattern` (an ECMA-262 regular expression, 2020-12
 * validation section 6.3.3) as the grammar of the JSON string contents it
 * matches. The grammar matches the whole string: a leading ^ and a trailing
 * $ are dropped, and an unanchored pattern is treated as anchored (a subset
 * of what the pattern accepts, since JSON Schema searches for a match
 * anywhere). Supported: literal characters, escapes (\d \w \s and their
 * negations, \t \n \r \f \v \0 \xHH \uHHHH, escaped punctuation), `.`,
 * classes with ranges and negation, groups ( ), (?: ), (?<name> ),
 * alternation, and the quantifiers * + ? {m} {m,} {m,n} (lazy ones too: the
 * language is the same). Lookarounds, backreferences, word boundaries,
 * inline flags, property escapes and anchors inside the pattern are errors
 * that name the construct.
 *
 * A character the pattern matches is written as JSON writes it (RFC 8259
 * section 7): quote, backslash and control characters as their escapes;
 * non-ASCII characters raw or as \u escapes (surrogate pairs past the
 * BMP), as json.dumps writes them. \d, \w, \D and \W are ASCII (as in ECMA-262; Python's
 * are wider, which only makes them accept more). */
#include <stdlib.h>
#include <string.h>

#include "grammar/json_schema_internal.h"

typedef struct rset {
    uint32_t *lo, *hi; /* sorted, disjoint after norm() */
    size_t n, cap;
} rset;

typedef struct rx {
    hl_js_conv *c;
    const char *s;
    size_t n, i;
    int depth;
} rx;

static hearth_status add(rset *r, uint32_t lo, uint32_t hi) {
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        uint32_t *l = realloc(r->lo, cap * sizeof *l);
        if (!l) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "json_schema: out of memory for a pattern class");
        r->lo = l;
        uint32_t *h = realloc(r->hi, cap * sizeof *h);
        if (!h) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "json_schema: out of memory for a pattern class");
        r->hi = h;
        r->cap = cap;
    }
    r->lo[r->n] = lo;
    r->hi[r->n++] = hi;
    return HEARTH_OK;
}

static void rset_free(rset *r) {
    free(r->lo);
    free(r->hi);
}

/* Sorts and merges overlapping or adjacent ranges (insertion sort: classes
 * are short). */
static void norm(rset *r) {
    for (size_t i = 1; i < r->n; i++)
        for (size_t j = i; j > 0 && r->lo[j - 1] > r->lo[j]; j--) {
            uint32_t t = r->lo[j];
            r->lo[j] = r->lo[j - 1], r->lo[j - 1] = t;
            t = r->hi[j];
            r->hi[j] = r->hi[j - 1], r->hi[j - 1] = t;
        }
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (k && r->lo[i] <= r->hi[k - 1] + 1) {
            if (r->hi[i] > r->hi[k - 1]) r->hi[k - 1] = r->hi[i];
        } else {
            r->lo[k] = r->lo[i], r->hi[k++] = r->hi[i];
        }
    }
    r->n = k;
}

/* The code points in [0, U+10FFFF] outside r (normalized) go to *out. */
static hearth_status complement(const rset *r, rset *out) {
    uint32_t next = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (r->lo[i] > next) HL_TRY(add(out, next, r->lo[i] - 1));
        next = r->hi[i] + 1;
    }
    if (next <= 0x10FFFF) HL_TRY(add(out, next, 0x10FFFF));
    return HEARTH_OK;
}

static hearth_status add_all(rset *r, const uint32_t (*ranges)[2], size_t n) {
    for (size_t i = 0; i < n; i++) HL_TRY(add(r, ranges[i][0], ranges[i][1]));
    return HEARTH_OK;
}

static const uint32_t digit_ranges[][2] = {{'0', '9'}};
static const uint32_t word_ranges[][2] = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
/* \s: ECMA-262 WhiteSpace and LineTerminator plus Python's extra
 * separators U+001C-U+001F, so \S excludes what either calls a space. */
static const uint32_t space_ranges[][2] = {{0x09, 0x0D},     {0x1C, 0x20},     {0x85, 0x85},     {0xA0, 0xA0},
                                           {0x1680, 0x1680}, {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F},
                                           {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
static const uint32_t ascii_space_ranges[][2] = {{0x09, 0x0D}, {' ', ' '}};
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Adds ASCII minus the ranges (\D and \W). */
static hearth_status add_ascii_minus(rset *r, const uint32_t (*ranges)[2], size_t n) {
    uint32_t next = 0;
    for (size_t i = 0; i < n; i++) {
        if (ranges[i][0] > next) HL_TRY(add(r, next, ranges[i][0] - 1));
        next = ranges[i][1] + 1;
    }
    return add(r, next, 0x7F);
}

static hearth_status add_space_negation(rset *r) {
    rset s = {0}, t = {0};
    hearth_status st = add_all(&s, space_ranges, N_OF(space_ranges));
    if (st == HEARTH_OK) norm(&s), st = complement(&s, &t);
    for (size_t i = 0; st == HEARTH_OK && i < t.n; i++) st = add(r, t.lo[i], t.hi[i]);
    rset_free(&s);
    rset_free(&t);
    return st;
}

/* Appends the grammar of one character of r: a class of those JSON writes
 * raw, and the escape of each quote, backslash or control character. */
static hearth_status emit_set(rx *x, rset *r, hl_str *out, bool *single) {
    norm(r);
    rset special = {0}, raw = {0};
    static const uint32_t special_ranges[][2] = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}, {0xD800, 0xDFFF}};
    hearth_status st = add_all(&special, special_ranges, N_OF(special_ranges));
    if (st == HEARTH_OK) norm(&special), st = complement(&special, &raw);
    /* raw := r minus the special characters (both sorted: a merge walk) */
    rset keep = {0};
    for (size_t i = 0, j = 0; st == HEARTH_OK && i < r->n && j < raw.n;) {
        uint32_t lo = r->lo[i] > raw.lo[j] ? r->lo[i] : raw.lo[j];
        uint32_t hi = r->hi[i] < raw.hi[j] ? r->hi[i] : raw.hi[j];
        if (lo <= hi) st = add(&keep, lo, hi);
        if (r->hi[i] < raw.hi[j]) i++;
        else j++;
    }
    size_t n_parts = keep.n ? 1 : 0;
    hl_str alts = {0};
    for (size_t i = 0; st == HEARTH_OK && i < r->n; i++)
        for (uint32_t cp = r->lo[i]; cp <= r->hi[i] && cp < 0x80; cp++)
            if (cp < 0x20 || cp == '"' || cp == '\\') {
                if (alts.n) hl_str_puts(&alts, " |");
                hl_js_emit_json_char(&alts, cp);
                n_parts++;
            }
    if (st == HEARTH_OK && !n_parts)
        st = hl_js_fail(x->c, "pattern '%.*s': a class that matches no character", (int)x->n, x->s);
    /* the \u escapes of its non-ASCII characters (json.dumps writes them) */
    hl_str esc = {0};
    if (st == HEARTH_OK) hl_js_emit_escaped_ranges(keep.lo, keep.hi, keep.n, &esc);
    if (st == HEARTH_OK) {
        bool group = n_parts > 1 || esc.n;
        *single = !group && keep.n;
        if (group) hl_str_puts(out, " (");
        hl_js_emit_class(keep.lo, keep.hi, keep.n, false, out);
        if (keep.n && alts.n) hl_str_puts(out, " |");
        if (alts.n) hl_str_puts(out, " "), hl_str_puts(out, alts.p);
        if (esc.n) hl_str_puts(out, " | "), hl_str_puts(out, esc.p);
        if (group) hl_str_puts(out, " )");
        st = alts.oom || esc.oom ? HEARTH_ERR_OUT_OF_MEMORY : hl_str_status(out);
    }
    hl_str_free(&esc);
    hl_str_free(&alts);
    rset_free(&special);
    rset_free(&raw);
    rset_free(&keep);
    return st;
}

static hearth_status unsupported(rx *x, const char *what) {
    return hl_js_fail(x->c, "pattern '%.*s': %s at offset %zu is not supported", (int)x->n, x->s, what, x->i);
}

static int hex_value(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* After a backslash: adds the character or set the escape names to r.
 * *is_char tells whether it was one character (*cp), usable as a class
 * range end. */
static hearth_status escape(rx *x, rset *r, bool in_class, bool negated, uint32_t *cp, bool *is_char) {
    if (x->i >= x->n) return unsupported(x, "a trailing backslash");
    char e = x->s[x->i++];
    *is_char = false;
    if (strchr("dDwWsS", e)) {
        if (negated && (e == 'D' || e == 'W' || e == 'S')) return unsupported(x, "a negated escape in a negated class");
        switch (e) {
        case 'd': return add_all(r, digit_ranges, N_OF(digit_ranges));
        case 'D': return add_ascii_minus(r, digit_ranges, N_OF(digit_ranges));
        case 'w': return add_all(r, word_ranges, N_OF(word_ranges));
        case 'W': return add_ascii_minus(r, word_ranges, N_OF(word_ranges));
        case 's': return add_all(r, ascii_space_ranges, N_OF(ascii_space_ranges));
        default: return add_space_negation(r);
        }
    }
    uint32_t v;
    if (e == 'x' || e == 'u') {
        int digits = e == 'x' ? 2 : 4;
        v = 0;
        for (int k = 0; k < digits; k++) {
            int h = x->i < x->n ? hex_value(x->s[x->i]) : -1;
            if (h < 0)
                return unsupported(x, e == 'x' ? "a \\x escape without 2 hex digits"
                                               : "a \\u escape without 4 hex digits");
            v = v << 4 | (uint32_t)h;
            x->i++;
        }
        if (v >= 0xD800 && v <= 0xDFFF) return unsupported(x, "a surrogate \\u escape");
    } else if (e == 't') v = '\t';
    else if (e == 'n') v = '\n';
    else if (e == 'r') v = '\r';
    else if (e == 'f') v = '\f';
    else if (e == 'v') v = '\v';
    else if (e == 'b' && in_class) v = '\b';
    else if (e == '0' && !(x->i < x->n && x->s[x->i] >= '0' && x->s[x->i] <= '9')) v = 0;
    else if (e == 'b' || e == 'B') return unsupported(x, "a word boundary (\\b, \\B)");
    else if ((e >= '1' && e <= '9') || e == 'k') return unsupported(x, "a backreference");
    else if (e == 'p' || e == 'P') return unsupported(x, "a Unicode property escape (\\p, \\P)");
    else if (e == 'A' || e == 'Z' || e == 'z' || e == 'G') return unsupported(x, "an anchor escape");
    else if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9') || (unsigned char)e >= 0x80)
        return unsupported(x, "an unknown escape");
    else v = (unsigned char)e;
    *cp = v;
    *is_char = true;
    return add(r, v, v);
}

/* Reads one character of the pattern (UTF-8). */
static hearth_status next_cp(rx *x, uint32_t *cp) {
    if (!hl_js_utf8_next(x->s, x->n, &x->i, cp)) return hl_js_fail(x->c, "pattern is not valid UTF-8");
    return HEARTH_OK;
}

/* A class after its '['. */
static hearth_status parse_class(rx *x, hl_str *out, bool *single) {
    bool negated = x->i < x->n && x->s[x->i] == '^';
    if (negated) x->i++;
    rset r = {0};
    hearth_status st = HEARTH_OK;
    bool first = true;
    for (;;) {
        if (x->i >= x->n) {
            st = unsupported(x, "an unterminated class");
            break;
        }
        if (x->s[x->i] == ']' && !first) {
            x->i++;
            break;
        }
        first = false;
        uint32_t lo, hi;
        bool is_char = true;
        if (x->s[x->i] == '\\') {
            x->i++;
            st = escape(x, &r, true, negated, &lo, &is_char);
        } else {
            st = next_cp(x, &lo);
            if (st == HEARTH_OK) st = add(&r, lo, lo);
        }
        if (st != HEARTH_OK) break;
        /* a range a-b: '-' followed by anything but the closing ']' */
        if (is_char && x->i + 1 < x->n && x->s[x->i] == '-' && x->s[x->i + 1] != ']') {
            x->i++;
            bool hi_char = true;
            r.n--; /* the range replaces its first end */
            if (x->s[x->i] == '\\') {
                x->i++;
                st = escape(x, &r, true, negated, &hi, &hi_char);
                if (st == HEARTH_OK && hi_char) r.n--;
            } else {
                st = next_cp(x, &hi);
            }
            if (st == HEARTH_OK && !hi_char) st = unsupported(x, "a class range ending in a set escape");
            if (st == HEARTH_OK && hi < lo) st = unsupported(x, "a reversed class range");
            if (st == HEARTH_OK) st = add(&r, lo, hi);
            if (st != HEARTH_OK) break;
        }
    }
    if (st == HEARTH_OK && negated) {
        rset comp = {0};
        norm(&r);
        st = complement(&r, &comp);
        rset_free(&r);
        r = comp;
    }
    if (st == HEARTH_OK) st = emit_set(x, &r, out, single);
    rset_free(&r);
    return st;
}

static hearth_status parse_alt(rx *x, hl_str *out);

/* Reads a decimal count; false if there is none. */
static bool read_count(rx *x, size_t *v) {
    size_t start = x->i;
    *v = 0;
    while (x->i < x->n && x->s[x->i] >= '0' && x->s[x->i] <= '9') {
        if (*v <= HL_JS_MAX_REPEAT) *v = *v * 10 + (size_t)(x->s[x->i] - '0');
        x->i++;
    }
    return x->i > start;
}

/* A {m}, {m,} or {m,n} at x->i; false (position kept) if the brace does
 * not open one, in which case it is a literal. */
static bool read_braces(rx *x, size_t *m, size_t *n, bool *open) {
    size_t save = x->i++;
    *open = false;
    if (read_count(x, m)) {
        *n = *m;
        if (x->i < x->n && x->s[x->i] == ',') {
            x->i++;
            if (!read_count(x, n)) *open = true;
        }
        if (x->i < x->n && x->s[x->i] == '}') {
            x->i++;
            return true;
        }
    }
    x->i = save;
    return false;
}

/* One atom and its quantifier. */
static hearth_status parse_piece(rx *x, hl_str *out) {
    hl_str atom = {0};
    bool single = false;
    hearth_status st = HEARTH_OK;
    char ch = x->s[x->i];
    if (ch == '(') {
        x->i++;
        if (x->i < x->n && x->s[x->i] == '?') {
            const char *g = x->s + x->i, *end = x->s + x->n;
            if (end - g >= 2 && g[1] == ':') x->i += 2;
            else if (end - g >= 2 && (g[1] == '=' || g[1] == '!')) st = unsupported(x, "a lookahead");
            else if (end - g >= 3 && g[1] == '<' && (g[2] == '=' || g[2] == '!')) st = unsupported(x, "a lookbehind");
            else if (end - g >= 3 && g[1] == 'P' && g[2] == '=') st = unsupported(x, "a backreference");
            else if (end - g >= 2 && (g[1] == '<' || (g[1] == 'P' && end - g >= 3 && g[2] == '<'))) {
                const char *close = memchr(g, '>', (size_t)(end - g));
                if (!close) st = unsupported(x, "an unterminated group name");
                else x->i = (size_t)(close + 1 - x->s);
            } else st = unsupported(x, "an inline flag or extension group");
        }
        if (st == HEARTH_OK) {
            if (++x->depth > HL_JS_MAX_DEPTH) st = unsupported(x, "groups nested over 64 deep");
            else st = parse_alt(x, &atom);
            x->depth--;
        }
        if (st == HEARTH_OK && (x->i >= x->n || x->s[x->i] != ')')) st = unsupported(x, "an unclosed group");
        if (st == HEARTH_OK) x->i++, single = true;
    } else if (ch == '[') {
        x->i++;
        st = parse_class(x, &atom, &single);
    } else if (ch == '.') {
        x->i++;
        rset r = {0};
        static const uint32_t dot_ranges[][2] = {{0, 0x09}, {0x0B, 0x0C}, {0x0E, 0x2027}, {0x202A, 0x10FFFF}};
        st = add_all(&r, dot_ranges, N_OF(dot_ranges));
        if (st == HEARTH_OK) st = emit_set(x, &r, &atom, &single);
        rset_free(&r);
    } else if (ch == '\\') {
        x->i++;
        rset r = {0};
        uint32_t cp;
        bool is_char;
        st = escape(x, &r, false, false, &cp, &is_char);
        if (st == HEARTH_OK) {
            if (is_char) hl_js_emit_json_char(&atom, cp);
            else st = emit_set(x, &r, &atom, &single);
        }
        rset_free(&r);
    } else if (ch == '^' || ch == '$') {
        st = unsupported(x, "an anchor inside the pattern");
    } else if (ch == '*' || ch == '+' || ch == '?') {
        st = unsupported(x, "a quantifier with nothing to repeat");
    } else if (ch == ')') {
        st = unsupported(x, "an unmatched ')'");
    } else {
        size_t m, n;
        bool open;
        uint32_t cp;
        if (ch == '{' && read_braces(x, &m, &n, &open)) st = unsupported(x, "a quantifier with nothing to repeat");
        else st = next_cp(x, &cp);
        if (st == HEARTH_OK) {
            hl_js_emit_json_char(&atom, cp);
            single = cp >= 0x20 && cp < 0x7F;
        }
    }
    /* the quantifier */
    size_t m = 1, n = 1;
    bool open = false, quantified = false;
    if (st == HEARTH_OK && x->i < x->n) {
        char q = x->s[x->i];
        if (q == '*' || q == '+' || q == '?') {
            x->i++;
            m = q == '+' ? 1 : 0, n = q == '?' ? 1 : 0, open = q != '?';
            quantified = true;
        } else if (q == '{' && read_braces(x, &m, &n, &open)) {
            quantified = true;
            if (m > HL_JS_MAX_REPEAT || (!open && n > HL_JS_MAX_REPEAT))
                st = unsupported(x, "a repetition count over 10000");
            else if (!open && n < m) st = unsupported(x, "a repetition {m,n} with n < m");
        }
        if (st == HEARTH_OK && quantified && x->i < x->n) {
            if (x->s[x->i] == '?') x->i++; /* lazy: the same strings */
            else if (x->s[x->i] == '+') st = unsupported(x, "a possessive quantifier");
            if (st == HEARTH_OK && x->i < x->n && strchr("*+?", x->s[x->i]))
                st = unsupported(x, "a repeated quantifier");
        }
    }
    if (st == HEARTH_OK && atom.n && !(quantified && !open && n == 0)) {
        bool wrap = quantified && !single;
        hl_str_puts(out, wrap ? " ( " : " ");
        hl_str_puts(out, atom.p);
        if (wrap) hl_str_puts(out, " )");
        if (!quantified) {
        } else if (m == 0 && open) hl_str_puts(out, "*");
        else if (m == 1 && open) hl_str_puts(out, "+");
        else if (m == 0 && n == 1) hl_str_puts(out, "?");
        else if (open) hl_str_printf(out, "{%zu,}", m);
        else if (m == n) hl_str_printf(out, "{%zu}", m);
        else hl_str_printf(out, "{%zu,%zu}", m, n);
    }
    if (st == HEARTH_OK) st = atom.oom ? HEARTH_ERR_OUT_OF_MEMORY : hl_str_status(out);
    hl_str_free(&atom);
    return st;
}

/* Alternatives to the next unmatched ')' or the end, as one element: a
 * group, made optional when an alternative is empty. */
static hearth_status parse_alt(rx *x, hl_str *out) {
    hl_str alts = {0};
    size_t n_alts = 0;
    bool empty = false;
    hearth_status st = HEARTH_OK;
    for (;;) {
        hl_str seq = {0};
        while (st == HEARTH_OK && x->i < x->n && x->s[x->i] != '|' && x->s[x->i] != ')') st = parse_piece(x, &seq);
        if (st == HEARTH_OK) {
            if (seq.n) {
                if (n_alts++) hl_str_puts(&alts, " |");
                hl_str_puts(&alts, seq.p);
            } else {
                empty = true;
            }
        }
        hl_str_free(&seq);
        if (st != HEARTH_OK || x->i >= x->n || x->s[x->i] != '|') break;
        x->i++;
    }
    if (st == HEARTH_OK && n_alts) {
        hl_str_puts(out, "(");
        hl_str_puts(out, alts.p);
        hl_str_puts(out, empty ? " )?" : " )");
    }
    if (st == HEARTH_OK) st = alts.oom ? HEARTH_ERR_OUT_OF_MEMORY : hl_str_status(out);
    hl_str_free(&alts);
    return st;
}

hearth_status hl_js_emit_pattern(hl_js_conv *c, const char *pattern, size_t n, hl_str *out) {
    rx x = {c, pattern, n, 0, 0};
    if (x.n && pattern[0] == '^') x.i = 1;
    /* a trailing $ anchors unless escaped (an odd run of backslashes) */
    if (x.n > x.i && pattern[x.n - 1] == '$') {
        size_t k = 0;
        while (x.n - 1 - k > x.i && pattern[x.n - 2 - k] == '\\') k++;
        if (k % 2 == 0) x.n--;
    }
    hl_str body = {0};
    hearth_status st = parse_alt(&x, &body);
    if (st == HEARTH_OK && x.i < x.n) st = unsupported(&x, "an unmatched ')'");
    if (st == HEARTH_OK && body.n) hl_str_puts(out, " "), hl_str_puts(out, body.p);
    if (st == HEARTH_OK) st = body.oom ? HEARTH_ERR_OUT_OF_MEMORY : hl_str_status(out);
    hl_str_free(&body);
    return st;
}
