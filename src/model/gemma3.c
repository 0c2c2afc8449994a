/* The gemma3 architecture (Gemma 3, Gemma Team 2025, arXiv:2503.19786), as
 * llama.cpp builds it (src/models/gemma3.cpp): token embeddings scaled by
 * sqrt(n_embd); blocks with RMSNorm before and after both attention and the
 * feed-forward (the residual adds the post-normed output); per-head RMSNorm
 * of queries and keys (QK-norm); rope in NEOX mode; queries scaled by
 * 1/sqrt(head_dim) before attention; a GeGLU feed-forward (tanh GELU). Most
 * layers attend over a sliding window of the last n_swa positions with their
 * own rope base (10000 unless rope.freq_base_swa says otherwise, never
 * scaled); every n-th layer attends globally with rope.freq_base and the
 * file's rope scaling. Gemma's norm weights are stored with the +1 of its
 * (1 + w) RMSNorm already added by the converter, so they are plain
 * RMSNorm weights here. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/ops.h"
#include "model/model.h"

/* Layers whose bit is set attend over the sliding window. llama.cpp
 * (load_swa_pattern, set_swa_pattern): an array of one bool per layer, or a
 * period n (default 6) where the last layer of each period is global. */
static hearth_status read_swa_layers(const gguf_file *f, hl_hparams *hp) {
    const char *key = "gemma3.attention.sliding_window_pattern";
    const gguf_kv *kv = hl_gguf_find_kv(f, key);
    if (kv && kv->value.type == GGUF_TYPE_ARRAY) {
        const gguf_array *arr = &kv->value.v.arr;
        if (arr->elem_type != GGUF_TYPE_BOOL || arr->n != (uint64_t)hp->n_layer)
            return hl_fail(HEARTH_ERR_FORMAT, "GGUF: %s must be %d bools, one per layer", key, hp->n_layer);
        for (int32_t il = 0; il < hp->n_layer; il++)
            if (arr->raw[il]) hp->swa_layers[il / 8] |= (uint8_t)(1u << (il % 8));
        return HEARTH_OK;
    }
    int32_t period = 6;
    HL_TRY(hl_arch_u32(f, "gemma3", "attention.sliding_window_pattern", false, &period));
    for (int32_t il = 0; il < hp->n_layer; il++)
        if (period == 0 || il % period < period - 1) hp->swa_layers[il / 8] |= (uint8_t)(1u << (il % 8));
    return HEARTH_OK;
}

static hearth_status gemma3_hparams(hearth_model *m) {
    hl_hparams *hp = &m->hp;
    const gguf_file *f = m->gguf;
    HL_TRY(hl_hparams_read(m, HL_ROPE_NEOX));
    hp->embd_scale = sqrtf((float)hp->n_embd);
    /* gemma_pytorch's query_pre_attn_scalar: n_embd / n_head for the 27B
     * model (62 layers), the head size otherwise; llama.cpp decides the same
     * way, by the layer count */
    hp->attn_scale = 1.0f / sqrtf((float)(hp->n_layer == 62 ? hp->n_embd / hp->n_head : hp->head_dim));

    HL_TRY(hl_arch_u32(f, "gemma3", "attention.sliding_window", false, &hp->n_swa));
    if (hp->n_swa > 0) {
        HL_TRY(read_swa_layers(f, hp));
        hp->swa_own_rope = true;
        hp->rope_swa.freq_base = 10000.0f;
        hp->rope_swa.freq_scale = 1.0f;
        HL_TRY(hl_arch_f32(f, "gemma3", "rope.freq_base_swa", false, &hp->rope_swa.freq_base));
        if (!(hp->rope_swa.freq_base > 0.0f) || !isfinite(hp->rope_swa.freq_base))
            return hl_fail(HEARTH_ERR_FORMAT, "GGUF: gemma3.rope.freq_base_swa = %g must be > 0",
                           hp->rope_swa.freq_base);
    }
    float softcap = 0.0f;
    HL_TRY(hl_arch_f32(f, "gemma3", "final_logit_softcapping", false, &softcap));
    if (softcap != 0.0f)
        return hl_fail(HEARTH_ERR_UNSUPPORTED,
                       "gemma3.final_logit_softcapping = %g: logit soft-capping is not supported yet", softcap);
    return HEARTH_OK;
}

static hearth_status gemma3_layer(const hearth_model *m, hl_backend *b, hl_work *w, int32_t il) {
    const hl_hparams *hp = &m->hp;
    const hl_layer *l = &m->layers[il];
    const hl_rope_params *rope = hl_layer_rope(hp, w, il);
    /* attention block */
    HL_TRY(hl_rms_norm(b, &w->x, &l->attn_norm, hp->norm_eps, &w->xb));
    HL_TRY(hl_attn_qkv(m, b, w, l)); /* with QK-norm */
    HL_TRY(hl_rope_store(b, &w->q, &w->k, &w->v, &w->k_cache[il], &w->v_cache[il], hp->n_head, rope, NULL));
    /* the scale goes on the queries (in F32, before attention rounds them to
     * F16), and attention itself scales by 1, as llama.cpp does */
    HL_TRY(hl_scale(b, &w->q, hp->attn_scale));
    const hl_attn_args args = hl_layer_attn(m, w, il, 1.0f);
    HL_TRY(hl_attention(b, &args));
    HL_TRY(hl_matmul(b, &l->wo, &w->att, &w->xb));
    hl_work outputs;
    w = hl_work_outputs(m, il, w, &outputs); /* the last block: its output rows only */
    HL_TRY(hl_rms_norm(b, &w->xb, &l->attn_post_norm, hp->norm_eps, &w->xb));
    HL_TRY(hl_add(b, &w->x, &w->xb));
    /* feed-forward block */
    HL_TRY(hl_rms_norm(b, &w->x, &l->ffn_norm, hp->norm_eps, &w->xb));
    HL_TRY(hl_matmul(b, &l->ffn_gate, &w->xb, &w->gate));
    HL_TRY(hl_matmul(b, &l->ffn_up, &w->xb, &w->up));
    HL_TRY(hl_geglu(b, &w->gate, &w->up));
    HL_TRY(hl_matmul(b, &l->ffn_down, &w->gate, &w->xb));
    HL_TRY(hl_rms_norm(b, &w->xb, &l->ffn_post_norm, hp->norm_eps, &w->xb));
    return hl_add(b, &w->x, &w->xb);
}

static const hl_weight_decl gemma3_input[] = {HL_DECL_TOKEN_EMBD, HL_DECL_END};
static const hl_weight_decl gemma3_output[] = {HL_DECL_OUTPUT(RMS_NORM), HL_DECL_END};
static const hl_weight_decl gemma3_block[] = {
    HL_W("attn_norm.weight", attn_norm, EMBD, NONE, RMS_NORM, 0),
    HL_DECL_QKV,
    HL_W("attn_q_norm.weight", attn_q_norm, HEAD, NONE, RMS_NORM, 0),
    HL_W("attn_k_norm.weight", attn_k_norm, HEAD, NONE, RMS_NORM, 0),
    HL_W("attn_output.weight", wo, Q, EMBD, MATMUL, 0),
    HL_W("post_attention_norm.weight", attn_post_norm, EMBD, NONE, RMS_NORM, 0),
    HL_W("ffn_norm.weight", ffn_norm, EMBD, NONE, RMS_NORM, 0),
    HL_DECL_GLU_FFN,
    HL_W("post_ffw_norm.weight", ffn_post_norm, EMBD, NONE, RMS_NORM, 0),
    HL_DECL_END,
};

const hl_arch hl_arch_gemma3 = {
    .name = "gemma3",
    .norm = HL_OP_RMS_NORM,
    .input = gemma3_input,
    .block = gemma3_block,
    .output = gemma3_output,
    .hparams = gemma3_hparams,
    .layer = gemma3_layer,
};
