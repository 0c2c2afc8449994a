/* Unicode helpers for the byte-level BPE tokenizer: UTF-8 decoding exactly as
 * llama.cpp's tokenizer does it (lenient, so that any byte string tokenizes),
 * UTF-8 encoding, the pre-tokenizer class of a code point (from llama.cpp's
 * tables, see unicode_data.c), and GPT-2's bytes_to_unicode() mapping that
 * lets a vocabulary of printable strings stand for arbitrary bytes. */
#ifndef HEARTH_TEXT_UNICODE_H
#define HEARTH_TEXT_UNICODE_H

#include <stddef.h>
#include <stdint.h>

#define HL_CPT_REPLACEMENT 0xFFFDu

/* Decodes the code point starting at s[0] (n > 0 bytes available) and sets
 * *len to the bytes it used. Mirrors unicode_cpt_from_utf8() in llama.cpp's
 * src/unicode.cpp: the lead byte alone decides the length, continuation bytes
 * must be 10xxxxxx, and overlong forms and surrogates are accepted as they
 * decode. A bad lead byte or a short/broken sequence gives U+FFFD for one byte
 * (unicode_cpts_from_utf8). Values above U+10FFFF, on which llama.cpp throws,
 * also give U+FFFD. */
uint32_t hl_utf8_decode(const uint8_t *s, size_t n, size_t *len);

/* Strict UTF-8 (Unicode 15, section 3.9, table 3-7: no overlong forms, no
 * surrogates, nothing above U+10FFFF) of the character starting at s[0]
 * (n > 0 bytes available): returns the length its lead byte calls for, 1..4,
 * or 0 when s[0] cannot start a character; *ok receives how many of its
 * first bytes are well formed (== the length for a whole, valid character;
 * less where a byte breaks it or the input ends). */
size_t hl_utf8_strict(const uint8_t *s, size_t n, size_t *ok);

/* Writes cpt (<= U+10FFFF) as UTF-8 into out; returns the byte count 1..4. */
size_t hl_utf8_encode(uint32_t cpt, uint8_t out[4]);

/* The character classes the supported pre-tokenizer regexes distinguish. */
typedef enum hl_uclass {
    HL_UCLASS_OTHER = 0,
    HL_UCLASS_LETTER, /* \p{L} */
    HL_UCLASS_NUMBER, /* \p{N} */
    HL_UCLASS_PUNCT,  /* \p{P} */
    HL_UCLASS_SPACE,  /* \s (Unicode White_Space) */
    HL_UCLASS_COUNT
} hl_uclass;

typedef struct hl_urange {
    uint32_t first, last;
    uint8_t cls; /* hl_uclass */
} hl_urange;

/* Generated table (unicode_data.c): sorted, disjoint, non-ASCII only. */
extern const hl_urange hl_unicode_ranges[];
extern const size_t hl_unicode_n_ranges;

/* Class of a non-ASCII code point as llama.cpp's tables give it. */
hl_uclass hl_unicode_class(uint32_t cpt);

/* GPT-2 bytes_to_unicode() (openai/gpt-2 src/encoder.py): the code point that
 * stands for byte b in vocabulary strings. */
uint32_t hl_byte_to_cpt(uint8_t b);

/* The inverse: the byte code point cpt stands for, or -1 when cpt is not one of
 * the 256 code points of the mapping. */
int hl_cpt_to_byte(uint32_t cpt);

#endif
