/* GGUF parser: walks a GGUF image with a cursor that checks the bytes left
 * before every read, and validates all of it before anything else looks at it:
 * header counts against the file size, every metadata value (nested arrays
 * included), names, tensor shapes, types, byte sizes, offsets and overlaps.
 * Each violation becomes HEARTH_ERR_FORMAT with a one-line message naming the
 * key or tensor at fault. Layout, from the spec
 * (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md), little-endian:
 *   header:  magic "GGUF", u32 version, u64 n_tensors, u64 n_kv
 *   kv:      string key, u32 value type, value
 *   string:  u64 length, bytes (no NUL)
 *   array:   u32 element type, u64 count, elements
 *   tensor:  string name, u32 n_dims, i64 ne[n_dims], u32 ggml type, u64 offset
 *   padding to general.alignment, then the data section. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "gguf/ggml_types.h"
#include "gguf/gguf_impl.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the GGUF reader assumes a little-endian host"
#endif

/* Smallest encodings, used to bound counts by the bytes left before any
 * allocation sized by a count from the file. */
#define HEADER_BYTES 24u          /* magic, version, n_tensors, n_kv */
#define MIN_KV_BYTES 14u          /* key length + 1 byte, u32 type, 1-byte value */
#define MIN_TENSOR_INFO_BYTES 33u /* name length + 1 byte, n_dims, 1 dim, type, offset */
#define MIN_STRING_BYTES 8u       /* length */
#define MIN_ARRAY_BYTES 12u       /* element type + count */
#define SHOW_MAX 56               /* bytes of a key or tensor name quoted in messages */

typedef struct parser {
    gguf_file *f;
    size_t pos;    /* cursor: offset of the next byte to read */
    char what[96]; /* what is being read ("key 'general.name'"); "" for none */
} parser;

static hearth_status perr(const parser *p, const char *fmt, ...) HL_PRINTF(2, 3);
static hearth_status perr(const parser *p, const char *fmt, ...) {
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (p->what[0] == '\0') return hl_fail(HEARTH_ERR_FORMAT, "%s: %s", p->f->origin, msg);
    return hl_fail(HEARTH_ERR_FORMAT, "%s: %s: %s", p->f->origin, p->what, msg);
}

static void describe(parser *p, const char *fmt, ...) HL_PRINTF(2, 3);
static void describe(parser *p, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->what, sizeof p->what, fmt, ap);
    va_end(ap);
}

/* A file string made safe for a one-line message: bytes other than printable
 * ASCII become '?', and long strings are cut with "...". */
static const char *show(char out[SHOW_MAX + 4], gguf_str s) {
    size_t n = s.len < SHOW_MAX ? (size_t)s.len : SHOW_MAX;
    for (size_t i = 0; i < n; i++) {
        char c = s.data[i];
        out[i] = (c >= 0x20 && c < 0x7f) ? c : '?';
    }
    strcpy(out + n, s.len > SHOW_MAX ? "..." : "");
    return out;
}

/* "key 'name'", or "key #i" while the name is unknown or empty. */
static void describe_named(parser *p, const char *kind, uint64_t i, gguf_str name) {
    char buf[SHOW_MAX + 4];
    if (name.len == 0) describe(p, "%s #%" PRIu64, kind, i);
    else describe(p, "%s '%s'", kind, show(buf, name));
}

/* ------------------------------------------------------------ cursor -- */

static size_t remaining(const parser *p) { return p->f->size - p->pos; }

static hearth_status need(const parser *p, uint64_t n) {
    if (n <= remaining(p)) return HEARTH_OK;
    return perr(p,
                "truncated: needs %" PRIu64 " bytes at offset %zu but the file ends at %zu "
                "(an incomplete download or a corrupt file)",
                n, p->pos, p->f->size);
}

/* Returns the next n bytes and advances; need(p, n) must have passed. */
static const uint8_t *take(parser *p, size_t n) {
    const uint8_t *s = p->f->base + p->pos;
    p->pos += n;
    return s;
}

static hearth_status rd_u32(parser *p, uint32_t *v) {
    HL_TRY(need(p, 4));
    memcpy(v, take(p, 4), 4);
    return HEARTH_OK;
}

static hearth_status rd_u64(parser *p, uint64_t *v) {
    HL_TRY(need(p, 8));
    memcpy(v, take(p, 8), 8);
    return HEARTH_OK;
}

static hearth_status rd_i64(parser *p, int64_t *v) {
    HL_TRY(need(p, 8));
    memcpy(v, take(p, 8), 8);
    return HEARTH_OK;
}

static hearth_status rd_str(parser *p, gguf_str *s) {
    uint64_t len;
    HL_TRY(rd_u64(p, &len));
    if (len > remaining(p))
        return perr(p,
                    "string of %" PRIu64 " bytes at offset %zu runs past the end of the file "
                    "(%zu bytes left)",
                    len, p->pos, remaining(p));
    s->len = len;
    s->data = (const char *)take(p, (size_t)len);
    return HEARTH_OK;
}

/* Names (keys, tensor names): non-empty, at most max bytes, no NUL (a NUL
 * would make two different names look equal to C code). */
static hearth_status check_name(const parser *p, gguf_str s, uint32_t max) {
    if (s.len == 0) return perr(p, "the name is empty");
    if (s.len > max) return perr(p, "the name is %" PRIu64 " bytes long (the limit is %u)", s.len, max);
    if (memchr(s.data, '\0', (size_t)s.len)) return perr(p, "the name contains a NUL byte");
    return HEARTH_OK;
}

/* ------------------------------------------------------------ values -- */

/* Encoded size of each scalar type; 0 for STRING and ARRAY. */
static const uint8_t scalar_bytes[GGUF_TYPE_COUNT] = {
    [GGUF_TYPE_UINT8] = 1,  [GGUF_TYPE_INT8] = 1,  [GGUF_TYPE_UINT16] = 2,  [GGUF_TYPE_INT16] = 2,
    [GGUF_TYPE_UINT32] = 4, [GGUF_TYPE_INT32] = 4, [GGUF_TYPE_FLOAT32] = 4, [GGUF_TYPE_BOOL] = 1,
    [GGUF_TYPE_UINT64] = 8, [GGUF_TYPE_INT64] = 8, [GGUF_TYPE_FLOAT64] = 8,
};

static void decode_scalar(gguf_type t, const uint8_t *src, gguf_value *v) {
    switch (t) {
    case GGUF_TYPE_UINT8: {
        uint8_t x;
        memcpy(&x, src, 1);
        v->v.u64 = x;
        break;
    }
    case GGUF_TYPE_INT8: {
        int8_t x;
        memcpy(&x, src, 1);
        v->v.i64 = x;
        break;
    }
    case GGUF_TYPE_UINT16: {
        uint16_t x;
        memcpy(&x, src, 2);
        v->v.u64 = x;
        break;
    }
    case GGUF_TYPE_INT16: {
        int16_t x;
        memcpy(&x, src, 2);
        v->v.i64 = x;
        break;
    }
    case GGUF_TYPE_UINT32: {
        uint32_t x;
        memcpy(&x, src, 4);
        v->v.u64 = x;
        break;
    }
    case GGUF_TYPE_INT32: {
        int32_t x;
        memcpy(&x, src, 4);
        v->v.i64 = x;
        break;
    }
    case GGUF_TYPE_UINT64: {
        uint64_t x;
        memcpy(&x, src, 8);
        v->v.u64 = x;
        break;
    }
    case GGUF_TYPE_INT64: {
        int64_t x;
        memcpy(&x, src, 8);
        v->v.i64 = x;
        break;
    }
    case GGUF_TYPE_FLOAT32: {
        float x;
        memcpy(&x, src, 4);
        v->v.f64 = x;
        break;
    }
    case GGUF_TYPE_FLOAT64: {
        double x;
        memcpy(&x, src, 8);
        v->v.f64 = x;
        break;
    }
    case GGUF_TYPE_BOOL: v->v.b = src[0] != 0; break;
    default: break; /* STRING, ARRAY: not scalars */
    }
}

/* A count of elements that each take at least min_bytes must fit in the bytes
 * left: this bounds the allocation for them by the file size. */
static hearth_status check_count(const parser *p, uint64_t n, uint32_t min_bytes, const char *of) {
    if (n <= remaining(p) / min_bytes) return HEARTH_OK;
    return perr(p, "array of %" PRIu64 " %s cannot fit in the %zu bytes left in the file", n, of, remaining(p));
}

static hearth_status read_array(parser *p, gguf_array *arr, uint32_t depth);

static hearth_status read_scalar_array(parser *p, gguf_array *arr, uint64_t n) {
    uint32_t size = scalar_bytes[arr->elem_type];
    uint64_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes) || bytes > remaining(p))
        return perr(p,
                    "array of %" PRIu64 " %s (%u bytes each) runs past the end of the file "
                    "(%zu bytes left)",
                    n, hl_gguf_type_name(arr->elem_type), size, remaining(p));
    arr->raw = take(p, (size_t)bytes);
    arr->n = n;
    if (arr->elem_type == GGUF_TYPE_BOOL) {
        for (uint64_t i = 0; i < n; i++)
            if (arr->raw[i] > 1) return perr(p, "bool element %" PRIu64 " is %u (must be 0 or 1)", i, arr->raw[i]);
    }
    return HEARTH_OK;
}

static hearth_status read_string_array(parser *p, gguf_array *arr, uint64_t n) {
    HL_TRY(check_count(p, n, MIN_STRING_BYTES, "strings"));
    gguf_str *strs = hl_calloc((size_t)n, sizeof *strs);
    if (!strs) return HEARTH_ERR_OUT_OF_MEMORY;
    arr->strs = strs;
    arr->n = n;
    for (uint64_t i = 0; i < n; i++) HL_TRY(rd_str(p, &strs[i]));
    return HEARTH_OK;
}

static hearth_status read_nested_array(parser *p, gguf_array *arr, uint64_t n, uint32_t depth) {
    HL_TRY(check_count(p, n, MIN_ARRAY_BYTES, "arrays"));
    gguf_value *arrs = hl_calloc((size_t)n, sizeof *arrs);
    if (!arrs) return HEARTH_ERR_OUT_OF_MEMORY;
    arr->arrs = arrs;
    arr->n = n;
    for (uint64_t i = 0; i < n; i++) {
        arrs[i].type = GGUF_TYPE_ARRAY;
        HL_TRY(read_array(p, &arrs[i].v.arr, depth + 1));
    }
    return HEARTH_OK;
}

/* An array at nesting level `depth` (1 for a key's own array). What is
 * allocated is attached to arr at once so hl_gguf_free_parsed() finds it. */
static hearth_status read_array(parser *p, gguf_array *arr, uint32_t depth) {
    if (depth > GGUF_MAX_ARRAY_DEPTH) return perr(p, "arrays are nested more than %d deep", GGUF_MAX_ARRAY_DEPTH);
    uint32_t type;
    uint64_t n;
    HL_TRY(rd_u32(p, &type));
    if (type >= GGUF_TYPE_COUNT)
        return perr(p, "array element type %u is unknown (0 to %d are defined)", type, GGUF_TYPE_COUNT - 1);
    arr->elem_type = (gguf_type)type;
    HL_TRY(rd_u64(p, &n));
    if (type == GGUF_TYPE_STRING) return read_string_array(p, arr, n);
    if (type == GGUF_TYPE_ARRAY) return read_nested_array(p, arr, n, depth);
    return read_scalar_array(p, arr, n);
}

static hearth_status read_value(parser *p, gguf_type type, gguf_value *v) {
    v->type = type;
    if (type == GGUF_TYPE_STRING) return rd_str(p, &v->v.str);
    if (type == GGUF_TYPE_ARRAY) return read_array(p, &v->v.arr, 1);
    HL_TRY(need(p, scalar_bytes[type]));
    const uint8_t *src = take(p, scalar_bytes[type]);
    if (type == GGUF_TYPE_BOOL && src[0] > 1) return perr(p, "bool value is %u (must be 0 or 1)", src[0]);
    decode_scalar(type, src, v);
    return HEARTH_OK;
}

/* ------------------------------------------------------------ header -- */

static hearth_status check_version(const parser *p, uint32_t version) {
    if (version == 2 || version == 3) return HEARTH_OK;
    /* GGUF v3 marks big-endian files only by a byte-swapped version. */
    if (version == 0x02000000u || version == 0x03000000u)
        return perr(p, "big-endian GGUF files are not supported: convert the model as "
                       "little-endian");
    return perr(p, "GGUF version %u is not supported (only 2 and 3): re-convert the model", version);
}

static hearth_status parse_header(parser *p, uint64_t *n_tensors, uint64_t *n_kv) {
    const gguf_file *f = p->f;
    if (f->size < 4)
        return perr(p, "truncated: the file is %zu bytes, shorter than the %u-byte GGUF header", f->size, HEADER_BYTES);
    if (memcmp(f->base, "GGUF", 4) != 0)
        return perr(p, "not a GGUF file (magic %02x %02x %02x %02x, expected \"GGUF\")", f->base[0], f->base[1],
                    f->base[2], f->base[3]);
    if (f->size < HEADER_BYTES)
        return perr(p, "truncated: the file is %zu bytes, shorter than the %u-byte GGUF header", f->size, HEADER_BYTES);
    p->pos = 4;
    uint32_t version;
    HL_TRY(rd_u32(p, &version));
    HL_TRY(check_version(p, version));
    p->f->version = version;
    HL_TRY(rd_u64(p, n_tensors));
    HL_TRY(rd_u64(p, n_kv));

    describe(p, "header");
    size_t left = remaining(p);
    if (*n_kv > left / MIN_KV_BYTES)
        return perr(p,
                    "n_kv is %" PRIu64 " but the %zu bytes after the header hold at most "
                    "%zu keys",
                    *n_kv, left, left / MIN_KV_BYTES);
    if (*n_tensors > left / MIN_TENSOR_INFO_BYTES)
        return perr(p,
                    "n_tensors is %" PRIu64 " but the %zu bytes after the header hold at most "
                    "%zu tensor infos",
                    *n_tensors, left, left / MIN_TENSOR_INFO_BYTES);
    if (*n_tensors * MIN_TENSOR_INFO_BYTES > left - *n_kv * MIN_KV_BYTES)
        return perr(p,
                    "n_kv %" PRIu64 " and n_tensors %" PRIu64 " cannot both fit in the "
                    "%zu bytes after the header",
                    *n_kv, *n_tensors, left);
    return HEARTH_OK;
}

/* --------------------------------------------------------------- kvs -- */

static int cmp_kv(const void *a, const void *b) {
    const gguf_kv *x = *(const gguf_kv *const *)a, *y = *(const gguf_kv *const *)b;
    return hl_gguf_str_cmp(x->key, y->key.data, (size_t)y->key.len);
}

static hearth_status parse_kv(parser *p, uint64_t i, gguf_kv *kv) {
    describe(p, "key #%" PRIu64, i);
    HL_TRY(rd_str(p, &kv->key));
    describe_named(p, "key", i, kv->key);
    HL_TRY(check_name(p, kv->key, GGUF_MAX_KEY_LEN));
    uint32_t type;
    HL_TRY(rd_u32(p, &type));
    if (type >= GGUF_TYPE_COUNT)
        return perr(p, "value type %u is unknown (0 to %d are defined)", type, GGUF_TYPE_COUNT - 1);
    return read_value(p, (gguf_type)type, &kv->value);
}

/* Sorts the key index and rejects duplicates (neighbours once sorted). */
static hearth_status index_kvs(parser *p) {
    gguf_file *f = p->f;
    f->kv_by_key = hl_calloc((size_t)f->n_kv, sizeof *f->kv_by_key);
    if (!f->kv_by_key) return HEARTH_ERR_OUT_OF_MEMORY;
    for (uint64_t i = 0; i < f->n_kv; i++) f->kv_by_key[i] = &f->kvs[i];
    qsort(f->kv_by_key, (size_t)f->n_kv, sizeof *f->kv_by_key, cmp_kv);
    for (uint64_t i = 1; i < f->n_kv; i++) {
        if (cmp_kv(&f->kv_by_key[i - 1], &f->kv_by_key[i]) == 0) {
            describe_named(p, "key", i, f->kv_by_key[i]->key);
            return perr(p, "duplicate key (it appears more than once)");
        }
    }
    return HEARTH_OK;
}

static hearth_status parse_kvs(parser *p, uint64_t n_kv) {
    gguf_file *f = p->f;
    f->kvs = hl_calloc((size_t)n_kv, sizeof *f->kvs);
    if (!f->kvs) return HEARTH_ERR_OUT_OF_MEMORY;
    f->n_kv = n_kv;
    for (uint64_t i = 0; i < n_kv; i++) HL_TRY(parse_kv(p, i, &f->kvs[i]));
    return index_kvs(p);
}

/* general.alignment: uint32, a power of two (0 would make the padding
 * arithmetic divide by zero or wrap), at most GGUF_MAX_ALIGNMENT. */
static hearth_status parse_alignment(parser *p) {
    gguf_file *f = p->f;
    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_kv *kv = hl_gguf_find_kv(f, "general.alignment");
    if (!kv) return HEARTH_OK;
    describe(p, "key 'general.alignment'");
    if (kv->value.type != GGUF_TYPE_UINT32)
        return perr(p, "type is %s, must be uint32", hl_gguf_type_name(kv->value.type));
    uint64_t a = kv->value.v.u64;
    if (a == 0 || (a & (a - 1)) != 0 || a > GGUF_MAX_ALIGNMENT)
        return perr(p, "alignment %" PRIu64 " is not a power of two from 1 to %u", a, GGUF_MAX_ALIGNMENT);
    f->alignment = (uint32_t)a;
    return HEARTH_OK;
}

/* ----------------------------------------------------------- tensors -- */

/* Checks the type and shape and computes t->size, refusing any product that
 * overflows: elements must fit int64 (ggml's ne), bytes uint64. */
static hearth_status size_tensor(const parser *p, gguf_tensor *t) {
    const ggml_type_info *ti = hl_ggml_type_get(t->type);
    if (!ti) return perr(p, "unknown tensor type %u (a removed ggml type, or one newer than hearth)", t->type);
    const int64_t *ne = t->ne;
    if (ne[0] % ti->blck_size != 0)
        return perr(p, "dimension 0 is %" PRId64 ", not a multiple of the %s block size %u", ne[0], ti->name,
                    ti->blck_size);
    int64_t n = ne[0], rows = 1;
    for (int d = 1; d < GGUF_MAX_DIMS; d++) {
        if (__builtin_mul_overflow(n, ne[d], &n) || __builtin_mul_overflow(rows, ne[d], &rows))
            return perr(p, "element count %" PRId64 " x %" PRId64 " x %" PRId64 " x %" PRId64 " overflows 64 bits",
                        ne[0], ne[1], ne[2], ne[3]);
    }
    uint64_t row_bytes;
    if (__builtin_mul_overflow((uint64_t)(ne[0] / ti->blck_size), ti->type_size, &row_bytes) ||
        __builtin_mul_overflow(row_bytes, (uint64_t)rows, &t->size))
        return perr(p,
                    "byte size of %" PRId64 " x %" PRId64 " x %" PRId64 " x %" PRId64 " %s elements overflows 64 bits",
                    ne[0], ne[1], ne[2], ne[3], ti->name);
    return HEARTH_OK;
}

static hearth_status parse_tensor_info(parser *p, uint64_t i, gguf_tensor *t) {
    describe(p, "tensor #%" PRIu64, i);
    HL_TRY(rd_str(p, &t->name));
    describe_named(p, "tensor", i, t->name);
    HL_TRY(check_name(p, t->name, GGUF_MAX_TENSOR_NAME));
    HL_TRY(rd_u32(p, &t->n_dims));
    if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS)
        return perr(p, "has %u dimensions (must be 1 to %d)", t->n_dims, GGUF_MAX_DIMS);
    for (int d = 0; d < GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        HL_TRY(rd_i64(p, &t->ne[d]));
        if (t->ne[d] < 1)
            return perr(p, "dimension %u is %" PRId64 " (must be >= 1): the file is corrupt", d, t->ne[d]);
    }
    HL_TRY(rd_u32(p, &t->type));
    HL_TRY(rd_u64(p, &t->offset));
    HL_TRY(size_tensor(p, t));
    if (t->offset % p->f->alignment != 0)
        return perr(p, "data offset %" PRIu64 " is not a multiple of the alignment %u", t->offset, p->f->alignment);
    return HEARTH_OK;
}

static int cmp_tensor_name(const void *a, const void *b) {
    const gguf_tensor *x = *(const gguf_tensor *const *)a, *y = *(const gguf_tensor *const *)b;
    return hl_gguf_str_cmp(x->name, y->name.data, (size_t)y->name.len);
}

/* By offset; ties by position in the file, so messages are deterministic. */
static int cmp_tensor_offset(const void *a, const void *b) {
    const gguf_tensor *x = *(const gguf_tensor *const *)a, *y = *(const gguf_tensor *const *)b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    return x < y ? -1 : x > y;
}

static hearth_status index_tensors(parser *p) {
    gguf_file *f = p->f;
    f->tensor_by_name = hl_calloc((size_t)f->n_tensors, sizeof *f->tensor_by_name);
    if (!f->tensor_by_name) return HEARTH_ERR_OUT_OF_MEMORY;
    for (uint64_t i = 0; i < f->n_tensors; i++) f->tensor_by_name[i] = &f->tensors[i];
    qsort(f->tensor_by_name, (size_t)f->n_tensors, sizeof *f->tensor_by_name, cmp_tensor_name);
    for (uint64_t i = 1; i < f->n_tensors; i++) {
        if (cmp_tensor_name(&f->tensor_by_name[i - 1], &f->tensor_by_name[i]) == 0) {
            describe_named(p, "tensor", i, f->tensor_by_name[i]->name);
            return perr(p, "duplicate tensor name (it appears more than once)");
        }
    }
    return HEARTH_OK;
}

static hearth_status parse_tensor_infos(parser *p, uint64_t n_tensors) {
    gguf_file *f = p->f;
    f->tensors = hl_calloc((size_t)n_tensors, sizeof *f->tensors);
    if (!f->tensors) return HEARTH_ERR_OUT_OF_MEMORY;
    f->n_tensors = n_tensors;
    for (uint64_t i = 0; i < n_tensors; i++) HL_TRY(parse_tensor_info(p, i, &f->tensors[i]));
    return index_tensors(p);
}

/* Tensors sorted by offset may not overlap their successor. */
static hearth_status check_overlaps(parser *p) {
    gguf_file *f = p->f;
    const gguf_tensor **by_off = hl_calloc((size_t)f->n_tensors, sizeof *by_off);
    if (!by_off) return HEARTH_ERR_OUT_OF_MEMORY;
    for (uint64_t i = 0; i < f->n_tensors; i++) by_off[i] = &f->tensors[i];
    qsort(by_off, (size_t)f->n_tensors, sizeof *by_off, cmp_tensor_offset);
    hearth_status st = HEARTH_OK;
    for (uint64_t i = 1; i < f->n_tensors && st == HEARTH_OK; i++) {
        const gguf_tensor *a = by_off[i - 1], *b = by_off[i];
        if (a->offset + a->size > b->offset) {
            char buf[SHOW_MAX + 4];
            describe_named(p, "tensor", i, b->name);
            st = perr(p,
                      "data at bytes [%" PRIu64 ", %" PRIu64 ") overlaps tensor '%s' at "
                      "[%" PRIu64 ", %" PRIu64 ") of the data section",
                      b->offset, b->offset + b->size, show(buf, a->name), a->offset, a->offset + a->size);
        }
    }
    free(by_off);
    return st;
}

/* The data section starts at the first multiple of the alignment after the
 * tensor infos; every tensor's bytes must lie inside the file. */
static hearth_status place_tensors(parser *p) {
    gguf_file *f = p->f;
    /* No overflow: pos <= size and the padding is below GGUF_MAX_ALIGNMENT. */
    f->data_offset = p->pos + (f->alignment - p->pos % f->alignment) % f->alignment;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        gguf_tensor *t = &f->tensors[i];
        uint64_t start, end;
        if (__builtin_add_overflow(f->data_offset, t->offset, &start) || __builtin_add_overflow(start, t->size, &end) ||
            end > f->size) {
            describe_named(p, "tensor", i, t->name);
            return perr(p,
                        "data (offset %" PRIu64 ", %" PRIu64 " bytes, data section at %" PRIu64
                        ") runs past the end of the file (%zu bytes): the file is truncated or "
                        "corrupt",
                        t->offset, t->size, f->data_offset, f->size);
        }
        t->data = f->base + start;
    }
    return check_overlaps(p);
}

/* ------------------------------------------------------------- entry -- */

hearth_status hl_gguf_parse(gguf_file *f) {
    parser p = {.f = f};
    uint64_t n_tensors = 0, n_kv = 0;
    HL_TRY(parse_header(&p, &n_tensors, &n_kv));
    HL_TRY(parse_kvs(&p, n_kv));
    HL_TRY(parse_alignment(&p));
    HL_TRY(parse_tensor_infos(&p, n_tensors));
    describe(&p, "data section");
    return place_tensors(&p);
}

static void free_array(const gguf_array *arr) {
    if (arr->elem_type == GGUF_TYPE_ARRAY && arr->arrs) {
        for (uint64_t i = 0; i < arr->n; i++) free_array(&arr->arrs[i].v.arr);
    }
    free((void *)arr->arrs);
    free((void *)arr->strs);
}

void hl_gguf_free_parsed(gguf_file *f) {
    for (uint64_t i = 0; f->kvs && i < f->n_kv; i++) {
        if (f->kvs[i].value.type == GGUF_TYPE_ARRAY) free_array(&f->kvs[i].value.v.arr);
    }
    free(f->kvs);
    free(f->kv_by_key);
    free(f->tensors);
    free(f->tensor_by_name);
    f->kvs = NULL;
    f->kv_by_key = NULL;
    f->tensors = NULL;
    f->tensor_by_name = NULL;
    f->n_kv = 0;
    f->n_tensors = 0;
}
