/* Grammar-constrained generation: GBNF grammars (llama.cpp's notation,
 * grammars/README.md there) compiled once and matched byte by byte, and a
 * token trie over a vocabulary that finds every token a grammar state can
 * take next in one walk.
 *
 * The notation: `name ::= alternatives` rules (the start rule is `root`),
 * alternatives separated by `|`, sequences of elements: "literals" with
 * escapes (\n \r \t \\ \" \xHH \uHHHH \UHHHHHHHH), character classes
 * [a-z0-9_] with ranges, escapes and negation [^...], `.` (any character),
 * rule references, ( groups ), and the repetitions * + ? {m} {m,} {m,n};
 * `#` comments to the end of the line; newlines inside ( ) and after
 * `::=`/`|` continue a rule.
 *
 * Characters are Unicode code points and the input is UTF-8 bytes: a token
 * may end inside a character or a literal, so matching is done on bytes
 * (classes are compiled to their UTF-8 byte sequences). */
#ifndef HEARTH_GRAMMAR_GRAMMAR_H
#define HEARTH_GRAMMAR_GRAMMAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hearth.h"

/* A compiled grammar: immutable, shared by any number of states and
 * threads. */
typedef struct hl_grammar hl_grammar;
/* A position in a grammar's language: the bytes accepted so far. Owned by
 * one thread at a time. */
typedef struct hl_grammar_state hl_grammar_state;
/* Every token of a vocabulary as the bytes it stands for, in a trie. */
typedef struct hl_token_trie hl_token_trie;

/* Parses and checks GBNF text (len bytes, need not be NUL-terminated) whose
 * start rule is `root`. Errors: INVALID_ARG with "grammar line L column C:
 * WHAT" (a syntax error, an undefined rule, no `root` rule, left recursion,
 * a repetition count over the limit, a range whose ends are reversed),
 * OUT_OF_MEMORY. */
hearth_status hl_grammar_parse(const char *text, size_t len, hl_grammar **out);
void hl_grammar_free(hl_grammar *g);

/* A state at the start of `g`'s language. Errors: OUT_OF_MEMORY. */
hearth_status hl_grammar_state_init(const hl_grammar *g, hl_grammar_state **out);
void hl_grammar_state_free(hl_grammar_state *s);
/* Makes `dst` (a state of the same grammar) equal to `src`. Errors:
 * OUT_OF_MEMORY (dst unchanged). */
hearth_status hl_grammar_state_copy(hl_grammar_state *dst, const hl_grammar_state *src);

/* Advances the state over n bytes. false: the bytes cannot follow what was
 * accepted (the state is left unchanged), or memory ran out (the state is
 * unchanged too; hearth_last_error() says so). */
bool hl_grammar_accept(hl_grammar_state *s, const char *bytes, size_t n);
/* Whether the bytes accepted so far are a whole sentence of the language. */
bool hl_grammar_is_complete(const hl_grammar_state *s);
/* Whether at least one more byte can be accepted. */
bool hl_grammar_can_continue(const hl_grammar_state *s);

/* Whether the whole of s[0, n) is a sentence of `g` (tests, tools). */
bool hl_grammar_matches(const hl_grammar *g, const char *s, size_t n);

/* Builds the trie of n_tokens tokens: token i's bytes are pieces[i][0,
 * lens[i]) (lens[i] 0: a token with no bytes, never allowed by a grammar).
 * Errors: OUT_OF_MEMORY. */
hearth_status hl_token_trie_build(const char *const *pieces, const size_t *lens, int32_t n_tokens, hl_token_trie **out);
void hl_token_trie_free(hl_token_trie *t);

/* Sets allowed[i] = 1 for every token whose bytes the state can accept
 * next (all of them, from the current state) and 0 for every other token;
 * allowed is [n_tokens] of the trie. Walks the trie depth first, pruning
 * at the first byte the grammar rejects. Errors: OUT_OF_MEMORY. */
hearth_status hl_grammar_allowed_tokens(const hl_grammar_state *s, const hl_token_trie *t, uint8_t *allowed);

#endif
