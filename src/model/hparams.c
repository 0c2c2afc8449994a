/* What the transformer architectures share at load time: the hyperparameters
 * every one of them reads from "<arch>.*" metadata keys, and the binding of
 * the standard weights under llama.cpp's tensor names (llama-arch.cpp) with
 * the optional groups an architecture asks for. Each architecture file then
 * reads only what is its own (gemma3's sliding window, for instance). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "model/model.h"

hearth_status hl_arch_u32(const gguf_file *f, const char *arch, const char *suffix, bool required, int32_t *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    uint32_t v = (uint32_t)*out;
    HL_TRY(hl_gguf_get_u32(f, key, required, &v));
    if (v > INT32_MAX) return hl_fail(HEARTH_ERR_FORMAT, "GGUF: '%s' = %u is too large", key, v);
    *out = (int32_t)v;
    return HEARTH_OK;
}

hearth_status hl_arch_f32(const gguf_file *f, const char *arch, const char *suffix, bool required, float *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return hl_gguf_get_f32(f, key, required, out);
}

/* rope.scaling.type defaults to "linear" and the factor to none, as in
 * llama.cpp (llama-model.cpp load_hparams); original_context_length to
 * context_length, attn_factor to 1. */
static hearth_status read_rope_scaling(const gguf_file *f, const char *arch, hl_hparams *hp) {
    static const struct {
        const char *name;
        int32_t type;
    } types[] = {{"none", HEARTH_ROPE_SCALING_NONE}, {"linear", HEARTH_ROPE_SCALING_LINEAR},
                 {"yarn", HEARTH_ROPE_SCALING_YARN}};
    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    gguf_str type = {"linear", 6};
    HL_TRY(hl_gguf_get_str(f, key, false, &type));
    hp->rope_scaling = HEARTH_ROPE_SCALING_UNSPECIFIED;
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (hl_gguf_str_eq(type, types[i].name)) hp->rope_scaling = types[i].type;
    if (hp->rope_scaling == HEARTH_ROPE_SCALING_UNSPECIFIED)
        return hl_fail(HEARTH_ERR_UNSUPPORTED, "rope scaling type '%.*s' is not supported yet (supported: none, linear, yarn)",
                       (int)(type.len > 32 ? 32 : type.len), type.data);
    float factor = 0.0f;
    snprintf(key, sizeof key, "%s.rope.scaling.factor", arch);
    if (!hl_gguf_find_kv(f, key)) snprintf(key, sizeof key, "%s.rope.scale_linear", arch); /* the older name */
    HL_TRY(hl_gguf_get_f32(f, key, false, &factor));
    if (factor != 0.0f && (!(factor > 0.0f) || !isfinite(factor)))
        return hl_fail(HEARTH_ERR_FORMAT, "GGUF: %s = %g must be > 0", key, factor);
    hp->rope_freq_scale_train = factor == 0.0f ? 1.0f : 1.0f / factor;
    hp->n_ctx_orig_yarn = hp->n_ctx_train;
    HL_TRY(hl_arch_u32(f, arch, "rope.scaling.original_context_length", false, &hp->n_ctx_orig_yarn));
    hp->rope_attn_factor = 1.0f;
    HL_TRY(hl_arch_f32(f, arch, "rope.scaling.attn_factor", false, &hp->rope_attn_factor));
    if (hp->n_ctx_orig_yarn < 1 || !(hp->rope_attn_factor > 0.0f) || !isfinite(hp->rope_attn_factor))
        return hl_fail(HEARTH_ERR_FORMAT, "GGUF: %s.rope.scaling.original_context_length = %d and attn_factor = %g "
                       "must be > 0", arch, (int)hp->n_ctx_orig_yarn, hp->rope_attn_factor);
    return HEARTH_OK;
}

uint32_t hl_default_n_ctx(const hl_hparams *hp) { return hp->n_ctx_train < 4096 ? (uint32_t)hp->n_ctx_train : 4096; }

hearth_status hl_hparams_read(const gguf_file *f, const char *arch, hl_rope_mode rope_mode, hl_hparams *hp) {
    HL_TRY(hl_arch_u32(f, arch, "context_length", true, &hp->n_ctx_train));
    HL_TRY(hl_arch_u32(f, arch, "embedding_length", true, &hp->n_embd));
    HL_TRY(hl_arch_u32(f, arch, "block_count", true, &hp->n_layer));
    HL_TRY(hl_arch_u32(f, arch, "feed_forward_length", true, &hp->n_ff));
    HL_TRY(hl_arch_u32(f, arch, "attention.head_count", true, &hp->n_head));
    hp->n_head_kv = hp->n_head;
    HL_TRY(hl_arch_u32(f, arch, "attention.head_count_kv", false, &hp->n_head_kv));
    const char *eps_key = hp->layer_norm ? "attention.layer_norm_epsilon" : "attention.layer_norm_rms_epsilon";
    HL_TRY(hl_arch_f32(f, arch, eps_key, true, &hp->norm_eps));

    if (hp->n_embd < 1 || hp->n_layer < 1 || hp->n_layer > HL_MAX_LAYERS || hp->n_ff < 1 || hp->n_head < 1 ||
        hp->n_head_kv < 1 || hp->n_ctx_train < 1)
        return hl_fail(HEARTH_ERR_FORMAT,
                       "GGUF: %s hyperparameters out of range (n_embd %d, n_layer %d (at most %d), n_ff %d, n_head %d, "
                       "n_head_kv %d, context_length %d)",
                       arch, hp->n_embd, hp->n_layer, HL_MAX_LAYERS, hp->n_ff, hp->n_head, hp->n_head_kv,
                       hp->n_ctx_train);
    if (hp->n_head % hp->n_head_kv)
        return hl_fail(HEARTH_ERR_FORMAT, "GGUF: n_head %d must be a multiple of n_head_kv %d", hp->n_head,
                       hp->n_head_kv);
    if (!(hp->norm_eps > 0.0f) || !isfinite(hp->norm_eps))
        return hl_fail(HEARTH_ERR_FORMAT, "GGUF: %s.%s = %g must be > 0", arch, eps_key,
                       hp->norm_eps);
    /* both default to n_embd / n_head, as in llama.cpp */
    hp->head_dim = hp->n_embd / hp->n_head;
    int32_t v_dim = hp->head_dim;
    HL_TRY(hl_arch_u32(f, arch, "attention.key_length", false, &hp->head_dim));
    HL_TRY(hl_arch_u32(f, arch, "attention.value_length", false, &v_dim));
    if (hp->head_dim < 2 || hp->head_dim > HL_MAX_HEAD_DIM || hp->head_dim % 2 || v_dim != hp->head_dim)
        return hl_fail(HEARTH_ERR_UNSUPPORTED, "head size %d (keys) / %d (values) is not supported (even, 2..%d, equal)",
                       hp->head_dim, v_dim, HL_MAX_HEAD_DIM);

    hp->embd_scale = 1.0f;
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    hp->n_swa = 0;
    hp->swa_own_rope = false;
    memset(hp->swa_layers, 0, sizeof hp->swa_layers);
    hp->rope = (hl_rope_params){.n_rot = hp->head_dim, .mode = rope_mode, .freq_base = 10000.0f, .freq_scale = 1.0f};
    HL_TRY(hl_arch_u32(f, arch, "rope.dimension_count", false, &hp->rope.n_rot));
    HL_TRY(hl_arch_f32(f, arch, "rope.freq_base", false, &hp->rope.freq_base));
    if (hp->rope.n_rot < 2 || hp->rope.n_rot > hp->head_dim || hp->rope.n_rot % 2)
        return hl_fail(HEARTH_ERR_FORMAT, "GGUF: %s.rope.dimension_count = %d must be even and in 2..%d", arch,
                       hp->rope.n_rot, hp->head_dim);
    if (!(hp->rope.freq_base > 0.0f) || !isfinite(hp->rope.freq_base))
        return hl_fail(HEARTH_ERR_FORMAT, "GGUF: %s.rope.freq_base = %g must be > 0", arch, hp->rope.freq_base);
    hp->rope_freq_base_train = hp->rope.freq_base;
    HL_TRY(read_rope_scaling(f, arch, hp));
    /* the rope of a context that overrides none of it: hearth.h's "the
     * model's" values of each rope field (0, or negative for yarn_*) */
    const hearth_context_params no_overrides = {.rope_scaling_type = HEARTH_ROPE_SCALING_UNSPECIFIED,
                                                .yarn_ext_factor = -1.0f, .yarn_attn_factor = -1.0f,
                                                .yarn_beta_fast = -1.0f, .yarn_beta_slow = -1.0f};
    hp->rope_swa = hp->rope;
    return hl_rope_resolve(hp, &no_overrides, &hp->rope, &hp->rope_swa);
}

hearth_status hl_hparams_sliding_window(const gguf_file *f, const char *arch, hl_hparams *hp) {
    HL_TRY(hl_arch_u32(f, arch, "attention.sliding_window", false, &hp->n_swa));
    memset(hp->swa_layers, hp->n_swa > 0 ? 0xff : 0, sizeof hp->swa_layers);
    if (hp->n_swa > 0)
        HL_INFO("%s.attention.sliding_window = %d: every layer attends over the last %d positions (llama.cpp 0.3.36 "
                "ignores the key and differs past them)", arch, (int)hp->n_swa, (int)hp->n_swa);
    return HEARTH_OK;
}

hearth_status hl_hparams_full_rope(const char *arch, const hl_hparams *hp) {
    if (hp->rope.n_rot == hp->head_dim) return HEARTH_OK;
    return hl_fail(HEARTH_ERR_FORMAT, "GGUF: %s.rope.dimension_count = %d must equal the head size %d", arch,
                   hp->rope.n_rot, hp->head_dim);
}

/* Binds the fused weight or bias `name` ({ne0, sum of n} for a matrix, {sum
 * of n} for a bias) and makes parts[i] a view of its n[i] rows (elements of
 * a bias) in order; with `required` false a missing tensor leaves the parts
 * as they are. Rows are whole quantization blocks, so every view is a weight
 * of its own type. */
static hearth_status bind_split(hearth_model *m, const char *name, int64_t ne0, const int64_t *n, hl_tensor **parts,
                                int n_parts, bool required) {
    int64_t total = 0;
    for (int i = 0; i < n_parts; i++) total += n[i];
    const bool bias = ne0 == 1;
    hl_tensor whole;
    HL_TRY(hl_model_tensor(m, name, bias ? total : ne0, bias ? 1 : total, required, &whole));
    if (!whole.data) return HEARTH_OK;
    const size_t unit = hl_tensor_nbytes(&whole) / (size_t)total; /* bytes of a row (an element of a bias) */
    int64_t at = 0;
    for (int i = 0; i < n_parts; i++) {
        *parts[i] = whole;
        parts[i]->data = (uint8_t *)whole.data + (size_t)at * unit;
        parts[i]->ne[bias ? 0 : 1] = n[i];
        at += n[i];
    }
    return HEARTH_OK;
}

static hearth_status bind_layer(hearth_model *m, int32_t il, unsigned flags, hl_layer *l) {
    const hl_hparams *hp = &m->hp;
    const int64_t q_dim = (int64_t)hp->n_head * hp->head_dim, kv_dim = (int64_t)hp->n_head_kv * hp->head_dim;
    const bool biases = !(flags & HL_BIND_OPTIONAL_BIASES); /* the LayerNorm families' biases required */
    char name[96];
#define BIND(field, suffix, ne0, ne1, required)                                                         \
    do {                                                                                                \
        snprintf(name, sizeof name, "blk.%d.%s", (int)il, suffix);                                      \
        HL_TRY(hl_model_tensor(m, name, ne0, ne1, required, &l->field));                                \
    } while (0)
    BIND(attn_norm, "attn_norm.weight", hp->n_embd, 1, true);
    snprintf(name, sizeof name, "blk.%d.attn_qkv.weight", (int)il);
    const int64_t qkv[3] = {q_dim, kv_dim, kv_dim};
    /* llama.cpp's create_tensor_qkv: the fused weight where the file has
     * one, with its fused bias or else the optional separate ones */
    const bool fused_qkv = (flags & HL_BIND_FUSED_QKV) && hl_gguf_find_tensor(m->gguf, name);
    if (fused_qkv) {
        HL_TRY(bind_split(m, name, hp->n_embd, qkv, (hl_tensor *[]){&l->wq, &l->wk, &l->wv}, 3, true));
        snprintf(name, sizeof name, "blk.%d.attn_qkv.bias", (int)il);
        HL_TRY(bind_split(m, name, 1, qkv, (hl_tensor *[]){&l->bq, &l->bk, &l->bv}, 3, false));
    } else {
        BIND(wq, "attn_q.weight", hp->n_embd, q_dim, true);
        BIND(wk, "attn_k.weight", hp->n_embd, kv_dim, true);
        BIND(wv, "attn_v.weight", hp->n_embd, kv_dim, true);
    }
    BIND(wo, "attn_output.weight", q_dim, hp->n_embd, true);
    /* optional for every architecture, as llama.cpp's create_tensor_qkv */
    if (!l->bq.data) {
        BIND(bq, "attn_q.bias", q_dim, 1, false);
        BIND(bk, "attn_k.bias", kv_dim, 1, false);
        BIND(bv, "attn_v.bias", kv_dim, 1, false);
    }
    if (flags & HL_BIND_QK_NORM) {
        BIND(attn_q_norm, "attn_q_norm.weight", hp->head_dim, 1, true);
        BIND(attn_k_norm, "attn_k_norm.weight", hp->head_dim, 1, true);
    }
    if (flags & HL_BIND_POST_NORMS) {
        BIND(attn_post_norm, "post_attention_norm.weight", hp->n_embd, 1, true);
        BIND(ffn_post_norm, "post_ffw_norm.weight", hp->n_embd, 1, true);
    }
    if (!(flags & (HL_BIND_ATTN_NORM_2 | HL_BIND_ONE_NORM))) BIND(ffn_norm, "ffn_norm.weight", hp->n_embd, 1, true);
    if (flags & HL_BIND_FUSED_UP) {
        snprintf(name, sizeof name, "blk.%d.ffn_up.weight", (int)il);
        HL_TRY(bind_split(m, name, hp->n_embd, (const int64_t[]){hp->n_ff, hp->n_ff},
                          (hl_tensor *[]){&l->ffn_gate, &l->ffn_up}, 2, true));
    } else if (hp->n_expert == 0) {
        if (!(flags & HL_BIND_LAYER_NORM)) BIND(ffn_gate, "ffn_gate.weight", hp->n_embd, hp->n_ff, true);
        BIND(ffn_up, "ffn_up.weight", hp->n_embd, hp->n_ff, true);
    }
    if (hp->n_expert > 0) { /* a mixture of experts in place of the dense feed-forward (llama.cpp's llama loader) */
        BIND(ffn_gate_inp, "ffn_gate_inp.weight", hp->n_embd, hp->n_expert, true);
#define BIND_EXPERTS(field, suffix, ne0, ne1)                                                           \
    do {                                                                                                \
        snprintf(name, sizeof name, "blk.%d.%s", (int)il, suffix);                                      \
        HL_TRY(hl_model_experts(m, name, ne0, ne1, hp->n_expert, &l->field));                           \
    } while (0)
        BIND_EXPERTS(ffn_gate_exps, "ffn_gate_exps.weight", hp->n_embd, hp->n_ff);
        BIND_EXPERTS(ffn_up_exps, "ffn_up_exps.weight", hp->n_embd, hp->n_ff);
        BIND_EXPERTS(ffn_down_exps, "ffn_down_exps.weight", hp->n_ff, hp->n_embd);
#undef BIND_EXPERTS
    } else {
        BIND(ffn_down, "ffn_down.weight", hp->n_ff, hp->n_embd, true);
    }
    if (flags & HL_BIND_LAYER_NORM) BIND(attn_norm_b, "attn_norm.bias", hp->n_embd, 1, biases);
    if ((flags & HL_BIND_LAYER_NORM) && !(flags & HL_BIND_ATTN_NORM_2)) {
        /* required, as llama.cpp's gpt2, starcoder2 and gptneox loaders ask
         * (gptj: the feed-forward's, which GPT-J always has) */
        if (!(flags & HL_BIND_ONE_NORM)) {
            BIND(bo, "attn_output.bias", hp->n_embd, 1, biases);
            BIND(ffn_norm_b, "ffn_norm.bias", hp->n_embd, 1, biases);
        }
        BIND(ffn_up_b, "ffn_up.bias", hp->n_ff, 1, biases);
        BIND(ffn_down_b, "ffn_down.bias", hp->n_embd, 1, biases);
    }
    if (flags & HL_BIND_ATTN_NORM_2) {
        /* Falcon-40B: the attention reads attn_norm_2's output, the
         * feed-forward attn_norm's; the block reads them from these fields */
        snprintf(name, sizeof name, "blk.%d.attn_norm_2.weight", (int)il);
        if (hl_gguf_find_tensor(m->gguf, name)) {
            l->ffn_norm = l->attn_norm;
            l->ffn_norm_b = l->attn_norm_b;
            BIND(attn_norm, "attn_norm_2.weight", hp->n_embd, 1, true);
            BIND(attn_norm_b, "attn_norm_2.bias", hp->n_embd, 1, true);
        }
    }
#undef BIND
    /* one tensor for all layers (llama.cpp binds it to each, TENSOR_DUPLICATED) */
    if (flags & HL_BIND_ROPE_FREQS)
        HL_TRY(hl_model_tensor(m, "rope_freqs.weight", hp->rope.n_rot / 2, 1, false, &l->rope_freqs));
    if (flags & HL_BIND_LONGROPE) {
        HL_TRY(hl_model_tensor(m, "rope_factors_long.weight", hp->rope.n_rot / 2, 1, false, &l->rope_long));
        HL_TRY(hl_model_tensor(m, "rope_factors_short.weight", hp->rope.n_rot / 2, 1, false, &l->rope_short));
    }
    return HEARTH_OK;
}

hearth_status hl_model_bind(hearth_model *m, unsigned flags) {
    hl_hparams *hp = &m->hp;
    HL_TRY(hl_model_tensor(m, "token_embd.weight", hp->n_embd, hp->n_vocab, true, &m->tok_embd));
    HL_TRY(hl_model_tensor(m, "output_norm.weight", hp->n_embd, 1, true, &m->output_norm));
    if (flags & HL_BIND_LAYER_NORM) /* optional for mpt (HL_BIND_OPTIONAL_BIASES) */
        HL_TRY(hl_model_tensor(m, "output_norm.bias", hp->n_embd, 1, !(flags & HL_BIND_OPTIONAL_BIASES),
                               &m->output_norm_b));
    if (flags & HL_BIND_POS_EMBD)
        HL_TRY(hl_model_tensor(m, "position_embd.weight", hp->n_embd, hp->n_ctx_train, true, &m->pos_embd));
    HL_TRY(hl_model_tensor(m, "output.weight", hp->n_embd, hp->n_vocab, false, &m->output));
    if (!m->output.data) m->output = m->tok_embd; /* tied embeddings */
    if (flags & HL_BIND_OUTPUT_BIAS) HL_TRY(hl_model_tensor(m, "output.bias", hp->n_vocab, 1, true, &m->output_b));
    m->layers = hl_calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (!m->layers) return HEARTH_ERR_OUT_OF_MEMORY;
    for (int32_t il = 0; il < hp->n_layer; il++) HL_TRY(bind_layer(m, il, flags, &m->layers[il]));
    return HEARTH_OK;
}
