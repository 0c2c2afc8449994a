/* Loading a vocabulary from GGUF metadata (the tokenizer.* keys) and its
 * getters. What is read, the defaults, and the checks follow llama.cpp's
 * llama_vocab::impl::load() (src/llama-vocab.cpp), except that a special
 * token id out of range in the file is an error here (llama.cpp warns and
 * ignores it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "text/vocab_impl.h"

/* tokenizer.ggml.token_type values (llama.cpp's llama_token_type) */
enum { TYPE_NORMAL = 1, TYPE_UNKNOWN, TYPE_CONTROL, TYPE_USER_DEFINED, TYPE_UNUSED, TYPE_BYTE };

static uint8_t attr_of_type(int32_t type) {
    switch (type) {
    case TYPE_NORMAL: return HL_ATTR_NORMAL;
    case TYPE_UNKNOWN: return HL_ATTR_UNKNOWN;
    case TYPE_CONTROL: return HL_ATTR_CONTROL;
    case TYPE_USER_DEFINED: return HL_ATTR_USER_DEFINED;
    case TYPE_UNUSED: return HL_ATTR_UNUSED;
    case TYPE_BYTE: return HL_ATTR_BYTE;
    default: return 0; /* undefined */
    }
}

/* tokenizer.ggml.model: "gpt2" (byte-level BPE), "llama" (SentencePiece) or
 * "bert" (WordPiece). */
static hearth_status read_model(const gguf_file *f, hl_vocab *v) {
    gguf_str model;
    HL_TRY(hl_gguf_get_str(f, "tokenizer.ggml.model", true, &model));
    if (hl_gguf_str_eq(model, "gpt2")) {
        v->type = HL_VOCAB_BPE;
    } else if (hl_gguf_str_eq(model, "llama")) {
        v->type = HL_VOCAB_SPM;
    } else if (hl_gguf_str_eq(model, "bert")) {
        v->type = HL_VOCAB_WPM;
    } else {
        return hl_fail(HEARTH_ERR_UNSUPPORTED, "tokenizer model '%.*s' is not supported (supported: gpt2, llama, bert)",
                       (int)(model.len > 64 ? 64 : model.len), model.data);
    }
    return HEARTH_OK;
}

static hearth_status add_token_text(hl_vocab *v, int32_t i, gguf_str s) {
    char empty_name[32];
    const char *text = s.data;
    size_t len = hl_gguf_c_len(s);
    if (len == 0) { /* as llama.cpp names empty tokens */
        len = (size_t)snprintf(empty_name, sizeof empty_name, "[EMPTY_%d]", i);
        text = empty_name;
    }
    int32_t id;
    bool added;
    HL_TRY(hl_strtab_intern(&v->texts, text, len, &id, &added));
    if (!added) { /* llama.cpp aborts on these (token_to_id would lose one) */
        return hl_fail(HEARTH_ERR_FORMAT, "tokenizer.ggml.tokens: token %d '%.*s' duplicates token %d", i,
                       (int)(len > 64 ? 64 : len), text, id);
    }
    return HEARTH_OK;
}

static hearth_status load_tokens(hl_vocab *v, const gguf_array *tokens, const gguf_array *types) {
    if (tokens->n == 0) return hl_fail(HEARTH_ERR_FORMAT, "tokenizer.ggml.tokens is empty");
    if (tokens->n > INT32_MAX) {
        return hl_fail(HEARTH_ERR_FORMAT, "tokenizer.ggml.tokens has %llu tokens, more than 2^31 - 1",
                       (unsigned long long)tokens->n);
    }
    if (types && types->n != tokens->n) {
        return hl_fail(HEARTH_ERR_FORMAT, "tokenizer.ggml.token_type has %llu entries for %llu tokens",
                       (unsigned long long)types->n, (unsigned long long)tokens->n);
    }
    v->n_tokens = (int32_t)tokens->n;
    v->attr = hl_malloc((size_t)v->n_tokens);
    v->eog = hl_calloc((size_t)v->n_tokens, sizeof *v->eog);
    if (!v->attr || !v->eog) return HEARTH_ERR_OUT_OF_MEMORY;
    HL_TRY(hl_strtab_init(&v->texts, v->n_tokens));
    for (int32_t i = 0; i < v->n_tokens; i++) {
        HL_TRY(add_token_text(v, i, tokens->strs[i]));
        v->attr[i] = types ? attr_of_type(hl_gguf_arr_i32(types, (uint64_t)i)) : HL_ATTR_NORMAL;
    }
    return HEARTH_OK;
}

/* The settings llama.cpp ties to the tokenizer type: for BPE, the
 * pre-tokenizer (tokenizer.ggml.pre) and what it implies; SentencePiece
 * ignores that key, adds BOS and a space prefix unless the file says not to;
 * WordPiece ignores it too ("bert-bge" and the like name the same algorithm)
 * and, asked for special tokens, always adds [CLS] (BOS) and [SEP]. */
static hearth_status load_type_settings(const gguf_file *f, hl_vocab *v) {
    if (v->type == HL_VOCAB_WPM) {
        v->add_bos = v->add_eos = true;
        return HEARTH_OK;
    }
    if (v->type == HL_VOCAB_SPM) {
        v->add_bos = true;
        v->add_space_prefix = true;
        return hl_gguf_get_bool(f, "tokenizer.ggml.add_space_prefix", false, &v->add_space_prefix);
    }
    gguf_str pre = {NULL, 0};
    HL_TRY(hl_gguf_get_str(f, "tokenizer.ggml.pre", false, &pre));
    HL_TRY(hl_pretok_init(pre.data ? &pre : NULL, &v->pre));
    v->ignore_merges = hl_pretok_ignore_merges(v->pre);
    v->add_bos = hl_pretok_add_bos(v->pre);
    return HEARTH_OK;
}

/* An id llama.cpp uses when the file names none, if in range. */
static int32_t default_id(const hl_vocab *v, int32_t id) { return id < v->n_tokens ? id : -1; }

/* Special token ids. Without keys, a "gpt2" vocabulary has bos = eos = 11, a
 * "llama" one bos = 1, eos = 2, unk = 0 and a "bert" one bos ([CLS]) = 101,
 * no eos, unk = 100, sep = 102, pad = 0 (llama.cpp's defaults per type). */
static hearth_status load_special_ids(const gguf_file *f, hl_vocab *v) {
    const bool spm = v->type == HL_VOCAB_SPM, wpm = v->type == HL_VOCAB_WPM;
    v->bos = default_id(v, spm ? 1 : wpm ? 101 : 11);
    v->eos = wpm ? -1 : default_id(v, spm ? 2 : 11);
    v->unk = spm ? default_id(v, 0) : wpm ? default_id(v, 100) : -1;
    v->sep = wpm ? default_id(v, 102) : -1;
    v->eot = v->eom = -1;
    v->pad = wpm ? default_id(v, 0) : -1;
    v->fim_pre = v->fim_suf = v->fim_mid = v->fim_pad = v->fim_rep = v->fim_sep = -1;
    const struct {
        const char *key;
        int32_t *id;
    } keys[] = {
        {"tokenizer.ggml.bos_token_id", &v->bos},         {"tokenizer.ggml.eos_token_id", &v->eos},
        {"tokenizer.ggml.eot_token_id", &v->eot},         {"tokenizer.ggml.eom_token_id", &v->eom},
        {"tokenizer.ggml.unknown_token_id", &v->unk},     {"tokenizer.ggml.padding_token_id", &v->pad},
        {"tokenizer.ggml.seperator_token_id", &v->sep}, /* gguf-py's spelling */
        {"tokenizer.ggml.fim_pre_token_id", &v->fim_pre}, {"tokenizer.ggml.fim_suf_token_id", &v->fim_suf},
        {"tokenizer.ggml.fim_mid_token_id", &v->fim_mid}, {"tokenizer.ggml.fim_pad_token_id", &v->fim_pad},
        {"tokenizer.ggml.fim_rep_token_id", &v->fim_rep}, {"tokenizer.ggml.fim_sep_token_id", &v->fim_sep},
        {"tokenizer.ggml.prefix_token_id", &v->fim_pre}, /* deprecated names */
        {"tokenizer.ggml.suffix_token_id", &v->fim_suf},  {"tokenizer.ggml.middle_token_id", &v->fim_mid},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (!hl_gguf_find_kv(f, keys[i].key)) continue;
        uint32_t id;
        HL_TRY(hl_gguf_get_u32(f, keys[i].key, true, &id));
        if (id >= (uint32_t)v->n_tokens) {
            return hl_fail(HEARTH_ERR_FORMAT, "%s = %u is out of range: the vocabulary has %d tokens", keys[i].key, id,
                           v->n_tokens);
        }
        *keys[i].id = (int32_t)id;
    }
    return HEARTH_OK;
}

/* llama.cpp's add_bos, add_eos and add_sep of a reranker's prompt: the
 * type's defaults (WordPiece: BOS and SEP, no EOS; else as tokenizing
 * adds them), then the file's keys. */
static hearth_status load_pair_flags(const gguf_file *f, hl_vocab *v) {
    const bool wpm = v->type == HL_VOCAB_WPM;
    v->pair_bos = wpm || v->add_bos;
    v->pair_eos = !wpm && v->add_eos;
    v->pair_sep = wpm;
    HL_TRY(hl_gguf_get_bool(f, "tokenizer.ggml.add_bos_token", false, &v->pair_bos));
    HL_TRY(hl_gguf_get_bool(f, "tokenizer.ggml.add_eos_token", false, &v->pair_eos));
    HL_TRY(hl_gguf_get_bool(f, "tokenizer.ggml.add_sep_token", false, &v->pair_sep));
    if ((v->pair_bos && v->bos < 0) || (v->pair_eos && v->eos < 0 && v->sep < 0) || (v->pair_sep && v->sep < 0)) {
        return hl_fail(HEARTH_ERR_FORMAT, "tokenizer.ggml.add_bos/eos/sep_token asks for a special token (BOS, EOS or "
                                          "tokenizer.ggml.seperator_token_id) the vocabulary does not have");
    }
    return HEARTH_OK;
}

static hearth_status load_add_flags(const gguf_file *f, hl_vocab *v) {
    if (v->type == HL_VOCAB_WPM) { /* llama.cpp's WPM tokenizing ignores the flags (its reranker prompt does not) */
        if (v->bos < 0 || v->sep < 0) {
            return hl_fail(HEARTH_ERR_FORMAT, "a WordPiece vocabulary needs [CLS] (tokenizer.ggml.bos_token_id) and "
                                              "[SEP] (tokenizer.ggml.seperator_token_id); the file lacks one");
        }
        return load_pair_flags(f, v);
    }
    HL_TRY(hl_gguf_get_bool(f, "tokenizer.ggml.add_bos_token", false, &v->add_bos));
    HL_TRY(hl_gguf_get_bool(f, "tokenizer.ggml.add_eos_token", false, &v->add_eos));
    if (v->add_bos && v->bos < 0) {
        return hl_fail(HEARTH_ERR_FORMAT, "tokenizer.ggml.add_bos_token is true but the vocabulary has no BOS token");
    }
    if (v->add_eos && v->eos < 0) {
        return hl_fail(HEARTH_ERR_FORMAT, "tokenizer.ggml.add_eos_token is true but the vocabulary has no EOS token");
    }
    return load_pair_flags(f, v);
}

static hearth_status load(const gguf_file *f, hl_vocab *v) {
    const gguf_array *tokens, *types = NULL, *merges = NULL;
    HL_TRY(read_model(f, v));
    HL_TRY(hl_gguf_get_arr(f, "tokenizer.ggml.tokens", true, GGUF_TYPE_STRING, &tokens));
    HL_TRY(hl_gguf_get_arr(f, "tokenizer.ggml.token_type", false, GGUF_TYPE_INT32, &types));
    if (v->type == HL_VOCAB_BPE) HL_TRY(hl_gguf_get_arr(f, "tokenizer.ggml.merges", true, GGUF_TYPE_STRING, &merges));
    HL_TRY(load_tokens(v, tokens, types));
    HL_TRY(load_type_settings(f, v));
    HL_TRY(load_special_ids(f, v));
    HL_TRY(load_add_flags(f, v));
    HL_TRY(hl_special_init(v));
    if (v->type == HL_VOCAB_WPM) {
        hl_wpm_init(v);
    } else {
        HL_TRY(v->type == HL_VOCAB_BPE ? hl_bpe_init(v, merges) : hl_spm_init(v, f));
    }
    return hl_pieces_init(v);
}

hearth_status hl_vocab_load(const gguf_file *f, hl_vocab **out) {
    if (!out) return hl_fail(HEARTH_ERR_INVALID_ARG, "hl_vocab_load: out is NULL");
    *out = NULL;
    if (!f) return hl_fail(HEARTH_ERR_INVALID_ARG, "hl_vocab_load: file is NULL");
    hl_vocab *v = hl_calloc(1, sizeof *v);
    if (!v) return HEARTH_ERR_OUT_OF_MEMORY;
    hearth_status st = load(f, v);
    if (st != HEARTH_OK) {
        hl_vocab_free(v);
        return st;
    }
    *out = v;
    return HEARTH_OK;
}

void hl_vocab_free(hl_vocab *v) {
    if (!v) return;
    hl_strtab_free(&v->texts);
    free(v->attr);
    free(v->eog);
    free(v->pieces);
    free(v->piece_off);
    hl_bpe_free(v);
    free(v->scores);
    hl_special_free(v);
    hl_pretok_free(v->pre);
    free(v);
}

int32_t hl_vocab_n_tokens(const hl_vocab *v) { return v->n_tokens; }
int32_t hl_vocab_bos(const hl_vocab *v) { return v->bos; }
int32_t hl_vocab_eos(const hl_vocab *v) { return v->eos; }
int32_t hl_vocab_eot(const hl_vocab *v) { return v->eot; }
int32_t hl_vocab_pad(const hl_vocab *v) { return v->pad; }
int32_t hl_vocab_unk(const hl_vocab *v) { return v->unk; }

bool hl_vocab_is_eog(const hl_vocab *v, int32_t id) { return id >= 0 && id < v->n_tokens && v->eog[id]; }
