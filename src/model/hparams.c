/* The hyperparameters every transformer architecture reads from "<arch>.*"
 * metadata keys, with llama.cpp's defaults. Each architecture file then
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
    } types[] = {
        {"none", HEARTH_ROPE_SCALING_NONE}, {"linear", HEARTH_ROPE_SCALING_LINEAR}, {"yarn", HEARTH_ROPE_SCALING_YARN}};
    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    gguf_str type = {"linear", 6};
    HL_TRY(hl_gguf_get_str(f, key, false, &type));
    hp->rope_scaling = HEARTH_ROPE_SCALING_UNSPECIFIED;
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (hl_gguf_str_eq(type, types[i].name)) hp->rope_scaling = types[i].type;
    if (hp->rope_scaling == HEARTH_ROPE_SCALING_UNSPECIFIED)
        return hl_fail(HEARTH_ERR_UNSUPPORTED,
                       "rope scaling type '%.*s' is not supported yet (supported: none, linear, yarn)",
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
        return hl_fail(HEARTH_ERR_FORMAT,
                       "GGUF: %s.rope.scaling.original_context_length = %d and attn_factor = %g "
                       "must be > 0",
                       arch, (int)hp->n_ctx_orig_yarn, hp->rope_attn_factor);
    return HEARTH_OK;
}

uint32_t hl_default_n_ctx(const hl_hparams *hp) { return hp->n_ctx_train < 4096 ? (uint32_t)hp->n_ctx_train : 4096; }

hearth_status hl_hparams_read(hearth_model *m, hl_rope_mode rope_mode) {
    const gguf_file *f = m->gguf;
    const char *arch = m->arch->name;
    hl_hparams *hp = &m->hp;
    HL_TRY(hl_arch_u32(f, arch, "context_length", true, &hp->n_ctx_train));
    HL_TRY(hl_arch_u32(f, arch, "embedding_length", true, &hp->n_embd));
    HL_TRY(hl_arch_u32(f, arch, "block_count", true, &hp->n_layer));
    HL_TRY(hl_arch_u32(f, arch, "feed_forward_length", true, &hp->n_ff));
    HL_TRY(hl_arch_u32(f, arch, "attention.head_count", true, &hp->n_head));
    hp->n_head_kv = hp->n_head;
    HL_TRY(hl_arch_u32(f, arch, "attention.head_count_kv", false, &hp->n_head_kv));
    const char *eps_key = m->arch->norm == HL_OP_LAYER_NORM ? "attention.layer_norm_epsilon"
                                                            : "attention.layer_norm_rms_epsilon";
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
        return hl_fail(HEARTH_ERR_FORMAT, "GGUF: %s.%s = %g must be > 0", arch, eps_key, hp->norm_eps);
    /* both default to n_embd / n_head, as in llama.cpp */
    hp->head_dim = hp->n_embd / hp->n_head;
    int32_t v_dim = hp->head_dim;
    HL_TRY(hl_arch_u32(f, arch, "attention.key_length", false, &hp->head_dim));
    HL_TRY(hl_arch_u32(f, arch, "attention.value_length", false, &v_dim));
    if (hp->head_dim < 2 || hp->head_dim > HL_MAX_HEAD_DIM || hp->head_dim % 2 || v_dim != hp->head_dim)
        return hl_fail(HEARTH_ERR_UNSUPPORTED,
                       "head size %d (keys) / %d (values) is not supported (even, 2..%d, equal)", hp->head_dim, v_dim,
                       HL_MAX_HEAD_DIM);

    hp->pooling_type = HEARTH_POOLING_NONE;
    HL_TRY(hl_arch_u32(f, arch, "pooling_type", false, &hp->pooling_type));
    if (hp->pooling_type > HEARTH_POOLING_RANK)
        return hl_fail(HEARTH_ERR_FORMAT,
                       "GGUF: %s.pooling_type = %d is not a pooling type (0 none, 1 mean, 2 cls, "
                       "3 last, 4 rank)",
                       arch, (int)hp->pooling_type);
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
                                                .yarn_ext_factor = -1.0f,
                                                .yarn_attn_factor = -1.0f,
                                                .yarn_beta_fast = -1.0f,
                                                .yarn_beta_slow = -1.0f};
    hp->rope_swa = hp->rope;
    return hl_rope_resolve(hp, &no_overrides, &hp->rope, &hp->rope_swa);
}

hearth_status hl_hparams_sliding_window(const gguf_file *f, const char *arch, hl_hparams *hp) {
    HL_TRY(hl_arch_u32(f, arch, "attention.sliding_window", false, &hp->n_swa));
    memset(hp->swa_layers, hp->n_swa > 0 ? 0xff : 0, sizeof hp->swa_layers);
    if (hp->n_swa > 0)
        HL_INFO("%s.attention.sliding_window = %d: every layer attends over the last %d positions (llama.cpp 0.3.36 "
                "ignores the key and differs past them)",
                arch, (int)hp->n_swa, (int)hp->n_swa);
    return HEARTH_OK;
}

hearth_status hl_hparams_full_rope(const char *arch, const hl_hparams *hp) {
    if (hp->rope.n_rot == hp->head_dim) return HEARTH_OK;
    return hl_fail(HEARTH_ERR_FORMAT, "GGUF: %s.rope.dimension_count = %d must equal the head size %d", arch,
                   hp->rope.n_rot, hp->head_dim);
}
