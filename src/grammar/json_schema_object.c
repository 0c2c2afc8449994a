/* Objects for the JSON Schema converter: properties in the declared order
 * with optional members left out and the commas only between those
 * present (the approach of llama.cpp's json-schema-to-grammar, extended to
 * keep required and optional members in one order), required names, the
 * additional members with keys that differ from the declared ones, and
 * allOf of object schemas merged into one object (2020-12 core section
 * 10.2.1.1: every part must hold, so the members are the union, each key
 * limited by the parts that close the object). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/json_schema_internal.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------ string set */

/* Keys of an object schema, required names: an open-addressed map of
 * borrowed strings to indices. */
typedef struct strmap {
    const char **keys;
    size_t *vals;
    size_t n, cap;
} strmap;

static size_t str_hash(const char *s) {
    size_t h = 1469598103934665603u; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static size_t *map_get(const strmap *m, const char *k) {
    if (!m->cap) return NULL;
    for (size_t i = str_hash(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i]) return NULL;
        if (!strcmp(m->keys[i], k)) return &m->vals[i];
    }
}

static hearth_status map_put(strmap *m, const char *k, size_t v) {
    if ((m->n + 1) * 2 > m->cap) {
        strmap g = {hl_calloc(m->cap ? m->cap * 2 : 16, sizeof(char *)),
                    hl_calloc(m->cap ? m->cap * 2 : 16, sizeof(size_t)), 0, m->cap ? m->cap * 2 : 16};
        if (!g.keys || !g.vals) {
            free(g.keys);
            free(g.vals);
            return HEARTH_ERR_OUT_OF_MEMORY;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i]) {
                size_t j = str_hash(m->keys[i]) & (g.cap - 1);
                while (g.keys[j]) j = (j + 1) & (g.cap - 1);
                g.keys[j] = m->keys[i], g.vals[j] = m->vals[i], g.n++;
            }
        free(m->keys);
        free(m->vals);
        *m = g;
    }
    size_t i = str_hash(k) & (m->cap - 1);
    while (m->keys[i] && strcmp(m->keys[i], k)) i = (i + 1) & (m->cap - 1);
    if (!m->keys[i]) m->keys[i] = k, m->n++;
    m->vals[i] = v;
    return HEARTH_OK;
}

static void map_free(strmap *m) {
    free(m->keys);
    free(m->vals);
}

/* hint + "-" + suffix, cut to fit (rule names are made unique anyway). */
static void hint_join(char *dst, size_t cap, const char *hint, const char *suffix) {
    snprintf(dst, cap, "%.120s-%.60s", hint, suffix);
}

/* ---------------------------------------------------------------- objects */

typedef struct prop {
    const char *key;
    const cJSON *schema; /* NULL: any value */
    char *ptr;           /* where it was declared, for errors */
    bool required;
} prop;

typedef struct objdesc {
    prop *props;
    size_t n, cap;
    strmap index;              /* key -> index in props */
    bool extras;               /* other keys allowed */
    const cJSON *extra_schema; /* their values; NULL: any value */
    char *extra_ptr;
} objdesc;

static void obj_free(objdesc *o) {
    for (size_t i = 0; i < o->n; i++) free(o->props[i].ptr);
    free(o->props);
    free(o->extra_ptr);
    map_free(&o->index);
}

static char *ptr_dup(const hl_js_conv *c) {
    size_t n = c->ptr.n;
    char *d = hl_malloc(n + 1);
    if (d) memcpy(d, n ? c->ptr.p : "", n), d[n] = '\0';
    return d;
}

static hearth_status obj_add(hl_js_conv *c, objdesc *o, const char *key, const cJSON *schema, bool required) {
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 8;
        prop *p = realloc(o->props, cap * sizeof *p);
        if (!p) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "json_schema: out of memory for %zu properties", cap);
        o->props = p;
        o->cap = cap;
    }
    char *ptr = ptr_dup(c);
    if (!ptr) return HEARTH_ERR_OUT_OF_MEMORY;
    o->props[o->n] = (prop){key, schema, ptr, required};
    HL_TRY(map_put(&o->index, key, o->n));
    o->n++;
    return HEARTH_OK;
}

static int cmp_range(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The grammar of a key that is none of `o`'s keys, written without
 * escapes (so it cannot spell one in another way): a trie of the keys, one
 * rule per node, each taking a child's character, or any other character
 * and then anything, or (where no key ends) nothing. */
static hearth_status not_keys(hl_js_conv *c, const objdesc *o, const char *hint, hl_str *out) {
    typedef struct node {
        uint32_t cp;
        size_t child, next; /* first child, next sibling; 0 none */
        bool end;
    } node;
    node *t = hl_calloc(1, sizeof *t);
    size_t n = 1, cap = 1;
    hearth_status st = t ? HEARTH_OK : HEARTH_ERR_OUT_OF_MEMORY;
    for (size_t k = 0; st == HEARTH_OK && k < o->n; k++) {
        const char *key = o->props[k].key;
        size_t len = strlen(key), at = 0;
        bool plain = true;
        for (size_t i = 0; plain && i < len;) {
            uint32_t cp;
            if (!hl_js_utf8_next(key, len, &i, &cp)) st = hl_js_fail(c, "a property name is not valid UTF-8");
            plain = st == HEARTH_OK && cp >= 0x20 && cp != '"' && cp != '\\';
        }
        for (size_t i = 0; plain && i < len;) {
            uint32_t cp;
            hl_js_utf8_next(key, len, &i, &cp);
            size_t ch = t[at].child;
            while (ch && t[ch].cp != cp) ch = t[ch].next;
            if (!ch) {
                if (n == cap) {
                    node *g = realloc(t, cap * 2 * sizeof *g);
                    if (!g) {
                        st = hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "json_schema: out of memory for a key trie");
                        break;
                    }
                    t = g, cap *= 2;
                }
                t[n] = (node){cp, 0, t[at].child, false};
                t[at].child = ch = n++;
            }
            at = ch;
        }
        if (plain && st == HEARTH_OK) t[at].end = true;
    }
    /* Rules are named hint-key-<node>; reserve them all, then fill. */
    size_t *rule = st == HEARTH_OK ? hl_calloc(n, sizeof *rule) : NULL;
    if (st == HEARTH_OK && !rule) st = HEARTH_ERR_OUT_OF_MEMORY;
    char name[200];
    for (size_t i = 0; st == HEARTH_OK && i < n; i++) {
        snprintf(name, sizeof name, "%.120s-key-%zu", hint, i);
        st = hl_js_rule_add(c, name, NULL, &rule[i]);
    }
    hl_str body = {0};
    for (size_t i = 0; st == HEARTH_OK && i < n; i++) {
        body.n = 0;
        hl_str_puts(&body, "(");
        /* the characters that leave the trie here: all but the children's
         * (and those JSON escapes) */
        size_t n_ch = 0;
        for (size_t ch = t[i].child; ch; ch = t[ch].next) n_ch++;
        static const uint32_t specials[][2] = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
        uint32_t(*ex)[2] = hl_malloc((n_ch + N_OF(specials)) * sizeof *ex);
        uint32_t *lo = hl_malloc((n_ch + N_OF(specials)) * sizeof *lo),
                 *hi = hl_malloc((n_ch + N_OF(specials)) * sizeof *hi);
        if (!ex || !lo || !hi) st = HEARTH_ERR_OUT_OF_MEMORY;
        size_t n_ex = 0;
        for (size_t k = 0; st == HEARTH_OK && k < N_OF(specials); k++)
            ex[n_ex][0] = specials[k][0], ex[n_ex++][1] = specials[k][1];
        for (size_t ch = t[i].child; st == HEARTH_OK && ch; ch = t[ch].next) {
            hl_js_emit_json_char(&body, t[ch].cp);
            hl_js_elem(&body, c->rules[rule[ch]].name);
            hl_str_puts(&body, " |");
            ex[n_ex][0] = ex[n_ex][1] = t[ch].cp, n_ex++;
        }
        if (st == HEARTH_OK) {
            qsort(ex, n_ex, sizeof *ex, cmp_range);
            for (size_t k = 0; k < n_ex; k++) lo[k] = ex[k][0], hi[k] = ex[k][1];
            hl_js_emit_class(lo, hi, n_ex, true, &body);
            hl_str_puts(&body, " [^\\x22\\x5C\\x00-\\x1F]*");
        }
        free(ex);
        free(lo);
        free(hi);
        hl_str_puts(&body, t[i].end ? " )" : " )?");
        st = hl_str_status(&body);
        if (st == HEARTH_OK) st = hl_js_rule_set(c, rule[i], body.p);
    }
    if (st == HEARTH_OK) {
        hl_js_elem(out, "\"\\\"\"");
        hl_js_elem(out, c->rules[rule[0]].name);
        hl_js_elem(out, "\"\\\"\"");
        hl_js_space(c, out);
    }
    hl_str_free(&body);
    free(rule);
    free(t);
    return st;
}

/* A named rule `hint` for: key ":" value. key_grammar NULL: the JSON
 * string of `key`. */
static hearth_status member_rule(hl_js_conv *c, const char *key, const char *key_grammar, const cJSON *schema,
                                 const char *ptr, const char *hint, size_t *rule) {
    hl_str body = {0};
    hearth_status st = HEARTH_OK;
    if (key_grammar) {
        hl_str_puts(&body, key_grammar);
    } else {
        st = hl_js_emit_json_string(c, key, strlen(key), &body);
        hl_js_space(c, &body);
    }
    hl_js_elem(&body, "\":\"");
    hl_js_space(c, &body);
    /* errors inside the value point at its declaration */
    hl_str saved = c->ptr;
    c->ptr = (hl_str){0};
    hl_str_puts(&c->ptr, ptr);
    c->guard++;
    if (st == HEARTH_OK) {
        if (schema) st = hl_js_visit(c, schema, hint, &body);
        else hl_js_prim_ref(c, HL_JS_VALUE, &body);
    }
    c->guard--;
    hl_str_free(&c->ptr);
    c->ptr = saved;
    if (st == HEARTH_OK) st = hl_str_status(&body);
    char kv[200];
    hint_join(kv, sizeof kv, hint, "kv");
    if (st == HEARTH_OK) st = hl_js_rule_add(c, kv, body.p, rule);
    hl_str_free(&body);
    return st;
}

/* The object grammar of `o`: "{" members "}", the members in order, each
 * optional one may be left out, the commas only between those present. */
static hearth_status emit_object(hl_js_conv *c, const objdesc *o, const char *hint, hl_str *out) {
    size_t n = o->n, *kv = hl_calloc(n + 1, sizeof *kv);
    if (!kv) return HEARTH_ERR_OUT_OF_MEMORY;
    hearth_status st = HEARTH_OK;
    char h[200], name[200];
    for (size_t i = 0; st == HEARTH_OK && i < n; i++) {
        hint_join(h, sizeof h, hint, o->props[i].key);
        st = member_rule(c, o->props[i].key, NULL, o->props[i].schema, o->props[i].ptr, h, &kv[i]);
    }
    if (st == HEARTH_OK && o->extras) {
        hl_str key = {0};
        hint_join(h, sizeof h, hint, "additional");
        if (n) st = not_keys(c, o, h, &key);
        else hl_js_prim_ref(c, HL_JS_STRING, &key);
        if (st == HEARTH_OK) st = hl_str_status(&key);
        if (st == HEARTH_OK)
            st = member_rule(c, NULL, key.p, o->extra_schema, o->extra_ptr ? o->extra_ptr : "", h, &kv[n]);
        hl_str_free(&key);
    }
    if (st != HEARTH_OK) {
        free(kv);
        return st;
    }
#define KV(i) c->rules[kv[i]].name
    /* tail(j): the members from j on, each after a comma, then the extra
     * members. With one way to start (the first member is required) tail(1)
     * is written inline; with several, each tail(j) a start needs is a rule
     * (its text ends with the next one's name), so the grammar stays linear
     * in the number of members. */
    size_t first_required = n;
    for (size_t i = n; i-- > 0;)
        if (o->props[i].required) first_required = i;
    size_t last_start = n && first_required < n ? first_required : n ? n - 1 : 0;
    bool multi = first_required > 0;
    size_t *tail_rule = hl_calloc(n + 2, sizeof *tail_rule); /* rule + 1; 0 none */
    hl_str cur = {0}, extra = {0}, body = {0};
    if (!tail_rule) st = HEARTH_ERR_OUT_OF_MEMORY;
    if (o->extras) {
        hl_str_puts(&extra, "( \",\"");
        hl_js_space(c, &extra);
        hl_js_elem(&extra, KV(n));
        hl_str_puts(&extra, " )*");
        hl_str_puts(&cur, extra.p);
    }
    for (size_t j = n; st == HEARTH_OK && j >= 1; j--) {
        if (j < n) {
            hl_str item = {0};
            hl_str_puts(&item, o->props[j].required ? "\",\"" : "( \",\"");
            hl_js_space(c, &item);
            hl_js_elem(&item, KV(j));
            if (!o->props[j].required) hl_str_puts(&item, " )?");
            if (cur.n) hl_js_elem(&item, cur.p);
            hl_str_free(&cur);
            cur = item;
        }
        st = hl_str_status(&cur);
        if (st == HEARTH_OK && multi && j <= last_start + 1 && cur.n) {
            snprintf(name, sizeof name, "%.120s-tail-%zu", hint, j);
            size_t r;
            st = hl_js_rule_add(c, name, cur.p, &r);
            tail_rule[j] = r + 1;
            cur.n = 0;
            if (st == HEARTH_OK) hl_str_puts(&cur, c->rules[r].name);
        }
    }
    hl_str_puts(&body, "\"{\"");
    hl_js_space(c, &body);
    if (n || o->extras) {
        bool all_optional = first_required == n;
        hl_js_elem(&body, "(");
        for (size_t i = 0; n && i <= last_start; i++) {
            if (i) hl_str_puts(&body, " |");
            hl_js_elem(&body, KV(i));
            if (!multi && cur.n) hl_js_elem(&body, cur.p);
            else if (multi && tail_rule[i + 1]) hl_js_elem(&body, c->rules[tail_rule[i + 1] - 1].name);
        }
        if (all_optional && o->extras) {
            if (n) hl_str_puts(&body, " |");
            hl_js_elem(&body, KV(n));
            hl_js_elem(&body, extra.p);
        }
        hl_str_puts(&body, all_optional ? " )?" : " )");
    }
    hl_js_elem(&body, "\"}\"");
    hl_js_space(c, &body);
    if (st == HEARTH_OK) st = extra.oom ? HEARTH_ERR_OUT_OF_MEMORY : hl_str_status(&body);
    if (st == HEARTH_OK) hl_js_elem(out, body.p), st = hl_str_status(out);
#undef KV
    hl_str_free(&cur);
    hl_str_free(&extra);
    hl_str_free(&body);
    free(tail_rule);
    free(kv);
    return st;
}

/* properties, required and additionalProperties of one schema into o. */
static hearth_status obj_from_schema(hl_js_conv *c, const cJSON *s, objdesc *o) {
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(s, "required");
    const cJSON *ap = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
    if (props && !cJSON_IsObject(props)) return hl_js_fail(c, "'properties' must be an object");
    if (req && !cJSON_IsArray(req)) return hl_js_fail(c, "'required' must be an array of strings");
    if (ap && !cJSON_IsBool(ap) && !cJSON_IsObject(ap)) return hl_js_fail(c, "'additionalProperties' must be a schema");
    strmap absent = {0}; /* keys whose schema is false */
    hearth_status st = HEARTH_OK;
    for (const cJSON *p = props ? props->child : NULL; st == HEARTH_OK && p; p = p->next) {
        size_t mark = hl_js_ptr_push(c, "properties");
        hl_js_ptr_push(c, p->string);
        if (map_get(&o->index, p->string) || map_get(&absent, p->string))
            st = hl_js_fail(c, "property '%s' is declared twice", p->string);
        else if (cJSON_IsFalse(p)) st = map_put(&absent, p->string, 0);
        else st = obj_add(c, o, p->string, p, false);
        hl_js_ptr_pop(c, mark);
    }
    o->extras = ap ? !cJSON_IsFalse(ap) : !props;
    o->extra_schema = cJSON_IsObject(ap) ? ap : NULL;
    if (o->extra_schema) {
        size_t mark = hl_js_ptr_push(c, "additionalProperties");
        o->extra_ptr = ptr_dup(c);
        hl_js_ptr_pop(c, mark);
        if (!o->extra_ptr) st = HEARTH_ERR_OUT_OF_MEMORY;
    }
    size_t i = 0;
    for (const cJSON *r = req ? req->child : NULL; st == HEARTH_OK && r; r = r->next, i++) {
        size_t mark = hl_js_ptr_push_index(c, "required", i);
        size_t *at = cJSON_IsString(r) ? map_get(&o->index, r->valuestring) : NULL;
        if (!cJSON_IsString(r)) st = hl_js_fail(c, "'required' must be an array of strings");
        else if (at) o->props[*at].required = true;
        else if (map_get(&absent, r->valuestring) || !o->extras)
            st = hl_js_fail(c, "required property '%s' is not allowed by the schema", r->valuestring);
        else st = obj_add(c, o, r->valuestring, o->extra_schema, true);
        hl_js_ptr_pop(c, mark);
    }
    /* A key whose schema is false never appears: without extra keys it is
     * simply not written; with them it would have to be excluded from the
     * extra keys, which the key grammar does not do. */
    for (size_t k = 0; st == HEARTH_OK && o->extras && k < absent.cap; k++)
        if (absent.keys[k])
            st = hl_js_fail(c, "property '%s' with the schema false next to additional properties is not supported",
                            absent.keys[k]);
    map_free(&absent);
    return st;
}

hearth_status hl_js_build_object(hl_js_conv *c, const cJSON *s, const char *hint, hl_str *out) {
    objdesc o = {0};
    hearth_status st = obj_from_schema(c, s, &o);
    if (st == HEARTH_OK && !o.n && o.extras && !o.extra_schema)
        hl_js_prim_ref(c, HL_JS_OBJECT, out), st = hl_str_status(out);
    else if (st == HEARTH_OK) st = emit_object(c, &o, hint, out);
    obj_free(&o);
    return st;
}

/* ---------------------------------------------------------------- allOf */

/* Collects the parts of an allOf of objects into o: s's own properties,
 * required and additionalProperties, then its allOf and $ref subschemas,
 * depth first. A part with additionalProperties false limits the keys to
 * its properties (`allowed`, counted per key in *n_closed parts). */
static hearth_status allof_collect(hl_js_conv *c, const cJSON *s, objdesc *o, strmap *allowed, size_t *n_closed);

static hearth_status allof_part(hl_js_conv *c, const cJSON *s, objdesc *o, strmap *allowed, size_t *n_closed) {
    if (!cJSON_IsObject(s)) return hl_js_fail(c, "'allOf' combines object schemas only");
    if (++c->depth > HL_JS_MAX_DEPTH) return hl_js_fail(c, "schemas nested deeper than %d levels", HL_JS_MAX_DEPTH);
    hearth_status st = allof_collect(c, s, o, allowed, n_closed);
    c->depth--;
    return st;
}

static hearth_status allof_collect(hl_js_conv *c, const cJSON *s, objdesc *o, strmap *allowed, size_t *n_closed) {
    static const char *const object_kw[] = {"type", "properties", "required", "additionalProperties", "allOf", "$ref"};
    HL_TRY(hl_js_check_keywords(c, s));
    const char *other = hl_js_other_constraint(s, object_kw, N_OF(object_kw));
    if (other)
        return hl_js_fail(c,
                          "'allOf' combines object schemas only (properties, required, additionalProperties): '%s' is "
                          "not supported there",
                          other);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(s, "type");
    if (type && !(cJSON_IsString(type) && !strcmp(type->valuestring, "object")))
        return hl_js_fail(c, "'allOf' combines object schemas only: 'type' must be \"object\"");
    const cJSON *ap = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
    if (ap && !cJSON_IsFalse(ap))
        return hl_js_fail(c, "'additionalProperties' other than false inside 'allOf' is not supported");
    /* this part's own members, merged into o */
    objdesc part = {0};
    hearth_status st = HEARTH_OK;
    if (cJSON_GetObjectItemCaseSensitive(s, "properties") || cJSON_GetObjectItemCaseSensitive(s, "required") || ap) {
        const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
        if (props && !cJSON_IsObject(props)) st = hl_js_fail(c, "'properties' must be an object");
        for (const cJSON *p = props ? props->child : NULL; st == HEARTH_OK && p; p = p->next) {
            size_t mark = hl_js_ptr_push(c, "properties");
            hl_js_ptr_push(c, p->string);
            size_t *at = map_get(&o->index, p->string);
            if (cJSON_IsFalse(p))
                st = hl_js_fail(c, "a property with the schema false inside 'allOf' is not supported");
            else if (at && o->props[*at].schema && !cJSON_Compare(o->props[*at].schema, p, true))
                st = hl_js_fail(c, "property '%s' has different schemas in the parts of 'allOf'", p->string);
            else if (!at) st = obj_add(c, o, p->string, p, false);
            if (st == HEARTH_OK && cJSON_IsFalse(ap)) st = map_put(&part.index, p->string, 0);
            hl_js_ptr_pop(c, mark);
        }
        const cJSON *req = cJSON_GetObjectItemCaseSensitive(s, "required");
        if (st == HEARTH_OK && req && !cJSON_IsArray(req)) st = hl_js_fail(c, "'required' must be an array of strings");
        size_t i = 0;
        for (const cJSON *r = req ? req->child : NULL; st == HEARTH_OK && r; r = r->next, i++) {
            size_t mark = hl_js_ptr_push_index(c, "required", i);
            if (!cJSON_IsString(r)) st = hl_js_fail(c, "'required' must be an array of strings");
            else {
                size_t *at = map_get(&o->index, r->valuestring);
                if (at) o->props[*at].required = true;
                else st = obj_add(c, o, r->valuestring, NULL, true);
            }
            hl_js_ptr_pop(c, mark);
        }
        if (st == HEARTH_OK && cJSON_IsFalse(ap)) {
            /* count, per key, the closed parts that allow it */
            (*n_closed)++;
            for (size_t k = 0; st == HEARTH_OK && k < part.index.cap; k++)
                if (part.index.keys[k]) {
                    size_t *n = map_get(allowed, part.index.keys[k]);
                    st = map_put(allowed, part.index.keys[k], n ? *n + 1 : 1);
                }
        }
    }
    map_free(&part.index);
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(s, "allOf");
    if (st == HEARTH_OK && all && (!cJSON_IsArray(all) || !all->child))
        st = hl_js_fail(c, "'allOf' must be a non-empty array of schemas");
    size_t i = 0;
    for (const cJSON *p = all ? all->child : NULL; st == HEARTH_OK && p; p = p->next, i++) {
        size_t mark = hl_js_ptr_push_index(c, "allOf", i);
        st = allof_part(c, p, o, allowed, n_closed);
        hl_js_ptr_pop(c, mark);
    }
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(s, "$ref");
    if (st == HEARTH_OK && ref) {
        if (!cJSON_IsString(ref)) return hl_js_fail(c, "'$ref' must be a string");
        const cJSON *target = hl_js_resolve_ref(c, ref->valuestring);
        if (!target) return HEARTH_ERR_INVALID_ARG;
        hl_str saved = c->ptr;
        c->ptr = (hl_str){0};
        hl_str_puts(&c->ptr, ref->valuestring + 1);
        st = allof_part(c, target, o, allowed, n_closed);
        hl_str_free(&c->ptr);
        c->ptr = saved;
    }
    return st;
}

hearth_status hl_js_build_allof(hl_js_conv *c, const cJSON *s, const char *hint, hl_str *out) {
    objdesc o = {0};
    strmap allowed = {0};
    size_t n_closed = 0;
    hearth_status st = allof_collect(c, s, &o, &allowed, &n_closed);
    if (st == HEARTH_OK && n_closed) {
        /* keep the members every closed part allows */
        size_t k = 0;
        for (size_t i = 0; st == HEARTH_OK && i < o.n; i++) {
            size_t *n = map_get(&allowed, o.props[i].key);
            if (n && *n == n_closed) o.props[k++] = o.props[i];
            else if (o.props[i].required)
                st = hl_js_fail(c,
                                "required property '%s' is excluded by an 'allOf' part with additionalProperties false",
                                o.props[i].key);
            else free(o.props[i].ptr);
        }
        if (st == HEARTH_OK) {
            o.n = k;
            map_free(&o.index);
            o.index = (strmap){0};
            for (size_t i = 0; st == HEARTH_OK && i < o.n; i++) st = map_put(&o.index, o.props[i].key, i);
        }
    }
    if (st == HEARTH_OK) st = emit_object(c, &o, hint, out);
    map_free(&allowed);
    obj_free(&o);
    return st;
}
