/* Context shift (hearth_context_shift): a sequence's oldest tokens after
 * n_keep leave the KV cache and the later ones move down in place, their
 * keys re-rotated to the new positions by the backend's rope_shift (llama.cpp
 * llama-kv-cache.cpp build_rope_shift); values only move. A sequence owns
 * consecutive rows from seq * n_ctx_seq (token at position p in row p), so
 * the moved rows are copied down first, then turned. A model with neither
 * rope nor learned positions (the ALiBi families mpt and bloom) keeps no
 * position in its keys: moving the rows is the whole shift, as llama.cpp's
 * K-shift does nothing without rope (its ALiBi mask reads the cells' new
 * positions, as hearth's attention reads the rows'). hearth_context_shift_half
 * is the rule llama-cli and llama-server apply when the context fills (half
 * of what follows n_keep goes), the one the engine and `hearth run` use. */
#include "backend/ops.h"
#include "runtime/context_impl.h"

/* The rope frequency factors of block il in this context, or NULL. */
static const hl_tensor *layer_freq_factors(const hearth_context *c, int32_t il) {
    return hl_layer_freq_factors(&c->model->layers[il], &c->work);
}

/* Rows [from, from + n) of `cache` to [to, to + n), to < from, in chunks no
 * longer than the distance so that no copy overlaps itself (an in-order
 * queue runs them in order, so a chunk never reads a row already written). */
static hearth_status move_rows(hl_backend *b, hl_tensor *cache, int64_t to, int64_t from, int64_t n) {
    const size_t row = hl_tensor_nbytes(cache) / (size_t)cache->ne[1];
    const int64_t step = from - to;
    uint8_t *base = cache->data;
    for (int64_t done = 0; done < n; done += step) {
        const int64_t cnt = n - done < step ? n - done : step;
        HL_TRY(hl_copy(b, base + (size_t)(to + done) * row, base + (size_t)(from + done) * row, (size_t)cnt * row));
    }
    return HEARTH_OK;
}

hearth_status hearth_context_shift(hearth_context *c, int32_t seq, uint32_t n_keep, uint32_t n_discard) {
    if (!c) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_context_shift: NULL context");
    if (seq < 0 || (uint32_t)seq >= c->params.n_seq_max)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_context_shift: sequence %d is not in [0, %u)", (int)seq,
                       c->params.n_seq_max);
    const uint32_t len = c->seq_len[seq];
    if ((uint64_t)n_keep + n_discard > len)
        return hl_fail(HEARTH_ERR_INVALID_ARG,
                       "hearth_context_shift: sequence %d holds %u tokens, fewer than n_keep %u + "
                       "n_discard %u",
                       (int)seq, len, n_keep, n_discard);
    if (n_discard == 0) return HEARTH_OK;
    const hearth_model *m = c->model;
    const hl_hparams *hp = &m->hp;
    const bool turn = hp->rope.mode != HL_ROPE_NONE || m->pos_embd.data; /* gpt2's positions: refused below */
    /* every layer's backend must have the K-shift before anything moves */
    for (int32_t il = 0; turn && il < hp->n_layer; il++) {
        hl_backend *b = hl_context_layer_backend(c, il);
        const hl_op_desc d = {.op = HL_OP_ROPE_SHIFT,
                              .t = {&c->k_cache[il], layer_freq_factors(c, il)},
                              .n_head = hp->n_head_kv,
                              .rope = hl_layer_rope(hp, &c->work, il)};
        if (!hl_supports_op(b, &d))
            return hl_op_refuse(b, &d, HEARTH_ERR_UNSUPPORTED,
                                "no K-shift for this cache or rope: "
                                "context shift is not available");
    }
    const int64_t row0 = (int64_t)seq * c->n_ctx_seq, keep = row0 + n_keep, n_move = len - n_keep - n_discard;
    c->seq_len[seq] = n_keep; /* until the moved rows are in place */
    for (int32_t il = 0; il < hp->n_layer; il++) {
        hl_backend *b = hl_context_layer_backend(c, il);
        HL_TRY(move_rows(b, &c->k_cache[il], keep, keep + n_discard, n_move));
        HL_TRY(move_rows(b, &c->v_cache[il], keep, keep + n_discard, n_move));
        if (!turn) continue;
        const hl_rope_params *rope = hl_layer_rope(hp, &c->work, il);
        HL_TRY(hl_rope_shift(b, &c->k_cache[il], keep, n_move, hp->n_head_kv, -(int32_t)n_discard, rope,
                             layer_freq_factors(c, il)));
        /* llama.cpp's K-shift ropes every cell, the unmoved ones by 0, which
         * multiplies their keys by the rope's magnitude factor: 1 (a no-op)
         * unless YaRN or an attention factor set it. Done to the kept keys
         * too, so the results stay llama.cpp's. */
        if (hl_rope_yarn_consts(rope).mscale != 1.0f)
            HL_TRY(hl_rope_shift(b, &c->k_cache[il], row0, n_keep, hp->n_head_kv, 0, rope, layer_freq_factors(c, il)));
    }
    HL_TRY(hl_synchronize(c->backend));
    for (int d = 0; d < HL_MAX_GPUS; d++)
        if (c->gpu[d]) HL_TRY(hl_synchronize(c->gpu[d]));
    c->seq_len[seq] = (uint32_t)(len - n_discard);
    return HEARTH_OK;
}

hearth_status hearth_context_shift_half(hearth_context *c, int32_t seq, uint32_t n_keep, uint32_t *n_discard) {
    if (n_discard) *n_discard = 0;
    if (!c) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_context_shift_half: NULL context");
    if (seq < 0 || (uint32_t)seq >= c->params.n_seq_max)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_context_shift_half: sequence %d is not in [0, %u)", (int)seq,
                       c->params.n_seq_max);
    /* llama.cpp tools/main and tools/server: n_discard = (n_past - n_keep) / 2 */
    const uint32_t len = c->seq_len[seq], half = len > n_keep ? (len - n_keep) / 2 : 0;
    if (half == 0)
        return hl_fail(HEARTH_ERR_CONTEXT_FULL,
                       "hearth_context_shift_half: sequence %d holds %u tokens and keeping %u "
                       "leaves nothing to drop: keep fewer tokens or use a larger context",
                       (int)seq, len, n_keep);
    HL_TRY(hearth_context_shift(c, seq, n_keep, half));
    if (n_discard) *n_discard = half;
    return HEARTH_OK;
}
