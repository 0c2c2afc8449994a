/* What a Model knows about itself: its facts (layers, context trained for,
 * layers on a GPU ...), its GGUF metadata as llama.cpp reports it (every
 * non-array key, values as text), and its engine's counters. */
#include <stdlib.h>

#include "addon.h"

/* The engine's counters; without an engine (an encoder: embeddings only)
 * zeros, with the slots and the context the loader asked for. */
static void engine_stats(const hn_model *m, hearth_engine_stats *st) {
    if (m->engine) {
        hearth_engine_stats_get(m->engine, st);
        return;
    }
    *st = (hearth_engine_stats){.n_slots = (int32_t)(m->ctx.n_seq_max ? m->ctx.n_seq_max : 1)};
    st->kv_size = m->ctx.n_ctx ? m->ctx.n_ctx : (uint32_t)hearth_model_n_ctx_train(m->model) * (uint32_t)st->n_slots;
}

/* modelInfo(handle) -> {nLayer, nCtxTrain, gpuLayers, nVocab, nEmbd, nParams, size, description, name, nCtx, nSeqMax}. */
napi_value hn_model_info(napi_env env, napi_callback_info info) {
    napi_value argv[1], o;
    if (!hn_args(env, info, 1, argv)) return NULL;
    const hn_model *m = hn_model_live(env, argv[0]);
    if (!m) return NULL;
    const hearth_model *md = m->model;
    hearth_engine_stats st;
    engine_stats(m, &st);
    HN_CALL(napi_create_object(env, &o));
    if (!hn_set_num(env, o, "nLayer", hearth_model_n_layer(md)) ||
        !hn_set_num(env, o, "nCtxTrain", hearth_model_n_ctx_train(md)) ||
        !hn_set_num(env, o, "gpuLayers", hearth_model_n_gpu_layers(md)) ||
        !hn_set_num(env, o, "nVocab", hearth_model_n_vocab(md)) ||
        !hn_set_num(env, o, "nEmbd", hearth_model_n_embd(md)) ||
        !hn_set_num(env, o, "nParams", (double)hearth_model_n_params(md)) ||
        !hn_set_num(env, o, "size", (double)hearth_model_size(md)) ||
        !hn_set_num(env, o, "nCtx", st.kv_size / (uint32_t)st.n_slots) || !hn_set_num(env, o, "nSeqMax", st.n_slots) ||
        !hn_set_str(env, o, "description", hearth_model_desc(md)) || !hn_set_str(env, o, "name", m->name)) {
        hn_napi_failed(env, "building the model facts");
        return NULL;
    }
    return o;
}

/* One metadata entry's key or value into a malloc'd string (NULL: out of memory). */
static char *meta_text(const hearth_model *md, int32_t i, bool key) {
    size_t len = 0;
    hearth_status (*get)(const hearth_model *, int32_t, char *, size_t,
                         size_t *) = key ? hearth_model_meta_key_by_index : hearth_model_meta_val_str_by_index;
    get(md, i, NULL, 0, &len); /* BUFFER_TOO_SMALL, with the length */
    char *s = malloc(len + 1);
    if (s && get(md, i, s, len + 1, &len) != HEARTH_OK) {
        free(s);
        return NULL;
    }
    return s;
}

/* modelMetadata(handle) -> {key: value as text}, in file order. */
napi_value hn_model_metadata(napi_env env, napi_callback_info info) {
    napi_value argv[1], o;
    if (!hn_args(env, info, 1, argv)) return NULL;
    const hn_model *m = hn_model_live(env, argv[0]);
    if (!m) return NULL;
    HN_CALL(napi_create_object(env, &o));
    for (int32_t i = 0; i < hearth_model_meta_count(m->model); i++) {
        char *key = meta_text(m->model, i, true), *val = meta_text(m->model, i, false);
        const bool ok = key && val && hn_set_str(env, o, key, val);
        free(key);
        free(val);
        if (!ok) {
            hn_throw(env, "ERR_OUT_OF_MEMORY", "out of memory reading metadata entry %d", (int)i);
            return NULL;
        }
    }
    return o;
}

/* modelStats(handle) -> the engine's counters (hearth_engine_stats). */
napi_value hn_model_stats(napi_env env, napi_callback_info info) {
    napi_value argv[1], o;
    if (!hn_args(env, info, 1, argv)) return NULL;
    const hn_model *m = hn_model_live(env, argv[0]);
    if (!m) return NULL;
    hearth_engine_stats st;
    engine_stats(m, &st);
    HN_CALL(napi_create_object(env, &o));
    if (!hn_set_num(env, o, "nSlots", st.n_slots) || !hn_set_num(env, o, "nRunning", st.n_running) ||
        !hn_set_num(env, o, "nWaiting", st.n_waiting) || !hn_set_num(env, o, "nRequests", (double)st.n_requests) ||
        !hn_set_num(env, o, "nPromptTokens", (double)st.n_prompt_tokens) ||
        !hn_set_num(env, o, "nCachedTokens", (double)st.n_cached_tokens) ||
        !hn_set_num(env, o, "nGeneratedTokens", (double)st.n_generated_tokens) ||
        !hn_set_num(env, o, "promptSeconds", st.prompt_seconds) ||
        !hn_set_num(env, o, "generationSeconds", st.generation_seconds) || !hn_set_num(env, o, "kvUsed", st.kv_used) ||
        !hn_set_num(env, o, "kvSize", st.kv_size)) {
        hn_napi_failed(env, "building the engine's counters");
        return NULL;
    }
    return o;
}
