/* Shared by every backend (see backend.h): tensor sizes, op names, and the
 * message of a refused op call (ops.h). */
#include "backend/backend.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gguf/ggml_types.h"

int64_t hl_tensor_nelements(const hl_tensor *t) { return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]; }

size_t hl_tensor_nbytes(const hl_tensor *t) {
    const ggml_type_info *ti = hl_ggml_type_get(t->type);
    return (size_t)(hl_tensor_nelements(t) / ti->blck_size) * ti->type_size;
}

static const char *const op_names[HL_OP_COUNT] = {
#define HL_OP_NAME(id, name) #name,
    HL_OPS(HL_OP_NAME)
#undef HL_OP_NAME
};

/* The names of each op's tensors, in HL_OPS order. */
static const char *const op_tensors[HL_OP_COUNT][HL_OP_MAX_TENSORS] = {
    [HL_OP_GET_ROWS] = {"table", "out"},
    [HL_OP_RMS_NORM] = {"x", "w", "y"},
    [HL_OP_LAYER_NORM] = {"x", "w", "b", "y"},
    [HL_OP_GELU] = {"x"},
    [HL_OP_MATMUL] = {"w", "x", "y"},
    [HL_OP_ROPE] = {"x", "freq_factors"},
    [HL_OP_MATMUL_ADD] = {"w", "x", "y", "tmp"},
    [HL_OP_ROPE_SHIFT] = {"cache", "freq_factors"},
    [HL_OP_ROPE_STORE] = {"q", "k", "v", "k_cache", "v_cache", "freq_factors"},
    [HL_OP_STORE_ROWS] = {"src", "cache"},
    [HL_OP_ATTENTION] = {"q", "k_cache", "v_cache", "out"},
    [HL_OP_SWIGLU] = {"gate", "up"},
    [HL_OP_GEGLU] = {"gate", "up"},
    [HL_OP_ADD] = {"x", "y"},
    [HL_OP_SCALE] = {"x"},
    [HL_OP_CLAMP] = {"x"},
};

const char *hl_op_name(hl_op op) { return (unsigned)op < HL_OP_COUNT ? op_names[op] : NULL; }

hl_op hl_op_from_name(const char *name) {
    for (int op = 0; op < HL_OP_COUNT; op++)
        if (strcmp(op_names[op], name) == 0) return (hl_op)op;
    return HL_OP_COUNT;
}

hearth_status hl_op_refuse(const hl_backend *b, const hl_op_desc *d, hearth_status st, const char *fmt, ...) {
    char why[256], tensors[512] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    size_t len = 0;
    for (int i = 0; i < HL_OP_MAX_TENSORS && len < sizeof tensors; i++) {
        const hl_tensor *t = d->t[i];
        const char *arg = op_tensors[d->op][i];
        if (!t || !arg) continue;
        const ggml_type_info *ti = hl_ggml_type_get(t->type);
        len += (size_t)snprintf(tensors + len, sizeof tensors - len, "%s%s %s {%lld, %lld}", len ? ", " : "", arg,
                                ti ? ti->name : "?", (long long)t->ne[0], (long long)t->ne[1]);
    }
    return hl_fail(st, "%s on %s: %s (%s)", hl_op_name(d->op), b->iface->name(b), why, tensors);
}
