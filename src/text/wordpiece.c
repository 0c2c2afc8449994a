/* WordPiece tokenization (tokenizer.ggml.model = "bert"; Wu et al. 2016,
 * "Google's Neural Machine Translation System", section 4.1; Devlin et al.
 * 2018, BERT), giving the ids Hugging Face tokenizers gives for an uncased
 * BERT tokenizer.json (BertNormalizer, BertPreTokenizer, WordPiece):
 *
 * 1. BERT's basic tokenizer, one code point at a time: clean_text drops
 *    NUL, U+FFFD (also what invalid UTF-8 decodes to), controls, format
 *    characters and private use, and turns whitespace into spaces; CJK
 *    ideographs become words of their own; strip_accents takes NFD and drops
 *    the non-spacing marks; lowercase lower-cases. Then the pre-tokenizer
 *    splits at whitespace and makes every punctuation character a word
 *    (ASCII symbols such as $ + < = > ^ ` | ~ count as punctuation). The
 *    character tables come from tokenizers itself (wordpiece_data.c, see
 *    gen_wordpiece_data.py), so they share its Unicode version.
 *    llama.cpp's WPM (src/llama-vocab.cpp) approximates this and differs on
 *    the test corpus (tests/reference/wordpiece_reference.json, 68 of 79
 *    equal) for Hangul syllables (it does not decompose them), some
 *    combining marks (Devanagari vowel signs), \v and \f (whitespace there,
 *    dropped by clean_text here) and words over 100 characters (it has no
 *    limit); hearth follows tokenizers, what the models were trained with.
 *    GGUF has no key saying a BERT vocabulary is cased: like llama.cpp,
 *    hearth treats every one as uncased.
 *
 * 2. WordPiece per word: a word longer than 100 characters
 *    (max_input_chars_per_word) is [UNK]; otherwise the longest prefix that is
 *    a token, then the longest continuation from where it ended, and so on;
 *    when some position has no token the whole word is [UNK].
 *    llama.cpp's converter rewrites the vocabulary (BertModel.set_vocab):
 *    a word-initial token "x" is stored as "\u2581x", a continuation "##x" as
 *    "x", so the first piece is looked up after a U+2581 and the others bare.
 *
 * [CLS] and [SEP] around the text are tokenize.c's (BOS and the separator,
 * when the caller asks for special tokens, as llama.cpp does for WPM). */
#include <string.h>

#include "base/status.h"
#include "text/unicode.h"
#include "text/vocab_impl.h"
#include "text/wordpiece.h"

#define MAX_WORD_CHARS 100 /* tokenizers' WordPiece max_input_chars_per_word */
#define MAX_CPTS_PER_CHAR 4

/* ---------------------------------------------------------- characters -- */

static const hl_wp_range *find_range(const hl_wp_range *r, size_t n, uint32_t cp) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (cp < r[mid].first) {
            hi = mid;
        } else if (cp > r[mid].last) {
            lo = mid + 1;
        } else {
            return &r[mid];
        }
    }
    return NULL;
}

static int char_class(uint32_t cp) {
    const hl_wp_range *r = find_range(hl_wp_class, hl_wp_n_class, cp);
    return r ? r->cls : HL_WP_OTHER;
}

/* BERT's _is_chinese_char, with tokenizers' 0x2B920 (Google's BERT: 0x2B820). */
static bool is_cjk(uint32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
           (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

/* What the normalizer makes of cp: 0 to MAX_CPTS_PER_CHAR code points. */
static size_t normalize(uint32_t cp, uint32_t out[MAX_CPTS_PER_CHAR]) {
    if (find_range(hl_wp_drop, hl_wp_n_drop, cp)) return 0;
    if (cp >= 0xAC00 && cp <= 0xD7A3) { /* Hangul syllable: NFD by arithmetic (Unicode 15, 3.12) */
        const uint32_t s = cp - 0xAC00;
        out[0] = 0x1100 + s / 588;
        out[1] = 0x1161 + (s % 588) / 28;
        if (s % 28 == 0) return 2;
        out[2] = 0x11A7 + s % 28;
        return 3;
    }
    size_t lo = 0, hi = hl_wp_n_map;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (cp < hl_wp_map[mid].cp) {
            hi = mid;
        } else if (cp > hl_wp_map[mid].cp) {
            lo = mid + 1;
        } else {
            memcpy(out, hl_wp_map_cpts + hl_wp_map[mid].off, hl_wp_map[mid].len * sizeof *out);
            return hl_wp_map[mid].len;
        }
    }
    out[0] = cp;
    return 1;
}

/* --------------------------------------------------------------- words -- */

/* The word being gathered: its UTF-8 after a U+2581 (so that the first
 * piece's lookup text is contiguous), and where each character ends. A
 * word past MAX_WORD_CHARS keeps only its count. */
typedef struct word {
    char buf[3 + 4 * MAX_WORD_CHARS];
    uint16_t end[MAX_WORD_CHARS]; /* byte end of character i, from buf + 3 */
    size_t n_chars;
} word;

static void word_add(word *w, uint32_t cp) {
    if (w->n_chars < MAX_WORD_CHARS) {
        const size_t at = w->n_chars ? w->end[w->n_chars - 1] : 0;
        w->end[w->n_chars] = (uint16_t)(at + hl_utf8_encode(cp, (uint8_t *)w->buf + 3 + at));
    }
    w->n_chars++;
}

/* Greedy longest-match-first (tokenizers' WordPiece::tokenize). */
static hearth_status word_flush(const hl_vocab *v, word *w, hl_tok_out *o) {
    const size_t n = w->n_chars;
    w->n_chars = 0;
    if (n == 0) return HEARTH_OK;
    int32_t ids[MAX_WORD_CHARS];
    size_t n_ids = 0;
    if (n <= MAX_WORD_CHARS) {
        const char *text = w->buf + 3;
        for (size_t start = 0; start < n;) {
            const size_t from = start ? w->end[start - 1] : 0;
            int32_t id = -1;
            size_t stop = n;
            for (; stop > start; stop--) {
                const size_t len = w->end[stop - 1] - from;
                if (start == 0) { /* word-initial: "\u2581" + piece */
                    if (len + 3 <= v->max_token_len) id = hl_strtab_find(&v->texts, w->buf, len + 3);
                } else if (len <= v->max_token_len) {
                    id = hl_strtab_find(&v->texts, text + from, len);
                }
                if (id >= 0) break;
            }
            if (id < 0) {
                n_ids = 0;
                break;
            }
            ids[n_ids++] = id;
            start = stop;
        }
    }
    if (n_ids == 0) {
        if (v->unk < 0) {
            return hl_fail(HEARTH_ERR_UNSUPPORTED,
                           "tokenize: a word has no WordPiece tokens and the vocabulary has no unknown token");
        }
        hl_tok_out_push(o, v->unk);
        return HEARTH_OK;
    }
    for (size_t i = 0; i < n_ids; i++) hl_tok_out_push(o, ids[i]);
    return HEARTH_OK;
}

/* One normalized code point into the words: whitespace ends a word,
 * punctuation is a word of its own. */
static hearth_status add_char(const hl_vocab *v, word *w, uint32_t cp, hl_tok_out *o) {
    switch (char_class(cp)) {
    case HL_WP_SPACE: return word_flush(v, w, o);
    case HL_WP_PUNCT:
        HL_TRY(word_flush(v, w, o));
        word_add(w, cp);
        return word_flush(v, w, o);
    default: word_add(w, cp); return HEARTH_OK;
    }
}

hearth_status hl_wpm_text(const hl_vocab *v, const char *text, size_t len, hl_tok_out *o) {
    word w;
    w.n_chars = 0;
    memcpy(w.buf, "\xe2\x96\x81", 3);
    const uint8_t *s = (const uint8_t *)text;
    for (size_t i = 0; i < len;) {
        size_t used;
        const uint32_t cp = hl_utf8_decode(s + i, len - i, &used);
        i += used;
        uint32_t cpts[MAX_CPTS_PER_CHAR];
        const size_t n = normalize(cp, cpts);
        const bool alone = is_cjk(cp); /* handle_chinese_chars: spaces around it */
        if (alone && n) HL_TRY(word_flush(v, &w, o));
        for (size_t k = 0; k < n; k++) HL_TRY(add_char(v, &w, cpts[k], o));
        if (alone && n) HL_TRY(word_flush(v, &w, o));
    }
    return word_flush(v, &w, o);
}

void hl_wpm_init(hl_vocab *v) {
    v->max_token_len = 0;
    for (int32_t id = 0; id < v->n_tokens; id++) {
        size_t len;
        hl_strtab_str(&v->texts, id, &len);
        if (len > v->max_token_len) v->max_token_len = len;
    }
}
