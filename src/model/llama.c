/* The llama architecture (Touvron et al. 2023, arXiv:2302.13971), as laid out
 * in GGUF by llama.cpp (src/models/llama.cpp): pre-norm blocks with RMSNorm,
 * rotary position embeddings (normal mode), grouped-query attention and a
 * SwiGLU feed-forward; the output matrix may be tied to the token embeddings.
 * Llama 3's rope scaling comes as frequency factors (the rope_freqs tensor).
 * Mistral-style files use the same names: a head size other than n_embd /
 * n_head from attention.key_length, and where the file sets
 * llama.attention.sliding_window, Mistral 7B's sliding-window attention in
 * every layer (hl_hparams_sliding_window; llama.cpp ignores the key).
 * Mixtral-style files (expert_count > 0) replace the feed-forward with a
 * mixture of experts (Jiang et al. 2024, arXiv:2401.04088), as llama.cpp's
 * build_moe_ffn runs it for llama: softmax over the router's logits, the
 * top expert_used_count experts with their probabilities renormalized,
 * each a SwiGLU feed-forward, their outputs summed with those weights.
 *
 * Its block is shared with qwen2, qwen3 and phi3, which add optional parts:
 * q/k/v biases, per-head QK-norm, LongRoPE factors, the scale on the
 * queries. */
#include "backend/ops.h"
#include "model/model.h"

static hearth_status llama_hparams(hearth_model *m) {
    hl_hparams *hp = &m->hp;
    HL_TRY(hl_hparams_read(m, HL_ROPE_NORMAL));
    HL_TRY(hl_hparams_full_rope("llama", hp));
    HL_TRY(hl_hparams_sliding_window(m->gguf, "llama", hp));
    HL_TRY(hl_arch_u32(m->gguf, "llama", "expert_count", false, &hp->n_expert));
    if (hp->n_expert > 0) {
        HL_TRY(hl_arch_u32(m->gguf, "llama", "expert_used_count", true, &hp->n_expert_used));
        if (hp->n_expert > HL_MOE_MAX_EXPERTS || hp->n_expert_used < 1 || hp->n_expert_used > hp->n_expert)
            return hl_fail(HEARTH_ERR_FORMAT,
                           "GGUF: llama.expert_count = %d and expert_used_count = %d must satisfy "
                           "1 <= expert_used_count <= expert_count <= %d",
                           (int)hp->n_expert, (int)hp->n_expert_used, HL_MOE_MAX_EXPERTS);
    }
    return HEARTH_OK;
}

static const hl_weight_decl llama_input[] = {HL_DECL_TOKEN_EMBD, HL_DECL_END};
static const hl_weight_decl llama_output[] = {HL_DECL_OUTPUT(RMS_NORM), HL_DECL_END};
static const hl_weight_decl llama_block[] = {
    HL_W("attn_norm.weight", attn_norm, EMBD, NONE, RMS_NORM, 0),
    HL_DECL_QKV,
    HL_W("attn_output.weight", wo, Q, EMBD, MATMUL, 0),
    HL_W("ffn_norm.weight", ffn_norm, EMBD, NONE, RMS_NORM, 0),
    HL_DECL_GLU_FFN,
    HL_W("ffn_gate_inp.weight", ffn_gate_inp, EMBD, EXPERT, MATMUL, HL_W_MOE),
    {.name = "ffn_gate_exps.weight",
     .ne = {HL_DIM_EMBD, HL_DIM_FF, HL_DIM_EXPERT},
     .feeds = HL_OP_MATMUL_ID,
     .flags = HL_W_MOE,
     .field = {offsetof(hl_layer, ffn_gate_exps)}},
    {.name = "ffn_up_exps.weight",
     .ne = {HL_DIM_EMBD, HL_DIM_FF, HL_DIM_EXPERT},
     .feeds = HL_OP_MATMUL_ID,
     .flags = HL_W_MOE,
     .field = {offsetof(hl_layer, ffn_up_exps)}},
    {.name = "ffn_down_exps.weight",
     .ne = {HL_DIM_FF, HL_DIM_EMBD, HL_DIM_EXPERT},
     .feeds = HL_OP_MATMUL_ID,
     .flags = HL_W_MOE,
     .field = {offsetof(hl_layer, ffn_down_exps)}},
    /* one tensor for all layers (llama.cpp binds it to each, TENSOR_DUPLICATED) */
    HL_W("rope_freqs.weight", rope_freqs, ROT_HALF, NONE, ROPE, HL_W_OPTIONAL | HL_W_SHARED),
    HL_DECL_END,
};

/* A view of activation t {ne0 * ne1, n} as {ne0, ne1, n}. */
static hl_tensor split_rows(const hl_tensor *t, int64_t ne0, int64_t ne1) {
    hl_tensor v = *t;
    v.ne[2] = t->ne[1];
    v.ne[0] = ne0;
    v.ne[1] = ne1;
    return v;
}

/* xb {n_embd, n} = the mixture of experts of block l over xb (llama.cpp
 * build_moe_ffn: LLM_FFN_SILU, norm_w, softmax gating): the router's logits,
 * each token's top-k experts and weights, the experts' gate and up
 * {n_ff, k, n}, SwiGLU, their down projections {n_embd, k, n}, the weighted sum. */
static hearth_status moe_ffn(const hl_hparams *hp, hl_backend *b, hl_work *w, const hl_layer *l) {
    const int64_t k = hp->n_expert_used;
    HL_TRY(hl_matmul(b, &l->ffn_gate_inp, &w->xb, &w->moe_logits));
    const hl_tensor *ids = &w->moe_ids; /* I32 {k, n} */
    HL_TRY(hl_moe_route(b, &w->moe_logits, &w->moe_ids, &w->moe_w));
    const hl_tensor in = split_rows(&w->xb, hp->n_embd, 1);
    hl_tensor gate = split_rows(&w->moe_gate, hp->n_ff, k), up = split_rows(&w->moe_up, hp->n_ff, k);
    hl_tensor out = split_rows(&w->moe_out, hp->n_embd, k);
    HL_TRY(hl_matmul_id(b, &l->ffn_up_exps, &in, ids, &up));
    HL_TRY(hl_matmul_id(b, &l->ffn_gate_exps, &in, ids, &gate));
    HL_TRY(hl_swiglu(b, &w->moe_gate, &w->moe_up));
    HL_TRY(hl_matmul_id(b, &l->ffn_down_exps, &gate, ids, &out));
    return hl_moe_sum(b, &out, &w->moe_w, &w->xb);
}

hearth_status hl_llama_layer(const hearth_model *m, hl_backend *b, hl_work *w, int32_t il) {
    const hl_hparams *hp = &m->hp;
    const hl_layer *l = &m->layers[il];
    const hl_tensor *freq_factors = hl_layer_freq_factors(l, w);
    const hl_rope_params *rope = hl_layer_rope(hp, w, il);
    /* attention block */
    HL_TRY(hl_rms_norm(b, &w->x, &l->attn_norm, hp->norm_eps, &w->xb));
    HL_TRY(hl_attn_qkv(m, b, w, l));
    HL_TRY(hl_rope_store(b, &w->q, &w->k, &w->v, &w->k_cache[il], &w->v_cache[il], hp->n_head, rope, freq_factors));
    if (hp->scale_q) HL_TRY(hl_scale(b, &w->q, hp->attn_scale));
    const hl_attn_args args = hl_layer_attn(m, w, il, hp->scale_q ? 1.0f : hp->attn_scale);
    HL_TRY(hl_attention(b, &args));
    HL_TRY(hl_matmul_add(b, &l->wo, &w->att, &w->x, &w->xb)); /* the residual: x += wo att */
    hl_work outputs;
    w = hl_work_outputs(m, il, w, &outputs); /* the last block: its output rows only */
    /* feed-forward block */
    HL_TRY(hl_rms_norm(b, &w->x, &l->ffn_norm, hp->norm_eps, &w->xb));
    if (l->ffn_gate_inp.data) {
        HL_TRY(moe_ffn(hp, b, w, l));
        return hl_add(b, &w->x, &w->xb);
    }
    const hl_tensor *weights[2] = {&l->ffn_gate, &l->ffn_up};
    hl_tensor *out[2] = {&w->gate, &w->up};
    HL_TRY(hl_matmul_n(b, 2, weights, &w->xb, out));
    HL_TRY(hl_swiglu(b, &w->gate, &w->up));
    return hl_matmul_add(b, &l->ffn_down, &w->gate, &w->x, &w->xb);
}

const hl_arch hl_arch_llama = {
    .name = "llama",
    .norm = HL_OP_RMS_NORM,
    .input = llama_input,
    .block = llama_block,
    .output = llama_output,
    .hparams = llama_hparams,
    .layer = hl_llama_layer,
};
