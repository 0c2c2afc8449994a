/* The forward pass (forward.c): the activations a context allocates for it
 * (hl_work), the pipeline of stages a placement implies (hl_pipeline), the
 * tokens of one pass (hl_pass), hl_model_forward, and the per-block helpers
 * the architectures' blocks share (rope and frequency factors of a block,
 * the q/k/v projections, the last block's switch to the output rows). */
#ifndef HEARTH_MODEL_FORWARD_H
#define HEARTH_MODEL_FORWARD_H

#include "backend/backend.h"
#include "backend/gpu.h"
#include "model/hparams.h"
#include "model/layer.h"

/* The per-token activations, each F32 {width, n}, with their widths named
 * as hl_work_widths' fields: x, the residual stream; xb, the normed input and
 * the attention output projection; q, k, v; att, attention's output; gate and
 * up, the feed-forward's. HL_WORK_ACTIVATIONS lists them once for the code
 * that plans, sizes and views them all. */
// clang-format off
#define HL_WORK_ACTIVATIONS(X) X(x, n_embd) X(xb, n_embd) X(q, q_dim) X(k, kv_dim) X(v, kv_dim) X(att, q_dim) \
    X(gate, n_ff) X(up, n_ff) X(moe_logits, n_expert) X(moe_ids, n_expert_used) X(moe_w, n_expert_used)          \
    X(moe_gate, ff_exp) X(moe_up, ff_exp) X(moe_out, embd_exp)
// clang-format on

typedef struct hl_work_widths {
    int64_t n_embd, q_dim, kv_dim, n_ff; /* q_dim = n_head * head_dim, kv_dim = n_head_kv * head_dim */
    /* a mixture of experts' (0 without): the router's logits, each token's
     * experts (moe_ids, I32) and their weights, the experts' gate and up
     * {n_ff, n_expert_used} (ff_exp = n_ff * n_expert_used) and outputs
     * {n_embd, n_expert_used} (embd_exp) */
    int64_t n_expert, n_expert_used, ff_exp, embd_exp;
} hl_work_widths;

/* Activations of one forward pass and the KV cache, allocated by the context
 * for at most n_batch tokens and n_out outputs (tokens whose logits a pass
 * keeps). ne[1] of each activation is set to the tokens (outputs) of the
 * current pass. */
typedef struct hl_work {
#define HL_WORK_FIELD(name, width) hl_tensor name;
    HL_WORK_ACTIVATIONS(HL_WORK_FIELD)
#undef HL_WORK_FIELD
    hl_tensor last;     /* F32 {n_embd, n_out}: final norm of the output tokens */
    hl_tensor logits;   /* F32 {n_vocab, n_out} */
    hl_tensor *k_cache; /* per layer, F16 {n_head_kv*hd, n_ctx}: n_seq_max runs of n_ctx_seq cells */
    hl_tensor *v_cache;
    hl_rope_params rope, rope_swa; /* the context's rope of full and sliding-window layers (hl_rope_resolve) */
    bool rope_long;                /* LongRoPE: the context runs the long factors (hl_rope_long_factors) */
    int32_t out_tail;              /* the pass's first output row where its outputs are its last rows and not all of
                            them (hl_work_outputs), else 0; set per pass by hl_model_forward */
} hl_work;

/* What block il works on from its attention output on (after the output
 * projection and its bias). In the last block llama.cpp carries on only
 * with the rows whose logits the pass asks for (ggml_get_rows(cur,
 * inp_out_ids) in each model's graph), so the feed-forward of a prompt runs
 * for its last token alone: there, where those rows are the pass's last
 * ones (w->out_tail > 0), writes into *view the activations of *w from that
 * row on (the same buffers: results land in the rows the output layer
 * reads) and returns view; otherwise returns w. Every op after the switch
 * works row by row, so the kept rows get what llama.cpp computes for them,
 * batch size included. */
hl_work *hl_work_outputs(const hearth_model *m, int32_t il, hl_work *w, hl_work *view);

/* The rope of block il in a context: the sliding-window layers' or the others'. */
static inline const hl_rope_params *hl_layer_rope(const hl_hparams *hp, const hl_work *w, int32_t il) {
    return hl_layer_is_swa(hp, il) ? &w->rope_swa : &w->rope;
}

/* The attention of block il over its cache, from w->q into w->att, with the
 * model's heads, the layer's window, ALiBi's max_bias and the
 * architecture's mask (hl_arch.bidirectional); `scale` multiplies K.q. */
hl_attn_args hl_layer_attn(const hearth_model *m, hl_work *w, int32_t il, float scale);

/* The rope frequency factors of block l in a context, or NULL when it has
 * none: rope_freqs where the file has it, else LongRoPE's long or short
 * factors as the context chose (llama.cpp llama_model::get_rope_factors). */
static inline const hl_tensor *hl_layer_freq_factors(const hl_layer *l, const hl_work *w) {
    const hl_tensor *t = l->rope_freqs.data ? &l->rope_freqs : w->rope_long ? &l->rope_long : &l->rope_short;
    return t->data ? t : NULL;
}

/* A run of consecutive blocks [il0, il1) on one backend, with that
 * backend's activations; il0 == il1 for a stage that only runs the output. */
typedef struct hl_stage {
    hl_backend *b;
    hl_work *w;
    int32_t il0, il1;
} hl_stage;

#define HL_MAX_STAGES (HL_MAX_GPUS + 2)

/* How a context runs the model: the host (CPU backend and activations),
 * where the token embeddings are looked up and the logits end, then the
 * stages in order; the last runs the final norm and output matrix. */
typedef struct hl_pipeline {
    hl_backend *host;
    hl_work *host_work;
    int32_t n_stages;
    hl_stage stage[HL_MAX_STAGES];
} hl_pipeline;

/* The stages of the model's placement: blocks on the host use host/host_work,
 * blocks on GPU d use gpu[d]/gpu_work[d]. */
void hl_pipeline_init(const hearth_model *m, hl_backend *host, hl_work *host_work, hl_backend *const *gpu,
                      hl_work *gpu_work, hl_pipeline *out);

/* The tokens of one forward pass (n <= n_ubatch), each at its place in its
 * sequence: token t has position pos[t] and its sequence's KV cells start at
 * row row0[t]. out lists the tokens (indices into the pass) whose logits are
 * wanted, n_out of them (0: none); their logits take the output rows
 * [out_row0, out_row0 + n_out) (a batch split into passes keeps each pass's
 * outputs after the earlier ones'). */
typedef struct hl_pass {
    const int32_t *tokens, *pos, *row0; /* [n] */
    int32_t n;
    const int32_t *out; /* [n_out] */
    int32_t n_out;
    int32_t out_row0;
    bool embd; /* the outputs are embeddings: hidden states after the output norm where the model has one,
                  left in rows out_row0... of host_work->last {n_embd, *}; no output matrix */
} hl_pass;

/* Runs a pass through the model: embedding lookup on the host (times
 * hp.embd_scale), every block by m->arch->layer on its stage's backend, the
 * hidden state {n_embd, n} copied across stage boundaries, and for the
 * output tokens the final norm and output matrix, their logits left in rows
 * out_row0... of host_work->logits {n_vocab, *} (a long prompt's earlier passes ask
 * for none and skip the output matrix), or with pass->embd their hidden
 * states in those rows of host_work->last. A one-token pass on a backend with
 * graph_run is recorded once and replayed. Returns after every backend has
 * finished, with the first error one of them reports (DEVICE, ...). */
hearth_status hl_model_forward(const hearth_model *m, const hl_pipeline *p, const hl_pass *pass);

/* The attention inputs of block l from its normed input w->xb {n_embd, n}:
 * q, k, v = wq, wk, wv times xb, plus the biases the layer has, then the
 * per-head RMSNorm of q and k where the layer has QK-norm weights (before
 * rope, as qwen3 and gemma3 do). */
hearth_status hl_attn_qkv(const hearth_model *m, hl_backend *b, hl_work *w, const hl_layer *l);

#endif
