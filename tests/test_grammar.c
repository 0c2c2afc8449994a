/* The GBNF engine (src/grammar/): parsing and its errors with line and
 * column, matching byte by byte (UTF-8 classes, characters split across
 * calls, every repetition form, recursion), the state API's guarantees (a
 * rejected accept leaves the state as it was; copies are independent), and
 * the token trie's allowed-token walk against accepting each token one by
 * one from copies of the state. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "grammar/grammar.h"

static hl_grammar *parse(const char *text) {
    hl_grammar *g = NULL;
    hearth_status st = hl_grammar_parse(text, strlen(text), &g);
    CHECK_MSG(st == HEARTH_OK, "grammar failed to parse: %s\n%s", hearth_last_error(), text);
    return st == HEARTH_OK ? g : NULL;
}

static bool matches(const hl_grammar *g, const char *s) { return hl_grammar_matches(g, s, strlen(s)); }

/* Each of yes[] must match and each of no[] must not (NULL-terminated). */
static void check_lang(const char *text, const char *const *yes, const char *const *no) {
    hl_grammar *g = parse(text);
    if (!g) return;
    for (size_t i = 0; yes[i]; i++) CHECK_MSG(matches(g, yes[i]), "should match: \"%s\" in\n%s", yes[i], text);
    for (size_t i = 0; no[i]; i++) CHECK_MSG(!matches(g, no[i]), "should not match: \"%s\" in\n%s", no[i], text);
    hl_grammar_free(g);
}
#define LANG(text, ...) check_lang(text, (const char *const[]){__VA_ARGS__}, no_)
#define NO(...)                                                                                                        \
    (const char *const[]) { __VA_ARGS__, NULL }

static const char *const *no_;

static void check_error(const char *text, const char *where, const char *what) {
    hl_grammar *g = NULL;
    hearth_status st = hl_grammar_parse(text, strlen(text), &g);
    CHECK_MSG(st == HEARTH_ERR_INVALID_ARG, "should fail: %s", text);
    if (st != HEARTH_ERR_INVALID_ARG) {
        hl_grammar_free(g);
        return;
    }
    char prefix[64];
    snprintf(prefix, sizeof prefix, "grammar %s: ", where);
    const char *msg = hearth_last_error();
    CHECK_MSG(strncmp(msg, prefix, strlen(prefix)) == 0, "want \"%s\", got \"%s\" for\n%s", prefix, msg, text);
    CHECK_MSG(strstr(msg, what) != NULL, "want \"%s\" in \"%s\"", what, msg);
    CHECK(hearth_grammar_check(text) == HEARTH_ERR_INVALID_ARG);
}

static const char JSON_GBNF[] =
    "root   ::= object\n"
    "value  ::= object | array | string | number | (\"true\" | \"false\" | \"null\") ws\n"
    "\n"
    "object ::=\n"
    "  \"{\" ws (\n"
    "            string \":\" ws value\n"
    "    (\",\" ws string \":\" ws value)*\n"
    "  )? \"}\" ws\n"
    "\n"
    "array  ::=\n"
    "  \"[\" ws (\n"
    "            value\n"
    "    (\",\" ws value)*\n"
    "  )? \"]\" ws\n"
    "\n"
    "string ::=\n"
    "  \"\\\"\" (\n"
    "    [^\"\\\\\\x7F\\x00-\\x1F] |\n"
    "    \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4}) # escapes\n"
    "  )* \"\\\"\" ws\n"
    "\n"
    "number ::= (\"-\"? ([0-9] | [1-9] [0-9]{0,15})) (\".\" [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws\n"
    "\n"
    "# Optional space: by convention, applied in this grammar after literal chars when allowed\n"
    "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n";

static void test_languages(void) {
    no_ = NO("", "b", "ab", "aa");
    LANG("root ::= \"a\"", "a", NULL);
    no_ = NO("a", "ab", "abcd", "abd", "\n");
    LANG("root ::= \"abc\"  # a comment\n", "abc", NULL);
    no_ = NO("x", "\\n", "ab");
    LANG("root ::= \"\\n\\t\\r\\\\\\\"\\[\\]\\x41\\u00e9\\U0001F600\"", "\n\t\r\\\"[]A\xc3\xa9\xf0\x9f\x98\x80", NULL);
    /* classes, ranges, negation */
    no_ = NO("", "A", "aa", "-", "_");
    LANG("root ::= [a-z0-9]", "a", "m", "z", "0", "9", NULL);
    no_ = NO("a", "z", "", "ab");
    LANG("root ::= [^a-z]", "A", "0", "\n", "\xc3\xa9", "\xf0\x9f\x98\x80", NULL);
    no_ = NO("b", "");
    LANG("root ::= [-a]", "-", "a", NULL);
    no_ = NO("b", "");
    LANG("root ::= [a-]", "-", "a", NULL);
    no_ = NO("a", "y", "");
    LANG("root ::= [\\]\\[\\\\x]", "]", "[", "x", NULL);
    /* alternation and grouping */
    no_ = NO("", "ab", "cat dog", "ca");
    LANG("root ::= \"cat\" | \"dog\" | \"a\" (\"x\" | \"y\")", "cat", "dog", "ax", "ay", NULL);
    no_ = NO("a", "", "aaa");
    LANG("root ::= x x\nx ::= \"a\"", "aa", NULL);
    /* repetitions */
    no_ = NO("b", "ab", "aab");
    LANG("root ::= \"a\"*", "", "a", "aaaaaaaaaaaaaaaa", NULL);
    no_ = NO("", "b", "aab");
    LANG("root ::= \"a\"+", "a", "aa", "aaaaaaa", NULL);
    no_ = NO("aa", "ba", "abb");
    LANG("root ::= \"a\"? \"b\"?", "", "a", "b", "ab", NULL);
    no_ = NO("", "a", "aa", "aaaa");
    LANG("root ::= \"a\"{3}", "aaa", NULL);
    no_ = NO("", "a");
    LANG("root ::= \"a\"{2,}", "aa", "aaa", "aaaaaaaaa", NULL);
    no_ = NO("", "a", "aaaaa", "aab");
    LANG("root ::= \"a\"{2,4}", "aa", "aaa", "aaaa", NULL);
    no_ = NO("a", "b");
    LANG("root ::= \"a\"{0}", "", NULL);
    no_ = NO("a", "abab", "aba");
    LANG("root ::= (\"ab\"){0,1} | \"ab\" \"ab\" \"ab\"", "", "ab", "ababab", NULL);
    no_ = NO("", "ab", "ac", "abac", "c");
    LANG("root ::= \"ab\"+ \"c\"", "abc", "ababc", NULL);
    no_ = NO("", "z", "xyxy");
    LANG("root ::= (\"x\" | \"y\"){1,3}", "x", "y", "xy", "yyx", NULL);
    /* recursion: balanced parentheses, right recursion */
    no_ = NO("(", ")", "(()", "())", ")(", "(a)");
    LANG("root ::= p\np ::= (\"(\" p \")\")*", "", "()", "(())", "()()", "(()(()))", "((((((((((()))))))))))", NULL);
    no_ = NO("1+", "+1", "1++2", "(1", "");
    LANG("root ::= expr\nexpr ::= term (\"+\" term)*\nterm ::= [0-9]+ | \"(\" expr \")\"", "1", "1+2", "(1+2)+3",
         "((12))", NULL);
    /* multi-line rules: after ::=, after |, inside ( ) */
    no_ = NO("c", "");
    LANG("root ::=\n  \"a\" |\n  \"b\"\n", "a", "b", NULL);
    no_ = NO("a", "abc", "b");
    LANG("root ::= (\n  \"a\"\n  \"b\"\n  | \"c\"\n)\n", "ab", "c", NULL);
    /* rule names with - and _; a rule defined twice keeps its last body (llama.cpp) */
    no_ = NO("x");
    LANG("root ::= my-rule_1\nmy-rule_1 ::= \"x\"\nmy-rule_1 ::= \"y\"", "y", NULL);
    /* dot */
    no_ = NO("", "ab", "\xff", "\xc3", "\xed\xa0\x80");
    LANG("root ::= .", "a", "\n", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf", NULL);
}

static void test_utf8(void) {
    /* Greek lowercase: U+03B1..U+03C9, two bytes each (CE B1 .. CF 89). */
    no_ = NO("a", "\xce\x91", "\xcf\x8a", "\xce", "\xce\xb1\xce", "\xc1\xb1");
    LANG("root ::= [\xce\xb1-\xcf\x89]+", "\xce\xb1", "\xcf\x89", "\xce\xbb\xce\xb1\xcf\x82", NULL);
    /* A class spanning 1- to 4-byte characters, and one excluding a middle range. */
    no_ = NO("\x01", "\xf4\x90\x80\x80", "\xc0\x80", "\xe0\x80\x80");
    LANG("root ::= [\\x02-\\U0010FFFF]", "a", "\xdf\xbf", "\xe0\xa0\x80", "\xef\xbf\xbf", "\xf0\x90\x80\x80",
         "\xf4\x8f\xbf\xbf", NULL);
    no_ = NO("\xe2\x82\xac", "\xe3\x80\x80");
    LANG("root ::= [^\\u2000-\\u3000]", "\xc2\xa0", "\xe1\xbf\xbf", "\xe3\x80\x81", NULL);

    hl_grammar *g = parse("root ::= \"[\" [\xce\xb1-\xcf\x89] \"]\" | \"\xf0\x9f\x98\x80\" .");
    if (!g) return;
    hl_grammar_state *s;
    CHECK(hl_grammar_state_init(g, &s) == HEARTH_OK);
    /* A character split across accept calls. */
    CHECK(hl_grammar_accept(s, "[\xce", 2));
    CHECK(!hl_grammar_is_complete(s) && hl_grammar_can_continue(s));
    CHECK(!hl_grammar_accept(s, "\x91", 1)); /* U+0391 is outside */
    CHECK(!hl_grammar_accept(s, "a", 1));    /* not a continuation byte */
    CHECK(hl_grammar_accept(s, "\xbb", 1));
    CHECK(hl_grammar_accept(s, "]", 1));
    CHECK(hl_grammar_is_complete(s) && !hl_grammar_can_continue(s));
    hl_grammar_state_free(s);
    /* A literal emoji byte by byte, then `.` on an emoji in two halves. */
    CHECK(hl_grammar_state_init(g, &s) == HEARTH_OK);
    const char *emoji = "\xf0\x9f\x98\x80";
    for (int i = 0; i < 4; i++) CHECK(hl_grammar_accept(s, emoji + i, 1));
    CHECK(hl_grammar_accept(s, "\xf0\x9f", 2));
    CHECK(!hl_grammar_accept(s, "\xf0", 1)); /* a lead byte where a continuation belongs */
    CHECK(!hl_grammar_is_complete(s));
    CHECK(hl_grammar_accept(s, "\x8e\x89", 2));
    CHECK(hl_grammar_is_complete(s));
    hl_grammar_state_free(s);
    hl_grammar_free(g);
}

static void test_json(void) {
    no_ = NO("", "{", "{\"a\"}", "{\"a\":}", "[1,]", "{\"a\":1,}", "tru", "\"\\x\"", "01x", "{\"a\":\"\x01\"}", "[1 2]",
             "nul", "{'a':1}");
    LANG(JSON_GBNF, "{}", "{\"a\":1}", "{\"a\": [1, 2.5, -3e19, true, false, null, \"x\\n\\u00e9\"]}",
         "{ \"k\" : { \"n\" : [ ] } }", "{\"\xc3\xa9\xf0\x9f\x98\x80\":\"\\\"\"}", "{\n  \"a\": 1\n}", NULL);
}

static void test_state_api(void) {
    hl_grammar *g = parse("root ::= \"ab\" \"c\"* | \"x\"");
    if (!g) return;
    hl_grammar_state *s, *c;
    CHECK(hl_grammar_state_init(g, &s) == HEARTH_OK);
    CHECK(hl_grammar_state_init(g, &c) == HEARTH_OK);
    CHECK(!hl_grammar_is_complete(s) && hl_grammar_can_continue(s));
    CHECK(hl_grammar_accept(s, "a", 1));
    /* A rejected accept leaves the state unchanged, even after a good prefix. */
    CHECK(!hl_grammar_accept(s, "bcx", 3));
    CHECK(!hl_grammar_is_complete(s));
    CHECK(hl_grammar_accept(s, "b", 1));
    CHECK(hl_grammar_is_complete(s) && hl_grammar_can_continue(s));
    CHECK(hl_grammar_state_copy(c, s) == HEARTH_OK);
    CHECK(hl_grammar_accept(s, "cc", 2));
    CHECK(!hl_grammar_accept(c, "x", 1));
    CHECK(hl_grammar_accept(c, "c", 1) && hl_grammar_is_complete(c));
    CHECK(hl_grammar_accept(s, "", 0));
    /* Many bytes: the state compacts its nodes and still tracks them. */
    for (int i = 0; i < 20000; i++) CHECK_MSG(hl_grammar_accept(s, "c", 1) || (i = 20000, false), "byte %d", i);
    CHECK(hl_grammar_is_complete(s));
    hl_grammar_state_free(s);
    hl_grammar_state_free(c);
    /* x then nothing: complete, no way forward. */
    CHECK(hl_grammar_state_init(g, &s) == HEARTH_OK);
    CHECK(hl_grammar_accept(s, "x", 1));
    CHECK(hl_grammar_is_complete(s) && !hl_grammar_can_continue(s));
    CHECK(!hl_grammar_accept(s, "x", 1));
    hl_grammar_state_free(s);
    hl_grammar_free(g);

    /* A grammar with no way forward at all: an infinite rule never completes
     * but always continues; an empty class can never be read. */
    g = parse("root ::= \"a\" root");
    if (g) {
        CHECK(!matches(g, "aaaa"));
        CHECK(hl_grammar_state_init(g, &s) == HEARTH_OK);
        CHECK(hl_grammar_accept(s, "aaaa", 4) && hl_grammar_can_continue(s) && !hl_grammar_is_complete(s));
        hl_grammar_state_free(s);
        hl_grammar_free(g);
    }
    g = parse("root ::= \"a\" [^\\x00-\\U0010FFFF]");
    if (g) {
        CHECK(hl_grammar_state_init(g, &s) == HEARTH_OK);
        /* "a" leads nowhere, so it is refused. */
        CHECK(hl_grammar_can_continue(s) && !hl_grammar_accept(s, "a", 1));
        hl_grammar_state_free(s);
        hl_grammar_free(g);
    }
    /* Right recursion does not deepen the stacks: a long run stays cheap. */
    g = parse("root ::= item*\nitem ::= [a-z] | \"(\" root \")\"");
    if (g) {
        size_t n = 200000;
        char *text = malloc(n + 1);
        for (size_t i = 0; i < n; i++) text[i] = (char)('a' + i % 26);
        CHECK(hl_grammar_matches(g, text, n));
        for (size_t i = 0; i < 1000; i++) text[i] = '(', text[n - 1 - i] = ')';
        CHECK(hl_grammar_matches(g, text, n));
        text[n - 1] = 'a';
        CHECK(!hl_grammar_matches(g, text, n));
        free(text);
        hl_grammar_free(g);
    }
}

static void test_errors(void) {
    check_error("root ::= \"a\" )", "line 1 column 14", "unexpected ')'");
    check_error("root ::= \"abc", "line 1 column 10", "unterminated string");
    check_error("root ::= [a-z", "line 1 column 10", "unterminated character class");
    check_error("root ::= [z-a]", "line 1 column 11", "reversed");
    check_error("root ::= foo\n", "line 1 column 10", "undefined rule 'foo'");
    check_error("a ::= \"x\"\n", "line 1 column 1", "no rule named 'root'");
    check_error("root ::= a\na ::= a \"x\"\n", "line 2 column 7", "left recursion");
    check_error("root ::= b \"x\"\nb ::= c? root\nc ::= \"c\"\n", "line 2 column 10", "left recursion");
    check_error("root ::= (\"a\"*)*", "line 1 column 16", "left recursion");
    check_error("root ::= \"a\"\n  | \"b\"\n", "line 2 column 3", "expecting a rule name");
    check_error("root = \"a\"", "line 1 column 6", "expecting '::='");
    check_error("root ::= \"a\"{10001}", "line 1 column 14", "limit");
    check_error("root ::= \"a\"{3,2}", "line 1 column 16", "less than");
    check_error("root ::= \"a\"{2", "line 1 column 15", "expecting ',' or '}'");
    check_error("root ::= * \"a\"", "line 1 column 10", "expecting an item");
    check_error("root ::= \"\\q\"", "line 1 column 11", "unknown escape");
    check_error("root ::= \"\\x4\"", "line 1 column 14", "hex digits");
    check_error("root ::= \"\\uD800\"", "line 1 column 11", "not a character");
    check_error("root ::= \"\xc3\x28\"", "line 1 column 11", "invalid UTF-8");
    check_error("root ::= \"\xc0\xaf\"", "line 1 column 11", "invalid UTF-8");
    check_error("root ::= (\"a\" | \"b\"\n", "line 2 column 1", "expecting ')'");
    check_error("root ::= \"\xc3\xa9\" @", "line 1 column 14", "unexpected '@'");
    check_error("root ::= []", "line 1 column 10", "empty character class");
    check_error("\n\nroot ::= x\nx ::= \"a\" y\n", "line 4 column 11", "undefined rule 'y'");
    /* Nesting past the limit is an error, not a stack overflow. */
    char deep[2000];
    size_t k = (size_t)snprintf(deep, sizeof deep, "root ::= ");
    for (int i = 0; i < 300; i++) deep[k++] = '(';
    deep[k] = '\0';
    check_error(deep, "line 1 column 266", "nested too deeply");
    CHECK(hearth_grammar_check(NULL) == HEARTH_ERR_INVALID_ARG);
    CHECK(hearth_grammar_check(JSON_GBNF) == HEARTH_OK);
}

/* allowed_tokens against accepting each token from a copy of the state. */
static void check_allowed(const hl_grammar *g, const hl_token_trie *t, const char *const *vocab, int32_t n,
                          const char *prefix) {
    hl_grammar_state *s, *c;
    if (hl_grammar_state_init(g, &s) != HEARTH_OK || hl_grammar_state_init(g, &c) != HEARTH_OK) {
        CHECK(false);
        return;
    }
    CHECK_MSG(hl_grammar_accept(s, prefix, strlen(prefix)), "prefix \"%s\"", prefix);
    uint8_t *allowed = malloc((size_t)n);
    CHECK(hl_grammar_allowed_tokens(s, t, allowed) == HEARTH_OK);
    int mismatches = 0;
    for (int32_t i = 0; i < n; i++) {
        CHECK(hl_grammar_state_copy(c, s) == HEARTH_OK);
        bool want = vocab[i][0] && hl_grammar_accept(c, vocab[i], strlen(vocab[i]));
        if (want != (allowed[i] != 0) && mismatches++ < 5)
            CHECK_MSG(false, "after \"%s\": token %d \"%s\" brute force %d, trie %d", prefix, i, vocab[i], want,
                      allowed[i]);
    }
    CHECK(mismatches == 0);
    free(allowed);
    hl_grammar_state_free(s);
    hl_grammar_state_free(c);
}

static void test_allowed_tokens(void) {
    static const char *const vocab[] = {
        "",         "{",
        "}",        "{\"",
        "\"",       "\":",
        ":",        ",",
        ", \"",     " ",
        "\n",       "  ",
        "a",        "ab",
        "abc",      "b",
        "true",     "tr",
        "t",        "false",
        "null",     "nul",
        "1",        "12",
        "123",      "0",
        "-",        "-1",
        ".",        ".5",
        "e",        "E+",
        "[",        "]",
        "[]",       "{}",
        "\\",       "\\n",
        "\\u",      "00e9",
        "\xc3",     "\xa9",
        "\xc3\xa9", "\xf0\x9f",
        "\x98\x80", "\xf0\x9f\x98\x80",
        "x\"",      "\"}",
        "\"]",      "}\n",
        "a\"b",     "\x01",
        "ab",       "(",
        ")",        "()",
        "((",       "))",
        "(a)",      "z",
        "\xce",     "\xce\xb1",
        "\xb1",     "\xcf\x89\xce",
        "ok\"",     "\",\"",
        "1,",       "1.5e",
        "true}",
    };
    int32_t n = (int32_t)(sizeof vocab / sizeof vocab[0]);
    size_t lens[sizeof vocab / sizeof vocab[0]];
    for (int32_t i = 0; i < n; i++) lens[i] = strlen(vocab[i]);
    hl_token_trie *t;
    CHECK(hl_token_trie_build(vocab, lens, n, &t) == HEARTH_OK);

    hl_grammar *g = parse(JSON_GBNF);
    static const char *const json_prefixes[] = {
        "",          "{",          "{\"",           "{\"a",        "{\"a\"",        "{\"a\":",  "{\"a\": ", "{\"a\":1",
        "{\"a\":[",  "{\"a\":[1,", "{\"a\":\"\xc3", "{\"a\":\"\\", "{\"a\":\"\\u0", "{\"a\":t", "{\"a\":-", "{\"a\":1.",
        "{\"a\":1e", "{}",         "{\"a\":{}}"};
    for (size_t i = 0; g && i < sizeof json_prefixes / sizeof json_prefixes[0]; i++)
        check_allowed(g, t, vocab, n, json_prefixes[i]);
    hl_grammar_free(g);

    g = parse("root ::= p\np ::= (\"(\" p \")\" | [a-z\xce\xb1-\xcf\x89])*");
    static const char *const paren_prefixes[] = {"", "(", "((", "(a", "()", "(\xce", "(\xce\xb1(", "(((a))"};
    for (size_t i = 0; g && i < sizeof paren_prefixes / sizeof paren_prefixes[0]; i++)
        check_allowed(g, t, vocab, n, paren_prefixes[i]);
    hl_grammar_free(g);

    g = parse("root ::= \"ab\"{1,3} [0-9]? .");
    static const char *const rep_prefixes[] = {"", "a", "ab", "aba", "abab", "ababab", "ab1", "ab\xf0\x9f"};
    for (size_t i = 0; g && i < sizeof rep_prefixes / sizeof rep_prefixes[0]; i++)
        check_allowed(g, t, vocab, n, rep_prefixes[i]);
    hl_grammar_free(g);
    hl_token_trie_free(t);

    /* An empty vocabulary and one of duplicates. */
    CHECK(hl_token_trie_build(NULL, NULL, 0, &t) == HEARTH_OK);
    g = parse("root ::= \"a\"");
    hl_grammar_state *s;
    uint8_t one;
    if (g && hl_grammar_state_init(g, &s) == HEARTH_OK) {
        CHECK(hl_grammar_allowed_tokens(s, t, &one) == HEARTH_OK);
        hl_token_trie_free(t);
        static const char *const dup[] = {"a", "a", "b", "a"};
        size_t dl[] = {1, 1, 1, 1};
        uint8_t al[4];
        CHECK(hl_token_trie_build(dup, dl, 4, &t) == HEARTH_OK);
        CHECK(hl_grammar_allowed_tokens(s, t, al) == HEARTH_OK);
        CHECK(al[0] && al[1] && !al[2] && al[3]);
        hl_grammar_state_free(s);
    }
    hl_token_trie_free(t);
    hl_grammar_free(g);
}

int main(void) {
    test_languages();
    test_utf8();
    test_json();
    test_state_api();
    test_errors();
    test_allowed_tokens();
    return check_report();
}
