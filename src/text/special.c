/* Special tokens: the ones llama.cpp recognises by their text when the file
 * does not name them (end of turn, fill-in-the-middle, end of generation),
 * the list of tokens the tokenizer looks for verbatim in the text, and a byte
 * trie of their texts that finds in one pass which of them a text holds (so
 * that a vocabulary with thousands, like Gemma's, costs only those present).
 * Source: llama_vocab::impl::load() in llama.cpp's src/llama-vocab.cpp. */
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "text/vocab_impl.h"

/* Texts by which llama.cpp finds a token that the file leaves unset. */
static const char *const EOT_TEXTS[] = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "<\xef\xbd\x9c"
    "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>", /* <｜end▁of▁sentence｜> */
    "<end_of_utterance>",
    NULL};
static const char *const EOM_TEXTS[] = {"<|eom_id|>", NULL};
static const char *const FIM_PRE_TEXTS[] = {"<|fim_prefix|>",
                                            "<fim-prefix>",
                                            "<fim_prefix>",
                                            "<\xef\xbd\x9c"
                                            "fim\xe2\x96\x81"
                                            "begin\xef\xbd\x9c>",
                                            "<PRE>",
                                            "\xe2\x96\x81<PRE>",
                                            "<|code_prefix|>",
                                            "<|prefix|>",
                                            NULL};
static const char *const FIM_SUF_TEXTS[] = {"<|fim_suffix|>",
                                            "<fim-suffix>",
                                            "<fim_suffix>",
                                            "<\xef\xbd\x9c"
                                            "fim\xe2\x96\x81hole\xef\xbd\x9c>",
                                            "<SUF>",
                                            "\xe2\x96\x81<SUF>",
                                            "<|code_suffix|>",
                                            "<|suffix|>",
                                            NULL};
static const char *const FIM_MID_TEXTS[] = {"<|fim_middle|>",
                                            "<fim-middle>",
                                            "<fim_middle>",
                                            "<\xef\xbd\x9c"
                                            "fim\xe2\x96\x81"
                                            "end\xef\xbd\x9c>",
                                            "<MID>",
                                            "\xe2\x96\x81<MID>",
                                            "<|code_middle|>",
                                            "<|middle|>",
                                            NULL};
static const char *const FIM_PAD_TEXTS[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", NULL};
static const char *const FIM_REP_TEXTS[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>",
                                            "<REPO>",       "<reponame>",    NULL};
static const char *const FIM_SEP_TEXTS[] = {"<|file_sep|>", NULL};

/* Every token with one of these texts ends generation. llama.cpp also drops
 * <|end|> when <|return|> and <|call|> exist (gpt-oss), and </s> next to
 * <|tool_response>; no pre-tokenizer hearth supports serves those vocabularies. */
static const char *const EOG_TEXTS[] = {"<|eot_id|>",
                                        "<|im_end|>",
                                        "<|end|>",
                                        "<|return|>",
                                        "<|call|>",
                                        "<|flush|>",
                                        "<|calls|>",
                                        "<end_of_turn>",
                                        "<|endoftext|>",
                                        "</s>",
                                        "<|eom_id|>",
                                        "<EOT>",
                                        "_<EOT>",
                                        "[EOT]",
                                        "[EOS]",
                                        "<|end_of_text|>",
                                        "<end_of_utterance>",
                                        "<eos>",
                                        "<turn|>",
                                        "<|tool_response>",
                                        "<\xef\xbd\x9c"
                                        "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
                                        "[e~[",
                                        NULL};

static int32_t find_text(const hl_vocab *v, const char *text) { return hl_strtab_find(&v->texts, text, strlen(text)); }

/* The token for an id the file leaves unset, made CONTROL. llama.cpp takes the
 * first match while walking its token_to_id unordered_map, an order it does
 * not define; hearth takes the lowest id, which agrees with llama.cpp for
 * SmolLM2 (eot = <|endoftext|>, 0, rather than <|im_end|>, 2). */
static void detect(hl_vocab *v, int32_t *id, const char *const *texts) {
    if (*id >= 0) return;
    for (int i = 0; texts[i]; i++) {
        int32_t t = find_text(v, texts[i]);
        if (t >= 0 && (*id < 0 || t < *id)) *id = t;
    }
    if (*id >= 0) v->attr[*id] |= HL_ATTR_CONTROL;
}

static void mark_eog(hl_vocab *v, int32_t id) {
    if (id >= 0) v->eog[id] = true;
}

typedef struct special_key {
    size_t len;
    int32_t id;
} special_key;

/* Longest first (llama.cpp's cache_special_tokens); ties by id, where
 * llama.cpp's std::sort leaves the order unspecified. */
static int cmp_special(const void *pa, const void *pb) {
    const special_key *a = pa, *b = pb;
    if (a->len != b->len) return a->len > b->len ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

static hearth_status list_special(hl_vocab *v) {
    const uint8_t kinds = HL_ATTR_CONTROL | HL_ATTR_USER_DEFINED | HL_ATTR_UNKNOWN;
    int32_t n = 0;
    for (int32_t t = 0; t < v->n_tokens; t++) n += (v->attr[t] & kinds) != 0;
    special_key *keys = hl_malloc((size_t)n * sizeof *keys);
    v->special = hl_malloc((size_t)n * sizeof *v->special);
    if (!keys || !v->special) {
        free(keys);
        return HEARTH_ERR_OUT_OF_MEMORY;
    }
    n = 0;
    for (int32_t t = 0; t < v->n_tokens; t++) {
        if (!(v->attr[t] & kinds)) continue;
        size_t len;
        hl_strtab_str(&v->texts, t, &len);
        keys[n++] = (special_key){len, t};
    }
    qsort(keys, (size_t)n, sizeof *keys, cmp_special);
    for (int32_t i = 0; i < n; i++) v->special[i] = keys[i].id;
    v->n_special = n;
    free(keys);
    return HEARTH_OK;
}

/* ------------------------------------------------------------ the trie -- */

static size_t edge_slot(const hl_special_trie *t, uint64_t key) {
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & (t->cap - 1);
}

static int32_t trie_child(const hl_special_trie *t, int32_t node, uint8_t byte) {
    if (node == 0) return t->root[byte];
    const uint64_t key = (uint64_t)node << 8 | byte;
    for (size_t i = edge_slot(t, key);; i = (i + 1) & (t->cap - 1)) {
        if (t->edges[i].child < 0 || t->edges[i].key == key) return t->edges[i].child;
    }
}

/* The child of node by byte, made when missing (the tables are sized for
 * every node up front). */
static int32_t trie_add(hl_special_trie *t, int32_t node, uint8_t byte) {
    int32_t child = trie_child(t, node, byte);
    if (child >= 0) return child;
    child = t->n_nodes++;
    t->rank[child] = -1;
    if (node == 0) {
        t->root[byte] = child;
        return child;
    }
    const uint64_t key = (uint64_t)node << 8 | byte;
    size_t i = edge_slot(t, key);
    while (t->edges[i].child >= 0) i = (i + 1) & (t->cap - 1);
    t->edges[i] = (hl_trie_edge){key, child};
    return child;
}

static hearth_status build_trie(hl_vocab *v) {
    hl_special_trie *t = &v->trie;
    size_t max_nodes = 1;
    for (int32_t r = 0; r < v->n_special; r++) {
        size_t len;
        hl_strtab_str(&v->texts, v->special[r], &len);
        max_nodes += len;
    }
    if (max_nodes > INT32_MAX / 2) return hl_fail(HEARTH_ERR_UNSUPPORTED, "the special tokens are too long in total");
    t->cap = 16;
    while (t->cap < 2 * max_nodes) t->cap *= 2;
    t->rank = hl_malloc(max_nodes * sizeof *t->rank);
    t->edges = hl_malloc(t->cap * sizeof *t->edges);
    if (!t->rank || !t->edges) return HEARTH_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < t->cap; i++) t->edges[i].child = -1;
    for (int b = 0; b < 256; b++) t->root[b] = -1;
    t->rank[0] = -1;
    t->n_nodes = 1;
    for (int32_t r = 0; r < v->n_special; r++) {
        size_t len;
        const uint8_t *text = (const uint8_t *)hl_strtab_str(&v->texts, v->special[r], &len);
        int32_t node = 0;
        for (size_t i = 0; i < len; i++) node = trie_add(t, node, text[i]);
        t->rank[node] = r; /* texts are distinct, so each node ends at most one */
    }
    return HEARTH_OK;
}

void hl_special_find(const hl_vocab *v, const char *text, size_t len, bool *present) {
    const hl_special_trie *t = &v->trie;
    const uint8_t *s = (const uint8_t *)text;
    for (size_t i = 0; i < len; i++) {
        int32_t node = t->root[s[i]];
        for (size_t j = i + 1; node >= 0; j++) {
            if (t->rank[node] >= 0) present[t->rank[node]] = true;
            if (j == len) break;
            node = trie_child(t, node, s[j]);
        }
    }
}

void hl_special_free(hl_vocab *v) {
    free(v->trie.rank);
    free(v->trie.edges);
    free(v->special);
}

/* ------------------------------------------------------------- loading -- */

hearth_status hl_special_init(hl_vocab *v) {
    detect(v, &v->eot, EOT_TEXTS);
    detect(v, &v->eom, EOM_TEXTS);
    detect(v, &v->fim_pre, FIM_PRE_TEXTS);
    detect(v, &v->fim_suf, FIM_SUF_TEXTS);
    detect(v, &v->fim_mid, FIM_MID_TEXTS);
    detect(v, &v->fim_pad, FIM_PAD_TEXTS);
    detect(v, &v->fim_rep, FIM_REP_TEXTS);
    detect(v, &v->fim_sep, FIM_SEP_TEXTS);

    mark_eog(v, v->fim_pad);
    mark_eog(v, v->fim_rep);
    mark_eog(v, v->fim_sep);
    for (int i = 0; EOG_TEXTS[i]; i++) {
        int32_t t = find_text(v, EOG_TEXTS[i]);
        if (t < 0) continue;
        mark_eog(v, t);
        v->attr[t] |= HL_ATTR_CONTROL;
    }
    mark_eog(v, v->eos);
    mark_eog(v, v->eot);
    mark_eog(v, v->eom);
    HL_TRY(list_special(v));
    return build_trie(v);
}
