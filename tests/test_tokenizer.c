/* Tests of the byte-level BPE tokenizer (src/text) against llama.cpp: the ids
 * of every corpus string under parse_special true and false must equal those
 * llama.cpp gives (fixture: tests/reference/tokenizer/smollm2.json, written by
 * make_tokenizer_fixtures.py), with the model's pre-tokenizer and with the
 * same vocabulary under the gpt-2, llama-bpe, qwen2 and default ones; every
 * token's piece must match (checksum); text must round-trip through pieces
 * and the streaming detokenizer, which must hold split characters and replace
 * broken ones with U+FFFD. Crafted vocabularies check the load-time errors.
 * Needs the default model (HEARTH_MODEL); skips without it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "gguf_craft.h"
#include "json_file.h"
#include "text/vocab.h"

/* ------------------------------------------------------------ helpers -- */

static uint8_t *hex_decode(const char *hex, size_t *len) {
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

/* Tokenizes with add_special, asking for the count first. The caller frees. */
static int32_t *tokenize(const hl_vocab *v, const uint8_t *text, size_t len, bool parse_special, size_t *n) {
    hearth_status st = hl_vocab_tokenize(v, (const char *)text, len, true, parse_special, NULL, 0, n);
    CHECK(st == (*n ? HEARTH_ERR_BUFFER_TOO_SMALL : HEARTH_OK));
    int32_t *ids = malloc((*n + 1) * sizeof *ids);
    if (!ids) abort();
    size_t n2;
    st = hl_vocab_tokenize(v, (const char *)text, len, true, parse_special, ids, *n, &n2);
    CHECK_MSG(st == HEARTH_OK && n2 == *n, "status %d (%s), %zu vs %zu tokens", st, hearth_last_error(), n2, *n);
    return ids;
}

static bool ids_equal(const cJSON *expected, const int32_t *ids, size_t n) {
    if ((size_t)cJSON_GetArraySize(expected) != n) return false;
    size_t i = 0;
    for (const cJSON *e = expected->child; e; e = e->next, i++) {
        if (e->valueint != ids[i]) return false;
    }
    return true;
}

static void print_ids(const char *what, const int32_t *ids, size_t n) {
    fprintf(stderr, "  %s:", what);
    for (size_t i = 0; i < n && i < 40; i++) fprintf(stderr, " %d", ids[i]);
    fprintf(stderr, n > 40 ? " ...\n" : "\n");
}

/* Concatenated token_to_piece() of ids. The caller frees. */
static char *pieces(const hl_vocab *v, const int32_t *ids, size_t n, bool special, size_t *len) {
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
static int32_t find_piece(const hl_vocab *v, const char *s, size_t n) {
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
static int check_cases(const hl_vocab *v, const cJSON *inputs, const cJSON *cases, const char *name) {
    int matched = 0, total = 0;
    const cJSON *in = inputs->child;
    for (const cJSON *c = cases->child; c && in; c = c->next, in = in->next, total++) {
        size_t len, n_special, n_plain;
        uint8_t *text = hex_decode(cJSON_GetObjectItem(in, "hex")->valuestring, &len);
        int32_t *special = tokenize(v, text, len, true, &n_special);
        int32_t *plain = tokenize(v, text, len, false, &n_plain);
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

static uint64_t fnv1a64(uint64_t h, const void *data, size_t n) {
    const uint8_t *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001B3ull;
    return h;
}

/* Every token's piece, by a checksum over (u32 length, bytes) per token. */
static void check_all_pieces(const hl_vocab *v, const cJSON *fixture) {
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

static void check_special_ids(const hl_vocab *v, const cJSON *fixture) {
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

/* Pieces of the plain ids must give llama.cpp's detokenization, and the
 * input itself when it is UTF-8; so must the streaming detokenizer. */
static void check_round_trip(const hl_vocab *v, const cJSON *cases) {
    int n_checked = 0;
    for (const cJSON *c = cases->child; c; c = c->next) {
        size_t len, n, detok_len, out_len, stream_len = 0;
        uint8_t *text = hex_decode(cJSON_GetObjectItem(c, "hex")->valuestring, &len);
        uint8_t *detok = hex_decode(cJSON_GetObjectItem(c, "detok")->valuestring, &detok_len);
        int32_t *ids = tokenize(v, text, len, false, &n);
        char *out = pieces(v, ids, n, false, &out_len);
        CHECK_MSG(out_len == detok_len && memcmp(out, detok, out_len) == 0, "pieces differ from llama.cpp's detokenize");
        if (cJSON_IsTrue(cJSON_GetObjectItem(c, "utf8"))) {
            CHECK_MSG(out_len == len && memcmp(out, text, len) == 0, "round trip of '%.40s' failed", (char *)text);
            hl_detok *d;
            CHECK(hl_detok_init(v, false, &d) == HEARTH_OK);
            char *stream = malloc(len + 256);
            for (size_t i = 0; i < n; i++) {
                size_t k;
                CHECK(hl_detok_push(d, ids[i], stream + stream_len, 256, &k) == HEARTH_OK);
                stream_len += k;
            }
            size_t k;
            CHECK(hl_detok_flush(d, stream + stream_len, 256, &k) == HEARTH_OK && k == 0);
            CHECK_MSG(stream_len == len && memcmp(stream, text, len) == 0, "stream of '%.40s' differs", (char *)text);
            free(stream);
            hl_detok_free(d);
            n_checked++;
        }
        free(text);
        free(detok);
        free(ids);
        free(out);
    }
    printf("round trip: %d UTF-8 inputs through pieces and the streaming detokenizer\n", n_checked);
}

/* ----------------------------------------------- vocabularies in memory -- */

static void cr_str_n(craft *c, const char *s, uint64_t n) {
    cr_u64(c, n);
    cr_bytes(c, s, (size_t)n);
}

static void cr_kv_bool(craft *c, const char *key, bool b) {
    cr_key(c, key, GGUF_TYPE_BOOL);
    cr_u8(c, b);
}

static void cr_kv_strs(craft *c, const char *key, const char *const *s, int n) {
    cr_key(c, key, GGUF_TYPE_ARRAY);
    cr_arr(c, GGUF_TYPE_STRING, (uint64_t)n);
    for (int i = 0; i < n; i++) cr_str(c, s[i]);
}

static void cr_kv_copy_strs(craft *c, const char *key, const gguf_array *a) {
    cr_key(c, key, GGUF_TYPE_ARRAY);
    cr_arr(c, GGUF_TYPE_STRING, a->n);
    for (uint64_t i = 0; i < a->n; i++) cr_str_n(c, a->strs[i].data, a->strs[i].len);
}

static void cr_kv_i32s(craft *c, const char *key, const void *v, uint64_t n) {
    cr_key(c, key, GGUF_TYPE_ARRAY);
    cr_arr(c, GGUF_TYPE_INT32, n);
    cr_bytes(c, v, (size_t)n * 4);
}

/* Opens the crafted image and loads its vocabulary. */
static hearth_status load_crafted(craft *c, hl_vocab **v) {
    cr_finish(c, GGUF_DEFAULT_ALIGNMENT, 0);
    gguf_file *f;
    hearth_status st = gguf_open_memory(c->p, c->len, &f);
    CHECK_MSG(st == HEARTH_OK, "crafted GGUF does not open: %s", hearth_last_error());
    *v = NULL;
    if (st == HEARTH_OK) st = hl_vocab_load(f, v);
    gguf_close(f);
    return st;
}

/* The model's vocabulary with tokenizer.ggml.pre set to `pre`. */
static hearth_status load_variant(const gguf_file *model, const char *pre, hl_vocab **v) {
    const gguf_array *tokens, *merges, *types;
    CHECK(gguf_get_arr(model, "tokenizer.ggml.tokens", true, GGUF_TYPE_STRING, &tokens) == HEARTH_OK);
    CHECK(gguf_get_arr(model, "tokenizer.ggml.merges", true, GGUF_TYPE_STRING, &merges) == HEARTH_OK);
    CHECK(gguf_get_arr(model, "tokenizer.ggml.token_type", true, GGUF_TYPE_INT32, &types) == HEARTH_OK);
    craft c;
    cr_begin(&c, 3);
    cr_kv_str(&c, "tokenizer.ggml.model", "gpt2");
    cr_kv_str(&c, "tokenizer.ggml.pre", pre);
    cr_kv_copy_strs(&c, "tokenizer.ggml.tokens", tokens);
    cr_kv_copy_strs(&c, "tokenizer.ggml.merges", merges);
    cr_kv_i32s(&c, "tokenizer.ggml.token_type", types->raw, types->n);
    const char *ids[] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                         "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id"};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        uint32_t id;
        CHECK(gguf_get_u32(model, ids[i], true, &id) == HEARTH_OK);
        cr_kv_u32(&c, ids[i], id);
    }
    bool add_bos = true;
    CHECK(gguf_get_bool(model, "tokenizer.ggml.add_bos_token", true, &add_bos) == HEARTH_OK);
    cr_kv_bool(&c, "tokenizer.ggml.add_bos_token", add_bos);
    hearth_status st = load_crafted(&c, v);
    cr_free(&c);
    return st;
}

static int check_pre_variants(const gguf_file *model, const cJSON *fixture) {
    const cJSON *inputs = cJSON_GetObjectItem(fixture, "cases");
    int matched = 0;
    for (const cJSON *variant = cJSON_GetObjectItem(fixture, "pre_variants")->child; variant; variant = variant->next) {
        hl_vocab *v;
        hearth_status st = load_variant(model, variant->string, &v);
        CHECK_MSG(st == HEARTH_OK, "pre '%s': %s", variant->string, hearth_last_error());
        if (st != HEARTH_OK) continue;
        char name[64];
        snprintf(name, sizeof name, "pre-tokenizer %s", variant->string);
        matched += check_cases(v, inputs, variant, name);
        hl_vocab_free(v);
    }
    return matched;
}

/* A tiny vocabulary: "a", "b", "ab", "Ġ" (space), "Ġa", "<|end|>" (CONTROL),
 * "" (empty), with merges "a b", "Ġ a" and one whose parts are no tokens. */
typedef struct tiny {
    const char *model, *pre;
    bool tokens_as_i32, omit_merges, duplicate;
    int n_types;      /* token_type entries; 7 when right */
    int64_t bos;      /* -1: no key */
} tiny;

static const tiny TINY_OK = {"gpt2", "gpt-2", false, false, false, 7, -1};

static hearth_status load_tiny(const tiny *t, hl_vocab **v) {
    const char *tokens[] = {"a", "b", "ab", "\xc4\xa0", "\xc4\xa0" "a", "<|end|>", t->duplicate ? "a" : ""};
    const char *merges[] = {"a b", "\xc4\xa0 a", "x y", "nospace"};
    const int32_t types[] = {1, 1, 1, 1, 1, 3, 1};
    const int32_t as_i32[] = {1, 2, 3, 4, 5, 6, 7};
    craft c;
    cr_begin(&c, 3);
    cr_kv_str(&c, "tokenizer.ggml.model", t->model);
    cr_kv_str(&c, "tokenizer.ggml.pre", t->pre);
    if (t->tokens_as_i32) {
        cr_kv_i32s(&c, "tokenizer.ggml.tokens", as_i32, 7);
    } else {
        cr_kv_strs(&c, "tokenizer.ggml.tokens", tokens, 7);
    }
    if (!t->omit_merges) cr_kv_strs(&c, "tokenizer.ggml.merges", merges, 4);
    cr_kv_i32s(&c, "tokenizer.ggml.token_type", types, (uint64_t)t->n_types);
    if (t->bos >= 0) cr_kv_u32(&c, "tokenizer.ggml.bos_token_id", (uint32_t)t->bos);
    hearth_status st = load_crafted(&c, v);
    cr_free(&c);
    return st;
}

static void expect_load_error(tiny t, hearth_status want, const char *needle) {
    hl_vocab *v;
    hearth_status st = load_tiny(&t, &v);
    const char *msg = hearth_last_error();
    CHECK_MSG(st == want && v == NULL, "status %d, want %d (%s)", st, want, msg);
    CHECK_MSG(strstr(msg, needle) != NULL, "message '%s' lacks '%s'", msg, needle);
}

static void check_tiny_vocabularies(void) {
    hl_vocab *v;
    CHECK_MSG(load_tiny(&TINY_OK, &v) == HEARTH_OK, "%s", hearth_last_error());
    size_t n;
    int32_t ids[16];
    CHECK(hl_vocab_tokenize(v, "ab a", 4, true, true, ids, 16, &n) == HEARTH_OK);
    CHECK(n == 2 && ids[0] == 2 && ids[1] == 4);
    /* bytes without a token are dropped, as llama.cpp does */
    CHECK(hl_vocab_tokenize(v, "ab<|end|>", 9, true, true, ids, 16, &n) == HEARTH_OK);
    CHECK(n == 2 && ids[0] == 2 && ids[1] == 5);
    CHECK(hl_vocab_tokenize(v, "ab<|end|>", 9, true, false, ids, 16, &n) == HEARTH_OK);
    CHECK(n == 1 && ids[0] == 2);
    CHECK(hl_vocab_is_eog(v, 5) && hl_vocab_bos(v) == -1 && hl_vocab_eos(v) == -1);
    char piece[32];
    CHECK(hl_vocab_token_to_piece(v, 6, false, piece, sizeof piece, &n) == HEARTH_OK);
    CHECK(n == 9 && memcmp(piece, "[EMPTY_6]", 9) == 0);
    hl_vocab_free(v);

    tiny t = TINY_OK;
    t.bos = 7;
    expect_load_error(t, HEARTH_ERR_FORMAT, "tokenizer.ggml.bos_token_id");
    t = TINY_OK;
    t.tokens_as_i32 = true;
    expect_load_error(t, HEARTH_ERR_FORMAT, "tokenizer.ggml.tokens");
    t = TINY_OK;
    t.model = "llama";
    expect_load_error(t, HEARTH_ERR_UNSUPPORTED, "tokenizer model 'llama' is not supported yet (supported: gpt2)");
    t = TINY_OK;
    t.pre = "no-such-pre";
    expect_load_error(t, HEARTH_ERR_UNSUPPORTED, "'no-such-pre'");
    t = TINY_OK;
    t.n_types = 6;
    expect_load_error(t, HEARTH_ERR_FORMAT, "tokenizer.ggml.token_type");
    t = TINY_OK;
    t.duplicate = true;
    expect_load_error(t, HEARTH_ERR_FORMAT, "duplicates");
    t = TINY_OK;
    t.omit_merges = true;
    expect_load_error(t, HEARTH_ERR_FORMAT, "tokenizer.ggml.merges");
}

/* -------------------------------------------------- API edge behaviour -- */

static void check_buffers(const hl_vocab *v) {
    int32_t ids[4] = {-7, -7, -7, -7};
    size_t n = 0;
    CHECK(hl_vocab_tokenize(v, "Hello world", 11, true, true, ids, 1, &n) == HEARTH_ERR_BUFFER_TOO_SMALL);
    CHECK(n == 2 && ids[0] >= 0 && ids[1] == -7);
    CHECK(hl_vocab_tokenize(v, NULL, 0, true, true, NULL, 0, &n) == HEARTH_OK && n == 0);
    CHECK(hl_vocab_tokenize(v, NULL, 3, true, true, ids, 4, &n) == HEARTH_ERR_INVALID_ARG);

    char buf[16];
    size_t len;
    CHECK(hl_vocab_token_to_piece(v, ids[0], false, buf, 2, &len) == HEARTH_ERR_BUFFER_TOO_SMALL && len == 5);
    CHECK(hl_vocab_token_to_piece(v, ids[0], false, buf, sizeof buf, &len) == HEARTH_OK);
    CHECK(len == 5 && memcmp(buf, "Hello", 5) == 0);
    CHECK(hl_vocab_token_to_piece(v, -1, false, buf, sizeof buf, &len) == HEARTH_ERR_INVALID_ARG);
    CHECK(hl_vocab_token_to_piece(v, hl_vocab_n_tokens(v), false, buf, sizeof buf, &len) == HEARTH_ERR_INVALID_ARG);
    const int32_t im_end = find_piece(v, "<|im_end|>", 10);
    CHECK(im_end >= 0 && hl_vocab_is_eog(v, im_end));
    CHECK(hl_vocab_token_to_piece(v, im_end, false, buf, sizeof buf, &len) == HEARTH_OK && len == 0);
    CHECK(hl_vocab_token_to_piece(v, im_end, true, buf, sizeof buf, &len) == HEARTH_OK && len == 10);
}

static void push_expect(hl_detok *d, int32_t id, const char *want, size_t want_len) {
    char buf[64];
    size_t len;
    hearth_status st = hl_detok_push(d, id, buf, sizeof buf, &len);
    CHECK_MSG(st == HEARTH_OK && len == want_len && memcmp(buf, want, len) == 0, "push %d: status %d, %zu bytes", id,
              st, len);
}

static void check_stream(const hl_vocab *v) {
    /* an emoji split over several tokens comes out whole, at its last token */
    size_t n;
    int32_t *ids = tokenize(v, (const uint8_t *)"\xf0\x9f\x98\x80", 4, false, &n);
    CHECK(n >= 2);
    hl_detok *d;
    CHECK(hl_detok_init(v, false, &d) == HEARTH_OK);
    for (size_t i = 0; i + 1 < n; i++) push_expect(d, ids[i], "", 0);
    push_expect(d, ids[n - 1], "\xf0\x9f\x98\x80", 4);
    free(ids);

    const int32_t lead = find_piece(v, "\xf0", 1), cont = find_piece(v, "\x9f", 1);
    const int32_t a = find_piece(v, "a", 1), hello = find_piece(v, "Hello", 5);
    CHECK(lead >= 0 && cont >= 0 && a >= 0 && hello >= 0);
    push_expect(d, cont, "\xef\xbf\xbd", 3);      /* a stray continuation byte */
    push_expect(d, lead, "", 0);                  /* held */
    push_expect(d, a, "\xef\xbf\xbd" "a", 4);     /* broken by 'a' */
    push_expect(d, lead, "", 0);
    push_expect(d, cont, "", 0);
    char buf[8];
    size_t len;
    CHECK(hl_detok_flush(d, buf, 2, &len) == HEARTH_ERR_BUFFER_TOO_SMALL && len == 3);
    CHECK(hl_detok_flush(d, buf, sizeof buf, &len) == HEARTH_OK && len == 3 && memcmp(buf, "\xef\xbf\xbd", 3) == 0);
    CHECK(hl_detok_flush(d, buf, sizeof buf, &len) == HEARTH_OK && len == 0);

    /* a buffer too small consumes nothing */
    push_expect(d, lead, "", 0);
    CHECK(hl_detok_push(d, hello, buf, 4, &len) == HEARTH_ERR_BUFFER_TOO_SMALL && len == 8);
    push_expect(d, hello, "\xef\xbf\xbdHello", 8);
    CHECK(hl_detok_push(d, -1, buf, sizeof buf, &len) == HEARTH_ERR_INVALID_ARG);
    hl_detok_free(d);

    const int32_t im_end = find_piece(v, "<|im_end|>", 10);
    CHECK(hl_detok_init(v, true, &d) == HEARTH_OK);
    char big[32];
    CHECK(hl_detok_push(d, im_end, big, sizeof big, &len) == HEARTH_OK && len == 10);
    hl_detok_free(d);
}

/* Not a timed test (speed is for benchmarks): prints what 100 KB costs. */
static void report_speed(const hl_vocab *v, const cJSON *cases) {
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
    int32_t *ids = tokenize(v, (const uint8_t *)text, len, true, &n);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    printf("tokenized %zu bytes into %zu tokens in %.1f ms (two passes: count, then ids)\n", len, n, ms);
    free(ids);
    free(text);
}

int main(void) {
    const char *path = check_model_path();
    cJSON *fixture = json_file_read(check_test_path("reference/tokenizer/smollm2.json"));
    CHECK(fixture != NULL);
    if (!fixture) return check_report();
    gguf_file *f;
    hearth_status st = gguf_open(path, &f);
    CHECK_MSG(st == HEARTH_OK, "%s", hearth_last_error());
    hl_vocab *v = NULL;
    if (st == HEARTH_OK) st = hl_vocab_load(f, &v);
    CHECK_MSG(st == HEARTH_OK, "%s", hearth_last_error());
    if (st == HEARTH_OK) {
        const cJSON *cases = cJSON_GetObjectItem(fixture, "cases");
        check_special_ids(v, fixture);
        check_all_pieces(v, fixture);
        int matched = check_cases(v, cases, cases, "smollm");
        CHECK(matched == cJSON_GetArraySize(cases));
        check_pre_variants(f, fixture);
        check_round_trip(v, cases);
        check_buffers(v);
        check_stream(v);
        report_speed(v, cases);
    }
    check_tiny_vocabularies();
    hl_vocab_free(v);
    gguf_close(f);
    cJSON_Delete(fixture);
    return check_report();
}
