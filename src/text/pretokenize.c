/* Pre-tokenizers (see pretokenize.h). The regex lists are llama.cpp's
 * (src/llama-vocab.cpp, llm_tokenizer_bpe); several types apply two or more
 * regexes in sequence, each splitting the pieces the previous one produced
 * (unicode_regex_split() in llama.cpp's src/unicode.cpp). Text a regex does not
 * match stays a word of its own, as in unicode_regex_split_stl().
 *
 * Reproducing llama.cpp's splits with PCRE2. llama.cpp does not run these
 * regexes with a regex engine: it hand-codes the common ones
 * (unicode_regex_split_custom_gpt2/llama3/qwen2) and runs the rest with
 * std::regex on a "collapsed" text where each code point is replaced by a
 * byte standing for its class. Both use llama.cpp's own Unicode tables
 * (15.1), which differ from those of the PCRE2 in use: Debian 12's 10.42 has
 * Unicode 14, so some 5000 letters and digits added since are "other" to it,
 * and it takes U+180E (MONGOLIAN VOWEL SEPARATOR, a format character since
 * Unicode 6.3) for \s; a newer PCRE2 knows code points llama.cpp calls
 * unassigned. So PCRE2 matches a subject in which every non-ASCII code point
 * is replaced by a stand-in of the same class under llama.cpp's tables
 * (unicode_data.c) and the same UTF-8 length; match offsets are then offsets
 * into the real text. ASCII is left as is: PCRE2 and llama.cpp classify it
 * alike. With that, the hand-coded splitters and these regexes agree: the
 * reference test compares every supported type with llama.cpp on a corpus that
 * includes the corners (whitespace runs before a word and at the end of a
 * piece, \r\n runs mixed with spaces, contractions, U+180E). */
#include "text/pretokenize.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/status.h"
#include "text/unicode.h"

#define MAX_NAMES 12
#define MAX_REGEXES 4

/* GPT-2's regex (openai/gpt-2 src/encoder.py) as llama.cpp writes it. */
#define RX_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
/* Llama 3's, with (?i:...) spelled out as llama.cpp adapts it (PR #6920). */
#define RX_LLAMA3                                                                                                      \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"                         \
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* Qwen2's: Llama 3's with single digits. */
#define RX_QWEN2                                                                                                       \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"                         \
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

typedef struct pre_type {
    const char *names[MAX_NAMES]; /* tokenizer.ggml.pre values, NULL-terminated */
    const char *regexes[MAX_REGEXES];
    bool ignore_merges; /* llama.cpp's vocab.ignore_merges */
    bool add_bos;       /* llama.cpp's default add_bos for the type */
} pre_type;

/* Only the names whose llama.cpp settings are fully reproduced here: types
 * with extra per-token rules (lstrip of <mask> for the jina-v2 encoders, EOG
 * exceptions for solar-open) are left out. The regexes may use only ASCII
 * literals and the classes \p{L}, \p{N}, \p{P}, \s, \S (see the top). */
static const pre_type PRE_TYPES[] = {
    {{"default"}, {"[\\p{P}\\$\\+<=>\\^~\\|]+", RX_GPT2, "\\p{N}+", "[0-9][0-9][0-9]"}, false, false},
    {{"gpt-2", "phi-2", "gigachat", "a.x-4.0", "mellum", "mpt", "olmo", "jais", "trillion", "granite-docling",
      "exaone4"},
     {RX_GPT2},
     false,
     false},
    {{"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b", "mellum2"},
     {"\\p{N}", RX_GPT2},
     false,
     false},
    {{"llama-bpe", "llama3", "llama-v3", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"},
     {RX_LLAMA3},
     true,
     true},
    {{"dbrx", "smaug-bpe"}, {RX_LLAMA3}, false, false},
    {{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez", "stablelm2", "hunyuan"}, {RX_QWEN2}, false, false},
};
#define N_PRE_TYPES (sizeof PRE_TYPES / sizeof PRE_TYPES[0])

struct hl_pretok {
    const pre_type *type;
    pcre2_code *re[MAX_REGEXES];
    int n_re;
};

/* Stand-ins for non-ASCII code points, by class and UTF-8 length 2..4. Each is
 * in the class it stands for under every Unicode version PCRE2 may use. */
static const uint32_t STAND_IN[HL_UCLASS_COUNT][3] = {
    [HL_UCLASS_OTHER] = {0x00A2, 0xFFFD, 0x1F600},  /* cent sign, replacement char, emoji */
    [HL_UCLASS_LETTER] = {0x00C0, 0x4E00, 0x20000}, /* A-grave, CJK ideographs */
    [HL_UCLASS_NUMBER] = {0x00B2, 0x0966, 0x1D7CE}, /* superscript two, Devanagari 0, math 0 */
    [HL_UCLASS_PUNCT] = {0x00A1, 0x3001, 0x10100},  /* inverted !, ideographic comma, Aegean */
    /* No White_Space code point takes 4 bytes (gen_unicode_data.py checks). */
    [HL_UCLASS_SPACE] = {0x0085, 0x3000, 0x1F600}, /* next line, ideographic space */
};

static const pre_type *find_type(gguf_str name) {
    for (size_t t = 0; t < N_PRE_TYPES; t++) {
        for (int i = 0; i < MAX_NAMES && PRE_TYPES[t].names[i]; i++) {
            if (hl_gguf_str_eq(name, PRE_TYPES[t].names[i])) return &PRE_TYPES[t];
        }
    }
    return NULL;
}

static hearth_status compile(const char *pattern, pcre2_code **out) {
    int err;
    PCRE2_SIZE at;
    *out = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &at, NULL);
    if (!*out) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        return hl_fail(HEARTH_ERR_UNSUPPORTED, "pre-tokenizer regex '%s' does not compile at %zu: %s", pattern,
                       (size_t)at, (const char *)msg);
    }
    pcre2_jit_compile(*out, PCRE2_JIT_COMPLETE); /* where JIT is unavailable, pcre2_match interprets */
    return HEARTH_OK;
}

hearth_status hl_pretok_init(const gguf_str *name, hl_pretok **out) {
    *out = NULL;
    gguf_str default_name = {"default", 7};
    if (!name || name->len == 0) {
        HL_WARN("tokenizer.ggml.pre is missing: using the 'default' pre-tokenizer as llama.cpp does; "
                "tokenization may differ from the model's own");
        name = &default_name;
    }
    const pre_type *type = find_type(*name);
    if (!type) {
        return hl_fail(HEARTH_ERR_UNSUPPORTED,
                       "pre-tokenizer '%.*s' (tokenizer.ggml.pre) is not supported yet (supported: default, "
                       "gpt-2, smollm, llama-bpe, dbrx, qwen2 and their llama.cpp aliases)",
                       (int)(name->len > 64 ? 64 : name->len), name->data);
    }
    hl_pretok *p = hl_calloc(1, sizeof *p);
    if (!p) return HEARTH_ERR_OUT_OF_MEMORY;
    p->type = type;
    for (; p->n_re < MAX_REGEXES && type->regexes[p->n_re]; p->n_re++) {
        hearth_status st = compile(type->regexes[p->n_re], &p->re[p->n_re]);
        if (st != HEARTH_OK) {
            hl_pretok_free(p);
            return st;
        }
    }
    *out = p;
    return HEARTH_OK;
}

void hl_pretok_free(hl_pretok *p) {
    if (!p) return;
    for (int i = 0; i < p->n_re; i++) pcre2_code_free(p->re[i]);
    free(p);
}

bool hl_pretok_ignore_merges(const hl_pretok *p) { return p->type->ignore_merges; }
bool hl_pretok_add_bos(const hl_pretok *p) { return p->type->add_bos; }

void hl_words_free(hl_words *w) {
    free(w->text);
    free(w->subject);
    free(w->bounds);
    free(w->next_bounds);
    memset(w, 0, sizeof *w);
}

/* Room for the text of a fragment of `len` raw bytes: each may become 3
 * (U+FFFD). */
static hearth_status reserve_text(hl_words *w, size_t len) {
    const size_t need = len * 3 + 1;
    if (w->cap >= need) return HEARTH_OK;
    free(w->text);
    free(w->subject);
    w->text = hl_malloc(need);
    w->subject = hl_malloc(need);
    w->cap = w->text && w->subject ? need : 0;
    return w->cap ? HEARTH_OK : HEARTH_ERR_OUT_OF_MEMORY;
}

/* Room for the boundaries of w->len bytes of words: one more than bytes. */
static hearth_status reserve_bounds(hl_words *w) {
    const size_t need = w->len + 2;
    if (w->bounds_cap >= need) return HEARTH_OK;
    free(w->bounds);
    free(w->next_bounds);
    w->bounds = hl_malloc(need * sizeof *w->bounds);
    w->next_bounds = hl_malloc(need * sizeof *w->next_bounds);
    w->bounds_cap = w->bounds && w->next_bounds ? need : 0;
    return w->bounds_cap ? HEARTH_OK : HEARTH_ERR_OUT_OF_MEMORY;
}

/* Fills w->text with the fragment as llama.cpp sees it and w->subject with
 * the same text in stand-ins. */
static void normalize(const char *raw, size_t len, hl_words *w) {
    const uint8_t *s = (const uint8_t *)raw;
    uint8_t *text = (uint8_t *)w->text, *subject = (uint8_t *)w->subject;
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        size_t used;
        uint32_t cpt = hl_utf8_decode(s + i, len - i, &used);
        i += used;
        size_t k = hl_utf8_encode(cpt, text + n);
        if (k == 1) {
            subject[n] = text[n];
        } else {
            hl_utf8_encode(STAND_IN[hl_unicode_class(cpt)][k - 2], subject + n);
        }
        n += k;
    }
    w->len = n;
}

static int match(const pcre2_code *re, PCRE2_SPTR s, size_t n, size_t pos, pcre2_match_data *md) {
    int rc = pcre2_match(re, s, n, pos, PCRE2_NO_UTF_CHECK, md, NULL);
    /* The JIT's default 32 KiB stack can run out on long runs; the
     * interpreter keeps its backtracking state on the heap instead. */
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) rc = pcre2_match(re, s, n, pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md, NULL);
    return rc;
}

/* Splits every current word with `re` into matches and the gaps between
 * them; w->bounds receives the new word boundaries. */
static hearth_status split_with(const pcre2_code *re, hl_words *w, pcre2_match_data *md) {
    size_t *next = w->next_bounds, nb = 0;
    next[nb++] = 0;
    for (size_t k = 0; k + 1 < w->n_bounds; k++) {
        const size_t base = w->bounds[k], n = w->bounds[k + 1] - base;
        PCRE2_SPTR subject = (PCRE2_SPTR)w->subject + base;
        for (size_t pos = 0; pos < n;) {
            int rc = match(re, subject, n, pos, md);
            if (rc == PCRE2_ERROR_NOMATCH) break;
            if (rc < 0) {
                PCRE2_UCHAR msg[256];
                pcre2_get_error_message(rc, msg, sizeof msg);
                return hl_fail(HEARTH_ERR_UNSUPPORTED, "the pre-tokenizer regex failed on this text: %s",
                               (const char *)msg);
            }
            const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            if (ov[1] == ov[0]) { /* empty match (none of the shipped regexes has one): step over a character */
                pos = ov[0] + 1;
                while (pos < n && (subject[pos] & 0xC0) == 0x80) pos++;
                continue;
            }
            if (base + ov[0] > next[nb - 1]) next[nb++] = base + ov[0]; /* the gap before the match */
            next[nb++] = base + ov[1];
            pos = ov[1];
        }
        if (next[nb - 1] < base + n) next[nb++] = base + n;
    }
    w->next_bounds = w->bounds;
    w->bounds = next;
    w->n_bounds = nb;
    return HEARTH_OK;
}

hearth_status hl_pretok_split(const hl_pretok *p, const char *raw, size_t len, hl_words *w) {
    HL_TRY(reserve_text(w, len));
    normalize(raw, len, w);
    HL_TRY(reserve_bounds(w));
    w->bounds[0] = 0;
    w->bounds[1] = w->len;
    w->n_bounds = w->len ? 2 : 1;
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    if (!md) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory creating PCRE2 match data");
    hearth_status st = HEARTH_OK;
    for (int i = 0; i < p->n_re && st == HEARTH_OK; i++) st = split_with(p->re[i], w, md);
    pcre2_match_data_free(md);
    return st;
}
