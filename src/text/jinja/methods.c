/* Python methods that chat templates call on values (str.startswith, str.split,
 * dict.items, dict.get, loop.cycle ...) and the global functions: range,
 * namespace, dict, raise_exception and strftime_now (transformers adds the
 * last two; strftime_now formats the environment's fixed `now` in local
 * time), each dispatched from a {name, fn} table. Case conversions are
 * ASCII-only. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "text/jinja/jinja_impl.h"

static hearth_status oom(void) { return HEARTH_ERR_OUT_OF_MEMORY; }

static hearth_status want_args(const char *type, const char *name, size_t n_args, size_t lo, size_t hi, size_t n_kw,
                               int line) {
    if (n_kw)
        return hl_jfail(HEARTH_ERR_UNSUPPORTED, line, "unsupported Jinja feature 'keyword arguments to %s.%s'", type,
                        name);
    if (n_args < lo || n_args > hi)
        return hl_jfail(HEARTH_ERR_FORMAT, line, "%s.%s takes %zu to %zu arguments, got %zu", type, name, lo, hi,
                        n_args);
    return HEARTH_OK;
}

static hearth_status str_arg(jv v, const char *method, int line) {
    if (v.k != JV_STR)
        return hl_jfail(HEARTH_ERR_FORMAT, line, "str.%s expects a str argument, got %s", method, hl_jv_type_name(v));
    return HEARTH_OK;
}

static bool has_prefix(jv s, jv p, bool suffix) {
    if (p.u.s.n > s.u.s.n) return false;
    return !memcmp(s.u.s.p + (suffix ? s.u.s.n - p.u.s.n : 0), p.u.s.p, p.u.s.n);
}

/* str.split / str.rsplit (sep NULL: runs of whitespace; maxsplit < 0: all). */
static hearth_status split(hl_jinja_env *e, jv s, const jv *sep, int64_t maxsplit, bool right, int line, jv *out) {
    if (!hl_jv_list(e, out)) return oom();
    const char *p = s.u.s.p;
    size_t n = s.u.s.n;
    jv parts[1];
    if (!hl_jv_list(e, &parts[0])) return oom();
    if (sep && sep->u.s.n == 0) return hl_jfail(HEARTH_ERR_FORMAT, line, "split: empty separator");
    /* collect pieces as [begin, end) pairs in order of discovery */
    size_t b = 0, end = n;
    int64_t splits = 0;
    jlist *pieces = parts[0].u.l;
    if (!sep) {
        size_t w;
        if (!right) {
            while (b < n) {
                while (b < n && (w = hl_ju_space_at(p + b, n - b))) b += w;
                if (b >= n) break;
                size_t i = b;
                if (maxsplit >= 0 && splits == maxsplit) {
                    jv rest = hl_jstr_strip(hl_jv_strv(p + b, n - b), NULL, 'r');
                    if (!hl_jv_list_push(e, parts[0], rest)) return oom();
                    break;
                }
                while (i < n && !hl_ju_space_at(p + i, n - i)) i += hl_ju_offset(p + i, n - i, 1);
                if (!hl_jv_list_push(e, parts[0], hl_jv_strv(p + b, i - b))) return oom();
                splits++;
                b = i;
            }
        } else {
            while (end > 0) {
                while (end > 0 && (w = hl_ju_space_before(p, end))) end -= w;
                if (end == 0) break;
                if (maxsplit >= 0 && splits == maxsplit) {
                    jv rest = hl_jstr_strip(hl_jv_strv(p, end), NULL, 'l');
                    if (!hl_jv_list_push(e, parts[0], rest)) return oom();
                    break;
                }
                size_t i = end;
                while (i > 0 && !hl_ju_space_before(p, i)) i--;
                if (!hl_jv_list_push(e, parts[0], hl_jv_strv(p + i, end - i))) return oom();
                splits++;
                end = i;
            }
        }
    } else {
        size_t m = sep->u.s.n;
        if (!right) {
            size_t i = 0;
            while (i + m <= n && (maxsplit < 0 || splits < maxsplit)) {
                if (!memcmp(p + i, sep->u.s.p, m)) {
                    if (!hl_jv_list_push(e, parts[0], hl_jv_strv(p + b, i - b))) return oom();
                    splits++;
                    i += m;
                    b = i;
                } else {
                    i++;
                }
            }
            if (!hl_jv_list_push(e, parts[0], hl_jv_strv(p + b, n - b))) return oom();
        } else {
            size_t i = n;
            while (i >= m && (maxsplit < 0 || splits < maxsplit)) {
                if (!memcmp(p + i - m, sep->u.s.p, m)) {
                    if (!hl_jv_list_push(e, parts[0], hl_jv_strv(p + i, end - i))) return oom();
                    splits++;
                    i -= m;
                    end = i;
                } else {
                    i--;
                }
            }
            if (!hl_jv_list_push(e, parts[0], hl_jv_strv(p, end))) return oom();
        }
    }
    for (size_t i = 0; i < pieces->n; i++)
        if (!hl_jv_list_push(e, *out, pieces->v[right ? pieces->n - 1 - i : i])) return oom();
    return HEARTH_OK;
}

/* Python's str.title(): a letter after a letter is lowered, others raised. */
static hearth_status py_title(hl_jinja_env *e, jv s, jv *out) {
    char *p = hl_ja_alloc(&e->arena, s.u.s.n + 1);
    if (!p) return oom();
    bool prev_cased = false;
    for (size_t i = 0; i < s.u.s.n; i++) {
        unsigned char c = (unsigned char)s.u.s.p[i];
        p[i] = (char)(c < 0x80 ? (prev_cased ? tolower(c) : toupper(c)) : c);
        prev_cased = c < 0x80 ? isalpha(c) != 0 : prev_cased;
    }
    *out = hl_jv_strv(p, s.u.s.n);
    return HEARTH_OK;
}

static hearth_status ascii_case(hl_jinja_env *e, jv s, bool upper, bool capitalize, jv *out) {
    char *p = hl_ja_alloc(&e->arena, s.u.s.n + 1);
    if (!p) return oom();
    for (size_t i = 0; i < s.u.s.n; i++) {
        unsigned char c = (unsigned char)s.u.s.p[i];
        bool up = capitalize ? i == 0 : upper;
        p[i] = (char)(c < 0x80 ? (up ? toupper(c) : tolower(c)) : c);
    }
    *out = hl_jv_strv(p, s.u.s.n);
    return HEARTH_OK;
}

/* str.isdigit() and friends over ASCII; false for "" as in Python. */
static bool all_chars(jv s, int (*pred)(int)) {
    if (!s.u.s.n) return false;
    for (size_t i = 0; i < s.u.s.n; i++)
        if (!pred((unsigned char)s.u.s.p[i])) return false;
    return true;
}

/* A method's table entry ({name, fn} as CPython's PyMethodDef) and one call of
 * it: the object, the positional arguments (lo..hi of them, checked before
 * the call; methods take no keywords), and the entry, whose opt says which
 * variant of a shared function runs. */
typedef struct method_def method_def;
typedef struct mcall {
    hl_jinja_env *e;
    const method_def *m;
    jv self;
    jv *args;
    size_t n;
    int line;
} mcall;
struct method_def {
    const char *name;
    hearth_status (*fn)(const mcall *c, jv *out);
    uint8_t lo, hi;
    int opt;
};

/* str.startswith and str.endswith (opt 1): a str or a tuple of them. */
static hearth_status m_affix(const mcall *c, jv *out) {
    const jv *args = c->args;
    const bool suffix = c->m->opt;
    if (args[0].k == JV_LIST && args[0].u.l->tuple) {
        bool r = false;
        for (size_t i = 0; i < args[0].u.l->n; i++) {
            HL_TRY(str_arg(args[0].u.l->v[i], c->m->name, c->line));
            r = r || has_prefix(c->self, args[0].u.l->v[i], suffix);
        }
        *out = hl_jv_bool(r);
        return HEARTH_OK;
    }
    HL_TRY(str_arg(args[0], c->m->name, c->line));
    *out = hl_jv_bool(has_prefix(c->self, args[0], suffix));
    return HEARTH_OK;
}

/* str.strip, lstrip, rstrip: opt is hl_jstr_strip's 'b', 'l' or 'r'. */
static hearth_status m_strip(const mcall *c, jv *out) {
    bool chars = c->n && c->args[0].k != JV_NONE;
    if (chars) HL_TRY(str_arg(c->args[0], c->m->name, c->line));
    *out = hl_jstr_strip(c->self, chars ? &c->args[0] : NULL, (char)c->m->opt);
    return HEARTH_OK;
}

/* str.split and str.rsplit (opt 1). */
static hearth_status m_split(const mcall *c, jv *out) {
    const jv *args = c->args;
    bool has_sep = c->n > 0 && args[0].k != JV_NONE;
    if (has_sep) HL_TRY(str_arg(args[0], c->m->name, c->line));
    if (c->n > 1 && args[1].k != JV_INT)
        return hl_jfail(HEARTH_ERR_FORMAT, c->line, "str.%s: maxsplit must be an integer", c->m->name);
    return split(c->e, c->self, has_sep ? &args[0] : NULL, c->n > 1 ? args[1].u.i : -1, c->m->opt, c->line, out);
}

/* str.upper, lower, capitalize: opt 'u', 'l' or 'c'. */
static hearth_status m_case(const mcall *c, jv *out) {
    return ascii_case(c->e, c->self, c->m->opt == 'u', c->m->opt == 'c', out);
}

static hearth_status m_title(const mcall *c, jv *out) { return py_title(c->e, c->self, out); }

static hearth_status m_replace(const mcall *c, jv *out) {
    const jv *args = c->args;
    HL_TRY(str_arg(args[0], c->m->name, c->line));
    HL_TRY(str_arg(args[1], c->m->name, c->line));
    if (c->n > 2 && args[2].k != JV_INT)
        return hl_jfail(HEARTH_ERR_FORMAT, c->line, "str.replace: count must be an integer");
    return hl_jstr_replace(c->e, c->self, args[0], args[1], c->n > 2 ? args[2].u.i : -1, out);
}

/* str.find, rfind, count: opt 'f', 'r' or 'c'; positions in code points. */
static hearth_status m_find(const mcall *c, jv *out) {
    HL_TRY(str_arg(c->args[0], c->m->name, c->line));
    const jv s = c->self, sub = c->args[0];
    const int op = c->m->opt;
    int64_t found_at = -1, count = 0;
    for (size_t i = 0; i + sub.u.s.n <= s.u.s.n;) {
        if (!memcmp(s.u.s.p + i, sub.u.s.p, sub.u.s.n)) {
            if (found_at < 0 || op == 'r') found_at = (int64_t)hl_ju_len(s.u.s.p, i);
            count++;
            i += sub.u.s.n ? sub.u.s.n : 1;
            if (op == 'f') break;
        } else {
            i++;
        }
    }
    if (!sub.u.s.n) count = (int64_t)hl_ju_len(s.u.s.p, s.u.s.n) + 1;
    if (!sub.u.s.n && op == 'r') found_at = (int64_t)hl_ju_len(s.u.s.p, s.u.s.n);
    *out = hl_jv_int(op == 'c' ? count : found_at);
    return HEARTH_OK;
}

static hearth_status m_join(const mcall *c, jv *out) {
    hl_jinja_env *e = c->e;
    const jv s = c->self;
    jlist *items;
    HL_TRY(hl_jiterate(e, c->args[0], c->line, &items));
    jbuf b = {0};
    hearth_status st = HEARTH_OK;
    for (size_t i = 0; i < items->n && st == HEARTH_OK; i++) {
        if (items->v[i].k != JV_STR)
            st = hl_jfail(HEARTH_ERR_FORMAT, c->line, "sequence item %zu: expected str instance, %s found", i,
                          hl_jv_type_name(items->v[i]));
        if (st == HEARTH_OK && i) st = hl_jbuf_put(e, &b, s.u.s.p, s.u.s.n);
        if (st == HEARTH_OK) st = hl_jbuf_put(e, &b, items->v[i].u.s.p, items->v[i].u.s.n);
    }
    if (st == HEARTH_OK && !hl_jv_str(e, b.p ? b.p : "", b.n, out)) st = oom();
    free(b.p);
    return st;
}

/* str.isdigit, isalpha, isalnum, isspace (isnumeric, isdecimal: isdigit):
 * opt indexes CHAR_CLASSES. */
static int (*const CHAR_CLASSES[])(int) = {isdigit, isalpha, isalnum, isspace};
static hearth_status m_all_chars(const mcall *c, jv *out) {
    *out = hl_jv_bool(all_chars(c->self, CHAR_CLASSES[c->m->opt]));
    return HEARTH_OK;
}

static const method_def STR_METHODS[] = {
    {"startswith", m_affix, 1, 1, 0},    {"endswith", m_affix, 1, 1, 1},    {"strip", m_strip, 0, 1, 'b'},
    {"lstrip", m_strip, 0, 1, 'l'},      {"rstrip", m_strip, 0, 1, 'r'},    {"split", m_split, 0, 2, 0},
    {"rsplit", m_split, 0, 2, 1},        {"upper", m_case, 0, 0, 'u'},      {"lower", m_case, 0, 0, 'l'},
    {"capitalize", m_case, 0, 0, 'c'},   {"title", m_title, 0, 0, 0},       {"replace", m_replace, 2, 3, 0},
    {"find", m_find, 1, 1, 'f'},         {"rfind", m_find, 1, 1, 'r'},      {"count", m_find, 1, 1, 'c'},
    {"join", m_join, 1, 1, 0},           {"isdigit", m_all_chars, 0, 0, 0}, {"isalpha", m_all_chars, 0, 0, 1},
    {"isalnum", m_all_chars, 0, 0, 2},   {"isspace", m_all_chars, 0, 0, 3}, {"isnumeric", m_all_chars, 0, 0, 0},
    {"isdecimal", m_all_chars, 0, 0, 0},
};
#define N_STR_METHODS (sizeof STR_METHODS / sizeof STR_METHODS[0])

static hearth_status m_get(const mcall *c, jv *out) {
    jv *v = hl_jdict_get(c->self.u.d, c->args[0]);
    *out = v ? *v : c->n > 1 ? c->args[1] : hl_jv_none();
    return HEARTH_OK;
}

static hearth_status m_items(const mcall *c, jv *out) {
    return hl_jfilter_apply(c->e, "items", c->self, NULL, 0, NULL, NULL, 0, c->line, out);
}

/* dict.keys and dict.values (opt 1). */
static hearth_status m_keys_values(const mcall *c, jv *out) {
    const jdict *d = c->self.u.d;
    if (!hl_jv_list(c->e, out)) return oom();
    for (size_t i = 0; i < d->n; i++)
        if (!hl_jv_list_push(c->e, *out, c->m->opt ? d->vals[i] : d->keys[i])) return oom();
    return HEARTH_OK;
}

static const method_def DICT_METHODS[] = {
    {"get", m_get, 1, 2, 0},
    {"items", m_items, 0, 0, 0},
    {"keys", m_keys_values, 0, 0, 0},
    {"values", m_keys_values, 0, 0, 1},
};
#define N_DICT_METHODS (sizeof DICT_METHODS / sizeof DICT_METHODS[0])

/* Calls method `name` of `table` (the methods of `type`) on obj. */
static hearth_status call_method(hl_jinja_env *e, const method_def *table, size_t n_table, const char *type, jv obj,
                                 const char *name, jv *args, size_t n_args, size_t n_kw, int line, jv *out) {
    const method_def *m = hl_jtable_find(table, n_table, sizeof *table, name);
    if (!m) return hl_jfail(HEARTH_ERR_UNSUPPORTED, line, "unsupported Jinja feature '%s.%s'", type, name);
    HL_TRY(want_args(type, name, n_args, m->lo, m->hi, n_kw, line));
    const mcall c = {e, m, obj, args, n_args, line};
    return m->fn(&c, out);
}

hearth_status hl_jmethod_call(hl_jinja_env *e, jv obj, const char *name, jv *args, size_t n_args, const char **kw_names,
                              jv *kw_vals, size_t n_kw, int line, bool *found, jv *out) {
    (void)kw_names;
    (void)kw_vals;
    *found = false;
    if (obj.k == JV_DICT && hl_jdict_get_str(obj.u.d, name))
        return HEARTH_OK; /* a stored callable: the caller calls it */
    if (obj.k == JV_STR || obj.k == JV_DICT) {
        *found = true;
        const bool str = obj.k == JV_STR;
        return call_method(e, str ? STR_METHODS : DICT_METHODS, str ? N_STR_METHODS : N_DICT_METHODS,
                           str ? "str" : "dict", obj, name, args, n_args, n_kw, line, out);
    }
    if (obj.k == JV_LOOP && !strcmp(name, "cycle")) {
        *found = true;
        if (!n_args) return hl_jfail(HEARTH_ERR_FORMAT, line, "loop.cycle needs at least one value");
        *out = args[obj.u.loop->index0 % n_args];
        return HEARTH_OK;
    }
    if (obj.k == JV_LIST)
        return hl_jfail(HEARTH_ERR_UNSUPPORTED, line, "unsupported Jinja feature '%s.%s'", hl_jv_type_name(obj), name);
    return HEARTH_OK;
}

/* --------------------------------------------------------------- globals -- */

/* A global function's table entry and one call of it. */
typedef struct builtin_def builtin_def;
typedef struct bcall {
    hl_jinja_env *e;
    const builtin_def *b;
    jv *args;
    size_t n;
    const char **kw_names;
    jv *kw_vals;
    size_t n_kw;
    int line;
} bcall;
struct builtin_def {
    const char *name;
    hearth_status (*fn)(const bcall *c, jv *out);
    int opt;
};

static hearth_status b_range(const bcall *c, jv *out) {
    hl_jinja_env *e = c->e;
    const jv *args = c->args;
    const size_t n = c->n;
    const int line = c->line;
    if (c->n_kw) return hl_jfail(HEARTH_ERR_FORMAT, line, "range takes no keyword arguments");
    int64_t v[3] = {0, 0, 1};
    if (n < 1 || n > 3) return hl_jfail(HEARTH_ERR_FORMAT, line, "range expects 1 to 3 integer arguments, got %zu", n);
    for (size_t i = 0; i < n; i++) {
        if (args[i].k != JV_INT && args[i].k != JV_BOOL)
            return hl_jfail(HEARTH_ERR_FORMAT, line, "range expects integers, got %s", hl_jv_type_name(args[i]));
        v[n == 1 ? 1 : i] = args[i].k == JV_INT ? args[i].u.i : args[i].u.b;
    }
    if (v[2] == 0) return hl_jfail(HEARTH_ERR_FORMAT, line, "range() arg 3 must not be zero");
    /* count = ceil(|stop - start| / |step|) when step points from start to stop */
    uint64_t count = 0;
    if ((v[2] > 0 && v[0] < v[1]) || (v[2] < 0 && v[0] > v[1])) {
        uint64_t span = v[2] > 0 ? (uint64_t)v[1] - (uint64_t)v[0] : (uint64_t)v[0] - (uint64_t)v[1];
        uint64_t step = v[2] > 0 ? (uint64_t)v[2] : 0 - (uint64_t)v[2];
        count = span / step + (span % step != 0);
    }
    if (count > e->lim.max_iterations)
        return hl_jfail(HEARTH_ERR_FORMAT, line, "range of more than %llu items",
                        (unsigned long long)e->lim.max_iterations);
    if (!hl_jv_list(e, out)) return oom();
    for (uint64_t i = 0; i < count; i++)
        if (!hl_jv_list_push(e, *out, hl_jv_int(v[0] + (int64_t)i * v[2]))) return oom();
    return HEARTH_OK;
}

/* namespace(...) and dict(...): opt is the kind made (JV_NS or JV_DICT). */
static hearth_status b_dict(const bcall *c, jv *out) {
    hl_jinja_env *e = c->e;
    const jv *args = c->args;
    if (!hl_jv_dict(e, out)) return oom();
    out->k = (jv_kind)c->b->opt;
    if (c->n > 1 || (c->n == 1 && args[0].k != JV_DICT))
        return hl_jfail(HEARTH_ERR_FORMAT, c->line, "%s takes keyword arguments or one mapping", c->b->name);
    for (size_t i = 0; c->n && i < args[0].u.d->n; i++)
        if (!hl_jv_dict_set(e, *out, args[0].u.d->keys[i], args[0].u.d->vals[i])) return oom();
    for (size_t i = 0; i < c->n_kw; i++) {
        jv key;
        if (!hl_jv_str(e, c->kw_names[i], strlen(c->kw_names[i]), &key) || !hl_jv_dict_set(e, *out, key, c->kw_vals[i]))
            return oom();
    }
    return HEARTH_OK;
}

static hearth_status b_raise(const bcall *c, jv *out) {
    (void)out;
    jv msg = c->n ? c->args[0] : hl_jv_strv("", 0);
    HL_TRY(hl_jv_to_str(c->e, msg, &msg));
    return hl_fail(HEARTH_ERR_INVALID_ARG, "%.*s", (int)(msg.u.s.n < 400 ? msg.u.s.n : 400), msg.u.s.p);
}

static hearth_status b_strftime(const bcall *c, jv *out) {
    const jv *args = c->args;
    const int line = c->line;
    if (c->n != 1 || args[0].k != JV_STR || c->n_kw)
        return hl_jfail(HEARTH_ERR_FORMAT, line, "strftime_now takes one format string");
    char fmt[256], buf[512];
    if (args[0].u.s.n >= sizeof fmt)
        return hl_jfail(HEARTH_ERR_FORMAT, line, "strftime_now format longer than 255 bytes");
    memcpy(fmt, args[0].u.s.p, args[0].u.s.n);
    fmt[args[0].u.s.n] = '\0';
    struct tm tm;
    if (!localtime_r(&c->e->now, &tm))
        return hl_jfail(HEARTH_ERR_FORMAT, line, "strftime_now: the time is out of range");
    size_t len = fmt[0] ? strftime(buf, sizeof buf, fmt, &tm) : 0;
    if (fmt[0] && len == 0)
        return hl_jfail(HEARTH_ERR_FORMAT, line, "strftime_now: the formatted date is empty or too long");
    return hl_jv_str(c->e, buf, len, out) ? HEARTH_OK : oom();
}

static const builtin_def BUILTINS[] = {
    {"range", b_range, 0},           {"namespace", b_dict, JV_NS},    {"dict", b_dict, JV_DICT},
    {"raise_exception", b_raise, 0}, {"strftime_now", b_strftime, 0},
};
#define N_BUILTINS (sizeof BUILTINS / sizeof BUILTINS[0])

jv hl_jbuiltin_lookup(const char *name) {
    const builtin_def *b = hl_jtable_find(BUILTINS, N_BUILTINS, sizeof BUILTINS[0], name);
    return b ? (jv){.k = JV_BUILTIN, .aux = (uint32_t)(b - BUILTINS)} : (jv){.k = JV_UNDEF};
}

hearth_status hl_jbuiltin_call(hl_jinja_env *e, uint32_t id, jv *args, size_t n_args, const char **kw_names,
                               jv *kw_vals, size_t n_kw, int line, jv *out) {
    if (id >= N_BUILTINS) return hl_jfail(HEARTH_ERR_FORMAT, line, "internal error: unknown builtin %u", id);
    const bcall c = {e, &BUILTINS[id], args, n_args, kw_names, kw_vals, n_kw, line};
    return BUILTINS[id].fn(&c, out);
}
