/* The rope a context runs: the model file's rotary-embedding values with the
 * context's overrides, resolved as llama.cpp resolves its context parameters
 * (llama-context.cpp, llama_context::llama_context), YaRN's attention factor
 * included (Peng et al. 2023, arXiv:2309.00071, eq. 22: sqrt(1/t) = 0.1 ln s
 * + 1). The backends then apply it (backend.h hl_rope_params). Also which
 * of LongRoPE's two sets of frequency factors a context runs. */
#include <math.h>

#include "model/hparams.h"

/* llama-context.cpp's get_mscale(scale, 1): 0.1 * ln(scale) + 1 above 1;
 * GCC contracts it into one FMA in llama.cpp's build. */
static float yarn_mscale(float scale) { return scale <= 1.0f ? 1.0f : fmaf(0.1f, logf(scale), 1.0f); }

hearth_status hl_rope_resolve(const hl_hparams *hp, const hearth_context_params *cp, hl_rope_params *full,
                              hl_rope_params *swa) {
    const int32_t type = cp->rope_scaling_type == HEARTH_ROPE_SCALING_UNSPECIFIED ? hp->rope_scaling
                                                                                  : cp->rope_scaling_type;
    if (type != HEARTH_ROPE_SCALING_NONE && type != HEARTH_ROPE_SCALING_LINEAR && type != HEARTH_ROPE_SCALING_YARN)
        return hl_fail(HEARTH_ERR_INVALID_ARG,
                       "rope_scaling_type %d is not a hearth_rope_scaling (-1 the model's, "
                       "0 none, 1 linear, 2 yarn)",
                       (int)cp->rope_scaling_type);
    hl_rope_params r = hp->rope;
    r.freq_base = cp->rope_freq_base == 0.0f ? hp->rope_freq_base_train : cp->rope_freq_base;
    r.freq_scale = cp->rope_freq_scale == 0.0f ? hp->rope_freq_scale_train : cp->rope_freq_scale;
    r.n_ctx_orig = cp->yarn_orig_ctx != 0 ? (int32_t)cp->yarn_orig_ctx : hp->n_ctx_orig_yarn;
    r.ext_factor = cp->yarn_ext_factor;
    r.attn_factor = cp->yarn_attn_factor >= 0.0f ? cp->yarn_attn_factor : 1.0f;
    r.beta_fast = cp->yarn_beta_fast >= 0.0f ? cp->yarn_beta_fast : 32.0f;
    r.beta_slow = cp->yarn_beta_slow >= 0.0f ? cp->yarn_beta_slow : 1.0f;
    if (!(r.freq_base > 0.0f) || !isfinite(r.freq_base) || !(r.freq_scale > 0.0f) || !isfinite(r.freq_scale))
        return hl_fail(HEARTH_ERR_INVALID_ARG, "rope_freq_base %g and rope_freq_scale %g must be > 0 (0: the model's)",
                       r.freq_base, r.freq_scale);
    if (cp->yarn_orig_ctx > INT32_MAX || !isfinite(r.ext_factor) || !isfinite(r.attn_factor) ||
        !isfinite(r.beta_fast) || !isfinite(r.beta_slow))
        return hl_fail(HEARTH_ERR_INVALID_ARG,
                       "yarn_orig_ctx %u, yarn_ext_factor %g, yarn_attn_factor %g, "
                       "yarn_beta_fast %g, yarn_beta_slow %g must be finite (negative: the default)",
                       cp->yarn_orig_ctx, r.ext_factor, r.attn_factor, r.beta_fast, r.beta_slow);
    if (type == HEARTH_ROPE_SCALING_NONE) r.freq_scale = 1.0f;
    if (r.ext_factor < 0.0f) r.ext_factor = type == HEARTH_ROPE_SCALING_YARN ? 1.0f : 0.0f;
    if (r.ext_factor != 0.0f) {
        /* YaRN's factor, divided by the 1 + 0.1 ln(1 / freq_scale) the rope
         * multiplies back in (llama.cpp PR 17945) */
        const float factor = 1.0f / r.freq_scale;
        r.attn_factor = yarn_mscale(factor) * (1.0f / fmaf(0.1f, logf(factor), 1.0f));
    }
    r.attn_factor *= hp->rope_attn_factor;
    *swa = r;
    if (hp->swa_own_rope) {
        swa->freq_base = hp->rope_swa.freq_base;
        swa->freq_scale = hp->rope_swa.freq_scale;
    }
    *full = r;
    return HEARTH_OK;
}

bool hl_rope_long_factors(const hl_hparams *hp, uint32_t n_ctx_seq) {
    /* llama-context.cpp pads n_ctx_seq to a multiple of 256 (GGML_PAD) */
    return (uint64_t)(n_ctx_seq + 255u) / 256u * 256u > (uint64_t)hp->n_ctx_orig_yarn;
}
