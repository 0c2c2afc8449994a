/* The generated character tables of BERT's basic tokenizer (wordpiece_data.c,
 * written by gen_wordpiece_data.py from Hugging Face tokenizers) that
 * wordpiece.c uses. Internal to src/text/. */
#ifndef HEARTH_TEXT_WORDPIECE_H
#define HEARTH_TEXT_WORDPIECE_H

#include <stddef.h>
#include <stdint.h>

enum { HL_WP_OTHER = 0, HL_WP_SPACE = 1, HL_WP_PUNCT = 2, HL_WP_DROP = 3 };

typedef struct hl_wp_range {
    uint32_t first, last;
    uint8_t cls; /* HL_WP_* */
} hl_wp_range;

/* A code point the normalizer replaces: by hl_wp_map_cpts[off, off + len). */
typedef struct hl_wp_map_entry {
    uint32_t cp;
    uint16_t off;
    uint8_t len;
} hl_wp_map_entry;

/* Sorted, disjoint: whitespace and punctuation (what BertPreTokenizer splits on). */
extern const hl_wp_range hl_wp_class[];
extern const size_t hl_wp_n_class;
/* Sorted, disjoint: the code points BertNormalizer removes. */
extern const hl_wp_range hl_wp_drop[];
extern const size_t hl_wp_n_drop;
/* Sorted by cp. */
extern const hl_wp_map_entry hl_wp_map[];
extern const size_t hl_wp_n_map;
extern const uint32_t hl_wp_map_cpts[];

#endif
