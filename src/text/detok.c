/* Token ids back to bytes: the piece of each token, computed once at load as
 * llama.cpp's llama_vocab::impl::token_to_piece() gives it for a BPE,
 * SentencePiece or WordPiece vocabulary (a WordPiece word-initial token
 * "\u2581x" reads " x", a continuation "x" reads "x": pieces glue into words
 * and words get a space before them), and a streaming detokenizer that hands out only
 * whole UTF-8 characters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "text/unicode.h"
#include "text/vocab_impl.h"

/* --------------------------------------------------------------- pieces -- */

typedef struct byte_buf {
    char *data;
    size_t len, cap;
} byte_buf;

static hearth_status put(byte_buf *b, const void *data, size_t n) {
    if (b->cap - b->len < n) {
        size_t cap = b->cap * 2 > b->len + n ? b->cap * 2 : b->len + n + 4096;
        char *grown = realloc(b->data, cap);
        if (!grown) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory building token pieces (%zu bytes)", cap);
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
    return HEARTH_OK;
}

/* llama_decode_text(): each character of a normal token stands for a byte; a
 * character outside the byte alphabet becomes "[UNK_BYTE_0x<its UTF-8 in
 * hex><the token's text>]", exactly as llama.cpp writes it. */
static hearth_status decode_text(const char *text, size_t n, byte_buf *b) {
    const uint8_t *s = (const uint8_t *)text;
    for (size_t i = 0; i < n;) {
        size_t used;
        const uint32_t cpt = hl_utf8_decode(s + i, n - i, &used);
        i += used;
        const int byte = hl_cpt_to_byte(cpt);
        if (byte >= 0) {
            const uint8_t c = (uint8_t)byte;
            HL_TRY(put(b, &c, 1));
            continue;
        }
        uint8_t utf8[4];
        const size_t k = hl_utf8_encode(cpt, utf8);
        char hex[9] = {0};
        for (size_t j = 0; j < k; j++) snprintf(hex + 2 * j, 3, "%02x", utf8[j]);
        HL_TRY(put(b, "[UNK_BYTE_0x", 12));
        HL_TRY(put(b, hex, 2 * k));
        HL_TRY(put(b, text, n));
        HL_TRY(put(b, "]", 1));
    }
    return HEARTH_OK;
}

/* SentencePiece and WordPiece text (llama_unescape_whitespace()): each U+2581
 * is a space. */
static hearth_status unescape_spaces(const char *text, size_t n, byte_buf *b) {
    for (const char *end = text + n; text < end;) {
        const char *mark = hl_find_bytes(text, (size_t)(end - text), "\xe2\x96\x81", 3);
        const size_t plain = (size_t)((mark ? mark : end) - text);
        HL_TRY(put(b, text, plain));
        if (!mark) break;
        HL_TRY(put(b, " ", 1));
        text = mark + 3;
    }
    return HEARTH_OK;
}

/* A BYTE token "<0xXX>": llama.cpp's token_to_byte() parses text[3..5) as hex. */
static uint8_t byte_of_token(const char *text, size_t n) {
    char hex[3] = {0};
    if (n > 3) memcpy(hex, text + 3, n - 3 < 2 ? n - 3 : 2);
    return (uint8_t)strtol(hex, NULL, 16);
}

static hearth_status add_piece(const hl_vocab *v, int32_t id, byte_buf *b) {
    size_t n;
    const char *text = hl_strtab_str(&v->texts, id, &n);
    const uint8_t attr = v->attr[id];
    if (attr & (HL_ATTR_UNKNOWN | HL_ATTR_CONTROL | HL_ATTR_USER_DEFINED)) return put(b, text, n);
    if (attr & HL_ATTR_NORMAL) return v->type == HL_VOCAB_BPE ? decode_text(text, n, b) : unescape_spaces(text, n, b);
    if (attr & HL_ATTR_BYTE) {
        const uint8_t c = byte_of_token(text, n);
        return put(b, &c, 1);
    }
    return HEARTH_OK; /* UNUSED and undefined tokens render as nothing */
}

hearth_status hl_pieces_init(hl_vocab *v) {
    v->piece_off = hl_malloc(((size_t)v->n_tokens + 1) * sizeof *v->piece_off);
    if (!v->piece_off) return HEARTH_ERR_OUT_OF_MEMORY;
    byte_buf b = {0};
    v->piece_off[0] = 0;
    for (int32_t id = 0; id < v->n_tokens; id++) {
        hearth_status st = add_piece(v, id, &b);
        if (st != HEARTH_OK) {
            free(b.data);
            return st;
        }
        v->piece_off[id + 1] = b.len;
        const size_t n = b.len - v->piece_off[id];
        if (n > v->max_piece) v->max_piece = n;
    }
    v->pieces = b.data;
    return HEARTH_OK;
}

/* The piece of a valid id; control and unknown tokens are empty unless
 * `special`. */
static const char *piece_of(const hl_vocab *v, int32_t id, bool special, size_t *len) {
    if (!special && (v->attr[id] & (HL_ATTR_UNKNOWN | HL_ATTR_CONTROL))) {
        *len = 0;
        return "";
    }
    *len = v->piece_off[id + 1] - v->piece_off[id];
    return v->pieces + v->piece_off[id];
}

static hearth_status check_id(const hl_vocab *v, int32_t id) {
    if (id < 0 || id >= v->n_tokens) {
        return hl_fail(HEARTH_ERR_INVALID_ARG, "token id %d is out of range [0, %d)", id, v->n_tokens);
    }
    return HEARTH_OK;
}

hearth_status hl_vocab_token_to_piece(const hl_vocab *v, int32_t id, bool special, char *buf, size_t size,
                                      size_t *len) {
    if (!v || !len || (!buf && size)) return hl_fail(HEARTH_ERR_INVALID_ARG, "token_to_piece: NULL argument");
    HL_TRY(check_id(v, id));
    const char *piece = piece_of(v, id, special, len);
    if (*len > size) {
        return hl_fail(HEARTH_ERR_BUFFER_TOO_SMALL, "token %d needs %zu bytes, the buffer holds %zu", id, *len, size);
    }
    if (*len) memcpy(buf, piece, *len);
    return HEARTH_OK;
}

/* ------------------------------------------------- streaming detokenizer -- */

struct hl_detok {
    const hl_vocab *v;
    bool special;
    uint8_t held[3]; /* the start of a character whose other bytes have not come yet */
    size_t n_held;
    uint8_t *scratch; /* [3 + max_piece] held bytes, then the new piece */
};

static const uint8_t REPLACEMENT[3] = {0xEF, 0xBF, 0xBD}; /* U+FFFD */

static void emit(uint8_t *out, size_t *k, const uint8_t *s, size_t n) {
    if (out) memcpy(out + *k, s, n);
    *k += n;
}

/* Copies the well-formed UTF-8 of s[0, n) to out (NULL: only count), each
 * maximal ill-formed subsequence replaced by U+FFFD (Unicode 15, section 3.9,
 * "U+FFFD Substitution of Maximal Subparts", as WHATWG and Python decode).
 * Stops before a character that is incomplete at the end and returns the
 * bytes consumed; *out_len receives the bytes written. */
static size_t sanitize(const uint8_t *s, size_t n, uint8_t *out, size_t *out_len) {
    size_t i = 0, k = 0;
    while (i < n) {
        size_t ok;
        const size_t len = hl_utf8_strict(s + i, n - i, &ok);
        if (len == 0) {
            emit(out, &k, REPLACEMENT, 3);
            i++;
            continue;
        }
        if (ok == len) {
            emit(out, &k, s + i, len);
        } else if (i + ok == n) {
            break; /* incomplete: keep for the next token */
        } else {
            emit(out, &k, REPLACEMENT, 3);
        }
        i += ok;
    }
    *out_len = k;
    return i;
}

hearth_status hl_detok_init(const hl_vocab *v, bool special, hl_detok **out) {
    if (!out) return hl_fail(HEARTH_ERR_INVALID_ARG, "detok_init: out is NULL");
    *out = NULL;
    if (!v) return hl_fail(HEARTH_ERR_INVALID_ARG, "detok_init: vocabulary is NULL");
    hl_detok *d = hl_calloc(1, sizeof *d);
    if (!d) return HEARTH_ERR_OUT_OF_MEMORY;
    d->scratch = hl_malloc(sizeof d->held + v->max_piece);
    if (!d->scratch) {
        free(d);
        return HEARTH_ERR_OUT_OF_MEMORY;
    }
    d->v = v;
    d->special = special;
    *out = d;
    return HEARTH_OK;
}

void hl_detok_free(hl_detok *d) {
    if (!d) return;
    free(d->scratch);
    free(d);
}

hearth_status hl_detok_push(hl_detok *d, int32_t id, char *buf, size_t size, size_t *len) {
    if (!d || !len || (!buf && size)) return hl_fail(HEARTH_ERR_INVALID_ARG, "detok_push: NULL argument");
    HL_TRY(check_id(d->v, id));
    size_t n_piece;
    const char *piece = piece_of(d->v, id, d->special, &n_piece);
    memcpy(d->scratch, d->held, d->n_held);
    memcpy(d->scratch + d->n_held, piece, n_piece);
    const size_t n = d->n_held + n_piece;
    const size_t used = sanitize(d->scratch, n, NULL, len);
    if (*len > size) {
        return hl_fail(HEARTH_ERR_BUFFER_TOO_SMALL, "detok_push: token %d needs %zu bytes, the buffer holds %zu", id,
                       *len, size);
    }
    sanitize(d->scratch, n, (uint8_t *)buf, len);
    d->n_held = n - used;
    memcpy(d->held, d->scratch + used, d->n_held);
    return HEARTH_OK;
}

hearth_status hl_detok_flush(hl_detok *d, char *buf, size_t size, size_t *len) {
    if (!d || !len || (!buf && size)) return hl_fail(HEARTH_ERR_INVALID_ARG, "detok_flush: NULL argument");
    *len = d->n_held ? sizeof REPLACEMENT : 0;
    if (*len > size) {
        return hl_fail(HEARTH_ERR_BUFFER_TOO_SMALL, "detok_flush: needs %zu bytes, the buffer holds %zu", *len, size);
    }
    if (*len) memcpy(buf, REPLACEMENT, sizeof REPLACEMENT);
    d->n_held = 0;
    return HEARTH_OK;
}
