/* The RoPE options of run, chat, serve and bench, with llama.cpp's names and
 * meanings (common/arg.cpp): they set the rope fields of
 * hearth_context_params, whose sentinels keep the model's values. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cli_parse_rope_opt(int argc, char **argv, int *i, const char *cmd, hearth_context_params *ctx) {
    static const char *const names[] = {"--rope-scaling",     "--rope-scale",     "--rope-freq-base",
                                        "--rope-freq-scale",  "--yarn-orig-ctx",  "--yarn-ext-factor",
                                        "--yarn-attn-factor", "--yarn-beta-fast", "--yarn-beta-slow"};
    const char *a = argv[*i], *val = *i + 1 < argc ? argv[*i + 1] : NULL;
    int k = 0;
    while (k < (int)(sizeof names / sizeof *names) && strcmp(a, names[k])) k++;
    if (k == (int)(sizeof names / sizeof *names)) return 0;
    if (!val) {
        fprintf(stderr, "hearth: %s needs a value; see hearth %s --help\n", a, cmd);
        return -2;
    }
    (*i)++;
    if (k == 0) {
        static const char *const types[] = {"none", "linear", "yarn"}; /* HEARTH_ROPE_SCALING_NONE + index */
        for (int t = 0; t < 3; t++)
            if (!strcmp(val, types[t])) {
                ctx->rope_scaling_type = HEARTH_ROPE_SCALING_NONE + t;
                return 1;
            }
        fprintf(stderr, "hearth: %s expects none, linear or yarn, got '%s'\n", a, val);
        return -2;
    }
    if (k == 4) {
        long v;
        if (!cli_parse_int(a, val, 0, 1L << 30, &v)) return -2;
        ctx->yarn_orig_ctx = (uint32_t)v;
        return 1;
    }
    double v;
    /* the scale and base must be positive; the YaRN values take -1 for "the default" */
    if (!cli_parse_float(a, val, k <= 3 ? 1e-9 : -1.0, 1e9, &v)) return -2;
    float *const fields[] = {NULL,
                             &ctx->rope_freq_scale,
                             &ctx->rope_freq_base,
                             &ctx->rope_freq_scale,
                             NULL,
                             &ctx->yarn_ext_factor,
                             &ctx->yarn_attn_factor,
                             &ctx->yarn_beta_fast,
                             &ctx->yarn_beta_slow};
    *fields[k] = k == 1 ? (float)(1.0 / v) : (float)v; /* --rope-scale N is a frequency scale of 1/N */
    return 1;
}
