/* libFuzzer harness for the GGUF reader: any input must give HEARTH_OK or
 * HEARTH_ERR_FORMAT, and an accepted file must be safe to read everywhere it
 * points. Not built by CMake; build and run it from the repository root: */
// clang -g -O1 -fsanitize=fuzzer,address,undefined -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Iinclude -Isrc src/base/*.c src/gguf/*.c tests/fuzz/fuzz_gguf.c -o fuzz_gguf -lm && ./fuzz_gguf -max_total_time=60 CORPUS_DIR
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"

/* Touches every value, array element and tensor byte range the file offers. */
static void walk_value(const gguf_value *v, unsigned *sum) {
    if (v->type == GGUF_TYPE_STRING) {
        if (v->v.str.len) *sum += (uint8_t)v->v.str.data[v->v.str.len - 1];
        return;
    }
    if (v->type != GGUF_TYPE_ARRAY || v->v.arr.n == 0) return;
    const gguf_array *a = &v->v.arr;
    if (a->elem_type == GGUF_TYPE_ARRAY) {
        for (uint64_t i = 0; i < a->n; i++) walk_value(&a->arrs[i], sum);
    } else if (a->elem_type == GGUF_TYPE_STRING) {
        for (uint64_t i = 0; i < a->n; i++)
            if (a->strs[i].len) *sum += (uint8_t)a->strs[i].data[a->strs[i].len - 1];
    } else if (a->elem_type == GGUF_TYPE_INT32) {
        *sum += (unsigned)hl_gguf_arr_i32(a, a->n - 1);
    } else {
        *sum += a->raw[0];
    }
}

static unsigned walk(const gguf_file *f) {
    unsigned sum = 0;
    for (uint64_t i = 0; i < hl_gguf_n_kv(f); i++) {
        const gguf_kv *kv = hl_gguf_kv_at(f, i);
        char key[256];
        int len = (int)(kv->key.len < 255 ? kv->key.len : 255);
        snprintf(key, sizeof key, "%.*s", len, kv->key.data);
        uint32_t u;
        int32_t s;
        float x;
        bool b;
        gguf_str str;
        const gguf_array *a;
        if (hl_gguf_get_u32(f, key, true, &u) == HEARTH_OK) sum += u;
        if (hl_gguf_get_i32(f, key, true, &s) == HEARTH_OK) sum += (unsigned)s;
        if (hl_gguf_get_f32(f, key, true, &x) == HEARTH_OK) sum += x > 0;
        if (hl_gguf_get_bool(f, key, true, &b) == HEARTH_OK) sum += b;
        if (hl_gguf_get_str(f, key, true, &str) == HEARTH_OK) sum += (unsigned)str.len;
        if (hl_gguf_get_arr(f, key, true, GGUF_TYPE_FLOAT32, &a) == HEARTH_OK && a->n) sum += hl_gguf_arr_f32(a, 0) > 0;
        walk_value(&kv->value, &sum);
    }
    for (uint64_t i = 0; i < hl_gguf_n_tensors(f); i++) {
        const gguf_tensor *t = hl_gguf_tensor_at(f, i);
        const uint8_t *d = t->data;
        sum += d[0] + d[t->size - 1];
        sum += hl_gguf_find_tensor(f, "token_embd.weight") != NULL;
    }
    return sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gguf_file *f = NULL;
    hearth_status st = hl_gguf_open_memory(size ? data : (const uint8_t *)"", size, &f);
    if (st != HEARTH_OK && st != HEARTH_ERR_FORMAT) abort();
    if (st == HEARTH_OK) {
        volatile unsigned sink = walk(f);
        (void)sink;
    } else if (f != NULL) {
        abort();
    }
    hl_gguf_close(f);
    return 0;
}
