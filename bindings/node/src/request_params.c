/* Generation options -> hearth_request_params: the prompt (text, or a chat
 * conversation as JSON text that the engine renders with the model's
 * template), maxTokens, the sampler's fields under their JS names
 * (temperature, topK, topP, minP, repeatPenalty, repeatLastN,
 * presencePenalty, frequencyPenalty, seed, logitBias), stop strings,
 * ignoreEos and parallelToolCalls; and the constraints index.js made from
 * the structured-output and tool options (grammar, jsonSchema, tools,
 * toolChoice as text). Left-out options keep hearth's defaults
 * (hearth_sampler_default_params), except the seed: a fresh one per
 * request, as `hearth run` and llama.cpp do, so that two calls do not give
 * the same sample. */
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "addon.h"

/* splitmix64 (Steele et al. 2014) over the clock and a counter: distinct
 * seeds for requests made in the same nanosecond too. JS thread only. */
static uint64_t fresh_seed(void) {
    static uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t z = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) + ++counter * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* options.logitBias: {"token id": bias} (OpenAI's map; a JS object's keys
 * are strings) into in->logit_bias. */
static bool read_logit_bias(napi_env env, napi_value opts, hn_request_input *in) {
    napi_value lb = hn_opt(env, opts, "logitBias"), keys;
    if (hn_is_nullish(env, lb)) return true;
    napi_valuetype t = napi_undefined;
    bool is_array = false;
    uint32_t n = 0;
    napi_typeof(env, lb, &t);
    napi_is_array(env, lb, &is_array);
    if (t != napi_object || is_array) {
        hn_throw(env, "ERR_INVALID_ARG", "options.logitBias must be an object mapping token ids to biases");
        return false;
    }
    if (napi_get_property_names(env, lb, &keys) != napi_ok || napi_get_array_length(env, keys, &n) != napi_ok) {
        hn_napi_failed(env, "napi_get_property_names");
        return false;
    }
    in->logit_bias = calloc(n ? n : 1, sizeof *in->logit_bias);
    if (!in->logit_bias) {
        hn_throw(env, "ERR_OUT_OF_MEMORY", "out of memory reading %u logit biases", n);
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        napi_value key, v;
        double bias;
        if (napi_get_element(env, keys, i, &key) != napi_ok || napi_get_property(env, lb, key, &v) != napi_ok) {
            hn_napi_failed(env, "napi_get_property");
            return false;
        }
        char *name = hn_string(env, key, "an options.logitBias key", NULL), *end = NULL;
        if (!name) return false;
        const long id = name[0] >= '0' && name[0] <= '9' ? strtol(name, &end, 10) : -1;
        const bool id_ok = id >= 0 && id <= INT32_MAX && end && !*end;
        const bool bias_ok = napi_get_value_double(env, v, &bias) == napi_ok && isfinite(bias);
        if (!id_ok || !bias_ok) {
            if (!id_ok)
                hn_throw(env, "ERR_INVALID_ARG", "options.logitBias keys must be token ids (integers >= 0), got '%s'",
                         name);
            else hn_throw(env, "ERR_INVALID_ARG", "options.logitBias['%s'] must be a finite number", name);
            free(name);
            return false;
        }
        free(name);
        in->logit_bias[in->n_logit_bias++] = (hearth_logit_bias){.token = (int32_t)id, .bias = (float)bias};
    }
    return true;
}

static bool read_sampling(napi_env env, napi_value opts, hearth_sampler_params *s) {
    bool seeded = false;
    if (!hn_opt_float(env, opts, "temperature", &s->temp) ||
        !hn_opt_int(env, opts, "topK", INT32_MIN, INT32_MAX, &s->top_k) ||
        !hn_opt_float(env, opts, "topP", &s->top_p) || !hn_opt_float(env, opts, "minP", &s->min_p) ||
        !hn_opt_float(env, opts, "repeatPenalty", &s->repeat_penalty) ||
        !hn_opt_int(env, opts, "repeatLastN", 0, INT32_MAX, &s->repeat_last_n) ||
        !hn_opt_float(env, opts, "presencePenalty", &s->presence_penalty) ||
        !hn_opt_float(env, opts, "frequencyPenalty", &s->frequency_penalty) ||
        !hn_opt_u64(env, opts, "seed", &s->seed, &seeded))
        return false;
    if (!seeded) s->seed = fresh_seed();
    return true;
}

/* constraints[key]: a string copied into *out, or NULL when nullish. */
static bool read_text(napi_env env, napi_value constraints, const char *key, char **out) {
    napi_value v = hn_opt(env, constraints, key);
    return hn_is_nullish(env, v) || (*out = hn_string(env, v, key, NULL)) != NULL;
}

bool hn_request_read(napi_env env, napi_value prompt, napi_value messages, napi_value opts, napi_value constraints,
                     hearth_request_params *p, hn_request_input *in) {
    *p = hearth_request_default_params();
    *in = (hn_request_input){0};
    if (messages && !(in->messages_json = hn_string(env, messages, "messages", NULL))) return false;
    if (!messages && !(in->prompt = hn_string(env, prompt, "prompt", NULL))) return false;
    if (!hn_opt_int(env, opts, "maxTokens", -1, INT32_MAX, &p->max_tokens) || !read_sampling(env, opts, &p->sampling) ||
        !read_logit_bias(env, opts, in) ||
        !hn_strings(env, hn_opt(env, opts, "stop"), "options.stop", &in->stop, &in->n_stop) ||
        !hn_opt_bool(env, opts, "ignoreEos", &p->ignore_eos) ||
        !hn_opt_bool(env, opts, "parallelToolCalls", &p->parallel_tool_calls) ||
        !read_text(env, constraints, "grammar", &in->grammar) ||
        !read_text(env, constraints, "jsonSchema", &in->json_schema) ||
        !read_text(env, constraints, "tools", &in->tools) ||
        !read_text(env, constraints, "toolChoice", &in->tool_choice))
        return false;
    p->prompt = in->prompt;
    p->messages_json = in->messages_json;
    p->stop = (const char *const *)in->stop;
    p->n_stop = in->n_stop;
    p->sampling.logit_bias = in->logit_bias;
    p->sampling.n_logit_bias = in->n_logit_bias;
    p->sampling.grammar = in->grammar;
    p->sampling.json_schema = in->json_schema;
    p->tools_json = in->tools;
    p->tool_choice = in->tool_choice;
    return true;
}

void hn_request_input_free(hn_request_input *in) {
    free(in->prompt);
    free(in->messages_json);
    hn_strings_free(in->stop, in->n_stop);
    free(in->logit_bias);
    free(in->grammar);
    free(in->json_schema);
    free(in->tools);
    free(in->tool_choice);
    *in = (hn_request_input){0};
}
