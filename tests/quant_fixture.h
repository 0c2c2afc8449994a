/* Reader of the quant fixture files (magic "HLQF", written by the scripts in
 * tests/reference/quant/, which document the format) and the checks of a
 * dequantize or quantize record against hearth's reference conversions
 * (tests only). */
#ifndef HEARTH_TESTS_QUANT_FIXTURE_H
#define HEARTH_TESTS_QUANT_FIXTURE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "quant/quant.h"

/* Record kinds: 0, 1 in make_quant_fixtures.py; 2, 3 in make_kquant_fixtures.py. */
enum { FIX_DEQUANTIZE = 0, FIX_QUANTIZE = 1, FIX_INPUT = 2, FIX_REFERENCE = 3 };

typedef struct fixture {
    char name[33];
    uint32_t kind, type, n_rows, n_per_row;
    const uint8_t *a, *b; /* by kind, see the generators */
    uint64_t a_bytes, b_bytes;
} fixture;

static inline uint64_t fixture_u64(const uint8_t *p) { return check_u32(p) | (uint64_t)check_u32(p + 4) << 32; }

/* The whole file at tests/`rel`, or NULL (and a failed CHECK) if it cannot be
 * read or is not an HLQF file; *n_records from its header. Free with free(). */
static inline uint8_t *fixture_file_read(const char *rel, size_t *size, uint32_t *n_records) {
    const char *path = check_test_path(rel);
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    long len = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 12) {
        buf = malloc((size_t)len);
        rewind(f);
        if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
            free(buf);
            buf = NULL;
        }
    }
    if (f) fclose(f);
    if (buf && memcmp(buf, "HLQF", 4) != 0) {
        free(buf);
        buf = NULL;
    }
    CHECK_MSG(buf != NULL, "cannot read %s", path);
    *size = buf ? (size_t)len : 0;
    *n_records = buf ? check_u32(buf + 8) : 0;
    return buf;
}

/* Parses the record at *pos; false at the end or on a malformed record. */
static inline bool fixture_next(const uint8_t *data, size_t size, size_t *pos, fixture *fx) {
    const size_t head = 32 + 4 * 4 + 2 * 8;
    if (size - *pos < head) return false;
    const uint8_t *p = data + *pos;
    memcpy(fx->name, p, 32);
    fx->name[32] = 0;
    fx->kind = check_u32(p + 32);
    fx->type = check_u32(p + 36);
    fx->n_rows = check_u32(p + 40);
    fx->n_per_row = check_u32(p + 44);
    fx->a_bytes = fixture_u64(p + 48);
    fx->b_bytes = fixture_u64(p + 56);
    if (fx->a_bytes > size - *pos - head || fx->b_bytes > size - *pos - head - fx->a_bytes) return false;
    fx->a = p + head;
    fx->b = fx->a + fx->a_bytes;
    *pos += head + fx->a_bytes + fx->b_bytes;
    return true;
}

/* Equal bits, or both NaN (gguf-py may quiet a signalling NaN on the way). */
static inline bool fixture_same_float(float x, float y) {
    return hl_f32_bits(x) == hl_f32_bits(y) || (isnan(x) && isnan(y));
}

/* Kind 0: hearth's to_float of the blocks a gives the floats b, bit for bit. */
static inline void fixture_check_dequantize(const fixture *fx) {
    const hl_quant_traits *q = hl_quant_get(fx->type);
    const size_t row_bytes = hl_row_size(fx->type, fx->n_per_row);
    CHECK_MSG(q && row_bytes * fx->n_rows == fx->a_bytes, "%s: sizes", fx->name);
    CHECK_MSG(fx->b_bytes == (uint64_t)fx->n_rows * fx->n_per_row * sizeof(float), "%s: sizes", fx->name);
    if (!q || row_bytes * fx->n_rows != fx->a_bytes) return;
    float *out = malloc(fx->n_per_row * sizeof(float));
    int bad = 0;
    for (uint32_t r = 0; r < fx->n_rows; r++) {
        q->to_float(fx->a + r * row_bytes, out, fx->n_per_row);
        for (uint32_t i = 0; i < fx->n_per_row; i++) {
            float expect;
            memcpy(&expect, fx->b + ((size_t)r * fx->n_per_row + i) * sizeof(float), sizeof expect);
            if (!fixture_same_float(out[i], expect) && bad++ < 5) {
                CHECK_MSG(0, "%s row %u [%u]: %.9g, gguf-py %.9g", fx->name, r, i, out[i], expect);
            }
        }
    }
    CHECK_MSG(bad == 0, "%s: %d values differ from gguf-py", fx->name, bad);
    free(out);
}

/* Quantizes the n_rows x n_per_row floats x with hearth's from_float into
 * out and compares with the reference blocks `expect`, row by row. Returns
 * the number of rows that differ; the first one is reported. */
static inline int fixture_quantize_rows(const fixture *fx, const void *x, const uint8_t *expect, uint8_t *out,
                                        const char *reference) {
    const hl_quant_traits *q = hl_quant_get(fx->type);
    const size_t row_bytes = hl_row_size(fx->type, fx->n_per_row);
    float *in = malloc(fx->n_per_row * sizeof(float));
    int bad = 0;
    for (uint32_t r = 0; r < fx->n_rows; r++) {
        memcpy(in, (const uint8_t *)x + (size_t)r * fx->n_per_row * sizeof(float), fx->n_per_row * sizeof(float));
        uint8_t *o = out + r * row_bytes;
        const uint8_t *e = expect + r * row_bytes;
        q->from_float(in, o, fx->n_per_row);
        size_t first = 0;
        while (first < row_bytes && o[first] == e[first]) first++;
        if (first < row_bytes && bad++ == 0) {
            CHECK_MSG(0, "%s row %u: byte %zu is %02x, %s %02x", fx->name, r, first, o[first], reference, e[first]);
        }
    }
    free(in);
    return bad;
}

/* Kind 1: hearth's from_float of the floats a gives the blocks b, byte for byte. */
static inline void fixture_check_quantize(const fixture *fx) {
    const size_t row_bytes = hl_row_size(fx->type, fx->n_per_row);
    CHECK_MSG(hl_quant_get(fx->type) && row_bytes * fx->n_rows == fx->b_bytes, "%s: sizes", fx->name);
    if (!hl_quant_get(fx->type) || row_bytes * fx->n_rows != fx->b_bytes) return;
    uint8_t *out = malloc(row_bytes * fx->n_rows);
    const int bad = fixture_quantize_rows(fx, fx->a, fx->b, out, "gguf-py");
    CHECK_MSG(bad == 0, "%s: %d rows differ from gguf-py", fx->name, bad);
    free(out);
}

#endif
