/* Jinja's operators on values, with Python's semantics and jinja2's error
 * messages: unary + and -, arithmetic (+ - * / // % **, with string and list
 * concatenation and repetition), ~ (string concatenation), and comparisons
 * (== != < <= > >= in, not in). Integers are 64-bit; a result beyond fails as
 * unsupported. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "text/jinja/jinja_impl.h"

static bool is_num(jv v) { return v.k == JV_INT || v.k == JV_FLOAT || v.k == JV_BOOL; }
static double to_f(jv v) { return v.k == JV_FLOAT ? v.u.f : v.k == JV_INT ? (double)v.u.i : v.u.b; }
static int64_t to_i(jv v) { return v.k == JV_INT ? v.u.i : v.k == JV_BOOL ? v.u.b : 0; }

static hearth_status type_error(int line, int op, jv a, jv b) {
    char opname[4] = {(char)op, 0, 0, 0};
    if (op == 'D') strcpy(opname, "//");
    if (op == 'P') strcpy(opname, "**");
    return hl_jfail(HEARTH_ERR_FORMAT, line, "unsupported operand types for %s: '%s' and '%s'", opname,
                    hl_jv_type_name(a), hl_jv_type_name(b));
}

static hearth_status overflow(int line) {
    return hl_jfail(HEARTH_ERR_UNSUPPORTED, line, "unsupported Jinja feature 'integer beyond 64 bits'");
}

/* s * n (string or list repetition). */
static hearth_status repeat(hl_jinja_env *e, jv s, int64_t n, int line, jv *out) {
    if (n < 0) n = 0;
    size_t unit = s.k == JV_STR ? s.u.s.n : s.u.l->n * sizeof(jv);
    if (unit && (uint64_t)n > e->lim.max_output / unit)
        return hl_jfail(HEARTH_ERR_FORMAT, line, "repetition result exceeds %zu MiB", e->lim.max_output >> 20);
    if (s.k == JV_STR) {
        char *p = hl_ja_alloc(&e->arena, unit * (size_t)n + 1);
        if (!p) return HEARTH_ERR_OUT_OF_MEMORY;
        for (int64_t i = 0; i < n; i++) memcpy(p + unit * (size_t)i, s.u.s.p, unit);
        *out = hl_jv_strv(p, unit * (size_t)n);
        return HEARTH_OK;
    }
    if (!hl_jv_list(e, out)) return HEARTH_ERR_OUT_OF_MEMORY;
    for (int64_t i = 0; i < n; i++)
        for (size_t k = 0; k < s.u.l->n; k++)
            if (!hl_jv_list_push(e, *out, s.u.l->v[k])) return HEARTH_ERR_OUT_OF_MEMORY;
    return HEARTH_OK;
}

static hearth_status concat(hl_jinja_env *e, jv a, jv b, jv *out) {
    if (a.k == JV_STR) {
        char *p = hl_ja_alloc(&e->arena, a.u.s.n + b.u.s.n + 1);
        if (!p) return HEARTH_ERR_OUT_OF_MEMORY;
        if (a.u.s.n) memcpy(p, a.u.s.p, a.u.s.n);
        if (b.u.s.n) memcpy(p + a.u.s.n, b.u.s.p, b.u.s.n);
        *out = hl_jv_strv(p, a.u.s.n + b.u.s.n);
        return HEARTH_OK;
    }
    if (!hl_jv_list(e, out)) return HEARTH_ERR_OUT_OF_MEMORY;
    out->u.l->tuple = a.u.l->tuple;
    for (size_t i = 0; i < a.u.l->n; i++)
        if (!hl_jv_list_push(e, *out, a.u.l->v[i])) return HEARTH_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < b.u.l->n; i++)
        if (!hl_jv_list_push(e, *out, b.u.l->v[i])) return HEARTH_ERR_OUT_OF_MEMORY;
    return HEARTH_OK;
}

hearth_status hl_jop_unary(int op, jv v, int line, jv *out) {
    if (v.k == JV_UNDEF) return hl_jv_undefined_error(v, line);
    if (!is_num(v))
        return hl_jfail(HEARTH_ERR_FORMAT, line, "bad operand type for unary %c: '%s'", op, hl_jv_type_name(v));
    if (op == '+') *out = v.k == JV_BOOL ? hl_jv_int(v.u.b) : v;
    else if (v.k == JV_FLOAT) *out = hl_jv_float(-v.u.f);
    else if (to_i(v) == INT64_MIN) return overflow(line);
    else *out = hl_jv_int(-to_i(v));
    return HEARTH_OK;
}

hearth_status hl_jop_binary(hl_jinja_env *e, int op, jv a, jv b, int line, jv *out) {
    if (op == '~') {
        jv sa, sb;
        HL_TRY(hl_jv_to_str(e, a, &sa));
        HL_TRY(hl_jv_to_str(e, b, &sb));
        return concat(e, sa, sb, out);
    }
    if (a.k == JV_UNDEF) return hl_jv_undefined_error(a, line);
    if (b.k == JV_UNDEF) return hl_jv_undefined_error(b, line);
    if (op == '+' &&
        ((a.k == JV_STR && b.k == JV_STR) || (a.k == JV_LIST && b.k == JV_LIST && a.u.l->tuple == b.u.l->tuple)))
        return concat(e, a, b, out);
    if (op == '*' && (a.k == JV_STR || a.k == JV_LIST) && (b.k == JV_INT || b.k == JV_BOOL))
        return repeat(e, a, to_i(b), line, out);
    if (op == '*' && (b.k == JV_STR || b.k == JV_LIST) && (a.k == JV_INT || a.k == JV_BOOL))
        return repeat(e, b, to_i(a), line, out);
    if (op == '%' && a.k == JV_STR)
        return hl_jfail(HEARTH_ERR_UNSUPPORTED, line, "unsupported Jinja feature 'string formatting with %%'");
    if (!is_num(a) || !is_num(b)) return type_error(line, op, a, b);
    bool ints = a.k != JV_FLOAT && b.k != JV_FLOAT;
    int64_t x = to_i(a), y = to_i(b), r;
    double fx = to_f(a), fy = to_f(b);
    switch (op) {
    case '+':
        if (!ints) break;
        if (__builtin_add_overflow(x, y, &r)) return overflow(line);
        *out = hl_jv_int(r);
        return HEARTH_OK;
    case '-':
        if (!ints) break;
        if (__builtin_sub_overflow(x, y, &r)) return overflow(line);
        *out = hl_jv_int(r);
        return HEARTH_OK;
    case '*':
        if (!ints) break;
        if (__builtin_mul_overflow(x, y, &r)) return overflow(line);
        *out = hl_jv_int(r);
        return HEARTH_OK;
    case '/':
        if (fy == 0.0) return hl_jfail(HEARTH_ERR_FORMAT, line, "division by zero");
        *out = hl_jv_float(fx / fy);
        return HEARTH_OK;
    case 'D':
    case '%':
        if (ints) {
            if (y == 0) return hl_jfail(HEARTH_ERR_FORMAT, line, "integer division or modulo by zero");
            if (x == INT64_MIN && y == -1) return overflow(line);
            int64_t q = x / y, m = x % y;
            if (m != 0 && ((m < 0) != (y < 0))) {
                q--;
                m += y;
            }
            *out = hl_jv_int(op == 'D' ? q : m);
            return HEARTH_OK;
        }
        if (fy == 0.0) return hl_jfail(HEARTH_ERR_FORMAT, line, "float division or modulo by zero");
        if (op == 'D') {
            *out = hl_jv_float(floor(fx / fy));
        } else {
            double m = fmod(fx, fy);
            if (m != 0.0 && ((m < 0) != (fy < 0))) m += fy;
            *out = hl_jv_float(m);
        }
        return HEARTH_OK;
    case 'P':
        if (ints && y >= 0) {
            int64_t acc = 1, base = x;
            if (x == 0 || x == 1) acc = y == 0 ? 1 : x;
            else if (x == -1) acc = y % 2 ? -1 : 1;
            else /* |x| >= 2: overflows within 63 squarings */
                for (int64_t k = y; k > 0; k >>= 1) {
                    if ((k & 1) && __builtin_mul_overflow(acc, base, &acc)) return overflow(line);
                    if (k > 1 && __builtin_mul_overflow(base, base, &base)) return overflow(line);
                }
            *out = hl_jv_int(acc);
            return HEARTH_OK;
        }
        if (fx == 0.0 && fy < 0) return hl_jfail(HEARTH_ERR_FORMAT, line, "0.0 cannot be raised to a negative power");
        *out = hl_jv_float(pow(fx, fy));
        return HEARTH_OK;
    }
    switch (op) {
    case '+': *out = hl_jv_float(fx + fy); return HEARTH_OK;
    case '-': *out = hl_jv_float(fx - fy); return HEARTH_OK;
    case '*': *out = hl_jv_float(fx * fy); return HEARTH_OK;
    }
    return type_error(line, op, a, b);
}

/* `a in b` as Python: substring, list item, dict key. */
static hearth_status contains(jv item, jv seq, int line, bool *out) {
    if (seq.k == JV_STR) {
        if (item.k != JV_STR)
            return hl_jfail(HEARTH_ERR_FORMAT, line, "'in <string>' requires string as left operand, not %s",
                            hl_jv_type_name(item));
        *out = false;
        if (item.u.s.n == 0) *out = true;
        for (size_t i = 0; !*out && i + item.u.s.n <= seq.u.s.n; i++)
            *out = !memcmp(seq.u.s.p + i, item.u.s.p, item.u.s.n);
        return HEARTH_OK;
    }
    if (seq.k == JV_LIST) {
        *out = false;
        for (size_t i = 0; i < seq.u.l->n && !*out; i++) *out = hl_jv_equal(seq.u.l->v[i], item);
        return HEARTH_OK;
    }
    if (seq.k == JV_DICT || seq.k == JV_NS) {
        *out = hl_jdict_get(seq.u.d, item) != NULL;
        return HEARTH_OK;
    }
    if (seq.k == JV_UNDEF) {
        *out = false;
        return HEARTH_OK;
    }
    return hl_jfail(HEARTH_ERR_FORMAT, line, "argument of type '%s' is not iterable", hl_jv_type_name(seq));
}

hearth_status hl_jop_compare(int op, jv a, jv b, int line, bool *out) {
    int cmp;
    switch (op) {
    case 'e': *out = hl_jv_equal(a, b); return HEARTH_OK;
    case 'n': *out = !hl_jv_equal(a, b); return HEARTH_OK;
    case 'i': return contains(a, b, line, out);
    case 'I':
        HL_TRY(contains(a, b, line, out));
        *out = !*out;
        return HEARTH_OK;
    }
    if (a.k == JV_UNDEF) return hl_jv_undefined_error(a, line);
    if (b.k == JV_UNDEF) return hl_jv_undefined_error(b, line);
    HL_TRY(hl_jv_compare(a, b, line, &cmp));
    *out = op == '<' ? cmp < 0 : op == 'l' ? cmp <= 0 : op == '>' ? cmp > 0 : cmp >= 0;
    return HEARTH_OK;
}
