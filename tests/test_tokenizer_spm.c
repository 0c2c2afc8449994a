/* Tests of the SentencePiece tokenizer (tokenizer.ggml.model = "llama",
 * src/text/spm.c) against llama.cpp, with the Gemma 3 270M vocabulary: the ids
 * of every corpus string under parse_special true and false must equal those
 * llama.cpp gives (fixture: tests/reference/tokenizer/gemma3.json, written by
 * make_spm_fixtures.py), also with add_space_prefix turned on (the default
 * of SentencePiece vocabularies, off in Gemma's file) and without BOS; every
 * token's piece must match (checksum), and the pieces and the streaming
 * detokenizer must give llama.cpp's detokenization. A tiny crafted vocabulary
 * checks the merge order, byte fallback, defaults and load errors. Loads only
 * the vocabulary from HEARTH_MODEL_GEMMA; skips without it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_check.h"

/* ------------------------------------------------- llama.cpp reference -- */

/* With special tokens rendered, the pieces of the parse_special ids must give
 * llama.cpp's detokenization ("detok_special"), and so must the stream. */
static void check_special_detok(const hl_vocab *v, const cJSON *cases) {
    for (const cJSON *c = cases->child; c; c = c->next) {
        size_t len, n, want_len, out_len, stream_len;
        uint8_t *text = hex_decode(cJSON_GetObjectItem(c, "hex")->valuestring, &len);
        uint8_t *want = hex_decode(cJSON_GetObjectItem(c, "detok_special")->valuestring, &want_len);
        int32_t *ids = tokenize(v, text, len, true, true, &n);
        char *out = pieces(v, ids, n, true, &out_len);
        CHECK_MSG(bytes_equal(out, out_len, want, want_len), "special pieces of '%.40s' differ", (char *)text);
        if (cJSON_IsTrue(cJSON_GetObjectItem(c, "utf8"))) {
            char *stream = stream_ids(v, ids, n, true, &stream_len);
            CHECK_MSG(bytes_equal(stream, stream_len, want, want_len), "special stream of '%.40s' differs",
                      (char *)text);
            free(stream);
        }
        free(text);
        free(want);
        free(ids);
        free(out);
    }
}

/* The model's vocabulary with tokenizer.ggml.add_space_prefix = true. */
static hearth_status load_space_prefix_variant(const gguf_file *model, hl_vocab **v) {
    const gguf_array *tokens, *scores, *types;
    CHECK(hl_gguf_get_arr(model, "tokenizer.ggml.tokens", true, GGUF_TYPE_STRING, &tokens) == HEARTH_OK);
    CHECK(hl_gguf_get_arr(model, "tokenizer.ggml.scores", true, GGUF_TYPE_FLOAT32, &scores) == HEARTH_OK);
    CHECK(hl_gguf_get_arr(model, "tokenizer.ggml.token_type", true, GGUF_TYPE_INT32, &types) == HEARTH_OK);
    craft c;
    cr_begin(&c, 3);
    cr_kv_str(&c, "tokenizer.ggml.model", "llama");
    cr_kv_copy_strs(&c, "tokenizer.ggml.tokens", tokens);
    cr_kv_arr32(&c, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, scores->raw, scores->n);
    cr_kv_arr32(&c, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types->raw, types->n);
    const char *ids[] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                         "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id"};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        uint32_t id;
        CHECK(hl_gguf_get_u32(model, ids[i], true, &id) == HEARTH_OK);
        cr_kv_u32(&c, ids[i], id);
    }
    cr_kv_bool(&c, "tokenizer.ggml.add_space_prefix", true);
    hearth_status st = load_crafted(&c, v);
    cr_free(&c);
    return st;
}

static void check_space_prefix(const gguf_file *model, const cJSON *fixture) {
    hl_vocab *v;
    hearth_status st = load_space_prefix_variant(model, &v);
    CHECK_MSG(st == HEARTH_OK, "add_space_prefix variant: %s", hearth_last_error());
    if (st != HEARTH_OK) return;
    const cJSON *inputs = cJSON_GetObjectItem(fixture, "cases"), *cases = cJSON_GetObjectItem(fixture, "space_prefix");
    const int matched = check_cases(v, inputs, cases, "gemma3 + add_space_prefix");
    CHECK(matched == cJSON_GetArraySize(inputs));
    int no_bos = 0;
    const cJSON *in = inputs->child;
    for (const cJSON *c = cases->child; c && in; c = c->next, in = in->next) {
        size_t len, n;
        uint8_t *text = hex_decode(cJSON_GetObjectItem(in, "hex")->valuestring, &len);
        int32_t *ids = tokenize(v, text, len, false, true, &n);
        const bool ok = ids_equal(cJSON_GetObjectItem(c, "no_bos"), ids, n);
        CHECK_MSG(ok, "without BOS, '%.40s' differs from llama.cpp", (char *)text);
        if (!ok) print_ids("hearth", ids, n);
        no_bos += ok;
        free(text);
        free(ids);
    }
    printf("gemma3 + add_space_prefix: %d/%d corpus inputs match llama.cpp without BOS\n", no_bos,
           cJSON_GetArraySize(inputs));
    hl_vocab_free(v);
}

/* ------------------------------------------------ a tiny vocabulary -- */

/* "▁" is U+2581, the escaped space. */
#define SP "\xe2\x96\x81"

typedef struct tiny_spm {
    bool scores_i32, short_scores, scores_as_str, no_prefix_key, prefix, no_byte_tokens;
} tiny_spm;

static hearth_status load_tiny(const tiny_spm *t, hl_vocab **v) {
    /* ids:                   0        1      2       3    4    5    6     7        8         9 */
    const char *tokens[] = {"<unk>", "<s>", "</s>", SP, "a", "b", "ab", SP "a", "<0x63>", SP "ab"};
    const char *no_bytes[] = {"<unk>", "<s>", "</s>", SP, "a", "b", "\xc3", "\xa9", "<0x6>", SP "ab"};
    const float scores[] = {0, 0, 0, -1, -2, -3, -0.5f, -0.1f, 0, -5};
    const int32_t iscores[] = {0, 0, 0, -10, -20, -30, -5, -1, 0, -50};
    const int32_t types[] = {2, 3, 3, 1, 1, 1, 1, 1, 6, 1};
    craft c;
    cr_begin(&c, 3);
    cr_kv_str(&c, "tokenizer.ggml.model", "llama");
    cr_kv_strs(&c, "tokenizer.ggml.tokens", t->no_byte_tokens ? no_bytes : tokens, 10);
    if (t->scores_as_str) {
        cr_kv_strs(&c, "tokenizer.ggml.scores", tokens, 10);
    } else if (t->scores_i32) {
        cr_kv_arr32(&c, "tokenizer.ggml.scores", GGUF_TYPE_INT32, iscores, 10);
    } else {
        cr_kv_arr32(&c, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, scores, t->short_scores ? 9 : 10);
    }
    cr_kv_arr32(&c, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, 10);
    if (!t->no_prefix_key) cr_kv_bool(&c, "tokenizer.ggml.add_space_prefix", t->prefix);
    hearth_status st = load_crafted(&c, v);
    cr_free(&c);
    return st;
}

/* Tokenizes s with add_special and parse_special; compares with want (-1 ends it). */
static void expect_ids(const hl_vocab *v, const char *s, const int32_t *want) {
    int32_t ids[32];
    size_t n, n_want = 0;
    while (want[n_want] >= 0) n_want++;
    hearth_status st = hl_vocab_tokenize(v, s, strlen(s), true, true, ids, 32, &n);
    CHECK_MSG(st == HEARTH_OK, "'%s': %s", s, hearth_last_error());
    const bool ok = st == HEARTH_OK && n == n_want && memcmp(ids, want, n * sizeof *ids) == 0;
    CHECK_MSG(ok, "'%s' gives unexpected ids", s);
    if (!ok && st == HEARTH_OK) print_ids("hearth", ids, n);
}

static void expect_piece(const hl_vocab *v, int32_t id, bool special, const char *want) {
    char buf[16];
    size_t len;
    CHECK(hl_vocab_token_to_piece(v, id, special, buf, sizeof buf, &len) == HEARTH_OK);
    CHECK_MSG(bytes_equal(buf, len, want, strlen(want)), "piece of %d", id);
}

static void expect_tiny_error(tiny_spm t, const char *needle) {
    hl_vocab *v;
    hearth_status st = load_tiny(&t, &v);
    const char *msg = hearth_last_error();
    CHECK_MSG(st == HEARTH_ERR_FORMAT && v == NULL, "status %d (%s)", st, msg);
    CHECK_MSG(strstr(msg, needle) != NULL, "message '%s' lacks '%s'", msg, needle);
}

static void check_tiny(void) {
    hl_vocab *v;
    const tiny_spm defaults = {.no_prefix_key = true};
    CHECK_MSG(load_tiny(&defaults, &v) == HEARTH_OK, "%s", hearth_last_error());
    if (!v) return;
    /* llama.cpp's defaults without keys: bos 1, eos 2, unk 0, BOS added, space prefix */
    CHECK(hl_vocab_bos(v) == 1 && hl_vocab_eos(v) == 2 && hl_vocab_unk(v) == 0);
    /* "▁a" (-0.1) merges before "ab" (-0.5), then "▁ab" */
    expect_ids(v, "ab", (const int32_t[]){1, 9, -1});
    /* no pair of "▁ba" is a token */
    expect_ids(v, "ba", (const int32_t[]){1, 3, 5, 4, -1});
    /* "▁a" first, then "ab" */
    expect_ids(v, "aab", (const int32_t[]){1, 7, 6, -1});
    /* 'c' is no token: byte fallback to <0x63> */
    expect_ids(v, "c a", (const int32_t[]){1, 3, 8, 7, -1});
    /* a space prefix after a special token, none after text */
    expect_ids(v, "a<s>a</s>", (const int32_t[]){1, 7, 1, 7, 2, -1});
    expect_ids(v, "", (const int32_t[]){1, -1});
    int32_t ids[8];
    size_t n;
    CHECK(hl_vocab_tokenize(v, "d", 1, true, true, ids, 8, &n) == HEARTH_ERR_UNSUPPORTED);
    CHECK(strstr(hearth_last_error(), "no token for byte 0x64") != NULL);
    expect_piece(v, 7, false, " a");
    expect_piece(v, 8, false, "c");
    expect_piece(v, 1, false, "");
    expect_piece(v, 1, true, "<s>");
    hl_vocab_free(v);

    const tiny_spm off = {.prefix = false};
    CHECK_MSG(load_tiny(&off, &v) == HEARTH_OK, "%s", hearth_last_error());
    expect_ids(v, "ab<s>ab", (const int32_t[]){1, 6, 1, 6, -1});
    hl_vocab_free(v);

    /* integer scores order the merges the same way */
    const tiny_spm i32 = {.scores_i32 = true, .prefix = true};
    CHECK_MSG(load_tiny(&i32, &v) == HEARTH_OK, "%s", hearth_last_error());
    expect_ids(v, "aab", (const int32_t[]){1, 7, 6, -1});
    hl_vocab_free(v);

    /* no byte tokens ("<0x6>" is none): a byte's own text is the fallback */
    const tiny_spm no_bytes = {.no_byte_tokens = true, .prefix = true};
    CHECK_MSG(load_tiny(&no_bytes, &v) == HEARTH_OK, "%s", hearth_last_error());
    expect_ids(v, "\xc3\xa9", (const int32_t[]){1, 3, 6, 7, -1});
    CHECK(hl_vocab_tokenize(v, "c", 1, true, true, ids, 8, &n) == HEARTH_ERR_UNSUPPORTED);
    hl_vocab_free(v);

    expect_tiny_error((tiny_spm){.short_scores = true}, "tokenizer.ggml.scores has 9 entries for 10 tokens");
    expect_tiny_error((tiny_spm){.scores_as_str = true}, "tokenizer.ggml.scores must be an array of float32 or int32");
}

int main(void) {
    const char *path = check_model_path_from("HEARTH_MODEL_GEMMA");
    cJSON *fixture = json_file_read(check_test_path("reference/tokenizer/gemma3.json"));
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
        const int matched = check_cases(v, cases, cases, "gemma3");
        CHECK(matched == cJSON_GetArraySize(cases));
        check_round_trip(v, cases);
        check_special_detok(v, cases);
        check_space_prefix(f, fixture);
        report_speed(v, cases);
    }
    check_tiny();
    hl_vocab_free(v);
    hl_gguf_close(f);
    cJSON_Delete(fixture);
    return check_report();
}
