/* CPU backend instance: memory, thread pool, scratch, what it can run
 * (supports_op), and the op table. */
#include "backend/cpu/common.h"
#include "backend/cpu/row_kernels.h"
#include "backend/cpu/flash_kernels.h"
#include "backend/cpu/vec_dot.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *cpu_name(const hl_backend *b) {
    (void)b;
    return "cpu";
}

static void cpu_mem_info(const hl_backend *b, size_t *free_bytes, size_t *total_bytes) {
    (void)b;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    *free_bytes = (size_t)sysconf(_SC_AVPHYS_PAGES) * page;
    *total_bytes = (size_t)sysconf(_SC_PHYS_PAGES) * page;
}

static hearth_status cpu_alloc(hl_backend *b, size_t bytes, void **out) {
    (void)b;
    /* 64-byte alignment for AVX-512 loads */
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0)
        return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of host memory allocating %zu MiB", bytes >> 20);
    *out = p;
    return HEARTH_OK;
}

static void cpu_free(hl_backend *b, void *ptr) {
    (void)b;
    free(ptr);
}

static hearth_status cpu_copy(hl_backend *b, void *dst, const void *src, size_t bytes) {
    (void)b;
    memcpy(dst, src, bytes);
    return HEARTH_OK;
}

/* Also counts each token's run: the tokens of the pass in its sequence
 * (attention takes the order llama.cpp takes for a batch of that many),
 * and finds where the sequence's positions in the pass end. */
static void cpu_set_positions(hl_backend *b, const int32_t *pos, const int32_t *row0, int32_t n) {
    hl_cpu *cpu = cpu_of(b);
    memcpy(cpu->pos, pos, (size_t)n * sizeof *pos);
    memcpy(cpu->row0, row0, (size_t)n * sizeof *row0);
    for (int32_t t = 0; t < n; t++) {
        int32_t same = 0, end = 0;
        for (int32_t u = 0; u < n; u++)
            if (row0[u] == row0[t]) {
                same++;
                end = pos[u] + 1 > end ? pos[u] + 1 : end;
            }
        cpu->run[t] = same;
        cpu->seq_end[t] = end;
    }
    cpu->n_pos = n;
}

static hearth_status cpu_synchronize(hl_backend *b) {
    (void)b;
    return HEARTH_OK; /* ops run synchronously and cannot fail */
}

const hl_cpu_type_ops *hl_cpu_ops_for(hl_backend *b, uint32_t type) {
    return cpu_of(b)->limits.scalar ? hl_cpu_type_ops_scalar(type) : hl_cpu_type_ops_get(type);
}

const hl_cpu_kernels *hl_cpu_kernels_for(hl_backend *b) {
    return cpu_of(b)->limits.scalar ? &hl_cpu_kernels_scalar : hl_cpu_kernels_get();
}

const hl_flash_kernels *hl_flash_kernels_for(hl_backend *b) {
    return hl_flash_kernels_at(cpu_of(b)->limits.scalar ? HL_CPU_SCALAR : hl_cpu_level_best());
}

static int32_t block_of(uint32_t type) {
    const ggml_type_info *ti = hl_ggml_type_get(type);
    return ti ? (int32_t)ti->blck_size : 0;
}

/* Whether rows of n elements are whole blocks of `type`. */
static bool whole_blocks(uint32_t type, int64_t n) {
    const int32_t blck = block_of(type);
    return blck > 0 && n % blck == 0;
}

bool hl_cpu_kv_type_runs(uint32_t type, int64_t head_dim) {
    const bool kv = type == GGML_TYPE_F16 || type == GGML_TYPE_BF16 || type == GGML_TYPE_Q8_0 || type == GGML_TYPE_Q4_0;
    return kv && head_dim <= HL_KERNELS_MAX_HEAD_DIM && whole_blocks(type, head_dim);
}

hl_from_float_fn hl_cpu_cache_from_float(hl_backend *b, uint32_t type) {
    const hl_cpu_type_ops *ops = hl_cpu_ops_for(b, type);
    return ops && ops->vec_dot_type == type ? ops->act_from_float : hl_quant_get(type)->from_float;
}

/* matmul_unit (common.h): the largest of the blocks a row is cut into
 * (all are 1, 32 or 256, so the largest is a multiple of the others). */
static void find_matmul_units(hl_cpu *cpu) {
    for (uint32_t type = 0; type < GGML_TYPE_COUNT; type++) {
        const hl_cpu_type_ops *ops = cpu->limits.scalar ? hl_cpu_type_ops_scalar(type) : hl_cpu_type_ops_get(type);
        if (!ops) continue;
        const int32_t units[] = {block_of(type), block_of(ops->vec_dot_type),
                                 ops->batch ? block_of(ops->batch->vec_dot_type) : 1};
        int32_t unit = 1;
        for (int i = 0; i < 3; i++) unit = units[i] > unit ? units[i] : unit;
        for (int i = 0; i < 3; i++) unit = units[i] > 0 && unit % units[i] == 0 ? unit : 0;
        cpu->matmul_unit[type] = unit;
    }
}

/* The kernels answer: matmul for the weight types with vec-dot kernels at
 * this instance's level (its activations converted to whole blocks of the
 * vec-dot type), rows of any type with reference conversions, KV caches
 * of the hearth_kv_type types for attention and the K-shift, and heads and rotations within the stack arrays
 * (HL_KERNELS_MAX_HEAD_DIM). The F32 element-wise ops always run. */
static bool cpu_supports_op(const hl_backend *b, const hl_op_desc *d) {
    const hl_cpu *cpu = (const hl_cpu *)b->impl;
    switch (d->op) {
    case HL_OP_MATMUL:
    case HL_OP_MATMUL_ADD:  /* matmul, then add (ops.h) */
    case HL_OP_MATMUL_ID: { /* matmul_id: the matmul of each expert's slice */
        const hl_tensor *w = d->t[0];
        const int32_t unit = w->type < GGML_TYPE_COUNT ? cpu->matmul_unit[w->type] : 0;
        return unit > 0 && w->ne[0] % unit == 0;
    }
    case HL_OP_GET_ROWS: return hl_quant_get(d->t[0]->type) && whole_blocks(d->t[0]->type, d->t[0]->ne[0]);
    case HL_OP_STORE_ROWS: return hl_quant_get(d->t[1]->type) && whole_blocks(d->t[1]->type, d->t[1]->ne[0]);
    case HL_OP_ATTENTION: /* a quantized V cache on the tiled path only, as llama.cpp; no window with a
                             bidirectional mask */
        return !(d->attn->bidirectional && d->attn->n_swa > 0) &&
               hl_cpu_kv_type_runs(d->attn->k_cache->type, d->attn->head_dim) &&
               hl_cpu_kv_type_runs(d->attn->v_cache->type, d->attn->head_dim) &&
               (cpu->limits.flash_attn || block_of(d->attn->v_cache->type) == 1);
    case HL_OP_ROPE:
        return (d->rope->mode == HL_ROPE_NORMAL || d->rope->mode == HL_ROPE_NEOX) &&
               d->rope->n_rot <= HL_KERNELS_MAX_HEAD_DIM;
    case HL_OP_ROPE_STORE: /* rope, then store_rows (ops.h) */
        return (d->rope->mode == HL_ROPE_NORMAL || d->rope->mode == HL_ROPE_NEOX) &&
               d->rope->n_rot <= HL_KERNELS_MAX_HEAD_DIM && hl_quant_get(d->t[3]->type) &&
               whole_blocks(d->t[3]->type, d->t[3]->ne[0]) && hl_quant_get(d->t[4]->type) &&
               whole_blocks(d->t[4]->type, d->t[4]->ne[0]);
    case HL_OP_ROPE_SHIFT:
        return hl_cpu_kv_type_runs(d->t[0]->type, d->t[0]->ne[0] / d->n_head) &&
               (d->rope->mode == HL_ROPE_NORMAL || d->rope->mode == HL_ROPE_NEOX) &&
               d->rope->n_rot <= HL_KERNELS_MAX_HEAD_DIM;
    default: return true;
    }
}

static const hl_backend_i cpu_iface = {
    .name = cpu_name,
    .free = hl_backend_cpu_free,
    .mem_info = cpu_mem_info,
    .buffer_alloc = cpu_alloc,
    .buffer_free = cpu_free,
    .upload = cpu_copy,
    .download = cpu_copy,
    .copy = cpu_copy,
    .set_positions = cpu_set_positions,
    .get_rows = hl_cpu_get_rows,
    .rms_norm = hl_cpu_rms_norm,
    .layer_norm = hl_cpu_layer_norm,
    .matmul = hl_cpu_matmul,
    .matmul_n = hl_cpu_matmul_n,
    .rope = hl_cpu_rope,
    .rope_shift = hl_cpu_rope_shift,
    .store_rows = hl_cpu_store_rows,
    .attention = hl_cpu_attention,
    .swiglu = hl_cpu_swiglu,
    .geglu = hl_cpu_geglu,
    .gelu = hl_cpu_gelu,
    .add = hl_cpu_add,
    .scale = hl_cpu_scale,
    .moe_route = hl_cpu_moe_route,
    .matmul_id = hl_cpu_matmul_id,
    .moe_sum = hl_cpu_moe_sum,
    .clamp = hl_cpu_clamp,
    .supports_op = cpu_supports_op,
    .synchronize = cpu_synchronize,
};

/* Arrays of one int32 per token: pos, row0, run, seq_end, moe_x_rows, moe_y_rows. */
#define N_TOKEN_INTS 6

/* The scratch buffers an instance with these limits allocates, in bytes:
 * hl_backend_cpu_init allocates exactly these, hl_cpu_scratch_bytes sums
 * them (a context's memory plan). */
typedef struct cpu_scratch {
    size_t act, aux, panels, scores, probs, token_ints; /* token_ints: each of N_TOKEN_INTS arrays */
    size_t fa_ws, fa_blocks, fa_partial, fa_done;       /* the tiled attention's (flash_attn only) */
} cpu_scratch;

static cpu_scratch scratch_sizes(const hl_cpu_limits *limits) {
    const size_t n = (size_t)limits->n_threads, tokens = (size_t)limits->max_tokens;
    cpu_scratch s = {
        .act = tokens * (size_t)limits->max_row * 4, /* up to a float per element (vec_dot.h) */
        .aux = tokens * (size_t)(limits->max_row / HL_QK + 1) * sizeof(hl_act_aux),
        .panels = n * HL_PANEL_BYTES(limits->max_row),
        .token_ints = tokens * sizeof(int32_t),
    };
    if (!limits->flash_attn) {
        s.scores = n * (size_t)limits->n_ctx * sizeof(float);
        s.probs = n * (size_t)limits->n_ctx * sizeof(hl_half);
    } else {
        /* the chunks of split tasks: 512 KiB per thread holds those of a
         * decode (HL_CPU_FLASH_SPLIT_TASKS tasks of a few rows) at depth 32k */
        s.fa_ws = n * hl_cpu_flash_ws_floats() * sizeof(float);
        s.fa_blocks = (tokens + 1) * sizeof(int32_t);
        s.fa_partial = n * 131072 * sizeof(float);
        s.fa_done = n * HL_CPU_FLASH_SPLIT_TASKS * sizeof(_Atomic int);
    }
    return s;
}

size_t hl_cpu_scratch_bytes(const hl_cpu_limits *limits) {
    if (limits->max_tokens == 0) return 0;
    const cpu_scratch s = scratch_sizes(limits);
    return s.act + s.aux + s.panels + s.scores + s.probs + N_TOKEN_INTS * s.token_ints + s.fa_ws + s.fa_blocks +
           s.fa_partial + s.fa_done;
}

hearth_status hl_backend_cpu_init(const hl_cpu_limits *limits, hl_backend **out) {
    *out = NULL;
    if (limits->max_tokens < 0 ||
        (limits->max_tokens > 0 && (limits->n_threads < 1 || limits->max_row < 1 || limits->n_ctx < 1)))
        return hl_fail(HEARTH_ERR_INVALID_ARG, "CPU backend: n_threads, batch, row and context sizes must be >= 1");
    hl_backend *b = hl_calloc(1, sizeof *b);
    hl_cpu *cpu = hl_calloc(1, sizeof *cpu);
    if (!b || !cpu) {
        free(b);
        free(cpu);
        return HEARTH_ERR_OUT_OF_MEMORY;
    }
    b->iface = &cpu_iface;
    b->impl = cpu;
    cpu->limits = *limits;
    find_matmul_units(cpu);
    if (limits->max_tokens == 0) { /* weights and questions only */
        *out = b;
        return HEARTH_OK;
    }
    b->limits = (hl_backend_limits){
        .max_tokens = limits->max_tokens, .max_row = limits->max_row, .max_span = limits->n_ctx};
    hearth_status st = hl_pool_init(limits->n_threads, &cpu->pool);
    const cpu_scratch sz = scratch_sizes(limits);
    if (st == HEARTH_OK) st = cpu_alloc(b, sz.act, (void **)&cpu->act);
    if (st == HEARTH_OK) st = cpu_alloc(b, sz.aux, &cpu->act_aux);
    if (st == HEARTH_OK) st = cpu_alloc(b, sz.panels, (void **)&cpu->panels);
    if (st == HEARTH_OK && !limits->flash_attn) st = cpu_alloc(b, sz.scores, (void **)&cpu->scores);
    if (st == HEARTH_OK && !limits->flash_attn) st = cpu_alloc(b, sz.probs, (void **)&cpu->probs);
    int32_t **token_ints[N_TOKEN_INTS] = {&cpu->pos,     &cpu->row0,       &cpu->run,
                                          &cpu->seq_end, &cpu->moe_x_rows, &cpu->moe_y_rows};
    for (size_t i = 0; i < N_TOKEN_INTS && st == HEARTH_OK; i++)
        st = cpu_alloc(b, sz.token_ints, (void **)token_ints[i]);
    if (limits->flash_attn) {
        cpu->fa_partial_floats = sz.fa_partial / sizeof(float);
        if (st == HEARTH_OK) st = cpu_alloc(b, sz.fa_ws, (void **)&cpu->fa_ws);
        if (st == HEARTH_OK) st = cpu_alloc(b, sz.fa_blocks, (void **)&cpu->fa_blocks);
        if (st == HEARTH_OK) st = cpu_alloc(b, sz.fa_partial, (void **)&cpu->fa_partial);
        if (st == HEARTH_OK) st = cpu_alloc(b, sz.fa_done, (void **)&cpu->fa_done);
    }
    if (st != HEARTH_OK) {
        hl_backend_cpu_free(b);
        return st;
    }
    *out = b;
    return HEARTH_OK;
}

void hl_backend_cpu_free(hl_backend *b) {
    if (!b) return;
    hl_cpu *cpu = cpu_of(b);
    hl_pool_free(cpu->pool);
    free(cpu->act);
    free(cpu->act_aux);
    free(cpu->panels);
    free(cpu->scores);
    free(cpu->probs);
    free(cpu->pos);
    free(cpu->row0);
    free(cpu->run);
    free(cpu->seq_end);
    free(cpu->moe_x_rows);
    free(cpu->moe_y_rows);
    free(cpu->fa_ws);
    free(cpu->fa_blocks);
    free(cpu->fa_partial);
    free(cpu->fa_done);
    free(cpu);
    free(b);
}
