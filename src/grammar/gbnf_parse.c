/* The GBNF parser: text to per-rule element lists (hl_gbnf), following
 * llama.cpp's parser (src/llama-grammar.cpp, grammars/README.md there) in
 * what it accepts: names [a-zA-Z0-9_-]+, `::=`, `|`, "literals" and
 * [classes] with the escapes \x \u \U \t \r \n \\ \" \[ \], `.`, ( groups ),
 * * + ? {m} {m,} {m,n} rewritten into helper rules as llama.cpp does, `#`
 * comments; a rule ends at a newline except inside ( ) and after `::=` or
 * `|`; a rule defined twice keeps its last definition (llama.cpp's
 * add_rule). Literals become UTF-8 bytes; classes become code point sets
 * (gbnf_class.c). Stricter than llama.cpp where it would misbehave: invalid
 * UTF-8, an escape naming a surrogate or a code point past U+10FFFF, an
 * empty class `[]`, and nesting or repetition counts past fixed limits are
 * errors with their line and column. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_internal.h"

hearth_status hl_gbnf_error(const char *text, size_t len, size_t off, const char *fmt, ...) {
    if (off > len) off = len;
    int line = 1, col = 1;
    for (size_t i = 0; i < off; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\n') {
            line++;
            col = 1;
        } else if ((c & 0xC0) != 0x80) {
            col++; /* count characters, not UTF-8 continuation bytes */
        }
    }
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return hl_fail(HEARTH_ERR_INVALID_ARG, "grammar line %d column %d: %s", line, col, msg);
}

typedef struct parser {
    hl_gbnf g;
    size_t pos;
    uint32_t *names;    /* open-addressing table of user rule ids; UINT32_MAX empty */
    uint32_t names_cap; /* power of two */
    uint32_t n_names;
    uint64_t n_elems;   /* elements in all rules, against HL_GRAMMAR_MAX_ELEMS */
    uint32_t any_class; /* the class of `.`; UINT32_MAX until used */
} parser;

typedef struct evec {
    hl_gelem *e;
    uint32_t *src;
    uint32_t n, cap;
} evec;

static int peek(const parser *p) { return p->pos < p->g.len ? (unsigned char)p->g.text[p->pos] : -1; }
static int peek_at(const parser *p, size_t i) { return i < p->g.len ? (unsigned char)p->g.text[i] : -1; }

static bool is_word(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Skips blanks and comments; newlines too when newline_ok (llama.cpp's
 * parse_space). */
static void skip_space(parser *p, bool newline_ok) {
    for (;;) {
        int c = peek(p);
        if (c == ' ' || c == '\t' || (newline_ok && (c == '\r' || c == '\n'))) {
            p->pos++;
        } else if (c == '#') {
            while (peek(p) >= 0 && peek(p) != '\n' && peek(p) != '\r') p->pos++;
        } else {
            return;
        }
    }
}

static hearth_status perr(const parser *p, size_t off, const char *what) {
    return hl_gbnf_error(p->g.text, p->g.len, off, "%s", what);
}

static hearth_status evec_push(parser *p, evec *v, uint32_t type, uint32_t value, size_t src) {
    if (++p->n_elems > HL_GRAMMAR_MAX_ELEMS)
        return hl_gbnf_error(p->g.text, p->g.len, src,
                             "the grammar is too large after expanding repetitions (over %u elements): "
                             "lower the repetition counts",
                             HL_GRAMMAR_MAX_ELEMS);
    if (v->n == v->cap) {
        uint32_t cap = v->cap ? v->cap * 2 : 16;
        hl_gelem *e = hl_malloc(cap * sizeof *e);
        uint32_t *s = hl_malloc(cap * sizeof *s);
        if (!e || !s) {
            free(e);
            free(s);
            return HEARTH_ERR_OUT_OF_MEMORY;
        }
        if (v->n) {
            memcpy(e, v->e, v->n * sizeof *e);
            memcpy(s, v->src, v->n * sizeof *s);
        }
        free(v->e);
        free(v->src);
        v->e = e;
        v->src = s;
        v->cap = cap;
    }
    v->e[v->n] = (hl_gelem){type, value};
    v->src[v->n] = (uint32_t)src;
    v->n++;
    return HEARTH_OK;
}

static void evec_free(evec *v) {
    free(v->e);
    free(v->src);
    *v = (evec){0};
}

static uint32_t name_hash(const char *s, uint32_t n) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (uint32_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

/* A new, still undefined rule called name[0, name_len). */
static hearth_status new_rule(parser *p, const char *name, uint32_t name_len, uint32_t *id) {
    if (p->g.n_rules == p->g.cap_rules) {
        uint32_t cap = p->g.cap_rules ? p->g.cap_rules * 2 : 32;
        hl_gbnf_rule *r = hl_malloc(cap * sizeof *r);
        if (!r) return HEARTH_ERR_OUT_OF_MEMORY;
        if (p->g.n_rules) memcpy(r, p->g.rules, p->g.n_rules * sizeof *r);
        free(p->g.rules);
        p->g.rules = r;
        p->g.cap_rules = cap;
    }
    *id = p->g.n_rules++;
    p->g.rules[*id] = (hl_gbnf_rule){.name = name, .name_len = name_len, .ref_off = UINT32_MAX};
    return HEARTH_OK;
}

/* A helper rule for a group or repetition inside user rule `of`. */
static hearth_status helper_rule(parser *p, uint32_t of, uint32_t *id) {
    HL_TRY(new_rule(p, p->g.rules[of].name, p->g.rules[of].name_len, id));
    p->g.rules[*id].defined = true;
    p->g.rules[*id].helper = true;
    return HEARTH_OK;
}

/* The id of the user rule called name[0, n), created on first mention. */
static hearth_status symbol(parser *p, const char *name, uint32_t n, uint32_t *id) {
    if (2 * (p->n_names + 1) > p->names_cap) {
        uint32_t cap = p->names_cap ? p->names_cap * 2 : 64;
        uint32_t *t = hl_malloc(cap * sizeof *t);
        if (!t) return HEARTH_ERR_OUT_OF_MEMORY;
        memset(t, 0xFF, cap * sizeof *t);
        for (uint32_t i = 0; i < p->names_cap; i++) {
            uint32_t r = p->names[i];
            if (r == UINT32_MAX) continue;
            uint32_t h = name_hash(p->g.rules[r].name, p->g.rules[r].name_len) & (cap - 1);
            while (t[h] != UINT32_MAX) h = (h + 1) & (cap - 1);
            t[h] = r;
        }
        free(p->names);
        p->names = t;
        p->names_cap = cap;
    }
    uint32_t h = name_hash(name, n) & (p->names_cap - 1);
    for (;; h = (h + 1) & (p->names_cap - 1)) {
        uint32_t r = p->names[h];
        if (r == UINT32_MAX) break;
        if (p->g.rules[r].name_len == n && memcmp(p->g.rules[r].name, name, n) == 0) {
            *id = r;
            return HEARTH_OK;
        }
    }
    HL_TRY(new_rule(p, name, n, id));
    p->names[h] = *id;
    p->n_names++;
    return HEARTH_OK;
}

/* Reads `digits` hex digits of an escape at p->pos. */
static hearth_status parse_hex(parser *p, int digits, size_t esc, uint32_t *cp) {
    uint32_t v = 0;
    for (int i = 0; i < digits; i++) {
        int c = peek(p);
        int d = (c >= '0' && c <= '9')   ? c - '0'
                : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                         : -1;
        if (d < 0)
            return hl_gbnf_error(p->g.text, p->g.len, p->pos, "expecting %d hex digits after '\\%c'", digits,
                                 p->g.text[esc + 1]);
        v = v * 16 + (uint32_t)d;
        p->pos++;
    }
    if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return hl_gbnf_error(p->g.text, p->g.len, esc, "escape U+%X is not a character (surrogate or past U+10FFFF)",
                             v);
    *cp = v;
    return HEARTH_OK;
}

/* One character of a literal or class: an escape or a UTF-8 sequence. */
static hearth_status parse_char(parser *p, uint32_t *cp) {
    size_t at = p->pos;
    int c = peek(p);
    if (c == '\\') {
        int e = peek_at(p, at + 1);
        p->pos += 2;
        switch (e) {
        case 'x': return parse_hex(p, 2, at, cp);
        case 'u': return parse_hex(p, 4, at, cp);
        case 'U': return parse_hex(p, 8, at, cp);
        case 't': *cp = '\t'; return HEARTH_OK;
        case 'r': *cp = '\r'; return HEARTH_OK;
        case 'n': *cp = '\n'; return HEARTH_OK;
        case '\\':
        case '"':
        case '[':
        case ']': *cp = (uint32_t)e; return HEARTH_OK;
        case -1: return perr(p, at, "unexpected end of the grammar after '\\'");
        default: return perr(p, at, "unknown escape (known: \\x \\u \\U \\t \\r \\n \\\\ \\\" \\[ \\])");
        }
    }
    /* UTF-8 decoding with RFC 3629's checks: no overlong forms, no
     * surrogates, nothing past U+10FFFF. */
    int n = c < 0x80                   ? 1
            : (c >= 0xC2 && c <= 0xDF) ? 2
            : (c >= 0xE0 && c <= 0xEF) ? 3
            : (c >= 0xF0 && c <= 0xF4) ? 4
                                       : 0;
    if (n == 0) return perr(p, at, "invalid UTF-8");
    uint32_t v = n == 1 ? (uint32_t)c : (uint32_t)c & (0x7Fu >> n);
    for (int i = 1; i < n; i++) {
        int b = peek_at(p, at + (size_t)i);
        if (b < 0 || (b & 0xC0) != 0x80) return perr(p, at, "invalid UTF-8");
        v = (v << 6) | ((uint32_t)b & 0x3F);
    }
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < min_cp[n] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return perr(p, at, "invalid UTF-8");
    p->pos += (size_t)n;
    *cp = v;
    return HEARTH_OK;
}

static int utf8_encode(uint32_t cp, unsigned char out[4]) {
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

static hearth_status push_char(parser *p, evec *v, uint32_t cp, size_t src) {
    unsigned char b[4];
    int n = utf8_encode(cp, b);
    for (int i = 0; i < n; i++) HL_TRY(evec_push(p, v, HL_GE_BYTE, b[i], src));
    return HEARTH_OK;
}

/* Appends [lo, hi] minus the surrogates to out (k values so far). */
static uint32_t emit_range(uint32_t *out, uint32_t k, uint32_t lo, uint32_t hi) {
    if (lo < 0xD800 && hi > 0xDFFF) {
        out[k++] = lo;
        out[k++] = 0xD7FF;
        lo = 0xE000;
    } else if (lo >= 0xD800 && lo <= 0xDFFF) {
        lo = 0xE000;
    } else if (hi >= 0xD800 && hi <= 0xDFFF) {
        hi = 0xD7FF;
    }
    if (lo <= hi) {
        out[k++] = lo;
        out[k++] = hi;
    }
    return k;
}

static int cmp_range(const void *a, const void *b) {
    const uint32_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Adds the class of the n ranges r[2n] (sorted, merged, complemented when
 * negate, surrogates removed here) to the grammar. Takes r. */
static hearth_status add_class(parser *p, uint32_t *r, uint32_t n, bool negate, uint32_t *id) {
    qsort(r, n, 2 * sizeof *r, cmp_range);
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (m && r[2 * i] <= r[2 * (m - 1) + 1] + 1) {
            if (r[2 * i + 1] > r[2 * (m - 1) + 1]) r[2 * (m - 1) + 1] = r[2 * i + 1];
        } else {
            r[2 * m] = r[2 * i];
            r[2 * m + 1] = r[2 * i + 1];
            m++;
        }
    }
    /* The complement, then minus the surrogates: at most m + 3 ranges. */
    uint32_t *out = hl_malloc((2 * (size_t)m + 6) * sizeof *out);
    if (!out) {
        free(r);
        return HEARTH_ERR_OUT_OF_MEMORY;
    }
    uint32_t k = 0;
    if (negate) {
        uint32_t next = 0; /* first code point not yet covered */
        for (uint32_t i = 0; i < m; i++) {
            if (r[2 * i] > next) k = emit_range(out, k, next, r[2 * i] - 1);
            next = r[2 * i + 1] + 1;
        }
        if (next <= 0x10FFFF) k = emit_range(out, k, next, 0x10FFFF);
    } else {
        for (uint32_t i = 0; i < m; i++) k = emit_range(out, k, r[2 * i], r[2 * i + 1]);
    }
    free(r);
    if (p->g.n_classes == p->g.cap_classes) {
        uint32_t cap = p->g.cap_classes ? p->g.cap_classes * 2 : 16;
        hl_gclass *c = hl_malloc(cap * sizeof *c);
        if (!c) {
            free(out);
            return HEARTH_ERR_OUT_OF_MEMORY;
        }
        if (p->g.n_classes) memcpy(c, p->g.classes, p->g.n_classes * sizeof *c);
        free(p->g.classes);
        p->g.classes = c;
        p->g.cap_classes = cap;
    }
    hl_gclass *c = &p->g.classes[p->g.n_classes];
    *c = (hl_gclass){.ranges = out, .n_ranges = k / 2};
    hl_gclass_fill_lead(c);
    *id = p->g.n_classes++;
    return HEARTH_OK;
}

/* [...] or [^...] at p->pos, appended to v as one class element (or the
 * bytes of its one character). */
static hearth_status parse_class(parser *p, evec *v) {
    size_t open = p->pos;
    p->pos++;
    bool negate = peek(p) == '^';
    if (negate) p->pos++;
    uint32_t *r = NULL, n = 0, cap = 0;
    hearth_status st = HEARTH_OK;
    while (peek(p) != ']') {
        if (peek(p) < 0) {
            st = perr(p, open, "unterminated character class: expecting ']'");
            break;
        }
        size_t at = p->pos;
        uint32_t lo, hi;
        if ((st = parse_char(p, &lo)) != HEARTH_OK) break;
        hi = lo;
        if (peek(p) == '-' && peek_at(p, p->pos + 1) != ']' && peek_at(p, p->pos + 1) >= 0) {
            p->pos++;
            if ((st = parse_char(p, &hi)) != HEARTH_OK) break;
            if (hi < lo) {
                st = hl_gbnf_error(p->g.text, p->g.len, at, "range with reversed ends (U+%04X after U+%04X)", hi, lo);
                break;
            }
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            uint32_t *t = hl_malloc(2 * (size_t)cap * sizeof *t);
            if (!t) {
                st = HEARTH_ERR_OUT_OF_MEMORY;
                break;
            }
            if (n) memcpy(t, r, 2 * (size_t)n * sizeof *t);
            free(r);
            r = t;
        }
        r[2 * n] = lo;
        r[2 * n + 1] = hi;
        n++;
    }
    if (st == HEARTH_OK && n == 0) st = perr(p, open, "empty character class '[]' (it would match nothing)");
    if (st != HEARTH_OK) {
        free(r);
        return st;
    }
    p->pos++; /* ] */
    if (!negate && n == 1 && r[0] == r[1] && !(r[0] >= 0xD800 && r[0] <= 0xDFFF)) {
        uint32_t cp = r[0];
        free(r);
        return push_char(p, v, cp, open);
    }
    uint32_t id;
    HL_TRY(add_class(p, r, n, negate, &id));
    return evec_push(p, v, HL_GE_CLASS, id, open);
}

/* Stores v as the body of rule id (replacing an earlier definition). */
static void set_rule(parser *p, uint32_t id, evec *v) {
    hl_gbnf_rule *r = &p->g.rules[id];
    free(r->e);
    free(r->src);
    r->e = v->e;
    r->src = v->src;
    r->n = v->n;
    r->cap = v->cap;
    r->defined = true;
    *v = (evec){0};
}

/* Rewrites the last item v[from, n) repeated min..max times (max UINT32_MAX:
 * unbounded) into helper rules, as llama.cpp's handle_repetitions:
 * S{m,n} = S...S (m times) S'(n-m), S'(k) ::= S S'(k-1) |, S'(1) ::= S |;
 * S{m,} = S...S S', S' ::= S S' |. */
static hearth_status repeat(parser *p, evec *v, uint32_t from, uint32_t min, uint32_t max, uint32_t of, size_t op) {
    if (from == v->n) return perr(p, op, "expecting an item before the repetition operator");
    uint32_t len = v->n - from;
    evec item = {0};
    hearth_status st = HEARTH_OK;
    for (uint32_t i = 0; i < len && st == HEARTH_OK; i++)
        st = evec_push(p, &item, v->e[from + i].type, v->e[from + i].value, v->src[from + i]);
    if (min == 0) {
        p->n_elems -= len; /* dropped from v */
        v->n = from;
    }
    for (uint32_t k = 1; k < min && st == HEARTH_OK; k++)
        for (uint32_t i = 0; i < len && st == HEARTH_OK; i++)
            st = evec_push(p, v, item.e[i].type, item.e[i].value, item.src[i]);
    bool unbounded = max == UINT32_MAX;
    uint32_t n_opt = unbounded ? 1 : max - min;
    uint32_t last = 0;
    for (uint32_t k = 0; k < n_opt && st == HEARTH_OK; k++) {
        uint32_t id;
        evec body = {0};
        if ((st = helper_rule(p, of, &id)) != HEARTH_OK) break;
        for (uint32_t i = 0; i < len && st == HEARTH_OK; i++)
            st = evec_push(p, &body, item.e[i].type, item.e[i].value, item.src[i]);
        if (st == HEARTH_OK && (k > 0 || unbounded)) st = evec_push(p, &body, HL_GE_REF, unbounded ? id : last, op);
        if (st == HEARTH_OK) st = evec_push(p, &body, HL_GE_ALT, 0, op);
        if (st == HEARTH_OK) set_rule(p, id, &body);
        evec_free(&body);
        last = id;
    }
    if (st == HEARTH_OK && n_opt > 0) st = evec_push(p, v, HL_GE_REF, last, op);
    p->n_elems -= item.n; /* the copy was scratch */
    evec_free(&item);
    return st;
}

static hearth_status parse_count(parser *p, uint32_t *out) {
    int c = peek(p);
    if (c < '0' || c > '9') return perr(p, p->pos, "expecting a number in { }");
    size_t at = p->pos;
    uint64_t v = 0;
    while ((c = peek(p)) >= '0' && c <= '9') {
        if (v <= HL_GRAMMAR_MAX_REPEAT) v = v * 10 + (uint64_t)(c - '0');
        p->pos++;
    }
    if (v > HL_GRAMMAR_MAX_REPEAT)
        return hl_gbnf_error(p->g.text, p->g.len, at, "repetition count over the limit of %u", HL_GRAMMAR_MAX_REPEAT);
    *out = (uint32_t)v;
    return HEARTH_OK;
}

static hearth_status parse_alternates(parser *p, uint32_t id, uint32_t of, bool nested, int depth);

/* One sequence of items into v, up to `|`, `)`, the end of the rule or
 * something that cannot start an item. */
static hearth_status parse_sequence(parser *p, evec *v, uint32_t of, bool nested, int depth) {
    uint32_t last = v->n; /* where the last item starts, for repetitions */
    for (;;) {
        int c = peek(p);
        size_t at = p->pos;
        if (c == '"') {
            last = v->n;
            p->pos++;
            while (peek(p) != '"') {
                if (peek(p) < 0) return perr(p, at, "unterminated string literal: expecting '\"'");
                size_t ch = p->pos;
                uint32_t cp;
                HL_TRY(parse_char(p, &cp));
                HL_TRY(push_char(p, v, cp, ch));
            }
            p->pos++;
        } else if (c == '[') {
            last = v->n;
            HL_TRY(parse_class(p, v));
        } else if (is_word(c)) {
            last = v->n;
            while (is_word(peek(p))) p->pos++;
            uint32_t ref;
            HL_TRY(symbol(p, p->g.text + at, (uint32_t)(p->pos - at), &ref));
            if (p->g.rules[ref].ref_off == UINT32_MAX) p->g.rules[ref].ref_off = (uint32_t)at;
            HL_TRY(evec_push(p, v, HL_GE_REF, ref, at));
        } else if (c == '(') {
            if (depth >= HL_GRAMMAR_MAX_NESTING) return perr(p, at, "groups nested too deeply (over 256 levels)");
            p->pos++;
            skip_space(p, true);
            uint32_t sub;
            HL_TRY(helper_rule(p, of, &sub));
            HL_TRY(parse_alternates(p, sub, of, true, depth + 1));
            if (peek(p) != ')') return perr(p, p->pos, "expecting ')' to close the group");
            p->pos++;
            last = v->n;
            HL_TRY(evec_push(p, v, HL_GE_REF, sub, at));
        } else if (c == '.') {
            if (p->any_class == UINT32_MAX) {
                uint32_t *r = hl_malloc(2 * sizeof *r);
                if (!r) return HEARTH_ERR_OUT_OF_MEMORY;
                r[0] = 0;
                r[1] = 0x10FFFF;
                HL_TRY(add_class(p, r, 1, false, &p->any_class));
            }
            p->pos++;
            last = v->n;
            HL_TRY(evec_push(p, v, HL_GE_CLASS, p->any_class, at));
        } else if (c == '*' || c == '+' || c == '?') {
            p->pos++;
            HL_TRY(repeat(p, v, last, c == '+' ? 1 : 0, c == '?' ? 1 : UINT32_MAX, of, at));
        } else if (c == '{') {
            p->pos++;
            skip_space(p, nested);
            uint32_t min, max;
            HL_TRY(parse_count(p, &min));
            skip_space(p, nested);
            if (peek(p) == '}') {
                max = min;
            } else if (peek(p) == ',') {
                p->pos++;
                skip_space(p, nested);
                max = UINT32_MAX;
                if (peek(p) >= '0' && peek(p) <= '9') {
                    size_t mat = p->pos;
                    HL_TRY(parse_count(p, &max));
                    if (max < min) return perr(p, mat, "repetition {m,n} with n less than m");
                    skip_space(p, nested);
                }
                if (peek(p) != '}') return perr(p, p->pos, "expecting '}'");
            } else {
                return perr(p, p->pos, "expecting ',' or '}'");
            }
            p->pos++;
            HL_TRY(repeat(p, v, last, min, max, of, at));
        } else {
            return HEARTH_OK;
        }
        skip_space(p, nested);
    }
}

static hearth_status parse_alternates(parser *p, uint32_t id, uint32_t of, bool nested, int depth) {
    evec v = {0};
    hearth_status st = parse_sequence(p, &v, of, nested, depth);
    while (st == HEARTH_OK && peek(p) == '|') {
        st = evec_push(p, &v, HL_GE_ALT, 0, p->pos);
        p->pos++;
        skip_space(p, true);
        if (st == HEARTH_OK) st = parse_sequence(p, &v, of, nested, depth);
    }
    if (st == HEARTH_OK) set_rule(p, id, &v);
    evec_free(&v);
    return st;
}

static hearth_status parse_rule(parser *p) {
    size_t at = p->pos;
    while (is_word(peek(p))) p->pos++;
    if (p->pos == at) {
        if (peek(p) == '|')
            return perr(p, at,
                        "expecting a rule name, found '|' (an alternative goes on the next line only "
                        "after a '|' that ends the line, or inside ( ))");
        return perr(p, at, "expecting a rule name");
    }
    uint32_t id;
    HL_TRY(symbol(p, p->g.text + at, (uint32_t)(p->pos - at), &id));
    skip_space(p, false);
    if (!(peek(p) == ':' && peek_at(p, p->pos + 1) == ':' && peek_at(p, p->pos + 2) == '='))
        return hl_gbnf_error(p->g.text, p->g.len, p->pos, "expecting '::=' after the rule name '%.*s'",
                             (int)(p->pos - at) > 64 ? 64 : (int)(p->pos - at), p->g.text + at);
    p->pos += 3;
    skip_space(p, true);
    HL_TRY(parse_alternates(p, id, id, false, 0));
    int c = peek(p);
    if (c == '\r') {
        p->pos += peek_at(p, p->pos + 1) == '\n' ? 2 : 1;
    } else if (c == '\n') {
        p->pos++;
    } else if (c == ')') {
        return perr(p, p->pos, "unexpected ')' (no group is open)");
    } else if (c >= 0) {
        if (c >= 0x21 && c < 0x7F) return hl_gbnf_error(p->g.text, p->g.len, p->pos, "unexpected '%c'", c);
        return hl_gbnf_error(p->g.text, p->g.len, p->pos, "unexpected byte 0x%02X", (unsigned)c);
    }
    skip_space(p, true);
    return HEARTH_OK;
}

static void gbnf_free(hl_gbnf *g) {
    for (uint32_t i = 0; i < g->n_rules; i++) {
        free(g->rules[i].e);
        free(g->rules[i].src);
    }
    free(g->rules);
    for (uint32_t i = 0; i < g->n_classes; i++) free(g->classes[i].ranges);
    free(g->classes);
}

hearth_status hl_grammar_parse(const char *text, size_t len, hl_grammar **out) {
    if (!out || (!text && len)) return hl_fail(HEARTH_ERR_INVALID_ARG, "hl_grammar_parse: NULL argument");
    *out = NULL;
    if (len > UINT32_MAX / 2) return hl_fail(HEARTH_ERR_INVALID_ARG, "grammar text of %zu bytes is too long", len);
    parser p = {.g = {.text = text ? text : "", .len = len}, .any_class = UINT32_MAX};
    hearth_status st = HEARTH_OK;
    skip_space(&p, true);
    while (st == HEARTH_OK && p.pos < len) st = parse_rule(&p);
    if (st == HEARTH_OK) st = hl_gbnf_compile(&p.g, out);
    gbnf_free(&p.g);
    free(p.names);
    return st;
}
