/* llama-server's /completion bodies rewritten as OpenAI completions bodies
 * (api_request.h): the fields of the same meaning renamed, n_probs and the
 * repeat penalty read; samplers hearth lacks refused unless off. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_request.h"

/* Fields of the same meaning as OpenAI completions', under their names there. */
static const char *const SAME[][2] = {{"prompt", "prompt"},
                                      {"n_predict", "max_tokens"},
                                      {"temperature", "temperature"},
                                      {"top_k", "top_k"},
                                      {"top_p", "top_p"},
                                      {"min_p", "min_p"},
                                      {"stop", "stop"},
                                      {"stream", "stream"},
                                      {"presence_penalty", "presence_penalty"},
                                      {"frequency_penalty", "frequency_penalty"},
                                      {"ignore_eos", "ignore_eos"},
                                      {"logit_bias", "logit_bias"},
                                      {"grammar", "grammar"},
                                      {"json_schema", "json_schema"}};

/* Fields read here or that change nothing (cache_prompt: hearth always
 * reuses a slot's cached prefix). */
static const char *const OWN[] = {"seed",         "n_probs",       "repeat_penalty", "repeat_last_n",
                                  "cache_prompt", "return_tokens", "id_slot",        "model"};

/* Samplers hearth does not have: accepted only as their off value. */
static const struct {
    const char *name;
    double off;
} OFF[] = {{"mirostat", 0},        {"typical_p", 1},        {"dynatemp_range", 0},
           {"xtc_probability", 0}, {"dry_multiplier", 0},   {"top_n_sigma", -1},
           {"n_indent", 0},        {"t_max_predict_ms", 0}, {"n_keep", 0}};

static bool refuse(hl_error *err, const char *fmt, const char *name) {
    hl_error_set(err, 400, "invalid_request_error", "unsupported_parameter", NULL, fmt, name);
    return false;
}

static bool listed(const char *name, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(name, list[i])) return true;
    return false;
}

cJSON *hl_native_completions_body(const cJSON *req, int64_t *n_probs, double repeat[2], hl_error *err) {
    cJSON *body = cJSON_CreateObject();
    if (!body) {
        hl_error_oom(err);
        return NULL;
    }
    for (const cJSON *f = req->child; f; f = f->next) {
        if (cJSON_IsNull(f)) continue;
        bool known = listed(f->string, OWN, sizeof OWN / sizeof *OWN);
        for (size_t i = 0; !known && i < sizeof SAME / sizeof *SAME; i++)
            if (!strcmp(f->string, SAME[i][0])) {
                known = true;
                /* n_predict -1: until the context is full, hearth's default */
                if (!strcmp(f->string, "n_predict") && cJSON_IsNumber(f) && f->valuedouble < 0) continue;
                if (!hl_json_put(body, SAME[i][1], cJSON_Duplicate(f, true))) {
                    cJSON_Delete(body);
                    hl_error_oom(err);
                    return NULL;
                }
            }
        for (size_t i = 0; !known && i < sizeof OFF / sizeof *OFF; i++)
            if (!strcmp(f->string, OFF[i].name)) {
                known = true;
                if (!cJSON_IsNumber(f) || f->valuedouble != OFF[i].off) {
                    cJSON_Delete(body);
                    return refuse(err, "'%s' is not supported by this server (only its off value)", f->string), NULL;
                }
            }
        if (!known) {
            cJSON_Delete(body);
            return refuse(err, "'%s' is not supported by this server", f->string), NULL;
        }
    }
    const cJSON *seed = hl_json_field(req, "seed");
    if (seed && !(cJSON_IsNumber(seed) && seed->valuedouble == -1) &&
        !hl_json_put(body, "seed", cJSON_Duplicate(seed, true))) {
        cJSON_Delete(body);
        hl_error_oom(err);
        return NULL;
    }
    /* n_probs N: the N most likely tokens of each step, with the sampled one's probability */
    if (!hl_json_int(req, "n_probs", 0, HEARTH_MAX_TOP_LOGPROBS, n_probs, err) ||
        !hl_json_num(req, "repeat_penalty", 0, 1e9, &repeat[0], err) ||
        !hl_json_num(req, "repeat_last_n", -1, 1e9, &repeat[1], err) ||
        (*n_probs > 0 && !cJSON_AddNumberToObject(body, "logprobs", (double)*n_probs))) {
        cJSON_Delete(body);
        if (!err->status) hl_error_oom(err);
        return NULL;
    }
    return body;
}
