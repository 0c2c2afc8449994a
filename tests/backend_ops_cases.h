/* The case table of test_backend_ops.c (its only includer): what the
 * backend instances are sized for, one op_case per op, type and shape with
 * its tolerance, and a case's label. */
#ifndef HEARTH_TESTS_BACKEND_OPS_CASES_H
#define HEARTH_TESTS_BACKEND_OPS_CASES_H

#include <stdio.h>

#include "backend/ops.h"
#include "gguf/ggml_types.h"

/* What the backend instances are sized for: every case fits. */
#define MAX_TOKENS 512
#define MAX_ROW 4608
#define MAX_CTX 1024
#define GUARD 256   /* bytes before and after every tensor */
#define SEQ1_ROW 48 /* first cache row of sequence 1 in the two-sequence cases; sequence 0's is 0 */

/* ------------------------------------------------------------ the cases -- */

typedef struct op_case {
    hl_op op;
    uint32_t type;   /* matmul's weight, get_rows' table, the KV cache of store_rows, rope_shift and attention */
    uint32_t type_v; /* attention's V cache when it differs from the K cache (`type`); 0: the same */
    int64_t d;       /* row length: of the weight / table, of rms_norm's w, of element-wise tensors */
    int64_t rows;    /* weight rows (d_out), table rows; rms_norm: runs of d in a row (QK-norm: heads) */
    int64_t n;       /* tokens */
    int32_t n_head, n_head_kv, head_dim;
    int32_t n_rot, mode; /* rope */
    int32_t pos0, n_swa, split,
        pos1;                 /* token t < split at pos0 + t of sequence 0, the others at pos1 + ... of sequence 1 */
    int32_t n_ctx;            /* cache rows */
    bool variant;             /* rms_norm: y is x (in place); rope: with frequency factors; add: y is a bias {d} */
    bool perf;                /* a real model's shape, timed in perf mode only */
    bool yarn;                /* rope, rope_shift: YaRN (ext_factor 1, freq_scale 1/4, 4096 original tokens) */
    bool no_bias;             /* layer_norm without its bias (mpt's) */
    float max_bias;           /* attention: ALiBi's (hl_attn_args.max_bias) */
    bool bidirectional;       /* attention: an encoder's mask (hl_attn_args.bidirectional), also checked against a
                           direct computation in double (test_backend_ops.c check_direct) */
    int32_t n_expert, k_used; /* matmul_id, moe_route: experts, and experts per token (moe_sum too) */
    int32_t result;           /* rope_store: the tensor compared (0 q, 3 k_cache, 4 v_cache) */
    double max_nmse;
    double max_abs; /* and, when nonzero, the largest |y - ref| of an element */
} op_case;

#define MM(t, din, nt)                                                                                                 \
    { .op = HL_OP_MATMUL, .type = GGML_TYPE_##t, .d = din, .rows = 67, .n = nt, .max_nmse = 5e-4 }
/* y += W x (the residual through the output projection): decode (matvec) and prompt (cuBLAS) paths */
#define MM_ADD(t, din, nt)                                                                                             \
    { .op = HL_OP_MATMUL_ADD, .type = GGML_TYPE_##t, .d = din, .rows = 67, .n = nt, .max_nmse = 5e-4 }
#define GET_ROWS(t, din)                                                                                               \
    { .op = HL_OP_GET_ROWS, .type = GGML_TYPE_##t, .d = din, .rows = 67, .n = 5, .max_nmse = 1e-10 }
/* each weight type: a row length of whole blocks (1, 32 or 256 elements) that is no multiple of a larger unit;
 * 19 and 67 tokens take the prompt paths (CUDA: cuBLAS from 8 tokens for the float types, from cuda/gemm.cu's
 * mv_max_tokens for the quantized ones, which run 19 tokens (Q2_K and Q3_K 67 too) as matvec launches of 8;
 * CLBlast from opencl/gemm.c GEMM_MIN_TOKENS) */
#define WEIGHT(t, din)                                                                                                 \
    GET_ROWS(t, din), MM(t, din, 1), MM(t, din, 2), MM(t, din, 7), MM(t, din, 8), MM(t, din, 19), MM(t, din, 67),
#define NORM(dd, runs, nt, inplace)                                                                                    \
    { .op = HL_OP_RMS_NORM, .d = dd, .rows = runs, .n = nt, .variant = inplace, .max_nmse = 1e-6 }
/* LayerNorm over rows of dd (gpt2's 768, an odd row, a short one); in place or not */
#define LNORM(dd, nt, inplace)                                                                                         \
    { .op = HL_OP_LAYER_NORM, .d = dd, .n = nt, .variant = inplace, .max_nmse = 1e-6 }
#define LNORM_NO_BIAS(dd, nt, inplace)                                                                                 \
    { .op = HL_OP_LAYER_NORM, .d = dd, .n = nt, .variant = inplace, .no_bias = true, .max_nmse = 1e-6 }
#define ROPE(m, rot, ff)                                                                                               \
    {                                                                                                                  \
        .op = HL_OP_ROPE, .n_head = 3, .head_dim = 64, .n = 5, .pos0 = 37, .n_rot = rot, .mode = HL_ROPE_##m,          \
        .variant = ff, .max_nmse = 1e-5                                                                                \
    }
/* YaRN at a position past the original context's ramp, with and without factors */
#define ROPE_YARN(m, rot, ff, p0)                                                                                      \
    {                                                                                                                  \
        .op = HL_OP_ROPE, .n_head = 3, .head_dim = 64, .n = 5, .pos0 = p0, .n_rot = rot, .mode = HL_ROPE_##m,          \
        .variant = ff, .yarn = true, .max_nmse = 1e-5                                                                  \
    }
/* the K-shift: rows [p0, p0 + nt) of an F16 cache of 96 rows turned by delta positions (every row compared: the
 * others must stay); F16 results, so backends may differ in the last bit of a few */
#define SHIFT(m, hkv, hd, rot, nt, p0, delta, ff, y)                                                                   \
    {                                                                                                                  \
        .op = HL_OP_ROPE_SHIFT, .type = GGML_TYPE_F16, .n_head_kv = hkv, .head_dim = hd, .n_rot = rot,                 \
        .mode = HL_ROPE_##m, .n = nt, .pos0 = p0, .pos1 = delta, .n_ctx = 96, .variant = ff, .yarn = y,                \
        .max_nmse = 1e-6                                                                                               \
    }
/* the K-shift of a quantized cache (each head dequantized, rotated, requantized): the scalar and SIMD
 * quantizers write the same bytes, so the bound is the F16 cases' */
#define SHIFT_KV(t, m, hkv, hd, rot, nt, p0, delta)                                                                    \
    {                                                                                                                  \
        .op = HL_OP_ROPE_SHIFT, .type = GGML_TYPE_##t, .n_head_kv = hkv, .head_dim = hd, .n_rot = rot,                 \
        .mode = HL_ROPE_##m, .n = nt, .pos0 = p0, .pos1 = delta, .n_ctx = 96, .max_nmse = 1e-6                         \
    }
/* rope of q and k and the store of k and v in one op (cuda/rope.cu's fused kernel; the other backends run the
 * four ops): q, or a whole cache (F16 results may differ in the last bit of a few, a quantized cache's blocks by
 * a quant where a roped value sits at a rounding edge) */
#define ROPE_STORE(t, m, h, hkv, hd, rot, nt, p0, ff, res)                                                             \
    {                                                                                                                  \
        .op = HL_OP_ROPE_STORE, .type = GGML_TYPE_##t, .n_head = h, .n_head_kv = hkv, .head_dim = hd, .n_rot = rot,    \
        .mode = HL_ROPE_##m, .n = nt, .pos0 = p0, .n_ctx = 96, .variant = ff, .result = res,                           \
        .max_nmse = res == 0                                                             ? 1e-5                        \
                    : GGML_TYPE_##t == GGML_TYPE_Q8_0 || GGML_TYPE_##t == GGML_TYPE_Q4_0 ? 1e-5                        \
                                                                                         : 1e-6                        \
    }
#define STORE_KV(t, hkv, hd, nt, p0)                                                                                   \
    {                                                                                                                  \
        .op = HL_OP_STORE_ROWS, .type = GGML_TYPE_##t, .n_head_kv = hkv, .head_dim = hd, .n = nt, .pos0 = p0,          \
        .n_ctx = 96, .max_nmse = 1e-10                                                                                 \
    }
#define STORE(hkv, hd, nt, p0)                                                                                         \
    {                                                                                                                  \
        .op = HL_OP_STORE_ROWS, .type = GGML_TYPE_F16, .n_head_kv = hkv, .head_dim = hd, .n = nt, .pos0 = p0,          \
        .n_ctx = 96, .max_nmse = 1e-10                                                                                 \
    }
/* Attention outputs are averages of V rows in [-1, 1); the exact path rounds
 * the probabilities to F16 as llama.cpp does (relative error 2^-11), the
 * tiled path (cpu-fa) keeps them in F32 and sums in another order: per
 * element they agree to this much (measured: 2.9e-4 at worst, NMSE 6e-8). */
#define ATTN_MAX_ABS 1e-3
#define ATTN(h, hkv, hd, nt, p0, swa, sp, p1)                                                                          \
    {                                                                                                                  \
        .op = HL_OP_ATTENTION, .type = GGML_TYPE_F16, .n_head = h, .n_head_kv = hkv, .head_dim = hd, .n = nt,          \
        .pos0 = p0, .n_swa = swa, .split = sp, .pos1 = p1, .n_ctx = 96, .max_nmse = 5e-4, .max_abs = ATTN_MAX_ABS      \
    }
/* the same over a cache of MAX_CTX cells: several tiles of the tiled path, its split over the KV length */
#define ATTN_LONG(h, hkv, hd, nt, p0, swa, sp, p1)                                                                     \
    {                                                                                                                  \
        .op = HL_OP_ATTENTION, .type = GGML_TYPE_F16, .n_head = h, .n_head_kv = hkv, .head_dim = hd, .n = nt,          \
        .pos0 = p0, .n_swa = swa, .split = sp, .pos1 = p1, .n_ctx = MAX_CTX, .max_nmse = 5e-4, .max_abs = ATTN_MAX_ABS \
    }
/* attention over a K cache of type tk and a V cache of type tv (llama.cpp's -ctk, -ctv): quantized keys meet the
 * query quantized to Q8_0 in every path, so the scores agree; a BF16 V cache without flash attention rounds the
 * probabilities to BF16 (relative error 2^-8) where the tiled path keeps them in F32: a looser bound there */
#define ATTN_KV_BF16_MAX_ABS 4e-3
#define ATTN_KV(tk, tv, h, hkv, hd, nt, p0, swa, sp, p1, ctx)                                                          \
    {                                                                                                                  \
        .op = HL_OP_ATTENTION, .type = GGML_TYPE_##tk, .type_v = GGML_TYPE_##tv, .n_head = h, .n_head_kv = hkv,        \
        .head_dim = hd, .n = nt, .pos0 = p0, .n_swa = swa, .split = sp, .pos1 = p1, .n_ctx = ctx, .max_nmse = 5e-4,    \
        .max_abs = GGML_TYPE_##tv == GGML_TYPE_BF16 ? ATTN_KV_BF16_MAX_ABS : ATTN_MAX_ABS                              \
    }
/* ALiBi (max_bias 8, bloom's; 4, 0.5) over head counts that are no power of two (6, 12: ggml's second run of
 * slopes), MHA, GQA and MQA, short and long spans, two sequences */
#define ATTN_ALIBI(h, hkv, hd, nt, p0, sp, p1, ctx, mb)                                                                \
    {                                                                                                                  \
        .op = HL_OP_ATTENTION, .type = GGML_TYPE_F16, .n_head = h, .n_head_kv = hkv, .head_dim = hd, .n = nt,          \
        .pos0 = p0, .split = sp, .pos1 = p1, .n_ctx = ctx, .max_bias = mb, .max_nmse = 5e-4, .max_abs = ATTN_MAX_ABS   \
    }
/* an encoder's bidirectional attention: every token of a sequence sees all of its cells up to the last position
 * of the pass, one sequence or two, with ALiBi (mb > 0) or without, short and over several tiles */
#define ATTN_BIDI(h, hkv, hd, nt, p0, sp, p1, ctx, mb)                                                                 \
    {                                                                                                                  \
        .op = HL_OP_ATTENTION, .type = GGML_TYPE_F16, .n_head = h, .n_head_kv = hkv, .head_dim = hd, .n = nt,          \
        .pos0 = p0, .split = sp, .pos1 = p1, .n_ctx = ctx, .max_bias = mb, .bidirectional = true, .max_nmse = 5e-4,    \
        .max_abs = ATTN_MAX_ABS                                                                                        \
    }
#define EW(o, v)                                                                                                       \
    { .op = HL_OP_##o, .d = 1003, .n = 3, .variant = v, .max_nmse = 1e-5 }
/* ffn_down's shape: rows of n_ff = 1536, whole blocks of every type */
/* weight type, d_in, tokens, experts, experts per token, x per slot ({d_in, k, n}) or per token */
#define MMID(t, din, nt, ne, k, per_slot)                                                                              \
    {                                                                                                                  \
        .op = HL_OP_MATMUL_ID, .type = GGML_TYPE_##t, .d = din, .rows = 37, .n = nt, .n_expert = ne, .k_used = k,      \
        .variant = per_slot, .max_nmse = 5e-4                                                                          \
    }
#define ROUTE(ne, k, nt)                                                                                               \
    { .op = HL_OP_MOE_ROUTE, .n = nt, .n_expert = ne, .k_used = k, .max_nmse = 1e-12 }
#define MOE_SUM(dd, k, nt)                                                                                             \
    { .op = HL_OP_MOE_SUM, .d = dd, .n = nt, .k_used = k, .max_nmse = 1e-12 }
#define PERF_MM(t, nt)                                                                                                 \
    { .op = HL_OP_MATMUL, .type = GGML_TYPE_##t, .d = 1536, .rows = 576, .n = nt, .perf = true, .max_nmse = 5e-4 }

// clang-format off
static const op_case cases[] = {
    WEIGHT(F32, 97) WEIGHT(F16, 97) WEIGHT(BF16, 97) WEIGHT(Q4_0, 160) WEIGHT(Q4_1, 160) WEIGHT(Q5_0, 160)
    WEIGHT(Q5_1, 160) WEIGHT(Q8_0, 160) WEIGHT(Q2_K, 512) WEIGHT(Q3_K, 512) WEIGHT(Q4_K, 512) WEIGHT(Q5_K, 512)
    WEIGHT(Q6_K, 512)
    /* the decode kernels' other paths (cuda/matvec.cu): plain rows of 16-byte chunks (F32, F16, BF16), longer
     * rows, and 3 to 6 tokens (the kernels for up to 4 and 8 tokens with columns unused); rows of 4608 take
     * the chunk loop's second trip (past 128 chunks: 4096 elements of the K-quants, 2048 of the others),
     * as every real model's matmuls do */
    MM(F32, 256, 2), MM(F16, 256, 1), MM(F16, 1536, 3), MM(BF16, 256, 5), MM(Q4_0, 1536, 6), MM(Q8_0, 1536, 5),
    MM(Q4_K, 1536, 3), MM(Q5_K, 1536, 1), MM(Q6_K, 1536, 4), MM(F16, 4608, 1), MM(Q4_0, 4608, 2),
    MM_ADD(Q4_K, 512, 1), MM_ADD(Q8_0, 160, 3), MM_ADD(F16, 256, 1), MM_ADD(F32, 97, 2), MM_ADD(Q4_0, 160, 19),
    MM_ADD(F16, 256, 67), MM_ADD(BF16, 256, 19),
    ROPE_STORE(F16, NORMAL, 4, 2, 64, 64, 1, 37, false, 0), ROPE_STORE(F16, NORMAL, 4, 2, 64, 64, 1, 37, false, 3),
    ROPE_STORE(F16, NORMAL, 4, 2, 64, 64, 1, 37, false, 4), ROPE_STORE(F16, NEOX, 6, 2, 64, 32, 3, 50, true, 3),
    ROPE_STORE(F16, NEOX, 6, 2, 64, 32, 3, 50, true, 0), ROPE_STORE(BF16, NORMAL, 4, 1, 128, 128, 5, 20, false, 3),
    ROPE_STORE(Q8_0, NORMAL, 8, 2, 64, 64, 2, 70, false, 3), ROPE_STORE(Q8_0, NEOX, 8, 2, 64, 64, 2, 70, true, 4),
    ROPE_STORE(Q4_0, NEOX, 4, 4, 64, 64, 1, 90, false, 3), ROPE_STORE(Q4_0, NORMAL, 2, 2, 96, 64, 7, 11, true, 3),
    MM(Q8_0, 4608, 1), MM(Q4_K, 4608, 1), MM(Q6_K, 4608, 5),
    /* the prompt paths with rows of whole 16-byte chunks (cuda/gemm.cu: F16 and BF16 in place, cuBLAS's tensor-core
     * kernels; F32's tiles written 16 bytes a thread) and over several dequantization tiles, the last one partial
     * (the test's scratch holds 16 rows of 4608: 67 rows are five tiles; 67 tokens, past mv_max_tokens of Q4_K
     * and Q8_0) */
    MM(F16, 1536, 19), MM(BF16, 1536, 67), MM(F16, 4608, 8), MM(F32, 256, 19), MM(Q4_K, 4608, 67),
    MM(Q8_0, 4608, 67),
    NORM(579, 1, 3, false), NORM(579, 1, 3, true), NORM(64, 5, 3, false), NORM(64, 5, 3, true), NORM(1000, 1, 1, false),
    LNORM(579, 3, false), LNORM(579, 3, true), LNORM(768, 5, false), LNORM(40, 1, true), LNORM(1000, 1, false),
    LNORM_NO_BIAS(579, 3, false), LNORM_NO_BIAS(40, 2, true),
    ROPE(NORMAL, 32, false), ROPE(NORMAL, 32, true), ROPE(NORMAL, 64, false), ROPE(NORMAL, 64, true),
    ROPE(NEOX, 32, false), ROPE(NEOX, 32, true), ROPE(NEOX, 64, false), ROPE(NEOX, 64, true),
    ROPE_YARN(NORMAL, 64, false, 37), ROPE_YARN(NORMAL, 64, true, 9000), ROPE_YARN(NEOX, 64, false, 9000),
    ROPE_YARN(NEOX, 32, true, 5000),
    /* mode, n_head_kv, head_dim, n_rot, rows, first row, delta, factors, YaRN */
    SHIFT(NORMAL, 2, 64, 64, 40, 30, -25, false, false), SHIFT(NEOX, 2, 64, 64, 40, 30, -25, false, false),
    SHIFT(NEOX, 1, 128, 128, 1, 95, -1, false, false), SHIFT(NORMAL, 3, 64, 32, 17, 5, 1000, true, false),
    SHIFT(NEOX, 2, 64, 64, 60, 36, -3000, false, true), SHIFT(NORMAL, 2, 80, 80, 9, 0, -7, true, true),
    STORE(2, 64, 1, 0), STORE(2, 64, 1, 70), STORE(2, 64, 5, 37), STORE(4, 80, 9, 0), STORE(3, 64, 7, 20),
    STORE(1, 128, 3, 61),
    /* n_head, n_head_kv, head_dim, tokens, pos0, n_swa, split, pos1 */
    ATTN(6, 2, 64, 1, 0, 0, 0, 0), ATTN(6, 2, 64, 1, 70, 0, 0, 0), ATTN(6, 2, 64, 5, 37, 0, 0, 0),
    ATTN(4, 4, 80, 9, 0, 0, 0, 0), ATTN(6, 3, 64, 7, 20, 8, 0, 0), ATTN(6, 2, 64, 1, 70, 16, 0, 0),
    ATTN(2, 1, 128, 3, 61, 0, 0, 0),
    /* heads of 512 (two 8-dimension chunks per lane of cuda/attention.cu), groups of more outputs than its threads */
    ATTN(2, 1, 512, 3, 61, 0, 0, 0), ATTN(24, 1, 96, 2, 70, 0, 0, 0),
    /* two sequences in one pass: decode tokens of each, then a prompt chunk beside a decode token */
    ATTN(6, 2, 64, 2, 30, 0, 1, 40), ATTN(6, 2, 64, 6, 0, 0, 5, 44), ATTN(6, 3, 64, 7, 20, 8, 3, 25),
    /* long spans: decode at depth (SmolLM2's 9/3 heads, Qwen2.5's 14/2, Gemma 3's 4/1 of 256 with its window of
     * 512), prompt chunks at depth, a window that skips whole tiles, more query heads per KV head than a task
     * takes, and two sequences with prompt chunks and decode tokens in one pass */
    ATTN_LONG(9, 3, 64, 1, 1000, 0, 0, 0), ATTN_LONG(14, 2, 64, 1, 900, 0, 0, 0), ATTN_LONG(4, 1, 256, 1, 970, 512, 0, 0),
    ATTN_LONG(9, 3, 64, 70, 600, 0, 0, 0), ATTN_LONG(14, 2, 64, 40, 500, 0, 0, 0), ATTN_LONG(4, 1, 256, 33, 600, 128, 0, 0),
    ATTN_LONG(72, 1, 16, 3, 300, 0, 0, 0), ATTN_LONG(9, 3, 64, 30, 0, 0, 20, 700), ATTN_LONG(14, 2, 64, 3, 400, 0, 1, 800),
    ATTN_LONG(6, 3, 64, 50, 130, 100, 25, 600),
    ATTN_LONG(24, 1, 96, 1, 1000, 0, 0, 0), ATTN_LONG(2, 1, 512, 1, 900, 300, 0, 0),
    /* prompts of one sequence (CUDA's tensor-core kernel, tiles of 64 tokens and 32 rows): head_dim 128 over two
     * token tiles, the second partial; 80 from position 0; 96 at depth; a window inside one tile of 64 tokens */
    ATTN_LONG(8, 2, 128, 100, 300, 0, 0, 0), ATTN(4, 4, 80, 20, 0, 0, 0, 0), ATTN_LONG(4, 4, 96, 17, 100, 0, 0, 0),
    ATTN_LONG(8, 1, 64, 64, 0, 16, 0, 0),
    /* and its edges: 16 tokens exactly, 65 (a last tile of one token), heads of 16 and 32, 256 over two token tiles
     * without a window, a window narrower than a tile of rows and not aligned to it over three token tiles, and
     * the largest pass */
    ATTN_LONG(8, 2, 64, 16, 200, 0, 0, 0), ATTN_LONG(4, 2, 64, 65, 0, 0, 0, 0), ATTN_LONG(8, 8, 16, 40, 100, 0, 0, 0),
    ATTN(12, 12, 32, 20, 0, 0, 0, 0), ATTN_LONG(4, 1, 256, 100, 300, 0, 0, 0), ATTN_LONG(8, 2, 64, 130, 37, 20, 0, 0),
    ATTN_LONG(9, 3, 64, MAX_TOKENS, 400, 0, 0, 0),
    /* n_head, n_head_kv, head_dim, tokens, pos0, split, pos1, cache rows, max_bias */
    ATTN_ALIBI(6, 6, 64, 1, 70, 0, 0, 96, 8.0f), ATTN_ALIBI(6, 2, 64, 5, 37, 0, 0, 96, 8.0f),
    ATTN_ALIBI(12, 12, 32, 7, 20, 0, 0, 96, 8.0f), ATTN_ALIBI(12, 1, 64, 3, 61, 0, 0, 96, 4.0f),
    ATTN_ALIBI(6, 3, 64, 6, 0, 5, 44, 96, 8.0f), ATTN_ALIBI(5, 5, 80, 9, 0, 0, 0, 96, 0.5f),
    ATTN_ALIBI(12, 4, 64, 1, 1000, 0, 0, MAX_CTX, 8.0f), ATTN_ALIBI(6, 2, 64, 40, 500, 0, 0, MAX_CTX, 8.0f),
    ATTN_ALIBI(12, 12, 64, 30, 0, 20, 700, MAX_CTX, 8.0f),
    /* ALiBi through the tensor-core kernel: heads of 80, and two token tiles at depth */
    ATTN_ALIBI(5, 5, 80, 24, 0, 0, 0, 96, 0.5f), ATTN_ALIBI(6, 2, 64, 100, 300, 0, 0, MAX_CTX, 8.0f),
    ATTN_BIDI(6, 2, 64, 9, 0, 0, 0, 96, 0.0f), ATTN_BIDI(12, 12, 32, 1, 0, 0, 0, 96, 0.0f),
    ATTN_BIDI(6, 3, 64, 12, 0, 5, 0, 96, 0.0f), ATTN_BIDI(4, 4, 80, 7, 20, 0, 0, 96, 0.0f),
    ATTN_BIDI(6, 6, 64, 9, 0, 4, 0, 96, 8.0f), ATTN_BIDI(9, 3, 64, 130, 0, 0, 0, MAX_CTX, 0.0f),
    ATTN_BIDI(8, 2, 128, 100, 0, 40, 0, MAX_CTX, 4.0f),
    /* KV cache types: K, V, then as ATTN; short and long spans, a window, two sequences, decode at depth */
    ATTN_KV(Q8_0, Q8_0, 6, 2, 64, 5, 37, 0, 0, 0, 96), ATTN_KV(Q4_0, Q4_0, 6, 2, 64, 5, 37, 0, 0, 0, 96),
    ATTN_KV(BF16, BF16, 6, 2, 64, 5, 37, 0, 0, 0, 96), ATTN_KV(Q8_0, F16, 6, 2, 64, 1, 70, 0, 0, 0, 96),
    ATTN_KV(Q4_0, BF16, 2, 1, 128, 3, 61, 0, 0, 0, 96), ATTN_KV(F16, Q8_0, 6, 3, 64, 7, 20, 8, 0, 0, 96),
    ATTN_KV(Q8_0, Q4_0, 6, 2, 64, 6, 0, 0, 5, 44, 96), ATTN_KV(Q8_0, Q8_0, 9, 3, 64, 1, 1000, 0, 0, 0, MAX_CTX),
    ATTN_KV(Q4_0, Q4_0, 9, 3, 64, 70, 600, 0, 0, 0, MAX_CTX), ATTN_KV(BF16, BF16, 4, 1, 256, 33, 600, 128, 0, 0, MAX_CTX),
    ATTN_KV(Q8_0, Q8_0, 14, 2, 64, 3, 400, 0, 1, 800, MAX_CTX),
    /* the other pairings of cuda/attention.cu's instances (a K type and a V type each); decode at depth over
     * many splits with heads of 128 and of 512 (a lane's second chunk of a key), and a group of more outputs than
     * the block's threads, on quantized caches */
    ATTN_KV(BF16, Q8_0, 6, 2, 64, 5, 37, 0, 0, 0, 96), ATTN_KV(F16, Q4_0, 6, 2, 64, 1, 70, 16, 0, 0, 96),
    ATTN_KV(Q4_0, F16, 6, 3, 64, 7, 20, 8, 0, 0, 96), ATTN_KV(BF16, F16, 2, 1, 128, 3, 61, 0, 0, 0, 96),
    ATTN_KV(F16, BF16, 6, 2, 64, 6, 0, 0, 5, 44, 96), ATTN_KV(Q4_0, Q8_0, 8, 2, 128, 1, 1000, 0, 0, 0, MAX_CTX),
    ATTN_KV(Q8_0, Q4_0, 2, 1, 512, 1, 900, 300, 0, 0, MAX_CTX), ATTN_KV(Q8_0, BF16, 24, 1, 128, 2, 70, 0, 0, 0, 96),
    SHIFT_KV(Q8_0, NORMAL, 2, 64, 64, 40, 30, -25), SHIFT_KV(Q4_0, NEOX, 2, 64, 64, 40, 30, -25),
    SHIFT_KV(BF16, NEOX, 1, 128, 128, 3, 90, -1), SHIFT_KV(Q8_0, NEOX, 3, 64, 32, 17, 5, 1000),
    SHIFT_KV(Q8_0, NEOX, 1, 512, 512, 4, 50, 9), SHIFT_KV(BF16, NORMAL, 2, 64, 32, 10, 0, 333),
    STORE_KV(Q8_0, 2, 64, 5, 37), STORE_KV(Q4_0, 3, 64, 7, 20), STORE_KV(BF16, 1, 128, 3, 61),
    STORE_KV(Q4_0, 2, 128, 9, 80), STORE_KV(Q8_0, 8, 128, 40, 50),
    EW(SWIGLU, false), EW(GEGLU, false), EW(GELU, false), EW(ADD, false), EW(ADD, true), EW(SCALE, false),
    EW(CLAMP, false),
    /* mixture of experts: 2 of 4 and of 8 experts, one token to a batch, quantized and float weights */
    MMID(F16, 97, 1, 4, 2, false), MMID(F16, 97, 7, 8, 2, true), MMID(F32, 97, 4, 4, 2, true),
    MMID(Q8_0, 160, 1, 4, 2, false), MMID(Q8_0, 160, 5, 4, 2, true), MMID(Q8_0, 160, 19, 8, 2, false),
    MMID(Q4_0, 160, 3, 8, 2, true), MMID(Q4_K, 512, 2, 4, 2, false), MMID(Q4_K, 512, 9, 8, 2, true),
    MMID(Q6_K, 512, 5, 8, 2, false), MMID(Q8_0, 160, 6, 8, 4, true),
    ROUTE(4, 2, 1), ROUTE(4, 2, 7), ROUTE(8, 2, 19), ROUTE(8, 4, 3), MOE_SUM(1003, 2, 1), MOE_SUM(1003, 2, 7),
    MOE_SUM(72, 4, 19),
    /* perf: SmolLM2-135M's shapes (n_embd 576, n_ff 1536, 9 heads of 64, 3 KV heads) */
    PERF_MM(F16, 1), PERF_MM(Q8_0, 1), PERF_MM(Q4_1, 1), PERF_MM(Q4_K, 1), PERF_MM(Q6_K, 1),
    /* prompts: every weight type at 512 tokens, and where the prompt path starts to pay (8 .. 64 tokens) */
    PERF_MM(F32, 512), PERF_MM(F16, 512), PERF_MM(BF16, 512), PERF_MM(Q4_0, 512), PERF_MM(Q4_1, 512),
    PERF_MM(Q5_0, 512), PERF_MM(Q5_1, 512), PERF_MM(Q8_0, 512), PERF_MM(Q2_K, 512), PERF_MM(Q3_K, 512),
    PERF_MM(Q4_K, 512), PERF_MM(Q5_K, 512), PERF_MM(Q6_K, 512),
    PERF_MM(Q4_1, 8), PERF_MM(Q4_1, 16), PERF_MM(Q4_1, 32), PERF_MM(Q4_1, 64), PERF_MM(Q4_K, 8), PERF_MM(Q4_K, 16),
    PERF_MM(Q4_K, 32), PERF_MM(Q4_K, 64),
    {.op = HL_OP_RMS_NORM, .d = 576, .rows = 1, .n = 512, .perf = true, .max_nmse = 1e-6},
    {.op = HL_OP_ROPE, .n_head = 9, .head_dim = 64, .n = 512, .n_rot = 64, .mode = HL_ROPE_NORMAL, .perf = true,
     .max_nmse = 1e-5},
    {.op = HL_OP_ATTENTION, .type = GGML_TYPE_F16, .n_head = 9, .n_head_kv = 3, .head_dim = 64, .n = 1, .pos0 = 1023,
     .n_ctx = 1024, .perf = true, .max_nmse = 5e-4},
    {.op = HL_OP_ATTENTION, .type = GGML_TYPE_F16, .n_head = 9, .n_head_kv = 3, .head_dim = 64, .n = 512, .n_ctx = 1024,
     .perf = true, .max_nmse = 5e-4},
    {.op = HL_OP_SWIGLU, .d = 1536, .n = 512, .perf = true, .max_nmse = 1e-5},
    {.op = HL_OP_ADD, .d = 576, .n = 512, .perf = true, .max_nmse = 1e-5},
};
// clang-format on
#define N_CASES (sizeof cases / sizeof cases[0])

static void label_of(const op_case *c, char *buf, size_t size) {
    const char *type = hl_ggml_type_get(c->type)->name;
    switch (c->op) {
    case HL_OP_GET_ROWS:
    case HL_OP_MATMUL:
    case HL_OP_MATMUL_ADD:
        snprintf(buf, size, "%s %s {%lld, %lld} n=%lld", hl_op_name(c->op), type, (long long)c->d, (long long)c->rows,
                 (long long)c->n);
        break;
    case HL_OP_RMS_NORM:
        snprintf(buf, size, "rms_norm d=%lld row=%lld n=%lld%s", (long long)c->d, (long long)(c->d * c->rows),
                 (long long)c->n, c->variant ? " in place" : "");
        break;
    case HL_OP_LAYER_NORM:
        snprintf(buf, size, "layer_norm d=%lld n=%lld%s%s", (long long)c->d, (long long)c->n,
                 c->variant ? " in place" : "", c->no_bias ? " no bias" : "");
        break;
    case HL_OP_ROPE:
        snprintf(buf, size, "rope %s n_rot=%d h=%d hd=%d n=%lld pos0=%d%s%s",
                 c->mode == HL_ROPE_NEOX ? "neox" : "normal", (int)c->n_rot, (int)c->n_head, (int)c->head_dim,
                 (long long)c->n, (int)c->pos0, c->variant ? " freq_factors" : "", c->yarn ? " yarn" : "");
        break;
    case HL_OP_ROPE_SHIFT:
        snprintf(buf, size, "rope_shift %s %s n_rot=%d h=%d hd=%d rows [%d, %lld) by %d%s%s", type,
                 c->mode == HL_ROPE_NEOX ? "neox" : "normal", (int)c->n_rot, (int)c->n_head_kv, (int)c->head_dim,
                 (int)c->pos0, (long long)(c->pos0 + c->n), (int)c->pos1, c->variant ? " freq_factors" : "",
                 c->yarn ? " yarn" : "");
        break;
    case HL_OP_ROPE_STORE: {
        static const char *const what[5] = {"q", "", "", "k_cache", "v_cache"};
        snprintf(buf, size, "rope_store %s %s n_rot=%d h=%d/%d hd=%d n=%lld pos0=%d%s: %s", type,
                 c->mode == HL_ROPE_NEOX ? "neox" : "normal", (int)c->n_rot, (int)c->n_head, (int)c->n_head_kv,
                 (int)c->head_dim, (long long)c->n, (int)c->pos0, c->variant ? " freq_factors" : "", what[c->result]);
        break;
    }
    case HL_OP_MATMUL_ID:
        snprintf(buf, size, "matmul_id %s {%lld, %lld} x%d top %d n=%lld%s", type, (long long)c->d, (long long)c->rows,
                 (int)c->n_expert, (int)c->k_used, (long long)c->n, c->variant ? " x per slot" : "");
        break;
    case HL_OP_MOE_ROUTE:
        snprintf(buf, size, "moe_route experts=%d top %d n=%lld", (int)c->n_expert, (int)c->k_used, (long long)c->n);
        break;
    case HL_OP_MOE_SUM:
        snprintf(buf, size, "moe_sum d=%lld top %d n=%lld", (long long)c->d, (int)c->k_used, (long long)c->n);
        break;
    case HL_OP_STORE_ROWS:
        snprintf(buf, size, "store_rows %s kv_dim=%d n=%lld pos0=%d", type, (int)(c->n_head_kv * c->head_dim),
                 (long long)c->n, (int)c->pos0);
        break;
    case HL_OP_ATTENTION: {
        char alibi[32] = "";
        if (c->max_bias > 0.0f) snprintf(alibi, sizeof alibi, " alibi %g", (double)c->max_bias);
        if (c->bidirectional) snprintf(alibi + strlen(alibi), sizeof alibi - strlen(alibi), " bidirectional");
        snprintf(buf, size, "attention %s/%s h=%d/%d hd=%d n=%lld pos0=%d swa=%d seq1=[%d..) at %d%s", type,
                 hl_ggml_type_get(c->type_v ? c->type_v : c->type)->name, (int)c->n_head, (int)c->n_head_kv,
                 (int)c->head_dim, (long long)c->n, (int)c->pos0, (int)c->n_swa, (int)c->split, (int)c->pos1, alibi);
        break;
    }
    default:
        snprintf(buf, size, "%s%s {%lld, %lld}", hl_op_name(c->op), c->op == HL_OP_ADD && c->variant ? " bias" : "",
                 (long long)c->d, (long long)c->n);
    }
}

#endif
