/* Unicode helpers for the tokenizer (see unicode.h): llama.cpp-compatible
 * UTF-8 decoding, encoding, code point classes and GPT-2's byte mapping. */
#include "text/unicode.h"

static int is_cont(uint8_t b) { return (b & 0xC0) == 0x80; }

uint32_t hl_utf8_decode(const uint8_t *s, size_t n, size_t *len) {
    const uint8_t b = s[0];
    *len = 1;
    if (!(b & 0x80)) return b;
    if (!(b & 0x40)) return HL_CPT_REPLACEMENT; /* stray continuation byte */
    if (!(b & 0x20)) {
        if (n < 2 || !is_cont(s[1])) return HL_CPT_REPLACEMENT;
        *len = 2;
        return ((uint32_t)(b & 0x1F) << 6) | (s[1] & 0x3F);
    }
    if (!(b & 0x10)) {
        if (n < 3 || !is_cont(s[1]) || !is_cont(s[2])) return HL_CPT_REPLACEMENT;
        *len = 3;
        return ((uint32_t)(b & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    }
    if (!(b & 0x08)) {
        if (n < 4 || !is_cont(s[1]) || !is_cont(s[2]) || !is_cont(s[3])) return HL_CPT_REPLACEMENT;
        *len = 4;
        uint32_t cpt = ((uint32_t)(b & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) | ((uint32_t)(s[2] & 0x3F) << 6) |
                       (s[3] & 0x3F);
        return cpt <= 0x10FFFF ? cpt : HL_CPT_REPLACEMENT;
    }
    return HL_CPT_REPLACEMENT; /* 0xF8..0xFF */
}

size_t hl_utf8_strict(const uint8_t *s, size_t n, size_t *ok) {
    const uint8_t b = s[0];
    size_t need;                  /* continuation bytes */
    uint8_t lo = 0x80, hi = 0xBF; /* range of the second byte (table 3-7) */
    *ok = 0;
    if (b < 0x80) {
        need = 0;
    } else if (b >= 0xC2 && b <= 0xDF) {
        need = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
        need = 2;
        lo = b == 0xE0 ? 0xA0 : 0x80;
        hi = b == 0xED ? 0x9F : 0xBF;
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 3;
        lo = b == 0xF0 ? 0x90 : 0x80;
        hi = b == 0xF4 ? 0x8F : 0xBF;
    } else {
        return 0;
    }
    size_t j = 1;
    for (; j <= need && j < n; j++) {
        const uint8_t c = s[j];
        if (c < (j == 1 ? lo : 0x80) || c > (j == 1 ? hi : 0xBF)) break;
    }
    *ok = j;
    return need + 1;
}

size_t hl_utf8_encode(uint32_t cpt, uint8_t out[4]) {
    if (cpt < 0x80) {
        out[0] = (uint8_t)cpt;
        return 1;
    }
    if (cpt < 0x800) {
        out[0] = (uint8_t)(0xC0 | (cpt >> 6));
        out[1] = (uint8_t)(0x80 | (cpt & 0x3F));
        return 2;
    }
    if (cpt < 0x10000) {
        out[0] = (uint8_t)(0xE0 | (cpt >> 12));
        out[1] = (uint8_t)(0x80 | ((cpt >> 6) & 0x3F));
        out[2] = (uint8_t)(0x80 | (cpt & 0x3F));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | (cpt >> 18));
    out[1] = (uint8_t)(0x80 | ((cpt >> 12) & 0x3F));
    out[2] = (uint8_t)(0x80 | ((cpt >> 6) & 0x3F));
    out[3] = (uint8_t)(0x80 | (cpt & 0x3F));
    return 4;
}

hl_uclass hl_unicode_class(uint32_t cpt) {
    size_t lo = 0, hi = hl_unicode_n_ranges;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cpt < hl_unicode_ranges[mid].first) {
            hi = mid;
        } else if (cpt > hl_unicode_ranges[mid].last) {
            lo = mid + 1;
        } else {
            return (hl_uclass)hl_unicode_ranges[mid].cls;
        }
    }
    return HL_UCLASS_OTHER;
}

/* bytes_to_unicode(): the printable bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF
 * stand for themselves; the other 68 bytes (0x00..0x20, 0x7F..0xA0, 0xAD), in
 * order, take U+0100..U+0143. */
static int byte_is_printable(unsigned b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

uint32_t hl_byte_to_cpt(uint8_t b) {
    if (byte_is_printable(b)) return b;
    if (b <= 0x20) return 0x100 + b;
    if (b <= 0xA0) return 0x100 + 33 + (b - 0x7Fu);
    return 0x100 + 67; /* 0xAD */
}

int hl_cpt_to_byte(uint32_t cpt) {
    if (cpt < 0x100) return byte_is_printable(cpt) ? (int)cpt : -1;
    if (cpt > 0x100 + 67) return -1;
    uint32_t n = cpt - 0x100;
    if (n <= 32) return (int)n;
    if (n <= 66) return (int)(0x7F + n - 33);
    return 0xAD;
}
