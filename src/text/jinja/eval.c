/* The Jinja evaluator: runs the AST over an environment and writes the output.
 * Scoping follows jinja2: a for loop gives each iteration a fresh scope (so a
 * `set` inside a loop is gone after it: templates use namespace() to carry
 * values out), `if` makes no scope, a macro body sees its parameters and the
 * template's top-level variables, and a {% call %} block's body sees the scope
 * around it. Undefined values behave like jinja2's default Undefined: they
 * print as "", are false, iterate as empty, and fail when used further
 * (attribute, arithmetic) with jinja2's message. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/jinja/jinja_impl.h"

static hearth_status exec_body(hl_jinja_env *e, jnode *const *kids, size_t n);

static hearth_status enter(hl_jinja_env *e, int line) {
    if (++e->depth > e->lim.max_depth)
        return hl_jfail(HEARTH_ERR_FORMAT, line, "nesting deeper than %u (a recursive macro?)", e->lim.max_depth);
    return HEARTH_OK;
}

/* An undefined value whose use fails with `fmt` (jinja2's wording). */
static jv undef_msg(hl_jinja_env *e, const char *fmt, const char *a, const char *b) {
    char msg[256];
    snprintf(msg, sizeof msg, fmt, a, b);
    char *s = hl_ja_strdup(&e->arena, msg, strlen(msg));
    return hl_jv_undef(s ? s : "a value is undefined");
}

static hearth_status oom(void) { return HEARTH_ERR_OUT_OF_MEMORY; }

/* ------------------------------------------------------------- variables -- */

static jframe *new_frame(hl_jinja_env *e, jframe *parent) {
    jframe *f = hl_ja_alloc(&e->arena, sizeof *f);
    jv d;
    if (!f || !hl_jv_dict(e, &d)) return NULL;
    f->parent = parent;
    f->vars = d.u.d;
    return f;
}

static hearth_status set_var(hl_jinja_env *e, jframe *f, const char *name, jv v) {
    jv d = {.k = JV_DICT, .u.d = f->vars};
    return hl_jv_dict_set(e, d, hl_jv_strv(name, strlen(name)), v) ? HEARTH_OK : oom();
}

static jv lookup(hl_jinja_env *e, const char *name) {
    jv key = hl_jv_strv(name, strlen(name));
    for (jframe *f = e->frame; f; f = f->parent) {
        jv *v = hl_jdict_get(f->vars, key);
        if (v) return *v;
    }
    jv b = hl_jbuiltin_lookup(name);
    if (b.k == JV_BUILTIN) return b;
    return undef_msg(e, "'%s' is undefined", name, "");
}

/* Binds for/set targets: one name takes the value, several unpack a sequence. */
static hearth_status bind_targets(hl_jinja_env *e, jframe *f, const jnode *n, jv v) {
    if (n->n_names == 1) return set_var(e, f, n->names[0], v);
    if (v.k != JV_LIST || v.u.l->n != n->n_names)
        return hl_jfail(HEARTH_ERR_FORMAT, n->line, "cannot unpack %s into %zu names", hl_jv_type_name(v), n->n_names);
    for (size_t i = 0; i < n->n_names; i++) HL_TRY(set_var(e, f, n->names[i], v.u.l->v[i]));
    return HEARTH_OK;
}

/* ------------------------------------------------------- attribute, item -- */

static hearth_status loop_attr(const jloop *l, const char *name, jv *out) {
    size_t n = l->items->n, i = l->index0;
    if (!strcmp(name, "index")) *out = hl_jv_int((int64_t)i + 1);
    else if (!strcmp(name, "index0")) *out = hl_jv_int((int64_t)i);
    else if (!strcmp(name, "revindex")) *out = hl_jv_int((int64_t)(n - i));
    else if (!strcmp(name, "revindex0")) *out = hl_jv_int((int64_t)(n - i - 1));
    else if (!strcmp(name, "first")) *out = hl_jv_bool(i == 0);
    else if (!strcmp(name, "last")) *out = hl_jv_bool(i + 1 == n);
    else if (!strcmp(name, "length")) *out = hl_jv_int((int64_t)n);
    else if (!strcmp(name, "depth")) *out = hl_jv_int(1);
    else if (!strcmp(name, "depth0")) *out = hl_jv_int(0);
    else if (!strcmp(name, "previtem")) *out = i > 0 ? l->items->v[i - 1] : hl_jv_undef("there is no previous item");
    else if (!strcmp(name, "nextitem")) *out = i + 1 < n ? l->items->v[i + 1] : hl_jv_undef("there is no next item");
    else return HEARTH_ERR_INVALID_ARG;
    return HEARTH_OK;
}

hearth_status hl_jget_attr(hl_jinja_env *e, jv obj, const char *name, int line, jv *out) {
    if (obj.k == JV_UNDEF) return hl_jv_undefined_error(obj, line);
    if (obj.k == JV_DICT || obj.k == JV_NS) {
        jv *v = hl_jdict_get_str(obj.u.d, name);
        *out = v ? *v : undef_msg(e, "'%s' has no attribute '%s'", obj.k == JV_NS ? "Namespace" : "dict object", name);
        return HEARTH_OK;
    }
    if (obj.k == JV_LOOP && loop_attr(obj.u.loop, name, out) == HEARTH_OK) return HEARTH_OK;
    char type[48];
    snprintf(type, sizeof type, "%s object", hl_jv_type_name(obj));
    *out = undef_msg(e, "'%s' has no attribute '%s'", type, name);
    return HEARTH_OK;
}

hearth_status hl_jget_item(hl_jinja_env *e, jv obj, jv key, int line, jv *out) {
    if (obj.k == JV_UNDEF) return hl_jv_undefined_error(obj, line);
    if (obj.k == JV_DICT || obj.k == JV_NS) {
        jv *v = hl_jdict_get(obj.u.d, key);
        if (v) {
            *out = *v;
            return HEARTH_OK;
        }
    } else if ((obj.k == JV_LIST || obj.k == JV_STR) && (key.k == JV_INT || key.k == JV_BOOL)) {
        int64_t i = key.k == JV_INT ? key.u.i : key.u.b;
        int64_t n = obj.k == JV_LIST ? (int64_t)obj.u.l->n : (int64_t)hl_ju_len(obj.u.s.p, obj.u.s.n);
        if (i < 0) i += n;
        if (i >= 0 && i < n) {
            if (obj.k == JV_LIST) {
                *out = obj.u.l->v[i];
            } else {
                size_t b = hl_ju_offset(obj.u.s.p, obj.u.s.n, (size_t)i);
                size_t end = hl_ju_offset(obj.u.s.p, obj.u.s.n, (size_t)i + 1);
                *out = hl_jv_strv(obj.u.s.p + b, end - b);
            }
            return HEARTH_OK;
        }
    } else if (key.k == JV_STR) {
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(key.u.s.n < 120 ? key.u.s.n : 120), key.u.s.p);
        return hl_jget_attr(e, obj, name, line, out);
    }
    char type[48], k[64] = "?";
    snprintf(type, sizeof type, "%s object", hl_jv_type_name(obj));
    if (key.k == JV_INT) snprintf(k, sizeof k, "%lld", (long long)key.u.i);
    else if (key.k == JV_STR) snprintf(k, sizeof k, "%.*s", (int)(key.u.s.n < 60 ? key.u.s.n : 60), key.u.s.p);
    *out = undef_msg(e, "'%s' has no attribute '%s'", type, k);
    return HEARTH_OK;
}

/* Python slice indices for a sequence of length n (PySlice_AdjustIndices). */
static hearth_status slice_bound(jv v, int line, int64_t dflt, int64_t *out) {
    if (v.k == JV_NONE || v.k == JV_UNDEF) *out = dflt;
    else if (v.k == JV_INT) *out = v.u.i;
    else if (v.k == JV_BOOL) *out = v.u.b;
    else return hl_jfail(HEARTH_ERR_FORMAT, line, "slice indices must be integers or None, not %s", hl_jv_type_name(v));
    return HEARTH_OK;
}

static hearth_status eval_slice(hl_jinja_env *e, const jnode *n, jv *out) {
    jv obj, parts[3] = {hl_jv_none(), hl_jv_none(), hl_jv_none()};
    HL_TRY(hl_jeval(e, n->a, &obj));
    for (int i = 0; i < 3; i++)
        if (n->kids[i]) HL_TRY(hl_jeval(e, n->kids[i], &parts[i]));
    if (obj.k == JV_UNDEF) return hl_jv_undefined_error(obj, n->line);
    if (obj.k != JV_LIST && obj.k != JV_STR)
        return hl_jfail(HEARTH_ERR_FORMAT, n->line, "'%s' object is not subscriptable with a slice",
                        hl_jv_type_name(obj));
    int64_t len = obj.k == JV_LIST ? (int64_t)obj.u.l->n : (int64_t)hl_ju_len(obj.u.s.p, obj.u.s.n);
    int64_t step = 1, start = 0, stop = 0;
    HL_TRY(slice_bound(parts[2], n->line, 1, &step));
    if (step == 0) return hl_jfail(HEARTH_ERR_FORMAT, n->line, "slice step cannot be zero");
    if (step == INT64_MIN) step = -INT64_MAX;
    HL_TRY(slice_bound(parts[0], n->line, step < 0 ? INT64_MAX : 0, &start));
    HL_TRY(slice_bound(parts[1], n->line, step < 0 ? INT64_MIN : INT64_MAX, &stop));
    int64_t *ends[2] = {&start, &stop};
    for (int i = 0; i < 2; i++) {
        int64_t *x = ends[i];
        if (*x < 0) {
            *x = *x < -len ? (step < 0 ? -1 : 0) : *x + len;
        } else if (*x >= len) {
            *x = step < 0 ? len - 1 : len;
        }
    }
    jv list;
    if (!hl_jv_list(e, &list)) return oom();
    list.u.l->tuple = obj.k == JV_LIST && obj.u.l->tuple;
    size_t *offs = NULL;
    if (obj.k == JV_STR) { /* byte offset of every code point, and the end */
        offs = hl_ja_alloc(&e->arena, ((size_t)len + 1) * sizeof *offs);
        if (!offs) return oom();
        size_t k = 0;
        for (size_t b = 0; b < obj.u.s.n; b++)
            if (b == 0 || (obj.u.s.p[b] & 0xC0) != 0x80) offs[k++] = b;
        offs[k] = obj.u.s.n;
    }
    jbuf sb = {0};
    hearth_status st = HEARTH_OK;
    for (int64_t i = start; st == HEARTH_OK && (step > 0 ? i < stop : i > stop); i += step) {
        if (obj.k == JV_LIST) st = hl_jv_list_push(e, list, obj.u.l->v[i]) ? HEARTH_OK : oom();
        else st = hl_jbuf_put(e, &sb, obj.u.s.p + offs[i], offs[i + 1] - offs[i]);
        if ((step > 0 && i > INT64_MAX - step) || (step < 0 && i < INT64_MIN - step)) break;
    }
    if (st == HEARTH_OK && obj.k == JV_STR && !hl_jv_str(e, sb.p ? sb.p : "", sb.n, &list)) st = oom();
    free(sb.p);
    *out = list;
    return st;
}

hearth_status hl_jiterate(hl_jinja_env *e, jv v, int line, jlist **out) {
    static jlist empty;
    jv list;
    switch (v.k) {
    case JV_UNDEF: *out = &empty; return HEARTH_OK;
    case JV_LIST: *out = v.u.l; return HEARTH_OK;
    case JV_DICT:
        if (!hl_jv_list(e, &list)) return oom();
        for (size_t i = 0; i < v.u.d->n; i++)
            if (!hl_jv_list_push(e, list, v.u.d->keys[i])) return oom();
        *out = list.u.l;
        return HEARTH_OK;
    case JV_STR:
        if (!hl_jv_list(e, &list)) return oom();
        for (size_t b = 0; b < v.u.s.n;) {
            size_t w = hl_ju_offset(v.u.s.p + b, v.u.s.n - b, 1);
            if (!hl_jv_list_push(e, list, hl_jv_strv(v.u.s.p + b, w))) return oom();
            b += w;
        }
        *out = list.u.l;
        return HEARTH_OK;
    default: return hl_jfail(HEARTH_ERR_FORMAT, line, "'%s' object is not iterable", hl_jv_type_name(v));
    }
}

/* ------------------------------------------------------------------ calls -- */

typedef struct call_args {
    jv *pos;
    size_t n_pos;
    const char **kw_names;
    jv *kw;
    size_t n_kw;
} call_args;

static hearth_status eval_args(hl_jinja_env *e, const jnode *n, call_args *a) {
    a->n_pos = n->n_kids;
    a->n_kw = n->n_kids2;
    a->kw_names = n->names;
    a->pos = hl_ja_alloc(&e->arena, (n->n_kids + n->n_kids2 + 1) * sizeof(jv));
    if (!a->pos) return oom();
    a->kw = a->pos + n->n_kids;
    for (size_t i = 0; i < n->n_kids; i++) HL_TRY(hl_jeval(e, n->kids[i], &a->pos[i]));
    for (size_t i = 0; i < n->n_kids2; i++) HL_TRY(hl_jeval(e, n->kids2[i], &a->kw[i]));
    return HEARTH_OK;
}

/* Runs statements with output into a fresh buffer and returns it as a string. */
static hearth_status capture(hl_jinja_env *e, jnode *const *kids, size_t n, jv *out) {
    jbuf b = {0}, *saved = e->out;
    e->out = &b;
    hearth_status st = exec_body(e, kids, n);
    e->out = saved;
    if (st == HEARTH_OK && !hl_jv_str(e, b.p ? b.p : "", b.n, out)) st = oom();
    free(b.p);
    return st;
}

static hearth_status call_macro(hl_jinja_env *e, const jmacro *m, jv *args, size_t n_args, const char **kw_names,
                                jv *kw_vals, size_t n_kw, int line, jv *out) {
    const jnode *def = m->node;
    const char *name = def->name ? def->name : "caller";
    jv caller = e->caller;
    e->caller = (jv){.k = JV_UNDEF};
    if (n_args > def->n_names)
        return hl_jfail(HEARTH_ERR_FORMAT, line, "macro '%s' takes not more than %zu argument(s)", name, def->n_names);
    jframe *f = new_frame(e, m->scope);
    if (!f) return oom();
    for (size_t k = 0; k < n_kw; k++) {
        size_t i = 0;
        while (i < def->n_names && strcmp(def->names[i], kw_names[k])) i++;
        if (i == def->n_names)
            return hl_jfail(HEARTH_ERR_FORMAT, line, "macro '%s' has no parameter named '%s'", name, kw_names[k]);
        if (i < n_args)
            return hl_jfail(HEARTH_ERR_FORMAT, line, "macro '%s' got multiple values for '%s'", name, kw_names[k]);
    }
    jframe *saved = e->frame;
    e->frame = f;
    hearth_status st = HEARTH_OK;
    for (size_t i = 0; i < def->n_names && st == HEARTH_OK; i++) {
        jv v = {.k = JV_UNDEF};
        bool given = i < n_args;
        if (given) v = args[i];
        for (size_t k = 0; k < n_kw && !given; k++)
            if (!strcmp(def->names[i], kw_names[k])) {
                v = kw_vals[k];
                given = true;
            }
        if (!given && def->kids2 && def->kids2[i]) st = hl_jeval(e, def->kids2[i], &v);
        else if (!given) v = undef_msg(e, "'%s' is undefined", def->names[i], "");
        if (st == HEARTH_OK) st = set_var(e, f, def->names[i], v);
    }
    if (st == HEARTH_OK && caller.k == JV_MACRO) st = set_var(e, f, "caller", caller);
    if (st == HEARTH_OK) st = capture(e, def->kids, def->n_kids, out);
    e->frame = saved;
    return st;
}

hearth_status hl_jcall_value(hl_jinja_env *e, jv fn, jv *args, size_t n_args, const char **kw_names, jv *kw_vals,
                             size_t n_kw, int line, jv *out) {
    if (fn.k == JV_MACRO) {
        HL_TRY(enter(e, line));
        HL_TRY(call_macro(e, fn.u.m, args, n_args, kw_names, kw_vals, n_kw, line, out));
        e->depth--;
        return HEARTH_OK;
    }
    if (fn.k == JV_BUILTIN) return hl_jbuiltin_call(e, fn.aux, args, n_args, kw_names, kw_vals, n_kw, line, out);
    if (fn.k == JV_UNDEF) return hl_jv_undefined_error(fn, line);
    return hl_jfail(HEARTH_ERR_FORMAT, line, "'%s' object is not callable", hl_jv_type_name(fn));
}

static hearth_status eval_call(hl_jinja_env *e, const jnode *n, jv *out) {
    call_args a;
    const jnode *callee = n->a;
    if (callee->kind == N_ATTR) {
        jv obj;
        HL_TRY(hl_jeval(e, callee->a, &obj));
        if (obj.k == JV_UNDEF) return hl_jv_undefined_error(obj, n->line);
        HL_TRY(eval_args(e, n, &a));
        bool found;
        HL_TRY(hl_jmethod_call(e, obj, callee->name, a.pos, a.n_pos, a.kw_names, a.kw, a.n_kw, n->line, &found, out));
        if (found) return HEARTH_OK;
        jv fn;
        HL_TRY(hl_jget_attr(e, obj, callee->name, n->line, &fn));
        if (fn.k == JV_UNDEF)
            return hl_jfail(HEARTH_ERR_UNSUPPORTED, n->line, "unsupported Jinja feature '%s.%s'", hl_jv_type_name(obj),
                            callee->name);
        return hl_jcall_value(e, fn, a.pos, a.n_pos, a.kw_names, a.kw, a.n_kw, n->line, out);
    }
    jv fn;
    HL_TRY(hl_jeval(e, callee, &fn));
    if (fn.k == JV_UNDEF && callee->kind == N_NAME &&
        (!strcmp(callee->name, "cycler") || !strcmp(callee->name, "joiner") || !strcmp(callee->name, "lipsum")))
        return hl_jfail(HEARTH_ERR_UNSUPPORTED, n->line, "unsupported Jinja feature '%s'", callee->name);
    HL_TRY(eval_args(e, n, &a));
    return hl_jcall_value(e, fn, a.pos, a.n_pos, a.kw_names, a.kw, a.n_kw, n->line, out);
}

/* Applies a filter chain (innermost filter has a == NULL) to `v`. */
static hearth_status apply_chain(hl_jinja_env *e, const jnode *f, jv v, jv *out) {
    if (f->a) HL_TRY(apply_chain(e, f->a, v, &v));
    call_args a;
    HL_TRY(eval_args(e, f, &a));
    return hl_jfilter_apply(e, f->name, v, a.pos, a.n_pos, a.kw_names, a.kw, a.n_kw, f->line, out);
}

/* ------------------------------------------------------------ expressions -- */

static hearth_status eval_inner(hl_jinja_env *e, const jnode *n, jv *out) {
    switch (n->kind) {
    case N_LIT: *out = n->lit; return HEARTH_OK;
    case N_NAME: *out = lookup(e, n->name); return HEARTH_OK;
    case N_LIST:
        if (!hl_jv_list(e, out)) return oom();
        out->u.l->tuple = n->op == 1;
        for (size_t i = 0; i < n->n_kids; i++) {
            jv v;
            HL_TRY(hl_jeval(e, n->kids[i], &v));
            if (!hl_jv_list_push(e, *out, v)) return oom();
        }
        return HEARTH_OK;
    case N_DICT:
        if (!hl_jv_dict(e, out)) return oom();
        for (size_t i = 0; i < n->n_kids; i++) {
            jv k, v;
            HL_TRY(hl_jeval(e, n->kids[i], &k));
            HL_TRY(hl_jeval(e, n->kids2[i], &v));
            if (!hl_jv_dict_set(e, *out, k, v)) return oom();
        }
        return HEARTH_OK;
    case N_ATTR: {
        jv obj;
        HL_TRY(hl_jeval(e, n->a, &obj));
        return hl_jget_attr(e, obj, n->name, n->line, out);
    }
    case N_ITEM: {
        jv obj, key;
        HL_TRY(hl_jeval(e, n->a, &obj));
        HL_TRY(hl_jeval(e, n->b, &key));
        return hl_jget_item(e, obj, key, n->line, out);
    }
    case N_SLICE: return eval_slice(e, n, out);
    case N_CALL: return eval_call(e, n, out);
    case N_FILTER: {
        jv v;
        HL_TRY(hl_jeval(e, n->a, &v));
        call_args a;
        HL_TRY(eval_args(e, n, &a));
        return hl_jfilter_apply(e, n->name, v, a.pos, a.n_pos, a.kw_names, a.kw, a.n_kw, n->line, out);
    }
    case N_TEST: {
        jv v;
        HL_TRY(hl_jeval(e, n->a, &v));
        call_args a;
        HL_TRY(eval_args(e, n, &a));
        bool r;
        HL_TRY(hl_jtest_apply(e, n->name, v, a.pos, a.n_pos, n->line, &r));
        *out = hl_jv_bool(r != (n->op == 1));
        return HEARTH_OK;
    }
    case N_UNARY: {
        jv v;
        HL_TRY(hl_jeval(e, n->a, &v));
        if (n->op == 'n') {
            *out = hl_jv_bool(!hl_jv_truthy(v));
            return HEARTH_OK;
        }
        return hl_jop_unary(n->op, v, n->line, out);
    }
    case N_BINARY: {
        jv a, b;
        HL_TRY(hl_jeval(e, n->a, &a));
        if (n->op == 'a' || n->op == 'o') {
            if (hl_jv_truthy(a) == (n->op == 'o')) {
                *out = a;
                return HEARTH_OK;
            }
            return hl_jeval(e, n->b, out);
        }
        HL_TRY(hl_jeval(e, n->b, &b));
        return hl_jop_binary(e, n->op, a, b, n->line, out);
    }
    case N_COMPARE: {
        jv lhs;
        HL_TRY(hl_jeval(e, n->a, &lhs));
        bool r = true;
        for (size_t i = 0; i < n->n_kids && r; i++) {
            jv rhs;
            HL_TRY(hl_jeval(e, n->kids[i], &rhs));
            HL_TRY(hl_jop_compare(n->ops[i], lhs, rhs, n->line, &r));
            lhs = rhs;
        }
        *out = hl_jv_bool(r);
        return HEARTH_OK;
    }
    case N_COND: {
        jv c;
        HL_TRY(hl_jeval(e, n->a, &c));
        if (hl_jv_truthy(c)) return hl_jeval(e, n->b, out);
        if (n->c) return hl_jeval(e, n->c, out);
        *out = hl_jv_undef("the inline if expression evaluated to false and no else section was defined");
        return HEARTH_OK;
    }
    default: return hl_jfail(HEARTH_ERR_FORMAT, n->line, "internal error: statement used as an expression");
    }
}

hearth_status hl_jeval(hl_jinja_env *e, const jnode *n, jv *out) {
    HL_TRY(enter(e, n->line));
    HL_TRY(eval_inner(e, n, out));
    e->depth--;
    return HEARTH_OK;
}

/* ------------------------------------------------------------- statements -- */

static hearth_status exec_for(hl_jinja_env *e, const jnode *n) {
    jv it;
    HL_TRY(hl_jeval(e, n->a, &it));
    jlist *items;
    HL_TRY(hl_jiterate(e, it, n->line, &items));
    jframe *f = new_frame(e, e->frame);
    if (!f) return oom();
    jframe *saved = e->frame;
    e->frame = f;
    hearth_status st = HEARTH_OK;
    if (n->b) { /* the loop filter sees each item, not `loop` */
        jv kept;
        if (!hl_jv_list(e, &kept)) st = oom();
        for (size_t i = 0; st == HEARTH_OK && i < items->n; i++) {
            jv c;
            f->vars->n = 0;
            st = bind_targets(e, f, n, items->v[i]);
            if (st == HEARTH_OK) st = hl_jeval(e, n->b, &c);
            if (st == HEARTH_OK && hl_jv_truthy(c) && !hl_jv_list_push(e, kept, items->v[i])) st = oom();
            if (st == HEARTH_OK && ++e->iterations > e->lim.max_iterations)
                st = hl_jfail(HEARTH_ERR_FORMAT, n->line, "more than %llu loop iterations",
                              (unsigned long long)e->lim.max_iterations);
        }
        items = kept.u.l;
    }
    jloop *loop = st == HEARTH_OK ? hl_ja_alloc(&e->arena, sizeof *loop) : NULL;
    if (st == HEARTH_OK && !loop) st = oom();
    if (st == HEARTH_OK) loop->items = items;
    for (size_t i = 0; st == HEARTH_OK && i < items->n; i++) {
        if (++e->iterations > e->lim.max_iterations) {
            st = hl_jfail(HEARTH_ERR_FORMAT, n->line, "more than %llu loop iterations",
                          (unsigned long long)e->lim.max_iterations);
            break;
        }
        f->vars->n = 0; /* a fresh scope per iteration */
        loop->index0 = i;
        st = bind_targets(e, f, n, items->v[i]);
        if (st == HEARTH_OK) st = set_var(e, f, "loop", (jv){.k = JV_LOOP, .u.loop = loop});
        if (st == HEARTH_OK) st = exec_body(e, n->kids, n->n_kids);
        if (e->jump == J_BREAK) {
            e->jump = J_NONE;
            break;
        }
        e->jump = J_NONE;
    }
    e->frame = saved;
    if (st == HEARTH_OK && items->n == 0 && n->n_kids2) st = exec_body(e, n->kids2, n->n_kids2);
    return st;
}

static hearth_status exec_set(hl_jinja_env *e, const jnode *n) {
    jv v;
    if (n->a) HL_TRY(hl_jeval(e, n->a, &v));
    else {
        HL_TRY(capture(e, n->kids, n->n_kids, &v));
        if (n->b) HL_TRY(apply_chain(e, n->b, v, &v));
    }
    if (n->name) { /* ns.attr = v */
        jv ns = lookup(e, n->names[0]);
        if (ns.k != JV_NS)
            return hl_jfail(HEARTH_ERR_FORMAT, n->line, "cannot assign attribute on non-namespace object '%s' (%s)",
                            n->names[0], hl_jv_type_name(ns));
        return hl_jv_dict_set(e, ns, hl_jv_strv(n->name, strlen(n->name)), v) ? HEARTH_OK : oom();
    }
    return bind_targets(e, e->frame, n, v);
}

static hearth_status exec(hl_jinja_env *e, const jnode *n) {
    switch (n->kind) {
    case N_TEXT: return hl_jbuf_put(e, e->out, n->lit.u.s.p, n->lit.u.s.n);
    case N_OUTPUT: {
        jv v;
        HL_TRY(hl_jeval(e, n->a, &v));
        return hl_jv_write_str(e, e->out, v);
    }
    case N_IF: {
        jv c;
        HL_TRY(hl_jeval(e, n->a, &c));
        if (hl_jv_truthy(c)) return exec_body(e, n->kids, n->n_kids);
        return exec_body(e, n->kids2, n->n_kids2);
    }
    case N_FOR: return exec_for(e, n);
    case N_SET: return exec_set(e, n);
    case N_MACRO: {
        jmacro *m = hl_ja_alloc(&e->arena, sizeof *m);
        if (!m) return oom();
        m->node = n;
        m->scope = &e->root;
        return set_var(e, e->frame, n->name, (jv){.k = JV_MACRO, .u.m = m});
    }
    case N_CALLBLOCK: {
        jmacro *m = hl_ja_alloc(&e->arena, sizeof *m);
        if (!m) return oom();
        m->node = n;
        m->scope = e->frame;
        const jnode *call = n->a;
        jv fn, v;
        call_args a;
        HL_TRY(hl_jeval(e, call->a, &fn));
        HL_TRY(eval_args(e, call, &a));
        if (fn.k != JV_MACRO)
            return hl_jfail(HEARTH_ERR_FORMAT, n->line, "{%% call %%} needs a macro, got %s", hl_jv_type_name(fn));
        e->caller = (jv){.k = JV_MACRO, .u.m = m};
        HL_TRY(hl_jcall_value(e, fn, a.pos, a.n_pos, a.kw_names, a.kw, a.n_kw, n->line, &v));
        return hl_jbuf_put(e, e->out, v.u.s.p, v.u.s.n);
    }
    case N_FILTERBLOCK: {
        jv v;
        HL_TRY(capture(e, n->kids, n->n_kids, &v));
        HL_TRY(apply_chain(e, n->b, v, &v));
        return hl_jv_write_str(e, e->out, v);
    }
    case N_WITH: {
        jframe *f = new_frame(e, e->frame);
        if (!f) return oom();
        for (size_t i = 0; i < n->n_names; i++) {
            jv v;
            HL_TRY(hl_jeval(e, n->kids2[i], &v));
            HL_TRY(set_var(e, f, n->names[i], v));
        }
        jframe *saved = e->frame;
        e->frame = f;
        hearth_status st = exec_body(e, n->kids, n->n_kids);
        e->frame = saved;
        return st;
    }
    case N_BREAK: e->jump = J_BREAK; return HEARTH_OK;
    case N_CONTINUE: e->jump = J_CONTINUE; return HEARTH_OK;
    default: return hl_jfail(HEARTH_ERR_FORMAT, n->line, "internal error: expression used as a statement");
    }
}

static hearth_status exec_body(hl_jinja_env *e, jnode *const *kids, size_t n) {
    for (size_t i = 0; i < n && e->jump == J_NONE; i++) {
        HL_TRY(enter(e, kids[i]->line));
        HL_TRY(exec(e, kids[i]));
        e->depth--;
    }
    return HEARTH_OK;
}

/* ------------------------------------------------------------ environment -- */

hl_jinja_limits hl_jinja_default_limits(void) {
    return (hl_jinja_limits){
        .max_output = (size_t)16 << 20, .max_memory = (size_t)256 << 20, .max_iterations = 1000000, .max_depth = 256};
}

hearth_status hl_jinja_env_init(const hl_jinja_limits *limits, time_t now, hl_jinja_env **out) {
    *out = NULL;
    hl_jinja_env *e = hl_calloc(1, sizeof *e);
    if (!e) return HEARTH_ERR_OUT_OF_MEMORY;
    e->lim = limits ? *limits : hl_jinja_default_limits();
    e->arena.cap = e->lim.max_memory;
    e->now = now;
    jv d;
    if (!hl_jv_dict(e, &d)) {
        hl_jinja_env_free(e);
        return HEARTH_ERR_OUT_OF_MEMORY;
    }
    e->root.vars = d.u.d;
    e->frame = &e->root;
    *out = e;
    return HEARTH_OK;
}

void hl_jinja_env_free(hl_jinja_env *env) {
    if (!env) return;
    hl_ja_free(&env->arena);
    free(env);
}

hearth_status hl_jinja_env_set(hl_jinja_env *env, const char *name, jv val) {
    jv key;
    if (!hl_jv_str(env, name, strlen(name), &key)) return HEARTH_ERR_OUT_OF_MEMORY;
    return hl_jv_dict_set(env, (jv){.k = JV_DICT, .u.d = env->root.vars}, key, val) ? HEARTH_OK : oom();
}

hearth_status hl_jinja_render(hl_jinja_env *env, const hl_jinja_tmpl *tmpl, char **out, size_t *len) {
    *out = NULL;
    *len = 0;
    jbuf b = {0};
    env->out = &b;
    env->frame = &env->root;
    env->depth = 0;
    env->jump = J_NONE;
    env->caller = (jv){.k = JV_UNDEF};
    hearth_status st = exec_body(env, tmpl->root->kids, tmpl->root->n_kids);
    if (st == HEARTH_OK && !b.p) st = hl_jbuf_put(env, &b, "", 0);
    env->out = NULL;
    if (st != HEARTH_OK) {
        free(b.p);
        return st;
    }
    *out = b.p;
    *len = b.n;
    return HEARTH_OK;
}
