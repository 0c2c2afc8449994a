/* A sampler's constraints (sampler_grammar.h): the logit bias as a dense
 * [n_vocab] row, and the grammar checked the way llama.cpp's sampler does
 * it (common/sampling.cpp): the drawn token is tried first, and only when
 * the grammar rejects it is the whole vocabulary masked (one walk of the
 * model's token trie) for a second draw. A token's bytes are its text with
 * special tokens written out (Qwen's <tool_call>, Mistral's [TOOL_CALLS]),
 * the text the tool-call parser reads; end-of-generation tokens have no
 * bytes and are allowed exactly where the text is a whole sentence. */
#include "runtime/sampler_grammar.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "grammar/json_schema.h"
#include "model/model.h"

/* The longest token text the grammar is shown; longer ones (none in real
 * vocabularies) are never allowed. */
#define HL_MAX_PIECE 1024

/* token's bytes into buf; false: an end-of-generation token or no text */
static bool piece(const hearth_model *m, int32_t token, char *buf, size_t *len) {
    if (hl_vocab_is_eog(m->vocab, token)) return false;
    return hl_vocab_token_to_piece(m->vocab, token, true, buf, HL_MAX_PIECE, len) == HEARTH_OK && *len > 0;
}

/* The model's token trie, built by the first caller and shared. */
static hearth_status model_trie(const hearth_model *cm, const hl_token_trie **out) {
    hearth_model *m = (hearth_model *)cm; /* the trie is a cache: the model stays logically const */
    hl_token_trie *t = atomic_load(&m->trie);
    if (t) {
        *out = t;
        return HEARTH_OK;
    }
    const int32_t n = hl_vocab_n_tokens(m->vocab);
    size_t *lens = hl_calloc((size_t)n, sizeof *lens), *offs = hl_calloc((size_t)n, sizeof *offs);
    const char **pieces = hl_calloc((size_t)n, sizeof *pieces);
    size_t cap = (size_t)n * 8, used = 0;
    char *text = hl_malloc(cap);
    hearth_status st = lens && offs && pieces && text ? HEARTH_OK : HEARTH_ERR_OUT_OF_MEMORY;
    for (int32_t i = 0; st == HEARTH_OK && i < n; i++) {
        char buf[HL_MAX_PIECE];
        size_t len = 0;
        if (!piece(m, i, buf, &len)) continue;
        if (used + len > cap) {
            char *p = realloc(text, cap = 2 * (used + len));
            if (!p) st = hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory building the vocabulary's token trie");
            else text = p;
        }
        if (st != HEARTH_OK) break;
        memcpy(text + used, buf, len);
        offs[i] = used;
        lens[i] = len;
        used += len;
    }
    for (int32_t i = 0; st == HEARTH_OK && i < n; i++) pieces[i] = text + offs[i];
    if (st == HEARTH_OK) st = hl_token_trie_build(pieces, lens, n, &t);
    free(lens);
    free(offs);
    free(pieces);
    free(text);
    if (st != HEARTH_OK) return st;
    hl_token_trie *expected = NULL;
    if (!atomic_compare_exchange_strong(&m->trie, &expected, t)) { /* another sampler was first */
        hl_token_trie_free(t);
        t = expected;
    }
    *out = t;
    return HEARTH_OK;
}

static hearth_status read_bias(hl_constraint *c, const hearth_sampler_params *p, int32_t n_vocab) {
    if (!p->n_logit_bias) return HEARTH_OK;
    if (!p->logit_bias)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "n_logit_bias is %zu but logit_bias is NULL", p->n_logit_bias);
    c->bias = hl_calloc((size_t)n_vocab, sizeof *c->bias);
    if (!c->bias) return HEARTH_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < p->n_logit_bias; i++) {
        const hearth_logit_bias b = p->logit_bias[i];
        if (b.token < 0 || b.token >= n_vocab)
            return hl_fail(HEARTH_ERR_INVALID_ARG, "logit_bias names token %d, outside the vocabulary [0, %d)",
                           (int)b.token, (int)n_vocab);
        if (!isfinite(b.bias))
            return hl_fail(HEARTH_ERR_INVALID_ARG, "logit_bias of token %d is not a finite number", (int)b.token);
        /* OpenAI: -100 "should result in a ban"; make it one */
        c->bias[b.token] = b.bias <= -100.0f ? -INFINITY : b.bias;
    }
    return HEARTH_OK;
}

static hearth_status read_triggers(hl_constraint *c, const hearth_sampler_params *p) {
    c->active = p->n_grammar_triggers == 0;
    if (!p->n_grammar_triggers) return HEARTH_OK;
    if (!p->grammar_triggers)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "n_grammar_triggers is %zu but grammar_triggers is NULL",
                       p->n_grammar_triggers);
    c->triggers = hl_calloc(p->n_grammar_triggers, sizeof *c->triggers);
    if (!c->triggers) return HEARTH_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < p->n_grammar_triggers; i++) {
        const char *t = p->grammar_triggers[i];
        if (!t || !t[0]) return hl_fail(HEARTH_ERR_INVALID_ARG, "grammar trigger %zu is empty", i);
        const size_t len = strlen(t);
        if (!hl_grammar_accept(c->state, t, len)) /* the sentence begins with the trigger */
            return hl_fail(HEARTH_ERR_INVALID_ARG, "grammar trigger '%s' cannot begin the grammar's text", t);
        hl_grammar_state_free(c->state);
        c->state = NULL;
        HL_TRY(hl_grammar_state_init(c->grammar, &c->state));
        if (!(c->triggers[i] = hl_malloc(len + 1))) return HEARTH_ERR_OUT_OF_MEMORY;
        memcpy(c->triggers[i], t, len + 1);
        c->n_triggers = i + 1;
        if (len > c->max_trigger) c->max_trigger = len;
    }
    c->cap_window = c->max_trigger + HL_MAX_PIECE;
    c->window = hl_malloc(c->cap_window);
    return c->window ? HEARTH_OK : HEARTH_ERR_OUT_OF_MEMORY;
}

static hearth_status read_grammar(hl_constraint *c, const hearth_sampler_params *p, int32_t n_vocab) {
    if (p->grammar && p->json_schema)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "give a grammar or a json_schema, not both");
    if (!p->grammar && !p->json_schema) {
        if (p->n_grammar_triggers) return hl_fail(HEARTH_ERR_INVALID_ARG, "grammar triggers need a grammar");
        return HEARTH_OK;
    }
    char *text = NULL;
    if (p->json_schema) HL_TRY(hl_json_schema_to_gbnf(p->json_schema, strlen(p->json_schema), &text));
    const char *gbnf = text ? text : p->grammar;
    hearth_status st = hl_grammar_parse(gbnf, strlen(gbnf), &c->grammar);
    free(text);
    HL_TRY(st);
    HL_TRY(hl_grammar_state_init(c->grammar, &c->state));
    HL_TRY(hl_grammar_state_init(c->grammar, &c->scratch));
    HL_TRY(model_trie(c->model, &c->trie));
    if (!(c->allowed = hl_malloc((size_t)n_vocab))) return HEARTH_ERR_OUT_OF_MEMORY;
    return read_triggers(c, p);
}

hearth_status hl_constraint_init(hl_constraint *c, const hearth_model *model, const hearth_sampler_params *p) {
    *c = (hl_constraint){.model = model, .active = true, .tried = -1};
    const int32_t n_vocab = hearth_model_n_vocab(model);
    hearth_status st = read_bias(c, p, n_vocab);
    if (st == HEARTH_OK) st = read_grammar(c, p, n_vocab);
    if (st != HEARTH_OK) hl_constraint_free(c);
    return st;
}

void hl_constraint_free(hl_constraint *c) {
    free(c->bias);
    hl_grammar_state_free(c->state);
    hl_grammar_state_free(c->scratch);
    hl_grammar_free(c->grammar);
    free(c->allowed);
    for (size_t i = 0; i < c->n_triggers; i++) free(c->triggers[i]);
    free(c->triggers);
    free(c->window);
    *c = (hl_constraint){0};
}

void hl_constraint_reset(hl_constraint *c) {
    if (!c->grammar) return;
    hl_grammar_state *fresh;
    if (hl_grammar_state_init(c->grammar, &fresh) == HEARTH_OK) {
        hl_grammar_state_free(c->state);
        c->state = fresh;
    }
    c->active = c->n_triggers == 0;
    c->n_window = 0;
    c->tried = -1;
}

bool hl_constraint_allows(hl_constraint *c, int32_t token) {
    char buf[HL_MAX_PIECE];
    size_t len;
    c->tried = -1;
    if (!piece(c->model, token, buf, &len))
        return hl_vocab_is_eog(c->model->vocab, token) && hl_grammar_is_complete(c->state);
    if (hl_grammar_state_copy(c->scratch, c->state) != HEARTH_OK || !hl_grammar_accept(c->scratch, buf, len))
        return false;
    c->tried = token;
    return true;
}

int32_t hl_constraint_mask(hl_constraint *c) {
    if (hl_grammar_allowed_tokens(c->state, c->trie, c->allowed) != HEARTH_OK) return -1;
    const int32_t n = hearth_model_n_vocab(c->model);
    const bool complete = hl_grammar_is_complete(c->state);
    int32_t count = 0;
    for (int32_t i = 0; i < n; i++) {
        if (hl_vocab_is_eog(c->model->vocab, i)) c->allowed[i] = complete;
        if (c->bias && c->bias[i] == -INFINITY) c->allowed[i] = 0; /* banned by logit_bias */
        count += c->allowed[i];
    }
    return count;
}

/* Lazy grammars: appends the token's text to the window and, at the first
 * trigger in it, turns the grammar on from the trigger's first byte. */
static void watch_triggers(hl_constraint *c, const char *text, size_t len) {
    if (c->n_window + len > c->cap_window) { /* keep the bytes a trigger could still start in */
        const size_t keep = c->max_trigger > 1 ? c->max_trigger - 1 : 0,
                     drop = c->n_window > keep ? c->n_window - keep : 0;
        memmove(c->window, c->window + drop, c->n_window - drop);
        c->n_window -= drop;
    }
    memcpy(c->window + c->n_window, text, len);
    c->n_window += len;
    const char *first = NULL;
    size_t first_len = 0;
    for (size_t i = 0; i < c->n_triggers; i++) {
        const size_t lt = strlen(c->triggers[i]);
        for (const char *at = c->window; at + lt <= c->window + c->n_window && (!first || at < first); at++)
            if (!memcmp(at, c->triggers[i], lt)) {
                first = at;
                first_len = lt;
                break;
            }
    }
    if (!first) return;
    /* the sentence starts at the trigger (init checked that it can); what
     * the token wrote after it goes in too, unless the grammar rejects it */
    c->active = true;
    hl_grammar_accept(c->state, first, first_len);
    hl_grammar_accept(c->state, first + first_len, c->n_window - (size_t)(first - c->window) - first_len);
}

void hl_constraint_advance(hl_constraint *c, int32_t token) {
    if (!c->grammar) return;
    if (c->active && token == c->tried) { /* the trial state is the state after it */
        hl_grammar_state *t = c->state;
        c->state = c->scratch;
        c->scratch = t;
        c->tried = -1;
        return;
    }
    char buf[HL_MAX_PIECE];
    size_t len;
    if (!piece(c->model, token, buf, &len)) return;
    if (!c->active) watch_triggers(c, buf, len);
    else hl_grammar_accept(c->state, buf, len);
}
