/* GGUF writer: writes a GGUF version 3 file (little-endian), spec:
 * https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
 *
 *   header:  magic "GGUF", u32 version 3, u64 n_tensors, u64 n_kv
 *   kv:      string key, u32 value type, value (arrays: u32 element type,
 *            u64 count, elements; arrays of arrays nest)
 *   tensor:  string name, u32 n_dims, u64 ne[n_dims], u32 ggml type,
 *            u64 offset into the data section (a multiple of the alignment)
 *   zero padding to general.alignment (32 when the key is absent), then the
 *   tensor data, each tensor padded with zeros to the alignment.
 *
 * Use: create, set metadata and add tensor infos (in any order), then
 * hl_gguf_writer_begin_data() writes the header, hl_gguf_writer_write() streams the
 * tensor bytes in tensor order (any number of calls; only the caller's chunk is
 * in memory), hl_gguf_writer_commit() finishes. The header (metadata and tensor
 * infos) is held in memory until begin_data; tensor data never is.
 *
 * The file appears atomically: the bytes go to "PATH.tmp-XXXXXX" in the same
 * folder, renamed over PATH by hl_gguf_writer_commit(); hl_gguf_writer_free() of an
 * uncommitted writer deletes the temporary file, so a failure leaves nothing
 * half-written behind. Every write is checked: a failure (ENOSPC, EIO, EFBIG)
 * is HEARTH_ERR_IO with the path in the message, and sticks: later calls on
 * the writer return the same status.
 *
 * A writer is used by one thread at a time. */
#ifndef HEARTH_GGUF_WRITE_H
#define HEARTH_GGUF_WRITE_H

#include "gguf/gguf.h"

typedef struct gguf_writer gguf_writer;

enum {
    /* Write straight to PATH, without a temporary file and rename (for device
     * files and pipes, or a caller that handles atomicity itself). A failure
     * then leaves what was written; hl_gguf_writer_free() removes nothing. */
    GGUF_WRITE_IN_PLACE = 1u << 0,
};

/* Starts a file for `path`. flags: 0 or GGUF_WRITE_IN_PLACE.
 * Errors: INVALID_ARG (NULL), IO (the folder is missing or not writable, path
 * is a directory: the message names the path and says why), OUT_OF_MEMORY. */
hearth_status hl_gguf_writer_create(const char *path, unsigned flags, gguf_writer **out);

/* Frees the writer; an uncommitted file is closed and (unless IN_PLACE)
 * deleted. NULL is a no-op. */
void hl_gguf_writer_free(gguf_writer *w);

/* ------------------------------------------------- metadata (header) -- */

/* Sets `key` to a copy of `value` (strings and arrays, nested ones included,
 * are copied: the value may be freed afterwards). A key set again keeps its
 * place in the file and takes the new value. Scalars are read from the union
 * as the reader fills it (u64 for unsigned, i64 for signed, f64 for floats, b
 * for bool) and must fit their type; scalar arrays from `raw` (packed
 * little-endian). general.alignment must be a uint32 power of two up to
 * 16 MiB; it sets the alignment of the data.
 * Errors: INVALID_ARG (after begin_data; empty key or one with a NUL; unknown
 * type; value out of range; arrays nested over GGUF_MAX_ARRAY_DEPTH; bad
 * alignment), OUT_OF_MEMORY. */
hearth_status hl_gguf_writer_set(gguf_writer *w, const char *key, const gguf_value *value);
hearth_status hl_gguf_writer_set_u32(gguf_writer *w, const char *key, uint32_t v);
hearth_status hl_gguf_writer_set_str(gguf_writer *w, const char *key, const char *s);

/* Removes `key` if present; returns whether it was. */
bool hl_gguf_writer_remove(gguf_writer *w, const char *key);

/* Copies every key/value of `f`, in file order (as hl_gguf_writer_set). */
hearth_status hl_gguf_writer_copy_kvs(gguf_writer *w, const gguf_file *f);

/* Adds a tensor info: name (1..63 bytes, unique), ggml type, 1..4 dims with
 * ne[d] >= 1, ne[0] a multiple of the type's block size. Data is written in
 * the order tensors are added. Errors: INVALID_ARG (any of those, or after
 * begin_data), OUT_OF_MEMORY. */
hearth_status hl_gguf_writer_add_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                                        const int64_t *ne);

/* Bytes of tensor i's data (without padding); 0 when i is out of range. */
uint64_t hl_gguf_writer_tensor_size(const gguf_writer *w, uint64_t i);

/* ------------------------------------------------------------- data -- */

/* Writes the header, tensor infos and the padding before the data section.
 * Errors: IO, INVALID_ARG (called twice). */
hearth_status hl_gguf_writer_begin_data(gguf_writer *w);

/* Appends n bytes of tensor data: the rest of the current tensor, then the
 * next ones (the padding between tensors is written here). Errors: IO,
 * INVALID_ARG (before begin_data, or more bytes than the tensor infos
 * declare). */
hearth_status hl_gguf_writer_write(gguf_writer *w, const void *data, size_t n);

/* Checks that every tensor's data was written, flushes, syncs to disk, closes
 * and renames the file into place. The writer must still be freed.
 * Errors: INVALID_ARG (data missing: the message names the tensor), IO. */
hearth_status hl_gguf_writer_commit(gguf_writer *w);

#endif
