/* libFuzzer harness for the server's request parsers (tools/server/oai_request.c
 * and the other APIs' translations, api_request.h): any body, as an OpenAI
 * chat or completion request or as an Ollama, Anthropic, Responses or
 * llama-server one, must parse into parameters the engine can take or fail
 * with an HTTP 4xx/5xx error, without crashing or leaking. An accepted
 * request is checked against what the engine requires of it. The first input
 * byte picks the endpoint; the rest is the body. Not built by CMake; from the
 * repository root: */
// clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Iinclude -Itools/server tools/server/oai_request.c tools/server/oai_structured.c tools/server/buf.c tools/server/ollama_request.c tools/server/anthropic_request.c tools/server/responses_request.c tools/server/native_request.c tests/fuzz/fuzz_server_request.c -o fuzz_server_request $(pkg-config --cflags --libs libcjson) -lm
// ./fuzz_server_request -max_total_time=60 -dict=tests/fuzz/server_request.dict CORPUS_DIR
#include <stdlib.h>
#include <string.h>

#include "api_request.h"
#include "oai_request.h"

static void check(bool ok) {
    if (!ok) abort();
}

/* What hearth_engine_submit() would otherwise reject as INVALID_ARG. */
static void check_accepted(const hl_oai_request *r) {
    const hearth_request_params *p = &r->params;
    int forms = (p->prompt != NULL) + (p->tokens != NULL) + (p->messages_json != NULL);
    check(forms == 1 && !p->messages);
    check(!p->tokens || p->n_tokens > 0);
    for (size_t i = 0; i < p->n_tokens; i++) check(p->tokens[i] >= 0);
    check(!p->messages_json || p->messages_json[0] == '['); /* readable, NUL-terminated */
    check(!p->tools_json || (p->tools_json[0] == '[' && p->tool_choice && p->messages_json));
    /* at most one constraint on the text, and tools with none */
    check((p->sampling.grammar != NULL) + (p->sampling.json_schema != NULL) + (p->tools_json != NULL) <= 1);
    if (p->sampling.grammar) (void)strlen(p->sampling.grammar);
    if (p->sampling.json_schema) (void)strlen(p->sampling.json_schema);
    check(!p->sampling.n_logit_bias || p->sampling.logit_bias);
    for (size_t i = 0; i < p->sampling.n_logit_bias; i++)
        check(p->sampling.logit_bias[i].token >= 0 && p->sampling.logit_bias[i].bias >= -100 &&
              p->sampling.logit_bias[i].bias <= 100);
    check(p->n_stop <= HL_OAI_MAX_STOP);
    for (size_t i = 0; i < p->n_stop; i++) check(p->stop[i] && p->stop[i][0]);
    check(p->top_logprobs >= 0 && p->top_logprobs <= HEARTH_MAX_TOP_LOGPROBS);
    check(p->max_tokens == -1 || p->max_tokens >= 1);
    check(r->n >= 1 && r->n <= HL_OAI_MAX_N);
    const hearth_sampler_params *s = &p->sampling;
    check(s->temp >= 0 && s->top_p > 0 && s->top_p <= 1 && s->min_p >= 0 && s->min_p <= 1 && s->top_k >= 0);
    check(s->presence_penalty >= -2 && s->presence_penalty <= 2);
    check(s->frequency_penalty >= -2 && s->frequency_penalty <= 2);
}

/* Parses an OpenAI body of `kind` and checks the outcome either way. */
static void parse_openai(hl_oai_kind kind, const char *body, size_t len) {
    /* the server's defaults: hearth_request_default_params() with its sampler defaults */
    hearth_request_params defaults = {
        .max_tokens = -1,
        .parallel_tool_calls = true,
        .sampling = {.temp = 0.8f,
                     .top_k = 40,
                     .top_p = 0.95f,
                     .min_p = 0.05f,
                     .repeat_penalty = 1.0f,
                     .repeat_last_n = 64,
                     .seed = 0xC0FFEE},
    };
    hl_oai_request r;
    hl_error err = {0};
    if (hl_oai_parse(kind, body, len, &defaults, &r, &err)) {
        check(err.status == 0);
        check_accepted(&r);
        hl_oai_request_free(&r);
    } else {
        check(err.status >= 400 && err.status < 600 && err.type && err.message[0]);
        check(r.root == NULL && r.messages_json == NULL && r.tools_json == NULL && r.schema_json == NULL &&
              r.logit_bias == NULL && r.tokens == NULL && r.stop == NULL);
    }
}

/* An Ollama, Anthropic, Responses or llama-server body (api_request.h): a
 * refusal is a 4xx/5xx error; an accepted body becomes an OpenAI body,
 * which goes through parse_openai as the server sends it on. */
static void parse_other(unsigned which, const char *body, size_t len) {
    hl_error err = {0};
    cJSON *req = hl_json_parse_object(body, len, &err), *out = NULL;
    double repeat[2] = {1.1, 64};
    int64_t n_probs = 0;
    bool chat = true;
    if (req) {
        switch (which) {
        case 0: out = hl_ollama_chat_body(req, repeat, 2048, &err); break;
        case 1: out = hl_ollama_generate_body(req, &chat, repeat, 2048, &err); break;
        case 2: out = hl_anthropic_chat_body(req, false, &err); break;
        case 3: out = hl_anthropic_chat_body(req, true, &err); break;
        case 4: out = hl_responses_chat_body(req, &err); break;
        default: out = hl_native_completions_body(req, &n_probs, repeat, &err); chat = false;
        }
    }
    if (!out) {
        check(err.status >= 400 && err.status < 600 && err.type && err.message[0]);
    } else {
        check(err.status == 0 && n_probs >= 0 && n_probs <= HEARTH_MAX_TOP_LOGPROBS);
        char *printed = cJSON_PrintUnformatted(out);
        if (printed) parse_openai(chat ? HL_OAI_CHAT : HL_OAI_COMPLETION, printed, strlen(printed));
        free(printed);
    }
    cJSON_Delete(out);
    cJSON_Delete(req);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const unsigned which = data[0] % 8; /* 0, 1: OpenAI chat, completion; 2..7: the other APIs */
    if (which < 2) parse_openai(which ? HL_OAI_COMPLETION : HL_OAI_CHAT, (const char *)data + 1, size - 1);
    else parse_other(which - 2, (const char *)data + 1, size - 1);
    return 0;
}
