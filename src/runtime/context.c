/* Inference context: the KV cache and every activation buffer, planned at
 * creation for n_batch tokens and n_ctx positions, plus the CPU backend that
 * runs the model's ops. hearth_decode() feeds tokens through the model's
 * architecture in passes of at most n_batch tokens. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "base/log.h"
#include "gguf/ggml_types.h"
#include "model/model.h"

#define DEFAULT_N_CTX_CAP 4096

struct hearth_context {
    hearth_model *model;
    hearth_context_params params;
    hl_backend *backend;
    hl_work work;
    void *arena;   /* one allocation holding activations and the KV cache */
    uint32_t n_past;
    bool have_logits;
};

hearth_context_params hearth_context_default_params(void) {
    return (hearth_context_params){.n_ctx = 0, .n_batch = 512, .n_threads = 0};
}

/* Lays out F32 activations and the F16 KV cache in one block (or, with base
 * NULL, only counts the bytes). Returns the bytes used. */
static size_t plan_work(const hl_hparams *hp, uint32_t n_batch, uint32_t n_ctx, uint8_t *base, hl_work *w) {
    size_t off = 0;
    const int64_t q_dim = (int64_t)hp->n_head * hp->head_dim, kv_dim = (int64_t)hp->n_head_kv * hp->head_dim;
#define ACT(field, d, n)                                                                                   \
    do {                                                                                                   \
        w->field = (hl_tensor){.type = GGML_TYPE_F32, .ne = {(d), (n), 1, 1}, .data = base ? base + off : NULL}; \
        off += ((size_t)(d) * (size_t)(n) * sizeof(float) + 63) & ~(size_t)63;                             \
    } while (0)
    ACT(x, hp->n_embd, n_batch);
    ACT(xb, hp->n_embd, n_batch);
    ACT(q, q_dim, n_batch);
    ACT(k, kv_dim, n_batch);
    ACT(v, kv_dim, n_batch);
    ACT(att, q_dim, n_batch);
    ACT(gate, hp->n_ff, n_batch);
    ACT(up, hp->n_ff, n_batch);
    ACT(last, hp->n_embd, 1);
    ACT(logits, hp->n_vocab, 1);
#undef ACT
    const size_t cache_bytes = (size_t)kv_dim * n_ctx * sizeof(uint16_t); /* F16 */
    for (int32_t il = 0; il < hp->n_layer; il++) {
        hl_tensor *caches[2] = {&w->k_cache[il], &w->v_cache[il]};
        for (int c = 0; c < 2; c++) {
            *caches[c] = (hl_tensor){.type = GGML_TYPE_F16, .ne = {kv_dim, n_ctx, 1, 1}, .data = base ? base + off : NULL};
            off += cache_bytes;
        }
    }
    return off;
}

static hearth_status resolve_params(const hearth_model *m, const hearth_context_params *in, hearth_context_params *p) {
    *p = in ? *in : hearth_context_default_params();
    if (p->n_threads < 0) return hl_fail(HEARTH_ERR_INVALID_ARG, "n_threads must be >= 0 (got %d)", (int)p->n_threads);
    if (p->n_batch == 0) return hl_fail(HEARTH_ERR_INVALID_ARG, "n_batch must be >= 1");
    if (p->n_threads == 0) p->n_threads = hearth_cpu_physical_cores();
    if (p->n_ctx == 0)
        p->n_ctx = m->hp.n_ctx_train < DEFAULT_N_CTX_CAP ? (uint32_t)m->hp.n_ctx_train : DEFAULT_N_CTX_CAP;
    if (p->n_ctx > (uint32_t)m->hp.n_ctx_train)
        HL_WARN("n_ctx %u is larger than the %d tokens the model was trained on; quality may drop past it", p->n_ctx,
                (int)m->hp.n_ctx_train);
    if (p->n_ctx > (1u << 24)) return hl_fail(HEARTH_ERR_INVALID_ARG, "n_ctx %u is too large (at most 16M)", p->n_ctx);
    if (p->n_batch > p->n_ctx) p->n_batch = p->n_ctx;
    return HEARTH_OK;
}

static hearth_status init(hearth_context *c) {
    const hl_hparams *hp = &c->model->hp;
    hl_work *w = &c->work;
    w->k_cache = hl_calloc((size_t)hp->n_layer, sizeof *w->k_cache);
    w->v_cache = hl_calloc((size_t)hp->n_layer, sizeof *w->v_cache);
    if (!w->k_cache || !w->v_cache) return HEARTH_ERR_OUT_OF_MEMORY;
    const size_t bytes = plan_work(hp, c->params.n_batch, c->params.n_ctx, NULL, w);
    int64_t max_row = hp->n_embd > hp->n_ff ? hp->n_embd : hp->n_ff;
    if ((int64_t)hp->n_head * hp->head_dim > max_row) max_row = (int64_t)hp->n_head * hp->head_dim;
    const hl_cpu_limits limits = {
        .n_threads = c->params.n_threads, .max_tokens = c->params.n_batch, .max_row = max_row, .n_ctx = c->params.n_ctx};
    HL_TRY(hl_backend_cpu_init(&limits, &c->backend));
    if (c->backend->iface->alloc(c->backend, bytes, &c->arena) != HEARTH_OK)
        return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "context needs %zu MiB (KV cache and buffers) and the allocation failed: lower n_ctx or n_batch",
                       bytes >> 20);
    plan_work(hp, c->params.n_batch, c->params.n_ctx, c->arena, w);
    HL_INFO("context: n_ctx %u, n_batch %u, n_threads %d, %.1f MiB of buffers and KV cache", c->params.n_ctx,
            c->params.n_batch, (int)c->params.n_threads, (double)bytes / (1 << 20));
    return HEARTH_OK;
}

hearth_status hearth_context_init(hearth_model *model, const hearth_context_params *params, hearth_context **out) {
    hl_clear_error();
    if (!out) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_context_init: out is NULL");
    *out = NULL;
    if (!model) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_context_init: model is NULL");
    if (!model->layers) return hl_fail(HEARTH_ERR_INVALID_ARG, "the model was loaded with vocab_only: it has no weights to run");
    hearth_context *c = hl_calloc(1, sizeof *c);
    if (!c) return HEARTH_ERR_OUT_OF_MEMORY;
    c->model = model;
    hearth_status st = resolve_params(model, params, &c->params);
    if (st == HEARTH_OK) st = init(c);
    if (st != HEARTH_OK) {
        hearth_context_free(c);
        return st;
    }
    *out = c;
    return HEARTH_OK;
}

void hearth_context_free(hearth_context *c) {
    if (!c) return;
    if (c->backend) {
        c->backend->iface->free(c->backend, c->arena);
        hl_backend_cpu_free(c->backend);
    }
    free(c->work.k_cache);
    free(c->work.v_cache);
    free(c);
}

uint32_t hearth_context_n_ctx(const hearth_context *c) { return c->params.n_ctx; }
uint32_t hearth_context_n_past(const hearth_context *c) { return c->n_past; }

void hearth_context_reset(hearth_context *c) {
    c->n_past = 0;
    c->have_logits = false;
}

void hearth_context_truncate(hearth_context *c, uint32_t n_past) {
    if (n_past < c->n_past) c->n_past = n_past;
}

hearth_status hearth_decode(hearth_context *c, const int32_t *tokens, uint32_t n_tokens) {
    if (!c || !tokens || n_tokens == 0) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_decode: no tokens given");
    const int32_t n_vocab = c->model->hp.n_vocab;
    for (uint32_t i = 0; i < n_tokens; i++)
        if (tokens[i] < 0 || tokens[i] >= n_vocab)
            return hl_fail(HEARTH_ERR_INVALID_ARG, "token %u has id %d, outside the vocabulary [0, %d)", i, (int)tokens[i],
                           (int)n_vocab);
    if ((uint64_t)c->n_past + n_tokens > c->params.n_ctx)
        return hl_fail(HEARTH_ERR_CONTEXT_FULL,
                       "%u tokens do not fit: %u already in the context of n_ctx %u; raise n_ctx (-c) or use fewer tokens",
                       n_tokens, c->n_past, c->params.n_ctx);
    for (uint32_t done = 0; done < n_tokens;) {
        uint32_t n = n_tokens - done < c->params.n_batch ? n_tokens - done : c->params.n_batch;
        c->model->arch->forward(c->model, c->backend, &c->work, tokens + done, (int32_t)n, (int32_t)c->n_past,
                                done + n == n_tokens);
        c->n_past += n;
        done += n;
    }
    c->have_logits = true;
    return HEARTH_OK;
}

const float *hearth_get_logits(const hearth_context *c) { return c && c->have_logits ? c->work.logits.data : NULL; }
