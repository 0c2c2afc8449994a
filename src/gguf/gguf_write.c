/* GGUF writer (see gguf_write.h): metadata values are encoded as they are set,
 * into one small buffer per key; tensor infos are kept as a list; the header
 * is written by hl_gguf_writer_begin_data(), the tensor data streamed after it
 * through a 1 MiB output buffer. Layout from the GGUF spec
 * (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md), checked against
 * the reader in gguf_parse.c, which every file written here must pass. */
#include "gguf/gguf_write.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/status.h"
#include "gguf/ggml_types.h"
#include "gguf/gguf_impl.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the GGUF writer assumes a little-endian host"
#endif

#define GGUF_WRITE_VERSION 3
#define OUT_BUF_SIZE (1u << 20)

/* ----------------------------------------------------------- buffer -- */

typedef struct gw_buf {
    uint8_t *p;
    size_t len, cap;
} gw_buf;

static hearth_status buf_put(gw_buf *b, const void *src, size_t n) {
    if (n > SIZE_MAX - b->len) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "GGUF writer: metadata too large");
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n) cap = cap > SIZE_MAX / 2 ? b->len + n : cap * 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory encoding GGUF metadata (%zu bytes)", cap);
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->len, src, n);
    b->len += n;
    return HEARTH_OK;
}

static hearth_status buf_u32(gw_buf *b, uint32_t v) { return buf_put(b, &v, 4); }
static hearth_status buf_u64(gw_buf *b, uint64_t v) { return buf_put(b, &v, 8); }

static hearth_status buf_str(gw_buf *b, const void *s, uint64_t len) {
    if (len > SIZE_MAX) return hl_fail(HEARTH_ERR_INVALID_ARG, "GGUF writer: string too long");
    HL_TRY(buf_u64(b, len));
    return buf_put(b, s, (size_t)len);
}

/* ------------------------------------------------------------ state -- */

typedef struct gw_kv {
    char *key;
    gw_buf enc; /* u32 value type + value, as in the file */
} gw_kv;

typedef struct gw_tensor {
    char name[GGUF_MAX_TENSOR_NAME + 1];
    uint32_t type, n_dims;
    int64_t ne[GGUF_MAX_DIMS];
    uint64_t size, offset; /* bytes; offset from the start of the data section */
} gw_tensor;

struct gguf_writer {
    char *path;     /* what the user asked for */
    char *tmp_path; /* the file being written (== path when IN_PLACE) */
    unsigned flags;
    int fd;
    hearth_status failed; /* sticky */
    bool data_started, committed;
    uint32_t alignment;

    gw_kv *kvs;
    size_t n_kv, cap_kv;
    gw_tensor *tensors;
    size_t n_tensors, cap_tensors;

    uint8_t *out; /* [OUT_BUF_SIZE] pending output */
    size_t out_len;
    uint64_t cur;      /* tensor whose data comes next */
    uint64_t cur_done; /* its bytes written so far */
};

static const uint8_t zeros[64];

/* ------------------------------------------------------------ output -- */

static hearth_status io_fail(gguf_writer *w, const char *what, int err) {
    w->failed = hl_fail(HEARTH_ERR_IO, "cannot write '%s': %s: %s", w->path, what, strerror(err));
    return w->failed;
}

static hearth_status write_all(gguf_writer *w, const uint8_t *p, size_t n) {
    while (n > 0) {
        ssize_t k = write(w->fd, p, n);
        if (k < 0) {
            if (errno == EINTR) continue;
            return io_fail(w, "write failed", errno);
        }
        if (k == 0) return io_fail(w, "write failed", EIO);
        p += k;
        n -= (size_t)k;
    }
    return HEARTH_OK;
}

static hearth_status flush_out(gguf_writer *w) {
    size_t n = w->out_len;
    w->out_len = 0;
    return write_all(w, w->out, n);
}

/* Buffered output; chunks of a buffer or more bypass the buffer. */
static hearth_status out_put(gguf_writer *w, const void *src, size_t n) {
    if (w->out_len + n > OUT_BUF_SIZE) HL_TRY(flush_out(w));
    if (n >= OUT_BUF_SIZE) return write_all(w, src, n);
    memcpy(w->out + w->out_len, src, n);
    w->out_len += n;
    return HEARTH_OK;
}

static hearth_status out_zeros(gguf_writer *w, uint64_t n) {
    while (n > 0) {
        size_t k = n < sizeof zeros ? (size_t)n : sizeof zeros;
        HL_TRY(out_put(w, zeros, k));
        n -= k;
    }
    return HEARTH_OK;
}

static uint64_t pad_to(uint64_t x, uint32_t align) { return (align - x % align) % align; }

/* ------------------------------------------------------------ create -- */

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = hl_malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

/* The folder part of path, for messages ("." when there is none). */
static void folder_of(const char *path, char *buf, size_t size) {
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(buf, size, ".");
    else if (slash == path) snprintf(buf, size, "/");
    else snprintf(buf, size, "%.*s", (int)(slash - path), path);
}

static hearth_status create_fail(const char *path, int err) {
    char folder[512];
    folder_of(path, folder, sizeof folder);
    struct stat sb;
    if (stat(folder, &sb) != 0)
        return hl_fail(HEARTH_ERR_IO, "cannot create '%s': the folder '%s' does not exist", path, folder);
    if (!S_ISDIR(sb.st_mode)) return hl_fail(HEARTH_ERR_IO, "cannot create '%s': '%s' is not a folder", path, folder);
    return hl_fail(HEARTH_ERR_IO, "cannot create '%s': %s (is the folder '%s' writable?)", path, strerror(err), folder);
}

/* Creates "path.tmp-XXXXXX" exclusively (mode 0666 less the umask, like any
 * new file), retrying on a name clash. */
static hearth_status open_temp(gguf_writer *w) {
    size_t n = strlen(w->path) + sizeof ".tmp-xxxxxxxx";
    w->tmp_path = hl_malloc(n);
    if (!w->tmp_path) return HEARTH_ERR_OUT_OF_MEMORY;
    static _Atomic unsigned counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned r = (unsigned)ts.tv_nsec ^ (unsigned)getpid() * 2654435761u ^ counter++ * 40503u;
        snprintf(w->tmp_path, n, "%s.tmp-%06x", w->path, r & 0xffffff);
        w->fd = open(w->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (w->fd >= 0) return HEARTH_OK;
        if (errno != EEXIST) return create_fail(w->path, errno);
    }
    return hl_fail(HEARTH_ERR_IO, "cannot create '%s': 100 temporary names next to it are taken", w->path);
}

hearth_status hl_gguf_writer_create(const char *path, unsigned flags, gguf_writer **out) {
    if (!out) return hl_fail(HEARTH_ERR_INVALID_ARG, "gguf_writer_create: out is NULL");
    *out = NULL;
    if (!path || !*path) return hl_fail(HEARTH_ERR_INVALID_ARG, "gguf_writer_create: no path");
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return hl_fail(HEARTH_ERR_IO, "cannot write '%s': it is a directory", path);
    if (!(flags & GGUF_WRITE_IN_PLACE) && stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return hl_fail(HEARTH_ERR_IO, "cannot write '%s': not a regular file", path);

    gguf_writer *w = hl_calloc(1, sizeof *w);
    if (!w) return HEARTH_ERR_OUT_OF_MEMORY;
    w->fd = -1;
    w->flags = flags;
    w->alignment = GGUF_DEFAULT_ALIGNMENT;
    hearth_status st = HEARTH_OK;
    if (!(w->path = dup_str(path)) || !(w->out = hl_malloc(OUT_BUF_SIZE))) {
        st = HEARTH_ERR_OUT_OF_MEMORY;
    } else if (flags & GGUF_WRITE_IN_PLACE) {
        w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        if (w->fd < 0) st = create_fail(path, errno);
    } else {
        st = open_temp(w);
    }
    if (st != HEARTH_OK) {
        hl_gguf_writer_free(w);
        return st;
    }
    *out = w;
    return HEARTH_OK;
}

void hl_gguf_writer_free(gguf_writer *w) {
    if (!w) return;
    if (w->fd >= 0) close(w->fd);
    if (!w->committed && w->tmp_path && !(w->flags & GGUF_WRITE_IN_PLACE)) unlink(w->tmp_path);
    for (size_t i = 0; i < w->n_kv; i++) {
        free(w->kvs[i].key);
        free(w->kvs[i].enc.p);
    }
    free(w->kvs);
    free(w->tensors);
    free(w->out);
    free(w->tmp_path);
    free(w->path);
    free(w);
}

/* ---------------------------------------------------------- metadata -- */

static hearth_status header_open(const gguf_writer *w, const char *what) {
    if (w->failed) return w->failed;
    if (w->data_started)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "GGUF writer '%s': %s after the header was written", w->path, what);
    return HEARTH_OK;
}

static hearth_status bad_value(const char *key, const char *why) {
    return hl_fail(HEARTH_ERR_INVALID_ARG, "GGUF writer: key '%s': %s", key, why);
}

/* Encodes scalar v of type t, checking that it fits. */
static hearth_status enc_scalar(gw_buf *b, const char *key, gguf_type t, const gguf_value *v) {
    uint64_t u = v->v.u64;
    int64_t i = v->v.i64;
    switch (t) {
    case GGUF_TYPE_UINT8:
        if (u > UINT8_MAX) break;
        return buf_put(b, &(uint8_t){(uint8_t)u}, 1);
    case GGUF_TYPE_UINT16:
        if (u > UINT16_MAX) break;
        return buf_put(b, &(uint16_t){(uint16_t)u}, 2);
    case GGUF_TYPE_UINT32:
        if (u > UINT32_MAX) break;
        return buf_u32(b, (uint32_t)u);
    case GGUF_TYPE_UINT64: return buf_u64(b, u);
    case GGUF_TYPE_INT8:
        if (i < INT8_MIN || i > INT8_MAX) break;
        return buf_put(b, &(int8_t){(int8_t)i}, 1);
    case GGUF_TYPE_INT16:
        if (i < INT16_MIN || i > INT16_MAX) break;
        return buf_put(b, &(int16_t){(int16_t)i}, 2);
    case GGUF_TYPE_INT32:
        if (i < INT32_MIN || i > INT32_MAX) break;
        return buf_put(b, &(int32_t){(int32_t)i}, 4);
    case GGUF_TYPE_INT64: return buf_put(b, &i, 8);
    case GGUF_TYPE_FLOAT32: return buf_put(b, &(float){(float)v->v.f64}, 4);
    case GGUF_TYPE_FLOAT64: return buf_put(b, &v->v.f64, 8);
    case GGUF_TYPE_BOOL: return buf_put(b, &(uint8_t){v->v.b ? 1 : 0}, 1);
    default: return bad_value(key, "not a scalar type");
    }
    return bad_value(key, "value out of range for its type");
}

/* Bytes of one element of a scalar array type; 0 for STRING, ARRAY. */
static size_t scalar_size(gguf_type t) {
    static const uint8_t size[GGUF_TYPE_COUNT] = {
        [GGUF_TYPE_UINT8] = 1,  [GGUF_TYPE_INT8] = 1,  [GGUF_TYPE_UINT16] = 2,  [GGUF_TYPE_INT16] = 2,
        [GGUF_TYPE_UINT32] = 4, [GGUF_TYPE_INT32] = 4, [GGUF_TYPE_FLOAT32] = 4, [GGUF_TYPE_BOOL] = 1,
        [GGUF_TYPE_UINT64] = 8, [GGUF_TYPE_INT64] = 8, [GGUF_TYPE_FLOAT64] = 8,
    };
    return (unsigned)t < GGUF_TYPE_COUNT ? size[t] : 0;
}

/* An array's body: u32 element type, u64 count, elements (spec: "array"). */
static hearth_status enc_array(gw_buf *b, const char *key, const gguf_array *a, uint32_t depth) {
    if (depth > GGUF_MAX_ARRAY_DEPTH) return bad_value(key, "arrays nested too deep");
    if ((unsigned)a->elem_type >= GGUF_TYPE_COUNT) return bad_value(key, "unknown array element type");
    HL_TRY(buf_u32(b, (uint32_t)a->elem_type));
    HL_TRY(buf_u64(b, a->n));
    if (a->n == 0) return HEARTH_OK;
    if (a->elem_type == GGUF_TYPE_STRING) {
        if (!a->strs) return bad_value(key, "string array without strings");
        for (uint64_t i = 0; i < a->n; i++) HL_TRY(buf_str(b, a->strs[i].data, a->strs[i].len));
        return HEARTH_OK;
    }
    if (a->elem_type == GGUF_TYPE_ARRAY) {
        if (!a->arrs) return bad_value(key, "array of arrays without arrays");
        for (uint64_t i = 0; i < a->n; i++) {
            if (a->arrs[i].type != GGUF_TYPE_ARRAY) return bad_value(key, "nested element is not an array");
            HL_TRY(enc_array(b, key, &a->arrs[i].v.arr, depth + 1));
        }
        return HEARTH_OK;
    }
    size_t es = scalar_size(a->elem_type);
    if (!a->raw) return bad_value(key, "scalar array without data");
    if (a->n > SIZE_MAX / es) return bad_value(key, "array too large");
    if (a->elem_type == GGUF_TYPE_BOOL) {
        for (uint64_t i = 0; i < a->n; i++)
            if (a->raw[i] > 1) return bad_value(key, "bool array element is not 0 or 1");
    }
    return buf_put(b, a->raw, (size_t)a->n * es);
}

static hearth_status enc_value(gw_buf *b, const char *key, const gguf_value *v) {
    if ((unsigned)v->type >= GGUF_TYPE_COUNT) return bad_value(key, "unknown value type");
    HL_TRY(buf_u32(b, (uint32_t)v->type));
    if (v->type == GGUF_TYPE_STRING) return buf_str(b, v->v.str.data, v->v.str.len);
    if (v->type == GGUF_TYPE_ARRAY) return enc_array(b, key, &v->v.arr, 1);
    return enc_scalar(b, key, v->type, v);
}

/* general.alignment must be what the reader accepts (gguf_parse.c). */
static hearth_status check_alignment(const char *key, const gguf_value *v, uint32_t *align) {
    if (strcmp(key, "general.alignment") != 0) return HEARTH_OK;
    if (v->type != GGUF_TYPE_UINT32) return bad_value(key, "must be a uint32");
    uint64_t a = v->v.u64;
    if (a == 0 || (a & (a - 1)) != 0 || a > GGUF_MAX_ALIGNMENT)
        return bad_value(key, "must be a power of two from 1 to 16 MiB");
    *align = (uint32_t)a;
    return HEARTH_OK;
}

static gw_kv *find_kv(gguf_writer *w, const char *key) {
    for (size_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->kvs[i].key, key) == 0) return &w->kvs[i];
    return NULL;
}

hearth_status hl_gguf_writer_set(gguf_writer *w, const char *key, const gguf_value *value) {
    if (!w || !key || !value) return hl_fail(HEARTH_ERR_INVALID_ARG, "gguf_writer_set: NULL argument");
    HL_TRY(header_open(w, "setting a key"));
    if (!*key) return hl_fail(HEARTH_ERR_INVALID_ARG, "GGUF writer: empty key");
    uint32_t align = w->alignment;
    HL_TRY(check_alignment(key, value, &align));
    gw_buf enc = {0};
    hearth_status st = enc_value(&enc, key, value);
    if (st != HEARTH_OK) {
        free(enc.p);
        return st;
    }
    gw_kv *kv = find_kv(w, key);
    if (!kv) {
        if (w->n_kv == w->cap_kv) {
            size_t cap = w->cap_kv ? w->cap_kv * 2 : 32;
            gw_kv *p = realloc(w->kvs, cap * sizeof *p);
            if (!p) {
                free(enc.p);
                return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory adding GGUF key '%s'", key);
            }
            w->kvs = p;
            w->cap_kv = cap;
        }
        char *k = dup_str(key);
        if (!k) {
            free(enc.p);
            return HEARTH_ERR_OUT_OF_MEMORY;
        }
        kv = &w->kvs[w->n_kv++];
        kv->key = k;
    } else {
        free(kv->enc.p);
    }
    kv->enc = enc;
    w->alignment = align;
    return HEARTH_OK;
}

hearth_status hl_gguf_writer_set_u32(gguf_writer *w, const char *key, uint32_t v) {
    gguf_value val = {.type = GGUF_TYPE_UINT32, .v.u64 = v};
    return hl_gguf_writer_set(w, key, &val);
}

hearth_status hl_gguf_writer_set_str(gguf_writer *w, const char *key, const char *s) {
    if (!s) return hl_fail(HEARTH_ERR_INVALID_ARG, "gguf_writer_set_str: NULL string");
    gguf_value val = {.type = GGUF_TYPE_STRING, .v.str = {s, strlen(s)}};
    return hl_gguf_writer_set(w, key, &val);
}

bool hl_gguf_writer_remove(gguf_writer *w, const char *key) {
    gw_kv *kv = w && !w->data_started ? find_kv(w, key) : NULL;
    if (!kv) return false;
    if (strcmp(key, "general.alignment") == 0) w->alignment = GGUF_DEFAULT_ALIGNMENT;
    free(kv->key);
    free(kv->enc.p);
    size_t i = (size_t)(kv - w->kvs);
    memmove(&w->kvs[i], &w->kvs[i + 1], (w->n_kv - i - 1) * sizeof *kv);
    w->n_kv--;
    return true;
}

hearth_status hl_gguf_writer_copy_kvs(gguf_writer *w, const gguf_file *f) {
    if (!w || !f) return hl_fail(HEARTH_ERR_INVALID_ARG, "gguf_writer_copy_kvs: NULL argument");
    for (uint64_t i = 0; i < hl_gguf_n_kv(f); i++) {
        const gguf_kv *kv = hl_gguf_kv_at(f, i);
        /* keys in a file may hold any byte but NUL (the reader checks); they
         * are at most GGUF_MAX_KEY_LEN bytes */
        char *key = hl_malloc((size_t)kv->key.len + 1);
        if (!key) return HEARTH_ERR_OUT_OF_MEMORY;
        memcpy(key, kv->key.data, (size_t)kv->key.len);
        key[kv->key.len] = '\0';
        hearth_status st = hl_gguf_writer_set(w, key, &kv->value);
        free(key);
        HL_TRY(st);
    }
    return HEARTH_OK;
}

/* ----------------------------------------------------------- tensors -- */

hearth_status hl_gguf_writer_add_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                                        const int64_t *ne) {
    if (!w || !name || !ne) return hl_fail(HEARTH_ERR_INVALID_ARG, "gguf_writer_add_tensor: NULL argument");
    HL_TRY(header_open(w, "adding a tensor"));
    size_t len = strlen(name);
    if (len == 0 || len > GGUF_MAX_TENSOR_NAME)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "GGUF writer: tensor name '%s' must be 1 to %d bytes", name,
                       GGUF_MAX_TENSOR_NAME);
    for (size_t i = 0; i < w->n_tensors; i++)
        if (strcmp(w->tensors[i].name, name) == 0)
            return hl_fail(HEARTH_ERR_INVALID_ARG, "GGUF writer: tensor '%s' added twice", name);
    const ggml_type_info *ti = hl_ggml_type_get(type);
    if (!ti) return hl_fail(HEARTH_ERR_INVALID_ARG, "GGUF writer: tensor '%s': unknown type %u", name, type);
    if (n_dims < 1 || n_dims > GGUF_MAX_DIMS)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "GGUF writer: tensor '%s': %u dimensions (1 to %d)", name, n_dims,
                       GGUF_MAX_DIMS);

    gw_tensor t = {.type = type, .n_dims = n_dims, .ne = {1, 1, 1, 1}};
    memcpy(t.name, name, len + 1);
    int64_t n = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        t.ne[d] = ne[d];
        if (ne[d] < 1 || __builtin_mul_overflow(n, ne[d], &n))
            return hl_fail(HEARTH_ERR_INVALID_ARG, "GGUF writer: tensor '%s': bad dimension %u (%" PRId64 ")", name, d,
                           ne[d]);
    }
    if (ne[0] % ti->blck_size != 0)
        return hl_fail(HEARTH_ERR_INVALID_ARG,
                       "GGUF writer: tensor '%s': %" PRId64 " columns are not a multiple of the %s block size %u", name,
                       ne[0], ti->name, ti->blck_size);
    if (__builtin_mul_overflow((uint64_t)(n / ti->blck_size), (uint64_t)ti->type_size, &t.size))
        return hl_fail(HEARTH_ERR_INVALID_ARG, "GGUF writer: tensor '%s' is too large", name);

    if (w->n_tensors == w->cap_tensors) {
        size_t cap = w->cap_tensors ? w->cap_tensors * 2 : 64;
        gw_tensor *p = realloc(w->tensors, cap * sizeof *p);
        if (!p) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory adding tensor '%s'", name);
        w->tensors = p;
        w->cap_tensors = cap;
    }
    w->tensors[w->n_tensors++] = t;
    return HEARTH_OK;
}

uint64_t hl_gguf_writer_tensor_size(const gguf_writer *w, uint64_t i) {
    return i < w->n_tensors ? w->tensors[i].size : 0;
}

/* -------------------------------------------------------------- data -- */

hearth_status hl_gguf_writer_begin_data(gguf_writer *w) {
    if (!w) return hl_fail(HEARTH_ERR_INVALID_ARG, "gguf_writer_begin_data: NULL writer");
    HL_TRY(header_open(w, "gguf_writer_begin_data"));
    w->data_started = true;

    /* offsets: each tensor starts at a multiple of the alignment */
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_tensors; i++) {
        gw_tensor *t = &w->tensors[i];
        t->offset = off;
        if (__builtin_add_overflow(off, t->size + pad_to(t->size, w->alignment), &off))
            return w->failed = hl_fail(HEARTH_ERR_INVALID_ARG, "GGUF writer: data section too large");
    }

    uint64_t header_len = 0;
    HL_TRY(out_put(w, "GGUF", 4));
    HL_TRY(out_put(w, &(uint32_t){GGUF_WRITE_VERSION}, 4));
    HL_TRY(out_put(w, &(uint64_t){w->n_tensors}, 8));
    HL_TRY(out_put(w, &(uint64_t){w->n_kv}, 8));
    header_len += 24;
    for (size_t i = 0; i < w->n_kv; i++) {
        const gw_kv *kv = &w->kvs[i];
        uint64_t klen = strlen(kv->key);
        HL_TRY(out_put(w, &klen, 8));
        HL_TRY(out_put(w, kv->key, (size_t)klen));
        HL_TRY(out_put(w, kv->enc.p, kv->enc.len));
        header_len += 8 + klen + kv->enc.len;
    }
    for (size_t i = 0; i < w->n_tensors; i++) {
        const gw_tensor *t = &w->tensors[i];
        uint64_t nlen = strlen(t->name);
        HL_TRY(out_put(w, &nlen, 8));
        HL_TRY(out_put(w, t->name, (size_t)nlen));
        HL_TRY(out_put(w, &t->n_dims, 4));
        HL_TRY(out_put(w, t->ne, 8 * (size_t)t->n_dims));
        HL_TRY(out_put(w, &t->type, 4));
        HL_TRY(out_put(w, &t->offset, 8));
        header_len += 8 + nlen + 4 + 8ull * t->n_dims + 4 + 8;
    }
    return out_zeros(w, pad_to(header_len, w->alignment));
}

hearth_status hl_gguf_writer_write(gguf_writer *w, const void *data, size_t n) {
    if (!w || (!data && n)) return hl_fail(HEARTH_ERR_INVALID_ARG, "gguf_writer_write: NULL argument");
    if (w->failed) return w->failed;
    if (!w->data_started || w->committed)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "GGUF writer '%s': data written outside begin_data..commit", w->path);
    const uint8_t *p = data;
    while (n > 0) {
        if (w->cur >= w->n_tensors)
            return hl_fail(HEARTH_ERR_INVALID_ARG, "GGUF writer '%s': %zu bytes of data past the last tensor", w->path,
                           n);
        const gw_tensor *t = &w->tensors[w->cur];
        uint64_t left = t->size - w->cur_done;
        size_t k = n < left ? n : (size_t)left;
        HL_TRY(out_put(w, p, k));
        p += k;
        n -= k;
        w->cur_done += k;
        if (w->cur_done == t->size) {
            HL_TRY(out_zeros(w, pad_to(t->size, w->alignment)));
            w->cur++;
            w->cur_done = 0;
        }
    }
    return HEARTH_OK;
}

hearth_status hl_gguf_writer_commit(gguf_writer *w) {
    if (!w) return hl_fail(HEARTH_ERR_INVALID_ARG, "gguf_writer_commit: NULL writer");
    if (w->failed) return w->failed;
    if (w->committed) return hl_fail(HEARTH_ERR_INVALID_ARG, "GGUF writer '%s': committed twice", w->path);
    if (!w->data_started) HL_TRY(hl_gguf_writer_begin_data(w));
    if (w->cur < w->n_tensors)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "GGUF writer '%s': tensor '%s' has %" PRIu64 " of its %" PRIu64 " bytes",
                       w->path, w->tensors[w->cur].name, w->cur_done, w->tensors[w->cur].size);
    HL_TRY(flush_out(w));
    /* Data on disk before the rename makes the name visible: after a crash
     * the file is either absent or complete. fsync of a device or pipe (IN_PLACE)
     * may be unsupported, which is fine. */
    if (fsync(w->fd) != 0 && errno != EINVAL && errno != EROFS && errno != ENOTSUP)
        return io_fail(w, "fsync failed", errno);
    int fd = w->fd;
    w->fd = -1;
    if (close(fd) != 0 && errno != EINTR) return io_fail(w, "close failed", errno);
    if (!(w->flags & GGUF_WRITE_IN_PLACE) && rename(w->tmp_path, w->path) != 0)
        return io_fail(w, "rename of the finished temporary file failed", errno);
    w->committed = true;
    return HEARTH_OK;
}
