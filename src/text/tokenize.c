/* Text to token ids, as llama_vocab::impl::tokenize() does it (llama.cpp
 * src/llama-vocab.cpp): optional BOS; the text is cut at the special tokens
 * written in it (tokenizer_st_partition); each piece of plain text is, for
 * BPE, pre-tokenized into words and each word merged, for SentencePiece
 * merged whole (after a space when it starts the text or follows a special
 * token, if add_space_prefix), for WordPiece normalized, split into words and
 * each word cut into pieces; then optional EOS (WordPiece: [SEP]). */
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "text/vocab_impl.h"

/* Longest text accepted at once; keeps every offset in 32 bits after
 * invalid bytes grow threefold into U+FFFD. */
#define MAX_TEXT_BYTES ((size_t)INT32_MAX / 4)

/* A piece of the text: plain text [off, off + len), or a special token. */
typedef struct fragment {
    size_t off, len;
    int32_t token; /* -1 for plain text */
} fragment;

typedef struct fragment_list {
    fragment *items;
    size_t n, cap;
} fragment_list;

typedef struct session {
    fragment_list frags, spare;
    bool *present; /* [n_special] whether v->special[i] occurs in the text */
    hl_words words;
    hl_bpe_scratch bpe;
    hl_spm_scratch spm;
} session;

static hearth_status push_fragment(fragment_list *l, fragment f) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        fragment *items = realloc(l->items, cap * sizeof *items);
        if (!items) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory splitting text at special tokens");
        l->items = items;
        l->cap = cap;
    }
    l->items[l->n++] = f;
    return HEARTH_OK;
}

/* Appends plain fragment f to out, cut at every occurrence of special token
 * `id`, searching left to right. */
static hearth_status cut_at(const hl_vocab *v, const char *text, fragment f, int32_t id, fragment_list *out) {
    size_t len;
    const char *tok = hl_strtab_str(&v->texts, id, &len);
    size_t pos = f.off;
    const size_t end = f.off + f.len;
    for (const char *m; (m = hl_find_bytes(text + pos, end - pos, tok, len));) {
        const size_t at = (size_t)(m - text);
        if (at > pos) HL_TRY(push_fragment(out, (fragment){pos, at - pos, -1}));
        HL_TRY(push_fragment(out, (fragment){at, len, id}));
        pos = at + len;
    }
    if (pos < end) HL_TRY(push_fragment(out, (fragment){pos, end - pos, -1}));
    return HEARTH_OK;
}

/* tokenizer_st_partition(): each special token in turn, longest first, is cut
 * out of the plain fragments. Without parse_special, CONTROL and UNKNOWN
 * tokens stay plain text but USER_DEFINED ones are still cut out (as Hugging
 * Face tokenizers do with added tokens). No whitespace is stripped around the
 * tokens: llama.cpp sets lstrip/rstrip attributes by general.name only for
 * BERT-style encoders and Phi-3 (rstrip after special tokens), which hearth
 * does not handle yet. Tokens whose text
 * does not occur in the whole text cannot occur in a fragment of it: only
 * those that do are searched for. */
static hearth_status partition(const hl_vocab *v, const char *text, size_t len, bool parse_special, session *s) {
    s->frags.n = 0;
    if (len == 0) return HEARTH_OK;
    HL_TRY(push_fragment(&s->frags, (fragment){0, len, -1}));
    free(s->present); /* a session may tokenize several texts (hl_vocab_tokenize_pair) */
    s->present = hl_calloc((size_t)v->n_special + 1, sizeof *s->present);
    if (!s->present) return HEARTH_ERR_OUT_OF_MEMORY;
    hl_special_find(v, text, len, s->present);
    for (int32_t i = 0; i < v->n_special; i++) {
        const int32_t id = v->special[i];
        if (!s->present[i]) continue;
        if (!parse_special && (v->attr[id] & (HL_ATTR_CONTROL | HL_ATTR_UNKNOWN))) continue;
        s->spare.n = 0;
        for (size_t k = 0; k < s->frags.n; k++) {
            const fragment f = s->frags.items[k];
            HL_TRY(f.token >= 0 ? push_fragment(&s->spare, f) : cut_at(v, text, f, id, &s->spare));
        }
        const fragment_list t = s->frags;
        s->frags = s->spare;
        s->spare = t;
    }
    return HEARTH_OK;
}

static hearth_status tokenize_plain(const hl_vocab *v, const char *text, size_t len, bool after_special, session *s,
                                    hl_tok_out *o) {
    if (v->type == HL_VOCAB_SPM) return hl_spm_text(v, text, len, v->add_space_prefix && after_special, &s->spm, o);
    if (v->type == HL_VOCAB_WPM) return hl_wpm_text(v, text, len, o);
    HL_TRY(hl_pretok_split(v->pre, text, len, &s->words));
    const hl_words *w = &s->words;
    for (size_t i = 0; i + 1 < w->n_bounds; i++) {
        const uint8_t *word = (const uint8_t *)w->text + w->bounds[i];
        HL_TRY(hl_bpe_word(v, word, w->bounds[i + 1] - w->bounds[i], &s->bpe, o));
    }
    return HEARTH_OK;
}

static hearth_status run(const hl_vocab *v, const char *text, size_t len, bool add_special, bool parse_special,
                         session *s, hl_tok_out *o) {
    if (add_special && v->add_bos) hl_tok_out_push(o, v->bos);
    HL_TRY(partition(v, text, len, parse_special, s));
    for (size_t k = 0; k < s->frags.n; k++) {
        const fragment f = s->frags.items[k];
        if (f.token >= 0) {
            hl_tok_out_push(o, f.token);
        } else {
            /* the text's start counts as following a special token (llama.cpp's is_prev_special) */
            const bool after_special = k == 0 || s->frags.items[k - 1].token >= 0;
            HL_TRY(tokenize_plain(v, text + f.off, f.len, after_special, s, o));
        }
    }
    if (add_special && v->add_eos) hl_tok_out_push(o, v->type == HL_VOCAB_WPM ? v->sep : v->eos);
    return HEARTH_OK;
}

static hearth_status check_text(const char *text, size_t len) {
    if (!text && len) return hl_fail(HEARTH_ERR_INVALID_ARG, "tokenize: NULL text");
    if (len > MAX_TEXT_BYTES) {
        return hl_fail(HEARTH_ERR_INVALID_ARG, "tokenize: %zu bytes of text at once is more than the %zu allowed", len,
                       MAX_TEXT_BYTES);
    }
    return HEARTH_OK;
}

/* Frees the session and reports the count (BUFFER_TOO_SMALL past n_max). */
static hearth_status finish(session *s, hearth_status st, const hl_tok_out *o, size_t n_max, size_t *n_tokens) {
    free(s->frags.items);
    free(s->spare.items);
    free(s->present);
    hl_words_free(&s->words);
    hl_bpe_scratch_free(&s->bpe);
    hl_spm_scratch_free(&s->spm);
    HL_TRY(st);
    *n_tokens = o->n;
    if (o->n > n_max) {
        return hl_fail(HEARTH_ERR_BUFFER_TOO_SMALL, "tokenize: the text needs %zu tokens, the buffer holds %zu", o->n,
                       n_max);
    }
    return HEARTH_OK;
}

hearth_status hl_vocab_tokenize(const hl_vocab *v, const char *text, size_t len, bool add_special, bool parse_special,
                                int32_t *tokens, size_t n_max, size_t *n_tokens) {
    if (!v || !n_tokens || (!tokens && n_max)) {
        return hl_fail(HEARTH_ERR_INVALID_ARG, "tokenize: NULL vocabulary, text, tokens or n_tokens");
    }
    HL_TRY(check_text(text, len));
    hl_tok_out o = {tokens, n_max, 0};
    session s = {0};
    return finish(&s, run(v, text, len, add_special, parse_special, &s, &o), &o, n_max, n_tokens);
}

/* llama.cpp's format_prompt_rerank (tools/server/server-common.cpp) without
 * a rerank template: BOS where add_bos, the query, EOS ([SEP] without one)
 * where add_eos, [SEP] where add_sep, the document, EOS where add_eos; the
 * two texts tokenized without special tokens, none parsed. */
hearth_status hl_vocab_tokenize_pair(const hl_vocab *v, const char *query, size_t query_len, const char *doc,
                                     size_t doc_len, int32_t *tokens, size_t n_max, size_t *n_tokens) {
    if (!v || !n_tokens || (!tokens && n_max)) {
        return hl_fail(HEARTH_ERR_INVALID_ARG, "tokenize: NULL vocabulary, text, tokens or n_tokens");
    }
    HL_TRY(check_text(query, query_len));
    HL_TRY(check_text(doc, doc_len));
    const int32_t eos = v->eos >= 0 ? v->eos : v->sep;
    hl_tok_out o = {tokens, n_max, 0};
    session s = {0};
    if (v->pair_bos) hl_tok_out_push(&o, v->bos);
    hearth_status st = run(v, query ? query : "", query_len, false, false, &s, &o);
    if (v->pair_eos) hl_tok_out_push(&o, eos);
    if (v->pair_sep) hl_tok_out_push(&o, v->sep);
    if (st == HEARTH_OK) st = run(v, doc ? doc : "", doc_len, false, false, &s, &o);
    if (v->pair_eos) hl_tok_out_push(&o, eos);
    return finish(&s, st, &o, n_max, n_tokens);
}
