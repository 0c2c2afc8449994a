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

#include "gguf_craft.h"
#include "tokenizer_check.h"

/* ----------------------------------------------- vocabularies in memory -- */

/* The model's vocabulary with tokenizer.ggml.pre set to `pre`. */
static hearth_status load_variant(const gguf_file *model, const char *pre, hl_vocab **v) {
    const gguf_array *tokens, *merges, *types;
    CHECK(hl_gguf_get_arr(model, "tokenizer.ggml.tokens", true, GGUF_TYPE_STRING, &tokens) == HEARTH_OK);
    CHECK(hl_gguf_get_arr(model, "tokenizer.ggml.merges", true, GGUF_TYPE_STRING, &merges) == HEARTH_OK);
    CHECK(hl_gguf_get_arr(model, "tokenizer.ggml.token_type", true, GGUF_TYPE_INT32, &types) == HEARTH_OK);
    craft c;
    cr_begin(&c, 3);
    cr_kv_str(&c, "tokenizer.ggml.model", "gpt2");
    cr_kv_str(&c, "tokenizer.ggml.pre", pre);
    cr_kv_copy_strs(&c, "tokenizer.ggml.tokens", tokens);
    cr_kv_copy_strs(&c, "tokenizer.ggml.merges", merges);
    cr_kv_arr32(&c, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types->raw, types->n);
    const char *ids[] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                         "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id"};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        uint32_t id;
        CHECK(hl_gguf_get_u32(model, ids[i], true, &id) == HEARTH_OK);
        cr_kv_u32(&c, ids[i], id);
    }
    bool add_bos = true;
    CHECK(hl_gguf_get_bool(model, "tokenizer.ggml.add_bos_token", true, &add_bos) == HEARTH_OK);
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
    int n_types; /* token_type entries; 7 when right */
    int64_t bos; /* -1: no key */
} tiny;

static const tiny TINY_OK = {"gpt2", "gpt-2", false, false, false, 7, -1};

static hearth_status load_tiny(const tiny *t, hl_vocab **v) {
    const char *tokens[] = {"a",
                            "b",
                            "ab",
                            "\xc4\xa0",
                            "\xc4\xa0"
                            "a",
                            "<|end|>",
                            t->duplicate ? "a" : ""};
    const char *merges[] = {"a b", "\xc4\xa0 a", "x y", "nospace"};
    const int32_t types[] = {1, 1, 1, 1, 1, 3, 1};
    const int32_t as_i32[] = {1, 2, 3, 4, 5, 6, 7};
    craft c;
    cr_begin(&c, 3);
    cr_kv_str(&c, "tokenizer.ggml.model", t->model);
    cr_kv_str(&c, "tokenizer.ggml.pre", t->pre);
    if (t->tokens_as_i32) {
        cr_kv_arr32(&c, "tokenizer.ggml.tokens", GGUF_TYPE_INT32, as_i32, 7);
    } else {
        cr_kv_strs(&c, "tokenizer.ggml.tokens", tokens, 7);
    }
    if (!t->omit_merges) cr_kv_strs(&c, "tokenizer.ggml.merges", merges, 4);
    cr_kv_arr32(&c, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, (uint64_t)t->n_types);
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
    t.model = "t5";
    expect_load_error(t, HEARTH_ERR_UNSUPPORTED,
                      "tokenizer model 't5' is not supported (supported: gpt2, llama, bert)");
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
    int32_t *ids = tokenize(v, (const uint8_t *)"\xf0\x9f\x98\x80", 4, true, false, &n);
    CHECK(n >= 2);
    hl_detok *d;
    CHECK(hl_detok_init(v, false, &d) == HEARTH_OK);
    for (size_t i = 0; i + 1 < n; i++) push_expect(d, ids[i], "", 0);
    push_expect(d, ids[n - 1], "\xf0\x9f\x98\x80", 4);
    free(ids);

    const int32_t lead = find_piece(v, "\xf0", 1), cont = find_piece(v, "\x9f", 1);
    const int32_t a = find_piece(v, "a", 1), hello = find_piece(v, "Hello", 5);
    CHECK(lead >= 0 && cont >= 0 && a >= 0 && hello >= 0);
    push_expect(d, cont, "\xef\xbf\xbd", 3); /* a stray continuation byte */
    push_expect(d, lead, "", 0);             /* held */
    push_expect(d, a,
                "\xef\xbf\xbd"
                "a",
                4); /* broken by 'a' */
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

int main(void) {
    const char *path = check_model_path();
    cJSON *fixture = json_file_read(check_test_path("reference/tokenizer/smollm2.json"));
    CHECK(fixture != NULL);
    if (!fixture) return check_report();
    gguf_file *f;
    hearth_status st = hl_gguf_open(path, &f);
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
    hl_gguf_close(f);
    cJSON_Delete(fixture);
    return check_report();
}
