/* Tests of the WordPiece tokenizer (tokenizer.ggml.model = "bert",
 * src/text/wordpiece.c) with all-MiniLM-L6-v2's vocabulary as
 * scripts/convert_bert.py writes it (scripts/fetch_model.sh minilm): the ids
 * of every corpus string (accents, CJK, emoji, punctuation runs, numbers,
 * URLs, words over 100 characters, whitespace and control characters, the
 * empty string, special tokens written in the text) must equal those of
 * Hugging Face tokenizers (fixture: tests/reference/wordpiece_reference.json,
 * written by make_wordpiece_reference.py), with [CLS] ... [SEP] and the
 * special tokens parsed, and with the special tokens as plain text; without
 * add_special the same ids lose [CLS] and [SEP]. Pieces glue continuations
 * to their word. Random bytes (mostly invalid UTF-8) must tokenize without
 * error or crash. A tiny crafted vocabulary checks the defaults and load
 * errors without the model. Loads only the vocabulary from
 * HEARTH_MODEL_MINILM; the model part skips without it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_check.h"

/* ------------------------------------------------- tokenizers reference -- */

static int check_reference(const hl_vocab *v, const cJSON *ref) {
    CHECK(hl_vocab_n_tokens(v) == cJSON_GetObjectItem(ref, "n_tokens")->valueint);
    CHECK(hl_vocab_bos(v) == cJSON_GetObjectItem(ref, "cls")->valueint);
    CHECK(hl_vocab_unk(v) == cJSON_GetObjectItem(ref, "unk")->valueint);
    CHECK(hl_vocab_pad(v) == cJSON_GetObjectItem(ref, "pad")->valueint);
    const int32_t sep = cJSON_GetObjectItem(ref, "sep")->valueint;
    int matched = 0, total = 0;
    for (const cJSON *c = cJSON_GetObjectItem(ref, "cases")->child; c; c = c->next, total++) {
        size_t len, n_special, n_plain, n_bare;
        uint8_t *text = hex_decode(cJSON_GetObjectItem(c, "hex")->valuestring, &len);
        int32_t *special = tokenize(v, text, len, true, true, &n_special);
        int32_t *plain = tokenize(v, text, len, true, false, &n_plain);
        int32_t *bare = tokenize(v, text, len, false, false, &n_bare);
        const bool ok_special = ids_equal(cJSON_GetObjectItem(c, "special"), special, n_special);
        const bool ok_plain = ids_equal(cJSON_GetObjectItem(c, "plain"), plain, n_plain);
        const bool ok_bare = n_plain >= 2 && n_bare == n_plain - 2 && plain[0] == hl_vocab_bos(v) &&
                             plain[n_plain - 1] == sep && memcmp(bare, plain + 1, n_bare * sizeof *bare) == 0;
        CHECK_MSG(ok_special && ok_plain && ok_bare, "input %d '%.60s' differs from tokenizers (%s)", total,
                  cJSON_GetObjectItem(c, "text")->valuestring,
                  !ok_special ? "special tokens parsed"
                  : !ok_plain ? "special tokens as text"
                              : "without [CLS]/[SEP]");
        if (!ok_special) {
            print_ids("hearth", special, n_special);
            fprintf(stderr, "  tokenizers:");
            for (const cJSON *e = cJSON_GetObjectItem(c, "special")->child; e; e = e->next) {
                fprintf(stderr, " %d", e->valueint);
            }
            fputc('\n', stderr);
        }
        if (!ok_plain) print_ids("hearth (plain)", plain, n_plain);
        matched += ok_special && ok_plain && ok_bare;
        free(text);
        free(special);
        free(plain);
        free(bare);
    }
    printf("all-MiniLM-L6-v2: %d/%d strings give Hugging Face tokenizers' ids (special tokens parsed and as "
           "text, with and without [CLS]/[SEP])\n",
           matched, total);
    return total - matched;
}

/* Pieces: a word-initial token reads " word", a continuation glues on. */
static void check_pieces(const hl_vocab *v) {
    static const struct {
        const char *text, *want; /* tokenizers' tokens: una ##ffa ##ble token ##ization, ang ##strom */
    } cases[] = {
        {"Hello, world!", " hello , world !"},
        {"unaffable tokenization", " unaffable tokenization"},
        {"caf\xc3\xa9 na\xc3\xafve", " cafe naive"},
        {"\xc3\x85ngstr\xc3\xb6m \xe4\xb8\xad\xe6\x96\x87", " angstrom \xe4\xb8\xad \xe6\x96\x87"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n, len;
        int32_t *ids = tokenize(v, (const uint8_t *)cases[i].text, strlen(cases[i].text), false, false, &n);
        char *out = pieces(v, ids, n, false, &len);
        const size_t k = strlen(cases[i].want);
        CHECK_MSG(bytes_equal(out, len, cases[i].want, k), "pieces of '%s' read '%.*s', want '%s'", cases[i].text,
                  (int)len, out, cases[i].want);
        char *stream = stream_ids(v, ids, n, false, &len);
        CHECK_MSG(bytes_equal(stream, len, cases[i].want, k), "stream of '%s' differs", cases[i].text);
        free(stream);
        free(ids);
        free(out);
    }
    /* with special = true, [CLS] and [SEP] read as themselves */
    size_t n, len;
    int32_t *ids = tokenize(v, (const uint8_t *)"ok", 2, true, false, &n);
    char *out = pieces(v, ids, n, true, &len);
    CHECK_MSG(bytes_equal(out, len, "[CLS] ok[SEP]", 13), "special pieces '%.*s'", (int)len, out);
    free(ids);
    free(out);
}

/* Random bytes (and random picks of tricky characters) must not fail or
 * crash, and every id must be in range. */
static void check_random(const hl_vocab *v) {
    static const char *const bits[] = {"a",
                                       "Z",
                                       " ",
                                       "\t",
                                       "é",
                                       "e\xcc\x81",
                                       "\xe4\xb8\xad",
                                       "\xea\xb0\x80",
                                       "!",
                                       "##",
                                       "[CLS]",
                                       "[MASK]",
                                       "\xf0\x9f\x98\x80",
                                       "\xef\xbf\xbd",
                                       "\xed\xa0\x80",
                                       "\xc3",
                                       "\xff",
                                       "\x80",
                                       "\0",
                                       "\xe2\x96\x81",
                                       "x"};
    uint64_t state = 0x9E3779B97F4A7C15ull;
    int bad = 0;
    for (int round = 0; round < 3000; round++) {
        uint8_t buf[512];
        size_t len = 0;
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        const size_t want = (size_t)(state >> 33) % sizeof buf;
        while (len < want) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            const uint32_t r = (uint32_t)(state >> 32);
            if (round % 2) {
                buf[len++] = (uint8_t)r;
            } else {
                const char *b = bits[r % (sizeof bits / sizeof bits[0])];
                const size_t k = b[0] ? strlen(b) : 1;
                if (len + k > sizeof buf) break;
                memcpy(buf + len, b, k);
                len += k;
            }
        }
        size_t n;
        int32_t *ids = tokenize(v, buf, len, true, round % 3 == 0, &n);
        for (size_t i = 0; i < n; i++) bad += ids[i] < 0 || ids[i] >= hl_vocab_n_tokens(v);
        free(ids);
    }
    CHECK_MSG(bad == 0, "%d ids out of range from random input", bad);
    printf("random input: 3000 strings of random bytes and characters tokenized\n");
}

/* ------------------------------------------------- crafted vocabulary -- */

static void craft_vocab(craft *c, const char *const *tokens, int n, const int32_t *types, bool with_ids) {
    cr_begin(c, 3);
    cr_kv_str(c, "tokenizer.ggml.model", "bert");
    cr_kv_strs(c, "tokenizer.ggml.tokens", tokens, (size_t)n);
    cr_kv_arr32(c, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, (size_t)n);
    if (with_ids) {
        cr_kv_u32(c, "tokenizer.ggml.bos_token_id", 2);
        cr_kv_u32(c, "tokenizer.ggml.seperator_token_id", 3);
        cr_kv_u32(c, "tokenizer.ggml.unknown_token_id", 1);
    }
}

static void check_tiny(void) {
    /* ids: [PAD] [UNK] [CLS] [SEP] ▁un ▁unk aff able ▁a ▁, ▁中 */
    static const char *const tokens[] = {"[PAD]",
                                         "[UNK]",
                                         "[CLS]",
                                         "[SEP]",
                                         "\xe2\x96\x81un",
                                         "\xe2\x96\x81"
                                         "unk",
                                         "aff",
                                         "able",
                                         "\xe2\x96\x81"
                                         "a",
                                         "\xe2\x96\x81,",
                                         "\xe2\x96\x81\xe4\xb8\xad"};
    static const int32_t types[] = {3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1};
    craft c;
    hl_vocab *v;
    craft_vocab(&c, tokens, 11, types, true);
    hearth_status st = load_crafted(&c, &v);
    cr_free(&c);
    CHECK_MSG(st == HEARTH_OK, "tiny WordPiece vocabulary: %s", hearth_last_error());
    if (st == HEARTH_OK) {
        static const struct {
            const char *text;
            int32_t ids[8];
            size_t n;
        } cases[] = {
            {"Unaffable", {2, 4, 6, 7, 3}, 5}, /* longest first: ▁unk is no prefix of "unaffable" */
            {"unaffablex", {2, 1, 3}, 3},      /* no piece for "x": the whole word is [UNK] */
            {"UNK,a", {2, 5, 9, 8, 3}, 5},     /* punctuation splits, case folds */
            {"\xe4\xb8\xad"
             "a",
             {2, 10, 8, 3},
             4},                         /* CJK is a word of its own */
            {"A\xcc\x81", {2, 8, 3}, 3}, /* accents stripped */
            {"", {2, 3}, 2},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            size_t n;
            int32_t *ids = tokenize(v, (const uint8_t *)cases[i].text, strlen(cases[i].text), true, true, &n);
            CHECK_MSG(n == cases[i].n && memcmp(ids, cases[i].ids, n * sizeof *ids) == 0, "tiny: '%s'", cases[i].text);
            if (n != cases[i].n || memcmp(ids, cases[i].ids, n * sizeof *ids)) print_ids("hearth", ids, n);
            free(ids);
        }
        hl_vocab_free(v);
    }
    /* without id keys: llama.cpp's defaults 101 ([CLS]) and 102 ([SEP]) are out of range here */
    craft_vocab(&c, tokens, 11, types, false);
    st = load_crafted(&c, &v);
    cr_free(&c);
    CHECK_MSG(st == HEARTH_ERR_FORMAT && v == NULL, "a WordPiece vocabulary without [CLS]/[SEP] loads");
}

int main(void) {
    check_tiny();
    const char *path = getenv("HEARTH_MODEL_MINILM");
    FILE *probe = path ? fopen(path, "rb") : NULL;
    if (!probe) { /* the crafted checks ran; the model's need scripts/fetch_model.sh minilm */
        printf("SKIP: model not found (%s); run scripts/fetch_model.sh minilm\n",
               path ? path : "HEARTH_MODEL_MINILM unset");
        return check_failures ? check_report() : 77;
    }
    fclose(probe);
    cJSON *ref = json_file_read(check_test_path("reference/wordpiece_reference.json"));
    CHECK(ref != NULL);
    if (!ref) return check_report();
    gguf_file *f = NULL;
    hearth_status st = hl_gguf_open(path, &f);
    CHECK_MSG(st == HEARTH_OK, "%s", hearth_last_error());
    hl_vocab *v = NULL;
    if (st == HEARTH_OK) st = hl_vocab_load(f, &v);
    CHECK_MSG(st == HEARTH_OK, "%s", hearth_last_error());
    if (st == HEARTH_OK) {
        CHECK(check_reference(v, ref) == 0);
        CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(ref, "cases")) >= 60);
        check_pieces(v);
        check_random(v);
        report_speed(v, cJSON_GetObjectItem(ref, "cases"));
    }
    hl_vocab_free(v);
    if (f) hl_gguf_close(f);
    cJSON_Delete(ref);
    return check_report();
}
