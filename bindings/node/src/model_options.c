/* A Model's loader options -> hearth_model_params and hearth_engine_params:
 * nGpuLayers, mainGpu, splitMode, tensorSplit, useMmap, useMlock (the
 * model), nCtx, nBatch, nUbatch, nThreads, nSeqMax, flashAttn, typeK, typeV, the rope and
 * YaRN overrides (its engine's context), chatTemplate, contextShift and
 * nKeep (the engine). Left-out options keep hearth's defaults. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addon.h"

/* options.tensorSplit: proportions per GPU. hearth reads one per device, so
 * the array is padded with zeros to the device count. */
static bool read_split(napi_env env, napi_value opts, float **split) {
    *split = NULL;
    napi_value v = hn_opt(env, opts, "tensorSplit");
    if (hn_is_nullish(env, v)) return true;
    bool is_array = false;
    uint32_t n = 0;
    napi_is_array(env, v, &is_array);
    if (!is_array || napi_get_array_length(env, v, &n) != napi_ok) {
        hn_throw(env, "ERR_INVALID_ARG", "options.tensorSplit must be an array of numbers");
        return false;
    }
    const uint32_t n_dev = (uint32_t)hearth_gpu_device_count(), size = n > n_dev ? n : n_dev;
    float *s = calloc(size ? size : 1, sizeof *s);
    if (!s) {
        hn_throw(env, "ERR_OUT_OF_MEMORY", "out of memory reading options.tensorSplit");
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        napi_value e;
        double d = -1;
        if (napi_get_element(env, v, i, &e) != napi_ok || napi_get_value_double(env, e, &d) != napi_ok ||
            !(d >= 0 && d < 1e30)) {
            free(s);
            hn_throw(env, "ERR_INVALID_ARG", "options.tensorSplit[%u] must be a non-negative number", i);
            return false;
        }
        s[i] = (float)d;
    }
    *split = s;
    return true;
}

/* options.splitMode: 'none' | 'layer' | 'row'. */
static bool read_split_mode(napi_env env, napi_value opts, hearth_split_mode *mode) {
    static const char *const names[] = {
        [HEARTH_SPLIT_NONE] = "none", [HEARTH_SPLIT_LAYER] = "layer", [HEARTH_SPLIT_ROW] = "row"};
    napi_value v = hn_opt(env, opts, "splitMode");
    if (hn_is_nullish(env, v)) return true;
    char *s = hn_string(env, v, "options.splitMode", NULL);
    if (!s) return false;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!strcmp(s, names[i])) {
            *mode = (hearth_split_mode)i;
            free(s);
            return true;
        }
    }
    hn_throw(env, "ERR_INVALID_ARG", "options.splitMode must be 'none', 'layer' or 'row' (got '%s')", s);
    free(s);
    return false;
}

/* options.nGpuLayers: an integer >= -1, or 'auto' (HEARTH_N_GPU_LAYERS_AUTO). */
static bool read_gpu_layers(napi_env env, napi_value opts, int32_t *out) {
    napi_value v = hn_opt(env, opts, "nGpuLayers");
    napi_valuetype t = napi_undefined;
    napi_typeof(env, v, &t);
    if (t != napi_string) return hn_opt_int(env, opts, "nGpuLayers", -1, INT32_MAX, out);
    char *s = hn_string(env, v, "options.nGpuLayers", NULL);
    const bool is_auto = s && !strcmp(s, "auto");
    free(s);
    if (is_auto) *out = HEARTH_N_GPU_LAYERS_AUTO;
    else hn_throw(env, "ERR_INVALID_ARG", "options.nGpuLayers must be an integer >= -1 or 'auto'");
    return is_auto;
}

/* options.flashAttn: 'auto' | 'on' | 'off', or true (on) / false (off). */
static bool read_flash_attn(napi_env env, napi_value opts, int32_t *out) {
    static const struct {
        const char *name;
        hearth_flash_attn value;
    } names[] = {{"auto", HEARTH_FLASH_ATTN_AUTO}, {"on", HEARTH_FLASH_ATTN_ON}, {"off", HEARTH_FLASH_ATTN_OFF}};
    napi_value v = hn_opt(env, opts, "flashAttn");
    napi_valuetype t = napi_undefined;
    napi_typeof(env, v, &t);
    if (t == napi_undefined || t == napi_null) return true;
    if (t == napi_boolean) {
        bool on = false;
        napi_get_value_bool(env, v, &on);
        *out = on ? HEARTH_FLASH_ATTN_ON : HEARTH_FLASH_ATTN_OFF;
        return true;
    }
    char *s = t == napi_string ? hn_string(env, v, "options.flashAttn", NULL) : NULL;
    for (size_t i = 0; s && i < sizeof names / sizeof names[0]; i++) {
        if (!strcmp(s, names[i].name)) {
            *out = names[i].value;
            free(s);
            return true;
        }
    }
    free(s);
    hn_throw(env, "ERR_INVALID_ARG", "options.flashAttn must be 'auto', 'on', 'off' or a boolean");
    return false;
}

/* options.typeK / options.typeV: 'f16' | 'bf16' | 'q8_0' | 'q4_0', or ggml's
 * number of one of them (hearth_kv_type: 1, 30, 8, 2). */
static bool read_kv_type(napi_env env, napi_value opts, const char *name, int32_t *out) {
    napi_value v = hn_opt(env, opts, name);
    if (hn_is_nullish(env, v)) return true;
    napi_valuetype t = napi_undefined;
    napi_typeof(env, v, &t);
    char what[32];
    snprintf(what, sizeof what, "options.%s", name);
    int32_t n = 0;
    if (t == napi_number && napi_get_value_int32(env, v, &n) == napi_ok && hearth_kv_type_name(n)) {
        *out = n;
        return true;
    }
    char *s = t == napi_string ? hn_string(env, v, what, NULL) : NULL;
    if (t == napi_string && !s) return false; /* hn_string threw */
    const bool ok = s && hearth_kv_type_from_name(s, out) == HEARTH_OK;
    free(s);
    if (!ok)
        hn_throw(env, "ERR_INVALID_ARG", "%s must be 'f16', 'bf16', 'q8_0' or 'q4_0' (or ggml's 1, 30, 8, 2)", what);
    return ok;
}

/* options.ropeScalingType: 'none' | 'linear' | 'yarn' (hearth_rope_scaling). */
static bool read_rope_scaling(napi_env env, napi_value opts, int32_t *out) {
    static const char *const names[] = {"none", "linear", "yarn"}; /* HEARTH_ROPE_SCALING_NONE + index */
    napi_value v = hn_opt(env, opts, "ropeScalingType");
    if (hn_is_nullish(env, v)) return true;
    napi_valuetype t = napi_undefined;
    napi_typeof(env, v, &t);
    char *s = t == napi_string ? hn_string(env, v, "options.ropeScalingType", NULL) : NULL;
    for (size_t i = 0; s && i < sizeof names / sizeof *names; i++) {
        if (!strcmp(s, names[i])) {
            *out = HEARTH_ROPE_SCALING_NONE + (int32_t)i;
            free(s);
            return true;
        }
    }
    free(s);
    hn_throw(env, "ERR_INVALID_ARG", "options.ropeScalingType must be 'none', 'linear' or 'yarn'");
    return false;
}

/* A finite number option >= 0 (ropeFreqBase, ropeFreqScale: 0 the model's). */
static bool read_nonnegative(napi_env env, napi_value opts, const char *name, float *out) {
    float f = *out;
    if (!hn_opt_float(env, opts, name, &f)) return false;
    if (!(f >= 0.0f)) {
        hn_throw(env, "ERR_INVALID_ARG", "options.%s must be >= 0 (0: the model's; got %g)", name, (double)f);
        return false;
    }
    *out = f;
    return true;
}

/* The rope and YaRN overrides of the context; yarnOrigCtx through *orig_ctx. */
static bool read_rope(napi_env env, napi_value opts, hearth_context_params *cp, int32_t *orig_ctx) {
    return read_rope_scaling(env, opts, &cp->rope_scaling_type) &&
           read_nonnegative(env, opts, "ropeFreqBase", &cp->rope_freq_base) &&
           read_nonnegative(env, opts, "ropeFreqScale", &cp->rope_freq_scale) &&
           hn_opt_float(env, opts, "yarnExtFactor", &cp->yarn_ext_factor) &&
           hn_opt_float(env, opts, "yarnAttnFactor", &cp->yarn_attn_factor) &&
           hn_opt_float(env, opts, "yarnBetaFast", &cp->yarn_beta_fast) &&
           hn_opt_float(env, opts, "yarnBetaSlow", &cp->yarn_beta_slow) &&
           hn_opt_int(env, opts, "yarnOrigCtx", 0, INT32_MAX, orig_ctx);
}

/* A string option into *storage (NULL when left out); false after throwing. */
static bool read_string(napi_env env, napi_value opts, const char *name, char **storage) {
    napi_value v = hn_opt(env, opts, name);
    if (hn_is_nullish(env, v)) return true;
    char what[64];
    snprintf(what, sizeof what, "options.%s", name);
    return (*storage = hn_string(env, v, what, NULL)) != NULL;
}

bool hn_model_options_read(napi_env env, napi_value opts, hn_model_options *o) {
    *o = (hn_model_options){.mp = hearth_model_default_params(), .ep = hearth_engine_default_params()};
    hearth_model_params *mp = &o->mp;
    hearth_engine_params *ep = &o->ep;
    int32_t n_ctx = (int32_t)ep->ctx.n_ctx, n_batch = (int32_t)ep->ctx.n_batch, n_seq = (int32_t)ep->ctx.n_seq_max;
    int32_t n_ubatch = (int32_t)ep->ctx.n_ubatch, orig_ctx = (int32_t)ep->ctx.yarn_orig_ctx;
    bool ok = read_gpu_layers(env, opts, &mp->n_gpu_layers) &&
              hn_opt_int(env, opts, "mainGpu", 0, INT32_MAX, &mp->main_gpu) &&
              read_split_mode(env, opts, &mp->split_mode) && hn_opt_bool(env, opts, "useMmap", &mp->use_mmap) &&
              hn_opt_bool(env, opts, "useMlock", &mp->use_mlock) && hn_opt_int(env, opts, "nCtx", 0, 1 << 24, &n_ctx) &&
              hn_opt_int(env, opts, "nBatch", 1, INT32_MAX, &n_batch) &&
              hn_opt_int(env, opts, "nUbatch", 1, INT32_MAX, &n_ubatch) &&
              hn_opt_int(env, opts, "nThreads", 0, 1024, &ep->ctx.n_threads) &&
              hn_opt_int(env, opts, "nSeqMax", 1, 256, &n_seq) && read_flash_attn(env, opts, &ep->ctx.flash_attn) &&
              read_kv_type(env, opts, "typeK", &ep->ctx.type_k) && read_kv_type(env, opts, "typeV", &ep->ctx.type_v) &&
              read_rope(env, opts, &ep->ctx, &orig_ctx) && hn_opt_bool(env, opts, "contextShift", &ep->context_shift) &&
              hn_opt_int(env, opts, "nKeep", -1, INT32_MAX, &ep->n_keep) &&
              read_string(env, opts, "chatTemplate", &o->chat_template) &&
              read_string(env, opts, "devices", &o->devices) && read_split(env, opts, &o->split);
    ep->chat_template = o->chat_template;
    mp->devices = o->devices;
    ep->ctx.n_ctx = (uint32_t)n_ctx * (uint32_t)n_seq;                /* nCtx is each request's context */
    mp->fit_n_ctx = ep->ctx.n_ctx;                                    /* nGpuLayers 'auto': room for every request's */
    mp->fit_type_k = ep->ctx.type_k, mp->fit_type_v = ep->ctx.type_v; /* ... in its cache types */
    ep->ctx.n_batch = (uint32_t)n_batch;
    ep->ctx.n_ubatch = (uint32_t)n_ubatch;
    ep->ctx.yarn_orig_ctx = (uint32_t)orig_ctx;
    ep->ctx.n_seq_max = (uint32_t)n_seq;
    mp->tensor_split = o->split;
    return ok;
}

void hn_model_options_free(hn_model_options *o) {
    free(o->split);
    free(o->chat_template);
    free(o->devices);
    *o = (hn_model_options){0};
}
