/* The inference context's state, shared by context.c (creation: the plan
 * of buffers and KV cache on every device) and batch.c (decoding, logits,
 * the sequences of the KV cache). */
#ifndef HEARTH_RUNTIME_CONTEXT_IMPL_H
#define HEARTH_RUNTIME_CONTEXT_IMPL_H

#include "backend/gpu.h"
#include "model/model.h"

struct hearth_context {
    hearth_model *model;
    hearth_context_params params; /* resolved: n_ctx = n_ctx_seq * n_seq_max */
    uint32_t n_ctx_seq;           /* cells of each sequence */
    uint32_t n_out_max;           /* output rows of a pass: min(n_seq_max, n_batch) */
    hl_backend *backend;          /* the host: CPU backend */
    hl_work work;                 /* host activations; logits end here */
    void *arena;                  /* one allocation: host activations and the KV cache of host layers */
    hl_backend *gpu[HL_MAX_GPUS]; /* compute instances on the devices the model uses */
    hl_work gpu_work[HL_MAX_GPUS];
    void *gpu_arena[HL_MAX_GPUS]; /* per device: activations and the KV cache of its layers */
    hl_tensor *k_cache, *v_cache; /* [n_layer], shared by every hl_work */
    hl_pipeline pipe;
    /* sequences: seq_len[s] tokens of sequence s in cells [s * n_ctx_seq, ...) */
    uint32_t *seq_len; /* [n_seq_max] */
    /* a pass's token layout, planned at creation (decoding does not allocate) */
    int32_t *pos, *row0;     /* [n_batch] */
    int32_t *out;            /* [n_out_max] batch indices of the output tokens */
    int32_t *out_row;        /* [n_batch] the output row of each batch token, -1: none */
    int32_t n_last;          /* tokens of the last batch (hearth_get_logits_ith's range) */
    int32_t last_row;        /* output row hearth_get_logits() reads, -1: none */
    uint32_t type_k, type_v; /* the KV cache's ggml types (hearth_kv_type, resolved) */
    float
        *embd_seq; /* embeddings: [n_seq_max][max(n_embd, n_cls_out)] pooled vectors (RANK: scores) of the last batch */
    uint8_t *embd_seq_ok;          /* embeddings: [n_seq_max] 1 where the last batch pooled the sequence */
    hl_rope_params rope, rope_swa; /* the rope of its layers: the model's with params' overrides */
};

/* Pools the hidden states of the last batch (b, its plan in c) into
 * c->embd_seq as c->params.pooling_type says (embeddings.c). */
void hl_context_pool(hearth_context *c, const hearth_batch *b);

/* The backend that runs block il: its GPU's compute instance, or the host's. */
static inline hl_backend *hl_context_layer_backend(const hearth_context *c, int32_t il) {
    const int d = c->model->layer_dev[il];
    return d < 0 ? c->backend : c->gpu[d];
}

/* What a context allocates on one device (-1: the host), planned by
 * context.c's one planner for both creation and hearth_context_memory_plan. */
typedef struct hl_ctx_plan_dev {
    size_t arena;   /* one allocation: activations of an n_ubatch pass, output rows, the KV cache of its layers */
    size_t kv;      /* the KV cache's share of arena */
    size_t scratch; /* the device's compute instance's own scratch */
} hl_ctx_plan_dev;

/* Resolves `in` (NULL: the defaults) into c->params, n_ctx_seq, n_out_max
 * and the cache types, as hearth_context_init does; c->model must be set.
 * Errors: INVALID_ARG (the message names the parameter). */
hearth_status hl_context_resolve(hearth_context *c, const hearth_context_params *in);
/* The plan of device `dev` of a resolved context. Pure. */
void hl_context_plan_dev(const hearth_context *c, int dev, hl_ctx_plan_dev *out);
/* OUT_OF_MEMORY, with the bytes needed and available, when the host's share
 * of the plan (arena + scratch) is more than the memory available now
 * (context_memory.c); HEARTH_OK otherwise. */
hearth_status hl_context_check_host(const hearth_context *c, const hl_ctx_plan_dev *host);

#endif
