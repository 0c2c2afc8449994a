/* Jinja filters ("x | f(args)") with jinja2's semantics (filters.py),
 * dispatched from one {name, fn} table, plus transformers' tojson, which is
 * json.dumps(x, ensure_ascii=False, indent=None, separators=None,
 * sort_keys=False) rather than jinja2's HTML-safe one. Case conversions are
 * ASCII-only (other letters pass through unchanged). The tests ("x is t")
 * are in tests.c. */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/jinja/jinja_impl.h"

static hearth_status oom(void) { return HEARTH_ERR_OUT_OF_MEMORY; }

/* Argument `i` (positional) or `name` (keyword); false when not given. */
typedef struct fargs {
    jv *pos;
    size_t n_pos;
    const char **kw_names;
    jv *kw;
    size_t n_kw;
} fargs;

static bool arg(const fargs *a, size_t i, const char *name, jv *out) {
    if (i < a->n_pos) {
        *out = a->pos[i];
        return true;
    }
    for (size_t k = 0; k < a->n_kw; k++)
        if (!strcmp(a->kw_names[k], name)) {
            *out = a->kw[k];
            return true;
        }
    return false;
}

static bool arg_truthy(const fargs *a, size_t i, const char *name) {
    jv v;
    return arg(a, i, name, &v) && hl_jv_truthy(v);
}

static hearth_status need_str(jv v, const char *what, int line) {
    if (v.k != JV_STR)
        return hl_jfail(HEARTH_ERR_FORMAT, line, "%s expects a string, got %s", what, hl_jv_type_name(v));
    return HEARTH_OK;
}

/* ASCII case mapping of a string into the arena. mode: 'u' upper, 'l' lower,
 * 'c' capitalize, 't' jinja2's title (words start after - space ( { [ <). */
static hearth_status case_map(hl_jinja_env *e, jv s, char mode, jv *out) {
    char *p = hl_ja_alloc(&e->arena, s.u.s.n + 1);
    if (!p) return oom();
    bool word_start = true;
    for (size_t i = 0; i < s.u.s.n; i++) {
        unsigned char c = (unsigned char)s.u.s.p[i];
        bool up = mode == 'u' || (mode == 'c' && i == 0) || (mode == 't' && word_start);
        p[i] = (char)(c < 0x80 ? (up ? toupper(c) : mode == 'u' ? c : tolower(c)) : c);
        if (mode == 't')
            word_start = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' ||
                         hl_ju_space_at(s.u.s.p + i, s.u.s.n - i);
    }
    *out = hl_jv_strv(p, s.u.s.n);
    return HEARTH_OK;
}

static hearth_status html_escape(hl_jinja_env *e, jv s, jv *out) {
    jbuf b = {0};
    hearth_status st = HEARTH_OK;
    for (size_t i = 0; i < s.u.s.n && st == HEARTH_OK; i++) {
        const char *r = NULL;
        switch (s.u.s.p[i]) {
        case '&': r = "&amp;"; break;
        case '<': r = "&lt;"; break;
        case '>': r = "&gt;"; break;
        case '"': r = "&#34;"; break;
        case '\'': r = "&#39;"; break;
        }
        st = r ? hl_jbuf_put(e, &b, r, strlen(r)) : hl_jbuf_put(e, &b, s.u.s.p + i, 1);
    }
    if (st == HEARTH_OK && !hl_jv_str(e, b.p ? b.p : "", b.n, out)) st = oom();
    free(b.p);
    return st;
}

/* Python's str.replace(old, new, count); count < 0: all. */
hearth_status hl_jstr_replace(hl_jinja_env *e, jv s, jv old, jv repl, int64_t count, jv *out) {
    jbuf b = {0};
    hearth_status st = HEARTH_OK;
    size_t i = 0;
    int64_t done = 0;
    if (old.u.s.n == 0) { /* inserts repl before every code point and at the end */
        while (st == HEARTH_OK && i <= s.u.s.n) {
            if (count < 0 || done < count) {
                st = hl_jbuf_put(e, &b, repl.u.s.p, repl.u.s.n);
                done++;
            }
            if (i == s.u.s.n) break;
            size_t w = hl_ju_offset(s.u.s.p + i, s.u.s.n - i, 1);
            if (st == HEARTH_OK) st = hl_jbuf_put(e, &b, s.u.s.p + i, w);
            i += w;
        }
    } else {
        while (st == HEARTH_OK && i < s.u.s.n) {
            if ((count < 0 || done < count) && s.u.s.n - i >= old.u.s.n && !memcmp(s.u.s.p + i, old.u.s.p, old.u.s.n)) {
                st = hl_jbuf_put(e, &b, repl.u.s.p, repl.u.s.n);
                i += old.u.s.n;
                done++;
            } else {
                st = hl_jbuf_put(e, &b, s.u.s.p + i, 1);
                i++;
            }
        }
    }
    if (st == HEARTH_OK && !hl_jv_str(e, b.p ? b.p : "", b.n, out)) st = oom();
    free(b.p);
    return st;
}

/* obj.a.b for the attribute= arguments: each part looked up like obj[part]. */
static hearth_status attr_path(hl_jinja_env *e, jv obj, jv path, int line, jv *out) {
    HL_TRY(need_str(path, "attribute", line));
    size_t i = 0;
    while (i <= path.u.s.n) {
        size_t j = i;
        while (j < path.u.s.n && path.u.s.p[j] != '.') j++;
        jv part = hl_jv_strv(path.u.s.p + i, j - i);
        bool digits = j > i;
        for (size_t k = i; k < j; k++) digits = digits && isdigit((unsigned char)path.u.s.p[k]);
        if (digits) part = hl_jv_int(strtoll(path.u.s.p + i, NULL, 10));
        if (obj.k == JV_UNDEF) break;
        HL_TRY(hl_jget_item(e, obj, part, line, &obj));
        i = j + 1;
    }
    *out = obj;
    return HEARTH_OK;
}

/* Sort key for sort/unique/min/max/dictsort: strings lowered unless case_sensitive. */
static hearth_status sort_key(hl_jinja_env *e, jv v, bool case_sensitive, jv *out) {
    if (v.k == JV_STR && !case_sensitive) return case_map(e, v, 'l', out);
    *out = v;
    return HEARTH_OK;
}

/* Stable merge sort of items by keys (both arrays of n). */
static hearth_status merge_sort(jv *keys, jv *items, jv *tk, jv *ti, size_t n, bool reverse, int line) {
    if (n < 2) return HEARTH_OK;
    size_t h = n / 2;
    HL_TRY(merge_sort(keys, items, tk, ti, h, reverse, line));
    HL_TRY(merge_sort(keys + h, items + h, tk, ti, n - h, reverse, line));
    size_t i = 0, j = h, k = 0;
    while (i < h || j < n) {
        bool take_left = j >= n;
        if (i < h && j < n) {
            int cmp;
            HL_TRY(hl_jv_compare(keys[i], keys[j], line, &cmp));
            take_left = reverse ? cmp >= 0 : cmp <= 0;
        }
        size_t s = take_left ? i++ : j++;
        tk[k] = keys[s];
        ti[k++] = items[s];
    }
    memcpy(keys, tk, n * sizeof *keys);
    memcpy(items, ti, n * sizeof *items);
    return HEARTH_OK;
}

/* Sorted copy of `items`, keyed by item (or item.attribute). */
static hearth_status sorted(hl_jinja_env *e, const jlist *items, bool reverse, bool case_sensitive, const jv *attribute,
                            int line, jv *out) {
    size_t n = items->n;
    jv *buf = hl_ja_alloc(&e->arena, (4 * n + 1) * sizeof *buf);
    if (!buf) return oom();
    jv *keys = buf, *vals = buf + n;
    for (size_t i = 0; i < n; i++) {
        jv k = items->v[i];
        if (attribute) HL_TRY(attr_path(e, k, *attribute, line, &k));
        HL_TRY(sort_key(e, k, case_sensitive, &keys[i]));
        vals[i] = items->v[i];
    }
    HL_TRY(merge_sort(keys, vals, buf + 2 * n, buf + 3 * n, n, reverse, line));
    if (!hl_jv_list(e, out)) return oom();
    for (size_t i = 0; i < n; i++)
        if (!hl_jv_list_push(e, *out, vals[i])) return oom();
    return HEARTH_OK;
}

static hearth_status to_list(hl_jinja_env *e, jv v, int line, jlist **out) { return hl_jiterate(e, v, line, out); }

/* ------------------------------------------------------------ the filters -- */

/* A filter's table entry ({name, fn} as CPython's PyMethodDef) and one call of
 * it: the value (str(value) for the filters marked on_str), the arguments,
 * and the entry, whose opt says which variant of a shared function runs. */
typedef struct filter_def filter_def;
typedef struct fcall {
    hl_jinja_env *e;
    const filter_def *f;
    jv v;
    fargs a;
    int line;
} fcall;
struct filter_def {
    const char *name;
    hearth_status (*fn)(const fcall *c, jv *out);
    int opt;
    bool on_str;
};

/* select/reject/selectattr/rejectattr: opt holds SEL_KEEP and SEL_ATTR. */
enum { SEL_KEEP = 1, SEL_ATTR = 2 };
static hearth_status f_select(const fcall *c, jv *out) {
    hl_jinja_env *e = c->e;
    const fargs *a = &c->a;
    const int line = c->line;
    const bool by_attr = c->f->opt & SEL_ATTR, keep = c->f->opt & SEL_KEEP;
    jlist *items;
    HL_TRY(to_list(e, c->v, line, &items));
    size_t first = by_attr ? 1 : 0;
    jv attr = {0}, test = {0};
    if (by_attr && !arg(a, 0, "attribute", &attr))
        return hl_jfail(HEARTH_ERR_FORMAT, line, "selectattr needs an attribute");
    bool has_test = first < a->n_pos;
    if (has_test) {
        test = a->pos[first];
        HL_TRY(need_str(test, "the test name", line));
    }
    char name[32] = "";
    if (has_test) {
        snprintf(name, sizeof name, "%.*s", (int)(test.u.s.n < 31 ? test.u.s.n : 31), test.u.s.p);
        if (!hl_jtest_known(name))
            return hl_jfail(HEARTH_ERR_UNSUPPORTED, line, "unsupported Jinja feature 'test %s'", name);
    }
    if (!hl_jv_list(e, out)) return oom();
    for (size_t i = 0; i < items->n; i++) {
        jv v = items->v[i];
        if (by_attr) HL_TRY(attr_path(e, v, attr, line, &v));
        bool r = hl_jv_truthy(v);
        if (has_test) HL_TRY(hl_jtest_apply(e, name, v, a->pos + first + 1, a->n_pos - first - 1, line, &r));
        if (r == keep && !hl_jv_list_push(e, *out, items->v[i])) return oom();
    }
    return HEARTH_OK;
}

static hearth_status f_map(const fcall *c, jv *out) {
    hl_jinja_env *e = c->e;
    const fargs *a = &c->a;
    const int line = c->line;
    jlist *items;
    HL_TRY(to_list(e, c->v, line, &items));
    jv attribute, dflt, fname;
    bool by_attr = arg(a, 99, "attribute", &attribute), has_default = arg(a, 99, "default", &dflt);
    if (!by_attr && !arg(a, 0, "", &fname))
        return hl_jfail(HEARTH_ERR_FORMAT, line, "map needs a filter name or attribute=");
    char name[32] = "";
    if (!by_attr) {
        HL_TRY(need_str(fname, "map's filter name", line));
        snprintf(name, sizeof name, "%.*s", (int)(fname.u.s.n < 31 ? fname.u.s.n : 31), fname.u.s.p);
        if (!hl_jfilter_known(name))
            return hl_jfail(HEARTH_ERR_UNSUPPORTED, line, "unsupported Jinja feature 'filter %s'", name);
    }
    if (!hl_jv_list(e, out)) return oom();
    for (size_t i = 0; i < items->n; i++) {
        jv v = items->v[i];
        if (by_attr) {
            HL_TRY(attr_path(e, v, attribute, line, &v));
            if (v.k == JV_UNDEF && has_default) v = dflt;
        } else {
            size_t n_pos = a->n_pos ? a->n_pos - 1 : 0;
            HL_TRY(hl_jfilter_apply(e, name, v, a->pos + 1, n_pos, a->kw_names, a->kw, a->n_kw, line, &v));
        }
        if (!hl_jv_list_push(e, *out, v)) return oom();
    }
    return HEARTH_OK;
}

static hearth_status f_tojson(const fcall *c, jv *out) {
    const fargs *a = &c->a;
    const int line = c->line;
    jv ascii, indent_v, seps, sort;
    bool ensure_ascii = arg(a, 0, "ensure_ascii", &ascii) && hl_jv_truthy(ascii);
    int indent = -1;
    if (arg(a, 1, "indent", &indent_v) && indent_v.k != JV_NONE) {
        if (indent_v.k != JV_INT)
            return hl_jfail(HEARTH_ERR_UNSUPPORTED, line, "unsupported Jinja feature 'tojson indent of type %s'",
                            hl_jv_type_name(indent_v));
        indent = indent_v.u.i < 0 ? 0 : indent_v.u.i > 64 ? 64 : (int)indent_v.u.i;
    }
    jv item_sep = hl_jv_strv(indent >= 0 ? "," : ", ", indent >= 0 ? 1 : 2), key_sep = hl_jv_strv(": ", 2);
    if (arg(a, 2, "separators", &seps) && seps.k != JV_NONE) {
        if (seps.k != JV_LIST || seps.u.l->n != 2 || seps.u.l->v[0].k != JV_STR || seps.u.l->v[1].k != JV_STR)
            return hl_jfail(HEARTH_ERR_FORMAT, line, "tojson separators must be two strings");
        item_sep = seps.u.l->v[0];
        key_sep = seps.u.l->v[1];
    }
    bool sort_keys = arg(a, 3, "sort_keys", &sort) && hl_jv_truthy(sort);
    jbuf b = {0};
    hearth_status st = hl_jv_write_json(c->e, &b, c->v, ensure_ascii, indent, item_sep, key_sep, sort_keys, line);
    if (st == HEARTH_OK && !hl_jv_str(c->e, b.p ? b.p : "", b.n, out)) st = oom();
    free(b.p);
    return st;
}

/* jinja2's indent: every line but the first (first=True: it too) gets the
 * prefix; blank lines only with blank=True. */
static hearth_status f_indent(const fcall *c, jv *out) {
    hl_jinja_env *e = c->e;
    const fargs *a = &c->a;
    const int line = c->line;
    const jv s = c->v;
    jv w, prefix = hl_jv_strv("    ", 4);
    if (arg(a, 0, "width", &w)) {
        if (w.k == JV_STR) prefix = w;
        else if (w.k == JV_INT) {
            if (w.u.i < 0 || w.u.i > 1024)
                return hl_jfail(HEARTH_ERR_FORMAT, line, "indent width %" PRId64 " out of range", w.u.i);
            char *p = hl_ja_alloc(&e->arena, (size_t)w.u.i + 1);
            if (!p) return oom();
            memset(p, ' ', (size_t)w.u.i);
            prefix = hl_jv_strv(p, (size_t)w.u.i);
        } else return hl_jfail(HEARTH_ERR_FORMAT, line, "indent width must be int or str");
    }
    bool first = arg_truthy(a, 1, "first"), blank = arg_truthy(a, 2, "blank");
    jbuf b = {0};
    hearth_status st = HEARTH_OK;
    size_t i = 0;
    bool first_line = true;
    while (st == HEARTH_OK && i < s.u.s.n) {
        size_t j = i;
        while (j < s.u.s.n && s.u.s.p[j] != '\n' && s.u.s.p[j] != '\r') j++;
        bool is_blank = j == i;
        if (!first_line) st = hl_jbuf_put(e, &b, "\n", 1);
        if (st == HEARTH_OK && (first_line ? first : (blank || !is_blank)))
            st = hl_jbuf_put(e, &b, prefix.u.s.p, prefix.u.s.n);
        if (st == HEARTH_OK) st = hl_jbuf_put(e, &b, s.u.s.p + i, j - i);
        if (j < s.u.s.n && s.u.s.p[j] == '\r' && j + 1 < s.u.s.n && s.u.s.p[j + 1] == '\n') j++;
        i = j + 1;
        first_line = false;
    }
    if (st == HEARTH_OK && first_line && first) st = hl_jbuf_put(e, &b, prefix.u.s.p, prefix.u.s.n);
    if (st == HEARTH_OK && !hl_jv_str(e, b.p ? b.p : "", b.n, out)) st = oom();
    free(b.p);
    return st;
}

static hearth_status f_join(const fcall *c, jv *out) {
    hl_jinja_env *e = c->e;
    const fargs *a = &c->a;
    jv sep = hl_jv_strv("", 0), attribute;
    if (arg(a, 0, "d", &sep)) HL_TRY(hl_jv_to_str(e, sep, &sep));
    bool by_attr = arg(a, 1, "attribute", &attribute);
    jlist *items;
    HL_TRY(to_list(e, c->v, c->line, &items));
    jbuf b = {0};
    hearth_status st = HEARTH_OK;
    for (size_t i = 0; i < items->n && st == HEARTH_OK; i++) {
        jv v = items->v[i];
        if (i) st = hl_jbuf_put(e, &b, sep.u.s.p, sep.u.s.n);
        if (st == HEARTH_OK && by_attr) st = attr_path(e, v, attribute, c->line, &v);
        if (st == HEARTH_OK) st = hl_jv_write_str(e, &b, v);
    }
    if (st == HEARTH_OK && !hl_jv_str(e, b.p ? b.p : "", b.n, out)) st = oom();
    free(b.p);
    return st;
}

/* Python's int() of a string: optional sign, digits, underscores between
 * digits, surrounding whitespace. */
static bool parse_int(jv s, int64_t *out) {
    jv t = hl_jstr_strip(s, NULL, 'b');
    char buf[64];
    size_t n = 0;
    for (size_t i = 0; i < t.u.s.n; i++) {
        char c = t.u.s.p[i];
        if (c == '_' && i > 0 && i + 1 < t.u.s.n && isdigit((unsigned char)t.u.s.p[i - 1]) &&
            isdigit((unsigned char)t.u.s.p[i + 1]))
            continue;
        if (n == sizeof buf - 1) return false;
        buf[n++] = c;
    }
    buf[n] = '\0';
    if (!n) return false;
    char *end;
    long long v = strtoll(buf, &end, 10);
    if (*end || !isdigit((unsigned char)buf[n - 1]) || isspace((unsigned char)buf[0])) return false;
    *out = v;
    return true;
}

static bool parse_float(jv s, double *out) {
    jv t = hl_jstr_strip(s, NULL, 'b');
    char buf[128];
    if (!t.u.s.n || t.u.s.n >= sizeof buf) return false;
    memcpy(buf, t.u.s.p, t.u.s.n);
    buf[t.u.s.n] = '\0';
    char *end;
    *out = strtod(buf, &end);
    return !*end && !isspace((unsigned char)buf[0]) && !strpbrk(buf, "xX"); /* hex floats are not Python floats */
}

/* min and max: opt is 1 for max. */
static hearth_status f_min_max(const fcall *c, jv *out) {
    hl_jinja_env *e = c->e;
    const fargs *a = &c->a;
    const int line = c->line;
    const bool want_max = c->f->opt;
    jlist *items;
    HL_TRY(to_list(e, c->v, line, &items));
    jv attribute;
    bool by_attr = arg(a, 1, "attribute", &attribute), cs = arg_truthy(a, 0, "case_sensitive");
    *out = hl_jv_undef("No aggregated item, sequence was empty.");
    jv best_key = {0};
    for (size_t i = 0; i < items->n; i++) {
        jv k = items->v[i];
        if (by_attr) HL_TRY(attr_path(e, k, attribute, line, &k));
        HL_TRY(sort_key(e, k, cs, &k));
        int cmp = 0;
        if (i) HL_TRY(hl_jv_compare(k, best_key, line, &cmp));
        if (i == 0 || (want_max ? cmp > 0 : cmp < 0)) {
            best_key = k;
            *out = items->v[i];
        }
    }
    return HEARTH_OK;
}

static hearth_status f_default(const fcall *c, jv *out) {
    jv dflt = hl_jv_strv("", 0);
    arg(&c->a, 0, "default_value", &dflt);
    bool boolean = arg_truthy(&c->a, 1, "boolean");
    *out = (c->v.k == JV_UNDEF || (boolean && !hl_jv_truthy(c->v))) ? dflt : c->v;
    return HEARTH_OK;
}

/* safe, and string (on str(value)): the value itself. */
static hearth_status f_identity(const fcall *c, jv *out) {
    *out = c->v;
    return HEARTH_OK;
}

static hearth_status f_length(const fcall *c, jv *out) {
    const jv v = c->v;
    if (v.k == JV_STR) *out = hl_jv_int((int64_t)hl_ju_len(v.u.s.p, v.u.s.n));
    else if (v.k == JV_LIST) *out = hl_jv_int((int64_t)v.u.l->n);
    else if (v.k == JV_DICT || v.k == JV_NS) *out = hl_jv_int((int64_t)v.u.d->n);
    else if (v.k == JV_UNDEF) *out = hl_jv_int(0);
    else return hl_jfail(HEARTH_ERR_FORMAT, c->line, "object of type '%s' has no len()", hl_jv_type_name(v));
    return HEARTH_OK;
}

static hearth_status f_items(const fcall *c, jv *out) {
    hl_jinja_env *e = c->e;
    const jv v = c->v;
    if (!hl_jv_list(e, out)) return oom();
    if (v.k == JV_UNDEF) return HEARTH_OK;
    if (v.k != JV_DICT && v.k != JV_NS)
        return hl_jfail(HEARTH_ERR_FORMAT, c->line, "items expects a mapping, got %s", hl_jv_type_name(v));
    for (size_t i = 0; i < v.u.d->n; i++) {
        jv pair;
        if (!hl_jv_list(e, &pair)) return oom();
        pair.u.l->tuple = true;
        if (!hl_jv_list_push(e, pair, v.u.d->keys[i]) || !hl_jv_list_push(e, pair, v.u.d->vals[i]) ||
            !hl_jv_list_push(e, *out, pair))
            return oom();
    }
    return HEARTH_OK;
}

static hearth_status f_dictsort(const fcall *c, jv *out) {
    const fargs *a = &c->a;
    if (c->v.k != JV_DICT)
        return hl_jfail(HEARTH_ERR_FORMAT, c->line, "dictsort expects a mapping, got %s", hl_jv_type_name(c->v));
    jv by = hl_jv_strv("key", 3), pairs;
    arg(a, 1, "by", &by);
    HL_TRY(f_items(c, &pairs));
    bool by_value = by.k == JV_STR && by.u.s.n == 5 && !memcmp(by.u.s.p, "value", 5);
    jv attr_name = hl_jv_strv(by_value ? "1" : "0", 1); /* the pair's item */
    return sorted(c->e, pairs.u.l, arg_truthy(a, 2, "reverse"), arg_truthy(a, 0, "case_sensitive"), &attr_name, c->line,
                  out);
}

/* first and last: opt is 1 for last. */
static hearth_status f_first_last(const fcall *c, jv *out) {
    jlist *items;
    HL_TRY(to_list(c->e, c->v, c->line, &items));
    *out = items->n ? items->v[c->f->opt ? items->n - 1 : 0] : hl_jv_undef("No first item, sequence was empty.");
    return HEARTH_OK;
}

static hearth_status f_list(const fcall *c, jv *out) {
    jlist *items;
    HL_TRY(to_list(c->e, c->v, c->line, &items));
    if (!hl_jv_list(c->e, out)) return oom();
    for (size_t i = 0; i < items->n; i++)
        if (!hl_jv_list_push(c->e, *out, items->v[i])) return oom();
    return HEARTH_OK;
}

static hearth_status f_reverse(const fcall *c, jv *out) {
    hl_jinja_env *e = c->e;
    const jv v = c->v;
    if (v.k == JV_STR) {
        jlist *chars;
        HL_TRY(to_list(e, v, c->line, &chars));
        char *p = hl_ja_alloc(&e->arena, v.u.s.n + 1);
        if (!p) return oom();
        size_t o = 0;
        for (size_t i = chars->n; i-- > 0;) {
            memcpy(p + o, chars->v[i].u.s.p, chars->v[i].u.s.n);
            o += chars->v[i].u.s.n;
        }
        *out = hl_jv_strv(p, o);
        return HEARTH_OK;
    }
    jlist *items;
    HL_TRY(to_list(e, v, c->line, &items));
    if (!hl_jv_list(e, out)) return oom();
    for (size_t i = items->n; i-- > 0;)
        if (!hl_jv_list_push(e, *out, items->v[i])) return oom();
    return HEARTH_OK;
}

static hearth_status f_sort(const fcall *c, jv *out) {
    const fargs *a = &c->a;
    jlist *items;
    HL_TRY(to_list(c->e, c->v, c->line, &items));
    jv attribute;
    bool by_attr = arg(a, 2, "attribute", &attribute);
    return sorted(c->e, items, arg_truthy(a, 0, "reverse"), arg_truthy(a, 1, "case_sensitive"),
                  by_attr ? &attribute : NULL, c->line, out);
}

static hearth_status f_unique(const fcall *c, jv *out) {
    hl_jinja_env *e = c->e;
    jlist *items;
    HL_TRY(to_list(e, c->v, c->line, &items));
    jv attribute, seen;
    bool by_attr = arg(&c->a, 1, "attribute", &attribute), cs = arg_truthy(&c->a, 0, "case_sensitive");
    if (!hl_jv_list(e, out) || !hl_jv_list(e, &seen)) return oom();
    for (size_t i = 0; i < items->n; i++) {
        jv k = items->v[i];
        if (by_attr) HL_TRY(attr_path(e, k, attribute, c->line, &k));
        HL_TRY(sort_key(e, k, cs, &k));
        bool dup = false;
        for (size_t j = 0; j < seen.u.l->n && !dup; j++) dup = hl_jv_equal(seen.u.l->v[j], k);
        if (!dup && (!hl_jv_list_push(e, seen, k) || !hl_jv_list_push(e, *out, items->v[i]))) return oom();
    }
    return HEARTH_OK;
}

static hearth_status f_sum(const fcall *c, jv *out) {
    const int line = c->line;
    jlist *items;
    HL_TRY(to_list(c->e, c->v, line, &items));
    jv attribute, acc = hl_jv_int(0);
    bool by_attr = arg(&c->a, 0, "attribute", &attribute);
    arg(&c->a, 1, "start", &acc);
    for (size_t i = 0; i < items->n; i++) {
        jv x2 = items->v[i];
        if (by_attr) HL_TRY(attr_path(c->e, x2, attribute, line, &x2));
        bool fl = acc.k == JV_FLOAT || x2.k == JV_FLOAT;
        if ((acc.k != JV_INT && acc.k != JV_FLOAT && acc.k != JV_BOOL) ||
            (x2.k != JV_INT && x2.k != JV_FLOAT && x2.k != JV_BOOL))
            return hl_jfail(HEARTH_ERR_FORMAT, line, "sum of %s and %s", hl_jv_type_name(acc), hl_jv_type_name(x2));
        double fa = acc.k == JV_FLOAT ? acc.u.f : acc.k == JV_INT ? (double)acc.u.i : acc.u.b;
        double fb = x2.k == JV_FLOAT ? x2.u.f : x2.k == JV_INT ? (double)x2.u.i : x2.u.b;
        int64_t ia = acc.k == JV_INT ? acc.u.i : acc.u.b, ib = x2.k == JV_INT ? x2.u.i : x2.u.b, r;
        if (fl) acc = hl_jv_float(fa + fb);
        else if (__builtin_add_overflow(ia, ib, &r))
            return hl_jfail(HEARTH_ERR_UNSUPPORTED, line, "unsupported Jinja feature 'integer beyond 64 bits'");
        else acc = hl_jv_int(r);
    }
    *out = acc;
    return HEARTH_OK;
}

static hearth_status f_abs(const fcall *c, jv *out) {
    const jv v = c->v;
    if (v.k == JV_INT && v.u.i != INT64_MIN) *out = hl_jv_int(v.u.i < 0 ? -v.u.i : v.u.i);
    else if (v.k == JV_FLOAT) *out = hl_jv_float(fabs(v.u.f));
    else if (v.k == JV_BOOL) *out = hl_jv_int(v.u.b);
    else return hl_jfail(HEARTH_ERR_FORMAT, c->line, "bad operand type for abs(): '%s'", hl_jv_type_name(v));
    return HEARTH_OK;
}

static hearth_status f_round(const fcall *c, jv *out) {
    const jv v = c->v;
    jv prec = hl_jv_int(0), method = hl_jv_strv("common", 6);
    arg(&c->a, 0, "precision", &prec);
    arg(&c->a, 1, "method", &method);
    if ((v.k != JV_INT && v.k != JV_FLOAT && v.k != JV_BOOL) || prec.k != JV_INT || method.k != JV_STR)
        return hl_jfail(HEARTH_ERR_FORMAT, c->line, "round expects a number");
    double f = v.k == JV_FLOAT ? v.u.f : v.k == JV_INT ? (double)v.u.i : v.u.b;
    double scale = pow(10.0, (double)(prec.u.i > 15 ? 15 : prec.u.i < -15 ? -15 : prec.u.i));
    double r = f * scale;
    if (method.u.s.n == 4 && !memcmp(method.u.s.p, "ceil", 4)) r = ceil(r);
    else if (method.u.s.n == 5 && !memcmp(method.u.s.p, "floor", 5)) r = floor(r);
    else r = nearbyint(r); /* Python's round(): half to even */
    *out = hl_jv_float(r / scale);
    return HEARTH_OK;
}

static hearth_status f_int(const fcall *c, jv *out) {
    const jv v = c->v;
    jv dflt = hl_jv_int(0);
    arg(&c->a, 0, "default", &dflt);
    int64_t i;
    double f;
    if (v.k == JV_INT) *out = v;
    else if (v.k == JV_BOOL) *out = hl_jv_int(v.u.b);
    else if (v.k == JV_FLOAT && isfinite(v.u.f) && fabs(v.u.f) < 9.2e18) *out = hl_jv_int((int64_t)v.u.f);
    else if (v.k == JV_STR && parse_int(v, &i)) *out = hl_jv_int(i);
    else if (v.k == JV_STR && parse_float(v, &f) && isfinite(f) && fabs(f) < 9.2e18) *out = hl_jv_int((int64_t)f);
    else *out = dflt;
    return HEARTH_OK;
}

static hearth_status f_float(const fcall *c, jv *out) {
    const jv v = c->v;
    jv dflt = hl_jv_float(0.0);
    arg(&c->a, 0, "default", &dflt);
    double f;
    if (v.k == JV_FLOAT) *out = v;
    else if (v.k == JV_INT) *out = hl_jv_float((double)v.u.i);
    else if (v.k == JV_BOOL) *out = hl_jv_float(v.u.b);
    else if (v.k == JV_STR && parse_float(v, &f)) *out = hl_jv_float(f);
    else *out = dflt;
    return HEARTH_OK;
}

/* The filters below are marked on_str: c->v is str(value). */

static hearth_status f_trim(const fcall *c, jv *out) {
    jv y;
    bool has = arg(&c->a, 0, "chars", &y) && y.k != JV_NONE;
    if (has) HL_TRY(need_str(y, "trim's chars", c->line));
    *out = hl_jstr_strip(c->v, has ? &y : NULL, 'b');
    return HEARTH_OK;
}

/* upper, lower, capitalize, title: opt is case_map's mode. */
static hearth_status f_case(const fcall *c, jv *out) { return case_map(c->e, c->v, (char)c->f->opt, out); }

static hearth_status f_escape(const fcall *c, jv *out) { return html_escape(c->e, c->v, out); }

static hearth_status f_replace(const fcall *c, jv *out) {
    jv old, repl, count = hl_jv_int(-1);
    if (!arg(&c->a, 0, "old", &old) || !arg(&c->a, 1, "new", &repl))
        return hl_jfail(HEARTH_ERR_FORMAT, c->line, "replace needs the old and new strings");
    arg(&c->a, 2, "count", &count);
    HL_TRY(hl_jv_to_str(c->e, old, &old));
    HL_TRY(hl_jv_to_str(c->e, repl, &repl));
    return hl_jstr_replace(c->e, c->v, old, repl, count.k == JV_INT ? count.u.i : -1, out);
}

static const filter_def FILTERS[] = {
    {"abs", f_abs, 0, false},
    {"capitalize", f_case, 'c', true},
    {"count", f_length, 0, false},
    {"d", f_default, 0, false},
    {"default", f_default, 0, false},
    {"dictsort", f_dictsort, 0, false},
    {"e", f_escape, 0, true},
    {"escape", f_escape, 0, true},
    {"first", f_first_last, 0, false},
    {"float", f_float, 0, false},
    {"indent", f_indent, 0, true},
    {"int", f_int, 0, false},
    {"items", f_items, 0, false},
    {"join", f_join, 0, false},
    {"last", f_first_last, 1, false},
    {"length", f_length, 0, false},
    {"list", f_list, 0, false},
    {"lower", f_case, 'l', true},
    {"map", f_map, 0, false},
    {"max", f_min_max, 1, false},
    {"min", f_min_max, 0, false},
    {"reject", f_select, 0, false},
    {"rejectattr", f_select, SEL_ATTR, false},
    {"replace", f_replace, 0, true},
    {"reverse", f_reverse, 0, false},
    {"round", f_round, 0, false},
    {"safe", f_identity, 0, false},
    {"select", f_select, SEL_KEEP, false},
    {"selectattr", f_select, SEL_KEEP | SEL_ATTR, false},
    {"sort", f_sort, 0, false},
    {"string", f_identity, 0, true},
    {"sum", f_sum, 0, false},
    {"title", f_case, 't', true},
    {"tojson", f_tojson, 0, false},
    {"trim", f_trim, 0, true},
    {"unique", f_unique, 0, false},
    {"upper", f_case, 'u', true},
};

static const filter_def *find_filter(const char *name) {
    return hl_jtable_find(FILTERS, sizeof FILTERS / sizeof FILTERS[0], sizeof FILTERS[0], name);
}

bool hl_jfilter_known(const char *name) { return find_filter(name) != NULL; }

hearth_status hl_jfilter_apply(hl_jinja_env *e, const char *name, jv v, jv *args, size_t n_args, const char **kw_names,
                               jv *kw_vals, size_t n_kw, int line, jv *out) {
    const filter_def *f = find_filter(name);
    if (!f) return hl_jfail(HEARTH_ERR_UNSUPPORTED, line, "unsupported Jinja feature 'filter %s'", name);
    fcall c = {e, f, v, {args, n_args, kw_names, kw_vals, n_kw}, line};
    if (f->on_str) HL_TRY(hl_jv_to_str(e, v, &c.v));
    return f->fn(&c, out);
}
