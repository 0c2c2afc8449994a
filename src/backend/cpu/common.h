/* Private state of the CPU backend, shared by its op files. */
#ifndef HEARTH_BACKEND_CPU_COMMON_H
#define HEARTH_BACKEND_CPU_COMMON_H

#include "backend/host.h"
#include "backend/cpu/vec_dot.h"
#include "base/threadpool.h"
#include "quant/quant.h"

typedef struct hl_cpu {
    hl_cpu_limits limits;
    hl_pool *pool;
    uint8_t *act;    /* activations converted to a vec-dot type: max_tokens * max_row * 2 bytes */
    void *act_aux;   /* their per-block extras for panels: hl_act_aux[max_tokens][max_row / 32] */
    uint8_t *panels; /* one panel of repacked weight rows per thread, HL_PANEL_BYTES(max_row) each */
    float *scores;   /* attention scores, n_ctx floats per thread */
    hl_half *probs;  /* attention probabilities in F16, n_ctx per thread */
    /* the pass's tokens (set_positions), max_tokens each: position in the
     * sequence, the sequence's first cache row, how many tokens of the
     * pass belong to the same sequence, and one past the last position of
     * the sequence's tokens in the pass (what a bidirectional query sees) */
    int32_t *pos, *row0, *run, *seq_end;
    int32_t n_pos;
    /* one expert's rows of a matmul_id (moe.c), max_tokens each: x and y row of each */
    int32_t *moe_x_rows, *moe_y_rows;
    /* the tiled attention's scratch (limits.flash_attn only): per thread
     * hl_cpu_flash_ws_floats() floats; block starts (max_tokens + 1);
     * partial results of split tasks and their counters */
    float *fa_ws;
    int32_t *fa_blocks;
    float *fa_partial;
    size_t fa_partial_floats;
    _Atomic int *fa_done;
    /* per weight type, the elements a row must be whole multiples of for
     * this instance's matmul kernels (the type's block and its activations'
     * vec-dot block); 0: no kernel. Filled at init, read by supports_op. */
    int32_t matmul_unit[GGML_TYPE_COUNT];
} hl_cpu;

/* One past the last cell (relative to row0[t]) query token t sees: its own
 * position's (causal), or under an encoder's bidirectional attention the
 * last position of its sequence's tokens in the pass. */
static inline int64_t hl_cpu_attn_end(const hl_attn_args *a, const int32_t *pos, const int32_t *seq_end, int32_t t) {
    return a->bidirectional ? seq_end[t] : (int64_t)pos[t] + 1;
}

static inline hl_cpu *cpu_of(hl_backend *b) { return (hl_cpu *)b->impl; }

/* The kernels this instance uses: the best level, or the scalar ones with limits.scalar. */
const hl_cpu_type_ops *hl_cpu_ops_for(hl_backend *b, uint32_t type);
const struct hl_cpu_kernels *hl_cpu_kernels_for(hl_backend *b);
const struct hl_flash_kernels *hl_flash_kernels_for(hl_backend *b);

/* Whether attention and the K-shift read a KV cache of `type` with heads
 * of head_dim elements: F16, BF16, Q8_0 or Q4_0 (hearth_kv_type), each
 * head whole blocks of the type. */
bool hl_cpu_kv_type_runs(uint32_t type, int64_t head_dim);

/* How F32 rows become rows of a KV cache of `type` (store_rows, the
 * K-shift), as ggml-cpu's from_float does for its set_rows and cpy: the
 * CPU's own converter where the type is its own vec-dot type (Q8_0's
 * round-half-even quantizer, F16, BF16), else the reference quantizer
 * (ggml's quantize_row_q4_0 is its _ref). */
hl_from_float_fn hl_cpu_cache_from_float(hl_backend *b, uint32_t type);

/* Floats of one thread's scratch in the tiled attention. */
size_t hl_cpu_flash_ws_floats(void);
/* Split tasks the tiled attention keeps counters for, per thread. */
#define HL_CPU_FLASH_SPLIT_TASKS 4

/* Ops, one file per family. */
void hl_cpu_get_rows(hl_backend *b, const hl_tensor *table, const int32_t *ids, hl_tensor *out);
void hl_cpu_rms_norm(hl_backend *b, const hl_tensor *x, const hl_tensor *w, float eps, hl_tensor *y);
void hl_cpu_layer_norm(hl_backend *b, const hl_tensor *x, const hl_tensor *w, const hl_tensor *bias, float eps,
                       hl_tensor *y);
void hl_cpu_rope(hl_backend *b, hl_tensor *x, int32_t n_head, const hl_rope_params *p, const hl_tensor *freq_factors);
void hl_cpu_rope_shift(hl_backend *b, hl_tensor *cache, int64_t row, int64_t n, int32_t n_head, int32_t delta,
                       const hl_rope_params *p, const hl_tensor *freq_factors);
void hl_cpu_store_rows(hl_backend *b, const hl_tensor *src, hl_tensor *cache);
void hl_cpu_swiglu(hl_backend *b, hl_tensor *gate, const hl_tensor *up);
void hl_cpu_geglu(hl_backend *b, hl_tensor *gate, const hl_tensor *up);
void hl_cpu_gelu(hl_backend *b, hl_tensor *x);
void hl_cpu_add(hl_backend *b, hl_tensor *x, const hl_tensor *y);
void hl_cpu_scale(hl_backend *b, hl_tensor *x, float s);
void hl_cpu_clamp(hl_backend *b, hl_tensor *x, float lo, float hi);
void hl_cpu_matmul(hl_backend *b, const hl_tensor *w, const hl_tensor *x, hl_tensor *y);
void hl_cpu_matmul_n(hl_backend *b, int n, const hl_tensor *const *w, const hl_tensor *x, hl_tensor *const *y);
/* y row y_rows[t] = W . (x row x_rows[t]) for t < n (n <= max_tokens), each
 * token through the one-token kernels (their bits do not depend on n): the
 * tokens that a matmul_id routes to one expert, gathered and scattered as
 * llama.cpp's mul_mat_id gathers them, and multiplied as it does, row by
 * row with vec_dot. */
void hl_cpu_matmul_rows(hl_backend *b, const hl_tensor *w, const hl_tensor *x, const int32_t *x_rows, hl_tensor *y,
                        const int32_t *y_rows, int64_t n);
void hl_cpu_moe_route(hl_backend *b, const hl_tensor *logits, hl_tensor *ids, hl_tensor *weights);
void hl_cpu_matmul_id(hl_backend *b, const hl_tensor *w, const hl_tensor *x, const hl_tensor *ids, hl_tensor *y);
void hl_cpu_moe_sum(hl_backend *b, const hl_tensor *y, const hl_tensor *weights, hl_tensor *out);
void hl_cpu_attention(hl_backend *b, const hl_attn_args *args);
void hl_cpu_flash_attention(hl_backend *b, const hl_attn_args *args);

#endif
