/* GGUF reader: maps a GGUF file (versions 2 and 3) and validates all of it
 * before anything else looks at it. Spec:
 * https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
 *
 * Every violation (sizes past the end of the file, overflowing counts, bad
 * tensor shapes or offsets, duplicate names, unknown types, ...) is reported as
 * HEARTH_ERR_FORMAT with a message naming the key or tensor and what is wrong.
 * All data pointers point into the mapping and live as long as the gguf_file.
 * A gguf_file is immutable after hl_gguf_open() and may be read from any thread. */
#ifndef HEARTH_GGUF_H
#define HEARTH_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hearth.h"

typedef enum gguf_type {
    GGUF_TYPE_UINT8 = 0,
    GGUF_TYPE_INT8 = 1,
    GGUF_TYPE_UINT16 = 2,
    GGUF_TYPE_INT16 = 3,
    GGUF_TYPE_UINT32 = 4,
    GGUF_TYPE_INT32 = 5,
    GGUF_TYPE_FLOAT32 = 6,
    GGUF_TYPE_BOOL = 7,
    GGUF_TYPE_STRING = 8,
    GGUF_TYPE_ARRAY = 9,
    GGUF_TYPE_UINT64 = 10,
    GGUF_TYPE_INT64 = 11,
    GGUF_TYPE_FLOAT64 = 12,
    GGUF_TYPE_COUNT
} gguf_type;

/* A string inside the file: NOT NUL-terminated. */
typedef struct gguf_str {
    const char *data;
    uint64_t len;
} gguf_str;

typedef struct gguf_value gguf_value;

typedef struct gguf_array {
    gguf_type elem_type;
    uint64_t n;
    /* Scalar elements: `raw` points at n packed little-endian values in the file
     * (possibly unaligned: read with gguf_arr_* below or memcpy).
     * String elements: `strs` holds n entries. Array elements: `arrs` holds n
     * nested values (each of type GGUF_TYPE_ARRAY). */
    const uint8_t *raw;
    const gguf_str *strs;
    const gguf_value *arrs;
} gguf_array;

struct gguf_value {
    gguf_type type;
    union {
        uint64_t u64; /* UINT8..UINT64 */
        int64_t i64;  /* INT8..INT64 */
        double f64;   /* FLOAT32, FLOAT64 */
        bool b;
        gguf_str str;
        gguf_array arr;
    } v;
};

typedef struct gguf_kv {
    gguf_str key;
    gguf_value value;
} gguf_kv;

/* GGML_MAX_DIMS */
#define GGUF_MAX_DIMS 4
/* Deepest nesting of arrays accepted (arrays of arrays of ...). */
#define GGUF_MAX_ARRAY_DEPTH 8
#define GGUF_DEFAULT_ALIGNMENT 32

typedef struct gguf_tensor {
    gguf_str name;
    uint32_t type;             /* ggml type id (gguf/ggml_types.h), validated as known */
    uint32_t n_dims;           /* 1..4 */
    int64_t ne[GGUF_MAX_DIMS]; /* elements per dimension, ne[0] innermost; unused dims are 1 */
    uint64_t offset;           /* from the start of the data section */
    uint64_t size;             /* bytes */
    const void *data;          /* inside the mapping */
} gguf_tensor;

typedef struct gguf_file gguf_file;

/* Opens, maps (read-only) and validates `path`.
 * Errors: INVALID_ARG, IO (missing, a directory, unreadable, mmap failed),
 * FORMAT (every validation failure), OUT_OF_MEMORY. */
hearth_status hl_gguf_open(const char *path, gguf_file **out);

/* Validates an in-memory image (not copied; must outlive the gguf_file). Same
 * checks as hl_gguf_open(). Used by the fuzz tests. */
hearth_status hl_gguf_open_memory(const void *data, size_t size, gguf_file **out);

void hl_gguf_close(gguf_file *f);

/* When f (opened from `path`) is the first file of a split model
 * (split.count > 1), opens the other files beside it (llama.cpp's names:
 * PREFIX-00002-of-00003.gguf ...) and makes their tensors part of f: the
 * tensor accessors and lookups then cover every file; metadata stays the
 * first file's. A file that is not split is left as it is. Errors: FORMAT
 * (not the first file; a part whose split.no or split.count disagrees;
 * tensor counts that do not add up to split.tensors.count; a tensor in two
 * parts; a part's own format errors), IO (a part missing), OUT_OF_MEMORY. */
hearth_status hl_gguf_attach_parts(gguf_file *f, const char *path);

uint32_t hl_gguf_version(const gguf_file *f);
uint64_t hl_gguf_n_kv(const gguf_file *f);
const gguf_kv *hl_gguf_kv_at(const gguf_file *f, uint64_t i);
uint64_t hl_gguf_n_tensors(const gguf_file *f);
const gguf_tensor *hl_gguf_tensor_at(const gguf_file *f, uint64_t i);
uint32_t hl_gguf_alignment(const gguf_file *f);
/* The mapping (for madvise/mlock by the loader). */
const void *hl_gguf_data(const gguf_file *f, size_t *size);

/* Lookups by NUL-terminated name; NULL when absent. */
const gguf_kv *hl_gguf_find_kv(const gguf_file *f, const char *key);
const gguf_tensor *hl_gguf_find_tensor(const gguf_file *f, const char *name);

/* Typed metadata getters. When the key is absent: if `required`, FORMAT
 * ("missing key 'llama.block_count'"); otherwise HEARTH_OK with *out untouched,
 * so the caller pre-sets the default. When present with the wrong type or a
 * value out of range of the output type: FORMAT naming the key.
 * Integer getters accept any integer type whose value fits. */
hearth_status hl_gguf_get_u32(const gguf_file *f, const char *key, bool required, uint32_t *out);
hearth_status hl_gguf_get_i32(const gguf_file *f, const char *key, bool required, int32_t *out);
hearth_status hl_gguf_get_f32(const gguf_file *f, const char *key, bool required, float *out);
hearth_status hl_gguf_get_bool(const gguf_file *f, const char *key, bool required, bool *out);
hearth_status hl_gguf_get_str(const gguf_file *f, const char *key, bool required, gguf_str *out);
/* Arrays must have exactly elem_type, else FORMAT ("tokenizer.ggml.tokens: array
 * of int32, expected string"); this is the tokenizer type-confusion guard. */
hearth_status hl_gguf_get_arr(const gguf_file *f, const char *key, bool required, gguf_type elem_type,
                              const gguf_array **out);

/* Element i of a scalar array (i < arr->n and the type must match). */
int32_t hl_gguf_arr_i32(const gguf_array *arr, uint64_t i);
uint32_t hl_gguf_arr_u32(const gguf_array *arr, uint64_t i);
float hl_gguf_arr_f32(const gguf_array *arr, uint64_t i);

/* gguf_str equality with a NUL-terminated string. */
bool hl_gguf_str_eq(gguf_str s, const char *cstr);

const char *hl_gguf_type_name(gguf_type t);

#endif
