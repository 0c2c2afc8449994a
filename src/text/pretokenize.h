/* Pre-tokenizers: split text into the words that byte-level BPE then merges
 * within, using the regexes llama.cpp uses for each `tokenizer.ggml.pre`
 * (src/llama-vocab.cpp, llm_tokenizer_bpe), run by PCRE2. See pretokenize.c
 * for how llama.cpp's own regex engine is reproduced. */
#ifndef HEARTH_TEXT_PRETOKENIZE_H
#define HEARTH_TEXT_PRETOKENIZE_H

#include <stdbool.h>
#include <stddef.h>

#include "gguf/gguf.h"

typedef struct hl_pretok hl_pretok;

/* Compiles the pre-tokenizer named `name` (the value of tokenizer.ggml.pre;
 * NULL or empty when the key is absent, which llama.cpp treats as "default").
 * UNSUPPORTED for names hearth does not know, OUT_OF_MEMORY. */
hearth_status hl_pretok_init(const gguf_str *name, hl_pretok **out);
void hl_pretok_free(hl_pretok *p);

/* Per-type settings llama.cpp ties to the pre-tokenizer name. */
bool hl_pretok_ignore_merges(const hl_pretok *p); /* whole words that are tokens skip BPE */
bool hl_pretok_add_bos(const hl_pretok *p);       /* default for tokenizer.ggml.add_bos_token */

/* The words of one text fragment. `text` holds the fragment as llama.cpp
 * tokenizes it: re-encoded from the code points hl_utf8_decode() reads, so
 * bytes that are not UTF-8 have become U+FFFD. Word i is
 * text[bounds[i], bounds[i+1]) for i < n_bounds - 1. */
typedef struct hl_words {
    char *text;
    char *subject; /* what PCRE2 matches (see pretokenize.c); same length as text */
    size_t len, cap;
    size_t *bounds, *next_bounds;
    size_t n_bounds, bounds_cap;
} hl_words;

/* Splits raw[0, len) into words, reusing w's buffers (zero-initialise w before
 * the first call; hl_words_free() releases it). OUT_OF_MEMORY, or UNSUPPORTED
 * when PCRE2 gives up on the input (its match limits). */
hearth_status hl_pretok_split(const hl_pretok *p, const char *raw, size_t len, hl_words *w);
void hl_words_free(hl_words *w);

#endif
