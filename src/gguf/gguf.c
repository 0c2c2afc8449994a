/* GGUF reader, public side (gguf.h): opens and maps a file read-only, hands
 * the bytes to the parser (gguf_parse.c), and answers questions about the
 * validated result: accessors, lookups by name (binary search over the sorted
 * indexes the parser built) and typed metadata getters whose errors name the
 * key. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/status.h"
#include "gguf/gguf_impl.h"

/* ------------------------------------------------------------ open -- */

/* A gguf_file over base[0..size); messages start with "GGUF file 'path'", or
 * "GGUF" for an in-memory image (path NULL). */
static hearth_status new_file(const void *base, size_t size, const char *path, gguf_file **out) {
    gguf_file *f = hl_calloc(1, sizeof *f);
    if (!f) return HEARTH_ERR_OUT_OF_MEMORY;
    size_t n = path ? strlen(path) + sizeof "GGUF file ''" : sizeof "GGUF";
    f->origin = hl_malloc(n);
    if (!f->origin) {
        free(f);
        return HEARTH_ERR_OUT_OF_MEMORY;
    }
    if (path) snprintf(f->origin, n, "GGUF file '%s'", path);
    else strcpy(f->origin, "GGUF");
    f->base = base;
    f->size = size;
    *out = f;
    return HEARTH_OK;
}

/* Parses f; on failure closes it (freeing whatever the parser built). */
static hearth_status parse_or_close(gguf_file *f, gguf_file **out) {
    hearth_status st = hl_gguf_parse(f);
    if (st != HEARTH_OK) {
        hl_gguf_close(f);
        return st;
    }
    *out = f;
    return HEARTH_OK;
}

/* Maps the open file fd (a regular file of `size` > 0 bytes) read-only. */
static hearth_status map_file(const char *path, int fd, size_t size, const void **base) {
    void *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return hl_fail(HEARTH_ERR_IO, "GGUF file '%s': mmap of %zu bytes failed: %s", path, size, strerror(errno));
#ifdef MADV_HUGEPAGE
    /* Advice only: where the file system keeps large folios (ext4, xfs on
     * Linux 6.x) the parts of the file read from disk after this come in
     * 2 MiB folios mapped by one TLB entry each; parts already in the page
     * cache stay as they are. */
    (void)madvise(m, size, MADV_HUGEPAGE);
#endif
    *base = m;
    return HEARTH_OK;
}

/* Checks what fd is (fstat) and maps it. */
static hearth_status stat_and_map(const char *path, int fd, const void **base, size_t *size) {
    struct stat sb;
    if (fstat(fd, &sb) != 0) return hl_fail(HEARTH_ERR_IO, "GGUF file '%s': cannot stat: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) return hl_fail(HEARTH_ERR_IO, "GGUF file '%s': is a directory, not a model file", path);
    if (!S_ISREG(sb.st_mode)) return hl_fail(HEARTH_ERR_IO, "GGUF file '%s': not a regular file", path);
    if (sb.st_size == 0)
        return hl_fail(HEARTH_ERR_FORMAT, "GGUF file '%s': the file is empty (0 bytes): truncated", path);
    if ((uint64_t)sb.st_size > SIZE_MAX) return hl_fail(HEARTH_ERR_IO, "GGUF file '%s': too large to map", path);
    *size = (size_t)sb.st_size;
    return map_file(path, fd, *size, base);
}

hearth_status hl_gguf_open(const char *path, gguf_file **out) {
    if (!out) return hl_fail(HEARTH_ERR_INVALID_ARG, "gguf_open: out is NULL");
    *out = NULL;
    if (!path) return hl_fail(HEARTH_ERR_INVALID_ARG, "gguf_open: path is NULL");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return hl_fail(HEARTH_ERR_IO, "GGUF file '%s': cannot open: %s", path, strerror(errno));
    const void *base = NULL;
    size_t size = 0;
    hearth_status st = stat_and_map(path, fd, &base, &size);
    close(fd); /* the mapping stays valid without the descriptor */
    if (st != HEARTH_OK) return st;

    gguf_file *f;
    st = new_file(base, size, path, &f);
    if (st != HEARTH_OK) {
        munmap((void *)base, size);
        return st;
    }
    f->mapped = true;
    return parse_or_close(f, out);
}

hearth_status hl_gguf_open_memory(const void *data, size_t size, gguf_file **out) {
    if (!out) return hl_fail(HEARTH_ERR_INVALID_ARG, "gguf_open_memory: out is NULL");
    *out = NULL;
    if (!data) return hl_fail(HEARTH_ERR_INVALID_ARG, "gguf_open_memory: data is NULL");
    gguf_file *f;
    HL_TRY(new_file(data, size, NULL, &f));
    return parse_or_close(f, out);
}

void hl_gguf_close(gguf_file *f) {
    if (!f) return;
    for (uint32_t i = 0; i < f->n_parts; i++) hl_gguf_close(f->parts[i]);
    free(f->parts);
    hl_gguf_free_parsed(f);
    if (f->mapped) munmap((void *)f->base, f->size);
    free(f->origin);
    free(f);
}

/* ------------------------------------------------------- accessors -- */

uint32_t hl_gguf_version(const gguf_file *f) { return f->version; }
uint64_t hl_gguf_n_kv(const gguf_file *f) { return f->n_kv; }
uint64_t hl_gguf_n_tensors(const gguf_file *f) { return f->n_tensors; }
uint32_t hl_gguf_alignment(const gguf_file *f) { return f->alignment; }

const gguf_kv *hl_gguf_kv_at(const gguf_file *f, uint64_t i) { return i < f->n_kv ? &f->kvs[i] : NULL; }

const gguf_tensor *hl_gguf_tensor_at(const gguf_file *f, uint64_t i) {
    return i < f->n_tensors ? &f->tensors[i] : NULL;
}

const void *hl_gguf_data(const gguf_file *f, size_t *size) {
    if (size) *size = f->size;
    return f->base;
}

/* --------------------------------------------------------- lookups -- */

int hl_gguf_str_cmp(gguf_str a, const char *b, size_t len) {
    size_t n = a.len < len ? (size_t)a.len : len;
    int c = n ? memcmp(a.data, b, n) : 0;
    if (c != 0) return c;
    return a.len < len ? -1 : a.len > len;
}

bool hl_gguf_str_eq(gguf_str s, const char *cstr) { return hl_gguf_str_cmp(s, cstr, strlen(cstr)) == 0; }

const gguf_kv *hl_gguf_find_kv(const gguf_file *f, const char *key) {
    size_t len = strlen(key), lo = 0, hi = (size_t)f->n_kv;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = hl_gguf_str_cmp(f->kv_by_key[mid]->key, key, len);
        if (c == 0) return f->kv_by_key[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

const gguf_tensor *hl_gguf_find_tensor(const gguf_file *f, const char *name) {
    size_t len = strlen(name), lo = 0, hi = (size_t)f->n_tensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = hl_gguf_str_cmp(f->tensor_by_name[mid]->name, name, len);
        if (c == 0) return f->tensor_by_name[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* --------------------------------------------------------- getters -- */

const char *hl_gguf_type_name(gguf_type t) {
    static const char *const names[GGUF_TYPE_COUNT] = {
        "uint8", "int8",   "uint16", "int16",  "uint32", "int32",   "float32",
        "bool",  "string", "array",  "uint64", "int64",  "float64",
    };
    return (unsigned)t < GGUF_TYPE_COUNT ? names[t] : "unknown";
}

/* "uint32", or "array of string" for arrays. */
static const char *value_type_desc(const gguf_value *v, char buf[32]) {
    if (v->type != GGUF_TYPE_ARRAY) return hl_gguf_type_name(v->type);
    snprintf(buf, 32, "array of %s", hl_gguf_type_name(v->v.arr.elem_type));
    return buf;
}

static hearth_status type_error(const gguf_file *f, const char *key, const gguf_value *v, const char *expected) {
    char buf[32];
    return hl_fail(HEARTH_ERR_FORMAT, "%s: key '%s' has type %s, expected %s", f->origin, key, value_type_desc(v, buf),
                   expected);
}

/* Finds key: *v is NULL when it is absent and not required. */
static hearth_status lookup(const gguf_file *f, const char *key, bool required, const void *out, const gguf_value **v) {
    *v = NULL;
    if (!f || !key || !out) return hl_fail(HEARTH_ERR_INVALID_ARG, "gguf_get: NULL argument");
    const gguf_kv *kv = hl_gguf_find_kv(f, key);
    if (kv) {
        *v = &kv->value;
        return HEARTH_OK;
    }
    if (required)
        return hl_fail(HEARTH_ERR_FORMAT,
                       "%s: missing key '%s' (the model needs it: re-convert "
                       "the model with a current converter)",
                       f->origin, key);
    return HEARTH_OK;
}

static bool is_unsigned(gguf_type t) {
    return t == GGUF_TYPE_UINT8 || t == GGUF_TYPE_UINT16 || t == GGUF_TYPE_UINT32 || t == GGUF_TYPE_UINT64;
}

static bool is_signed(gguf_type t) {
    return t == GGUF_TYPE_INT8 || t == GGUF_TYPE_INT16 || t == GGUF_TYPE_INT32 || t == GGUF_TYPE_INT64;
}

/* Any integer value within [lo, hi]; `to` names the output type. */
static hearth_status get_int(const gguf_file *f, const char *key, const gguf_value *v, int64_t lo, int64_t hi,
                             const char *to, int64_t *x) {
    if (is_unsigned(v->type)) {
        if (v->v.u64 > (uint64_t)hi)
            return hl_fail(HEARTH_ERR_FORMAT, "%s: key '%s' is %" PRIu64 ", out of range for %s", f->origin, key,
                           v->v.u64, to);
        *x = (int64_t)v->v.u64;
        return HEARTH_OK;
    }
    if (is_signed(v->type)) {
        if (v->v.i64 < lo || v->v.i64 > hi)
            return hl_fail(HEARTH_ERR_FORMAT, "%s: key '%s' is %" PRId64 ", out of range for %s", f->origin, key,
                           v->v.i64, to);
        *x = v->v.i64;
        return HEARTH_OK;
    }
    char expected[48];
    snprintf(expected, sizeof expected, "%s (or an integer type that fits)", to);
    return type_error(f, key, v, expected);
}

hearth_status hl_gguf_get_u32(const gguf_file *f, const char *key, bool required, uint32_t *out) {
    const gguf_value *v;
    int64_t x = 0;
    HL_TRY(lookup(f, key, required, out, &v));
    if (!v) return HEARTH_OK;
    HL_TRY(get_int(f, key, v, 0, UINT32_MAX, "uint32", &x));
    *out = (uint32_t)x;
    return HEARTH_OK;
}

hearth_status hl_gguf_get_i32(const gguf_file *f, const char *key, bool required, int32_t *out) {
    const gguf_value *v;
    int64_t x = 0;
    HL_TRY(lookup(f, key, required, out, &v));
    if (!v) return HEARTH_OK;
    HL_TRY(get_int(f, key, v, INT32_MIN, INT32_MAX, "int32", &x));
    *out = (int32_t)x;
    return HEARTH_OK;
}

/* float32, or a float64 within float range (infinities and NaN pass). */
hearth_status hl_gguf_get_f32(const gguf_file *f, const char *key, bool required, float *out) {
    const gguf_value *v;
    HL_TRY(lookup(f, key, required, out, &v));
    if (!v) return HEARTH_OK;
    if (v->type != GGUF_TYPE_FLOAT32 && v->type != GGUF_TYPE_FLOAT64)
        return type_error(f, key, v, "float32 (or float64)");
    double d = v->v.f64;
    if (!isinf(d) && (d > FLT_MAX || d < -FLT_MAX))
        return hl_fail(HEARTH_ERR_FORMAT, "%s: key '%s' is %g, out of range for float32", f->origin, key, d);
    *out = (float)d;
    return HEARTH_OK;
}

hearth_status hl_gguf_get_bool(const gguf_file *f, const char *key, bool required, bool *out) {
    const gguf_value *v;
    HL_TRY(lookup(f, key, required, out, &v));
    if (!v) return HEARTH_OK;
    if (v->type != GGUF_TYPE_BOOL) return type_error(f, key, v, "bool");
    *out = v->v.b;
    return HEARTH_OK;
}

hearth_status hl_gguf_get_str(const gguf_file *f, const char *key, bool required, gguf_str *out) {
    const gguf_value *v;
    HL_TRY(lookup(f, key, required, out, &v));
    if (!v) return HEARTH_OK;
    if (v->type != GGUF_TYPE_STRING) return type_error(f, key, v, "string");
    *out = v->v.str;
    return HEARTH_OK;
}

hearth_status hl_gguf_get_arr(const gguf_file *f, const char *key, bool required, gguf_type elem_type,
                              const gguf_array **out) {
    const gguf_value *v;
    HL_TRY(lookup(f, key, required, out, &v));
    if (!v) return HEARTH_OK;
    if (v->type != GGUF_TYPE_ARRAY || v->v.arr.elem_type != elem_type) {
        char expected[32];
        snprintf(expected, sizeof expected, "array of %s", hl_gguf_type_name(elem_type));
        return type_error(f, key, v, expected);
    }
    *out = &v->v.arr;
    return HEARTH_OK;
}

/* Scalar array elements: raw is packed and possibly unaligned, so memcpy. */
int32_t hl_gguf_arr_i32(const gguf_array *arr, uint64_t i) {
    assert(arr->elem_type == GGUF_TYPE_INT32 && i < arr->n);
    int32_t x;
    memcpy(&x, arr->raw + i * 4, 4);
    return x;
}

uint32_t hl_gguf_arr_u32(const gguf_array *arr, uint64_t i) {
    assert(arr->elem_type == GGUF_TYPE_UINT32 && i < arr->n);
    uint32_t x;
    memcpy(&x, arr->raw + i * 4, 4);
    return x;
}

float hl_gguf_arr_f32(const gguf_array *arr, uint64_t i) {
    assert(arr->elem_type == GGUF_TYPE_FLOAT32 && i < arr->n);
    float x;
    memcpy(&x, arr->raw + i * 4, 4);
    return x;
}
