/* GGUF writer tests: files written by gguf_write.c read back through the
 * validating reader (hl_gguf_open) with every metadata type (nested arrays and
 * string arrays included), overridden and removed keys, tensors of several
 * types and shapes, general.alignment honoured; a copy of a real model equal
 * key for key and byte for byte; misuse refused; and write failures (ENOSPC
 * on /dev/full, EFBIG past RLIMIT_FSIZE, a missing folder) reported as IO
 * with the path, leaving no file behind. test_quantize.py checks that gguf-py
 * reads the writer's files identically. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/status.h"
#include "check.h"
#include "gguf/ggml_types.h"
#include "gguf/gguf.h"
#include "gguf/gguf_write.h"

static char dir[64];

static const char *in_dir(const char *name) {
    static char buf[4][400];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%.300s", dir, name);
    return buf[k];
}

/* Entries of the test folder (besides . and ..). */
static int n_files(void) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    if (d) closedir(d);
    return n;
}

static void remove_all(void) {
    DIR *d = opendir(dir);
    char path[400];
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%.*s", dir, 300, e->d_name);
        unlink(path);
    }
    if (d) closedir(d);
}

/* ------------------------------------------------------ value equality -- */

static bool str_eq(gguf_str a, gguf_str b) {
    return a.len == b.len && (a.len == 0 || memcmp(a.data, b.data, (size_t)a.len) == 0);
}

static size_t elem_size(gguf_type t) {
    switch (t) {
    case GGUF_TYPE_UINT8:
    case GGUF_TYPE_INT8:
    case GGUF_TYPE_BOOL: return 1;
    case GGUF_TYPE_UINT16:
    case GGUF_TYPE_INT16: return 2;
    case GGUF_TYPE_UINT32:
    case GGUF_TYPE_INT32:
    case GGUF_TYPE_FLOAT32: return 4;
    default: return 8;
    }
}

static bool value_eq(const gguf_value *a, const gguf_value *b);

static bool array_eq(const gguf_array *a, const gguf_array *b) {
    if (a->elem_type != b->elem_type || a->n != b->n) return false;
    for (uint64_t i = 0; i < a->n; i++) {
        if (a->elem_type == GGUF_TYPE_STRING && !str_eq(a->strs[i], b->strs[i])) return false;
        if (a->elem_type == GGUF_TYPE_ARRAY && !value_eq(&a->arrs[i], &b->arrs[i])) return false;
    }
    if (a->elem_type != GGUF_TYPE_STRING && a->elem_type != GGUF_TYPE_ARRAY && a->n)
        return memcmp(a->raw, b->raw, (size_t)a->n * elem_size(a->elem_type)) == 0;
    return true;
}

static bool value_eq(const gguf_value *a, const gguf_value *b) {
    if (a->type != b->type) return false;
    switch (a->type) {
    case GGUF_TYPE_STRING: return str_eq(a->v.str, b->v.str);
    case GGUF_TYPE_ARRAY: return array_eq(&a->v.arr, &b->v.arr);
    case GGUF_TYPE_BOOL: return a->v.b == b->v.b;
    case GGUF_TYPE_FLOAT32: return (float)a->v.f64 == (float)b->v.f64;
    case GGUF_TYPE_FLOAT64: return a->v.f64 == b->v.f64;
    case GGUF_TYPE_INT8:
    case GGUF_TYPE_INT16:
    case GGUF_TYPE_INT32:
    case GGUF_TYPE_INT64: return a->v.i64 == b->v.i64;
    default: return a->v.u64 == b->v.u64;
    }
}

/* --------------------------------------------------- every value type -- */

#define N_SCALARS 12
static gguf_value scalars[N_SCALARS];
static const char *scalar_keys[N_SCALARS] = {
    "t.u8", "t.i8", "t.u16", "t.i16", "t.u32", "t.i32", "t.f32", "t.bool", "t.str", "t.u64", "t.i64", "t.f64",
};

static void make_scalars(void) {
    scalars[0] = (gguf_value){GGUF_TYPE_UINT8, .v.u64 = 200};
    scalars[1] = (gguf_value){GGUF_TYPE_INT8, .v.i64 = -100};
    scalars[2] = (gguf_value){GGUF_TYPE_UINT16, .v.u64 = 60000};
    scalars[3] = (gguf_value){GGUF_TYPE_INT16, .v.i64 = -30000};
    scalars[4] = (gguf_value){GGUF_TYPE_UINT32, .v.u64 = 4000000000u};
    scalars[5] = (gguf_value){GGUF_TYPE_INT32, .v.i64 = -2000000000};
    scalars[6] = (gguf_value){GGUF_TYPE_FLOAT32, .v.f64 = 1.5};
    scalars[7] = (gguf_value){GGUF_TYPE_BOOL, .v.b = true};
    scalars[8] = (gguf_value){GGUF_TYPE_STRING, .v.str = {"h\xc3\xa9llo, GGUF", 12}};
    scalars[9] = (gguf_value){GGUF_TYPE_UINT64, .v.u64 = (1ull << 63) + 5};
    scalars[10] = (gguf_value){GGUF_TYPE_INT64, .v.i64 = -(1ll << 62)};
    scalars[11] = (gguf_value){GGUF_TYPE_FLOAT64, .v.f64 = 3.25e-300};
}

static const int32_t i32s[] = {-1, 7, 2147483647};
static const float f32s[] = {0.5f, -2.0f};
static const uint8_t bools[] = {1, 0, 1};
static const uint64_t u64s[] = {1, 1ull << 60};
static const double f64s[] = {-1e300};
static const int16_t i16s[] = {-5, 5};
static const gguf_str strs[] = {{"a", 1}, {"", 0}, {"ccc", 3}};
static const int32_t in1[] = {1, 2}, in2[] = {3};
static const gguf_str s1[] = {{"x", 1}}, s2[] = {{"y", 1}, {"zz", 2}};

#define ARR(t, ptr, count)                                                                                             \
    ((gguf_value){GGUF_TYPE_ARRAY, .v.arr = {.elem_type = (t), .n = (count), .raw = (const uint8_t *)(ptr)}})

#define N_ARRAYS 12
static gguf_value arrays[N_ARRAYS];
static gguf_value nested_i32[2], nested_str[2], deep_inner[1], deep_mid[1];
static const char *array_keys[N_ARRAYS] = {
    "a.i32", "a.f32",       "a.bool",       "a.u64",        "a.f64",  "a.i16",
    "a.str", "a.empty_u32", "a.nested_i32", "a.nested_str", "a.deep", "a.empty_nested",
};

static void make_arrays(void) {
    arrays[0] = ARR(GGUF_TYPE_INT32, i32s, 3);
    arrays[1] = ARR(GGUF_TYPE_FLOAT32, f32s, 2);
    arrays[2] = ARR(GGUF_TYPE_BOOL, bools, 3);
    arrays[3] = ARR(GGUF_TYPE_UINT64, u64s, 2);
    arrays[4] = ARR(GGUF_TYPE_FLOAT64, f64s, 1);
    arrays[5] = ARR(GGUF_TYPE_INT16, i16s, 2);
    arrays[6] = (gguf_value){GGUF_TYPE_ARRAY, .v.arr = {.elem_type = GGUF_TYPE_STRING, .n = 3, .strs = strs}};
    arrays[7] = ARR(GGUF_TYPE_UINT32, NULL, 0);
    /* [[1, 2], [3]] */
    nested_i32[0] = ARR(GGUF_TYPE_INT32, in1, 2);
    nested_i32[1] = ARR(GGUF_TYPE_INT32, in2, 1);
    arrays[8] = (gguf_value){GGUF_TYPE_ARRAY, .v.arr = {.elem_type = GGUF_TYPE_ARRAY, .n = 2, .arrs = nested_i32}};
    /* [["x"], ["y", "zz"]] */
    nested_str[0] = (gguf_value){GGUF_TYPE_ARRAY, .v.arr = {.elem_type = GGUF_TYPE_STRING, .n = 1, .strs = s1}};
    nested_str[1] = (gguf_value){GGUF_TYPE_ARRAY, .v.arr = {.elem_type = GGUF_TYPE_STRING, .n = 2, .strs = s2}};
    arrays[9] = (gguf_value){GGUF_TYPE_ARRAY, .v.arr = {.elem_type = GGUF_TYPE_ARRAY, .n = 2, .arrs = nested_str}};
    /* [[[7, -1, 2147483647]]] */
    deep_inner[0] = ARR(GGUF_TYPE_INT32, i32s, 3);
    deep_mid[0] = (gguf_value){GGUF_TYPE_ARRAY, .v.arr = {.elem_type = GGUF_TYPE_ARRAY, .n = 1, .arrs = deep_inner}};
    arrays[10] = (gguf_value){GGUF_TYPE_ARRAY, .v.arr = {.elem_type = GGUF_TYPE_ARRAY, .n = 1, .arrs = deep_mid}};
    arrays[11] = (gguf_value){GGUF_TYPE_ARRAY, .v.arr = {.elem_type = GGUF_TYPE_ARRAY, .n = 0}};
}

typedef struct tspec {
    const char *name;
    uint32_t type, n_dims;
    int64_t ne[4];
} tspec;

static const tspec tensors[] = {
    {"norm.weight", GGML_TYPE_F32, 1, {5}}, /* 20 bytes: padding follows */
    {"f16.weight", GGML_TYPE_F16, 2, {3, 2}},
    {"q8.weight", GGML_TYPE_Q8_0, 2, {64, 3}},
    {"q4.weight", GGML_TYPE_Q4_0, 4, {32, 1, 2, 1}},
    {"a_name_of_exactly_sixty_three_bytes_for_the_limit_check_ok_ok12", GGML_TYPE_I8, 1, {3}},
};
#define N_TENSORS (sizeof tensors / sizeof tensors[0])

static size_t tensor_bytes(const tspec *t) {
    const ggml_type_info *ti = hl_ggml_type_get(t->type);
    size_t n = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) n *= (size_t)t->ne[d];
    return n / ti->blck_size * ti->type_size;
}

static uint8_t pattern(size_t tensor, size_t i) { return (uint8_t)(tensor * 37 + i * 11 + 1); }

/* Writes the file with every type; alignment 0 = leave general.alignment out. */
static hearth_status write_every_type(const char *path, uint32_t alignment) {
    gguf_writer *w;
    HL_TRY(hl_gguf_writer_create(path, 0, &w));
    hearth_status st = HEARTH_OK;
#define T(x)                                                                                                           \
    do {                                                                                                               \
        if ((st = (x)) != HEARTH_OK) goto out;                                                                         \
    } while (0)
    T(hl_gguf_writer_set_str(w, "general.name", "first"));
    for (int i = 0; i < N_SCALARS; i++) T(hl_gguf_writer_set(w, scalar_keys[i], &scalars[i]));
    for (int i = 0; i < N_ARRAYS; i++) T(hl_gguf_writer_set(w, array_keys[i], &arrays[i]));
    T(hl_gguf_writer_set_str(w, "general.name", "second")); /* override: keeps its place */
    T(hl_gguf_writer_set_u32(w, "to.remove", 1));
    CHECK(hl_gguf_writer_remove(w, "to.remove"));
    CHECK(!hl_gguf_writer_remove(w, "never.there"));
    if (alignment) T(hl_gguf_writer_set_u32(w, "general.alignment", alignment));
    for (size_t t = 0; t < N_TENSORS; t++)
        T(hl_gguf_writer_add_tensor(w, tensors[t].name, tensors[t].type, tensors[t].n_dims, tensors[t].ne));
    T(hl_gguf_writer_begin_data(w));
    /* the data of all tensors as one stream, in 7-byte chunks that straddle
     * tensor boundaries */
    uint8_t stream[4096];
    size_t len = 0;
    for (size_t t = 0; t < N_TENSORS; t++)
        for (size_t i = 0; i < tensor_bytes(&tensors[t]); i++) stream[len++] = pattern(t, i);
    for (size_t off = 0; off < len; off += 7) T(hl_gguf_writer_write(w, stream + off, len - off < 7 ? len - off : 7));
    T(hl_gguf_writer_commit(w));
out:
    hl_gguf_writer_free(w);
    return st;
#undef T
}

static void check_every_type(const char *path, uint32_t alignment) {
    gguf_file *f;
    hearth_status st = hl_gguf_open(path, &f);
    CHECK_MSG(st == HEARTH_OK, "%s", hearth_last_error());
    if (st != HEARTH_OK) return;
    CHECK(hl_gguf_version(f) == 3);
    CHECK(hl_gguf_n_kv(f) == 1 + N_SCALARS + N_ARRAYS + (alignment ? 1 : 0));
    CHECK(hl_gguf_alignment(f) == (alignment ? alignment : GGUF_DEFAULT_ALIGNMENT));
    const gguf_kv *name = hl_gguf_kv_at(f, 0);
    CHECK(hl_gguf_str_eq(name->key, "general.name") && hl_gguf_str_eq(name->value.v.str, "second"));
    for (int i = 0; i < N_SCALARS; i++) {
        const gguf_kv *kv = hl_gguf_find_kv(f, scalar_keys[i]);
        CHECK_MSG(kv && value_eq(&kv->value, &scalars[i]), "%s", scalar_keys[i]);
        CHECK(kv == hl_gguf_kv_at(f, 1 + (uint64_t)i)); /* file order = order set */
    }
    for (int i = 0; i < N_ARRAYS; i++) {
        const gguf_kv *kv = hl_gguf_find_kv(f, array_keys[i]);
        CHECK_MSG(kv && value_eq(&kv->value, &arrays[i]), "%s", array_keys[i]);
    }
    CHECK(!hl_gguf_find_kv(f, "to.remove"));
    CHECK(hl_gguf_n_tensors(f) == N_TENSORS);
    size_t data_size;
    const uint8_t *base = hl_gguf_data(f, &data_size);
    uint64_t end = 0;
    for (size_t t = 0; t < N_TENSORS; t++) {
        const gguf_tensor *gt = hl_gguf_tensor_at(f, t);
        CHECK(hl_gguf_str_eq(gt->name, tensors[t].name) && gt->type == tensors[t].type);
        CHECK(gt->n_dims == tensors[t].n_dims);
        for (uint32_t d = 0; d < gt->n_dims; d++) CHECK(gt->ne[d] == tensors[t].ne[d]);
        CHECK(gt->size == tensor_bytes(&tensors[t]));
        CHECK_MSG(gt->offset % hl_gguf_alignment(f) == 0, "%s at %llu", tensors[t].name,
                  (unsigned long long)gt->offset);
        CHECK(((const uint8_t *)gt->data - base) % hl_gguf_alignment(f) == 0);
        bool same = true;
        for (size_t i = 0; i < gt->size; i++) same &= ((const uint8_t *)gt->data)[i] == pattern(t, i);
        CHECK_MSG(same, "data of %s", tensors[t].name);
        end = (uint64_t)((const uint8_t *)gt->data - base) + gt->size;
    }
    /* the last tensor is padded too, as ggml and gguf-py write files */
    uint32_t a = hl_gguf_alignment(f);
    CHECK(data_size == end + (a - end % a) % a);
    hl_gguf_close(f);
}

static void test_every_type(void) {
    make_scalars();
    make_arrays();
    const uint32_t aligns[] = {0, 64, 1, 4096};
    for (int i = 0; i < 4; i++) {
        const char *path = in_dir("every.gguf");
        hearth_status st = write_every_type(path, aligns[i]);
        CHECK_MSG(st == HEARTH_OK, "alignment %u: %s", aligns[i], hearth_last_error());
        check_every_type(path, aligns[i]);
        CHECK(n_files() == 1); /* no temporary file left */
        unlink(path);
    }
}

/* ------------------------------------------------------- model copy -- */

static void test_copy_model(void) {
    const char *src = check_test_path("reference/tiny/tiny-f32.gguf");
    const char *dst = in_dir("copy.gguf");
    gguf_file *in, *out;
    if (hl_gguf_open(src, &in) != HEARTH_OK) {
        CHECK_MSG(false, "%s", hearth_last_error());
        return;
    }
    gguf_writer *w;
    CHECK(hl_gguf_writer_create(dst, 0, &w) == HEARTH_OK);
    CHECK(hl_gguf_writer_copy_kvs(w, in) == HEARTH_OK);
    for (uint64_t i = 0; i < hl_gguf_n_tensors(in); i++) {
        const gguf_tensor *t = hl_gguf_tensor_at(in, i);
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.data);
        CHECK(hl_gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne) == HEARTH_OK);
        CHECK(hl_gguf_writer_tensor_size(w, i) == t->size);
    }
    CHECK(hl_gguf_writer_begin_data(w) == HEARTH_OK);
    for (uint64_t i = 0; i < hl_gguf_n_tensors(in); i++) {
        const gguf_tensor *t = hl_gguf_tensor_at(in, i);
        CHECK(hl_gguf_writer_write(w, t->data, (size_t)t->size) == HEARTH_OK);
    }
    CHECK(hl_gguf_writer_commit(w) == HEARTH_OK);
    hl_gguf_writer_free(w);

    CHECK_MSG(hl_gguf_open(dst, &out) == HEARTH_OK, "%s", hearth_last_error());
    if (out) {
        CHECK(hl_gguf_n_kv(out) == hl_gguf_n_kv(in) && hl_gguf_n_tensors(out) == hl_gguf_n_tensors(in));
        for (uint64_t i = 0; i < hl_gguf_n_kv(in) && i < hl_gguf_n_kv(out); i++) {
            const gguf_kv *a = hl_gguf_kv_at(in, i), *b = hl_gguf_kv_at(out, i);
            CHECK_MSG(str_eq(a->key, b->key) && value_eq(&a->value, &b->value), "key %.*s", (int)a->key.len,
                      a->key.data);
        }
        for (uint64_t i = 0; i < hl_gguf_n_tensors(in) && i < hl_gguf_n_tensors(out); i++) {
            const gguf_tensor *a = hl_gguf_tensor_at(in, i), *b = hl_gguf_tensor_at(out, i);
            CHECK(str_eq(a->name, b->name) && a->type == b->type && a->size == b->size && a->offset == b->offset &&
                  memcmp(a->data, b->data, (size_t)a->size) == 0);
        }
        /* the reader's files are laid out as ggml does: the copy is the same file */
        size_t na, nb;
        const void *pa = hl_gguf_data(in, &na), *pb = hl_gguf_data(out, &nb);
        CHECK(na == nb && memcmp(pa, pb, na) == 0);
        hl_gguf_close(out);
    }
    hl_gguf_close(in);
    unlink(dst);
}

/* ------------------------------------------------------------ misuse -- */

static void test_misuse(void) {
    const char *path = in_dir("misuse.gguf");
    gguf_writer *w;
    CHECK(hl_gguf_writer_create(path, 0, &w) == HEARTH_OK);
    const int64_t ne[2] = {33, 2}, ok[2] = {32, 2};
    CHECK(n_files() == 1); /* the temporary file, not yet the path */
    CHECK(access(path, F_OK) != 0);
    CHECK(hl_gguf_writer_add_tensor(w, "x", GGML_TYPE_Q4_0, 2, ne) == HEARTH_ERR_INVALID_ARG);
    CHECK(strstr(hearth_last_error(), "block size"));
    CHECK(hl_gguf_writer_add_tensor(w, "x", 4, 2, ok) == HEARTH_ERR_INVALID_ARG); /* removed Q4_2 */
    CHECK(hl_gguf_writer_add_tensor(w, "x", GGML_TYPE_F32, 0, ok) == HEARTH_ERR_INVALID_ARG);
    CHECK(hl_gguf_writer_add_tensor(w, "x", GGML_TYPE_F32, 5, ok) == HEARTH_ERR_INVALID_ARG);
    CHECK(hl_gguf_writer_add_tensor(w, "", GGML_TYPE_F32, 2, ok) == HEARTH_ERR_INVALID_ARG);
    CHECK(hl_gguf_writer_add_tensor(w, "a_name_of_sixty_four_bytes_which_is_one_byte_over_the_limit_ok_o",
                                    GGML_TYPE_F32, 2, ok) == HEARTH_ERR_INVALID_ARG);
    const int64_t zero[2] = {32, 0};
    CHECK(hl_gguf_writer_add_tensor(w, "x", GGML_TYPE_F32, 2, zero) == HEARTH_ERR_INVALID_ARG);
    CHECK(hl_gguf_writer_add_tensor(w, "x", GGML_TYPE_Q4_0, 2, ok) == HEARTH_OK);
    CHECK(hl_gguf_writer_add_tensor(w, "x", GGML_TYPE_Q4_0, 2, ok) == HEARTH_ERR_INVALID_ARG); /* twice */
    CHECK(hl_gguf_writer_add_tensor(w, "y", GGML_TYPE_F32, 1, ok) == HEARTH_OK);

    CHECK(hl_gguf_writer_set_u32(w, "general.alignment", 3) == HEARTH_ERR_INVALID_ARG);
    CHECK(hl_gguf_writer_set_u32(w, "general.alignment", 0) == HEARTH_ERR_INVALID_ARG);
    gguf_value a64 = {GGUF_TYPE_UINT64, .v.u64 = 32};
    CHECK(hl_gguf_writer_set(w, "general.alignment", &a64) == HEARTH_ERR_INVALID_ARG);
    gguf_value big = {GGUF_TYPE_UINT8, .v.u64 = 300};
    CHECK(hl_gguf_writer_set(w, "k", &big) == HEARTH_ERR_INVALID_ARG);
    gguf_value small = {GGUF_TYPE_INT16, .v.i64 = -40000};
    CHECK(hl_gguf_writer_set(w, "k", &small) == HEARTH_ERR_INVALID_ARG);
    gguf_value bad = {(gguf_type)13, .v.u64 = 0};
    CHECK(hl_gguf_writer_set(w, "k", &bad) == HEARTH_ERR_INVALID_ARG);
    static const uint8_t two = 2;
    gguf_value bad_bool = ARR(GGUF_TYPE_BOOL, &two, 1);
    CHECK(hl_gguf_writer_set(w, "k", &bad_bool) == HEARTH_ERR_INVALID_ARG);
    CHECK(hl_gguf_writer_set_u32(w, "", 1) == HEARTH_ERR_INVALID_ARG);
    /* 9 levels of nesting: one more than the reader accepts */
    gguf_value lv[9];
    lv[0] = ARR(GGUF_TYPE_INT32, i32s, 1);
    for (int i = 1; i < 9; i++)
        lv[i] = (gguf_value){GGUF_TYPE_ARRAY, .v.arr = {.elem_type = GGUF_TYPE_ARRAY, .n = 1, .arrs = &lv[i - 1]}};
    CHECK(hl_gguf_writer_set(w, "deep", &lv[7]) == HEARTH_OK);
    CHECK(hl_gguf_writer_set(w, "too.deep", &lv[8]) == HEARTH_ERR_INVALID_ARG);

    CHECK(hl_gguf_writer_write(w, "abc", 3) == HEARTH_ERR_INVALID_ARG); /* before begin_data */
    CHECK(hl_gguf_writer_begin_data(w) == HEARTH_OK);
    CHECK(hl_gguf_writer_set_u32(w, "late", 1) == HEARTH_ERR_INVALID_ARG);
    CHECK(hl_gguf_writer_add_tensor(w, "z", GGML_TYPE_F32, 1, ok) == HEARTH_ERR_INVALID_ARG);
    uint8_t data[64 * 4] = {0};
    CHECK(hl_gguf_writer_write(w, data, 36) == HEARTH_OK);     /* 2 rows of Q4_0 = 36 bytes */
    CHECK(hl_gguf_writer_commit(w) == HEARTH_ERR_INVALID_ARG); /* y is missing */
    CHECK(strstr(hearth_last_error(), "'y'") != NULL);
    CHECK(hl_gguf_writer_write(w, data, 32 * 4 + 1) == HEARTH_ERR_INVALID_ARG); /* one byte too many */
    hl_gguf_writer_free(w);
    CHECK(n_files() == 0); /* an uncommitted file disappears */
    CHECK(access(path, F_OK) != 0);

    /* nested array written, read back */
    CHECK(hl_gguf_writer_create(path, 0, &w) == HEARTH_OK);
    CHECK(hl_gguf_writer_set(w, "deep", &lv[7]) == HEARTH_OK);
    CHECK(hl_gguf_writer_commit(w) == HEARTH_OK);
    hl_gguf_writer_free(w);
    gguf_file *f;
    CHECK(hl_gguf_open(path, &f) == HEARTH_OK);
    if (f) {
        CHECK(value_eq(&hl_gguf_find_kv(f, "deep")->value, &lv[7]));
        hl_gguf_close(f);
    }
    unlink(path);
}

/* ----------------------------------------------------------- failure -- */

static void test_bad_paths(void) {
    gguf_writer *w = NULL;
    const char *missing = in_dir("no/such/folder/out.gguf");
    CHECK(hl_gguf_writer_create(missing, 0, &w) == HEARTH_ERR_IO && !w);
    CHECK(strstr(hearth_last_error(), missing) && strstr(hearth_last_error(), "does not exist"));
    CHECK(hl_gguf_writer_create(dir, 0, &w) == HEARTH_ERR_IO && !w);
    CHECK(strstr(hearth_last_error(), "directory"));
    CHECK(hl_gguf_writer_create("", 0, &w) == HEARTH_ERR_INVALID_ARG);
    CHECK(n_files() == 0);
}

/* Writes one tensor of `bytes` bytes to path; returns the commit's status. */
static hearth_status write_big(const char *path, unsigned flags, size_t bytes) {
    gguf_writer *w;
    HL_TRY(hl_gguf_writer_create(path, flags, &w));
    const int64_t ne[1] = {(int64_t)bytes};
    uint8_t *data = calloc(1, bytes);
    hearth_status st = hl_gguf_writer_add_tensor(w, "big", GGML_TYPE_I8, 1, ne);
    if (st == HEARTH_OK) st = hl_gguf_writer_begin_data(w);
    for (size_t off = 0; st == HEARTH_OK && off < bytes; off += 100000)
        st = hl_gguf_writer_write(w, data + off, bytes - off < 100000 ? bytes - off : 100000);
    if (st == HEARTH_OK) st = hl_gguf_writer_commit(w);
    hl_gguf_writer_free(w);
    free(data);
    return st;
}

static void test_disk_full(void) {
    if (access("/dev/full", W_OK) != 0) {
        printf("note: no /dev/full; ENOSPC not tested\n");
        return;
    }
    hearth_status st = write_big("/dev/full", GGUF_WRITE_IN_PLACE, 3u << 20);
    CHECK(st == HEARTH_ERR_IO);
    CHECK_MSG(strstr(hearth_last_error(), "'/dev/full'") && strstr(hearth_last_error(), strerror(ENOSPC)), "%s",
              hearth_last_error());
}

/* A file size limit makes write() fail with EFBIG mid-file: the error is IO
 * and the temporary file is gone. In a child, so the limit stays there. */
static void test_file_too_large(void) {
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {100000, 100000};
        setrlimit(RLIMIT_FSIZE, &rl);
        hearth_status st = write_big(in_dir("big.gguf"), 0, 3u << 20);
        bool ok = st == HEARTH_ERR_IO && strstr(hearth_last_error(), "big.gguf") &&
                  strstr(hearth_last_error(), strerror(EFBIG));
        if (!ok) fprintf(stderr, "EFBIG case: status %d: %s\n", st, hearth_last_error());
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(n_files() == 0);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/hearth-gguf-write-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_every_type();
    test_copy_model();
    test_misuse();
    test_bad_paths();
    test_disk_full();
    test_file_too_large();
    remove_all();
    rmdir(dir);
    return check_report();
}
