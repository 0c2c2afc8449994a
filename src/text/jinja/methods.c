/* Python methods that chat templates call on values (str.startswith, str.split,
 * dict.items, dict.get, loop.cycle ...) and the global functions: range,
 * namespace, dict, raise_exception and strftime_now (transformers adds the
 * last two; strftime_now formats the environment's fixed `now` in local
 * time). Case conversions are ASCII-only. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "text/jinja/jinja_impl.h"

hearth_status hl_jstr_replace(hl_jinja_env *e, jv s, jv old, jv repl, int64_t count, jv *out);

static hearth_status oom(void) { return HEARTH_ERR_OUT_OF_MEMORY; }

static hearth_status want_args(const char *type, const char *name, size_t n_args, size_t lo, size_t hi, size_t n_kw, int line) {
    if (n_kw) return hl_jfail(HEARTH_ERR_UNSUPPORTED, line, "unsupported Jinja feature 'keyword arguments to %s.%s'", type, name);
    if (n_args < lo || n_args > hi)
        return hl_jfail(HEARTH_ERR_FORMAT, line, "%s.%s takes %zu to %zu arguments, got %zu", type, name, lo, hi, n_args);
    return HEARTH_OK;
}

static hearth_status str_arg(jv v, const char *method, int line) {
    if (v.k != JV_STR) return hl_jfail(HEARTH_ERR_FORMAT, line, "str.%s expects a str argument, got %s", method, hl_jv_type_name(v));
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

static hearth_status str_method(hl_jinja_env *e, jv s, const char *name, jv *args, size_t n, size_t n_kw, int line,
                                bool *found, jv *out) {
    *found = true;
    if (!strcmp(name, "startswith") || !strcmp(name, "endswith")) {
        HL_TRY(want_args("str", name, n, 1, 1, n_kw, line));
        bool suffix = name[0] == 'e';
        if (args[0].k == JV_LIST && args[0].u.l->tuple) {
            bool r = false;
            for (size_t i = 0; i < args[0].u.l->n; i++) {
                HL_TRY(str_arg(args[0].u.l->v[i], name, line));
                r = r || has_prefix(s, args[0].u.l->v[i], suffix);
            }
            *out = hl_jv_bool(r);
            return HEARTH_OK;
        }
        HL_TRY(str_arg(args[0], name, line));
        *out = hl_jv_bool(has_prefix(s, args[0], suffix));
        return HEARTH_OK;
    }
    if (!strcmp(name, "strip") || !strcmp(name, "lstrip") || !strcmp(name, "rstrip")) {
        HL_TRY(want_args("str", name, n, 0, 1, n_kw, line));
        bool chars = n && args[0].k != JV_NONE;
        if (chars) HL_TRY(str_arg(args[0], name, line));
        *out = hl_jstr_strip(s, chars ? &args[0] : NULL, name[0] == 's' ? 'b' : name[0]);
        return HEARTH_OK;
    }
    if (!strcmp(name, "split") || !strcmp(name, "rsplit")) {
        HL_TRY(want_args("str", name, n, 0, 2, n_kw, line));
        bool has_sep = n > 0 && args[0].k != JV_NONE;
        if (has_sep) HL_TRY(str_arg(args[0], name, line));
        if (n > 1 && args[1].k != JV_INT) return hl_jfail(HEARTH_ERR_FORMAT, line, "str.%s: maxsplit must be an integer", name);
        return split(e, s, has_sep ? &args[0] : NULL, n > 1 ? args[1].u.i : -1, name[0] == 'r', line, out);
    }
    if (!strcmp(name, "upper") || !strcmp(name, "lower") || !strcmp(name, "capitalize")) {
        HL_TRY(want_args("str", name, n, 0, 0, n_kw, line));
        return ascii_case(e, s, name[0] == 'u', name[0] == 'c', out);
    }
    if (!strcmp(name, "title")) {
        HL_TRY(want_args("str", name, n, 0, 0, n_kw, line));
        return py_title(e, s, out);
    }
    if (!strcmp(name, "replace")) {
        HL_TRY(want_args("str", name, n, 2, 3, n_kw, line));
        HL_TRY(str_arg(args[0], name, line));
        HL_TRY(str_arg(args[1], name, line));
        if (n > 2 && args[2].k != JV_INT) return hl_jfail(HEARTH_ERR_FORMAT, line, "str.replace: count must be an integer");
        return hl_jstr_replace(e, s, args[0], args[1], n > 2 ? args[2].u.i : -1, out);
    }
    if (!strcmp(name, "find") || !strcmp(name, "rfind") || !strcmp(name, "count")) {
        HL_TRY(want_args("str", name, n, 1, 1, n_kw, line));
        HL_TRY(str_arg(args[0], name, line));
        jv sub = args[0];
        int64_t found_at = -1, count = 0;
        for (size_t i = 0; i + sub.u.s.n <= s.u.s.n;) {
            if (!memcmp(s.u.s.p + i, sub.u.s.p, sub.u.s.n)) {
                if (found_at < 0 || name[0] == 'r') found_at = (int64_t)hl_ju_len(s.u.s.p, i);
                count++;
                i += sub.u.s.n ? sub.u.s.n : 1;
                if (name[0] == 'f') break;
            } else {
                i++;
            }
        }
        if (!sub.u.s.n) count = (int64_t)hl_ju_len(s.u.s.p, s.u.s.n) + 1;
        if (!sub.u.s.n && name[0] == 'r') found_at = (int64_t)hl_ju_len(s.u.s.p, s.u.s.n);
        *out = hl_jv_int(name[0] == 'c' ? count : found_at);
        return HEARTH_OK;
    }
    if (!strcmp(name, "join")) {
        HL_TRY(want_args("str", name, n, 1, 1, n_kw, line));
        jlist *items;
        HL_TRY(hl_jiterate(e, args[0], line, &items));
        jbuf b = {0};
        hearth_status st = HEARTH_OK;
        for (size_t i = 0; i < items->n && st == HEARTH_OK; i++) {
            if (items->v[i].k != JV_STR)
                st = hl_jfail(HEARTH_ERR_FORMAT, line, "sequence item %zu: expected str instance, %s found", i, hl_jv_type_name(items->v[i]));
            if (st == HEARTH_OK && i) st = hl_jbuf_put(e, &b, s.u.s.p, s.u.s.n);
            if (st == HEARTH_OK) st = hl_jbuf_put(e, &b, items->v[i].u.s.p, items->v[i].u.s.n);
        }
        if (st == HEARTH_OK && !hl_jv_str(e, b.p ? b.p : "", b.n, out)) st = oom();
        free(b.p);
        return st;
    }
    static const struct {
        const char *name;
        int (*pred)(int);
    } preds[] = {{"isdigit", isdigit}, {"isalpha", isalpha}, {"isalnum", isalnum}, {"isspace", isspace},
                 {"isnumeric", isdigit}, {"isdecimal", isdigit}};
    for (size_t i = 0; i < sizeof preds / sizeof preds[0]; i++)
        if (!strcmp(name, preds[i].name)) {
            HL_TRY(want_args("str", name, n, 0, 0, n_kw, line));
            *out = hl_jv_bool(all_chars(s, preds[i].pred));
            return HEARTH_OK;
        }
    *found = false;
    return HEARTH_OK;
}

static hearth_status dict_method(hl_jinja_env *e, jv d, const char *name, jv *args, size_t n, size_t n_kw, int line,
                                 bool *found, jv *out) {
    *found = true;
    if (!strcmp(name, "get")) {
        HL_TRY(want_args("dict", name, n, 1, 2, n_kw, line));
        jv *v = hl_jdict_get(d.u.d, args[0]);
        *out = v ? *v : n > 1 ? args[1] : hl_jv_none();
        return HEARTH_OK;
    }
    if (!strcmp(name, "items") || !strcmp(name, "keys") || !strcmp(name, "values")) {
        HL_TRY(want_args("dict", name, n, 0, 0, n_kw, line));
        if (name[0] == 'i') return hl_jfilter_apply(e, "items", d, NULL, 0, NULL, NULL, 0, line, out);
        if (!hl_jv_list(e, out)) return oom();
        for (size_t i = 0; i < d.u.d->n; i++)
            if (!hl_jv_list_push(e, *out, name[0] == 'k' ? d.u.d->keys[i] : d.u.d->vals[i])) return oom();
        return HEARTH_OK;
    }
    *found = false;
    return HEARTH_OK;
}

hearth_status hl_jmethod_call(hl_jinja_env *e, jv obj, const char *name, jv *args, size_t n_args, const char **kw_names,
                           jv *kw_vals, size_t n_kw, int line, bool *found, jv *out) {
    (void)kw_names;
    (void)kw_vals;
    *found = false;
    if (obj.k == JV_STR) {
        HL_TRY(str_method(e, obj, name, args, n_args, n_kw, line, found, out));
        if (!*found) return hl_jfail(HEARTH_ERR_UNSUPPORTED, line, "unsupported Jinja feature 'str.%s'", name);
        return HEARTH_OK;
    }
    if (obj.k == JV_DICT) {
        if (hl_jdict_get_str(obj.u.d, name)) return HEARTH_OK; /* a stored callable: the caller calls it */
        HL_TRY(dict_method(e, obj, name, args, n_args, n_kw, line, found, out));
        if (!*found) return hl_jfail(HEARTH_ERR_UNSUPPORTED, line, "unsupported Jinja feature 'dict.%s'", name);
        return HEARTH_OK;
    }
    if (obj.k == JV_LOOP && !strcmp(name, "cycle")) {
        *found = true;
        if (!n_args) return hl_jfail(HEARTH_ERR_FORMAT, line, "loop.cycle needs at least one value");
        *out = args[obj.u.loop->index0 % n_args];
        return HEARTH_OK;
    }
    if (obj.k == JV_LIST) return hl_jfail(HEARTH_ERR_UNSUPPORTED, line, "unsupported Jinja feature '%s.%s'", hl_jv_type_name(obj), name);
    return HEARTH_OK;
}

/* --------------------------------------------------------------- globals -- */

enum { B_RANGE, B_NAMESPACE, B_DICT, B_RAISE, B_STRFTIME };
static const char *const BUILTINS[] = {"range", "namespace", "dict", "raise_exception", "strftime_now"};

jv hl_jbuiltin_lookup(const char *name) {
    for (uint32_t i = 0; i < sizeof BUILTINS / sizeof BUILTINS[0]; i++)
        if (!strcmp(name, BUILTINS[i])) return (jv){.k = JV_BUILTIN, .aux = i};
    return (jv){.k = JV_UNDEF};
}

static hearth_status do_range(hl_jinja_env *e, jv *args, size_t n, int line, jv *out) {
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
        return hl_jfail(HEARTH_ERR_FORMAT, line, "range of more than %llu items", (unsigned long long)e->lim.max_iterations);
    if (!hl_jv_list(e, out)) return oom();
    for (uint64_t i = 0; i < count; i++)
        if (!hl_jv_list_push(e, *out, hl_jv_int(v[0] + (int64_t)i * v[2]))) return oom();
    return HEARTH_OK;
}

hearth_status hl_jbuiltin_call(hl_jinja_env *e, uint32_t id, jv *args, size_t n_args, const char **kw_names, jv *kw_vals,
                            size_t n_kw, int line, jv *out) {
    switch (id) {
    case B_RANGE:
        if (n_kw) return hl_jfail(HEARTH_ERR_FORMAT, line, "range takes no keyword arguments");
        return do_range(e, args, n_args, line, out);
    case B_NAMESPACE:
    case B_DICT:
        if (!hl_jv_dict(e, out)) return oom();
        if (id == B_NAMESPACE) out->k = JV_NS;
        if (n_args > 1 || (n_args == 1 && args[0].k != JV_DICT))
            return hl_jfail(HEARTH_ERR_FORMAT, line, "%s takes keyword arguments or one mapping", BUILTINS[id]);
        for (size_t i = 0; n_args && i < args[0].u.d->n; i++)
            if (!hl_jv_dict_set(e, *out, args[0].u.d->keys[i], args[0].u.d->vals[i])) return oom();
        for (size_t i = 0; i < n_kw; i++) {
            jv key;
            if (!hl_jv_str(e, kw_names[i], strlen(kw_names[i]), &key) || !hl_jv_dict_set(e, *out, key, kw_vals[i])) return oom();
        }
        return HEARTH_OK;
    case B_RAISE: {
        jv msg = n_args ? args[0] : hl_jv_strv("", 0);
        HL_TRY(hl_jv_to_str(e, msg, &msg));
        return hl_fail(HEARTH_ERR_INVALID_ARG, "%.*s", (int)(msg.u.s.n < 400 ? msg.u.s.n : 400), msg.u.s.p);
    }
    case B_STRFTIME: {
        if (n_args != 1 || args[0].k != JV_STR || n_kw)
            return hl_jfail(HEARTH_ERR_FORMAT, line, "strftime_now takes one format string");
        char fmt[256], buf[512];
        if (args[0].u.s.n >= sizeof fmt) return hl_jfail(HEARTH_ERR_FORMAT, line, "strftime_now format longer than 255 bytes");
        memcpy(fmt, args[0].u.s.p, args[0].u.s.n);
        fmt[args[0].u.s.n] = '\0';
        struct tm tm;
        if (!localtime_r(&e->now, &tm)) return hl_jfail(HEARTH_ERR_FORMAT, line, "strftime_now: the time is out of range");
        size_t len = fmt[0] ? strftime(buf, sizeof buf, fmt, &tm) : 0;
        if (fmt[0] && len == 0) return hl_jfail(HEARTH_ERR_FORMAT, line, "strftime_now: the formatted date is empty or too long");
        return hl_jv_str(e, buf, len, out) ? HEARTH_OK : oom();
    }
    }
    return hl_jfail(HEARTH_ERR_FORMAT, line, "internal error: unknown builtin %u", id);
}
