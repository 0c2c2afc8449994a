/* Byte-level BPE (Sennrich et al. 2016, "Neural Machine Translation of Rare
 * Words with Subword Units"; GPT-2's byte-level form, openai/gpt-2
 * src/encoder.py): the merge table and the merge loop for one word.
 *
 * The vocabulary spells bytes as printable characters (bytes_to_unicode);
 * here tokens and merges are decoded to raw bytes once at load, so a word is
 * merged on its own bytes. The loop is llama.cpp's llm_tokenizer_bpe_session:
 * start from one symbol per byte, keep the adjacent pairs that have a merge in
 * a priority queue ordered by merge rank, then by position, and apply the
 * best until none is left — O(n log n) for a word of n bytes. A symbol whose
 * string is not a token at the end is emitted as its bytes' tokens, skipping
 * bytes that have none (as llama.cpp does). */
#include <stdlib.h>
#include <string.h>

#include "base/heap.h"
#include "base/status.h"
#include "text/unicode.h"
#include "text/vocab_impl.h"

/* ------------------------------------------------------------ the table -- */

/* Decodes a vocabulary string to the bytes its characters stand for; false
 * when a character is not one of the 256 of bytes_to_unicode (such a string
 * can never match text, which is always spelled in them). */
static bool decode_bytes(const char *str, size_t n, uint8_t *out, size_t *out_len) {
    const uint8_t *s = (const uint8_t *)str;
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        size_t used;
        int b = hl_cpt_to_byte(hl_utf8_decode(s + i, n - i, &used));
        if (b < 0) return false;
        out[k++] = (uint8_t)b;
        i += used;
    }
    *out_len = k;
    return true;
}

/* Interns s into v->bpe_strs; a new string records `token` (-1: not a token). */
static hearth_status intern(hl_vocab *v, const uint8_t *s, size_t len, int32_t token, int32_t *id, int32_t *cap) {
    bool added;
    HL_TRY(hl_strtab_intern(&v->bpe_strs, (const char *)s, len, id, &added));
    if (!added) return HEARTH_OK;
    if (*id >= *cap) {
        int32_t new_cap = *cap > INT32_MAX / 2 ? INT32_MAX : *cap * 2;
        int32_t *grown = realloc(v->bpe_token, (size_t)new_cap * sizeof *grown);
        if (!grown) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory growing the BPE string table");
        v->bpe_token = grown;
        *cap = new_cap;
    }
    v->bpe_token[*id] = token;
    return HEARTH_OK;
}

static uint64_t pair_key(int32_t left, int32_t right) { return (uint64_t)(uint32_t)left << 32 | (uint32_t)right; }

static size_t pair_slot(const hl_merges *m, uint64_t key) {
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & (m->cap - 1);
}

static const hl_merge *find_merge(const hl_merges *m, int32_t left, int32_t right) {
    const uint64_t key = pair_key(left, right);
    for (size_t i = pair_slot(m, key);; i = (i + 1) & (m->cap - 1)) {
        if (m->slots[i].rank < 0) return NULL;
        if (m->slots[i].key == key) return &m->slots[i];
    }
}

/* Adds a merge unless the pair has one: the first rank wins, as with
 * llama.cpp's bpe_ranks.emplace(). */
static void add_merge(hl_merges *m, int32_t left, int32_t right, int32_t rank, int32_t result) {
    const uint64_t key = pair_key(left, right);
    size_t i = pair_slot(m, key);
    while (m->slots[i].rank >= 0) {
        if (m->slots[i].key == key) return;
        i = (i + 1) & (m->cap - 1);
    }
    m->slots[i] = (hl_merge){key, rank, result};
}

/* A growable byte buffer for decoding. */
static hearth_status reserve_bytes(uint8_t **buf, size_t *cap, size_t n) {
    if (*cap >= n) return HEARTH_OK;
    free(*buf);
    *cap = n > 256 ? n : 256;
    *buf = hl_malloc(*cap);
    return *buf ? HEARTH_OK : HEARTH_ERR_OUT_OF_MEMORY;
}

static hearth_status add_tokens(hl_vocab *v, uint8_t **buf, size_t *buf_cap, int32_t *str_cap) {
    for (int32_t t = 0; t < v->n_tokens; t++) {
        size_t n, len;
        const char *text = hl_strtab_str(&v->texts, t, &n);
        HL_TRY(reserve_bytes(buf, buf_cap, n));
        if (!decode_bytes(text, n, *buf, &len)) continue; /* e.g. added tokens stored verbatim */
        int32_t id;
        HL_TRY(intern(v, *buf, len, t, &id, str_cap));
    }
    return HEARTH_OK;
}

/* Merge i is "left right", split at the first space after the first byte
 * (llama.cpp: word.find(' ', 1)). Merges that cannot apply are skipped. */
static hearth_status add_merges(hl_vocab *v, const gguf_array *merges, uint8_t **buf, size_t *buf_cap,
                                int32_t *str_cap) {
    for (uint64_t i = 0; i < merges->n; i++) {
        const gguf_str m = {merges->strs[i].data, hl_gguf_c_len(merges->strs[i])};
        const char *space = m.len > 1 ? memchr(m.data + 1, ' ', m.len - 1) : NULL;
        if (!space) continue;
        const size_t n_left = (size_t)(space - m.data), n_right = m.len - n_left - 1;
        size_t left_len, right_len;
        HL_TRY(reserve_bytes(buf, buf_cap, m.len));
        /* left's bytes then right's: together they are the merged string */
        if (!decode_bytes(m.data, n_left, *buf, &left_len) ||
            !decode_bytes(space + 1, n_right, *buf + left_len, &right_len) || right_len == 0) {
            continue;
        }
        int32_t left, right, result;
        HL_TRY(intern(v, *buf, left_len, -1, &left, str_cap));
        HL_TRY(intern(v, *buf + left_len, right_len, -1, &right, str_cap));
        HL_TRY(intern(v, *buf, left_len + right_len, -1, &result, str_cap));
        add_merge(&v->merges, left, right, (int32_t)i, result);
    }
    return HEARTH_OK;
}

hearth_status hl_bpe_init(hl_vocab *v, const gguf_array *merges) {
    if (merges->n > INT32_MAX / 4) {
        return hl_fail(HEARTH_ERR_FORMAT, "tokenizer.ggml.merges has %llu entries, more than hearth supports",
                       (unsigned long long)merges->n);
    }
    v->merges.cap = 16;
    while (v->merges.cap < merges->n * 2) v->merges.cap *= 2;
    v->merges.slots = hl_malloc(v->merges.cap * sizeof *v->merges.slots);
    int32_t str_cap = v->n_tokens;
    v->bpe_token = hl_malloc((size_t)str_cap * sizeof *v->bpe_token);
    if (!v->merges.slots || !v->bpe_token) return HEARTH_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < v->merges.cap; i++) v->merges.slots[i].rank = -1;
    HL_TRY(hl_strtab_init(&v->bpe_strs, v->n_tokens));

    uint8_t *buf = NULL;
    size_t buf_cap = 0;
    hearth_status st = add_tokens(v, &buf, &buf_cap, &str_cap);
    if (st == HEARTH_OK) st = add_merges(v, merges, &buf, &buf_cap, &str_cap);
    free(buf);
    HL_TRY(st);
    for (int b = 0; b < 256; b++) {
        const uint8_t byte = (uint8_t)b;
        v->byte_str[b] = hl_strtab_find(&v->bpe_strs, (const char *)&byte, 1);
    }
    return HEARTH_OK;
}

void hl_bpe_free(hl_vocab *v) {
    hl_strtab_free(&v->bpe_strs);
    free(v->bpe_token);
    free(v->merges.slots);
}

/* ------------------------------------------------------- the merge loop -- */

typedef struct bpe_symbol {
    uint32_t start, len; /* bytes of the word; len 0: merged into its left neighbour */
    int32_t prev, next;  /* neighbours, -1 at the ends */
    int32_t str;         /* bpe_strs id of the symbol's bytes, or -1 */
} bpe_symbol;

/* A candidate merge of symbols left and right, valid while their lengths
 * still add up to len (both only grow, so a change shows in the sum). */
typedef struct bpe_pair {
    int32_t rank, left, right, result;
    uint32_t len;
} bpe_pair;

static bool pair_before(const bpe_pair *a, const bpe_pair *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

HL_HEAP_DEFINE(heap, bpe_pair, pair_before)

static void try_pair(const hl_vocab *v, const bpe_symbol *sym, bpe_pair *heap, size_t *n, int32_t left, int32_t right) {
    if (left < 0 || right < 0 || sym[left].str < 0 || sym[right].str < 0) return;
    const hl_merge *m = find_merge(&v->merges, sym[left].str, sym[right].str);
    if (m) heap_push(heap, n, (bpe_pair){m->rank, left, right, m->result, sym[left].len + sym[right].len});
}

static hearth_status reserve_scratch(hl_bpe_scratch *s, size_t len) {
    if (s->cap >= len) return HEARTH_OK;
    hl_bpe_scratch_free(s);
    s->symbols = hl_malloc(len * sizeof *s->symbols);
    s->heap = hl_malloc(3 * len * sizeof *s->heap);
    if (!s->symbols || !s->heap) {
        hl_bpe_scratch_free(s);
        return HEARTH_ERR_OUT_OF_MEMORY;
    }
    s->cap = len;
    return HEARTH_OK;
}

void hl_bpe_scratch_free(hl_bpe_scratch *s) {
    free(s->symbols);
    free(s->heap);
    memset(s, 0, sizeof *s);
}

static void emit(const hl_vocab *v, const uint8_t *word, const bpe_symbol *sym, hl_tok_out *o) {
    for (int32_t i = 0; i >= 0; i = sym[i].next) {
        const int32_t token = sym[i].str >= 0 ? v->bpe_token[sym[i].str] : -1;
        if (token >= 0) {
            hl_tok_out_push(o, token);
            continue;
        }
        for (uint32_t k = 0; k < sym[i].len; k++) {
            const int32_t str = v->byte_str[word[sym[i].start + k]];
            if (str >= 0 && v->bpe_token[str] >= 0) hl_tok_out_push(o, v->bpe_token[str]);
        }
    }
}

hearth_status hl_bpe_word(const hl_vocab *v, const uint8_t *word, size_t len, hl_bpe_scratch *s, hl_tok_out *o) {
    if (len == 0) return HEARTH_OK;
    if (v->ignore_merges) {
        const int32_t str = hl_strtab_find(&v->bpe_strs, (const char *)word, len);
        if (str >= 0 && v->bpe_token[str] >= 0) {
            hl_tok_out_push(o, v->bpe_token[str]);
            return HEARTH_OK;
        }
    }
    HL_TRY(reserve_scratch(s, len));
    bpe_symbol *sym = s->symbols;
    const int32_t n = (int32_t)len;
    for (int32_t i = 0; i < n; i++) {
        sym[i] = (bpe_symbol){(uint32_t)i, 1, i - 1, i + 1 < n ? i + 1 : -1, v->byte_str[word[i]]};
    }
    size_t n_heap = 0;
    for (int32_t i = 1; i < n; i++) try_pair(v, sym, s->heap, &n_heap, i - 1, i);
    while (n_heap > 0) {
        const bpe_pair p = heap_pop(s->heap, &n_heap);
        bpe_symbol *left = &sym[p.left], *right = &sym[p.right];
        if (left->len == 0 || right->len == 0 || left->len + right->len != p.len) continue; /* outdated */
        left->len += right->len;
        left->str = p.result;
        right->len = 0;
        left->next = right->next;
        if (right->next >= 0) sym[right->next].prev = p.left;
        try_pair(v, sym, s->heap, &n_heap, left->prev, p.left);
        try_pair(v, sym, s->heap, &n_heap, p.left, left->next);
    }
    emit(v, word, sym, o);
    return HEARTH_OK;
}
