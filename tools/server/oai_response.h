/* Writing OpenAI JSON: chat and completion results, streamed chunks, usage,
 * logprobs in both endpoints' shapes, and the error body. Builders return a
 * cJSON tree the caller owns (or NULL when memory runs out); trees passed in
 * as arguments are taken over, also on failure. */
#ifndef HEARTH_SERVER_OAI_RESPONSE_H
#define HEARTH_SERVER_OAI_RESPONSE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "hearth.h"
#include "oai_request.h"

/* What every result and chunk of one request repeats. */
typedef struct hl_oai_meta {
    hl_oai_kind kind;
    const char *id;    /* "chatcmpl-..." or "cmpl-..." */
    int64_t created;   /* Unix seconds */
    const char *model; /* the alias clients see */
    bool usage_null;   /* streaming with include_usage: chunks carry "usage": null */
} hl_oai_meta;

/* {"error": {"message", "type", "param", "code"}} */
cJSON *hl_oai_error(const hl_error *e);
/* The same, printed (malloc'd, *len bytes); NULL when memory runs out. */
char *hl_oai_error_body(const hl_error *e, size_t *len);

/* {"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details": {"cached_tokens"}} */
cJSON *hl_oai_usage(int64_t n_prompt, int64_t n_cached, int64_t n_completion);

/* An empty logprobs object: chat {"content": []}; completions {"tokens",
 * "token_logprobs", "top_logprobs", "text_offset"} with empty arrays. */
cJSON *hl_oai_logprobs_new(hl_oai_kind kind);
/* Appends one token (its text from the vocabulary, its log-probability and
 * the n_top alternatives) to a logprobs object of `kind`; text_offset is
 * where the token's text starts in the choice's text (completions). */
bool hl_oai_logprobs_add(hl_oai_kind kind, cJSON *lp, const hearth_model *model, int32_t token, float logprob,
                         const hearth_token_logprob *top, int32_t n_top, size_t text_offset);

/* One choice of a result: chat {"index", "message": {"role", "content",
 * "tool_calls"?}, "logprobs", "finish_reason"}; completions {"index",
 * "text", "logprobs", "finish_reason"}. logprobs may be NULL (null);
 * tool_calls (chat) NULL for none, else the message's calls, and then an
 * empty text is content null, as OpenAI answers. */
cJSON *hl_oai_choice(const hl_oai_meta *m, int32_t index, const char *text, cJSON *logprobs, cJSON *tool_calls,
                     const char *finish);
/* One delta of a streamed tool call: {"index", "id"?, "type"?, "function":
 * {"name"?, "arguments"}}: id, type and name in a call's first delta. */
cJSON *hl_oai_tool_call_delta(const hearth_tool_call_delta *d);
/* A whole result: {"id", "object", "created", "model", "choices", "usage"}. */
cJSON *hl_oai_result(const hl_oai_meta *m, cJSON *choices, cJSON *usage);

/* One streamed chunk for choice `index`: chat {"delta": {"role"?,
 * "content"?, "tool_calls"?}}, completions {"text"}; text NULL leaves the
 * delta without content; tool_calls (an array of
 * hl_oai_tool_call_delta, taken) NULL for none; finish NULL is null. */
cJSON *hl_oai_chunk(const hl_oai_meta *m, int32_t index, bool role, const char *text, cJSON *logprobs,
                    cJSON *tool_calls, const char *finish);
/* The last chunk of a stream with include_usage: "choices": [] and usage. */
cJSON *hl_oai_usage_chunk(const hl_oai_meta *m, cJSON *usage);

#endif
