/* Tiled CPU attention over the F16 KV cache, what --flash-attn on runs
 * (FlashAttention, Dao et al. 2022, arXiv:2205.14135, with the online
 * softmax of Milakov & Gimelshein 2018, arXiv:1805.02867). The exact path
 * (attention.c) reads every K and V row once per query token and head;
 * here a task is a block of query tokens of one sequence times the query
 * heads of one KV head (grouped-query attention: they read the same rows),
 * up to FA_ROWS rows, and streams that sequence's K and V once, FA_TILE
 * rows at a time, converted to F32 once per tile. Queries are rounded to
 * F16 as llama.cpp rounds them (with or without its flash attention);
 * scores, probabilities and sums stay in F32. A cache of another type
 * (BF16, Q8_0, Q4_0) is converted to F32 a tile at a time, as it is read
 * (llama.cpp's flash attention converts each value row with v_to_float);
 * the queries are rounded as llama.cpp's flash attention converts them for
 * the key type's vec_dot (ggml-cpu ops.cpp, flash_attn_ext_f16_one_chunk):
 * to Q8_0 blocks for Q8_0 and Q4_0 keys, to BF16 for BF16 keys. So each
 * score is llama.cpp's sum of the same products, in the F32 tile kernels'
 * order rather than its integer sums per block. Tiles no query of the
 * block sees (before a sliding window, after the last position) are never
 * read; the keys a query does not see within a read tile (its causal or
 * window edge) get probability 0. ALiBi (max_bias > 0) adds its per-head
 * linear bias to the scaled scores of the keys a query sees.
 *
 * A row's keys are cut at fixed positions: chunks of FA_CHUNK cells, tiles
 * of FA_TILE, counted from its sequence's first cell. Within a chunk the
 * row keeps a running maximum m, sum l and unnormalized output o, and each
 * tile rescales them by exp(m_old - m_new) (the online softmax); the chunks'
 * (m, l, o) are then merged in order, o = o exp(m - M) + o_c exp(m_c - M)
 * and l likewise (the combination of FlashAttention's blocks). Keys masked
 * or past a query's position add exact zeros, so a row's result depends on
 * its query and its own keys only: not on the block it was put in, the
 * other sequences of the pass, or the number of threads.
 *
 * Threads claim tasks from a shared counter, latest blocks first: a causal
 * block's work grows with its position, so the longest tasks start first
 * and the short ones fill in at the end. When a pass has fewer tasks than
 * HL_CPU_FLASH_SPLIT_TASKS per thread (decoding one or a few sequences at
 * depth), each task's chunks are shared out among several items that any
 * thread may run (flash-decoding: Dao, Haziza, Massa and Sizov 2023,
 * "Flash-Decoding for long-context inference"); every chunk leaves its
 * (m, l, o) in a slot and the item that finishes a task last merges them,
 * in the same order as an unsplit task, so splitting changes no result. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/common.h"
#include "backend/cpu/row_kernels.h"
#include "backend/cpu/flash_kernels.h"

#define FA_CHUNK (4 * FA_TILE) /* cells per chunk: the unit of merging and of splitting a task */

typedef struct fa_call {
    const hl_attn_args *a;
    const hl_flash_kernels *k;
    const hl_cpu_type_ops *k_ops; /* the kernels of a K cache that is not F16 (its query rounding), else NULL */
    const int32_t *pos, *row0, *seq_end;
    const int32_t *blocks; /* first token of each block; blocks[n_blocks] = the pass's tokens */
    int32_t n_blocks;
    int32_t heads;  /* query heads per task: the KV head's group, or FA_ROWS of it */
    int32_t n_hsub; /* tasks per (block, KV head) */
    int32_t hd_pad; /* head_dim rounded up to FA_HD_ALIGN */
    int64_t n_tasks;
    int64_t n_split;  /* items per task (1: no split) */
    int64_t n_chunks; /* slots per task when split: the most chunks a task has */
    size_t slot;      /* floats of one chunk's (o, m, l): rows x (hd_pad + 2) */
    float *ws;        /* per thread: hl_cpu_flash_ws_floats() */
    float *partial;   /* split: [n_tasks][n_chunks] slots */
    atomic_int *done; /* split: per task, its items finished */
    atomic_llong next;
} fa_call;

/* [first, end): the cells (relative to row0) token t sees: up to its
 * position (bidirectional: its sequence's end in the pass), from the
 * n_swa - 1 before it under a sliding window (llama.cpp's is_masked_swa:
 * key p0 is masked for query p1 when p1 - p0 >= n_swa). */
static inline int64_t end_seen(const fa_call *f, int32_t t) { return hl_cpu_attn_end(f->a, f->pos, f->seq_end, t); }

static inline int64_t first_seen(const fa_call *f, int32_t t) {
    const int64_t end = end_seen(f, t);
    return f->a->n_swa > 0 && end > f->a->n_swa ? end - f->a->n_swa : 0;
}

/* The cells some token of block b sees. */
static void block_range(const fa_call *f, int32_t b, int64_t *lo, int64_t *hi) {
    *lo = INT64_MAX;
    *hi = 0;
    for (int32_t t = f->blocks[b]; t < f->blocks[b + 1]; t++) {
        const int64_t first = first_seen(f, t), end = end_seen(f, t);
        *lo = first < *lo ? first : *lo;
        *hi = end > *hi ? end : *hi;
    }
}

/* One thread's scratch for a task of `rows` rows (hl_cpu_flash_ws_floats). */
typedef struct fa_ws {
    float *q;                /* [rows][hd_pad] scaled queries, 0 past head_dim */
    float *o, *m, *l;        /* the merged chunks so far */
    float *oc, *mc, *lc, *c; /* the chunk being read; c: a tile's rescaling per row */
    float *s;                /* [rows][FA_TILE] scores, then probabilities */
    float *kt, *vt;          /* [FA_TILE][hd_pad] the tile's K and V as floats */
} fa_ws;

static fa_ws ws_of(float *base, int32_t hd_pad) {
    fa_ws w;
    const size_t rows_hd = (size_t)FA_ROWS * hd_pad, tile_hd = (size_t)FA_TILE * hd_pad;
    w.q = base;
    w.o = w.q + rows_hd;
    w.oc = w.o + rows_hd;
    w.s = w.oc + rows_hd;
    w.kt = w.s + FA_ROWS * FA_TILE;
    w.vt = w.kt + tile_hd;
    w.m = w.vt + tile_hd;
    w.l = w.m + FA_ROWS;
    w.mc = w.l + FA_ROWS;
    w.lc = w.mc + FA_ROWS;
    w.c = w.lc + FA_ROWS;
    return w;
}

size_t hl_cpu_flash_ws_floats(void) {
    const size_t hd = HL_KERNELS_MAX_HEAD_DIM; /* a multiple of FA_HD_ALIGN */
    return 3 * FA_ROWS * hd + FA_ROWS * FA_TILE + 2 * FA_TILE * hd + 5 * FA_ROWS;
}

/* dst [n_pad][hd_pad] = the n cache rows at src, stride bytes apart, as
 * floats, zero past them (flash_kernels.h load_tile, any cache type). */
static void load_rows(const fa_call *f, uint32_t type, int32_t n, int32_t n_pad, const uint8_t *src, size_t stride,
                      float *dst) {
    const int32_t hd = f->a->head_dim, hd_pad = f->hd_pad;
    if (type == GGML_TYPE_F16) {
        f->k->load_tile(n, n_pad, (const hl_half *)src, stride, hd, hd_pad, dst);
        return;
    }
    const hl_to_float_fn to_float = hl_quant_get(type)->to_float;
    for (int32_t j = 0; j < n_pad; j++) {
        float *out = dst + (size_t)j * hd_pad;
        int32_t d = 0;
        if (j < n) {
            to_float(src + (size_t)j * stride, out, hd);
            d = hd;
        }
        for (; d < hd_pad; d++) out[d] = 0.0f;
    }
}

/* ALiBi: s[j] += slope(h) * -|p - (j0 + j)| for the keys [lo, hi) of the
 * tile that token t (position p) sees with head h; llama.cpp's flash
 * attention adds the slope times its F16 mask, so the distance goes through
 * F16 (exact up to 2048). */
static void alibi(const fa_call *f, int32_t t, int32_t h, int64_t j0, int64_t lo, int64_t hi, float *s) {
    const float slope = hl_alibi_slope(f->a->n_head, f->a->max_bias, h);
    for (int64_t j = lo; j < hi; j++)
        s[j] += slope * hl_fp16_to_fp32(hl_fp32_to_fp16(-(float)llabs(j0 + j - f->pos[t])));
}

/* Reads the cells [klo, khi) of one chunk for rows [0, rows) of a task
 * (tokens from t0, heads from h0; their queries in w->q): leaves the chunk's mc, lc (0 for a row that sees
 * none of them) and unnormalized oc. Tiles start at multiples of FA_TILE. */
static void read_chunk(const fa_call *f, int32_t t0, int32_t h0, int32_t nh, int32_t rows, int32_t kvh, int64_t klo,
                       int64_t khi, const fa_ws *w) {
    const hl_attn_args *a = f->a;
    const int32_t hd = a->head_dim, hd_pad = f->hd_pad, rows_pad = (rows + 1) & ~1;
    const uint32_t k_type = a->k_cache->type, v_type = a->v_cache->type;
    const size_t k_stride = hl_row_size(k_type, a->k_cache->ne[0]);
    const size_t v_stride = hl_row_size(v_type, a->v_cache->ne[0]);
    const uint8_t *kbase = (const uint8_t *)a->k_cache->data + (size_t)f->row0[t0] * k_stride +
                           hl_row_size(k_type, (int64_t)kvh * hd);
    const uint8_t *vbase = (const uint8_t *)a->v_cache->data + (size_t)f->row0[t0] * v_stride +
                           hl_row_size(v_type, (int64_t)kvh * hd);
    for (int32_t r = 0; r < rows_pad; r++) {
        w->mc[r] = -INFINITY;
        w->lc[r] = 0.0f;
    }
    memset(w->oc, 0, sizeof(float) * (size_t)rows_pad * hd_pad);
    for (int64_t j0 = klo / FA_TILE * FA_TILE; j0 < khi; j0 += FA_TILE) {
        const int32_t nk = (int32_t)(khi - j0 < FA_TILE ? khi - j0 : FA_TILE);
        const int32_t nk_pad = (nk + FA_KEY_PAD - 1) / FA_KEY_PAD * FA_KEY_PAD;
        load_rows(f, k_type, nk, nk_pad, kbase + (size_t)j0 * k_stride, k_stride, w->kt);
        f->k->qk(rows_pad, nk_pad, hd_pad, w->q, w->kt, w->s);
        for (int32_t r = 0; r < rows_pad; r++) {
            float *sr = w->s + r * FA_TILE;
            int64_t lo = 0, hi = 0; /* the keys of this tile row r sees, relative to j0 */
            if (r < rows) {
                const int32_t t = t0 + r / nh;
                const int64_t first = first_seen(f, t), end = end_seen(f, t);
                lo = first > j0 ? first - j0 : 0;
                hi = end < j0 + nk ? end - j0 : nk;
            }
            if (lo >= hi) { /* nothing seen here: p = 0, o unchanged */
                memset(sr, 0, sizeof(float) * nk_pad);
                w->c[r] = 1.0f;
                continue;
            }
            for (int64_t j = 0; j < lo; j++) sr[j] = -INFINITY;
            for (int64_t j = hi; j < nk_pad; j++) sr[j] = -INFINITY;
            if (a->max_bias > 0.0f) alibi(f, t0 + r / nh, h0 + r % nh, j0, lo, hi, sr);
            w->c[r] = f->k->softmax(nk_pad, sr, &w->mc[r], &w->lc[r]);
        }
        load_rows(f, v_type, nk, nk_pad, vbase + (size_t)j0 * v_stride, v_stride, w->vt);
        f->k->pv(rows_pad, nk_pad, hd_pad, w->s, w->vt, w->c, w->oc);
    }
}

/* (m, l, o) += a chunk's (mc, lc, oc) for rows [0, rows); a row that saw
 * none of the chunk's cells (lc 0) is left as it is. */
static void merge(int32_t rows, int32_t hd_pad, float *m, float *l, float *o, const float *mc, const float *lc,
                  const float *oc) {
    for (int32_t r = 0; r < rows; r++) {
        if (lc[r] == 0.0f) continue;
        const float mx = mc[r] > m[r] ? mc[r] : m[r];
        const float x = expf(m[r] - mx), y = expf(mc[r] - mx); /* x = 0 while m is -inf */
        float *orow = o + (size_t)r * hd_pad;
        const float *crow = oc + (size_t)r * hd_pad;
        for (int32_t d = 0; d < hd_pad; d++) orow[d] = orow[d] * x + crow[d] * y;
        l[r] = l[r] * x + lc[r] * y;
        m[r] = mx;
    }
}

static void clear_rows(int32_t rows, int32_t hd_pad, float *m, float *l, float *o) {
    for (int32_t r = 0; r < rows; r++) {
        m[r] = -INFINITY;
        l[r] = 0.0f;
    }
    memset(o, 0, sizeof(float) * (size_t)rows * hd_pad);
}

/* out row r = o_r / l_r, token t0 + r / nh, head h0 + r % nh. */
static void write_rows(const fa_call *f, int32_t t0, int32_t h0, int32_t nh, int32_t rows, const float *o,
                       const float *l) {
    const hl_attn_args *a = f->a;
    const int32_t hd = a->head_dim;
    for (int32_t r = 0; r < rows; r++) {
        float *out = (float *)a->out->data + (t0 + r / nh) * a->out->ne[0] + (int64_t)(h0 + r % nh) * hd;
        const float inv = 1.0f / l[r];
        for (int32_t d = 0; d < hd; d++) out[d] = o[(size_t)r * f->hd_pad + d] * inv;
    }
}

/* A slot: a chunk's oc [rows][hd_pad], then mc [rows], then lc [rows]. */
static void put_slot(float *slot, int32_t rows, int32_t hd_pad, const fa_ws *w) {
    const size_t op = (size_t)rows * hd_pad;
    memcpy(slot, w->oc, sizeof(float) * op);
    memcpy(slot + op, w->mc, sizeof(float) * rows);
    memcpy(slot + op + rows, w->lc, sizeof(float) * rows);
}

static void merge_slot(const float *slot, int32_t rows, int32_t hd_pad, const fa_ws *w) {
    const size_t op = (size_t)rows * hd_pad;
    merge(rows, hd_pad, w->m, w->l, w->o, slot + op, slot + op + rows, slot);
}

static void run_item(fa_call *f, float *base, int64_t item) {
    const hl_attn_args *a = f->a;
    const int64_t task = item / f->n_split, part = item % f->n_split;
    const int64_t per_block = (int64_t)a->n_head_kv * f->n_hsub;
    const int32_t b = f->n_blocks - 1 - (int32_t)(task / per_block); /* latest blocks first */
    const int32_t kvh = (int32_t)(task % per_block / f->n_hsub), sub = (int32_t)(task % f->n_hsub);
    const int32_t group = a->n_head / a->n_head_kv;
    const int32_t h0 = kvh * group + sub * f->heads;
    const int32_t nh = group - sub * f->heads < f->heads ? group - sub * f->heads : f->heads;
    const int32_t t0 = f->blocks[b], rows = (f->blocks[b + 1] - t0) * nh;
    const int32_t hd = a->head_dim, hd_pad = f->hd_pad, rows_pad = (rows + 1) & ~1;
    const fa_ws w = ws_of(base, hd_pad);
    for (int32_t r = 0; r < rows_pad; r++) {
        float *qr = w.q + (size_t)r * hd_pad;
        if (r >= rows) {
            memset(qr, 0, sizeof(float) * (size_t)hd_pad);
            continue;
        }
        const float *src = (const float *)a->q->data + (t0 + r / nh) * a->q->ne[0] + (int64_t)(h0 + r % nh) * hd;
        if (!f->k_ops) {
            f->k->load_q(hd, hd_pad, src, a->scale, qr);
            continue;
        }
        /* the query converted to K's vec-dot type and back: Q8_0 at most 2 bytes an element */
        _Alignas(64) uint8_t qv[HL_KERNELS_MAX_HEAD_DIM * 2];
        f->k_ops->act_from_float(src, qv, hd);
        hl_quant_get(f->k_ops->vec_dot_type)->to_float(qv, qr, hd);
        for (int32_t d = 0; d < hd_pad; d++) qr[d] = d < hd ? qr[d] * a->scale : 0.0f;
    }

    int64_t lo, hi;
    block_range(f, b, &lo, &hi);
    const int64_t c_first = lo / FA_CHUNK, n_chunks = (hi - 1) / FA_CHUNK + 1 - c_first;
    const int64_t per_part = (n_chunks + f->n_split - 1) / f->n_split;
    const int64_t c0 = part * per_part, c1 = c0 + per_part < n_chunks ? c0 + per_part : n_chunks;
    clear_rows(rows, hd_pad, w.m, w.l, w.o);
    for (int64_t ch = c0; ch < c1; ch++) {
        const int64_t cs = (c_first + ch) * FA_CHUNK;
        read_chunk(f, t0, h0, nh, rows, kvh, lo > cs ? lo : cs, hi < cs + FA_CHUNK ? hi : cs + FA_CHUNK, &w);
        if (f->n_split == 1) merge(rows, hd_pad, w.m, w.l, w.o, w.mc, w.lc, w.oc);
        else put_slot(f->partial + ((size_t)task * f->n_chunks + ch) * f->slot, rows, hd_pad, &w);
    }
    if (f->n_split > 1) {
        /* acq_rel: the last item of the task sees every chunk's slot */
        if (atomic_fetch_add_explicit(&f->done[task], 1, memory_order_acq_rel) != f->n_split - 1) return;
        for (int64_t ch = 0; ch < n_chunks; ch++)
            merge_slot(f->partial + ((size_t)task * f->n_chunks + ch) * f->slot, rows, hd_pad, &w);
    }
    write_rows(f, t0, h0, nh, rows, w.o, w.l);
}

static void fa_run(void *arg, int ith, int nth) {
    (void)nth;
    fa_call *f = arg;
    float *base = f->ws + (size_t)ith * hl_cpu_flash_ws_floats();
    const int64_t n_items = f->n_tasks * f->n_split;
    for (int64_t i; (i = atomic_fetch_add_explicit(&f->next, 1, memory_order_relaxed)) < n_items;) run_item(f, base, i);
}

/* Cuts the pass into blocks: runs of consecutive tokens of one sequence,
 * up to FA_ROWS rows each. Returns their number. */
static int32_t cut_blocks(const hl_cpu *cpu, int32_t n_tokens, int32_t tokens_per_block, int32_t *blocks) {
    int32_t n = 0;
    for (int32_t t = 0; t < n_tokens; t++)
        if (t == 0 || cpu->row0[t] != cpu->row0[t - 1] || t - blocks[n - 1] == tokens_per_block) blocks[n++] = t;
    blocks[n] = n_tokens;
    return n;
}

void hl_cpu_flash_attention(hl_backend *b, const hl_attn_args *args) {
    hl_cpu *cpu = cpu_of(b);
    const int nth = hl_pool_n_threads(cpu->pool);
    const int32_t group = args->n_head / args->n_head_kv;
    fa_call f = {.a = args,
                 .k = hl_flash_kernels_for(b),
                 .pos = cpu->pos,
                 .row0 = cpu->row0,
                 .seq_end = cpu->seq_end,
                 .blocks = cpu->fa_blocks,
                 .heads = group < FA_ROWS ? group : FA_ROWS,
                 .n_split = 1,
                 .ws = cpu->fa_ws,
                 .partial = cpu->fa_partial,
                 .done = cpu->fa_done};
    if (args->k_cache->type != GGML_TYPE_F16) f.k_ops = hl_cpu_ops_for(b, args->k_cache->type);
    f.n_hsub = (group + f.heads - 1) / f.heads;
    f.hd_pad = (args->head_dim + FA_HD_ALIGN - 1) / FA_HD_ALIGN * FA_HD_ALIGN;
    f.n_blocks = cut_blocks(cpu, (int32_t)args->q->ne[1], FA_ROWS / f.heads, cpu->fa_blocks);
    f.n_tasks = (int64_t)f.n_blocks * args->n_head_kv * f.n_hsub;
    if (nth > 1 && f.n_tasks < (int64_t)HL_CPU_FLASH_SPLIT_TASKS * nth) {
        /* chunks per task at most, then as many items per task as give
         * HL_CPU_FLASH_SPLIT_TASKS items per thread, if the slots fit */
        int32_t rows = 0;
        for (int32_t bl = 0; bl < f.n_blocks; bl++) {
            int64_t lo, hi;
            block_range(&f, bl, &lo, &hi);
            const int64_t n = (hi - 1) / FA_CHUNK + 1 - lo / FA_CHUNK;
            f.n_chunks = n > f.n_chunks ? n : f.n_chunks;
            const int32_t r = (f.blocks[bl + 1] - f.blocks[bl]) * f.heads;
            rows = r > rows ? r : rows;
        }
        f.slot = (size_t)rows * (f.hd_pad + 2);
        const int64_t want = (HL_CPU_FLASH_SPLIT_TASKS * nth + f.n_tasks - 1) / f.n_tasks;
        if ((size_t)(f.n_tasks * f.n_chunks) * f.slot <= cpu->fa_partial_floats)
            f.n_split = want < f.n_chunks ? want : f.n_chunks;
        for (int64_t t = 0; t < f.n_tasks; t++) atomic_init(&f.done[t], 0);
    }
    atomic_init(&f.next, 0);
    hl_pool_run(cpu->pool, nth, fa_run, &f);
}
