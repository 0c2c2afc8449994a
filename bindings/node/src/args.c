/* Reading JS values into C: arguments, strings, and the typed options of
 * the loader and generation calls. A value of the wrong type or out of
 * range throws HearthError ERR_INVALID_ARG naming the option, so bad input
 * never reaches hearth as garbage. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "addon.h"

bool hn_args(napi_env env, napi_callback_info info, size_t n, napi_value *argv) {
    size_t argc = n;
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) {
        hn_napi_failed(env, "napi_get_cb_info");
        return false;
    }
    return true; /* Node-API fills missing arguments with undefined */
}

bool hn_is_nullish(napi_env env, napi_value v) {
    napi_valuetype t = napi_undefined;
    if (v) napi_typeof(env, v, &t);
    return t == napi_undefined || t == napi_null;
}

static const char *type_name(napi_env env, napi_value v) {
    static const char *const names[] = {
        [napi_undefined] = "undefined", [napi_null] = "null",         [napi_boolean] = "boolean",
        [napi_number] = "number",       [napi_string] = "string",     [napi_symbol] = "symbol",
        [napi_object] = "object",       [napi_function] = "function", [napi_external] = "external",
        [napi_bigint] = "bigint",
    };
    napi_valuetype t = napi_undefined;
    napi_typeof(env, v, &t);
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "value";
}

char *hn_string(napi_env env, napi_value v, const char *what, size_t *len) {
    napi_valuetype t = napi_undefined;
    napi_typeof(env, v, &t);
    if (t != napi_string) {
        hn_throw(env, "ERR_INVALID_ARG", "%s must be a string (got %s)", what, type_name(env, v));
        return NULL;
    }
    size_t n;
    if (napi_get_value_string_utf8(env, v, NULL, 0, &n) != napi_ok) {
        hn_napi_failed(env, "napi_get_value_string_utf8");
        return NULL;
    }
    char *s = malloc(n + 1);
    if (!s) {
        hn_throw(env, "ERR_OUT_OF_MEMORY", "out of memory reading %s (%zu bytes)", what, n);
        return NULL;
    }
    if (napi_get_value_string_utf8(env, v, s, n + 1, &n) != napi_ok) {
        free(s);
        hn_napi_failed(env, "napi_get_value_string_utf8");
        return NULL;
    }
    if (len) *len = n;
    return s;
}

napi_value hn_string_new(napi_env env, const char *s, size_t len) {
    napi_value v;
    if (napi_create_string_utf8(env, s, len, &v) != napi_ok) {
        hn_napi_failed(env, "napi_create_string_utf8");
        return NULL;
    }
    return v;
}

bool hn_set_num(napi_env env, napi_value obj, const char *key, double x) {
    napi_value v;
    return napi_create_double(env, x, &v) == napi_ok && napi_set_named_property(env, obj, key, v) == napi_ok;
}

bool hn_set_str(napi_env env, napi_value obj, const char *key, const char *s) {
    napi_value v;
    const napi_status st = s ? napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &v) : napi_get_null(env, &v);
    return st == napi_ok && napi_set_named_property(env, obj, key, v) == napi_ok;
}

napi_value hn_opt(napi_env env, napi_value obj, const char *key) {
    napi_value v = NULL;
    if (hn_is_nullish(env, obj) || napi_get_named_property(env, obj, key, &v) != napi_ok) napi_get_undefined(env, &v);
    return v;
}

/* obj[key] as a number; *present false when left out. */
static bool opt_number(napi_env env, napi_value obj, const char *key, double *out, bool *present) {
    napi_value v = hn_opt(env, obj, key);
    *present = !hn_is_nullish(env, v);
    if (!*present) return true;
    if (napi_get_value_double(env, v, out) != napi_ok || isnan(*out)) {
        hn_throw(env, "ERR_INVALID_ARG", "options.%s must be a number (got %s)", key, type_name(env, v));
        return false;
    }
    return true;
}

bool hn_opt_int(napi_env env, napi_value obj, const char *key, int64_t lo, int64_t hi, int32_t *out) {
    double d;
    bool present;
    if (!opt_number(env, obj, key, &d, &present)) return false;
    if (!present) return true;
    if (d != floor(d) || d < (double)lo || d > (double)hi) {
        hn_throw(env, "ERR_INVALID_ARG", "options.%s must be an integer in [%lld, %lld] (got %g)", key, (long long)lo,
                 (long long)hi, d);
        return false;
    }
    *out = (int32_t)d;
    return true;
}

bool hn_opt_float(napi_env env, napi_value obj, const char *key, float *out) {
    double d;
    bool present;
    if (!opt_number(env, obj, key, &d, &present)) return false;
    if (present && !isfinite(d)) {
        hn_throw(env, "ERR_INVALID_ARG", "options.%s must be finite (got %g)", key, d);
        return false;
    }
    if (present) *out = (float)d;
    return true;
}

bool hn_opt_bool(napi_env env, napi_value obj, const char *key, bool *out) {
    napi_value v = hn_opt(env, obj, key);
    if (hn_is_nullish(env, v)) return true;
    if (napi_get_value_bool(env, v, out) != napi_ok) {
        hn_throw(env, "ERR_INVALID_ARG", "options.%s must be a boolean (got %s)", key, type_name(env, v));
        return false;
    }
    return true;
}

bool hn_opt_u64(napi_env env, napi_value obj, const char *key, uint64_t *out, bool *present) {
    napi_value v = hn_opt(env, obj, key);
    *present = !hn_is_nullish(env, v);
    if (!*present) return true;
    napi_valuetype t;
    napi_typeof(env, v, &t);
    if (t == napi_bigint) {
        int sign = 0;
        size_t n_words = 0;
        uint64_t word = 0;
        /* at most one 64-bit word, and not negative */
        if (napi_get_value_bigint_words(env, v, NULL, &n_words, NULL) == napi_ok && n_words <= 1 &&
            napi_get_value_bigint_words(env, v, &sign, &n_words, &word) == napi_ok && (!sign || word == 0)) {
            *out = word;
            return true;
        }
    } else {
        double d;
        if (t == napi_number && napi_get_value_double(env, v, &d) == napi_ok && d >= 0 && d == floor(d) &&
            d <= 9007199254740992.0) { /* 2^53: larger Numbers are not exact */
            *out = (uint64_t)d;
            return true;
        }
    }
    hn_throw(env, "ERR_INVALID_ARG", "options.%s must be a non-negative integer up to 2^53, or a BigInt below 2^64",
             key);
    return false;
}

void hn_strings_free(char **s, size_t n) {
    for (size_t i = 0; s && i < n; i++) free(s[i]);
    free(s);
}

bool hn_strings(napi_env env, napi_value v, const char *what, char ***out, size_t *n) {
    *out = NULL;
    *n = 0;
    if (hn_is_nullish(env, v)) return true;
    bool is_array = false;
    napi_is_array(env, v, &is_array);
    uint32_t count = 1;
    if (is_array && napi_get_array_length(env, v, &count) != napi_ok) {
        hn_napi_failed(env, "napi_get_array_length");
        return false;
    }
    char **s = calloc(count ? count : 1, sizeof *s);
    if (!s) {
        hn_throw(env, "ERR_OUT_OF_MEMORY", "out of memory reading %s", what);
        return false;
    }
    for (uint32_t i = 0; i < count; i++) {
        napi_value e = v;
        if (is_array && napi_get_element(env, v, i, &e) != napi_ok) {
            hn_napi_failed(env, "napi_get_element");
            hn_strings_free(s, i);
            return false;
        }
        if (!(s[i] = hn_string(env, e, what, NULL))) {
            hn_strings_free(s, i);
            return false;
        }
    }
    *out = s;
    *n = count;
    return true;
}
