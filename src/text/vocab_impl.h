/* The inside of hl_vocab, shared by the files of src/text/ that build and use
 * it: vocab.c (loading, getters), special.c (special tokens), bpe.c (merges),
 * spm.c (SentencePiece), wordpiece.c (WordPiece), tokenize.c, detok.c
 * (pieces). Nothing outside src/text/ includes this. */
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

/* A byte trie of the special tokens' texts. Node 0 is the root; an edge is
 * found through `root` (from node 0) or the `edges` hash table (deeper). */
typedef struct hl_trie_edge {
    uint64_t key;  /* (uint64_t)parent << 8 | byte */
    int32_t child; /* -1 marks an empty slot */
} hl_trie_edge;

typedef struct hl_special_trie {
    int32_t *rank; /* [n_nodes] index in v->special of the token spelled up to the node, or -1 */
    int32_t n_nodes;
    int32_t root[256]; /* child of the root per byte, or -1 */
    hl_trie_edge *edges;
    size_t cap; /* power of two, at least twice the nodes */
} hl_special_trie;

/* The tokenizer algorithm, from tokenizer.ggml.model (llama.cpp's
 * llama_vocab_type). */
typedef enum hl_vocab_type {
    HL_VOCAB_BPE, /* "gpt2": byte-level BPE over pre-tokenized words (bpe.c) */
    HL_VOCAB_SPM, /* "llama": SentencePiece BPE by token scores, byte fallback (spm.c) */
    HL_VOCAB_WPM, /* "bert": BERT's basic tokenizer, then WordPiece longest match (wordpiece.c) */
} hl_vocab_type;

struct hl_vocab {
    hl_vocab_type type;
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

    /* SentencePiece: a merge's priority is its token's score (higher first);
     * a symbol that is no token falls back to the tokens of its bytes. */
    float *scores;           /* [n_tokens] tokenizer.ggml.scores, 0 without the key */
    int32_t byte_token[256]; /* the token "<0xXX>" (else the byte's own text) of each byte, or -1 */
    bool add_space_prefix;   /* a space before text that starts the input or follows a special token */

    /* WordPiece: the longest token text in bytes (bounds the lookups). */
    size_t max_token_len;

    /* CONTROL, USER_DEFINED and UNKNOWN tokens, longest text first: the order
     * in which tokenize.c looks for them in the text. */
    int32_t *special;
    int32_t n_special;
    hl_special_trie trie; /* their texts, to find which occur in a text */

    int32_t bos, eos, eot, eom, unk, pad;
    int32_t sep; /* WordPiece's [SEP] (tokenizer.ggml.seperator_token_id), appended instead of EOS; else -1 */
    int32_t fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep; /* fill-in-the-middle */
    bool add_bos, add_eos;
    bool pair_bos, pair_eos, pair_sep; /* llama.cpp's add_bos, add_eos, add_sep, which its reranker prompt
                                          follows (hl_vocab_tokenize_pair) */
    hl_pretok *pre;                    /* BPE only */
};

/* The length llama.cpp sees of a GGUF string: it reads them with
 * gguf_get_arr_str() into std::string, so a string ends at its first NUL. */
static inline size_t hl_gguf_c_len(gguf_str s) {
    const char *nul = s.len ? memchr(s.data, '\0', s.len) : NULL;
    return nul ? (size_t)(nul - s.data) : s.len;
}

/* The first occurrence of needle[0, len) (len > 0) in hay[0, n), or NULL. */
static inline const char *hl_find_bytes(const char *hay, size_t n, const char *needle, size_t len) {
    for (const char *end = hay + n; (size_t)(end - hay) >= len;) {
        const char *p = memchr(hay, needle[0], (size_t)(end - hay) - len + 1);
        if (!p) return NULL;
        if (memcmp(p, needle, len) == 0) return p;
        hay = p + 1;
    }
    return NULL;
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

/* Sets present[r] (r < n_special; the caller zeroes present) for every special
 * token v->special[r] whose text occurs in text[0, len). O(len x the longest
 * match at a position). */
void hl_special_find(const hl_vocab *v, const char *text, size_t len, bool *present);
void hl_special_free(hl_vocab *v);

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

/* spm.c: read tokenizer.ggml.scores and find the byte tokens. FORMAT (scores
 * of another type, or fewer than the tokens), OUT_OF_MEMORY. */
hearth_status hl_spm_init(hl_vocab *v, const gguf_file *f);

/* Reusable working memory for hl_spm_text(). Zero-initialise; free with
 * hl_spm_scratch_free(). */
typedef struct hl_spm_scratch {
    char *text; /* the escaped fragment */
    struct spm_symbol *symbols;
    struct spm_bigram *heap;
    size_t cap; /* bytes of text and symbols; the heap holds 3 * cap */
} hl_spm_scratch;

/* Tokenizes one fragment of plain text (raw bytes) into o, after a space
 * when `space_prefix`. OUT_OF_MEMORY; UNSUPPORTED when a byte of a piece
 * that is no token has no byte token either. */
hearth_status hl_spm_text(const hl_vocab *v, const char *text, size_t len, bool space_prefix, hl_spm_scratch *s,
                          hl_tok_out *o);
void hl_spm_scratch_free(hl_spm_scratch *s);

/* wordpiece.c: find the longest token text. */
void hl_wpm_init(hl_vocab *v);

/* Tokenizes one fragment of plain text (raw bytes; invalid UTF-8 is dropped
 * as U+FFFD) into o. UNSUPPORTED when a word needs [UNK] and the vocabulary
 * has none. Needs no working memory beyond the stack. */
hearth_status hl_wpm_text(const hl_vocab *v, const char *text, size_t len, hl_tok_out *o);

/* detok.c: compute v->pieces. */
hearth_status hl_pieces_init(hl_vocab *v);

#endif
