/* The vocabulary of a model and its tokenizer — byte-level BPE (GPT-2 style,
 * tokenizer.ggml.model = "gpt2"), SentencePiece ("llama") or WordPiece
 * ("bert") — behaving as llama.cpp's llama_vocab does: same ids for the same
 * text, same special tokens, same pieces (WordPiece: the ids of Hugging Face
 * tokenizers, which llama.cpp's approximates; see wordpiece.c). The public
 * hearth_tokenize / hearth_token_to_piece / hearth_detok_* / hearth_token_*
 * functions in hearth.h are thin wrappers over this API and document the
 * semantics; the notes here add what is internal.
 *
 * A loaded hl_vocab is immutable: every function taking a const hl_vocab * is
 * thread-safe. An hl_detok is used by one thread at a time. */
#ifndef HEARTH_TEXT_VOCAB_H
#define HEARTH_TEXT_VOCAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "hearth.h"

typedef struct hl_vocab hl_vocab;

/* Reads the tokenizer.* keys of `f` and builds the tokenizer. The vocabulary
 * does not keep pointers into `f`.
 * Errors: UNSUPPORTED (tokenizer model other than "gpt2", "llama", "bert"; unknown
 * tokenizer.ggml.pre for "gpt2"), FORMAT (missing or mistyped keys, token_type
 * count not equal to the token count, fewer scores than tokens, duplicate
 * tokens, a special token id out of range — the message names the key),
 * OUT_OF_MEMORY. On error *out is NULL. */
hearth_status hl_vocab_load(const gguf_file *f, hl_vocab **out);
void hl_vocab_free(hl_vocab *v);

int32_t hl_vocab_n_tokens(const hl_vocab *v);
/* Special token ids, -1 if none. Without keys a vocabulary gets llama.cpp's
 * defaults when in range: "gpt2" bos = eos = 11, "llama" bos 1, eos 2, unk 0,
 * "bert" bos ([CLS]) 101, unk 100, pad 0 (and [SEP] 102, which add_special
 * appends in place of EOS). */
int32_t hl_vocab_bos(const hl_vocab *v);
int32_t hl_vocab_eos(const hl_vocab *v);
int32_t hl_vocab_eot(const hl_vocab *v);
int32_t hl_vocab_pad(const hl_vocab *v);
int32_t hl_vocab_unk(const hl_vocab *v);
/* Whether `id` ends generation: eos, eot, eom and the end-of-turn tokens
 * llama.cpp recognises by their text (<|im_end|>, <|endoftext|>, <|eot_id|>,
 * ...). False for ids out of range. */
bool hl_vocab_is_eog(const hl_vocab *v, int32_t id);

/* As hearth_tokenize(). `tokens` may be NULL when n_max is 0 (to ask for the
 * count) and `text` when len is 0. Errors: INVALID_ARG, BUFFER_TOO_SMALL
 * (*n_tokens = the count needed, the first n_max ids written), OUT_OF_MEMORY,
 * UNSUPPORTED (PCRE2 gave up on the text: its match limits; or a SentencePiece
 * vocabulary lacks the byte token a character of the text falls back to). */
hearth_status hl_vocab_tokenize(const hl_vocab *v, const char *text, size_t len, bool add_special, bool parse_special,
                                int32_t *tokens, size_t n_max, size_t *n_tokens);

/* As hearth_tokenize_rerank(): a reranker's query-document pair. */
hearth_status hl_vocab_tokenize_pair(const hl_vocab *v, const char *query, size_t query_len, const char *doc,
                                     size_t doc_len, int32_t *tokens, size_t n_max, size_t *n_tokens);

/* As hearth_tokenize_infill(): a fill-in-the-middle prompt (infill.c). */
hearth_status hl_vocab_tokenize_infill(const hl_vocab *v, const hearth_infill *in, int32_t *tokens, size_t n_max,
                                       size_t *n_tokens);

/* As hearth_token_to_piece(). `buf` may be NULL when size is 0. */
hearth_status hl_vocab_token_to_piece(const hl_vocab *v, int32_t id, bool special, char *buf, size_t size, size_t *len);

/* Streaming detokenizer, as hearth_detok_*(). */
typedef struct hl_detok hl_detok;
hearth_status hl_detok_init(const hl_vocab *v, bool special, hl_detok **out);
void hl_detok_free(hl_detok *d);
hearth_status hl_detok_push(hl_detok *d, int32_t id, char *buf, size_t size, size_t *len);
hearth_status hl_detok_flush(hl_detok *d, char *buf, size_t size, size_t *len);

#endif
