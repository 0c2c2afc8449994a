/* The gpt2 architecture (GPT-2, Radford et al. 2019), as llama.cpp builds it
 * (src/models/gpt2.cpp and its tensor loading): learned position embeddings
 * (position_embd, one row per position up to context_length) added to the
 * token embeddings; pre-norm blocks with LayerNorm (weight and bias, epsilon
 * attention.layer_norm_epsilon); attention from the fused attn_qkv with its
 * bias (bound as q, k and v views, hl_model_bind), no rotary embedding, an
 * output projection with bias; a feed-forward of up (bias), tanh GELU, down
 * (bias); a final LayerNorm with bias; the output matrix tied to the token
 * embeddings unless the file has output.weight.
 *
 * Its block, hl_gpt2_layer, is shared with mpt and bloom (no rope: ALiBi
 * in the attention, hp.max_alibi_bias; mpt's clamp_kqv and missing biases),
 * starcoder2 (the same block with NEOX rope), gptneox (partial NEOX rope,
 * parallel residual), falcon (parallel residual, no projection biases,
 * one or two norms) and gptj (falcon's parallel residual from one norm,
 * partial normal-mode rope, feed-forward biases only). Without
 * rope (rope mode NONE) no backend has a K-shift for its cache, so a context
 * shift refuses, as llama.cpp cannot shift it either. */
#include "backend/ops.h"
#include "model/model.h"

hearth_status hl_layer_norm_hparams(hearth_model *m, hl_rope_mode rope_mode) {
    hl_hparams *hp = &m->hp;
    HL_TRY(hl_hparams_read(m, rope_mode));
    /* llama.cpp's attn_output is {n_embd, n_embd}; the block keeps the
     * attention output's row (n_head * head size) as a row of n_embd */
    if ((int64_t)hp->n_head * hp->head_dim != hp->n_embd)
        return hl_fail(HEARTH_ERR_FORMAT, "GGUF: %s needs n_head * head size = n_embd (here %d * %d != %d)",
                       m->arch->name, hp->n_head, hp->head_dim, hp->n_embd);
    return HEARTH_OK;
}

static hearth_status gpt2_hparams(hearth_model *m) { return hl_layer_norm_hparams(m, HL_ROPE_NONE); }

/* out {n_embd, n} = down(gelu(up(in) + up_b)) + down_b, by way of w->up {n_ff, n} (LLM_FFN_GELU, LLM_FFN_SEQ);
 * the biases where the layer has them (falcon has none) */
static hearth_status gelu_ffn(hl_backend *b, const hl_layer *l, hl_work *w, const hl_tensor *in, hl_tensor *out) {
    HL_TRY(hl_matmul(b, &l->ffn_up, in, &w->up));
    if (l->ffn_up_b.data) HL_TRY(hl_add(b, &w->up, &l->ffn_up_b));
    HL_TRY(hl_gelu(b, &w->up));
    HL_TRY(hl_matmul(b, &l->ffn_down, &w->up, out));
    return l->ffn_down_b.data ? hl_add(b, out, &l->ffn_down_b) : HEARTH_OK;
}

/* A bias the layer may lack (mpt's), as the ops take it: NULL when absent. */
static const hl_tensor *opt(const hl_tensor *t) { return t->data ? t : NULL; }

hearth_status hl_gpt2_layer(const hearth_model *m, hl_backend *b, hl_work *w, int32_t il) {
    const hl_hparams *hp = &m->hp;
    const hl_layer *l = &m->layers[il];
    /* attention block: its output, with the projection's bias, in xb */
    HL_TRY(hl_layer_norm(b, &w->x, &l->attn_norm, opt(&l->attn_norm_b), hp->norm_eps, &w->xb));
    HL_TRY(hl_attn_qkv(m, b, w, l));
    if (hp->clamp_kqv > 0.0f) { /* mpt: the fused QKV output clamped before its split, here each part */
        HL_TRY(hl_clamp(b, &w->q, -hp->clamp_kqv, hp->clamp_kqv));
        HL_TRY(hl_clamp(b, &w->k, -hp->clamp_kqv, hp->clamp_kqv));
        HL_TRY(hl_clamp(b, &w->v, -hp->clamp_kqv, hp->clamp_kqv));
    }
    if (hp->rope.mode != HL_ROPE_NONE) {
        HL_TRY(hl_rope_store(b, &w->q, &w->k, &w->v, &w->k_cache[il], &w->v_cache[il], hp->n_head,
                             hl_layer_rope(hp, w, il), NULL));
    } else {
        HL_TRY(hl_store_rows(b, &w->k, &w->k_cache[il]));
        HL_TRY(hl_store_rows(b, &w->v, &w->v_cache[il]));
    }
    const hl_attn_args args = hl_layer_attn(m, w, il, hp->attn_scale);
    HL_TRY(hl_attention(b, &args));
    HL_TRY(hl_matmul(b, &l->wo, &w->att, &w->xb));
    if (l->bo.data) HL_TRY(hl_add(b, &w->xb, &l->bo));
    hl_work outputs;
    w = hl_work_outputs(m, il, w, &outputs); /* the last block: its output rows only */
    if (hp->residual != HL_RESIDUAL_SEQUENTIAL) {
        /* x + attn + ffn(ln2(x)) in llama.cpp's order of adds: gptneox's
         * (x + ffn) + attn or falcon's x + (ffn + attn); att (free now,
         * n_embd wide) holds ln2(x), then the feed-forward's output. Where
         * the file has one norm (Falcon-7B, GPT-J) ffn_norm is bound to it
         * too, and ln2 is the attention's norm computed again from x */
        HL_TRY(hl_layer_norm(b, &w->x, &l->ffn_norm, opt(&l->ffn_norm_b), hp->norm_eps, &w->att));
        HL_TRY(gelu_ffn(b, l, w, &w->att, &w->att));
        if (hp->residual == HL_RESIDUAL_PARALLEL_BRANCHES_FIRST) {
            HL_TRY(hl_add(b, &w->att, &w->xb));
            return hl_add(b, &w->x, &w->att);
        }
        HL_TRY(hl_add(b, &w->x, &w->att));
        return hl_add(b, &w->x, &w->xb);
    }
    HL_TRY(hl_add(b, &w->x, &w->xb));
    /* feed-forward block */
    HL_TRY(hl_layer_norm(b, &w->x, &l->ffn_norm, opt(&l->ffn_norm_b), hp->norm_eps, &w->xb));
    HL_TRY(gelu_ffn(b, l, w, &w->xb, &w->xb));
    return hl_add(b, &w->x, &w->xb);
}

static const hl_weight_decl gpt2_input[] = {
    HL_DECL_TOKEN_EMBD,
    HL_M("position_embd.weight", pos_embd, EMBD, CTX_TRAIN, GET_ROWS, 0),
    HL_DECL_END,
};
static const hl_weight_decl gpt2_output[] = {HL_DECL_LN_OUTPUT(0), HL_DECL_END};
static const hl_weight_decl gpt2_block[] = {HL_DECL_LN_BLOCK(0), HL_DECL_END};

const hl_arch hl_arch_gpt2 = {
    .name = "gpt2",
    .norm = HL_OP_LAYER_NORM,
    .input = gpt2_input,
    .block = gpt2_block,
    .output = gpt2_output,
    .hparams = gpt2_hparams,
    .layer = hl_gpt2_layer,
};
