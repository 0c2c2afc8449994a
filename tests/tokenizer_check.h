/* Helpers shared by the tokenizer tests (test_tokenizer.c: byte-level BPE,
 * test_tokenizer_spm.c: SentencePiece): tokenize and detokenize through the
 * internal vocabulary API, and compare with the llama.cpp fixtures of
 * tests/reference/tokenizer/ (cases of {"hex", "utf8", "special", "plain",
 * "detok"}, the special ids, a checksum over every token's piece). */
#ifndef HEARTH_TESTS_TOKENIZER_CHECK_H
#define HEARTH_TESTS_TOKENIZER_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "gguf_craft.h"
#include "json_file.h"
#include "text/vocab.h"

static inline uint8_t *hex_decode(const char *hex, size_t *len) {
    *len = strlen(hex) / 2;
    uint8_t *out = malloc(*len + 1);
    if (!out) abort();
    for (size_t i = 0; i < *len; i++) {
        unsigned b;
        sscanf(hex + 2 * i, "%2x", &b);
        out[i] = (uint8_t)b;
    }
    return out;
}

/* Tokenizes, asking for the count first. The caller frees. */
static inline int32_t *tokenize(const hl_vocab *v, const uint8_t *text, size_t len, bool add_special,
                                bool parse_special, size_t *n) {
    hearth_status st = hl_vocab_tokenize(v, (const char *)text, len, add_special, parse_special, NULL, 0, n);
    CHECK(st == (*n ? HEARTH_ERR_BUFFER_TOO_SMALL : HEARTH_OK));
    int32_t *ids = malloc((*n + 1) * sizeof *ids);
    if (!ids) abort();
    size_t n2;
    st = hl_vocab_tokenize(v, (const char *)text, len, add_special, parse_special, ids, *n, &n2);
    CHECK_MSG(st == HEARTH_OK && n2 == *n, "status %d (%s), %zu vs %zu tokens", st, hearth_last_error(), n2, *n);
    return ids;
}

static inline bool ids_equal(const cJSON *expected, const int32_t *ids, size_t n) {
    if ((size_t)cJSON_GetArraySize(expected) != n) return false;
    size_t i = 0;
    for (const cJSON *e = expected->child; e; e = e->next, i++) {
        if (e->valueint != ids[i]) return false;
    }
    return true;
}

static inline void print_ids(const char *what, const int32_t *ids, size_t n) {
    fprintf(stderr, "  %s:", what);
    for (size_t i = 0; i < n && i < 40; i++) fprintf(stderr, " %d", ids[i]);
    fprintf(stderr, n > 40 ? " ...\n" : "\n");
}

/* Concatenated token_to_piece() of ids. The caller frees. */
static inline char *pieces(const hl_vocab *v, const int32_t *ids, size_t n, bool special, size_t *len) {
    size_t cap = 64, total = 0;
    char *out = malloc(cap);
    for (size_t i = 0; i < n && out; i++) {
        size_t k;
        hearth_status st = hl_vocab_token_to_piece(v, ids[i], special, out + total, cap - total, &k);
        if (st == HEARTH_ERR_BUFFER_TOO_SMALL) {
            cap = 2 * (total + k);
            out = realloc(out, cap);
            if (!out) break;
            st = hl_vocab_token_to_piece(v, ids[i], special, out + total, cap - total, &k);
        }
        CHECK(st == HEARTH_OK);
        total += k;
    }
    if (!out) abort();
    *len = total;
    return out;
}

/* The id whose (special) piece is exactly s, or -1. */
static inline int32_t find_piece(const hl_vocab *v, const char *s, size_t n) {
    char buf[256];
    for (int32_t id = 0; id < hl_vocab_n_tokens(v); id++) {
        size_t len;
        if (hl_vocab_token_to_piece(v, id, true, buf, sizeof buf, &len) == HEARTH_OK && len == n &&
            memcmp(buf, s, n) == 0) {
            return id;
        }
    }
    return -1;
}

/* ------------------------------------------------- llama.cpp reference -- */

/* Compares every case of `cases` (fixture arrays of {"hex", "special",
 * "plain"}); returns how many match under both settings. */
static inline int check_cases(const hl_vocab *v, const cJSON *inputs, const cJSON *cases, const char *name) {
    int matched = 0, total = 0;
    const cJSON *in = inputs->child;
    for (const cJSON *c = cases->child; c && in; c = c->next, in = in->next, total++) {
        size_t len, n_special, n_plain;
        uint8_t *text = hex_decode(cJSON_GetObjectItem(in, "hex")->valuestring, &len);
        int32_t *special = tokenize(v, text, len, true, true, &n_special);
        int32_t *plain = tokenize(v, text, len, true, false, &n_plain);
        const bool ok_special = ids_equal(cJSON_GetObjectItem(c, "special"), special, n_special);
        const bool ok_plain = ids_equal(cJSON_GetObjectItem(c, "plain"), plain, n_plain);
        CHECK_MSG(ok_special && ok_plain, "%s: input %d (hex %.60s) differs from llama.cpp (parse_special %s)", name,
                  total, cJSON_GetObjectItem(in, "hex")->valuestring, ok_special ? "false" : "true");
        if (!ok_special) print_ids("hearth", special, n_special);
        if (!ok_plain) print_ids("hearth (plain)", plain, n_plain);
        matched += ok_special && ok_plain;
        free(text);
        free(special);
        free(plain);
    }
    printf("%s: %d/%d corpus inputs match llama.cpp, parse_special true and false\n", name, matched, total);
    return matched;
}

static inline uint64_t fnv1a64(uint64_t h, const void *data, size_t n) {
    const uint8_t *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001B3ull;
    return h;
}

/* Every token's piece, by a checksum over (u32 length, bytes) per token. */
static inline void check_all_pieces(const hl_vocab *v, const cJSON *fixture) {
    const cJSON *sums = cJSON_GetObjectItem(fixture, "pieces_fnv1a64");
    for (int special = 0; special < 2; special++) {
        uint64_t h = 0xCBF29CE484222325ull;
        char buf[1024];
        for (int32_t id = 0; id < hl_vocab_n_tokens(v); id++) {
            size_t len;
            CHECK(hl_vocab_token_to_piece(v, id, special, buf, sizeof buf, &len) == HEARTH_OK);
            const uint8_t n4[4] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16), (uint8_t)(len >> 24)};
            h = fnv1a64(fnv1a64(h, n4, 4), buf, len);
        }
        char hex[17];
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h);
        const char *want = cJSON_GetObjectItem(sums, special ? "special" : "plain")->valuestring;
        CHECK_MSG(strcmp(hex, want) == 0, "pieces (special %d) checksum %s, llama.cpp %s", special, hex, want);
    }
}

static inline void check_special_ids(const hl_vocab *v, const cJSON *fixture) {
    CHECK(hl_vocab_n_tokens(v) == cJSON_GetObjectItem(fixture, "n_tokens")->valueint);
    CHECK(hl_vocab_bos(v) == cJSON_GetObjectItem(fixture, "bos")->valueint);
    CHECK(hl_vocab_eos(v) == cJSON_GetObjectItem(fixture, "eos")->valueint);
    CHECK(hl_vocab_eot(v) == cJSON_GetObjectItem(fixture, "eot")->valueint);
    const cJSON *eog = cJSON_GetObjectItem(fixture, "eog");
    int n_eog = 0;
    for (int32_t id = 0; id < hl_vocab_n_tokens(v); id++) n_eog += hl_vocab_is_eog(v, id);
    CHECK(n_eog == cJSON_GetArraySize(eog));
    for (const cJSON *e = eog->child; e; e = e->next) CHECK_MSG(hl_vocab_is_eog(v, e->valueint), "eog %d", e->valueint);
    CHECK(!hl_vocab_is_eog(v, -1) && !hl_vocab_is_eog(v, hl_vocab_n_tokens(v)));
}

/* The bytes the streaming detokenizer gives for ids. The caller frees. */
static inline char *stream_ids(const hl_vocab *v, const int32_t *ids, size_t n, bool special, size_t *len) {
    hl_detok *d;
    CHECK(hl_detok_init(v, special, &d) == HEARTH_OK);
    size_t cap = 256, total = 0, k;
    char *out = malloc(cap);
    for (size_t i = 0; i < n && out; i++) {
        hearth_status st = hl_detok_push(d, ids[i], out + total, cap - total, &k);
        if (st == HEARTH_ERR_BUFFER_TOO_SMALL) { /* nothing consumed: grow, push again */
            cap = 2 * (total + k);
            out = realloc(out, cap);
            if (!out) break;
            st = hl_detok_push(d, ids[i], out + total, cap - total, &k);
        }
        CHECK(st == HEARTH_OK);
        total += k;
    }
    if (!out) abort();
    CHECK(hl_detok_flush(d, out + total, cap - total, &k) == HEARTH_OK && k == 0);
    hl_detok_free(d);
    *len = total;
    return out;
}

static inline bool bytes_equal(const void *a, size_t na, const void *b, size_t nb) {
    return na == nb && (na == 0 || memcmp(a, b, na) == 0);
}

/* The pieces of the plain ids must give llama.cpp's detokenization ("detok"),
 * and so must the streaming detokenizer for UTF-8 inputs. */
static inline void check_round_trip(const hl_vocab *v, const cJSON *cases) {
    int n_checked = 0;
    for (const cJSON *c = cases->child; c; c = c->next) {
        size_t len, n, detok_len, out_len, stream_len;
        uint8_t *text = hex_decode(cJSON_GetObjectItem(c, "hex")->valuestring, &len);
        uint8_t *detok = hex_decode(cJSON_GetObjectItem(c, "detok")->valuestring, &detok_len);
        int32_t *ids = tokenize(v, text, len, true, false, &n);
        char *out = pieces(v, ids, n, false, &out_len);
        CHECK_MSG(bytes_equal(out, out_len, detok, detok_len), "pieces of '%.40s' differ from llama.cpp's detokenize",
                  (char *)text);
        if (cJSON_IsTrue(cJSON_GetObjectItem(c, "utf8"))) {
            char *stream = stream_ids(v, ids, n, false, &stream_len);
            CHECK_MSG(bytes_equal(stream, stream_len, detok, detok_len), "stream of '%.40s' differs", (char *)text);
            free(stream);
            n_checked++;
        }
        free(text);
        free(detok);
        free(ids);
        free(out);
    }
    printf("round trip: %d UTF-8 inputs through pieces and the streaming detokenizer\n", n_checked);
}

/* Not a timed test (speed is for benchmarks): prints what 100 KB costs. */
static inline void report_speed(const hl_vocab *v, const cJSON *cases) {
    size_t cap = 110 * 1024, len = 0;
    char *text = malloc(cap);
    while (len < 100 * 1024) {
        for (const cJSON *c = cases->child; c && len < 100 * 1024; c = c->next) {
            if (!cJSON_IsTrue(cJSON_GetObjectItem(c, "utf8"))) continue;
            size_t n;
            uint8_t *s = hex_decode(cJSON_GetObjectItem(c, "hex")->valuestring, &n);
            if (len + n < cap) {
                memcpy(text + len, s, n);
                len += n;
            }
            free(s);
        }
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t n;
    int32_t *ids = tokenize(v, (const uint8_t *)text, len, true, true, &n);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    printf("tokenized %zu bytes into %zu tokens in %.1f ms (two passes: count, then ids)\n", len, n, ms);
    free(ids);
    free(text);
}

/* Opens the crafted image and loads its vocabulary. */
static inline hearth_status load_crafted(craft *c, hl_vocab **v) {
    cr_finish(c, GGUF_DEFAULT_ALIGNMENT, 0);
    gguf_file *f;
    hearth_status st = hl_gguf_open_memory(c->p, c->len, &f);
    CHECK_MSG(st == HEARTH_OK, "crafted GGUF does not open: %s", hearth_last_error());
    *v = NULL;
    if (st == HEARTH_OK) st = hl_vocab_load(f, v);
    hl_gguf_close(f);
    return st;
}

#endif
