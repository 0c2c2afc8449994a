/* Internals shared by the GGUF reader's files: the gguf_file struct, filled by
 * the parser (gguf_parse.c) and read by the accessors and getters (gguf.c). */
#ifndef HEARTH_GGUF_IMPL_H
#define HEARTH_GGUF_IMPL_H

#include "gguf/gguf.h"

/* Largest general.alignment accepted. The spec allows any power of two; this
 * cap keeps the padding arithmetic far from wrapping around and still covers
 * every real use (SIMD widths, 4-64 KiB pages, 2 MiB huge pages). */
#define GGUF_MAX_ALIGNMENT (16u << 20)

/* ggml's GGML_MAX_NAME is 64 bytes including the NUL: names up to 63 bytes. */
#define GGUF_MAX_TENSOR_NAME 63
#define GGUF_MAX_KEY_LEN (64u << 10)

struct gguf_file {
    const uint8_t *base; /* [size] the whole image (mapping or caller's buffer) */
    size_t size;
    bool mapped;  /* munmap base on close */
    char *origin; /* "GGUF file 'path'" or "GGUF": prefix of messages */
    uint32_t version;
    uint32_t alignment;
    uint64_t data_offset; /* start of the data section, bytes from base */
    uint64_t n_kv;
    gguf_kv *kvs;              /* [n_kv] in file order */
    const gguf_kv **kv_by_key; /* [n_kv] sorted by key, for lookups */
    uint64_t n_tensors;
    gguf_tensor *tensors;               /* [n_tensors] in file order */
    const gguf_tensor **tensor_by_name; /* [n_tensors] sorted by name */
    /* A split model's other files (gguf_split.c), open as long as this one:
     * tensors and tensor_by_name then cover every file's tensors. */
    gguf_file **parts; /* [n_parts] */
    uint32_t n_parts;
};

/* Parses and validates f->base[0..size) into f (origin set by the caller). On
 * error the message is set and f may hold parts: hl_gguf_close() it. */
hearth_status hl_gguf_parse(gguf_file *f);

/* Frees what hl_gguf_parse() allocated; safe on a partly filled file. */
void hl_gguf_free_parsed(gguf_file *f);

/* Compares a file string with a C string (len bytes) like memcmp on bytes,
 * shorter first; the order used by kv_by_key and tensor_by_name. */
int hl_gguf_str_cmp(gguf_str a, const char *b, size_t len);

#endif
