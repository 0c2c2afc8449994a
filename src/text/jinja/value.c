/* Values of the Jinja interpreter: the arena they live in, builders, Python's
 * truthiness and equality, str() and repr() as Python writes them, json.dumps
 * as transformers' tojson calls it, and UTF-8 helpers with Python's str
 * semantics (lengths in code points, str.isspace). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/jinja/jinja_impl.h"

/* ------------------------------------------------------------------ arena -- */

struct jchunk {
    jchunk *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
};

#define CHUNK_MIN ((size_t)64 << 10)

void *hl_ja_alloc(jarena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (n > a->cap || a->used > a->cap - n) {
        hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "chat template: rendering needs more than %zu MiB of memory", a->cap >> 20);
        return NULL;
    }
    jchunk *c = a->head;
    if (!c || c->size - c->used < n) {
        size_t size = n > CHUNK_MIN ? n : CHUNK_MIN;
        c = calloc(1, sizeof *c + size);
        if (!c) {
            hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "chat template: out of memory allocating %zu bytes", size);
            return NULL;
        }
        c->size = size;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    a->used += n;
    return p;
}

void hl_ja_free(jarena *a) {
    jchunk *c = a->head;
    while (c) {
        jchunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->used = 0;
}

char *hl_ja_strdup(jarena *a, const char *p, size_t n) {
    char *s = hl_ja_alloc(a, n + 1);
    if (s && n) memcpy(s, p, n);
    return s;
}

hearth_status hl_jfail(hearth_status st, int line, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return hl_fail(st, "chat template line %d: %s", line, msg);
}

/* --------------------------------------------------------------- builders -- */

jv hl_jv_none(void) { return (jv){.k = JV_NONE}; }
jv hl_jv_bool(bool b) { return (jv){.k = JV_BOOL, .u.b = b}; }
jv hl_jv_int(int64_t i) { return (jv){.k = JV_INT, .u.i = i}; }
jv hl_jv_float(double f) { return (jv){.k = JV_FLOAT, .u.f = f}; }
jv hl_jv_strv(const char *p, size_t n) { return (jv){.k = JV_STR, .u.s = {p, n}}; }
jv hl_jv_undef(const char *what) { return (jv){.k = JV_UNDEF, .u.s = {what, what ? strlen(what) : 0}}; }

hearth_status hl_jv_undefined_error(jv v, int line) {
    return hl_jfail(HEARTH_ERR_FORMAT, line, "%.*s", (int)v.u.s.n, v.u.s.p ? v.u.s.p : "");
}

bool hl_jv_str(hl_jinja_env *env, const char *p, size_t n, jv *out) {
    char *s = hl_ja_strdup(&env->arena, p, n);
    if (!s) return false;
    *out = hl_jv_strv(s, n);
    return true;
}

bool hl_jv_list(hl_jinja_env *env, jv *out) {
    jlist *l = hl_ja_alloc(&env->arena, sizeof *l);
    if (!l) return false;
    *out = (jv){.k = JV_LIST, .u.l = l};
    return true;
}

bool hl_jv_dict(hl_jinja_env *env, jv *out) {
    jdict *d = hl_ja_alloc(&env->arena, sizeof *d);
    if (!d) return false;
    *out = (jv){.k = JV_DICT, .u.d = d};
    return true;
}

bool hl_jv_list_push(hl_jinja_env *env, jv list, jv item) {
    jlist *l = list.u.l;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        jv *v = hl_ja_alloc(&env->arena, cap * sizeof *v);
        if (!v) return false;
        if (l->n) memcpy(v, l->v, l->n * sizeof *v);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = item;
    return true;
}

bool hl_jv_dict_set(hl_jinja_env *env, jv dict, jv key, jv val) {
    jdict *d = dict.u.d;
    jv *slot = hl_jdict_get(d, key);
    if (slot) {
        *slot = val;
        return true;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 4;
        jv *k = hl_ja_alloc(&env->arena, cap * sizeof *k);
        jv *v = hl_ja_alloc(&env->arena, cap * sizeof *v);
        if (!k || !v) return false;
        if (d->n) {
            memcpy(k, d->keys, d->n * sizeof *k);
            memcpy(v, d->vals, d->n * sizeof *v);
        }
        d->keys = k;
        d->vals = v;
        d->cap = cap;
    }
    d->keys[d->n] = key;
    d->vals[d->n++] = val;
    return true;
}

jv *hl_jdict_get(const jdict *d, jv key) {
    for (size_t i = 0; i < d->n; i++)
        if (hl_jv_equal(d->keys[i], key)) return &d->vals[i];
    return NULL;
}

jv *hl_jdict_get_str(const jdict *d, const char *key) { return hl_jdict_get(d, hl_jv_strv(key, strlen(key))); }

/* ----------------------------------------------------- truth and equality -- */

bool hl_jv_truthy(jv v) {
    switch (v.k) {
    case JV_UNDEF:
    case JV_NONE: return false;
    case JV_BOOL: return v.u.b;
    case JV_INT: return v.u.i != 0;
    case JV_FLOAT: return v.u.f != 0.0;
    case JV_STR: return v.u.s.n > 0;
    case JV_LIST: return v.u.l->n > 0;
    case JV_DICT: return v.u.d->n > 0;
    default: return true;
    }
}

static bool is_number(jv v) { return v.k == JV_INT || v.k == JV_FLOAT || v.k == JV_BOOL; }
static double num(jv v) { return v.k == JV_FLOAT ? v.u.f : v.k == JV_INT ? (double)v.u.i : (double)v.u.b; }
static int64_t inum(jv v) { return v.k == JV_INT ? v.u.i : (int64_t)v.u.b; }

/* Structural equality; `budget` bounds the work on huge shared structures
 * (they then compare unequal). */
static bool equal(jv a, jv b, int depth, long *budget) {
    if (--*budget < 0 || depth > 256) return false;
    if (is_number(a) && is_number(b)) {
        if (a.k != JV_FLOAT && b.k != JV_FLOAT) return inum(a) == inum(b);
        return num(a) == num(b);
    }
    if (a.k != b.k) return false;
    switch (a.k) {
    case JV_UNDEF:
    case JV_NONE: return true;
    case JV_STR: return a.u.s.n == b.u.s.n && (a.u.s.n == 0 || !memcmp(a.u.s.p, b.u.s.p, a.u.s.n));
    case JV_LIST:
        if (a.u.l == b.u.l) return true;
        if (a.u.l->n != b.u.l->n || a.u.l->tuple != b.u.l->tuple) return false;
        for (size_t i = 0; i < a.u.l->n; i++)
            if (!equal(a.u.l->v[i], b.u.l->v[i], depth + 1, budget)) return false;
        return true;
    case JV_DICT:
        if (a.u.d == b.u.d) return true;
        if (a.u.d->n != b.u.d->n) return false;
        for (size_t i = 0; i < a.u.d->n; i++) {
            jv *o = hl_jdict_get(b.u.d, a.u.d->keys[i]);
            if (!o || !equal(a.u.d->vals[i], *o, depth + 1, budget)) return false;
        }
        return true;
    case JV_NS: return a.u.d == b.u.d;
    case JV_LOOP: return a.u.loop == b.u.loop;
    case JV_MACRO: return a.u.m == b.u.m;
    case JV_BUILTIN: return a.aux == b.aux;
    default: return false;
    }
}

bool hl_jv_equal(jv a, jv b) {
    long budget = 1000000;
    return equal(a, b, 0, &budget);
}

const char *hl_jv_type_name(jv v) {
    switch (v.k) {
    case JV_UNDEF: return "Undefined";
    case JV_NONE: return "NoneType";
    case JV_BOOL: return "bool";
    case JV_INT: return "int";
    case JV_FLOAT: return "float";
    case JV_STR: return "str";
    case JV_LIST: return v.u.l->tuple ? "tuple" : "list";
    case JV_DICT: return "dict";
    case JV_NS: return "Namespace";
    case JV_LOOP: return "LoopContext";
    case JV_MACRO: return "Macro";
    case JV_BUILTIN: return "builtin_function_or_method";
    }
    return "object";
}

hearth_status hl_jv_compare(jv a, jv b, int line, int *cmp) {
    if (is_number(a) && is_number(b)) {
        if (a.k != JV_FLOAT && b.k != JV_FLOAT) *cmp = (inum(a) > inum(b)) - (inum(a) < inum(b));
        else *cmp = (num(a) > num(b)) - (num(a) < num(b));
        return HEARTH_OK;
    }
    if (a.k == JV_STR && b.k == JV_STR) {
        size_t n = a.u.s.n < b.u.s.n ? a.u.s.n : b.u.s.n;
        int c = n ? memcmp(a.u.s.p, b.u.s.p, n) : 0;
        *cmp = c ? (c > 0) - (c < 0) : (a.u.s.n > b.u.s.n) - (a.u.s.n < b.u.s.n);
        return HEARTH_OK;
    }
    if (a.k == JV_LIST && b.k == JV_LIST && a.u.l->tuple == b.u.l->tuple) {
        for (size_t i = 0; i < a.u.l->n && i < b.u.l->n; i++) {
            if (hl_jv_equal(a.u.l->v[i], b.u.l->v[i])) continue;
            return hl_jv_compare(a.u.l->v[i], b.u.l->v[i], line, cmp);
        }
        *cmp = (a.u.l->n > b.u.l->n) - (a.u.l->n < b.u.l->n);
        return HEARTH_OK;
    }
    return hl_jfail(HEARTH_ERR_FORMAT, line, "cannot order %s and %s", hl_jv_type_name(a), hl_jv_type_name(b));
}

/* ------------------------------------------------------------------ UTF-8 -- */

static bool is_cont(unsigned char c) { return (c & 0xC0) == 0x80; }

size_t hl_ju_len(const char *p, size_t n) {
    size_t len = 0;
    for (size_t i = 0; i < n; i++) len += i == 0 || !is_cont((unsigned char)p[i]);
    return len;
}

size_t hl_ju_offset(const char *p, size_t n, size_t i) {
    size_t off = 0;
    while (i > 0 && off < n) {
        off++;
        while (off < n && is_cont((unsigned char)p[off])) off++;
        i--;
    }
    return off;
}

/* The code point at p (length *w), or the byte itself when not valid UTF-8. */
static uint32_t decode(const unsigned char *p, size_t n, size_t *w) {
    unsigned c = p[0];
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || (size_t)len > n) {
        *w = 1;
        return c;
    }
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < len; k++) {
        if (!is_cont(p[k])) {
            *w = 1;
            return c;
        }
        cp = (cp << 6) | (p[k] & 0x3F);
    }
    *w = (size_t)len;
    return cp;
}

/* Python's str.isspace(). */
static bool py_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

size_t hl_ju_space_at(const char *p, size_t n) {
    if (n == 0) return 0;
    size_t w;
    uint32_t c = decode((const unsigned char *)p, n, &w);
    return py_space(c) ? w : 0;
}

size_t hl_ju_space_before(const char *p, size_t n) {
    if (n == 0) return 0;
    size_t start = n - 1;
    while (start > 0 && n - start < 4 && is_cont((unsigned char)p[start])) start--;
    size_t w = hl_ju_space_at(p + start, n - start);
    if (w == n - start) return w;
    return hl_ju_space_at(p + n - 1, 1);
}

jv hl_jstr_strip(jv s, const jv *chars, char which) {
    const char *p = s.u.s.p;
    size_t b = 0, e = s.u.s.n;
    if (!chars) {
        size_t w;
        if (which != 'r')
            while (b < e && (w = hl_ju_space_at(p + b, e - b)) > 0) b += w;
        if (which != 'l')
            while (e > b && (w = hl_ju_space_before(p + b, e - b)) > 0) e -= w;
        return hl_jv_strv(p + b, e - b);
    }
    /* strip any of the characters (code points) in chars */
    const char *cs = chars->u.s.p;
    size_t cn = chars->u.s.n;
    for (int side = 0; side < 2; side++) {
        if ((side == 0 && which == 'r') || (side == 1 && which == 'l')) continue;
        for (;;) {
            bool hit = false;
            for (size_t i = 0; i < cn && !hit;) {
                size_t w;
                decode((const unsigned char *)cs + i, cn - i, &w);
                if (e - b >= w && side == 0 && !memcmp(p + b, cs + i, w)) {
                    b += w;
                    hit = true;
                } else if (e - b >= w && side == 1 && !memcmp(p + e - w, cs + i, w)) {
                    e -= w;
                    hit = true;
                }
                i += w;
            }
            if (!hit || b == e) break;
        }
    }
    return hl_jv_strv(p + b, e - b);
}

/* ---------------------------------------------------------- str and repr -- */

hearth_status hl_jbuf_put(hl_jinja_env *e, jbuf *b, const char *p, size_t n) {
    if (n > e->lim.max_output || b->n > e->lim.max_output - n)
        return hl_fail(HEARTH_ERR_FORMAT, "chat template: the output exceeds %zu MiB", e->lim.max_output >> 20);
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *bigger = realloc(b->p, cap);
        if (!bigger)
            return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "chat template: out of memory for %zu bytes of output", cap);
        b->p = bigger;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = '\0';
    return HEARTH_OK;
}

static hearth_status put_str(hl_jinja_env *e, jbuf *b, const char *s) { return hl_jbuf_put(e, b, s, strlen(s)); }

void hl_jv_float_repr(double f, char *buf, size_t size) {
    if (isnan(f)) {
        snprintf(buf, size, "nan");
        return;
    }
    if (isinf(f)) {
        snprintf(buf, size, f < 0 ? "-inf" : "inf");
        return;
    }
    char e[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec - 1, f);
        if (strtod(e, NULL) == f) break;
    }
    /* e is "-d.ddde+XX": split into sign, digits and exponent */
    const char *p = e;
    bool neg = *p == '-';
    if (neg) p++;
    char digits[24];
    int nd = 0;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') digits[nd++] = *p;
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    digits[nd] = '\0';
    int exp = atoi(p + 1);
    char *o = buf;
    size_t left = size;
#define OUT(...)                                                                                                       \
    do {                                                                                                               \
        int w_ = snprintf(o, left, __VA_ARGS__);                                                                       \
        if (w_ < 0 || (size_t)w_ >= left) return;                                                                      \
        o += w_;                                                                                                       \
        left -= (size_t)w_;                                                                                            \
    } while (0)
    if (neg) OUT("-");
    if (exp < -4 || exp >= 16) {
        OUT("%c", digits[0]);
        if (nd > 1) OUT(".%s", digits + 1);
        OUT("e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    } else if (exp < 0) {
        OUT("0.");
        for (int i = 0; i < -exp - 1; i++) OUT("0");
        OUT("%s", digits);
    } else {
        for (int i = 0; i <= exp; i++) OUT("%c", i < nd ? digits[i] : '0');
        OUT(".");
        OUT("%s", nd > exp + 1 ? digits + exp + 1 : "0");
    }
#undef OUT
}

/* repr() of a str: Python picks ' unless the text has ' and no ". */
static hearth_status repr_str(hl_jinja_env *e, jbuf *b, const char *p, size_t n) {
    bool has_sq = memchr(p, '\'', n) != NULL, has_dq = memchr(p, '"', n) != NULL;
    char q = has_sq && !has_dq ? '"' : '\'';
    HL_TRY(hl_jbuf_put(e, b, &q, 1));
    size_t i = 0;
    while (i < n) {
        size_t w;
        uint32_t c = decode((const unsigned char *)p + i, n - i, &w);
        char esc[12] = {0};
        if (c == (uint32_t)q || c == '\\') snprintf(esc, sizeof esc, "\\%c", (char)c);
        else if (c == '\n') snprintf(esc, sizeof esc, "\\n");
        else if (c == '\r') snprintf(esc, sizeof esc, "\\r");
        else if (c == '\t') snprintf(esc, sizeof esc, "\\t");
        else if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) snprintf(esc, sizeof esc, "\\x%02x", c);
        else if ((c >= 0x2028 && c <= 0x202F && c != 0x202F) || (c >= 0x200B && c <= 0x200F) || c == 0xFEFF ||
                 (c >= 0x2060 && c <= 0x2064))
            snprintf(esc, sizeof esc, "\\u%04x", c);
        if (esc[0]) HL_TRY(put_str(e, b, esc));
        else HL_TRY(hl_jbuf_put(e, b, p + i, w));
        i += w;
    }
    return hl_jbuf_put(e, b, &q, 1);
}

static hearth_status write_value(hl_jinja_env *e, jbuf *b, jv v, bool repr, int depth) {
    char num_buf[40];
    if (depth > 64) return put_str(e, b, "...");
    switch (v.k) {
    case JV_UNDEF: return HEARTH_OK;
    case JV_NONE: return put_str(e, b, "None");
    case JV_BOOL: return put_str(e, b, v.u.b ? "True" : "False");
    case JV_INT: snprintf(num_buf, sizeof num_buf, "%" PRId64, v.u.i); return put_str(e, b, num_buf);
    case JV_FLOAT: hl_jv_float_repr(v.u.f, num_buf, sizeof num_buf); return put_str(e, b, num_buf);
    case JV_STR: return repr ? repr_str(e, b, v.u.s.p, v.u.s.n) : hl_jbuf_put(e, b, v.u.s.p, v.u.s.n);
    case JV_LIST: {
        const jlist *l = v.u.l;
        HL_TRY(put_str(e, b, l->tuple ? "(" : "["));
        for (size_t i = 0; i < l->n; i++) {
            if (i) HL_TRY(put_str(e, b, ", "));
            HL_TRY(write_value(e, b, l->v[i], true, depth + 1));
        }
        return put_str(e, b, l->tuple ? (l->n == 1 ? ",)" : ")") : "]");
    }
    case JV_DICT:
    case JV_NS: {
        const jdict *d = v.u.d;
        HL_TRY(put_str(e, b, v.k == JV_NS ? "<Namespace {" : "{"));
        for (size_t i = 0; i < d->n; i++) {
            if (i) HL_TRY(put_str(e, b, ", "));
            HL_TRY(write_value(e, b, d->keys[i], true, depth + 1));
            HL_TRY(put_str(e, b, ": "));
            HL_TRY(write_value(e, b, d->vals[i], true, depth + 1));
        }
        return put_str(e, b, v.k == JV_NS ? "}>" : "}");
    }
    case JV_LOOP: return put_str(e, b, "<LoopContext>");
    case JV_MACRO:
        HL_TRY(put_str(e, b, "<Macro '"));
        HL_TRY(put_str(e, b, v.u.m->node->name ? v.u.m->node->name : "caller"));
        return put_str(e, b, "'>");
    case JV_BUILTIN: return put_str(e, b, "<built-in function>");
    }
    return HEARTH_OK;
}

hearth_status hl_jv_write_str(hl_jinja_env *e, jbuf *b, jv v) { return write_value(e, b, v, false, 0); }
hearth_status hl_jv_write_repr(hl_jinja_env *e, jbuf *b, jv v) { return write_value(e, b, v, true, 0); }

hearth_status hl_jv_to_str(hl_jinja_env *e, jv v, jv *out) {
    if (v.k == JV_STR) {
        *out = v;
        return HEARTH_OK;
    }
    jbuf b = {0};
    hearth_status st = hl_jv_write_str(e, &b, v);
    if (st == HEARTH_OK && !hl_jv_str(e, b.p ? b.p : "", b.n, out)) st = HEARTH_ERR_OUT_OF_MEMORY;
    free(b.p);
    return st;
}

/* ------------------------------------------------------------------- JSON -- */

typedef struct json_opts {
    bool ascii;
    int indent;
    jv item_sep, key_sep;
    bool sort_keys;
    int line;
} json_opts;

static hearth_status json_str(hl_jinja_env *e, jbuf *b, const char *p, size_t n, bool ascii) {
    HL_TRY(put_str(e, b, "\""));
    size_t i = 0;
    while (i < n) {
        size_t w;
        uint32_t c = decode((const unsigned char *)p + i, n - i, &w);
        char esc[16] = {0};
        switch (c) {
        case '"': strcpy(esc, "\\\""); break;
        case '\\': strcpy(esc, "\\\\"); break;
        case '\n': strcpy(esc, "\\n"); break;
        case '\r': strcpy(esc, "\\r"); break;
        case '\t': strcpy(esc, "\\t"); break;
        case '\b': strcpy(esc, "\\b"); break;
        case '\f': strcpy(esc, "\\f"); break;
        default:
            if (c < 0x20 || (ascii && c >= 0x7F && c < 0x10000)) snprintf(esc, sizeof esc, "\\u%04x", c);
            else if (ascii && c >= 0x10000)
                snprintf(esc, sizeof esc, "\\u%04x\\u%04x", 0xD800 + ((c - 0x10000) >> 10),
                         0xDC00 + ((c - 0x10000) & 0x3FF));
        }
        if (ascii && c == 0x7F) esc[0] = '\0'; /* DEL is ASCII: Python keeps it */
        if (esc[0]) HL_TRY(put_str(e, b, esc));
        else HL_TRY(hl_jbuf_put(e, b, p + i, w));
        i += w;
    }
    return put_str(e, b, "\"");
}

static hearth_status json_newline(hl_jinja_env *e, jbuf *b, const json_opts *o, int level) {
    HL_TRY(put_str(e, b, "\n"));
    for (int i = 0; i < o->indent * level; i++) HL_TRY(put_str(e, b, " "));
    return HEARTH_OK;
}

static hearth_status json_value(hl_jinja_env *e, jbuf *b, jv v, const json_opts *o, int level);

/* A dict key as json.dumps writes it: str as is, numbers, bools and None
 * converted; other types fail. */
static hearth_status json_key(hl_jinja_env *e, jbuf *b, jv k, const json_opts *o) {
    char tmp[40];
    switch (k.k) {
    case JV_STR: return json_str(e, b, k.u.s.p, k.u.s.n, o->ascii);
    case JV_BOOL: return json_str(e, b, k.u.b ? "true" : "false", k.u.b ? 4 : 5, false);
    case JV_NONE: return json_str(e, b, "null", 4, false);
    case JV_INT: snprintf(tmp, sizeof tmp, "%" PRId64, k.u.i); return json_str(e, b, tmp, strlen(tmp), false);
    case JV_FLOAT: hl_jv_float_repr(k.u.f, tmp, sizeof tmp); return json_str(e, b, tmp, strlen(tmp), false);
    default:
        return hl_jfail(HEARTH_ERR_FORMAT, o->line, "tojson: keys must be str, int, float, bool or None, not %s",
                        hl_jv_type_name(k));
    }
}

static hearth_status json_value(hl_jinja_env *e, jbuf *b, jv v, const json_opts *o, int level) {
    char tmp[40];
    if (level > 64) return hl_jfail(HEARTH_ERR_FORMAT, o->line, "tojson: value nested deeper than 64 (circular?)");
    switch (v.k) {
    case JV_NONE: return put_str(e, b, "null");
    case JV_BOOL: return put_str(e, b, v.u.b ? "true" : "false");
    case JV_INT: snprintf(tmp, sizeof tmp, "%" PRId64, v.u.i); return put_str(e, b, tmp);
    case JV_FLOAT:
        if (isnan(v.u.f)) return put_str(e, b, "NaN");
        if (isinf(v.u.f)) return put_str(e, b, v.u.f < 0 ? "-Infinity" : "Infinity");
        hl_jv_float_repr(v.u.f, tmp, sizeof tmp);
        return put_str(e, b, tmp);
    case JV_STR: return json_str(e, b, v.u.s.p, v.u.s.n, o->ascii);
    case JV_LIST: {
        const jlist *l = v.u.l;
        if (l->n == 0) return put_str(e, b, "[]");
        HL_TRY(put_str(e, b, "["));
        for (size_t i = 0; i < l->n; i++) {
            if (i) HL_TRY(hl_jbuf_put(e, b, o->item_sep.u.s.p, o->item_sep.u.s.n));
            if (o->indent >= 0) HL_TRY(json_newline(e, b, o, level + 1));
            HL_TRY(json_value(e, b, l->v[i], o, level + 1));
        }
        if (o->indent >= 0) HL_TRY(json_newline(e, b, o, level));
        return put_str(e, b, "]");
    }
    case JV_DICT: {
        const jdict *d = v.u.d;
        if (d->n == 0) return put_str(e, b, "{}");
        size_t *order = hl_ja_alloc(&e->arena, d->n * sizeof *order);
        if (!order) return HEARTH_ERR_OUT_OF_MEMORY;
        for (size_t i = 0; i < d->n; i++) order[i] = i;
        if (o->sort_keys) /* insertion sort: stable, as Python's sorted() */
            for (size_t i = 1; i < d->n; i++)
                for (size_t j = i; j > 0; j--) {
                    int cmp;
                    HL_TRY(hl_jv_compare(d->keys[order[j - 1]], d->keys[order[j]], o->line, &cmp));
                    if (cmp <= 0) break;
                    size_t t = order[j];
                    order[j] = order[j - 1];
                    order[j - 1] = t;
                }
        HL_TRY(put_str(e, b, "{"));
        for (size_t i = 0; i < d->n; i++) {
            if (i) HL_TRY(hl_jbuf_put(e, b, o->item_sep.u.s.p, o->item_sep.u.s.n));
            if (o->indent >= 0) HL_TRY(json_newline(e, b, o, level + 1));
            HL_TRY(json_key(e, b, d->keys[order[i]], o));
            HL_TRY(hl_jbuf_put(e, b, o->key_sep.u.s.p, o->key_sep.u.s.n));
            HL_TRY(json_value(e, b, d->vals[order[i]], o, level + 1));
        }
        if (o->indent >= 0) HL_TRY(json_newline(e, b, o, level));
        return put_str(e, b, "}");
    }
    default:
        return hl_jfail(HEARTH_ERR_FORMAT, o->line, "tojson: Object of type %s is not JSON serializable",
                        hl_jv_type_name(v));
    }
}

hearth_status hl_jv_write_json(hl_jinja_env *e, jbuf *b, jv v, bool ensure_ascii, int indent, jv item_sep, jv key_sep,
                               bool sort_keys, int line) {
    json_opts o = {.ascii = ensure_ascii,
                   .indent = indent,
                   .item_sep = item_sep,
                   .key_sep = key_sep,
                   .sort_keys = sort_keys,
                   .line = line};
    return json_value(e, b, v, &o, 0);
}
