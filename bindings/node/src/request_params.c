/* Generation options -> hearth_request_params: the prompt (text, or chat
 * messages the engine renders with the model's template), maxTokens, the
 * sampler's fields under their JS names (temperature, topK, topP, minP,
 * repeatPenalty, repeatLastN, presencePenalty, frequencyPenalty, seed),
 * stop strings and ignoreEos. Left-out options keep hearth's defaults
 * (hearth_sampler_default_params), except the seed: a fresh one per
 * request, as `hearth run` and llama.cpp do, so that two calls do not give
 * the same sample. */
#include <stdio.h>
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

static bool read_sampling(napi_env env, napi_value opts, hearth_sampler_params *s) {
    bool seeded = false;
    if (!hn_opt_float(env, opts, "temperature", &s->temp) ||
        !hn_opt_int(env, opts, "topK", INT32_MIN, INT32_MAX, &s->top_k) || !hn_opt_float(env, opts, "topP", &s->top_p) ||
        !hn_opt_float(env, opts, "minP", &s->min_p) || !hn_opt_float(env, opts, "repeatPenalty", &s->repeat_penalty) ||
        !hn_opt_int(env, opts, "repeatLastN", 0, INT32_MAX, &s->repeat_last_n) ||
        !hn_opt_float(env, opts, "presencePenalty", &s->presence_penalty) ||
        !hn_opt_float(env, opts, "frequencyPenalty", &s->frequency_penalty) ||
        !hn_opt_u64(env, opts, "seed", &s->seed, &seeded))
        return false;
    if (!seeded) s->seed = fresh_seed();
    return true;
}

/* messages: [{role, content}, ...] with string fields. */
static bool read_messages(napi_env env, napi_value v, hn_request_input *in) {
    bool is_array = false;
    uint32_t n = 0;
    napi_is_array(env, v, &is_array);
    if (!is_array || napi_get_array_length(env, v, &n) != napi_ok) {
        hn_throw(env, "ERR_INVALID_ARG", "messages must be an array of {role, content} objects");
        return false;
    }
    in->messages = calloc(n ? n : 1, sizeof *in->messages);
    if (!in->messages) {
        hn_throw(env, "ERR_OUT_OF_MEMORY", "out of memory reading %u messages", n);
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        napi_value e;
        char role_what[48], content_what[48];
        if (napi_get_element(env, v, i, &e) != napi_ok) {
            hn_napi_failed(env, "napi_get_element");
            return false;
        }
        snprintf(role_what, sizeof role_what, "messages[%u].role", i);
        snprintf(content_what, sizeof content_what, "messages[%u].content", i);
        char *role = hn_string(env, hn_opt(env, e, "role"), role_what, NULL);
        char *content = role ? hn_string(env, hn_opt(env, e, "content"), content_what, NULL) : NULL;
        in->messages[i] = (hearth_chat_message){.role = role, .content = content};
        in->n_messages = i + 1; /* freed with the input from here on */
        if (!content) return false;
    }
    return true;
}

bool hn_request_read(napi_env env, napi_value prompt, napi_value messages, napi_value opts, hearth_request_params *p,
                     hn_request_input *in) {
    *p = hearth_request_default_params();
    *in = (hn_request_input){0};
    if (messages && !read_messages(env, messages, in)) return false;
    if (!messages && !(in->prompt = hn_string(env, prompt, "prompt", NULL))) return false;
    if (!hn_opt_int(env, opts, "maxTokens", -1, INT32_MAX, &p->max_tokens) || !read_sampling(env, opts, &p->sampling) ||
        !hn_strings(env, hn_opt(env, opts, "stop"), "options.stop", &in->stop, &in->n_stop) ||
        !hn_opt_bool(env, opts, "ignoreEos", &p->ignore_eos))
        return false;
    p->prompt = in->prompt;
    p->messages = in->messages;
    p->n_messages = in->n_messages;
    p->stop = (const char *const *)in->stop;
    p->n_stop = in->n_stop;
    return true;
}

void hn_request_input_free(hn_request_input *in) {
    for (size_t i = 0; i < in->n_messages; i++) {
        free((char *)in->messages[i].role);
        free((char *)in->messages[i].content);
    }
    free(in->messages);
    free(in->prompt);
    hn_strings_free(in->stop, in->n_stop);
    *in = (hn_request_input){0};
}
