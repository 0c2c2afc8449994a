/* The bert architecture (BERT, Devlin et al. 2019, arXiv:1810.04805; the
 * sentence-embedding models all-MiniLM, bge, e5, gte, and rerankers such as
 * bge-reranker and ms-marco-MiniLM), as llama.cpp builds it
 * (src/models/bert.cpp and its tensor loading): an encoder. The input
 * is the sum of the token, token-type (every token is type 0, as llama.cpp
 * and sentence-transformers give it) and learned position embeddings, then
 * a LayerNorm; each block is post-norm: x = LN(x + attn(x)) with
 * bidirectional attention from q, k, v with biases and an output
 * projection with bias, then x = LN(x + down(gelu(up(x)))) with biases
 * (tanh GELU, llama.cpp's ggml_gelu). There is no output layer: the
 * context returns the last block's hidden states, pooled as
 * <arch>.pooling_type says (mean for all-MiniLM); a reranker's
 * classification head (cls, cls.output) is read by pooling RANK on the
 * host (runtime/embeddings.c, llama.cpp's build_pooling).
 *
 * Its block, hl_bert_layer, is shared with nomic-bert (nomic_bert.c),
 * which llama.cpp builds with the same graph: rope in place of the
 * position embeddings, a SwiGLU feed-forward without biases. */
#include <stdint.h>
#include <stdio.h>

#include "backend/ops.h"
#include "model/model.h"

hearth_status hl_bert_hparams(hearth_model *m, hl_rope_mode rope_mode) {
    hl_hparams *hp = &m->hp;
    HL_TRY(hl_layer_norm_hparams(m, rope_mode));
    uint32_t n_types = 2; /* BERT's type_vocab_size, llama.cpp's default */
    HL_TRY(hl_gguf_get_u32(m->gguf, "tokenizer.ggml.token_type_count", false, &n_types));
    if (n_types < 1 || n_types > 64)
        return hl_fail(HEARTH_ERR_FORMAT, "GGUF: tokenizer.ggml.token_type_count = %u must be in 1..64", n_types);
    hp->n_token_types = (int32_t)n_types;
    /* the classification head's outputs, as llama.cpp's load_hparams:
     * n_cls_out is 1 unless <arch>.classifier.output_labels names them;
     * cls.output.weight is then {n_embd, n_cls_out}, and a head of
     * cls.weight alone gives the first n_cls_out of its n_embd outputs */
    char key[96];
    snprintf(key, sizeof key, "%s.classifier.output_labels", m->arch->name);
    const gguf_array *labels = NULL;
    HL_TRY(hl_gguf_get_arr(m->gguf, key, false, GGUF_TYPE_STRING, &labels));
    const gguf_tensor *out = hl_gguf_find_tensor(m->gguf, "cls.output.weight");
    hp->n_cls_out = 0;
    if (!out && !hl_gguf_find_tensor(m->gguf, "cls.weight")) return HEARTH_OK; /* no head */
    int64_t n = labels ? (int64_t)labels->n : out ? out->ne[1] : 1;
    if (n < 1 || n > (out ? INT32_MAX : hp->n_embd))
        return hl_fail(HEARTH_ERR_FORMAT, "GGUF: a classification head of %lld outputs%s", (long long)n,
                       out ? "" : " from cls.weight alone, which has n_embd");
    hp->n_cls_out = (int32_t)n;
    return HEARTH_OK;
}

static hearth_status bert_hparams(hearth_model *m) { return hl_bert_hparams(m, HL_ROPE_NONE); }

static const hl_weight_decl bert_input[] = {
    HL_DECL_TOKEN_EMBD,
    HL_M("token_types.weight", tok_types, EMBD, TOKEN_TYPES, GET_ROWS, 0),
    HL_M("position_embd.weight", pos_embd, EMBD, CTX_TRAIN, GET_ROWS, 0),
    HL_M("token_embd_norm.weight", tok_norm, EMBD, NONE, LAYER_NORM, 0),
    HL_M("token_embd_norm.bias", tok_norm_b, EMBD, NONE, LAYER_NORM, 0),
    HL_DECL_END,
};
static const hl_weight_decl bert_block[] = {
    HL_DECL_QKV_FUSED,
    HL_W("attn_output.weight", wo, Q, EMBD, MATMUL, 0),
    HL_W("attn_output.bias", bo, EMBD, NONE, ADD, 0),
    HL_W("attn_output_norm.weight", attn_post_norm, EMBD, NONE, LAYER_NORM, 0),
    HL_W("attn_output_norm.bias", attn_post_norm_b, EMBD, NONE, LAYER_NORM, 0),
    HL_DECL_GELU_FFN(0),
    HL_W("layer_output_norm.weight", ffn_post_norm, EMBD, NONE, LAYER_NORM, 0),
    HL_W("layer_output_norm.bias", ffn_post_norm_b, EMBD, NONE, LAYER_NORM, 0),
    HL_DECL_END,
};
/* hidden states, no output layer; a reranker's head where the file has one */
static const hl_weight_decl bert_output[] = {HL_DECL_CLS_HEAD, HL_DECL_END};

hearth_status hl_bert_layer(const hearth_model *m, hl_backend *b, hl_work *w, int32_t il) {
    const hl_hparams *hp = &m->hp;
    const hl_layer *l = &m->layers[il];
    /* attention block: its input is the residual stream itself */
    const hl_tensor *weights[3] = {&l->wq, &l->wk, &l->wv};
    hl_tensor *qkv[3] = {&w->q, &w->k, &w->v};
    HL_TRY(hl_matmul_n(b, 3, weights, &w->x, qkv));
    if (l->bq.data) HL_TRY(hl_add(b, &w->q, &l->bq));
    if (l->bk.data) HL_TRY(hl_add(b, &w->k, &l->bk));
    if (l->bv.data) HL_TRY(hl_add(b, &w->v, &l->bv));
    if (hp->rope.mode != HL_ROPE_NONE) { /* nomic-bert: rope on q and k, then both stored */
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
    HL_TRY(hl_add(b, &w->x, &w->xb));
    HL_TRY(hl_layer_norm(b, &w->x, &l->attn_post_norm, &l->attn_post_norm_b, hp->norm_eps, &w->x));
    /* feed-forward block */
    if (l->ffn_gate.data) { /* nomic-bert: down(silu(gate(x)) * up(x)), llama.cpp's LLM_FFN_SILU, LLM_FFN_PAR */
        const hl_tensor *ffn[2] = {&l->ffn_gate, &l->ffn_up};
        hl_tensor *gate_up[2] = {&w->gate, &w->up};
        HL_TRY(hl_matmul_n(b, 2, ffn, &w->x, gate_up));
        HL_TRY(hl_swiglu(b, &w->gate, &w->up));
        HL_TRY(hl_matmul(b, &l->ffn_down, &w->gate, &w->xb));
    } else { /* bert: down(gelu(up(x))) with the biases the layer has */
        HL_TRY(hl_matmul(b, &l->ffn_up, &w->x, &w->up));
        if (l->ffn_up_b.data) HL_TRY(hl_add(b, &w->up, &l->ffn_up_b));
        HL_TRY(hl_gelu(b, &w->up));
        HL_TRY(hl_matmul(b, &l->ffn_down, &w->up, &w->xb));
        if (l->ffn_down_b.data) HL_TRY(hl_add(b, &w->xb, &l->ffn_down_b));
    }
    HL_TRY(hl_add(b, &w->x, &w->xb));
    return hl_layer_norm(b, &w->x, &l->ffn_post_norm, &l->ffn_post_norm_b, hp->norm_eps, &w->x);
}

const hl_arch hl_arch_bert = {
    .name = "bert",
    .norm = HL_OP_LAYER_NORM,
    .bidirectional = true,
    .input = bert_input,
    .block = bert_block,
    .output = bert_output,
    .hparams = bert_hparams,
    .layer = hl_bert_layer,
};
