/* SentencePiece tokenization (tokenizer.ggml.model = "llama"; Kudo and
 * Richardson 2018, "SentencePiece: A simple and language independent subword
 * tokenizer"), in the BPE form llama.cpp runs it (llm_tokenizer_spm_session in
 * src/llama-vocab.cpp): spaces become U+2581 "▁"; the text is cut into UTF-8
 * characters; while two adjacent symbols together spell a token, the pair
 * whose token has the highest score (tokenizer.ggml.scores) merges, the
 * leftmost first on ties. A priority queue of candidate pairs makes this
 * O(n log n) for n characters. A symbol left at the end is a token, or a
 * single character that is none: that one becomes the tokens of its bytes,
 * "<0xXX>" (SentencePiece's byte fallback).
 *
 * llama.cpp also keeps a table to split a non-token symbol back into the
 * pair it was merged from; it never applies, since a merge happens only when
 * the merged text is a token, so hearth has none. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/heap.h"
#include "base/status.h"
#include "text/vocab_impl.h"

/* ------------------------------------------------------------ the table -- */

static hearth_status load_scores(hl_vocab *v, const gguf_file *f) {
    static const char key[] = "tokenizer.ggml.scores";
    v->scores = hl_calloc((size_t)v->n_tokens, sizeof *v->scores);
    if (!v->scores) return HEARTH_ERR_OUT_OF_MEMORY;
    const gguf_kv *kv = hl_gguf_find_kv(f, key);
    if (!kv) return HEARTH_OK; /* every score 0, as llama.cpp */
    const gguf_array *a = &kv->value.v.arr;
    if (kv->value.type != GGUF_TYPE_ARRAY || (a->elem_type != GGUF_TYPE_FLOAT32 && a->elem_type != GGUF_TYPE_INT32)) {
        return hl_fail(HEARTH_ERR_FORMAT, "%s must be an array of float32 or int32, not %s", key,
                       hl_gguf_type_name(kv->value.type == GGUF_TYPE_ARRAY ? a->elem_type : kv->value.type));
    }
    if (a->n < (uint64_t)v->n_tokens) {
        return hl_fail(HEARTH_ERR_FORMAT, "%s has %llu entries for %d tokens", key, (unsigned long long)a->n,
                       v->n_tokens);
    }
    for (int32_t i = 0; i < v->n_tokens; i++) {
        v->scores[i] = a->elem_type == GGUF_TYPE_FLOAT32 ? hl_gguf_arr_f32(a, (uint64_t)i)
                                                         : (float)hl_gguf_arr_i32(a, (uint64_t)i);
    }
    return HEARTH_OK;
}

/* llama_vocab::byte_to_token(): the token "<0xXX>" (upper-case hex), else the
 * token whose text is the byte itself. */
static void find_byte_tokens(hl_vocab *v) {
    for (int b = 0; b < 256; b++) {
        char hex[8];
        snprintf(hex, sizeof hex, "<0x%02X>", b);
        const char byte = (char)b;
        int32_t id = hl_strtab_find(&v->texts, hex, 6);
        v->byte_token[b] = id >= 0 ? id : hl_strtab_find(&v->texts, &byte, 1);
    }
}

hearth_status hl_spm_init(hl_vocab *v, const gguf_file *f) {
    HL_TRY(load_scores(v, f));
    find_byte_tokens(v);
    return HEARTH_OK;
}

/* ------------------------------------------------------- the merge loop -- */

typedef struct spm_symbol {
    uint32_t start, len; /* bytes of the escaped text; len 0: merged into its left neighbour */
    int32_t prev, next;  /* neighbours, -1 at the ends */
} spm_symbol;

/* A candidate merge of adjacent symbols left and right into a token of
 * `score`, valid while their lengths still add up to len (both only grow). */
typedef struct spm_bigram {
    float score;
    int32_t left, right;
    uint32_t len;
} spm_bigram;

/* Higher score first, then the leftmost (llama.cpp's llm_bigram_spm::comparator). */
static bool bigram_before(const spm_bigram *a, const spm_bigram *b) {
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

HL_HEAP_DEFINE(heap, spm_bigram, bigram_before)

static void try_bigram(const hl_vocab *v, const hl_spm_scratch *s, size_t *n_heap, int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const spm_symbol *sym = s->symbols;
    const uint32_t len = sym[left].len + sym[right].len;
    const int32_t token = hl_strtab_find(&v->texts, s->text + sym[left].start, len);
    if (token >= 0) heap_push(s->heap, n_heap, (spm_bigram){v->scores[token], left, right, len});
}

static hearth_status reserve_scratch(hl_spm_scratch *s, size_t len) {
    if (s->cap >= len) return HEARTH_OK;
    hl_spm_scratch_free(s);
    s->text = hl_malloc(len);
    s->symbols = hl_malloc(len * sizeof *s->symbols);
    s->heap = hl_malloc(3 * len * sizeof *s->heap);
    if (!s->text || !s->symbols || !s->heap) {
        hl_spm_scratch_free(s);
        return HEARTH_ERR_OUT_OF_MEMORY;
    }
    s->cap = len;
    return HEARTH_OK;
}

void hl_spm_scratch_free(hl_spm_scratch *s) {
    free(s->text);
    free(s->symbols);
    free(s->heap);
    memset(s, 0, sizeof *s);
}

/* llama_escape_whitespace(): every ' ' becomes U+2581 (3 bytes). Returns the
 * escaped length; s->text must hold 3 * (len + 1) bytes. */
static size_t escape(const char *text, size_t len, bool space_prefix, char *out) {
    static const char LOWER_ONE_EIGHTH_BLOCK[3] = {'\xe2', '\x96', '\x81'};
    const size_t pre = space_prefix ? 1 : 0;
    size_t k = 0;
    for (size_t i = 0; i < pre + len; i++) {
        const char c = i < pre ? ' ' : text[i - pre];
        if (c == ' ') {
            memcpy(out + k, LOWER_ONE_EIGHTH_BLOCK, 3);
            k += 3;
        } else {
            out[k++] = c;
        }
    }
    return k;
}

/* The length of the UTF-8 sequence a lead byte announces (llama.cpp's
 * unicode_len_utf8(), by the high 4 bits: a stray continuation byte counts 1). */
static uint32_t utf8_len(uint8_t lead) {
    static const uint8_t by_high_bits[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return by_high_bits[lead >> 4];
}

static hearth_status emit(const hl_vocab *v, const hl_spm_scratch *s, hl_tok_out *o) {
    for (int32_t i = 0; i >= 0; i = s->symbols[i].next) {
        const spm_symbol *sym = &s->symbols[i];
        const uint8_t *piece = (const uint8_t *)s->text + sym->start;
        const int32_t token = hl_strtab_find(&v->texts, (const char *)piece, sym->len);
        if (token >= 0) {
            hl_tok_out_push(o, token);
            continue;
        }
        for (uint32_t k = 0; k < sym->len; k++) {
            const int32_t byte = v->byte_token[piece[k]];
            if (byte < 0) {
                return hl_fail(HEARTH_ERR_UNSUPPORTED,
                               "tokenize: the vocabulary has no token for byte 0x%02X (neither <0x%02X> nor the byte "
                               "itself), which the text needs",
                               piece[k], piece[k]);
            }
            hl_tok_out_push(o, byte);
        }
    }
    return HEARTH_OK;
}

hearth_status hl_spm_text(const hl_vocab *v, const char *text, size_t len, bool space_prefix, hl_spm_scratch *s,
                          hl_tok_out *o) {
    if (len == 0 && !space_prefix) return HEARTH_OK;
    HL_TRY(reserve_scratch(s, 3 * (len + 1)));
    const size_t n_bytes = escape(text, len, space_prefix, s->text);
    spm_symbol *sym = s->symbols;
    int32_t n = 0;
    for (size_t off = 0; off < n_bytes; n++) {
        uint32_t k = utf8_len((uint8_t)s->text[off]);
        if (k > n_bytes - off) k = (uint32_t)(n_bytes - off);
        sym[n] = (spm_symbol){(uint32_t)off, k, n - 1, -1};
        if (n > 0) sym[n - 1].next = n;
        off += k;
    }
    size_t n_heap = 0;
    for (int32_t i = 1; i < n; i++) try_bigram(v, s, &n_heap, i - 1, i);
    while (n_heap > 0) {
        const spm_bigram p = heap_pop(s->heap, &n_heap);
        spm_symbol *left = &sym[p.left], *right = &sym[p.right];
        if (left->len == 0 || right->len == 0 || left->len + right->len != p.len) continue; /* outdated */
        left->len += right->len;
        right->len = 0;
        left->next = right->next;
        if (right->next >= 0) sym[right->next].prev = p.left;
        try_bigram(v, s, &n_heap, left->prev, p.left);
        try_bigram(v, s, &n_heap, p.left, left->next);
    }
    return emit(v, s, o);
}
