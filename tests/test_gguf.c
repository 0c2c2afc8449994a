/* Tests of the GGUF reader (src/gguf) and the ggml type table: valid v2 and v3
 * images with every value type round-trip through the getters; one crafted
 * file per published llama.cpp GGUF vulnerability class must fail with
 * HEARTH_ERR_FORMAT and a one-line message naming the culprit; every prefix of
 * a valid file must fail cleanly; a seeded mutation loop must never crash;
 * hl_gguf_open() is tried on the file system and, when HEARTH_MODEL exists, on
 * the real model. Images are copied to buffers of their exact size so that
 * AddressSanitizer catches any read past the end. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "gguf/ggml_types.h"
#include "gguf/gguf.h"
#include "gguf_craft.h"

/* ------------------------------------------------------------ helpers -- */

/* Opens an exact-size private copy of the first len bytes of c. */
static hearth_status open_prefix(const craft *c, size_t len, uint8_t **copy, gguf_file **f) {
    *copy = malloc(len ? len : 1);
    if (!*copy) abort();
    memcpy(*copy, c->p, len);
    return hl_gguf_open_memory(*copy, len, f);
}

/* The image must fail with FORMAT, no file, and a one-line message that
 * contains `needle`. */
static void expect_format_at(const craft *c, const char *needle, int line) {
    uint8_t *copy;
    gguf_file *f = NULL;
    hearth_status st = open_prefix(c, c->len, &copy, &f);
    const char *msg = hearth_last_error();
    CHECK_MSG(st == HEARTH_ERR_FORMAT, "line %d: status %d, message '%s'", line, st, msg);
    CHECK_MSG(f == NULL, "line %d: file returned on error", line);
    CHECK_MSG(strstr(msg, needle) != NULL, "line %d: message '%s' lacks '%s'", line, msg, needle);
    CHECK_MSG(strchr(msg, '\n') == NULL, "line %d: message has a newline", line);
    hl_gguf_close(f);
    free(copy);
}
#define expect_format(c, needle) expect_format_at((c), (needle), __LINE__)

/* Bytes of a tensor, from the type table. */
static uint64_t tensor_bytes(uint32_t type, const int64_t ne[4]) {
    const ggml_type_info *ti = hl_ggml_type_get(type);
    return (uint64_t)(ne[0] / ti->blck_size) * ti->type_size * (uint64_t)(ne[1] * ne[2] * ne[3]);
}

/* A file with one kv and one tensor whose data section holds data_bytes. */
static void one_tensor_file(craft *c, const char *name, uint32_t type, uint32_t n_dims, const int64_t *ne,
                            uint64_t offset, uint64_t data_bytes) {
    cr_begin(c, 3);
    cr_kv_str(c, "general.architecture", "llama");
    cr_tensor(c, name, type, n_dims, ne, offset);
    cr_finish(c, GGUF_DEFAULT_ALIGNMENT, data_bytes);
}

/* A file with the architecture key, then one key `key` of `type` whose value
 * the caller writes, then nothing. */
static void one_key_begin(craft *c, const char *key, gguf_type type) {
    cr_begin(c, 3);
    cr_kv_str(c, "general.architecture", "llama");
    cr_key(c, key, type);
}

/* -------------------------------------------------------- a valid file -- */

typedef struct test_tensor {
    const char *name;
    uint32_t type;
    uint32_t n_dims;
    int64_t ne[4];
    uint64_t offset;
} test_tensor;

/* Offsets are multiples of 64 and out of file order; sizes: 204, 288, 256, 240. */
static const test_tensor valid_tensors[] = {
    {"token_embd.weight", GGML_TYPE_Q8_0, 2, {64, 3, 1, 1}, 0},
    {"blk.0.attn_q.weight", GGML_TYPE_Q4_K, 2, {256, 2, 1, 1}, 512},
    {"output_norm.weight", GGML_TYPE_F32, 1, {64, 1, 1, 1}, 256},
    {"blk.0.ffn.weight", GGML_TYPE_F16, 4, {2, 3, 4, 5}, 832},
};
#define N_VALID_TENSORS 4
#define VALID_DATA_BYTES 1072 /* 832 + 240 */

static void write_scalar_kvs(craft *c) {
    cr_key(c, "t.u8", GGUF_TYPE_UINT8);
    cr_u8(c, 200);
    cr_key(c, "t.i8", GGUF_TYPE_INT8);
    cr_u8(c, (uint8_t)-100);
    cr_key(c, "t.u16", GGUF_TYPE_UINT16);
    cr_u16(c, 60000);
    cr_key(c, "t.i16", GGUF_TYPE_INT16);
    cr_u16(c, (uint16_t)-30000);
    cr_kv_u32(c, "t.u32", 4000000000u);
    cr_key(c, "t.i32", GGUF_TYPE_INT32);
    cr_u32(c, (uint32_t)-2000000000);
    cr_key(c, "t.f32", GGUF_TYPE_FLOAT32);
    cr_f32(c, 1.5f);
    cr_key(c, "t.bool", GGUF_TYPE_BOOL);
    cr_u8(c, 1);
    cr_kv_str(c, "t.str", "hello");
    cr_kv_str(c, "t.str.empty", "");
    cr_key(c, "t.u64", GGUF_TYPE_UINT64);
    cr_u64(c, (1ull << 63) + 5);
    cr_key(c, "t.u64.small", GGUF_TYPE_UINT64);
    cr_u64(c, 7);
    cr_key(c, "t.i64", GGUF_TYPE_INT64);
    cr_i64(c, -(1ll << 40));
    cr_key(c, "t.i64.small", GGUF_TYPE_INT64);
    cr_i64(c, -7);
    cr_key(c, "t.i64.big", GGUF_TYPE_INT64);
    cr_i64(c, 5000000000);
    cr_key(c, "t.f64", GGUF_TYPE_FLOAT64);
    cr_f64(c, 2.25);
    cr_key(c, "t.f64.huge", GGUF_TYPE_FLOAT64);
    cr_f64(c, 1e300);
}

static void write_array_kvs(craft *c) {
    cr_key(c, "t.arr.u8", GGUF_TYPE_ARRAY);
    cr_arr(c, GGUF_TYPE_UINT8, 3);
    for (uint8_t i = 1; i <= 3; i++) cr_u8(c, i);
    cr_key(c, "t.arr.i32", GGUF_TYPE_ARRAY);
    cr_arr(c, GGUF_TYPE_INT32, 3);
    cr_u32(c, (uint32_t)-1);
    cr_u32(c, 2);
    cr_u32(c, INT32_MAX);
    cr_key(c, "t.arr.u32", GGUF_TYPE_ARRAY);
    cr_arr(c, GGUF_TYPE_UINT32, 2);
    cr_u32(c, 1);
    cr_u32(c, UINT32_MAX);
    cr_key(c, "t.arr.f32", GGUF_TYPE_ARRAY);
    cr_arr(c, GGUF_TYPE_FLOAT32, 2);
    cr_f32(c, 0.5f);
    cr_f32(c, -2.0f);
    cr_key(c, "t.arr.bool", GGUF_TYPE_ARRAY);
    cr_arr(c, GGUF_TYPE_BOOL, 3);
    cr_u8(c, 1);
    cr_u8(c, 0);
    cr_u8(c, 1);
    cr_key(c, "t.arr.u64", GGUF_TYPE_ARRAY);
    cr_arr(c, GGUF_TYPE_UINT64, 1);
    cr_u64(c, UINT64_MAX);
    cr_key(c, "t.arr.f64", GGUF_TYPE_ARRAY);
    cr_arr(c, GGUF_TYPE_FLOAT64, 1);
    cr_f64(c, -0.125);
    cr_key(c, "t.arr.str", GGUF_TYPE_ARRAY);
    cr_arr(c, GGUF_TYPE_STRING, 3);
    cr_str(c, "a");
    cr_str(c, "");
    cr_str(c, "ccc");
    cr_key(c, "t.arr.empty", GGUF_TYPE_ARRAY);
    cr_arr(c, GGUF_TYPE_INT32, 0);
}

/* [[1, 2], [3]] and a string array nested GGUF_MAX_ARRAY_DEPTH deep. */
static void write_nested_kvs(craft *c) {
    cr_key(c, "t.nested", GGUF_TYPE_ARRAY);
    cr_arr(c, GGUF_TYPE_ARRAY, 2);
    cr_arr(c, GGUF_TYPE_INT32, 2);
    cr_u32(c, 1);
    cr_u32(c, 2);
    cr_arr(c, GGUF_TYPE_INT32, 1);
    cr_u32(c, 3);
    cr_key(c, "t.nested.deep", GGUF_TYPE_ARRAY);
    for (int level = 1; level < GGUF_MAX_ARRAY_DEPTH; level++) cr_arr(c, GGUF_TYPE_ARRAY, 1);
    cr_arr(c, GGUF_TYPE_STRING, 1);
    cr_str(c, "deep");
}

/* A valid image; alignment other than the default is written as a key. */
static void build_valid(craft *c, uint32_t version, uint32_t alignment) {
    cr_begin(c, version);
    cr_kv_str(c, "general.architecture", "llama");
    if (alignment != GGUF_DEFAULT_ALIGNMENT) cr_kv_u32(c, "general.alignment", alignment);
    write_scalar_kvs(c);
    write_array_kvs(c);
    write_nested_kvs(c);
    cr_key(c, "tokenizer.ggml.tokens", GGUF_TYPE_ARRAY);
    cr_arr(c, GGUF_TYPE_STRING, 3);
    cr_str(c, "<s>");
    cr_str(c, "</s>");
    cr_str(c, "hi");
    for (int i = 0; i < N_VALID_TENSORS; i++) {
        const test_tensor *t = &valid_tensors[i];
        cr_tensor(c, t->name, t->type, t->n_dims, t->ne, t->offset);
    }
    cr_finish(c, alignment, VALID_DATA_BYTES);
}

static void check_valid_tensors(const gguf_file *f, const uint8_t *base) {
    CHECK(hl_gguf_n_tensors(f) == N_VALID_TENSORS);
    for (int i = 0; i < N_VALID_TENSORS; i++) {
        const test_tensor *want = &valid_tensors[i];
        const gguf_tensor *t = hl_gguf_find_tensor(f, want->name);
        CHECK_MSG(t != NULL && t == hl_gguf_tensor_at(f, (uint64_t)i), "tensor %s", want->name);
        if (!t) continue;
        CHECK(hl_gguf_str_eq(t->name, want->name));
        CHECK(t->type == want->type && t->n_dims == want->n_dims && t->offset == want->offset);
        for (int d = 0; d < 4; d++) CHECK(t->ne[d] == want->ne[d]);
        CHECK(t->size == tensor_bytes(want->type, want->ne));
        const uint8_t *data = t->data;
        CHECK((size_t)(data - base) % hl_gguf_alignment(f) == 0);
        CHECK(data[0] == cr_pattern(t->offset));
        CHECK(data[t->size - 1] == cr_pattern(t->offset + t->size - 1));
    }
    CHECK(hl_gguf_tensor_at(f, N_VALID_TENSORS) == NULL);
    CHECK(hl_gguf_find_tensor(f, "token_embd") == NULL);
    CHECK(hl_gguf_find_tensor(f, "token_embd.weightx") == NULL);
    CHECK(hl_gguf_find_tensor(f, "") == NULL);
}

static void check_valid_nested(const gguf_file *f) {
    const gguf_array *a = NULL;
    CHECK(hl_gguf_get_arr(f, "t.nested", true, GGUF_TYPE_ARRAY, &a) == HEARTH_OK);
    if (a) {
        CHECK(a->n == 2 && a->arrs[0].type == GGUF_TYPE_ARRAY);
        const gguf_array *a0 = &a->arrs[0].v.arr, *a1 = &a->arrs[1].v.arr;
        CHECK(a0->elem_type == GGUF_TYPE_INT32 && a0->n == 2);
        CHECK(hl_gguf_arr_i32(a0, 0) == 1 && hl_gguf_arr_i32(a0, 1) == 2);
        CHECK(a1->n == 1 && hl_gguf_arr_i32(a1, 0) == 3);
    }
    a = NULL;
    CHECK(hl_gguf_get_arr(f, "t.nested.deep", true, GGUF_TYPE_ARRAY, &a) == HEARTH_OK);
    for (int level = 1; a && level < GGUF_MAX_ARRAY_DEPTH; level++) {
        CHECK(a->n == 1 && a->arrs[0].type == GGUF_TYPE_ARRAY);
        a = &a->arrs[0].v.arr;
    }
    CHECK(a && a->elem_type == GGUF_TYPE_STRING && a->n == 1 && hl_gguf_str_eq(a->strs[0], "deep"));
}

static void check_valid_arrays(const gguf_file *f) {
    const gguf_array *a = NULL;
    CHECK(hl_gguf_get_arr(f, "t.arr.u8", true, GGUF_TYPE_UINT8, &a) == HEARTH_OK);
    CHECK(a && a->n == 3 && a->raw[0] == 1 && a->raw[2] == 3);
    CHECK(hl_gguf_get_arr(f, "t.arr.i32", true, GGUF_TYPE_INT32, &a) == HEARTH_OK);
    CHECK(a->n == 3 && hl_gguf_arr_i32(a, 0) == -1 && hl_gguf_arr_i32(a, 2) == INT32_MAX);
    CHECK(hl_gguf_get_arr(f, "t.arr.u32", true, GGUF_TYPE_UINT32, &a) == HEARTH_OK);
    CHECK(a->n == 2 && hl_gguf_arr_u32(a, 1) == UINT32_MAX);
    CHECK(hl_gguf_get_arr(f, "t.arr.f32", true, GGUF_TYPE_FLOAT32, &a) == HEARTH_OK);
    CHECK(a->n == 2 && hl_gguf_arr_f32(a, 0) == 0.5f && hl_gguf_arr_f32(a, 1) == -2.0f);
    CHECK(hl_gguf_get_arr(f, "t.arr.bool", true, GGUF_TYPE_BOOL, &a) == HEARTH_OK);
    CHECK(a->n == 3 && a->raw[0] == 1 && a->raw[1] == 0 && a->raw[2] == 1);
    uint64_t u64;
    double f64;
    CHECK(hl_gguf_get_arr(f, "t.arr.u64", true, GGUF_TYPE_UINT64, &a) == HEARTH_OK);
    memcpy(&u64, a->raw, 8);
    CHECK(a->n == 1 && u64 == UINT64_MAX);
    CHECK(hl_gguf_get_arr(f, "t.arr.f64", true, GGUF_TYPE_FLOAT64, &a) == HEARTH_OK);
    memcpy(&f64, a->raw, 8);
    CHECK(a->n == 1 && f64 == -0.125);
    CHECK(hl_gguf_get_arr(f, "t.arr.str", true, GGUF_TYPE_STRING, &a) == HEARTH_OK);
    CHECK(a->n == 3 && hl_gguf_str_eq(a->strs[0], "a") && a->strs[1].len == 0);
    CHECK(hl_gguf_str_eq(a->strs[2], "ccc"));
    CHECK(hl_gguf_get_arr(f, "t.arr.empty", true, GGUF_TYPE_INT32, &a) == HEARTH_OK);
    CHECK(a->n == 0);
    CHECK(hl_gguf_get_arr(f, "tokenizer.ggml.tokens", true, GGUF_TYPE_STRING, &a) == HEARTH_OK);
    CHECK(a->n == 3 && hl_gguf_str_eq(a->strs[1], "</s>"));
    check_valid_nested(f);
}

static void test_valid(uint32_t version, uint32_t alignment) {
    craft c;
    build_valid(&c, version, alignment);
    uint8_t *copy;
    gguf_file *f = NULL;
    hearth_status st = open_prefix(&c, c.len, &copy, &f);
    CHECK_MSG(st == HEARTH_OK, "v%u alignment %u: %s", version, alignment, hearth_last_error());
    if (st == HEARTH_OK) {
        CHECK(hl_gguf_version(f) == version);
        CHECK(hl_gguf_alignment(f) == alignment);
        CHECK(hl_gguf_n_kv(f) == c.n_kv);
        CHECK(hl_gguf_str_eq(hl_gguf_kv_at(f, 0)->key, "general.architecture"));
        CHECK(hl_gguf_kv_at(f, c.n_kv) == NULL);
        size_t size = 0;
        CHECK(hl_gguf_data(f, &size) == copy && size == c.len);
        CHECK(hl_gguf_find_kv(f, "t.u") == NULL && hl_gguf_find_kv(f, "t.u8") != NULL);
        CHECK(hl_gguf_find_kv(f, "zzz") == NULL && hl_gguf_find_kv(f, "") == NULL);
        check_valid_tensors(f, copy);
        check_valid_arrays(f);
    }
    hl_gguf_close(f);
    free(copy);
    cr_free(&c);
}

/* ------------------------------------------------------------ getters -- */

/* Getter `call` must fail with FORMAT naming `needle`, leaving out as it was. */
#define EXPECT_GET_FAIL(call, needle)                                                                                  \
    do {                                                                                                               \
        hearth_status st_ = (call);                                                                                    \
        CHECK_MSG(st_ == HEARTH_ERR_FORMAT, "%s: status %d", #call, st_);                                              \
        CHECK_MSG(strstr(hearth_last_error(), needle), "%s: '%s' lacks '%s'", #call, hearth_last_error(), needle);     \
    } while (0)

static void test_int_getters(const gguf_file *f) {
    uint32_t u = 0;
    int32_t i = 0;
    CHECK(hl_gguf_get_u32(f, "t.u8", true, &u) == HEARTH_OK && u == 200);
    CHECK(hl_gguf_get_u32(f, "t.u16", true, &u) == HEARTH_OK && u == 60000);
    CHECK(hl_gguf_get_u32(f, "t.u32", true, &u) == HEARTH_OK && u == 4000000000u);
    CHECK(hl_gguf_get_u32(f, "t.u64.small", true, &u) == HEARTH_OK && u == 7);
    u = 12345;
    EXPECT_GET_FAIL(hl_gguf_get_u32(f, "t.i32", true, &u), "t.i32");
    EXPECT_GET_FAIL(hl_gguf_get_u32(f, "t.u64", true, &u), "out of range for uint32");
    EXPECT_GET_FAIL(hl_gguf_get_u32(f, "t.i64.small", true, &u), "t.i64.small");
    EXPECT_GET_FAIL(hl_gguf_get_u32(f, "t.i64.big", true, &u), "5000000000, out of range for uint32");
    EXPECT_GET_FAIL(hl_gguf_get_u32(f, "t.str", true, &u), "has type string");
    EXPECT_GET_FAIL(hl_gguf_get_u32(f, "t.f32", true, &u), "t.f32");
    EXPECT_GET_FAIL(hl_gguf_get_u32(f, "t.bool", true, &u), "t.bool");
    EXPECT_GET_FAIL(hl_gguf_get_u32(f, "t.arr.u32", true, &u), "array of uint32");
    CHECK(u == 12345);

    CHECK(hl_gguf_get_i32(f, "t.i8", true, &i) == HEARTH_OK && i == -100);
    CHECK(hl_gguf_get_i32(f, "t.i16", true, &i) == HEARTH_OK && i == -30000);
    CHECK(hl_gguf_get_i32(f, "t.i32", true, &i) == HEARTH_OK && i == -2000000000);
    CHECK(hl_gguf_get_i32(f, "t.i64.small", true, &i) == HEARTH_OK && i == -7);
    CHECK(hl_gguf_get_i32(f, "t.u16", true, &i) == HEARTH_OK && i == 60000);
    i = 777;
    EXPECT_GET_FAIL(hl_gguf_get_i32(f, "t.u32", true, &i), "4000000000, out of range for int32");
    EXPECT_GET_FAIL(hl_gguf_get_i32(f, "t.i64", true, &i), "t.i64");
    EXPECT_GET_FAIL(hl_gguf_get_i32(f, "t.i64.big", true, &i), "5000000000, out of range for int32");
    EXPECT_GET_FAIL(hl_gguf_get_i32(f, "t.f64", true, &i), "has type float64");
    CHECK(i == 777);
}

static void test_other_getters(const gguf_file *f) {
    float x = 0;
    bool b = false;
    gguf_str s = {0};
    CHECK(hl_gguf_get_f32(f, "t.f32", true, &x) == HEARTH_OK && x == 1.5f);
    CHECK(hl_gguf_get_f32(f, "t.f64", true, &x) == HEARTH_OK && x == 2.25f);
    EXPECT_GET_FAIL(hl_gguf_get_f32(f, "t.f64.huge", true, &x), "out of range for float32");
    EXPECT_GET_FAIL(hl_gguf_get_f32(f, "t.u32", true, &x), "t.u32");
    CHECK(x == 2.25f);
    CHECK(hl_gguf_get_bool(f, "t.bool", true, &b) == HEARTH_OK && b);
    EXPECT_GET_FAIL(hl_gguf_get_bool(f, "t.u8", true, &b), "has type uint8, expected bool");
    CHECK(hl_gguf_get_str(f, "t.str", true, &s) == HEARTH_OK && s.len == 5 && hl_gguf_str_eq(s, "hello"));
    CHECK(hl_gguf_get_str(f, "t.str.empty", true, &s) == HEARTH_OK && s.len == 0);
    CHECK(hl_gguf_str_eq(s, "") && !hl_gguf_str_eq(s, "x"));
    EXPECT_GET_FAIL(hl_gguf_get_str(f, "t.arr.str", true, &s), "has type array of string");

    const gguf_array *a = NULL;
    EXPECT_GET_FAIL(hl_gguf_get_arr(f, "t.arr.i32", true, GGUF_TYPE_UINT32, &a), "array of int32");
    EXPECT_GET_FAIL(hl_gguf_get_arr(f, "t.str", true, GGUF_TYPE_STRING, &a), "expected array of string");
    CHECK(a == NULL);

    /* Absent keys: required -> FORMAT, optional -> OK with out untouched. */
    uint32_t u = 99;
    EXPECT_GET_FAIL(hl_gguf_get_u32(f, "llama.block_count", true, &u), "missing key 'llama.block_count'");
    CHECK(hl_gguf_get_u32(f, "llama.block_count", false, &u) == HEARTH_OK && u == 99);
    CHECK(hl_gguf_get_f32(f, "nope", false, &x) == HEARTH_OK && x == 2.25f);
    CHECK(hl_gguf_get_arr(f, "nope", false, GGUF_TYPE_STRING, &a) == HEARTH_OK && a == NULL);
    CHECK(hl_gguf_get_u32(f, NULL, true, &u) == HEARTH_ERR_INVALID_ARG);
    CHECK(hl_gguf_get_u32(f, "t.u8", true, NULL) == HEARTH_ERR_INVALID_ARG);
}

static void test_getters(void) {
    craft c;
    build_valid(&c, 3, GGUF_DEFAULT_ALIGNMENT);
    gguf_file *f = NULL;
    CHECK(hl_gguf_open_memory(c.p, c.len, &f) == HEARTH_OK);
    if (f) {
        test_int_getters(f);
        test_other_getters(f);
    }
    hl_gguf_close(f);
    cr_free(&c);
    CHECK(strcmp(hl_gguf_type_name(GGUF_TYPE_FLOAT64), "float64") == 0);
    CHECK(strcmp(hl_gguf_type_name(GGUF_TYPE_COUNT), "unknown") == 0);
}

/* ------------------------------------------------- ggml type table -- */

static void test_type_table(void) {
    /* From ggml.c type_traits / ggml-common.h block sizes. */
    static const struct {
        uint32_t id;
        const char *name;
        uint32_t blck, size;
    } want[] = {
        {GGML_TYPE_F32, "f32", 1, 4},
        {GGML_TYPE_F16, "f16", 1, 2},
        {GGML_TYPE_Q4_0, "q4_0", 32, 18},
        {GGML_TYPE_Q4_1, "q4_1", 32, 20},
        {GGML_TYPE_Q8_0, "q8_0", 32, 34},
        {GGML_TYPE_Q8_1, "q8_1", 32, 36},
        {GGML_TYPE_Q2_K, "q2_K", 256, 84},
        {GGML_TYPE_Q4_K, "q4_K", 256, 144},
        {GGML_TYPE_Q6_K, "q6_K", 256, 210},
        {GGML_TYPE_Q8_K, "q8_K", 256, 292},
        {GGML_TYPE_IQ2_XXS, "iq2_xxs", 256, 66},
        {GGML_TYPE_IQ4_NL, "iq4_nl", 32, 18},
        {GGML_TYPE_IQ4_XS, "iq4_xs", 256, 136},
        {GGML_TYPE_I64, "i64", 1, 8},
        {GGML_TYPE_IQ1_M, "iq1_m", 256, 56},
        {GGML_TYPE_BF16, "bf16", 1, 2},
        {GGML_TYPE_TQ1_0, "tq1_0", 256, 54},
        {GGML_TYPE_TQ2_0, "tq2_0", 256, 66},
        {GGML_TYPE_MXFP4, "mxfp4", 32, 17},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const ggml_type_info *t = hl_ggml_type_get(want[i].id);
        CHECK_MSG(t && strcmp(t->name, want[i].name) == 0 && t->blck_size == want[i].blck &&
                      t->type_size == want[i].size,
                  "type %u", want[i].id);
    }
    static const uint32_t removed[] = {4, 5, 31, 32, 33, 36, 37, 38, GGML_TYPE_COUNT, UINT32_MAX};
    for (size_t i = 0; i < sizeof removed / sizeof removed[0]; i++)
        CHECK_MSG(hl_ggml_type_get(removed[i]) == NULL, "type %u", removed[i]);
    int known = 0;
    for (uint32_t id = 0; id < GGML_TYPE_COUNT; id++) known += hl_ggml_type_get(id) != NULL;
    CHECK(known == GGML_TYPE_COUNT - 8);
}

/* ------------------------------------------- header and version -- */

static void test_header(void) {
    craft c;
    cr_begin(&c, 3);
    cr_finish(&c, 1, 0);
    gguf_file *f = NULL;
    CHECK(hl_gguf_open_memory(c.p, c.len, &f) == HEARTH_OK); /* empty but valid */
    CHECK(f && hl_gguf_n_kv(f) == 0 && hl_gguf_n_tensors(f) == 0 && hl_gguf_alignment(f) == 32);
    hl_gguf_close(f);

    cr_put_u32(&c, 4, 1);
    expect_format(&c, "GGUF version 1 is not supported (only 2 and 3): re-convert the model");
    cr_put_u32(&c, 4, 4);
    expect_format(&c, "GGUF version 4 is not supported");
    cr_put_u32(&c, 4, 0x03000000u);
    expect_format(&c, "big-endian");
    cr_put_u32(&c, 4, 3);
    memcpy(c.p, "GGML", 4);
    expect_format(&c, "not a GGUF file (magic 47 47 4d 4c");
    memcpy(c.p, "GGUF", 4);
    c.len = 3;
    expect_format(&c, "truncated");
    c.len = 20;
    expect_format(&c, "truncated");
    cr_free(&c);

    CHECK(hl_gguf_open_memory(NULL, 0, &f) == HEARTH_ERR_INVALID_ARG && f == NULL);
    CHECK(hl_gguf_open_memory("GGUF", 4, NULL) == HEARTH_ERR_INVALID_ARG);
}

/* CVE class: n_tensors / n_kv so large that count x sizeof overflows or the
 * allocation is huge. */
static void test_counts(void) {
    craft c;
    build_valid(&c, 3, GGUF_DEFAULT_ALIGNMENT);
    /* The last two are ceil(2^64 / 33) and ceil(2^64 / 14): times the smallest
     * tensor info (33 bytes) or kv (14 bytes) they wrap around to 17 and 12. */
    uint64_t bad[] = {
        UINT64_MAX, UINT64_MAX / 8, 1ull << 61, 1ull << 32, 1000000, 558992244657865201ull, 1317624576693539402ull};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_put_u64(&c, CR_N_TENSORS_AT, bad[i]);
        expect_format(&c, "n_tensors");
        cr_put_u64(&c, CR_N_TENSORS_AT, c.n_tensors);
        cr_put_u64(&c, CR_N_KV_AT, bad[i]);
        expect_format(&c, "n_kv");
        cr_put_u64(&c, CR_N_KV_AT, c.n_kv);
    }
    /* Each count fits on its own, not both together. */
    uint64_t left = c.len - 24;
    cr_put_u64(&c, CR_N_KV_AT, left / 14);
    cr_put_u64(&c, CR_N_TENSORS_AT, left / 33);
    expect_format(&c, "cannot both fit");
    /* A plausible but wrong count: the parse runs into the next section. */
    cr_put_u64(&c, CR_N_TENSORS_AT, c.n_tensors);
    cr_put_u64(&c, CR_N_KV_AT, c.n_kv + 1);
    expect_format(&c, "GGUF: ");
    cr_free(&c);
}

/* CVE class: string lengths near UINT64_MAX (pointer wraparound, huge
 * allocations), and array counts whose byte size overflows. */
static void test_lengths(void) {
    craft c;
    uint64_t lens[] = {UINT64_MAX, UINT64_MAX - 7, 1ull << 63, 1000};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        cr_begin(&c, 3); /* the key's own length */
        cr_u64(&c, lens[i]);
        cr_bytes(&c, "general.name", 12);
        c.n_kv = 1;
        cr_finish(&c, 1, 64);
        expect_format(&c, "key #0: string of");
        cr_free(&c);

        one_key_begin(&c, "general.name", GGUF_TYPE_STRING); /* a string value */
        cr_u64(&c, lens[i]);
        cr_finish(&c, 1, 64);
        expect_format(&c, "key 'general.name': string of");
        cr_free(&c);

        one_key_begin(&c, "tokenizer.ggml.tokens", GGUF_TYPE_ARRAY); /* an element */
        cr_arr(&c, GGUF_TYPE_STRING, 2);
        cr_str(&c, "ok");
        cr_u64(&c, lens[i]);
        cr_finish(&c, 1, 64);
        expect_format(&c, "key 'tokenizer.ggml.tokens': string of");
        cr_free(&c);

        cr_begin(&c, 3); /* a tensor name */
        cr_u64(&c, lens[i]);
        cr_bytes(&c, "token_embd.weight", 17);
        c.n_tensors = 1;
        cr_finish(&c, 32, 96);
        expect_format(&c, "tensor #0: string of");
        cr_free(&c);
    }
    /* Array counts: n x element size wraps to a small number; n strings or n
     * arrays cannot fit. */
    static const struct {
        gguf_type type;
        uint64_t n;
        const char *needle;
    } arrays[] = {
        {GGUF_TYPE_UINT32, (1ull << 62) + 1, "runs past the end"},
        {GGUF_TYPE_UINT64, (1ull << 61) + 1, "runs past the end"},
        {GGUF_TYPE_UINT8, UINT64_MAX, "runs past the end"},
        {GGUF_TYPE_STRING, 1ull << 61, "cannot fit"},
        {GGUF_TYPE_STRING, 100, "cannot fit"},
        {GGUF_TYPE_ARRAY, UINT64_MAX / 12, "cannot fit"},
    };
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
        one_key_begin(&c, "tokenizer.ggml.scores", GGUF_TYPE_ARRAY);
        cr_arr(&c, arrays[i].type, arrays[i].n);
        cr_finish(&c, 1, 64);
        expect_format(&c, "key 'tokenizer.ggml.scores': array of");
        expect_format(&c, arrays[i].needle);
        cr_free(&c);
    }
}

/* ------------------------------------------------------------ values -- */

static void test_values(void) {
    craft c;
    one_key_begin(&c, "tokenizer.ggml.add_bos_token", GGUF_TYPE_BOOL); /* bool 2 */
    cr_u8(&c, 2);
    cr_finish(&c, 1, 0);
    expect_format(&c, "key 'tokenizer.ggml.add_bos_token': bool value is 2 (must be 0 or 1)");
    cr_free(&c);

    one_key_begin(&c, "t.flags", GGUF_TYPE_ARRAY); /* bool array element 255 */
    cr_arr(&c, GGUF_TYPE_BOOL, 3);
    cr_u8(&c, 1);
    cr_u8(&c, 0);
    cr_u8(&c, 255);
    cr_finish(&c, 1, 0);
    expect_format(&c, "key 't.flags': bool element 2 is 255");
    cr_free(&c);

    one_key_begin(&c, "t.weird", (gguf_type)13); /* unknown value type */
    cr_u32(&c, 0);
    cr_finish(&c, 1, 0);
    expect_format(&c, "key 't.weird': value type 13 is unknown");
    cr_free(&c);

    one_key_begin(&c, "t.weird", GGUF_TYPE_ARRAY); /* unknown element type */
    cr_u32(&c, 0x80000000u);
    cr_u64(&c, 1);
    cr_finish(&c, 1, 8);
    expect_format(&c, "key 't.weird': array element type 2147483648 is unknown");
    cr_free(&c);
}

/* Arrays nested one level deeper than allowed, and a deep nesting bomb. */
static void test_nesting(void) {
    int depths[] = {GGUF_MAX_ARRAY_DEPTH + 1, 100000};
    for (size_t i = 0; i < 2; i++) {
        craft c;
        one_key_begin(&c, "t.deep", GGUF_TYPE_ARRAY);
        for (int level = 1; level < depths[i]; level++) cr_arr(&c, GGUF_TYPE_ARRAY, 1);
        cr_arr(&c, GGUF_TYPE_INT32, 1);
        cr_u32(&c, 5);
        cr_finish(&c, 1, 0);
        expect_format(&c, "key 't.deep': arrays are nested more than 8 deep");
        cr_free(&c);
    }
}

static void test_names(void) {
    craft c;
    cr_begin(&c, 3); /* empty key */
    cr_kv_str(&c, "general.architecture", "llama");
    cr_kv_str(&c, "", "x");
    cr_finish(&c, 1, 0);
    expect_format(&c, "key #1: the name is empty");
    cr_free(&c);

    cr_begin(&c, 3); /* key with a NUL byte */
    cr_u64(&c, 9);
    cr_bytes(&c, "general\0x", 9);
    cr_u32(&c, GGUF_TYPE_UINT8);
    cr_u8(&c, 1);
    c.n_kv = 1;
    cr_finish(&c, 1, 0);
    expect_format(&c, "key 'general?x': the name contains a NUL byte");
    cr_free(&c);

    char *long_key = malloc(65538);
    memset(long_key, 'k', 65537);
    long_key[65537] = '\0';
    cr_begin(&c, 3); /* key over 64 KiB */
    cr_kv_u32(&c, long_key, 1);
    cr_finish(&c, 1, 0);
    expect_format(&c, "the name is 65537 bytes long (the limit is 65536)");
    cr_free(&c);
    long_key[65536] = '\0';
    cr_begin(&c, 3); /* exactly 64 KiB is fine */
    cr_kv_u32(&c, long_key, 1);
    cr_finish(&c, 1, 0);
    gguf_file *f = NULL;
    CHECK_MSG(hl_gguf_open_memory(c.p, c.len, &f) == HEARTH_OK, "%s", hearth_last_error());
    hl_gguf_close(f);
    cr_free(&c);
    free(long_key);

    /* Tensor names: 63 bytes fit ggml's GGML_MAX_NAME (64 with the NUL), 64 do not. */
    char name[65];
    memset(name, 'n', 64);
    name[64] = '\0';
    int64_t ne[1] = {8};
    one_tensor_file(&c, name, GGML_TYPE_F32, 1, ne, 0, 32);
    expect_format(&c, "the name is 64 bytes long (the limit is 63)");
    expect_format(&c, "tensor 'nnnnnnnnnnnnnnnnnnnn");
    cr_free(&c);
    name[63] = '\0';
    one_tensor_file(&c, name, GGML_TYPE_F32, 1, ne, 0, 32);
    f = NULL;
    CHECK_MSG(hl_gguf_open_memory(c.p, c.len, &f) == HEARTH_OK, "%s", hearth_last_error());
    hl_gguf_close(f);
    cr_free(&c);
    one_tensor_file(&c, "", GGML_TYPE_F32, 1, ne, 0, 32);
    expect_format(&c, "tensor #0: the name is empty");
    cr_free(&c);
}

static void test_duplicates(void) {
    craft c;
    cr_begin(&c, 3);
    cr_kv_str(&c, "general.name", "a");
    cr_kv_str(&c, "general.architecture", "llama");
    cr_kv_u32(&c, "general.name", 5);
    cr_finish(&c, 1, 0);
    expect_format(&c, "key 'general.name': duplicate key");
    cr_free(&c);

    int64_t ne[1] = {8};
    cr_begin(&c, 3);
    cr_tensor(&c, "output.weight", GGML_TYPE_F32, 1, ne, 0);
    cr_tensor(&c, "token_embd.weight", GGML_TYPE_F32, 1, ne, 32);
    cr_tensor(&c, "output.weight", GGML_TYPE_F32, 1, ne, 64);
    cr_finish(&c, 32, 96);
    expect_format(&c, "tensor 'output.weight': duplicate tensor name");
    cr_free(&c);
}

/* ------------------------------------------------------------ tensors -- */

/* CVE classes: element-count and byte-size overflow, zero and negative
 * dimensions, too many dimensions, unknown types. */
static void test_shapes(void) {
    static const struct {
        uint32_t type, n_dims;
        int64_t ne[5];
        const char *needle;
    } cases[] = {
        {GGML_TYPE_F32, 2, {1ll << 32, 1ll << 32}, "element count 4294967296 x 4294967296 x 1 x 1 overflows"},
        {GGML_TYPE_F32, 4, {65536, 65536, 65536, 65536}, "element count"},
        {GGML_TYPE_F32, 2, {1ll << 62, 2}, "element count"},
        {GGML_TYPE_F64, 2, {1ll << 31, 1ll << 31}, "byte size of 2147483648 x 2147483648 x 1 x 1 f64"},
        {GGML_TYPE_F32, 1, {1ll << 62}, "byte size"},
        {GGML_TYPE_I64, 3, {1ll << 20, 1ll << 20, 1ll << 21}, "byte size"},
        {GGML_TYPE_F32, 2, {4, 0}, "dimension 1 is 0 (must be >= 1): the file is corrupt"},
        {GGML_TYPE_F32, 1, {-4}, "dimension 0 is -4 (must be >= 1)"},
        {GGML_TYPE_F32, 3, {4, 4, INT64_MIN}, "dimension 2 is -9223372036854775808"},
        {GGML_TYPE_F32, 5, {1, 1, 1, 1, 1}, "has 5 dimensions (must be 1 to 4)"},
        {GGML_TYPE_F32, 0, {0}, "has 0 dimensions"},
        {GGML_TYPE_Q4_0, 2, {33, 2}, "dimension 0 is 33, not a multiple of the q4_0 block size 32"},
        {GGML_TYPE_Q4_K, 1, {32}, "not a multiple of the q4_K block size 256"},
        {4, 1, {32}, "unknown tensor type 4"},
        {31, 1, {32}, "unknown tensor type 31"},
        {38, 1, {32}, "unknown tensor type 38"},
        {GGML_TYPE_COUNT, 1, {32}, "unknown tensor type 43"},
        {UINT32_MAX, 1, {32}, "unknown tensor type 4294967295"},
        {GGML_TYPE_F32, 1, {1ll << 40}, "runs past the end of the file"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        craft c;
        one_tensor_file(&c, "blk.0.attn_q.weight", cases[i].type, cases[i].n_dims, cases[i].ne, 0, 1024);
        expect_format(&c, "GGUF: tensor 'blk.0.attn_q.weight': ");
        expect_format(&c, cases[i].needle);
        cr_free(&c);
    }
}

/* CVE classes: data offsets outside the file (including offset + size
 * wrapping around), misaligned, overlapping. */
static void test_offsets(void) {
    int64_t ne8[1] = {8}, ne16[1] = {16}; /* 32 and 64 bytes of f32 */
    uint64_t outside[] = {64, 1ull << 40, UINT64_MAX - 31, UINT64_MAX - 63};
    for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++) {
        craft c;
        one_tensor_file(&c, "output.weight", GGML_TYPE_F32, 1, ne8, outside[i], 64);
        expect_format(&c, "tensor 'output.weight': data (offset");
        expect_format(&c, "runs past the end of the file");
        cr_free(&c);
    }
    craft c;
    one_tensor_file(&c, "output.weight", GGML_TYPE_F32, 1, ne8, 4, 64);
    expect_format(&c, "tensor 'output.weight': data offset 4 is not a multiple of the "
                      "alignment 32");
    cr_free(&c);

    cr_begin(&c, 3);
    cr_tensor(&c, "a.weight", GGML_TYPE_F32, 1, ne16, 0);
    cr_tensor(&c, "b.weight", GGML_TYPE_F32, 1, ne8, 32);
    cr_finish(&c, 32, 64);
    expect_format(&c, "tensor 'b.weight': data at bytes [32, 64) overlaps tensor 'a.weight' "
                      "at [0, 64)");
    cr_free(&c);

    cr_begin(&c, 3); /* same offset */
    cr_tensor(&c, "a.weight", GGML_TYPE_F32, 1, ne8, 0);
    cr_tensor(&c, "b.weight", GGML_TYPE_F32, 1, ne8, 0);
    cr_finish(&c, 32, 64);
    expect_format(&c, "overlaps tensor 'a.weight'");
    cr_free(&c);

    cr_begin(&c, 3); /* adjacent is fine */
    cr_tensor(&c, "b.weight", GGML_TYPE_F32, 1, ne8, 32);
    cr_tensor(&c, "a.weight", GGML_TYPE_F32, 1, ne8, 0);
    cr_finish(&c, 32, 64);
    gguf_file *f = NULL;
    CHECK_MSG(hl_gguf_open_memory(c.p, c.len, &f) == HEARTH_OK, "%s", hearth_last_error());
    hl_gguf_close(f);
    cr_free(&c);
}

/* CVE class: general.alignment 0 (division by zero / wraparound), not a power
 * of two, huge, or of the wrong type. */
static void test_alignment(void) {
    uint32_t bad[] = {0, 3, 48, 1u << 31, 1u << 25};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        craft c;
        cr_begin(&c, 3);
        cr_kv_u32(&c, "general.alignment", bad[i]);
        cr_finish(&c, 1, 0);
        expect_format(&c, "key 'general.alignment': alignment");
        expect_format(&c, "is not a power of two from 1 to 16777216");
        cr_free(&c);
    }
    craft c;
    one_key_begin(&c, "general.alignment", GGUF_TYPE_INT32);
    cr_u32(&c, 64);
    cr_finish(&c, 1, 0);
    expect_format(&c, "key 'general.alignment': type is int32, must be uint32");
    cr_free(&c);

    /* Alignment 1: data right after the infos, any offset. */
    int64_t ne[1] = {3};
    cr_begin(&c, 3);
    cr_kv_u32(&c, "general.alignment", 1);
    cr_tensor(&c, "t.bytes", GGML_TYPE_I8, 1, ne, 1);
    cr_finish(&c, 1, 4);
    gguf_file *f = NULL;
    CHECK_MSG(hl_gguf_open_memory(c.p, c.len, &f) == HEARTH_OK, "%s", hearth_last_error());
    if (f) {
        const gguf_tensor *t = hl_gguf_find_tensor(f, "t.bytes");
        CHECK(hl_gguf_alignment(f) == 1 && t && t->size == 3);
        CHECK(t && (const uint8_t *)t->data == c.p + c.len - 3);
    }
    hl_gguf_close(f);
    cr_free(&c);
}

/* Tokenizer type confusion: tokens stored as int32 (or as one string) must
 * not be handed out as strings. */
static void test_type_confusion(void) {
    for (int as_string = 0; as_string < 2; as_string++) {
        craft c;
        if (as_string) {
            one_key_begin(&c, "tokenizer.ggml.tokens", GGUF_TYPE_STRING);
            cr_str(&c, "<s>");
        } else {
            one_key_begin(&c, "tokenizer.ggml.tokens", GGUF_TYPE_ARRAY);
            cr_arr(&c, GGUF_TYPE_INT32, 2);
            cr_u32(&c, 1);
            cr_u32(&c, 0x7fffffff);
        }
        cr_finish(&c, 1, 0);
        gguf_file *f = NULL;
        CHECK(hl_gguf_open_memory(c.p, c.len, &f) == HEARTH_OK);
        const gguf_array *a = NULL;
        const char *want = as_string ? "key 'tokenizer.ggml.tokens' has type string, expected "
                                       "array of string"
                                     : "key 'tokenizer.ggml.tokens' has type array of int32, "
                                       "expected array of string";
        if (f) EXPECT_GET_FAIL(hl_gguf_get_arr(f, "tokenizer.ggml.tokens", true, GGUF_TYPE_STRING, &a), want);
        CHECK(a == NULL);
        hl_gguf_close(f);
        cr_free(&c);
    }
}

/* ------------------------------------------- truncation and fuzzing -- */

/* Every strict prefix of a valid file must fail with FORMAT. */
static void test_truncation(uint32_t version) {
    craft c;
    build_valid(&c, version, 64);
    int bad = 0;
    for (size_t len = 0; len < c.len; len++) {
        uint8_t *copy;
        gguf_file *f = NULL;
        hearth_status st = open_prefix(&c, len, &copy, &f);
        if (st != HEARTH_ERR_FORMAT || f != NULL) {
            if (bad++ < 5) fprintf(stderr, "prefix %zu: status %d\n", len, st);
        }
        hl_gguf_close(f);
        free(copy);
    }
    CHECK_MSG(bad == 0, "%d of %zu prefixes did not fail with FORMAT", bad, c.len);
    cr_free(&c);
}

static uint64_t xorshift64(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Reads everything an opened file offers, so ASan checks it all. */
static unsigned walk(const gguf_file *f) {
    unsigned sum = 0;
    for (uint64_t i = 0; i < hl_gguf_n_kv(f); i++) {
        const gguf_kv *kv = hl_gguf_kv_at(f, i);
        char key[128];
        int len = (int)(kv->key.len < 127 ? kv->key.len : 127);
        snprintf(key, sizeof key, "%.*s", len, kv->key.data);
        uint32_t u;
        const gguf_array *a;
        if (hl_gguf_get_u32(f, key, true, &u) == HEARTH_OK) sum += u;
        if (hl_gguf_get_arr(f, key, true, GGUF_TYPE_STRING, &a) == HEARTH_OK && a->n)
            sum += (unsigned)a->strs[a->n - 1].len;
        if (hl_gguf_get_arr(f, key, true, GGUF_TYPE_INT32, &a) == HEARTH_OK && a->n)
            sum += (unsigned)hl_gguf_arr_i32(a, a->n - 1);
    }
    for (uint64_t i = 0; i < hl_gguf_n_tensors(f); i++) {
        const gguf_tensor *t = hl_gguf_tensor_at(f, i);
        const uint8_t *d = t->data;
        sum += d[0] + d[t->size - 1];
    }
    return sum;
}

/* Random byte flips, interesting values, insertions and deletions on a valid
 * image: the reader must answer OK or FORMAT, never crash. */
static void test_mutation_fuzz(void) {
    craft c;
    build_valid(&c, 3, GGUF_DEFAULT_ALIGNMENT);
    static const uint64_t interesting[] = {0,          1,          0x7f,      0x80,       0xff, 0xffff, 0x7fffffff,
                                           0xffffffff, 1ull << 32, INT64_MAX, UINT64_MAX, 64,   33};
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    int bad = 0, ok = 0;
    uint8_t *buf = malloc(c.len + 64);
    for (int iter = 0; iter < 20000; iter++) {
        size_t len = c.len;
        memcpy(buf, c.p, len);
        int n_mut = 1 + (int)(xorshift64(&seed) % 4);
        for (int m = 0; m < n_mut && len > 8; m++) {
            uint64_t r = xorshift64(&seed);
            size_t at = (size_t)(xorshift64(&seed) % len);
            switch (r % 5) {
            case 0: buf[at] ^= (uint8_t)(1u << (r >> 8) % 8); break;
            case 1: buf[at] = (uint8_t)(r >> 16); break;
            case 2: {
                uint64_t v = interesting[(r >> 8) % (sizeof interesting / sizeof interesting[0])];
                size_t n = ((r >> 16) & 1) ? 8 : 4;
                if (at + n <= len) memcpy(buf + at, &v, n);
                break;
            }
            case 3:
                if (len < c.len + 64) {
                    memmove(buf + at + 1, buf + at, len - at);
                    buf[at] = (uint8_t)(r >> 24);
                    len++;
                }
                break;
            default:
                memmove(buf + at, buf + at + 1, len - at - 1);
                len--;
                break;
            }
        }
        uint8_t *copy = malloc(len);
        memcpy(copy, buf, len);
        gguf_file *f = NULL;
        hearth_status st = hl_gguf_open_memory(copy, len, &f);
        if (st == HEARTH_OK) {
            ok++;
            (void)walk(f);
        } else if (st != HEARTH_ERR_FORMAT || f != NULL) {
            if (bad++ < 5) fprintf(stderr, "fuzz %d: status %d: %s\n", iter, st, hearth_last_error());
        }
        hl_gguf_close(f);
        free(copy);
    }
    printf("mutation fuzz: 20000 images, %d parsed OK, the rest FORMAT\n", ok);
    CHECK_MSG(bad == 0, "%d mutated images gave neither OK nor FORMAT", bad);
    free(buf);
    cr_free(&c);
}

/* ---------------------------------------------------------- the disk -- */

static void write_file(const char *path, const void *data, size_t n) {
    FILE *fp = fopen(path, "wb");
    if (!fp) abort();
    if (n) fwrite(data, 1, n, fp);
    fclose(fp);
}

static void expect_open(const char *path, hearth_status want, const char *needle) {
    gguf_file *f = (gguf_file *)&f; /* must be reset to NULL */
    hearth_status st = hl_gguf_open(path, &f);
    CHECK_MSG(st == want, "%s: status %d (%s)", path, st, hearth_last_error());
    CHECK_MSG(f == NULL, "%s: file returned on error", path);
    CHECK_MSG(strstr(hearth_last_error(), needle), "%s: '%s' lacks '%s'", path, hearth_last_error(), needle);
}

static void test_files(void) {
    char dir[] = "/tmp/hearth_test_gguf_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK_MSG(0, "mkdtemp failed");
        return;
    }
    char path[256];
    snprintf(path, sizeof path, "%s/missing.gguf", dir);
    expect_open(path, HEARTH_ERR_IO, "missing.gguf': cannot open: No such file or directory");
    expect_open(dir, HEARTH_ERR_IO, "is a directory");
    expect_open("/dev/null", HEARTH_ERR_IO, "not a regular file");

    snprintf(path, sizeof path, "%s/text.gguf", dir);
    write_file(path, "hello, this is not a model\n", 27);
    expect_open(path, HEARTH_ERR_FORMAT, "text.gguf': not a GGUF file (magic 68 65 6c 6c");
    write_file(path, "GGUF\3\0", 6);
    expect_open(path, HEARTH_ERR_FORMAT, "truncated");
    write_file(path, "", 0);
    expect_open(path, HEARTH_ERR_FORMAT, "is empty (0 bytes): truncated");

    craft c;
    build_valid(&c, 3, 64);
    write_file(path, c.p, c.len);
    gguf_file *f = NULL;
    CHECK_MSG(hl_gguf_open(path, &f) == HEARTH_OK, "%s", hearth_last_error());
    if (f) check_valid_tensors(f, hl_gguf_data(f, NULL));
    hl_gguf_close(f);
    write_file(path, c.p, c.len - 1); /* truncated: messages name the path */
    expect_open(path, HEARTH_ERR_FORMAT, "GGUF file '");
    cr_free(&c);
    unlink(path);
    rmdir(dir);
    CHECK(hl_gguf_open(NULL, &f) == HEARTH_ERR_INVALID_ARG && f == NULL);
}

/* The real model, when present (facts from gguf-py's reader). */
static void test_model(void) {
    const char *path = getenv("HEARTH_MODEL");
    struct stat sb;
    if (!path || stat(path, &sb) != 0) {
        printf("SKIP part: model not found (%s); run scripts/fetch_model.sh\n", path ? path : "HEARTH_MODEL unset");
        return;
    }
    gguf_file *f = NULL;
    hearth_status st = hl_gguf_open(path, &f);
    CHECK_MSG(st == HEARTH_OK, "%s", hearth_last_error());
    if (st != HEARTH_OK) return;
    CHECK(hl_gguf_version(f) == 3 && hl_gguf_n_tensors(f) == 272 && hl_gguf_n_kv(f) == 33);
    gguf_str arch = {0};
    uint32_t n_layer = 0;
    const gguf_array *tokens = NULL;
    CHECK(hl_gguf_get_str(f, "general.architecture", true, &arch) == HEARTH_OK);
    CHECK(hl_gguf_str_eq(arch, "llama"));
    CHECK(hl_gguf_get_u32(f, "llama.block_count", true, &n_layer) == HEARTH_OK && n_layer == 30);
    CHECK(hl_gguf_get_arr(f, "tokenizer.ggml.tokens", true, GGUF_TYPE_STRING, &tokens) == HEARTH_OK);
    CHECK(tokens && tokens->n == 49152);
    const gguf_tensor *t = hl_gguf_find_tensor(f, "token_embd.weight");
    CHECK(t && t->type == GGML_TYPE_Q8_0 && t->n_dims == 2 && t->ne[0] == 576 && t->ne[1] == 49152);
    CHECK(t && t->size == 576 / 32 * 34 * 49152ull);
    size_t size = 0;
    hl_gguf_data(f, &size);
    CHECK(size == (size_t)sb.st_size);
    (void)walk(f);
    hl_gguf_close(f);
}

int main(void) {
    test_type_table();
    test_valid(3, GGUF_DEFAULT_ALIGNMENT);
    test_valid(2, GGUF_DEFAULT_ALIGNMENT);
    test_valid(3, 64);
    test_getters();
    test_header();
    test_counts();
    test_lengths();
    test_values();
    test_nesting();
    test_names();
    test_duplicates();
    test_shapes();
    test_offsets();
    test_alignment();
    test_type_confusion();
    test_truncation(3);
    test_truncation(2);
    test_mutation_fuzz();
    test_files();
    test_model();
    return check_report();
}
