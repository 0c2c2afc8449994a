/* JSON Schema (2020-12, the subset below) to GBNF: walks a schema and writes
 * one grammar expression per subschema, naming a rule per object member,
 * array item and $ref target (so recursive schemas terminate).
 *
 * The subset (every other keyword is an error naming it, never dropped):
 * - type: object, array, string, number, integer, boolean, null, or a list;
 *   without `type`, the keywords present decide (properties: an object).
 * - properties, in the declared order; required ones always present,
 *   optional ones may be left out (llama.cpp's json-schema-to-grammar keeps
 *   the order the same way). additionalProperties false, true or a schema;
 *   absent, no other keys when `properties` is given (what a model should
 *   write, and OpenAI's strict mode), any keys for a bare object. Extra
 *   keys are written without escapes and differ from the declared ones.
 * - required names not in properties: present, with any value (or the
 *   additionalProperties schema).
 * - enum, const (any JSON values; a sibling `type` filters them).
 * - anyOf, oneOf (as anyOf: the branches should not overlap), allOf of
 *   object schemas (properties and required merged; one subschema: that
 *   schema), $ref to local JSON pointers (#/$defs/..., #/definitions/...).
 * - items, prefixItems (items as an array: the tuple of draft 2019 and
 *   before), minItems, maxItems; prefixItems without items: no more items.
 * - minLength, maxLength, pattern (see json_schema_regex.c), format date,
 *   time, date-time (RFC 3339), uuid; one of pattern, format, lengths.
 * - minimum, maximum of integers (any bounds) and numbers (integer
 *   bounds; the number is then written without an exponent).
 * - exclusiveMinimum, exclusiveMaximum of integers.
 * - title, description, examples, default, $schema, $id, $comment, $defs,
 *   definitions, deprecated, readOnly, writeOnly and discriminator are read
 *   and ignored. */
#include "grammar/json_schema.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/json_schema_internal.h"

/* annotations (2020-12 meta-data vocabulary, and OpenAPI's discriminator,
 * which pydantic writes beside oneOf) */
static const char *const annotation_kw[] = {"title",    "description", "examples",     "default",     "$schema",
                                            "$id",      "$comment",    "$defs",        "definitions", "deprecated",
                                            "readOnly", "writeOnly",   "discriminator"};
static const char *const constraint_kw[] = {"type",
                                            "properties",
                                            "required",
                                            "additionalProperties",
                                            "enum",
                                            "const",
                                            "anyOf",
                                            "oneOf",
                                            "allOf",
                                            "$ref",
                                            "items",
                                            "prefixItems",
                                            "minItems",
                                            "maxItems",
                                            "minLength",
                                            "maxLength",
                                            "pattern",
                                            "format",
                                            "minimum",
                                            "maximum",
                                            "exclusiveMinimum",
                                            "exclusiveMaximum"};
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static bool in_list(const char *s, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(s, list[i])) return true;
    return false;
}
/* ----------------------------------------------------------- JSON pointer */

/* Appends /seg (RFC 6901 escapes ~0 ~1) to the error pointer; returns the
 * length to restore. */
size_t hl_js_ptr_push(hl_js_conv *c, const char *seg) {
    size_t mark = c->ptr.n;
    hl_str_puts(&c->ptr, "/");
    for (const char *s = seg; *s; s++) hl_str_puts(&c->ptr, *s == '~' ? "~0" : *s == '/' ? "~1" : (char[]){*s, 0});
    return mark;
}

size_t hl_js_ptr_push_index(hl_js_conv *c, const char *seg, size_t i) {
    size_t mark = hl_js_ptr_push(c, seg);
    hl_str_printf(&c->ptr, "/%zu", i);
    return mark;
}

void hl_js_ptr_pop(hl_js_conv *c, size_t mark) {
    c->ptr.n = mark;
    if (c->ptr.p) c->ptr.p[mark] = '\0';
}

/* --------------------------------------------------------------- schemas */

/* The keyword of s that constrains, other than those allowed; NULL if none. */
const char *hl_js_other_constraint(const cJSON *s, const char *const *allowed, size_t n_allowed) {
    for (const cJSON *k = s->child; k; k = k->next)
        if (in_list(k->string, constraint_kw, N_OF(constraint_kw)) && !in_list(k->string, allowed, n_allowed))
            return k->string;
    return NULL;
}

hearth_status hl_js_check_keywords(hl_js_conv *c, const cJSON *s) {
    for (const cJSON *k = s->child; k; k = k->next)
        if (!in_list(k->string, annotation_kw, N_OF(annotation_kw)) &&
            !in_list(k->string, constraint_kw, N_OF(constraint_kw)))
            return hl_js_fail(c, "unsupported keyword '%s'", k->string);
    return HEARTH_OK;
}

/* A count keyword: absent (*v unchanged), or a non-negative integer up to
 * HL_JS_MAX_REPEAT. */
static hearth_status get_count(hl_js_conv *c, const cJSON *s, const char *kw, size_t *v, bool *present) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(s, kw);
    *present = n != NULL;
    if (!n) return HEARTH_OK;
    if (!cJSON_IsNumber(n) || n->valuedouble < 0 || n->valuedouble != floor(n->valuedouble))
        return hl_js_fail(c, "'%s' must be a non-negative integer", kw);
    if (n->valuedouble > HL_JS_MAX_REPEAT)
        return hl_js_fail(c, "'%s' %.0f is over the limit of %d", kw, n->valuedouble, HL_JS_MAX_REPEAT);
    *v = (size_t)n->valuedouble;
    return HEARTH_OK;
}

/* ----------------------------------------------------------------- arrays */

static hearth_status build_array(hl_js_conv *c, const cJSON *s, const char *hint, hl_str *out) {
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items");
    const cJSON *tuple = cJSON_GetObjectItemCaseSensitive(s, "prefixItems");
    if (tuple && cJSON_IsArray(items)) return hl_js_fail(c, "'items' must be a schema next to 'prefixItems'");
    if (cJSON_IsArray(items)) tuple = items, items = NULL;
    if (tuple && !cJSON_IsArray(tuple)) return hl_js_fail(c, "'prefixItems' must be an array of schemas");
    if (items && !cJSON_IsBool(items) && !cJSON_IsObject(items)) return hl_js_fail(c, "'items' must be a schema");
    size_t min = 0, max = 0;
    bool has_min, has_max;
    HL_TRY(get_count(c, s, "minItems", &min, &has_min));
    HL_TRY(get_count(c, s, "maxItems", &max, &has_max));
    if (has_max && min > max) return hl_js_fail(c, "minItems %zu is greater than maxItems %zu", min, max);
    size_t n_tuple = (size_t)cJSON_GetArraySize(tuple);
    /* more items after the tuple: per `items`; with no tuple, absent items
     * means any values */
    bool more = tuple ? items && !cJSON_IsFalse(items) : !cJSON_IsFalse(items);
    if (has_max && max < n_tuple) n_tuple = max, more = false;
    if (min > n_tuple && !more) return hl_js_fail(c, "minItems %zu is more than the %zu items allowed", min, n_tuple);
    size_t more_min = min > n_tuple ? min - n_tuple : 0;
    bool more_open = !has_max;
    size_t more_max = has_max ? max - n_tuple : 0;
    if (more && has_max && more_max == 0) more = false;

    hearth_status st = HEARTH_OK;
    hl_str body = {0};
    hl_js_elem(&body, "\"[\"");
    hl_js_space(c, &body);
    char h[200];
    c->guard++;
    /* the tuple: item k optional from the first k >= minItems, nested so
     * that a later item needs the earlier ones */
    size_t n_open = 0;
    size_t k = 0;
    for (const cJSON *it = tuple ? tuple->child : NULL; st == HEARTH_OK && it && k < n_tuple; it = it->next, k++) {
        if (k >= min) hl_str_puts(&body, " ("), n_open++;
        if (k) {
            hl_js_elem(&body, "\",\"");
            hl_js_space(c, &body);
        }
        size_t mark = hl_js_ptr_push_index(c, tuple == items ? "items" : "prefixItems", k);
        snprintf(h, sizeof h, "%.120s-%zu", hint, k);
        st = hl_js_visit(c, it, h, &body);
        hl_js_ptr_pop(c, mark);
    }
    if (st == HEARTH_OK && more) {
        /* the further items, as one rule: item ( "," item ){m,n} */
        hl_str item = {0};
        size_t mark = hl_js_ptr_push(c, "items");
        snprintf(h, sizeof h, "%.120s-item", hint);
        if (items && !cJSON_IsTrue(items)) st = hl_js_visit(c, items, h, &item);
        else hl_js_prim_ref(c, HL_JS_VALUE, &item);
        hl_js_ptr_pop(c, mark);
        size_t r = 0;
        if (st == HEARTH_OK) st = hl_str_status(&item);
        if (st == HEARTH_OK) st = hl_js_rule_add(c, h, item.p, &r);
        hl_str_free(&item);
        const char *name = st == HEARTH_OK ? c->rules[r].name : "";
        if (n_tuple) {
            /* each after a comma */
            hl_str rep = {0};
            hl_str_puts(&rep, "( \",\"");
            hl_js_space(c, &rep);
            hl_js_elem(&rep, name);
            hl_str_puts(&rep, " )");
            if (more_open) hl_str_printf(&rep, more_min == 0 ? "*" : more_min == 1 ? "+" : "{%zu,}", more_min);
            else if (more_min == more_max) hl_str_printf(&rep, "{%zu}", more_min);
            else hl_str_printf(&rep, "{%zu,%zu}", more_min, more_max);
            hl_js_elem(&body, rep.p);
            st = hl_str_status(&rep);
            hl_str_free(&rep);
        } else {
            /* item, then the rest after commas; optional when min is 0 */
            if (more_min == 0) hl_str_puts(&body, " ("), n_open++;
            hl_js_elem(&body, name);
            size_t lo = more_min ? more_min - 1 : 0;
            if (more_open || more_max > 1) {
                hl_str_puts(&body, " ( \",\"");
                hl_js_space(c, &body);
                hl_js_elem(&body, name);
                hl_str_puts(&body, " )");
                if (more_open) hl_str_printf(&body, lo == 0 ? "*" : lo == 1 ? "+" : "{%zu,}", lo);
                else if (lo == more_max - 1) hl_str_printf(&body, "{%zu}", lo);
                else hl_str_printf(&body, "{%zu,%zu}", lo, more_max - 1);
            }
        }
    }
    c->guard--;
    for (; n_open; n_open--) hl_str_puts(&body, " )?");
    hl_js_elem(&body, "\"]\"");
    hl_js_space(c, &body);
    if (st == HEARTH_OK) st = hl_str_status(&body);
    if (st == HEARTH_OK) hl_js_elem(out, body.p), st = hl_str_status(out);
    hl_str_free(&body);
    return st;
}

/* ------------------------------------------------------- scalars, values */

static hearth_status build_string(hl_js_conv *c, const cJSON *s, hl_str *out) {
    const cJSON *pattern = cJSON_GetObjectItemCaseSensitive(s, "pattern");
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(s, "format");
    size_t min = 0, max = 0;
    bool has_min, has_max;
    HL_TRY(get_count(c, s, "minLength", &min, &has_min));
    HL_TRY(get_count(c, s, "maxLength", &max, &has_max));
    if (has_max && min > max) return hl_js_fail(c, "minLength %zu is greater than maxLength %zu", min, max);
    if ((pattern || format) && (has_min || has_max))
        return hl_js_fail(c, "'%s' together with minLength or maxLength is not supported",
                          pattern ? "pattern" : "format");
    if (pattern && format) return hl_js_fail(c, "'pattern' together with 'format' is not supported");
    if (pattern && !cJSON_IsString(pattern)) return hl_js_fail(c, "'pattern' must be a string");
    if (format && !cJSON_IsString(format)) return hl_js_fail(c, "'format' must be a string");
    if (format) {
        static const struct {
            const char *name;
            hl_js_prim prim;
        } formats[] = {
            {"date", HL_JS_DATE}, {"time", HL_JS_TIME}, {"date-time", HL_JS_DATE_TIME}, {"uuid", HL_JS_UUID}};
        size_t f = 0;
        while (f < N_OF(formats) && strcmp(formats[f].name, format->valuestring)) f++;
        if (f == N_OF(formats))
            return hl_js_fail(c, "unsupported format '%s' (supported: date, time, date-time, uuid)",
                              format->valuestring);
        hl_js_elem(out, "\"\\\"\"");
        hl_js_prim_ref(c, formats[f].prim, out);
        hl_js_elem(out, "\"\\\"\"");
    } else if (pattern) {
        hl_js_elem(out, "\"\\\"\"");
        HL_TRY(hl_js_emit_pattern(c, pattern->valuestring, strlen(pattern->valuestring), out));
        hl_js_elem(out, "\"\\\"\"");
    } else if (!has_min && !has_max) {
        hl_js_prim_ref(c, HL_JS_STRING, out);
        return hl_str_status(out);
    } else {
        hl_js_elem(out, "\"\\\"\"");
        hl_js_prim_ref(c, HL_JS_CHAR, out);
        if (!has_max) hl_str_printf(out, "{%zu,}", min);
        else if (min == max) hl_str_printf(out, "{%zu}", min);
        else hl_str_printf(out, "{%zu,%zu}", min, max);
        hl_js_elem(out, "\"\\\"\"");
    }
    hl_js_space(c, out);
    return hl_str_status(out);
}

/* minimum and maximum of an integer or number: *has false when absent.
 * Integers round inward; numbers need integer bounds. Bounds beyond
 * HL_JS_MAX_DIGITS digits are clamped (longer numbers are never written). */
static hearth_status get_bounds(hl_js_conv *c, const cJSON *s, bool integer, bool *has_lo, int64_t *lo, bool *has_hi,
                                int64_t *hi) {
    /* 1e16 is exact as a double; HL_JS_MAX_DIGITS nines is not */
    static const double out = 1e16;
    static const int64_t lim = 9999999999999999;
    const cJSON *mn = cJSON_GetObjectItemCaseSensitive(s, "minimum");
    const cJSON *mx = cJSON_GetObjectItemCaseSensitive(s, "maximum");
    const cJSON *xmn = cJSON_GetObjectItemCaseSensitive(s, "exclusiveMinimum");
    const cJSON *xmx = cJSON_GetObjectItemCaseSensitive(s, "exclusiveMaximum");
    if ((mn && !cJSON_IsNumber(mn)) || (mx && !cJSON_IsNumber(mx)) || (xmn && !cJSON_IsNumber(xmn)) ||
        (xmx && !cJSON_IsNumber(xmx)))
        return hl_js_fail(c, "'minimum', 'maximum', 'exclusiveMinimum' and 'exclusiveMaximum' must be numbers");
    if (!integer && (xmn || xmx)) /* 2020-12 section 6.2.3: no closed range of decimals says "greater than" */
        return hl_js_fail(c, "'%s' is supported for integers only", xmn ? "exclusiveMinimum" : "exclusiveMaximum");
    double a = mn ? (integer ? ceil(mn->valuedouble) : mn->valuedouble) : -out;
    double b = mx ? (integer ? floor(mx->valuedouble) : mx->valuedouble) : out;
    /* integers: > x is >= floor(x) + 1, < x is <= ceil(x) - 1 */
    if (xmn && floor(xmn->valuedouble) + 1 > a) a = floor(xmn->valuedouble) + 1;
    if (xmx && ceil(xmx->valuedouble) - 1 < b) b = ceil(xmx->valuedouble) - 1;
    if (!integer && ((mn && a != floor(a)) || (mx && b != floor(b))))
        return hl_js_fail(c, "a minimum or maximum of a number that is not an integer is not supported");
    if (a > b || a >= out || b <= -out)
        return hl_js_fail(c, "no %s lies between minimum and maximum", integer ? "integer" : "number");
    *has_lo = a > -out;
    *has_hi = b < out;
    *lo = *has_lo ? (int64_t)a : -lim;
    *hi = *has_hi ? (int64_t)b : lim;
    return HEARTH_OK;
}

static hearth_status build_number(hl_js_conv *c, const cJSON *s, bool integer, hl_str *out) {
    bool has_lo = false, has_hi = false;
    int64_t lo = 0, hi = 0;
    HL_TRY(get_bounds(c, s, integer, &has_lo, &lo, &has_hi, &hi));
    if (!has_lo && !has_hi) {
        hl_js_prim_ref(c, integer ? HL_JS_INTEGER : HL_JS_NUMBER, out);
        return hl_str_status(out);
    }
    if (integer) hl_js_emit_int_range(lo, hi, out);
    else hl_js_emit_number_range(c, has_lo, lo, has_hi, hi, out);
    hl_js_space(c, out);
    return hl_str_status(out);
}

static const char *const type_names[] = {"object", "array", "string", "number", "integer", "boolean", "null"};

/* Whether JSON value v has type `t` (2020-12 validation section 6.1.1: an
 * integer is a number with a zero fractional part). */
static bool value_has_type(const cJSON *v, const char *t) {
    if (!strcmp(t, "object")) return cJSON_IsObject(v);
    if (!strcmp(t, "array")) return cJSON_IsArray(v);
    if (!strcmp(t, "string")) return cJSON_IsString(v);
    if (!strcmp(t, "number")) return cJSON_IsNumber(v);
    if (!strcmp(t, "integer")) return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble);
    if (!strcmp(t, "boolean")) return cJSON_IsBool(v);
    return cJSON_IsNull(v);
}

/* The grammar of exactly the JSON value v (any spacing), then space. */
static hearth_status emit_const(hl_js_conv *c, const cJSON *v, int depth, hl_str *out) {
    if (depth > HL_JS_MAX_DEPTH) return hl_js_fail(c, "a constant nested deeper than %d levels", HL_JS_MAX_DEPTH);
    if (cJSON_IsNull(v)) hl_js_elem(out, "\"null\"");
    else if (cJSON_IsTrue(v)) hl_js_elem(out, "\"true\"");
    else if (cJSON_IsFalse(v)) hl_js_elem(out, "\"false\"");
    else if (cJSON_IsNumber(v)) hl_js_emit_number_literal(v->valuedouble, out);
    else if (cJSON_IsString(v)) HL_TRY(hl_js_emit_json_string(c, v->valuestring, strlen(v->valuestring), out));
    else {
        bool obj = cJSON_IsObject(v);
        hl_js_elem(out, obj ? "\"{\"" : "\"[\"");
        hl_js_space(c, out);
        for (const cJSON *e = v->child; e; e = e->next) {
            if (e != v->child) hl_js_elem(out, "\",\""), hl_js_space(c, out);
            if (obj) {
                HL_TRY(hl_js_emit_json_string(c, e->string, strlen(e->string), out));
                hl_js_space(c, out);
                hl_js_elem(out, "\":\"");
                hl_js_space(c, out);
            }
            HL_TRY(emit_const(c, e, depth + 1, out));
        }
        hl_js_elem(out, obj ? "\"}\"" : "\"]\"");
    }
    hl_js_space(c, out);
    return hl_str_status(out);
}

/* const or enum, the values of the sibling `type` (if any) only. */
static hearth_status build_enum(hl_js_conv *c, const cJSON *s, hl_str *out) {
    static const char *const allowed[] = {"const", "enum", "type"};
    const char *other = hl_js_other_constraint(s, allowed, N_OF(allowed));
    if (other) return hl_js_fail(c, "'enum' or 'const' together with '%s' is not supported", other);
    const cJSON *cst = cJSON_GetObjectItemCaseSensitive(s, "const");
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(s, "enum");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(s, "type");
    if (en && !cJSON_IsArray(en)) return hl_js_fail(c, "'enum' must be an array");
    if (type && !cJSON_IsString(type) && !cJSON_IsArray(type))
        return hl_js_fail(c, "'type' must be a string or an array");
    hl_str alts = {0};
    size_t n = 0;
    hearth_status st = HEARTH_OK;
    for (const cJSON *v = cst ? cst : en->child; st == HEARTH_OK && v; v = cst ? NULL : v->next) {
        if (cst && en) {
            bool in_enum = false;
            for (const cJSON *e = en->child; e && !in_enum; e = e->next) in_enum = cJSON_Compare(e, cst, true);
            if (!in_enum) continue;
        }
        bool typed = !type;
        if (cJSON_IsString(type)) typed = value_has_type(v, type->valuestring);
        for (const cJSON *t = cJSON_IsArray(type) ? type->child : NULL; t && !typed; t = t->next)
            typed = cJSON_IsString(t) && value_has_type(v, t->valuestring);
        if (!typed) continue;
        if (n++) hl_str_puts(&alts, " |");
        st = emit_const(c, v, 0, &alts);
    }
    if (st == HEARTH_OK && !n) st = hl_js_fail(c, "no value of 'enum' or 'const' fits the schema");
    if (st == HEARTH_OK) {
        hl_js_elem(out, n > 1 ? "(" : "");
        hl_str_puts(out, alts.p);
        if (n > 1) hl_str_puts(out, " )");
        st = alts.oom ? HEARTH_ERR_OUT_OF_MEMORY : hl_str_status(out);
    }
    hl_str_free(&alts);
    return st;
}

/* Writes the alternatives built in *alts (when st is OK) as one group into
 * out, and frees them. */
static hearth_status put_group(hl_str *out, hl_str *alts, hearth_status st) {
    if (st == HEARTH_OK) {
        hl_js_elem(out, "(");
        hl_str_puts(out, alts->p);
        hl_str_puts(out, " )");
        st = alts->oom ? HEARTH_ERR_OUT_OF_MEMORY : hl_str_status(out);
    }
    hl_str_free(alts);
    return st;
}

/* anyOf / oneOf: the alternatives. */
static hearth_status build_any_of(hl_js_conv *c, const cJSON *s, const char *kw, const char *hint, hl_str *out) {
    static const char *const allowed[] = {"anyOf", "oneOf"};
    const char *other = hl_js_other_constraint(s, allowed, N_OF(allowed));
    if (other) return hl_js_fail(c, "'%s' together with '%s' is not supported", kw, other);
    if (cJSON_GetObjectItemCaseSensitive(s, "anyOf") && cJSON_GetObjectItemCaseSensitive(s, "oneOf"))
        return hl_js_fail(c, "'anyOf' together with 'oneOf' is not supported");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(s, kw);
    if (!cJSON_IsArray(list) || !list->child) return hl_js_fail(c, "'%s' must be a non-empty array of schemas", kw);
    hl_str alts = {0};
    hearth_status st = HEARTH_OK;
    size_t i = 0;
    char h[200];
    for (const cJSON *sub = list->child; st == HEARTH_OK && sub; sub = sub->next, i++) {
        size_t mark = hl_js_ptr_push_index(c, kw, i);
        if (i) hl_str_puts(&alts, " |");
        snprintf(h, sizeof h, "%.120s-%zu", hint, i);
        st = hl_js_visit(c, sub, h, &alts);
        hl_js_ptr_pop(c, mark);
    }
    return put_group(out, &alts, st);
}

/* ------------------------------------------------------------------ $ref */

static int hex_digit(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* The schema a local $ref names (RFC 6901 JSON pointer in a URI fragment,
 * RFC 3986 percent-encoding), or NULL with the error set. */
const cJSON *hl_js_resolve_ref(hl_js_conv *c, const char *ref) {
    if (ref[0] != '#') {
        hl_js_fail(c, "$ref '%s' is not supported (only local refs: #/$defs/..., #/definitions/...)", ref);
        return NULL;
    }
    const cJSON *at = c->doc;
    for (const char *p = ref + 1; *p && at;) {
        if (*p++ != '/') break;
        char seg[256];
        size_t n = 0;
        bool bad = false;
        for (; *p && *p != '/'; p++) {
            char ch = *p;
            int hi = ch == '%' && p[1] ? hex_digit(p[1]) : -1, lo = hi >= 0 && p[2] ? hex_digit(p[2]) : -1;
            if (lo >= 0) {
                ch = (char)(hi << 4 | lo);
                p += 2;
            } else if (ch == '~' && (p[1] == '0' || p[1] == '1')) {
                ch = p[1] == '0' ? '~' : '/';
                p++;
            }
            if (n + 1 >= sizeof seg) bad = true;
            else seg[n++] = ch;
        }
        seg[n] = '\0';
        if (bad) at = NULL;
        else if (cJSON_IsArray(at)) {
            char *end;
            long i = strtol(seg, &end, 10);
            at = *end || !n || i < 0 || i > 1000000000L ? NULL : cJSON_GetArrayItem(at, (int)i);
        } else {
            at = cJSON_IsObject(at) ? cJSON_GetObjectItemCaseSensitive(at, seg) : NULL;
        }
        if (*p && *p != '/') at = NULL;
    }
    if (!at || (ref[1] && ref[1] != '/')) {
        hl_js_fail(c, "$ref '%s' not found", ref);
        return NULL;
    }
    return at;
}

/* A $ref: the rule of its target, converted once; a ref met again inside
 * its own conversion refers to the rule by name (a recursive schema), if
 * an object or array was entered on the way (else it would recur without
 * reading anything). */
static hearth_status build_ref(hl_js_conv *c, const cJSON *s, hl_str *out) {
    static const char *const allowed[] = {"$ref"};
    const char *other = hl_js_other_constraint(s, allowed, N_OF(allowed));
    if (other) return hl_js_fail(c, "'$ref' together with '%s' is not supported", other);
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(s, "$ref");
    if (!cJSON_IsString(ref)) return hl_js_fail(c, "'$ref' must be a string");
    const char *r = ref->valuestring;
    for (size_t i = 0; i < c->n_refs; i++) {
        if (strcmp(c->refs[i].ref, r)) continue;
        if (!c->refs[i].done && c->refs[i].guard == c->guard)
            return hl_js_fail(c, "$ref '%s' refers back to itself without an object or array in between", r);
        hl_js_elem(out, c->rules[c->refs[i].rule].name);
        return hl_str_status(out);
    }
    const cJSON *target = hl_js_resolve_ref(c, r);
    if (!target) return HEARTH_ERR_INVALID_ARG;
    if (c->n_refs == c->cap_refs) {
        size_t cap = c->cap_refs ? c->cap_refs * 2 : 8;
        hl_js_ref *g = realloc(c->refs, cap * sizeof *g);
        if (!g) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "json_schema: out of memory for %zu refs", cap);
        c->refs = g;
        c->cap_refs = cap;
    }
    /* the rule is named after the last segment: def-Node */
    const char *last = strrchr(r, '/');
    char hint[200];
    snprintf(hint, sizeof hint, "def-%.120s", last ? last + 1 : "root");
    size_t idx = c->n_refs, rule;
    HL_TRY(hl_js_rule_add(c, hint, NULL, &rule));
    size_t n = strlen(r) + 1;
    char *copy = hl_malloc(n);
    if (!copy) return HEARTH_ERR_OUT_OF_MEMORY;
    memcpy(copy, r, n);
    c->refs[c->n_refs++] = (hl_js_ref){copy, rule, c->guard, false};
    /* convert the target with errors pointing into it */
    hl_str saved = c->ptr, body = {0};
    c->ptr = (hl_str){0};
    hl_str_puts(&c->ptr, r + 1);
    char sub[200];
    snprintf(sub, sizeof sub, "%s", c->rules[rule].name + strlen(c->prefix));
    hearth_status st = hl_js_visit(c, target, sub, &body);
    hl_str_free(&c->ptr);
    c->ptr = saved;
    if (st == HEARTH_OK) st = hl_str_status(&body);
    if (st == HEARTH_OK) st = hl_js_rule_set(c, rule, body.p);
    hl_str_free(&body);
    c->refs[idx].done = true;
    if (st == HEARTH_OK) hl_js_elem(out, c->rules[rule].name), st = hl_str_status(out);
    return st;
}

/* -------------------------------------------------------------- dispatch */

static hearth_status build_typed(hl_js_conv *c, const cJSON *s, const char *type, const char *hint, hl_str *out) {
    if (!strcmp(type, "object")) return hl_js_build_object(c, s, hint, out);
    if (!strcmp(type, "array")) return build_array(c, s, hint, out);
    if (!strcmp(type, "string")) return build_string(c, s, out);
    if (!strcmp(type, "number")) return build_number(c, s, false, out);
    if (!strcmp(type, "integer")) return build_number(c, s, true, out);
    hl_js_prim_ref(c, !strcmp(type, "boolean") ? HL_JS_BOOLEAN : HL_JS_NULL, out);
    return hl_str_status(out);
}

static bool has_any(const cJSON *s, const char *const *kws, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (cJSON_GetObjectItemCaseSensitive(s, kws[i])) return true;
    return false;
}

static hearth_status build_schema(hl_js_conv *c, const cJSON *s, const char *hint, hl_str *out) {
    HL_TRY(hl_js_check_keywords(c, s));
    if (cJSON_GetObjectItemCaseSensitive(s, "$ref")) return build_ref(c, s, out);
    if (cJSON_GetObjectItemCaseSensitive(s, "const") || cJSON_GetObjectItemCaseSensitive(s, "enum"))
        return build_enum(c, s, out);
    if (cJSON_GetObjectItemCaseSensitive(s, "anyOf")) return build_any_of(c, s, "anyOf", hint, out);
    if (cJSON_GetObjectItemCaseSensitive(s, "oneOf")) return build_any_of(c, s, "oneOf", hint, out);
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(s, "allOf");
    if (all) {
        static const char *const allowed[] = {"allOf"};
        if (cJSON_IsArray(all) && cJSON_GetArraySize(all) == 1 && !hl_js_other_constraint(s, allowed, N_OF(allowed))) {
            size_t mark = hl_js_ptr_push_index(c, "allOf", 0);
            hearth_status st = hl_js_visit(c, all->child, hint, out);
            hl_js_ptr_pop(c, mark);
            return st;
        }
        return hl_js_build_allof(c, s, hint, out);
    }
    /* the types: `type`, or those the keywords present apply to */
    const char *types[N_OF(type_names)];
    size_t n = 0;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(s, "type");
    if (type) {
        if (!cJSON_IsString(type) && !(cJSON_IsArray(type) && type->child))
            return hl_js_fail(c, "'type' must be a string or a non-empty array of strings");
        for (const cJSON *t = cJSON_IsString(type) ? type : type->child; t; t = cJSON_IsString(type) ? NULL : t->next) {
            size_t k = 0;
            while (k < N_OF(type_names) && !(cJSON_IsString(t) && !strcmp(t->valuestring, type_names[k]))) k++;
            if (k == N_OF(type_names))
                return hl_js_fail(
                    c, "unknown type '%s' (JSON types: object, array, string, number, integer, boolean, null)",
                    cJSON_IsString(t) ? t->valuestring : "(not a string)");
            bool dup = false;
            for (size_t j = 0; j < n; j++) dup |= types[j] == type_names[k];
            if (!dup && n < N_OF(types)) types[n++] = type_names[k];
        }
    } else {
        static const char *const object_kw[] = {"properties", "required", "additionalProperties"};
        static const char *const array_kw[] = {"items", "prefixItems", "minItems", "maxItems"};
        static const char *const string_kw[] = {"minLength", "maxLength", "pattern", "format"};
        static const char *const number_kw[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
        if (has_any(s, object_kw, N_OF(object_kw))) types[n++] = "object";
        if (has_any(s, array_kw, N_OF(array_kw))) types[n++] = "array";
        if (has_any(s, string_kw, N_OF(string_kw))) types[n++] = "string";
        if (has_any(s, number_kw, N_OF(number_kw))) types[n++] = "number";
        if (!n) {
            hl_js_prim_ref(c, HL_JS_VALUE, out);
            return hl_str_status(out);
        }
    }
    if (n == 1) return build_typed(c, s, types[0], hint, out);
    hl_str alts = {0};
    hearth_status st = HEARTH_OK;
    for (size_t i = 0; st == HEARTH_OK && i < n; i++) {
        if (i) hl_str_puts(&alts, " |");
        st = build_typed(c, s, types[i], hint, &alts);
    }
    return put_group(out, &alts, st);
}

/* Appends the grammar of the values `s` accepts, followed by space. */
hearth_status hl_js_visit(hl_js_conv *c, const cJSON *s, const char *hint, hl_str *out) {
    if (cJSON_IsTrue(s)) {
        hl_js_prim_ref(c, HL_JS_VALUE, out);
        return hl_str_status(out);
    }
    if (cJSON_IsFalse(s)) return hl_js_fail(c, "the schema false accepts no value");
    if (!cJSON_IsObject(s)) return hl_js_fail(c, "a schema must be an object or a boolean");
    if (c->depth >= HL_JS_MAX_DEPTH) return hl_js_fail(c, "schemas nested deeper than %d levels", HL_JS_MAX_DEPTH);
    c->depth++;
    hearth_status st = build_schema(c, s, hint, out);
    c->depth--;
    return st;
}

/* ------------------------------------------------------------ entry points */

static bool is_rule_name(const char *s) {
    if (!*s) return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '-'))
            return false;
    return true;
}

static hearth_status convert(const char *schema, size_t len, const char *prefix, const char *root_name, char **out) {
    if (!schema || !out || !prefix || !root_name) return hl_fail(HEARTH_ERR_INVALID_ARG, "json_schema: NULL argument");
    *out = NULL;
    if (!is_rule_name(root_name))
        return hl_fail(HEARTH_ERR_INVALID_ARG, "json_schema: root_name '%s' is not a rule name ([a-zA-Z0-9-]+)",
                       root_name);
    const char *end = NULL;
    cJSON *doc = cJSON_ParseWithLengthOpts(schema, len, &end, false);
    size_t at = end ? (size_t)(end - schema) : 0;
    if (doc)
        while (at < len && (schema[at] == ' ' || schema[at] == '\t' || schema[at] == '\n' || schema[at] == '\r')) at++;
    if (!doc || at < len) {
        cJSON_Delete(doc);
        return hl_fail(HEARTH_ERR_INVALID_ARG, "json_schema: not valid JSON at byte %zu", at);
    }
    hl_js_conv c = {.doc = doc};
    size_t plen = strlen(prefix);
    c.prefix = hl_malloc(plen + 1);
    hearth_status st = c.prefix ? HEARTH_OK : HEARTH_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; st == HEARTH_OK && i <= plen; i++) {
        char ch = prefix[i];
        c.prefix[i] = !ch || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ? ch
                                                                                                              : '-';
    }
    /* the start rule first, named exactly root_name (no prefix) */
    size_t root = 0;
    if (st == HEARTH_OK) {
        char *p = c.prefix;
        c.prefix = "";
        st = hl_js_rule_add(&c, root_name, NULL, &root);
        c.prefix = p;
    }
    hl_str body = {0};
    if (st == HEARTH_OK) {
        if (cJSON_IsBool(doc) || cJSON_IsObject(doc)) st = hl_js_visit(&c, doc, "root", &body);
        else st = hl_fail(HEARTH_ERR_INVALID_ARG, "json_schema: the schema must be an object or a boolean");
    }
    if (st == HEARTH_OK) st = hl_str_status(&body);
    if (st == HEARTH_OK) st = hl_js_rule_set(&c, root, body.p);
    if (st == HEARTH_OK) st = hl_js_write_rules(&c, out);
    hl_str_free(&body);
    hl_js_conv_free(&c);
    cJSON_Delete(doc);
    return st;
}

hearth_status hl_json_schema_to_gbnf(const char *schema, size_t len, char **out) {
    return convert(schema, len, "", "root", out);
}

hearth_status hl_json_schema_to_gbnf_rules(const char *schema, size_t len, const char *prefix, const char *root_name,
                                           char **out) {
    return convert(schema, len, prefix, root_name, out);
}

hearth_status hearth_json_schema_to_grammar(const char *schema, char **out) {
    if (!schema || !out)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_json_schema_to_grammar: schema and out must not be NULL");
    return hl_json_schema_to_gbnf(schema, strlen(schema), out);
}

void hearth_grammar_free_text(char *text) { free(text); }
