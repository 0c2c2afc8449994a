/* Building OpenAI's response JSON (see oai_response.h). The shapes follow
 * OpenAI's API reference for chat completions, completions (the legacy
 * endpoint) and their streamed chunks. Token texts in logprobs are
 * vocabulary pieces, which may be part of a UTF-8 character: "token" gets
 * the valid text (U+FFFD for a stray byte) and "bytes" the raw bytes. */
#include "oai_response.h"

#include <stdlib.h>
#include <string.h>

static cJSON *str_or_null(const char *s) { return s ? cJSON_CreateString(s) : cJSON_CreateNull(); }

/* The object, or NULL (and the object freed) when building it failed.
 * Arguments a builder takes over are attached with hl_json_put()/hl_json_push() joined by
 * `&`, not `&&`, so that each is either attached or freed. */
static cJSON *done(cJSON *obj, bool ok) {
    if (ok) return obj;
    cJSON_Delete(obj);
    return NULL;
}

cJSON *hl_oai_error(const hl_error *e) {
    cJSON *root = cJSON_CreateObject(), *err = cJSON_CreateObject();
    if (!root || !err) {
        cJSON_Delete(root);
        cJSON_Delete(err);
        return NULL;
    }
    bool ok = hl_json_put(root, "error", err) && hl_json_put(err, "message", cJSON_CreateString(e->message)) &&
              hl_json_put(err, "type", cJSON_CreateString(e->type ? e->type : "server_error")) &&
              hl_json_put(err, "param", str_or_null(e->param)) && hl_json_put(err, "code", str_or_null(e->code));
    return done(root, ok);
}

char *hl_oai_error_body(const hl_error *e, size_t *len) {
    cJSON *j = hl_oai_error(e);
    char *s = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    *len = s ? strlen(s) : 0;
    return s;
}

cJSON *hl_oai_usage(int64_t n_prompt, int64_t n_cached, int64_t n_completion) {
    cJSON *u = cJSON_CreateObject(), *details = cJSON_CreateObject();
    if (!u || !details) {
        cJSON_Delete(u);
        cJSON_Delete(details);
        return NULL;
    }
    bool ok = hl_json_put(u, "prompt_tokens_details", details) &&
              hl_json_put(details, "cached_tokens", cJSON_CreateNumber((double)n_cached)) &&
              hl_json_put(u, "prompt_tokens", cJSON_CreateNumber((double)n_prompt)) &&
              hl_json_put(u, "completion_tokens", cJSON_CreateNumber((double)n_completion)) &&
              hl_json_put(u, "total_tokens", cJSON_CreateNumber((double)(n_prompt + n_completion)));
    return done(u, ok);
}

/* ------------------------------------------------------------ logprobs -- */

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid
 * (RFC 3629: no overlongs, surrogates or code points past U+10FFFF). */
static size_t utf8_seq(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : (c & 0xF0) == 0xE0 ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (len == 0 || len > n) return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] > 0x9F) || (c == 0xF0 && s[1] < 0x90) ||
        (c == 0xF4 && s[1] > 0x8F))
        return 0;
    return len;
}

/* A token's text and bytes: {"token": ..., "bytes": [...]} fields added to obj
 * (chat), or, with obj NULL, the valid text alone in *text (malloc'd). */
static bool token_fields(const hearth_model *model, int32_t token, cJSON *obj, char **text) {
    char stack[256], *raw = stack;
    size_t len = 0;
    hearth_status st = hearth_token_to_piece(model, token, true, stack, sizeof stack, &len);
    if (st == HEARTH_ERR_BUFFER_TOO_SMALL) {
        raw = malloc(len);
        st = raw ? hearth_token_to_piece(model, token, true, raw, len, &len) : HEARTH_ERR_OUT_OF_MEMORY;
    }
    char *valid = st == HEARTH_OK ? malloc(3 * len + 1) : NULL; /* each bad byte becomes 3 (U+FFFD) */
    bool ok = valid != NULL;
    if (ok) {
        size_t o = 0;
        for (size_t i = 0; i < len;) {
            size_t k = utf8_seq((const unsigned char *)raw + i, len - i);
            if (k) {
                memcpy(valid + o, raw + i, k);
                o += k;
                i += k;
            } else {
                memcpy(valid + o, "\xEF\xBF\xBD", 3);
                o += 3;
                i++;
            }
        }
        valid[o] = '\0';
    }
    if (ok && obj) {
        cJSON *bytes = cJSON_CreateArray();
        ok = hl_json_put(obj, "token", cJSON_CreateString(valid)) && hl_json_put(obj, "bytes", bytes);
        for (size_t i = 0; ok && i < len; i++) ok = hl_json_push(bytes, cJSON_CreateNumber((unsigned char)raw[i]));
        free(valid);
    } else if (text) *text = valid;
    if (raw != stack) free(raw);
    return ok;
}

cJSON *hl_oai_logprobs_new(hl_oai_kind kind) {
    cJSON *lp = cJSON_CreateObject();
    bool ok = lp != NULL;
    if (kind == HL_OAI_CHAT) ok = ok && hl_json_put(lp, "content", cJSON_CreateArray());
    else
        ok = ok && hl_json_put(lp, "tokens", cJSON_CreateArray()) &&
             hl_json_put(lp, "token_logprobs", cJSON_CreateArray()) &&
             hl_json_put(lp, "top_logprobs", cJSON_CreateArray()) &&
             hl_json_put(lp, "text_offset", cJSON_CreateArray());
    return done(lp, ok);
}

/* chat: {"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob", "bytes"}]} */
static cJSON *chat_entry(const hearth_model *model, int32_t token, float logprob, const hearth_token_logprob *top,
                         int32_t n_top) {
    cJSON *e = cJSON_CreateObject(), *alts = cJSON_CreateArray();
    if (!e || !alts) {
        cJSON_Delete(e);
        cJSON_Delete(alts);
        return NULL;
    }
    bool ok = hl_json_put(e, "top_logprobs", alts) && token_fields(model, token, e, NULL) &&
              hl_json_put(e, "logprob", cJSON_CreateNumber(logprob));
    for (int32_t i = 0; ok && i < n_top; i++) {
        cJSON *a = cJSON_CreateObject();
        ok = hl_json_push(alts, a) && token_fields(model, top[i].token, a, NULL) &&
             hl_json_put(a, "logprob", cJSON_CreateNumber(top[i].logprob));
    }
    return done(e, ok);
}

/* completions: the token's text, its logprob, {text: logprob} of the
 * alternatives and its offset, each appended to its array. */
static bool completion_entry(cJSON *lp, const hearth_model *model, int32_t token, float logprob,
                             const hearth_token_logprob *top, int32_t n_top, size_t text_offset) {
    char *text = NULL;
    cJSON *alts = cJSON_CreateObject();
    bool ok = hl_json_push(cJSON_GetObjectItemCaseSensitive(lp, "top_logprobs"), alts);
    for (int32_t i = 0; ok && i < n_top; i++) {
        ok = token_fields(model, top[i].token, NULL, &text) &&
             hl_json_put(alts, text, cJSON_CreateNumber(top[i].logprob));
        free(text);
        text = NULL;
    }
    ok = ok && token_fields(model, token, NULL, &text) &&
         hl_json_push(cJSON_GetObjectItemCaseSensitive(lp, "tokens"), cJSON_CreateString(text)) &&
         hl_json_push(cJSON_GetObjectItemCaseSensitive(lp, "token_logprobs"), cJSON_CreateNumber(logprob)) &&
         hl_json_push(cJSON_GetObjectItemCaseSensitive(lp, "text_offset"), cJSON_CreateNumber((double)text_offset));
    free(text);
    return ok;
}

bool hl_oai_logprobs_add(hl_oai_kind kind, cJSON *lp, const hearth_model *model, int32_t token, float logprob,
                         const hearth_token_logprob *top, int32_t n_top, size_t text_offset) {
    if (kind == HL_OAI_CHAT)
        return hl_json_push(cJSON_GetObjectItemCaseSensitive(lp, "content"),
                            chat_entry(model, token, logprob, top, n_top));
    return completion_entry(lp, model, token, logprob, top, n_top, text_offset);
}

/* ------------------------------------------------- results and chunks -- */

static cJSON *head(const hl_oai_meta *m, bool chunk) {
    const char *object = m->kind == HL_OAI_COMPLETION ? "text_completion"
                         : chunk                      ? "chat.completion.chunk"
                                                      : "chat.completion";
    cJSON *o = cJSON_CreateObject();
    bool ok = o && hl_json_put(o, "id", cJSON_CreateString(m->id)) &&
              hl_json_put(o, "object", cJSON_CreateString(object)) &&
              hl_json_put(o, "created", cJSON_CreateNumber((double)m->created)) &&
              hl_json_put(o, "model", cJSON_CreateString(m->model));
    return done(o, ok);
}

/* {"index", "logprobs", "finish_reason"}; the caller adds the text. */
static cJSON *choice_base(int32_t index, cJSON *logprobs, const char *finish) {
    cJSON *c = cJSON_CreateObject();
    if (!c) {
        cJSON_Delete(logprobs);
        return NULL;
    }
    bool ok = hl_json_put(c, "logprobs", logprobs ? logprobs : cJSON_CreateNull()) &&
              hl_json_put(c, "index", cJSON_CreateNumber(index)) &&
              hl_json_put(c, "finish_reason", str_or_null(finish));
    return done(c, ok);
}

cJSON *hl_oai_tool_call_delta(const hearth_tool_call_delta *d) {
    cJSON *call = cJSON_CreateObject(), *fn = cJSON_CreateObject();
    char *args = malloc(d->arguments_len + 1);
    if (!call || !fn || !args) {
        cJSON_Delete(call);
        cJSON_Delete(fn);
        free(args);
        return NULL;
    }
    memcpy(args, d->arguments, d->arguments_len);
    args[d->arguments_len] = '\0';
    bool ok = hl_json_put(call, "index", cJSON_CreateNumber(d->index)) &&
              (!d->id || hl_json_put(call, "id", cJSON_CreateString(d->id))) &&
              (!d->id || hl_json_put(call, "type", cJSON_CreateString("function"))) &&
              hl_json_put(call, "function", fn) && (!d->name || hl_json_put(fn, "name", cJSON_CreateString(d->name))) &&
              hl_json_put(fn, "arguments", cJSON_CreateString(args));
    free(args);
    return done(call, ok);
}

cJSON *hl_oai_choice(const hl_oai_meta *m, int32_t index, const char *text, cJSON *logprobs, cJSON *tool_calls,
                     const char *finish) {
    cJSON *c = choice_base(index, logprobs, finish);
    bool ok = c != NULL;
    if (ok && m->kind == HL_OAI_CHAT) {
        cJSON *msg = cJSON_CreateObject();
        ok = hl_json_put(c, "message", msg) && hl_json_put(msg, "role", cJSON_CreateString("assistant")) &&
             hl_json_put(msg, "content", tool_calls && !text[0] ? cJSON_CreateNull() : cJSON_CreateString(text));
        if (tool_calls) {
            ok = ok && hl_json_put(msg, "tool_calls", tool_calls);
            tool_calls = NULL;
        }
    } else ok = ok && hl_json_put(c, "text", cJSON_CreateString(text));
    cJSON_Delete(tool_calls);
    return done(c, ok);
}

cJSON *hl_oai_result(const hl_oai_meta *m, cJSON *choices, cJSON *usage) {
    cJSON *o = head(m, false);
    if (!o) {
        cJSON_Delete(choices);
        cJSON_Delete(usage);
        return NULL;
    }
    return done(o, hl_json_put(o, "choices", choices) & hl_json_put(o, "usage", usage));
}

cJSON *hl_oai_chunk(const hl_oai_meta *m, int32_t index, bool role, const char *text, cJSON *logprobs,
                    cJSON *tool_calls, const char *finish) {
    cJSON *c = choice_base(index, logprobs, finish), *o = head(m, true), *choices = cJSON_CreateArray();
    if (!c || !o || !choices) {
        cJSON_Delete(c);
        cJSON_Delete(o);
        cJSON_Delete(choices);
        cJSON_Delete(tool_calls);
        return NULL;
    }
    bool ok = hl_json_push(choices, c) & hl_json_put(o, "choices", choices);
    if (ok && m->kind == HL_OAI_CHAT) {
        cJSON *delta = cJSON_CreateObject();
        ok = hl_json_put(c, "delta", delta) && (!role || hl_json_put(delta, "role", cJSON_CreateString("assistant"))) &&
             (!text || hl_json_put(delta, "content", cJSON_CreateString(text)));
        if (tool_calls) {
            ok = ok && hl_json_put(delta, "tool_calls", tool_calls);
            tool_calls = NULL;
        }
    } else ok = ok && hl_json_put(c, "text", cJSON_CreateString(text ? text : ""));
    ok = ok && (!m->usage_null || hl_json_put(o, "usage", cJSON_CreateNull()));
    cJSON_Delete(tool_calls);
    return done(o, ok);
}

cJSON *hl_oai_usage_chunk(const hl_oai_meta *m, cJSON *usage) {
    cJSON *o = head(m, true);
    if (!o) {
        cJSON_Delete(usage);
        return NULL;
    }
    return done(o, hl_json_put(o, "usage", usage) & hl_json_put(o, "choices", cJSON_CreateArray()));
}
