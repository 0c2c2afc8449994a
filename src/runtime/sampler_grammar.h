/* The constraints a sampler puts on the vocabulary before it draws: a logit
 * bias (OpenAI's logit_bias) and a grammar (GBNF or a JSON Schema's
 * grammar), possibly lazy (off until a trigger string appears in the
 * generated text). sampler.c calls these around its draw; they are apart so
 * that the sampling arithmetic reads on its own. */
#ifndef HEARTH_RUNTIME_SAMPLER_GRAMMAR_H
#define HEARTH_RUNTIME_SAMPLER_GRAMMAR_H

#include <stdbool.h>
#include <stdint.h>

#include "grammar/grammar.h"
#include "hearth.h"

typedef struct hl_constraint {
    const hearth_model *model;
    float *bias;               /* [n_vocab] or NULL: no logit_bias */
    hl_grammar *grammar;       /* NULL: none */
    hl_grammar_state *state;   /* where the text so far leaves the grammar */
    hl_grammar_state *scratch; /* a trial state for the sampled token */
    int32_t tried;             /* the token `scratch` holds the state after; -1: none */
    const hl_token_trie *trie; /* the model's, for the mask */
    uint8_t *allowed;          /* [n_vocab] the mask of the last rejection */
    /* lazy grammars: off until one of the triggers shows in `window`, the
     * last bytes of the generated text */
    char **triggers;
    size_t n_triggers, max_trigger;
    bool active;
    char *window; /* [cap_window] */
    size_t n_window, cap_window;
} hl_constraint;

/* Reads logit_bias, grammar, json_schema and the triggers of `p`. Errors:
 * INVALID_ARG (a bias token outside the vocabulary or a bias that is not
 * finite; both grammar and json_schema; a grammar or schema that does not
 * compile; an empty trigger, or one the grammar cannot begin with),
 * OUT_OF_MEMORY. */
hearth_status hl_constraint_init(hl_constraint *c, const hearth_model *model, const hearth_sampler_params *p);
void hl_constraint_free(hl_constraint *c);
/* Back to the start: the grammar at its first byte, a lazy one off again. */
void hl_constraint_reset(hl_constraint *c);

/* Whether the grammar has a say over the next token. */
static inline bool hl_constraint_grammar_on(const hl_constraint *c) { return c->grammar && c->active; }

/* Whether `token` may follow (with the grammar on): an end-of-generation
 * token only where the text is a whole sentence, any other token when the
 * grammar accepts its bytes (the state after them is kept for
 * hl_constraint_advance). */
bool hl_constraint_allows(hl_constraint *c, int32_t token);
/* Fills c->allowed with every token that may follow; returns how many, -1
 * when memory ran out. */
int32_t hl_constraint_mask(hl_constraint *c);
/* Moves past the chosen token: the grammar over its bytes, or a lazy
 * grammar's window (turning the grammar on at a trigger). */
void hl_constraint_advance(hl_constraint *c, int32_t token);

#endif
