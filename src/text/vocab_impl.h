/* The inside of hl_vocab, shared by the files of src/text/ that build and use
 * it: vocab.c (loading, getters), special.c (special tokens), bpe.c (merges),
 * tokenize.c, detok.c (pieces). Nothing outside src/text/ includes this. */
#ifndef HEARTH_TEXT_VOCAB_IMPL_H
#define HEARTH_TEXT_VOCAB_IMPL_H

#include <string.h>

#include "text/pretokenize.h"
#include "text/strtab.h"
#include "text/vocab.h"

/* Token attributes, llama.cpp's llama_token_attr bits (include/llama.h). */
enum {
    HL_ATTR_UNKNOWN = 1 << 0,
    HL_ATTR_UNUSED = 1 << 1,
    HL_ATTR_NORMAL = 1 << 2,
    HL_ATTR_CONTROL = 1 << 3,
    HL_ATTR_USER_DEFINED = 1 << 4,
    HL_ATTR_BYTE = 1 << 5,
};

/* A BPE merge: the strings with ids `left` and `right` (in bpe_strs) join into
 * string `result`; lower ranks merge first. */
typedef struct hl_merge {
    uint64_t key; /* (uint64_t)left << 32 | right */
    int32_t rank; /* index in tokenizer.ggml.merges; -1 marks an empty slot */
    int32_t result;
} hl_merge;

typedef struct hl_merges {
    hl_merge *slots; /* open addressing, linear probing */
    size_t cap;      /* power of two, at least twice the merges */
} hl_merges;

struct hl_vocab {
    int32_t n_tokens;
    hl_strtab texts; /* token texts as stored in the file (empty ones renamed); id = token id */
    uint8_t *attr;   /* [n_tokens] HL_ATTR_* */
    bool *eog;       /* [n_tokens] ends generation */

    /* token_to_piece(special = true) of each token, back to back (llama.cpp's
     * cache_token_to_piece). */
    char *pieces;
    size_t *piece_off; /* [n_tokens + 1] */
    size_t max_piece;

    /* Byte-level BPE works on raw bytes: the token texts, whose characters
     * stand for bytes (GPT-2 bytes_to_unicode), are decoded once here. */
    hl_strtab bpe_strs;    /* decoded tokens, then the strings of merges that are not tokens */
    int32_t *bpe_token;    /* [bpe_strs.n] the token a string is, or -1 */
    int32_t byte_str[256]; /* the bpe_strs id of each single byte, or -1 */
    hl_merges merges;
    bool ignore_merges; /* a word that is a token is emitted whole (llama-bpe) */

    /* CONTROL, USER_DEFINED and UNKNOWN tokens, longest text first: the order
     * in which tokenize.c looks for them in the text. */
    int32_t *special;
    int32_t n_special;

    int32_t bos, eos, eot, eom, unk, pad;
    int32_t fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep; /* fill-in-the-middle */
    bool add_bos, add_eos;
    hl_pretok *pre;
};

/* The length llama.cpp sees of a GGUF string: it reads them with
 * gguf_get_arr_str() into std::string, so a string ends at its first NUL. */
static inline size_t hl_gguf_c_len(gguf_str s) {
    const char *nul = s.len ? memchr(s.data, '\0', s.len) : NULL;
    return nul ? (size_t)(nul - s.data) : s.len;
}

/* Token ids written to a caller's array; counts past its end (for
 * BUFFER_TOO_SMALL). */
typedef struct hl_tok_out {
    int32_t *ids;
    size_t cap, n;
} hl_tok_out;

static inline void hl_tok_out_push(hl_tok_out *o, int32_t id) {
    if (o->n < o->cap) o->ids[o->n] = id;
    o->n++;
}

/* special.c: find the special tokens llama.cpp recognises by text (eot, eom,
 * FIM, end-of-generation), mark them CONTROL, fill v->eog; then list the
 * special tokens in v->special. */
hearth_status hl_special_init(hl_vocab *v);

/* bpe.c: decode the tokens, build v->bpe_strs, bpe_token, byte_str, merges. */
hearth_status hl_bpe_init(hl_vocab *v, const gguf_array *merges);
void hl_bpe_free(hl_vocab *v);

/* Reusable working memory for hl_bpe_word(). Zero-initialise; free with
 * hl_bpe_scratch_free(). */
typedef struct hl_bpe_scratch {
    struct bpe_symbol *symbols;
    struct bpe_pair *heap;
    size_t cap; /* symbols; the heap holds 3 * cap */
} hl_bpe_scratch;

/* Tokenizes one pre-tokenized word (raw bytes) into o. OUT_OF_MEMORY. */
hearth_status hl_bpe_word(const hl_vocab *v, const uint8_t *word, size_t len, hl_bpe_scratch *s, hl_tok_out *o);
void hl_bpe_scratch_free(hl_bpe_scratch *s);

/* detok.c: compute v->pieces. */
hearth_status hl_pieces_init(hl_vocab *v);

#endif
