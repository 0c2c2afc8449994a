/* The request bodies of the APIs beside OpenAI's, rewritten as OpenAI chat
 * or completion bodies for oai_request.c's hl_oai_parse: the one place each
 * API's fields are read. Each returns a new tree (the caller frees it) or
 * NULL with *err (400 naming the field, or 500 when memory runs out).
 * Depends on cJSON and oai_request.c only, so tests/fuzz/fuzz_server_request.c
 * links them alone. */
#ifndef HEARTH_SERVER_API_REQUEST_H
#define HEARTH_SERVER_API_REQUEST_H

#include <stdint.h>

#include "buf.h"
#include "oai_request.h"

/* Ollama's /api/chat; repeat[0], repeat[1] get options.repeat_penalty and
 * repeat_last_n when given (no OpenAI field carries them); an options.num_ctx
 * over n_ctx_slot is refused. */
cJSON *hl_ollama_chat_body(const cJSON *req, double repeat[2], uint32_t n_ctx_slot, hl_error *err);
/* Ollama's /api/generate: raw, the prompt as a completion (*chat false);
 * else [system, user: prompt] as a chat (*chat true). */
cJSON *hl_ollama_generate_body(const cJSON *req, bool *chat, double repeat[2], uint32_t n_ctx_slot, hl_error *err);
/* Anthropic's /v1/messages (count_only: /v1/messages/count_tokens, which has
 * no max_tokens or sampling). */
cJSON *hl_anthropic_chat_body(const cJSON *req, bool count_only, hl_error *err);
/* OpenAI's /v1/responses. */
cJSON *hl_responses_chat_body(const cJSON *req, hl_error *err);
/* llama-server's /completion; *n_probs and repeat[] as read. */
cJSON *hl_native_completions_body(const cJSON *req, int64_t *n_probs, double repeat[2], hl_error *err);

#endif
