/* model.tokenize(text) and model.detokenize(tokens): the model's
 * vocabulary, on the JS thread (both take microseconds per token). */
#include <stdlib.h>

#include "addon.h"

/* tokenize(handle, text, options {addSpecial = true, parseSpecial = true}) -> number[]. */
napi_value hn_tokenize(napi_env env, napi_callback_info info) {
    napi_value argv[3], out = NULL;
    if (!hn_args(env, info, 3, argv)) return NULL;
    const hn_model *m = hn_model_live(env, argv[0]);
    bool add_special = true, parse_special = true;
    if (!m || !hn_opt_bool(env, argv[2], "addSpecial", &add_special) ||
        !hn_opt_bool(env, argv[2], "parseSpecial", &parse_special))
        return NULL;
    size_t len;
    char *text = hn_string(env, argv[1], "text", &len);
    if (!text) return NULL;
    size_t n_max = len + 8, n = 0; /* a token is at least a byte, plus BOS/EOS */
    int32_t *ids = malloc(n_max * sizeof *ids);
    if (!ids) {
        free(text);
        hn_throw(env, "ERR_OUT_OF_MEMORY", "out of memory tokenizing %zu bytes", len);
        return NULL;
    }
    const hearth_status st = hearth_tokenize(m->model, text, len, add_special, parse_special, ids, n_max, &n);
    free(text);
    if (st != HEARTH_OK) hn_throw_status(env, st);
    else if (napi_create_array_with_length(env, n, &out) != napi_ok) hn_napi_failed(env, "napi_create_array");
    for (size_t i = 0; out && i < n; i++) {
        napi_value v;
        if (napi_create_int32(env, ids[i], &v) != napi_ok || napi_set_element(env, out, (uint32_t)i, v) != napi_ok) {
            hn_napi_failed(env, "napi_set_element");
            out = NULL;
        }
    }
    free(ids);
    return out;
}

/* Appends the bytes of one detokenizer push (or flush when tok < 0) to the
 * growing *buf. */
static hearth_status push(hearth_detok *d, int32_t tok, char **buf, size_t *len, size_t *cap) {
    for (;;) {
        size_t n = 0;
        hearth_status st = tok < 0 ? hearth_detok_flush(d, *buf + *len, *cap - *len, &n)
                                   : hearth_detok_push(d, tok, *buf + *len, *cap - *len, &n);
        if (st == HEARTH_OK) {
            *len += n;
            return st;
        }
        if (st != HEARTH_ERR_BUFFER_TOO_SMALL) return st;
        char *grown = realloc(*buf, *cap * 2 + n);
        if (!grown) return HEARTH_ERR_OUT_OF_MEMORY;
        *buf = grown;
        *cap = *cap * 2 + n;
    }
}

/* detokenize(handle, tokens, options {special = false}) -> string: the
 * tokens' text, invalid UTF-8 replaced with U+FFFD. */
napi_value hn_detokenize(napi_env env, napi_callback_info info) {
    napi_value argv[3];
    if (!hn_args(env, info, 3, argv)) return NULL;
    const hn_model *m = hn_model_live(env, argv[0]);
    bool special = false, is_array = false;
    if (!m || !hn_opt_bool(env, argv[2], "special", &special)) return NULL;
    uint32_t n = 0;
    napi_is_array(env, argv[1], &is_array);
    if (!is_array || napi_get_array_length(env, argv[1], &n) != napi_ok) {
        hn_throw(env, "ERR_INVALID_ARG", "tokens must be an array of token ids");
        return NULL;
    }
    hearth_detok *d = NULL;
    size_t len = 0, cap = 256;
    char *buf = malloc(cap);
    if (!buf) {
        hn_throw(env, "ERR_OUT_OF_MEMORY", "out of memory");
        return NULL;
    }
    hearth_status st = hearth_detok_init(m->model, special, &d);
    for (uint32_t i = 0; st == HEARTH_OK && i < n; i++) {
        napi_value e;
        int32_t tok = -1;
        double x = -1;
        if (napi_get_element(env, argv[1], i, &e) != napi_ok || napi_get_value_double(env, e, &x) != napi_ok ||
            !(x >= 0 && x < hearth_model_n_vocab(m->model)) || (double)(tok = (int32_t)x) != x) {
            hearth_detok_free(d);
            free(buf);
            hn_throw(env, "ERR_INVALID_ARG", "tokens[%u] must be a token id in [0, %d)", i,
                     (int)hearth_model_n_vocab(m->model));
            return NULL;
        }
        st = push(d, tok, &buf, &len, &cap);
    }
    if (st == HEARTH_OK) st = push(d, -1, &buf, &len, &cap);
    hearth_detok_free(d);
    napi_value out = NULL;
    if (st != HEARTH_OK) hn_throw_status(env, st);
    else out = hn_string_new(env, buf, len);
    free(buf);
    return out;
}
