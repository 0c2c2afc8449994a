/* The public metadata getters of hearth.h: one string key, and the non-array
 * keys by index with their values as text, as llama.cpp's
 * llama_model_meta_key_by_index / llama_model_meta_val_str_by_index give them
 * (llama.cpp's model loader skips array values; numbers are formatted as
 * gguf_data_to_str does: decimal integers, std::to_string floats, i.e. "%f"). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "model/model.h"

/* Copies `len` bytes of text and a NUL into buf, or reports the size needed. */
static hearth_status copy_text(const char *what, const char *text, size_t len, char *buf, size_t size,
                               size_t *out_len) {
    *out_len = len;
    if (len + 1 > size) return hl_fail(HEARTH_ERR_BUFFER_TOO_SMALL, "%s needs %zu bytes", what, len + 1);
    memcpy(buf, text, len);
    buf[len] = '\0';
    return HEARTH_OK;
}

hearth_status hearth_model_meta_str(const hearth_model *m, const char *key, char *buf, size_t size, size_t *len) {
    if (!m || !key || !len || (!buf && size))
        return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_model_meta_str: NULL argument");
    const gguf_kv *kv = hl_gguf_find_kv(m->gguf, key);
    if (!kv || kv->value.type != GGUF_TYPE_STRING)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "model has no string metadata '%s'", key);
    return copy_text(key, kv->value.v.str.data, (size_t)kv->value.v.str.len, buf, size, len);
}

int32_t hearth_model_meta_count(const hearth_model *m) {
    if (!m) return 0;
    int32_t n = 0;
    for (uint64_t i = 0; i < hl_gguf_n_kv(m->gguf); i++) n += hl_gguf_kv_at(m->gguf, i)->value.type != GGUF_TYPE_ARRAY;
    return n;
}

/* The i-th key-value pair whose value is not an array, or NULL. */
static const gguf_kv *scalar_kv(const hearth_model *m, int32_t i) {
    if (i < 0) return NULL;
    for (uint64_t k = 0; k < hl_gguf_n_kv(m->gguf); k++) {
        const gguf_kv *kv = hl_gguf_kv_at(m->gguf, k);
        if (kv->value.type != GGUF_TYPE_ARRAY && i-- == 0) return kv;
    }
    return NULL;
}

static hearth_status find(const hearth_model *m, int32_t i, char *buf, size_t size, size_t *len, const gguf_kv **kv) {
    if (!m || !len || (!buf && size)) return hl_fail(HEARTH_ERR_INVALID_ARG, "model metadata: NULL argument");
    *kv = scalar_kv(m, i);
    if (!*kv)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "model metadata index %d is out of range [0, %d)", i,
                       hearth_model_meta_count(m));
    return HEARTH_OK;
}

hearth_status hearth_model_meta_key_by_index(const hearth_model *m, int32_t i, char *buf, size_t size, size_t *len) {
    const gguf_kv *kv;
    hearth_status st = find(m, i, buf, size, len, &kv);
    if (st != HEARTH_OK) return st;
    return copy_text("metadata key", kv->key.data, (size_t)kv->key.len, buf, size, len);
}

hearth_status hearth_model_meta_val_str_by_index(const hearth_model *m, int32_t i, char *buf, size_t size,
                                                 size_t *len) {
    const gguf_kv *kv;
    hearth_status st = find(m, i, buf, size, len, &kv);
    if (st != HEARTH_OK) return st;
    const gguf_value *v = &kv->value;
    char num[400]; /* "%f" of the largest double: 309 digits and 7 more */
    switch (v->type) {
    case GGUF_TYPE_STRING: return copy_text("metadata value", v->v.str.data, (size_t)v->v.str.len, buf, size, len);
    case GGUF_TYPE_BOOL: snprintf(num, sizeof num, "%s", v->v.b ? "true" : "false"); break;
    case GGUF_TYPE_FLOAT32:
    case GGUF_TYPE_FLOAT64: snprintf(num, sizeof num, "%f", v->v.f64); break;
    case GGUF_TYPE_INT8:
    case GGUF_TYPE_INT16:
    case GGUF_TYPE_INT32:
    case GGUF_TYPE_INT64: snprintf(num, sizeof num, "%" PRId64, v->v.i64); break;
    default: snprintf(num, sizeof num, "%" PRIu64, v->v.u64); break;
    }
    return copy_text("metadata value", num, strlen(num), buf, size, len);
}
