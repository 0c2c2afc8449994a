/* Requests entering the engine: hearth_engine_submit() checks and copies a
 * request (its prompt tokenized, or its conversation rendered by the chat
 * template, on the caller's thread) into the bounded wait queue, and
 * hearth_engine_cancel() flags a request, waiting or running, for the engine
 * thread to end at its next step. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "runtime/chat_tools.h"
#include "runtime/engine/engine_impl.h"

hearth_request_params hearth_request_default_params(void) {
    return (hearth_request_params){
        .max_tokens = -1, .sampling = hearth_sampler_default_params(), .parallel_tool_calls = true};
}

void hl_request_free(hl_request *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n_stop; i++) free(r->stop[i]);
    free(r->stop);
    free(r->prompt);
    hearth_sampler_free(r->smpl);
    hl_tool_parser_free(r->tools);
    hearth_detok_free(r->detok);
    free(r);
}

hl_request *hl_queue_pop(hearth_engine *e) {
    hl_request *r = e->head;
    if (!r) return NULL;
    e->head = r->next;
    if (!e->head) e->tail = NULL;
    r->next = NULL;
    e->n_waiting--;
    return r;
}

/* Tokenizes `text` (add_special, parse_special) into r->prompt. */
static hearth_status tokenize(const hearth_model *m, const char *text, hl_request *r) {
    const size_t len = strlen(text);
    size_t n_max = len + 8, n = 0; /* a token is at least one byte, plus BOS/EOS */
    r->prompt = hl_malloc(n_max * sizeof *r->prompt);
    if (!r->prompt) return HEARTH_ERR_OUT_OF_MEMORY;
    HL_TRY(hearth_tokenize(m, text, len, true, true, r->prompt, n_max, &n));
    r->n_prompt = (int32_t)n;
    return HEARTH_OK;
}

/* r->prompt from exactly one of the four prompt forms; a request with
 * tools also gets the tools' grammar into *sp and its parser. */
static hearth_status read_prompt(const hearth_engine *e, const hearth_request_params *p, hl_request *r,
                                 hl_tool_setup *tools, hearth_sampler_params *sp) {
    const int forms = (p->tokens != NULL) + (p->prompt != NULL) + (p->messages != NULL) + (p->messages_json != NULL);
    if (forms != 1)
        return hl_fail(HEARTH_ERR_INVALID_ARG,
                       "a request needs exactly one of tokens, prompt, messages or messages_json (got %d)", forms);
    if ((p->tools_json || p->tool_choice) && !p->messages_json)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "tools need the conversation as messages_json");
    const int32_t n_vocab = hearth_model_n_vocab(e->model);
    if (p->tokens) {
        if (p->n_tokens == 0 || p->n_tokens > INT32_MAX)
            return hl_fail(HEARTH_ERR_INVALID_ARG, "the request's prompt has no tokens");
        r->prompt = hl_malloc(p->n_tokens * sizeof *r->prompt);
        if (!r->prompt) return HEARTH_ERR_OUT_OF_MEMORY;
        for (size_t i = 0; i < p->n_tokens; i++) {
            if (p->tokens[i] < 0 || p->tokens[i] >= n_vocab)
                return hl_fail(HEARTH_ERR_INVALID_ARG, "prompt token %zu is %d, outside the vocabulary [0, %d)", i,
                               (int)p->tokens[i], (int)n_vocab);
            r->prompt[i] = p->tokens[i];
        }
        r->n_prompt = (int32_t)p->n_tokens;
        return HEARTH_OK;
    }
    if (p->prompt) return tokenize(e->model, p->prompt, r);
    if (p->messages_json && (p->tools_json || p->tool_choice)) {
        HL_TRY(hl_chat_tools(e->model, e->chat_template, p, tools));
        if (tools->grammar) {
            if (sp->grammar || sp->json_schema)
                return hl_fail(HEARTH_ERR_INVALID_ARG,
                               "a request with tools cannot also have a grammar or json_schema");
            sp->grammar = tools->grammar;
            sp->grammar_triggers = (const char *const *)tools->triggers;
            sp->n_grammar_triggers = tools->n_triggers;
        }
        if (tools->choice != HL_TOOL_CHOICE_NONE) {
            const uint64_t seed = (uint64_t)(uintptr_t)r ^ (uint64_t)(hl_now() * 1e9);
            HL_TRY(hl_tool_parser_init(tools->format, seed, &r->tools));
            HL_TRY(hearth_detok_init(e->model, true, &r->detok));
        }
        return tokenize(e->model, tools->prompt, r);
    }
    char *text;
    if (p->messages_json) {
        HL_TRY(hearth_chat_render_json(e->model, e->chat_template, p->messages_json, NULL, &text));
    } else {
        if (p->n_messages == 0) return hl_fail(HEARTH_ERR_INVALID_ARG, "the request's conversation has no messages");
        HL_TRY(hearth_chat_render(e->model, e->chat_template, p->messages, p->n_messages, &text));
    }
    hearth_status st = tokenize(e->model, text, r);
    hearth_chat_free(text);
    return st;
}

static hearth_status copy_stops(const hearth_request_params *p, hl_request *r) {
    if (p->n_stop && !p->stop) return hl_fail(HEARTH_ERR_INVALID_ARG, "n_stop is %zu but stop is NULL", p->n_stop);
    if (!p->n_stop) return HEARTH_OK;
    r->stop = hl_calloc(p->n_stop, sizeof *r->stop);
    if (!r->stop) return HEARTH_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < p->n_stop; i++) {
        if (!p->stop[i] || !p->stop[i][0]) return hl_fail(HEARTH_ERR_INVALID_ARG, "stop string %zu is empty", i);
        const size_t len = strlen(p->stop[i]);
        r->stop[i] = hl_malloc(len + 1);
        if (!r->stop[i]) return HEARTH_ERR_OUT_OF_MEMORY;
        memcpy(r->stop[i], p->stop[i], len + 1);
        r->n_stop = i + 1;
    }
    return HEARTH_OK;
}

static hearth_status make_request(const hearth_engine *e, const hearth_request_params *p, hl_request *r) {
    if (!p->on_piece) return hl_fail(HEARTH_ERR_INVALID_ARG, "the request has no on_piece callback");
    if (p->top_logprobs < 0 || p->top_logprobs > HEARTH_MAX_TOP_LOGPROBS)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "top_logprobs must be in [0, %d] (got %d)", HEARTH_MAX_TOP_LOGPROBS,
                       (int)p->top_logprobs);
    if (p->max_tokens < -1)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "max_tokens must be -1 or more (got %d)", (int)p->max_tokens);
    hearth_sampler_params sp = p->sampling;
    HL_TRY(copy_stops(p, r));
    hl_tool_setup tools = {0};
    hearth_status st = read_prompt(e, p, r, &tools, &sp);
    if (st == HEARTH_OK && r->n_prompt == 0) st = hl_fail(HEARTH_ERR_INVALID_ARG, "the request's prompt is empty");
    if (st == HEARTH_OK && (uint32_t)r->n_prompt >= e->n_ctx_seq)
        st = hl_fail(HEARTH_ERR_CONTEXT_FULL,
                     "the prompt is %d tokens and a slot holds %u: shorten the prompt or raise n_ctx", (int)r->n_prompt,
                     e->n_ctx_seq);
    if (st == HEARTH_OK) st = hearth_sampler_init(e->model, &sp, &r->smpl);
    hl_tool_setup_free(&tools); /* the sampler holds its own grammar */
    HL_TRY(st);
    r->max_tokens = p->max_tokens;
    r->logprobs = p->logprobs || p->top_logprobs > 0;
    r->top_logprobs = p->top_logprobs;
    r->ignore_eos = p->ignore_eos;
    r->on_piece = p->on_piece;
    r->user = p->user;
    return HEARTH_OK;
}

hearth_status hearth_engine_submit(hearth_engine *e, const hearth_request_params *p, uint64_t *id) {
    if (!e || !p) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_engine_submit: NULL engine or request");
    if (e->embeddings)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "this engine computes embeddings (params.ctx.embeddings) and does not "
                                               "generate text: use hearth_engine_embed()");
    hl_request *r = hl_calloc(1, sizeof *r);
    if (!r) return HEARTH_ERR_OUT_OF_MEMORY;
    hearth_status st = make_request(e, p, r);
    if (st != HEARTH_OK) {
        hl_request_free(r);
        return st;
    }
    r->t_submit = hl_now();
    pthread_mutex_lock(&e->mu);
    /* up to n_idle requests take a slot at the next step; n_queue_max more may wait */
    if (e->quit || e->n_waiting >= e->n_queue_max + e->n_idle) {
        const int32_t n_waiting = e->n_waiting;
        pthread_mutex_unlock(&e->mu);
        hl_request_free(r);
        return hl_fail(HEARTH_ERR_BUSY, "the engine is busy: %d requests are waiting for %d slots; retry later",
                       (int)n_waiting, (int)e->n_slots);
    }
    r->id = ++e->next_id;
    if (e->tail) e->tail->next = r;
    else e->head = r;
    e->tail = r;
    e->n_waiting++;
    if (id) *id = r->id;
    pthread_cond_signal(&e->wake);
    pthread_mutex_unlock(&e->mu);
    return HEARTH_OK;
}

hearth_status hearth_engine_render(const hearth_engine *e, const hearth_request_params *p, char **text) {
    if (!e || !p || !text) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_engine_render: NULL argument");
    *text = NULL;
    if (!p->messages_json && !p->messages)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_engine_render: the request has no conversation");
    if ((p->tools_json || p->tool_choice) && !p->messages_json)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "tools need the conversation as messages_json");
    if (p->messages_json && (p->tools_json || p->tool_choice)) {
        hl_tool_setup tools = {0};
        hearth_status st = hl_chat_tools(e->model, e->chat_template, p, &tools);
        if (st == HEARTH_OK) {
            *text = tools.prompt; /* taken: hearth_chat_free() frees it */
            tools.prompt = NULL;
        }
        hl_tool_setup_free(&tools);
        return st;
    }
    if (p->messages_json) return hearth_chat_render_json(e->model, e->chat_template, p->messages_json, NULL, text);
    if (p->n_messages == 0) return hl_fail(HEARTH_ERR_INVALID_ARG, "the request's conversation has no messages");
    return hearth_chat_render(e->model, e->chat_template, p->messages, p->n_messages, text);
}

hearth_status hearth_engine_count_tokens(const hearth_engine *e, const hearth_request_params *p, int32_t *n_tokens) {
    if (!e || !p || !n_tokens) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_engine_count_tokens: NULL argument");
    hl_request *r = hl_calloc(1, sizeof *r);
    if (!r) return HEARTH_ERR_OUT_OF_MEMORY;
    hearth_sampler_params sp = p->sampling;
    hl_tool_setup tools = {0};
    const hearth_status st = read_prompt(e, p, r, &tools, &sp);
    hl_tool_setup_free(&tools);
    if (st == HEARTH_OK) *n_tokens = r->n_prompt;
    hl_request_free(r);
    return st;
}

/* Under mu: request `id`, waiting or in a slot, or NULL. */
static hl_request *find(hearth_engine *e, uint64_t id) {
    for (hl_request *r = e->head; r; r = r->next)
        if (r->id == id) return r;
    for (int32_t i = 0; i < e->n_slots; i++)
        if (e->slots[i].req && e->slots[i].req->id == id) return e->slots[i].req;
    return NULL;
}

const char *hearth_finish_reason_str(hearth_finish_reason f) {
    switch (f) {
    case HEARTH_FINISH_STOP: return "stop";
    case HEARTH_FINISH_LENGTH: return "length";
    case HEARTH_FINISH_CANCELLED: return "cancelled";
    case HEARTH_FINISH_ERROR: return "error";
    case HEARTH_FINISH_TOOL_CALLS: return "tool_calls";
    case HEARTH_FINISH_GRAMMAR: return "grammar";
    default: return NULL;
    }
}

void hearth_engine_cancel(hearth_engine *e, uint64_t id) {
    if (!e) return;
    pthread_mutex_lock(&e->mu);
    hl_request *r = find(e, id);
    if (r) r->cancel = true;
    pthread_cond_signal(&e->wake);
    pthread_mutex_unlock(&e->mu);
}

void hearth_engine_pause(hearth_engine *e, uint64_t id, bool paused) {
    if (!e) return;
    pthread_mutex_lock(&e->mu);
    hl_request *r = find(e, id);
    if (r) r->paused = paused;
    pthread_cond_signal(&e->wake);
    pthread_mutex_unlock(&e->mu);
}
