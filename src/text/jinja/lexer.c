/* Jinja lexer: template source -> tokens. Follows jinja2's lexer (lexer.py) with
 * trim_blocks and lstrip_blocks on, as transformers renders chat templates:
 * - newlines (\r\n, \r, \n) become \n and one trailing newline is dropped;
 * - "{%-", "{{-", "{#-" strip all whitespace before the tag, "-%}", "-}}",
 *   "-#}" all whitespace after it;
 * - lstrip_blocks: spaces and tabs between a line start and "{%" or "{#" go;
 *   "{%+" keeps them;
 * - trim_blocks: one newline right after "%}" or "#}" goes; "+%}" keeps it;
 * - {% raw %}...{% endraw %} is text.
 * String escapes are Python's unicode-escape ones (\n \t \xhh \uXXXX ...). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/jinja/jinja_impl.h"

typedef struct lexer {
    jarena *a;
    const char *s; /* normalized source */
    size_t n, pos;
    int line;
    jtok *toks;
    size_t n_toks, cap;
} lexer;

static hearth_status push(lexer *L, jtok t) {
    if (L->n_toks == L->cap) {
        size_t cap = L->cap ? L->cap * 2 : 256;
        jtok *bigger = hl_ja_alloc(L->a, cap * sizeof *bigger);
        if (!bigger) return HEARTH_ERR_OUT_OF_MEMORY;
        if (L->n_toks) memcpy(bigger, L->toks, L->n_toks * sizeof *bigger);
        L->toks = bigger;
        L->cap = cap;
    }
    L->toks[L->n_toks++] = t;
    return HEARTH_OK;
}

static void advance(lexer *L, size_t to) {
    for (size_t i = L->pos; i < to; i++) L->line += L->s[i] == '\n';
    L->pos = to;
}

static bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

/* Skips Python whitespace from pos. */
static size_t skip_space(const char *s, size_t n, size_t pos) {
    size_t w;
    while (pos < n && (w = hl_ju_space_at(s + pos, n - pos)) > 0) pos += w;
    return pos;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static size_t put_utf8(char *o, uint32_t cp) {
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static char simple_escape(char e) {
    switch (e) {
    case 'n': return '\n';
    case 't': return '\t';
    case 'r': return '\r';
    case '\\': return '\\';
    case '\'': return '\'';
    case '"': return '"';
    case 'a': return '\a';
    case 'b': return '\b';
    case 'f': return '\f';
    case 'v': return '\v';
    default: return 0;
    }
}

/* A quoted string starting at L->pos (the quote). Decodes Python escapes; an
 * unknown escape keeps its backslash, as Python does. */
static hearth_status lex_string(lexer *L) {
    const char *s = L->s;
    char q = s[L->pos];
    size_t i = L->pos + 1, end = i;
    while (end < L->n && s[end] != q) end += s[end] == '\\' && end + 1 < L->n ? 2 : 1;
    if (end >= L->n) return hl_jfail(HEARTH_ERR_FORMAT, L->line, "unterminated string");
    char *o = hl_ja_alloc(L->a, end - i + 1);
    if (!o) return HEARTH_ERR_OUT_OF_MEMORY;
    size_t n = 0;
    while (i < end) {
        char c = s[i];
        if (c != '\\') {
            o[n++] = c;
            i++;
            continue;
        }
        char e = s[i + 1];
        i += 2;
        char simple = simple_escape(e);
        if (simple) {
            o[n++] = simple;
        } else if (e == '\n') {
            /* line continuation: nothing */
        } else if (e >= '0' && e <= '7') {
            uint32_t cp = (uint32_t)(e - '0');
            for (int k = 0; k < 2 && i < end && s[i] >= '0' && s[i] <= '7'; k++) cp = cp * 8 + (uint32_t)(s[i++] - '0');
            n += put_utf8(o + n, cp);
        } else if (e == 'x' || e == 'u' || e == 'U') {
            int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            uint32_t cp = 0;
            for (int k = 0; k < digits; k++) {
                int h = i + (size_t)k < end ? hexval(s[i + k]) : -1;
                if (h < 0) return hl_jfail(HEARTH_ERR_FORMAT, L->line, "truncated \\%c escape in a string", e);
                cp = cp * 16 + (uint32_t)h;
            }
            if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                return hl_jfail(HEARTH_ERR_UNSUPPORTED, L->line, "unsupported Jinja feature 'string escape of U+%X'",
                                cp);
            i += (size_t)digits;
            n += put_utf8(o + n, cp);
        } else if (e == 'N') {
            return hl_jfail(HEARTH_ERR_UNSUPPORTED, L->line, "unsupported Jinja feature '\\N{...} escape'");
        } else {
            o[n++] = '\\';
            i--; /* the character after the backslash is kept as it is */
        }
    }
    jtok t = {.k = TK_STRING, .line = L->line, .s = o, .n = n};
    HL_TRY(push(L, t));
    advance(L, end + 1);
    return HEARTH_OK;
}

/* Numbers: 12, 1_000, 1.5, 1e3, 2.5e-3 (jinja2's integer and float rules). */
static hearth_status lex_number(lexer *L) {
    const char *s = L->s;
    size_t i = L->pos;
    char buf[128];
    size_t nb = 0;
    bool is_float = false;
    while (i < L->n && (is_digit(s[i]) || (s[i] == '_' && i + 1 < L->n && is_digit(s[i + 1]))) && nb < 100) {
        if (s[i] != '_') buf[nb++] = s[i];
        i++;
    }
    if (i + 1 < L->n && s[i] == '.' && is_digit(s[i + 1])) {
        is_float = true;
        buf[nb++] = s[i++];
        while (i < L->n && (is_digit(s[i]) || (s[i] == '_' && i + 1 < L->n && is_digit(s[i + 1]))) && nb < 110)
            if (s[i++] != '_') buf[nb++] = s[i - 1];
    }
    if (i < L->n && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        if (j < L->n && (s[j] == '+' || s[j] == '-')) j++;
        if (j < L->n && is_digit(s[j])) {
            is_float = true;
            while (i < j) buf[nb++] = s[i++];
            while (i < L->n && is_digit(s[i]) && nb < 126) buf[nb++] = s[i++];
        }
    }
    if (nb >= 100 || (i < L->n && is_digit(s[i])))
        return hl_jfail(HEARTH_ERR_UNSUPPORTED, L->line,
                        "unsupported Jinja feature 'number literal longer than 100 digits'");
    buf[nb] = '\0';
    jtok t = {.line = L->line};
    if (is_float) {
        t.k = TK_FLOAT;
        t.f = strtod(buf, NULL);
    } else {
        t.k = TK_INT;
        char *end;
        unsigned long long v = strtoull(buf, &end, 10);
        if (nb > 19 || v > (unsigned long long)INT64_MAX)
            return hl_jfail(HEARTH_ERR_UNSUPPORTED, L->line, "unsupported Jinja feature 'integer beyond 64 bits'");
        t.i = (int64_t)v;
    }
    HL_TRY(push(L, t));
    advance(L, i);
    return HEARTH_OK;
}

/* Tokens inside {{ }} or {% %} up to the closing delimiter at bracket depth 0.
 * `close` is "}}" or "%}". */
static hearth_status lex_tag(lexer *L, const char *close, jtok_kind end_kind) {
    static const char *ops[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[",
                                "]",  "(",  ")",  "{",  "}",  ">",  "<", "=", ".", ":", "|", ",", ";"};
    const char *s = L->s;
    int depth = 0;
    for (;;) {
        advance(L, skip_space(s, L->n, L->pos));
        if (L->pos >= L->n)
            return hl_jfail(HEARTH_ERR_FORMAT, L->line, "unexpected end of template: missing '%s'", close);
        size_t p = L->pos;
        if (depth == 0) {
            bool minus = s[p] == '-' && p + 2 < L->n && !memcmp(s + p + 1, close, 2);
            bool plus = end_kind == TK_BLOCK_END && s[p] == '+' && p + 2 < L->n && !memcmp(s + p + 1, close, 2);
            if (minus || plus || (p + 1 < L->n && !memcmp(s + p, close, 2))) {
                HL_TRY(push(L, (jtok){.k = end_kind, .line = L->line}));
                size_t after = p + 2 + (minus || plus);
                if (minus) after = skip_space(s, L->n, after);
                else if (!plus && end_kind == TK_BLOCK_END && after < L->n && s[after] == '\n') after++;
                advance(L, after);
                return HEARTH_OK;
            }
        }
        char c = s[p];
        if (c == '\'' || c == '"') {
            HL_TRY(lex_string(L));
        } else if (is_digit(c)) {
            HL_TRY(lex_number(L));
        } else if (is_name_start(c)) {
            size_t e = p;
            while (e < L->n && is_name_char(s[e])) e++;
            HL_TRY(push(L, (jtok){.k = TK_NAME, .line = L->line, .s = hl_ja_strdup(L->a, s + p, e - p), .n = e - p}));
            if (!L->toks[L->n_toks - 1].s) return HEARTH_ERR_OUT_OF_MEMORY;
            advance(L, e);
        } else {
            size_t k, nops = sizeof ops / sizeof ops[0];
            for (k = 0; k < nops; k++)
                if (!strncmp(s + p, ops[k], strlen(ops[k]))) break;
            if (k == nops) {
                if ((unsigned char)c >= 0x80 || c == '\\' || c == '@' || c == '$' || c == '`' || c == '?' || c == '!' ||
                    c == '&' || c == '^' || c == '#')
                    return hl_jfail(HEARTH_ERR_FORMAT, L->line, "unexpected character '%c' (0x%02x) in a tag",
                                    (unsigned char)c >= 0x20 && (unsigned char)c < 0x7f ? c : '?', (unsigned char)c);
                return hl_jfail(HEARTH_ERR_FORMAT, L->line, "unexpected character 0x%02x in a tag", (unsigned char)c);
            }
            if (ops[k][0] == '(' || ops[k][0] == '[' || ops[k][0] == '{') depth++;
            if (ops[k][0] == ')' || ops[k][0] == ']' || ops[k][0] == '}') {
                if (depth == 0) return hl_jfail(HEARTH_ERR_FORMAT, L->line, "unexpected '%c'", ops[k][0]);
                depth--;
            }
            HL_TRY(push(L, (jtok){.k = TK_OP, .line = L->line, .s = ops[k], .n = strlen(ops[k])}));
            advance(L, p + strlen(ops[k]));
        }
        if (depth > 200)
            return hl_jfail(HEARTH_ERR_UNSUPPORTED, L->line,
                            "unsupported Jinja feature 'brackets nested deeper than 200'");
    }
}

/* Length of "{% raw %}" (with optional -/+ and -%}) at p, or 0. Sets *trim_after. */
static size_t match_word_tag(const char *s, size_t n, size_t p, const char *word, int *strip_after) {
    if (p + 2 > n || s[p] != '{' || s[p + 1] != '%') return 0;
    size_t i = p + 2;
    if (i < n && (s[i] == '-' || s[i] == '+')) i++;
    i = skip_space(s, n, i);
    size_t w = strlen(word);
    if (i + w > n || memcmp(s + i, word, w) || (i + w < n && is_name_char(s[i + w]))) return 0;
    i = skip_space(s, n, i + w);
    *strip_after = 0;
    if (i < n && (s[i] == '-' || s[i] == '+')) *strip_after = s[i++] == '-' ? 1 : 2;
    if (i + 2 > n || s[i] != '%' || s[i + 1] != '}') return 0;
    return i + 2 - p;
}

/* Emits text [from, to) with the whitespace control of the tag that follows
 * (sign '-', '+' or 0; `lstrip` when the tag is a block or comment). */
static hearth_status emit_text(lexer *L, size_t from, size_t to, char sign, bool lstrip) {
    const char *s = L->s;
    size_t end = to;
    if (sign == '-') {
        size_t w;
        while (end > from && (w = hl_ju_space_before(s + from, end - from)) > 0) end -= w;
    } else if (sign != '+' && lstrip) {
        size_t l = end;
        while (l > from && s[l - 1] != '\n') l--;
        bool line_start = l > from || from == 0 || s[from - 1] == '\n';
        size_t i = l;
        while (i < end && hl_ju_space_at(s + i, end - i)) i += hl_ju_space_at(s + i, end - i);
        if (line_start && i == end && end > l) end = l;
    }
    if (end > from) {
        char *t = hl_ja_strdup(L->a, s + from, end - from);
        if (!t) return HEARTH_ERR_OUT_OF_MEMORY;
        HL_TRY(push(L, (jtok){.k = TK_TEXT, .line = L->line, .s = t, .n = end - from}));
    }
    advance(L, to);
    return HEARTH_OK;
}

/* Newlines to \n, and no trailing newline (jinja2's keep_trailing_newline=False). */
static char *normalize(jarena *a, const char *src, size_t len, size_t *n_out) {
    char *o = hl_ja_alloc(a, len + 1);
    if (!o) return NULL;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            o[n++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n') i++;
        } else {
            o[n++] = src[i];
        }
    }
    if (n && o[n - 1] == '\n') n--;
    o[n] = '\0';
    *n_out = n;
    return o;
}

hearth_status hl_jinja_lex(jarena *a, const char *src, size_t len, jtok **toks, size_t *n_toks) {
    lexer L = {.a = a, .line = 1};
    L.s = normalize(a, src, len, &L.n);
    if (!L.s) return HEARTH_ERR_OUT_OF_MEMORY;
    const char *s = L.s;
    while (L.pos < L.n) {
        size_t t = L.pos;
        while (t + 1 < L.n && !(s[t] == '{' && (s[t + 1] == '{' || s[t + 1] == '%' || s[t + 1] == '#'))) t++;
        if (t + 1 >= L.n) {
            HL_TRY(emit_text(&L, L.pos, L.n, 0, false));
            break;
        }
        char kind = s[t + 1];
        char sign = t + 2 < L.n && (s[t + 2] == '-' || s[t + 2] == '+') ? s[t + 2] : 0;
        HL_TRY(emit_text(&L, L.pos, t, sign, kind != '{'));
        int strip_after;
        size_t raw = match_word_tag(s, L.n, t, "raw", &strip_after);
        if (raw) {
            size_t from = t + raw, e = from, end_len = 0;
            int end_strip = 0;
            if (strip_after == 1) from = skip_space(s, L.n, from);
            while (e < L.n && !(end_len = match_word_tag(s, L.n, e, "endraw", &end_strip))) e++;
            if (e >= L.n) return hl_jfail(HEARTH_ERR_FORMAT, L.line, "missing {%% endraw %%}");
            advance(&L, from);
            char esign = s[e + 2] == '-' || s[e + 2] == '+' ? s[e + 2] : 0;
            HL_TRY(emit_text(&L, from, e, esign, true));
            size_t after = e + end_len;
            if (end_strip == 1) after = skip_space(s, L.n, after);
            else if (end_strip == 0 && after < L.n && s[after] == '\n') after++;
            advance(&L, after);
            continue;
        }
        size_t body = t + 2 + (sign != 0);
        if (kind == '#') {
            size_t e = body;
            while (e + 1 < L.n && !(s[e] == '#' && s[e + 1] == '}')) e++;
            if (e + 1 >= L.n) return hl_jfail(HEARTH_ERR_FORMAT, L.line, "missing end of comment '#}'");
            size_t after = e + 2;
            if (e > body && s[e - 1] == '-') after = skip_space(s, L.n, after);
            else if (!(e > body && s[e - 1] == '+') && after < L.n && s[after] == '\n') after++;
            advance(&L, after);
            continue;
        }
        HL_TRY(push(&L, (jtok){.k = kind == '{' ? TK_VAR_BEGIN : TK_BLOCK_BEGIN, .line = L.line}));
        advance(&L, body);
        HL_TRY(lex_tag(&L, kind == '{' ? "}}" : "%}", kind == '{' ? TK_VAR_END : TK_BLOCK_END));
    }
    HL_TRY(push(&L, (jtok){.k = TK_EOF, .line = L.line}));
    *toks = L.toks;
    *n_toks = L.n_toks;
    return HEARTH_OK;
}
