/* JSON Schema to GBNF (src/grammar/json_schema.c): schemas of the supported
 * subset convert, and each grammar, compiled by src/grammar/, accepts
 * chosen valid JSON texts and rejects invalid ones; integer and number
 * ranges are checked value by value; every keyword outside the subset,
 * bad $refs, bad JSON and bad types fail with an error that names them. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"

static hl_grammar *compile(const char *schema) {
    char *g = NULL;
    hearth_status st = hl_json_schema_to_gbnf(schema, strlen(schema), &g);
    CHECK_MSG(st == HEARTH_OK, "%s: %s", schema, hearth_last_error());
    if (st != HEARTH_OK) return NULL;
    hl_grammar *gr = NULL;
    st = hl_grammar_parse(g, strlen(g), &gr);
    CHECK_MSG(st == HEARTH_OK, "%s: %s\n%s", schema, hearth_last_error(), g);
    free(g);
    return st == HEARTH_OK ? gr : NULL;
}

/* Texts separated by '\n' lines of "+ text" (accepted) or "- text". */
static void expect(const char *schema, const char *const *cases, size_t n) {
    hl_grammar *g = compile(schema);
    if (!g) return;
    for (size_t i = 0; i < n; i++) {
        bool want = cases[i][0] == '+';
        const char *text = cases[i] + 2;
        CHECK_MSG(hl_grammar_matches(g, text, strlen(text)) == want, "schema %s: text %s should be %s", schema, text,
                  want ? "accepted" : "rejected");
    }
    hl_grammar_free(g);
}
#define EXPECT(schema, ...)                                                                                            \
    do {                                                                                                               \
        static const char *const cases_[] = {__VA_ARGS__};                                                             \
        expect(schema, cases_, sizeof cases_ / sizeof cases_[0]);                                                      \
    } while (0)

/* Conversion fails with INVALID_ARG and a message containing `part`. */
static void expect_error(const char *schema, const char *part) {
    char *g = NULL;
    hearth_status st = hl_json_schema_to_gbnf(schema, strlen(schema), &g);
    CHECK_MSG(st == HEARTH_ERR_INVALID_ARG && !g, "%s: status %d", schema, st);
    CHECK_MSG(strstr(hearth_last_error(), part) != NULL, "%s: error '%s' lacks '%s'", schema, hearth_last_error(),
              part);
    free(g);
}

static void test_primitives(void) {
    EXPECT("{\"type\":\"string\"}", "+ \"\"", "+ \"a b\"", "+ \"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\uD83D\\uDE00\"",
           "+ \"caf\xc3\xa9\"", "+ \"x\" ", "- \"\\ud83d\"", "- \"\\x\"", "- \"a\nb\"", "- \"abc", "- abc", "-  \"a\"");
    EXPECT("{\"type\":\"integer\"}", "+ 0", "+ -7", "+ 1234567890123456", "- 12345678901234567", "- 01", "- 1.0",
           "- 1e3", "- +1", "- -");
    EXPECT("{\"type\":\"number\"}", "+ 0", "+ -0.5", "+ 1.25e-7", "+ 1E+300", "+ 3.14159", "- .5", "- 1.", "- 00",
           "- NaN", "- 1e");
    EXPECT("{\"type\":\"boolean\"}", "+ true", "+ false", "- True", "- 1");
    EXPECT("{\"type\":\"null\"}", "+ null", "- nul", "- \"null\"");
    static const char *const any[] = {"+ {}",   "+ []",    "+ {\"a\": [1, {\"b\": null}], \"c\": \"d\"}",
                                      "+ -1.5", "+ \"s\"", "+ true",
                                      "+ null", "- {a:1}", "- [1,]",
                                      "- "};
    expect("{}", any, sizeof any / sizeof any[0]);
    expect("true", any, sizeof any / sizeof any[0]);
    expect("{\"title\":\"x\",\"description\":\"d\",\"$comment\":\"c\",\"examples\":[1],\"default\":2}", any,
           sizeof any / sizeof any[0]);
    EXPECT("{\"type\":[\"string\",\"null\"]}", "+ \"a\"", "+ null", "- 1");
    /* bounded whitespace: one newline and up to 20 spaces */
    EXPECT("{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}", "+ [1, 2]", "+ [\n  1,\n  2\n]",
           "+ [1,\n                    2]", "- [1,\n                     2]", "- [1,  2]", "- [1,\n\n2]");
}

static void test_objects(void) {
    const char *s = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"string\"},"
                    "\"c\":{\"type\":\"boolean\"}},\"required\":[\"b\"]}";
    EXPECT(s, "+ {\"b\":\"x\"}", "+ {\"a\": 1, \"b\": \"x\"}", "+ {\"b\": \"x\", \"c\": false}",
           "+ {\"a\":1,\"b\":\"x\",\"c\":true}", "+ {\n  \"a\": 1,\n  \"b\": \"x\"\n}", "- {}", "- {\"a\": 1}",
           "- {\"b\": \"x\", \"a\": 1}", "- {\"b\": \"x\", \"d\": 1}", "- {\"b\": 1}", "- {\"b\":\"x\",}",
           "- {,\"b\":\"x\"}", "- {\"b\":\"x\" \"c\":true}");
    /* all optional: any subset, in order */
    s = "{\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"integer\"},\"c\":{\"type\":\"integer\"}}}";
    EXPECT(s, "+ {}", "+ {\"a\":1}", "+ {\"b\":1}", "+ {\"c\":1}", "+ {\"a\":1,\"c\":3}", "+ {\"b\":2,\"c\":3}",
           "+ {\"a\":1,\"b\":2,\"c\":3}", "- {\"c\":1,\"a\":1}", "- {\"a\":1,\"a\":1}", "- {\"d\":1}");
    /* all required */
    s = "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"number\"},\"y\":{\"type\":\"number\"}},"
        "\"required\":[\"x\",\"y\"],\"additionalProperties\":false}";
    EXPECT(s, "+ {\"x\": 1, \"y\": 2.5}", "- {\"x\": 1}", "- {\"y\": 1, \"x\": 2}", "- {\"x\":1,\"y\":2,\"z\":3}");
    /* additional properties: true, a schema; absent on a bare object */
    s = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},\"additionalProperties\":true}";
    EXPECT(s, "+ {}", "+ {\"a\":1}", "+ {\"a\":1,\"z\":[1]}", "+ {\"z\":\"s\",\"ab\":2}", "+ {\"b\": null}",
           "- {\"a\":\"s\"}", "- {\"z\":1,\"a\":1}", "- {\"a\":1,\"a\":2}", "- {\"a\\u0062\":1}");
    s = "{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}}";
    EXPECT(s, "+ {}", "+ {\"k\": 1, \"k2\": -3}", "+ {\"\\n\": 1}", "- {\"k\": \"v\"}");
    EXPECT("{\"type\":\"object\"}", "+ {}", "+ {\"a\": {\"b\": [true]}}", "- []", "- 1");
    /* many declared keys: extra keys still differ from every one of them */
    char big[4000] = "{\"additionalProperties\":{\"type\":\"string\"},\"properties\":{";
    for (int i = 0; i < 90; i++)
        snprintf(big + strlen(big), sizeof big - strlen(big), "%s\"%c%s\":{\"type\":\"integer\"}", i ? "," : "",
                 (char)('!' + i + (i >= 1) + (i >= 58)), i % 2 ? "k" : "");
    strcat(big, "}}");
    EXPECT(big, "+ {\"#k\": 1, \"#\": \"s\", \"~~\": \"t\", \"\xc3\xa9\": \"u\"}", "- {\"#k\": \"s\"}",
           "- {\"B\": \"s\"}", "+ {\"B\": 1}", "+ {\"A\": \"s\"}", "- {\"A\": 1}", "+ {\"Bx\": \"s\"}");
    /* required names outside properties */
    EXPECT("{\"type\":\"object\",\"required\":[\"id\"]}", "+ {\"id\": 5}", "+ {\"id\": 5, \"x\": 1}", "- {}",
           "- {\"x\": 1}");
    /* keys needing escapes, non-ASCII keys */
    EXPECT("{\"properties\":{\"q\\\"k\":{\"type\":\"integer\"},\"\xc3\xa9\":{\"type\":\"integer\"}},"
           "\"required\":[\"q\\\"k\"]}",
           "+ {\"q\\\"k\": 1}", "+ {\"q\\\"k\": 1, \"\xc3\xa9\": 2}", "+ {\"q\\\"k\": 1, \"\\u00e9\": 2}",
           "- {\"qk\": 1}");
    /* nested objects */
    s = "{\"type\":\"object\",\"properties\":{\"user\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":"
        "\"string\"},\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}},\"required\":[\"name\"]}},"
        "\"required\":[\"user\"]}";
    EXPECT(s, "+ {\"user\": {\"name\": \"a\", \"tags\": [\"x\", \"y\"]}}", "+ {\"user\":{\"name\":\"a\"}}",
           "- {\"user\": {\"tags\": []}}", "- {\"user\": {\"name\": \"a\", \"tags\": [1]}}");
}

static void test_arrays(void) {
    EXPECT("{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":2,\"maxItems\":3}", "+ [1,2]",
           "+ [1, 2, 3]", "- [1]", "- []", "- [1,2,3,4]", "- [1,\"a\"]");
    EXPECT("{\"type\":\"array\",\"minItems\":1}", "+ [null]", "+ [1, \"a\", {}]", "- []");
    EXPECT("{\"type\":\"array\",\"maxItems\":0}", "+ []", "+ [ ]", "- [1]");
    EXPECT("{\"type\":\"array\",\"items\":false}", "+ []", "- [1]");
    EXPECT("{\"type\":\"array\",\"items\":{\"type\":\"boolean\"},\"maxItems\":1}", "+ []", "+ [true]",
           "- [true,false]");
    /* tuples: items present from minItems on are optional, in order */
    EXPECT("{\"type\":\"array\",\"prefixItems\":[{\"type\":\"integer\"},{\"type\":\"string\"}]}", "+ []", "+ [1]",
           "+ [1, \"a\"]", "- [\"a\"]", "- [1, \"a\", 2]", "- [1, 2]");
    EXPECT("{\"type\":\"array\",\"prefixItems\":[{\"type\":\"integer\"},{\"type\":\"string\"}],\"minItems\":2,"
           "\"items\":{\"type\":\"boolean\"},\"maxItems\":4}",
           "+ [1, \"a\"]", "+ [1, \"a\", true]", "+ [1, \"a\", true, false]", "- [1]",
           "- [1, \"a\", true, false, true]", "- [1, \"a\", 3]");
    EXPECT("{\"type\":\"array\",\"items\":[{\"const\":1},{\"const\":2}],\"minItems\":2}", "+ [1,2]", "- [1]",
           "- [2,1]");
    EXPECT("{\"type\":\"array\",\"items\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}}",
           "+ [[1], [], [2, 3]]", "- [[1], 2]");
}

static void test_enum_const(void) {
    EXPECT("{\"enum\":[\"red\",\"green\",null,3,1.5,true]}", "+ \"red\"", "+ \"green\"", "+ null", "+ 3", "+ 3.0",
           "+ 1.5", "+ true", "- \"blue\"", "- false", "- 4", "- \"Red\"");
    EXPECT("{\"type\":\"string\",\"enum\":[\"a\",1]}", "+ \"a\"", "- 1");
    EXPECT("{\"const\":{\"k\":[1,\"\xc3\xa9\"],\"n\":null}}", "+ {\"k\":[1,\"\xc3\xa9\"],\"n\":null}",
           "+ {\"k\": [1, \"\\u00e9\"], \"n\": null}",
           "+ {\n  \"k\": [\n    1,\n    \"\\u00E9\"\n  ],\n  \"n\": null\n}", "- {\"n\":null,\"k\":[1,\"\xc3\xa9\"]}",
           "- {\"k\":[1,\"e\"],\"n\":null}");
    EXPECT("{\"const\":\"tab\\tquote\\\"\\u0001\xf0\x9f\x98\x80\"}", "+ \"tab\\tquote\\\"\\u0001\xf0\x9f\x98\x80\"",
           "+ \"tab\\tquote\\\"\\u0001\\ud83d\\ude00\"", "- \"tab\tquote\\\"\\u0001\xf0\x9f\x98\x80\"");
    EXPECT("{\"const\":-0.001}", "+ -0.001", "- -0.0010", "- 0.001");
}

static void test_combinators(void) {
    EXPECT("{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"string\",\"maxLength\":2}]}", "+ 5", "+ \"ab\"", "- \"abc\"",
           "- null");
    EXPECT("{\"oneOf\":[{\"type\":\"object\",\"properties\":{\"kind\":{\"const\":\"a\"},\"x\":{\"type\":\"integer\"}},"
           "\"required\":[\"kind\",\"x\"]},{\"type\":\"object\",\"properties\":{\"kind\":{\"const\":\"b\"}},"
           "\"required\":[\"kind\"]}]}",
           "+ {\"kind\":\"a\",\"x\":1}", "+ {\"kind\":\"b\"}", "- {\"kind\":\"a\"}", "- {\"kind\":\"c\"}");
    /* allOf of objects: properties and required merged */
    EXPECT("{\"$defs\":{\"Base\":{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"integer\"}},"
           "\"required\":[\"id\"]}},\"allOf\":[{\"$ref\":\"#/$defs/Base\"},{\"properties\":{\"name\":{\"type\":"
           "\"string\"}},\"required\":[\"name\"]}]}",
           "+ {\"id\": 1, \"name\": \"n\"}", "- {\"id\": 1}", "- {\"name\": \"n\"}", "- {\"name\":\"n\",\"id\":1}");
    EXPECT(
        "{\"allOf\":[{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"integer\"}},"
        "\"additionalProperties\":false},{\"properties\":{\"b\":{\"type\":\"integer\"},\"c\":{\"type\":\"integer\"}}}]"
        "}",
        "+ {\"a\":1,\"b\":2}", "+ {}", "- {\"c\":1}");
    /* one subschema: that schema, whatever it is */
    EXPECT("{\"allOf\":[{\"enum\":[1,2]}],\"description\":\"d\"}", "+ 1", "- 3");
}

static void test_refs(void) {
    const char *tree = "{\"$defs\":{\"Node\":{\"type\":\"object\",\"properties\":{\"value\":{\"type\":\"integer\"},"
                       "\"children\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/Node\"}}},"
                       "\"required\":[\"value\"]}},\"$ref\":\"#/$defs/Node\"}";
    EXPECT(tree, "+ {\"value\": 1}", "+ {\"value\": 1, \"children\": [{\"value\": 2, \"children\": [{\"value\": 3}]}]}",
           "- {\"value\": 1, \"children\": [{}]}", "- {\"children\": []}");
    EXPECT("{\"definitions\":{\"p\":{\"type\":\"integer\"}},\"properties\":{\"a\":{\"$ref\":\"#/definitions/p\"},"
           "\"b\":{\"$ref\":\"#/definitions/p\"}}}",
           "+ {\"a\":1,\"b\":2}", "- {\"a\":\"x\"}");
    /* a linked list through the root, and percent/tilde escapes in refs */
    EXPECT("{\"type\":\"object\",\"properties\":{\"next\":{\"anyOf\":[{\"$ref\":\"#\"},{\"type\":\"null\"}]}},"
           "\"required\":[\"next\"]}",
           "+ {\"next\": {\"next\": null}}", "- {\"next\": {}}");
    EXPECT("{\"$defs\":{\"a/b c\":{\"type\":\"boolean\"}},\"$ref\":\"#/$defs/a~1b%20c\"}", "+ true", "- 1");
}

static void test_strings(void) {
    EXPECT("{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}", "+ \"ab\"", "+ \"a\\nb\"", "+ \"\xc3\xa9\xc3\xa9\"",
           "+ \"\\ud83d\\ude00a\"", "- \"a\"", "- \"abcd\"");
    EXPECT("{\"type\":\"string\",\"minLength\":1}", "+ \"a\"", "+ \"abcdefghijklmnop\"", "- \"\"");
    EXPECT("{\"type\":\"string\",\"pattern\":\"^[A-Z]{2}-\\\\d{3,4}$\"}", "+ \"AB-123\"", "+ \"XY-1234\"",
           "- \"AB-12\"", "- \"ab-123\"", "- \"AB-12345\"");
    EXPECT("{\"type\":\"string\",\"pattern\":\"(foo|ba(r|z))+\\\\.txt\"}", "+ \"foo.txt\"", "+ \"barbazfoo.txt\"",
           "- \".txt\"", "- \"fooXtxt\"");
    EXPECT("{\"type\":\"string\",\"pattern\":\"^a.c$\"}", "+ \"abc\"", "+ \"a\\\"c\"", "+ \"a\\tc\"",
           "+ \"a\xc3\xa9"
           "c\"",
           "- \"a\\nc\"", "- \"ac\"");
    EXPECT("{\"type\":\"string\",\"pattern\":\"^[^a-c\\\"]?x*?(?:y|)$\"}", "+ \"\"", "+ \"dxxy\"", "+ \"\\\\\"",
           "+ \"\\n\"", "+ \"yy\"", "- \"a\"", "- \"\\\"\"", "- \"zz\"");
    EXPECT("{\"type\":\"string\",\"pattern\":\"^\\\\w+@\\\\w+\\\\.[a-z]{2,}$\"}", "+ \"me@host.org\"", "- \"me@host\"");
    EXPECT("{\"type\":\"string\",\"pattern\":\"^\\\\$\\\\d+(?<cents>\\\\.\\\\d\\\\d)?\\\\$$\"}", "+ \"$12.50$\"",
           "+ \"$3$\"", "- \"$3.5$\"");
    EXPECT("{\"type\":\"string\",\"pattern\":\"^[\\\\s\\\\d-]+\\\\S$\"}", "+ \"1 2\\t3-x\"", "- \"1 \"", "- \"a1x\"");
    EXPECT("{\"type\":\"string\",\"format\":\"date\"}", "+ \"2024-02-29\"", "+ \"2000-02-29\"", "+ \"1999-12-31\"",
           "+ \"0001-01-01\"", "- \"1900-02-29\"", "- \"2023-02-29\"", "- \"2023-04-31\"", "- \"2023-13-01\"",
           "- \"0000-01-01\"", "- \"2023-1-01\"");
    EXPECT("{\"type\":\"string\",\"format\":\"time\"}", "+ \"23:59:59Z\"", "+ \"08:30:00.123+02:00\"",
           "- \"24:00:00Z\"", "- \"12:00:00\"", "- \"12:60:00Z\"");
    EXPECT("{\"type\":\"string\",\"format\":\"date-time\"}", "+ \"2024-06-01T12:34:56Z\"",
           "+ \"2024-06-01T12:34:56.5-07:30\"", "- \"2024-06-01 12:34:56Z\"", "- \"2024-06-31T00:00:00Z\"");
    EXPECT("{\"type\":\"string\",\"format\":\"uuid\"}", "+ \"123e4567-e89b-12d3-a456-426614174000\"",
           "+ \"123E4567-E89B-12D3-A456-426614174000\"", "- \"123e4567e89b12d3a456426614174000\"",
           "- \"123e4567-e89b-12d3-a456-42661417400g\"");
}

/* Every integer in [-1200, 1200] (and a few far ones) is accepted exactly
 * when it lies in the range. */
static void check_int_range(const char *bounds, long lo, long hi) {
    char schema[200];
    snprintf(schema, sizeof schema, "{\"type\":\"integer\"%s}", bounds);
    hl_grammar *g = compile(schema);
    if (!g) return;
    int bad = 0;
    for (long v = -1200; v <= 1200; v++) {
        char t[32];
        int n = snprintf(t, sizeof t, "%ld", v);
        bool want = v >= lo && v <= hi;
        if (hl_grammar_matches(g, t, (size_t)n) != want && bad++ < 5)
            CHECK_MSG(false, "%s: %ld should be %s", schema, v, want ? "accepted" : "rejected");
    }
    static const long far[] = {99999, -99999, 1000000007, -1000000007, 9999999999999999L, 10000000000000000L};
    for (size_t i = 0; i < sizeof far / sizeof far[0]; i++) {
        char t[32];
        int n = snprintf(t, sizeof t, "%ld", far[i]);
        bool want = far[i] >= lo && far[i] <= hi && far[i] < 10000000000000000L && far[i] > -10000000000000000L;
        CHECK_MSG(hl_grammar_matches(g, t, (size_t)n) == want, "%s: %ld should be %s", schema, far[i],
                  want ? "accepted" : "rejected");
    }
    CHECK(!hl_grammar_matches(g, "-0", 2) || (lo <= 0 && hi >= 0));
    CHECK(!hl_grammar_matches(g, "007", 3));
    hl_grammar_free(g);
}

static void test_integer_ranges(void) {
    const long inf = 1L << 62;
    check_int_range(",\"minimum\":0", 0, inf);
    check_int_range(",\"minimum\":1,\"maximum\":1", 1, 1);
    check_int_range(",\"minimum\":-5,\"maximum\":120", -5, 120);
    check_int_range(",\"minimum\":-1000,\"maximum\":-17", -1000, -17);
    check_int_range(",\"minimum\":17,\"maximum\":1000", 17, 1000);
    check_int_range(",\"minimum\":99,\"maximum\":101", 99, 101);
    check_int_range(",\"minimum\":123,\"maximum\":987", 123, 987);
    check_int_range(",\"maximum\":-3", -inf, -3);
    check_int_range(",\"maximum\":456", -inf, 456);
    check_int_range(",\"minimum\":-1.5,\"maximum\":2.5", -1, 2);
    check_int_range(",\"minimum\":0,\"maximum\":9", 0, 9);
    check_int_range(",\"minimum\":10,\"maximum\":99", 10, 99);
    check_int_range(",\"minimum\":-1e300", -inf, inf);
    check_int_range(",\"minimum\":-9999999999999999,\"maximum\":9999999999999999", -inf, inf);
}

static void test_number_ranges(void) {
    EXPECT("{\"type\":\"number\",\"minimum\":0,\"maximum\":10}", "+ 0", "+ 0.5", "+ 9.999", "+ 10", "+ 10.000", "+ 3",
           "- 10.001", "- -0.5", "- 11", "- 1e1");
    EXPECT("{\"type\":\"number\",\"minimum\":-2}", "+ -2", "+ -2.0", "+ -1.99", "+ 0", "+ 123456.5", "- -2.01", "- -3");
    EXPECT("{\"type\":\"number\",\"maximum\":-1}", "+ -1", "+ -1.5", "+ -100", "- -0.5", "- 0", "- 1");
    EXPECT("{\"type\":\"number\",\"minimum\":1,\"maximum\":1}", "+ 1", "+ 1.0", "- 1.5", "- 0.5");
    /* exclusive bounds of integers (pydantic's gt= and lt=) */
    EXPECT("{\"type\":\"integer\",\"exclusiveMinimum\":3,\"exclusiveMaximum\":7}", "+ 4", "+ 6", "- 3", "- 7", "- 0");
    EXPECT("{\"type\":\"integer\",\"exclusiveMinimum\":-2.5,\"maximum\":5}", "+ -2", "+ 5", "- -3", "- 6");
    EXPECT("{\"exclusiveMaximum\":0,\"type\":\"integer\",\"minimum\":-3}", "+ -3", "+ -1", "- 0", "- -4");
    /* annotations pydantic and OpenAPI write are ignored */
    EXPECT("{\"type\":\"integer\",\"deprecated\":true,\"readOnly\":true,\"writeOnly\":false}", "+ 1", "- \"a\"");
}

static void test_errors(void) {
    static const char *const unsupported[] = {"not",
                                              "if",
                                              "then",
                                              "else",
                                              "multipleOf",
                                              "patternProperties",
                                              "dependentRequired",
                                              "minProperties",
                                              "maxProperties",
                                              "uniqueItems",
                                              "contains",
                                              "propertyNames",
                                              "unevaluatedProperties",
                                              "additionalItems",
                                              "$anchor",
                                              "dependencies"};
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++) {
        char schema[200], msg[120];
        snprintf(schema, sizeof schema, "{\"properties\":{\"x\":{\"type\":\"integer\",\"%s\":1}}}", unsupported[i]);
        snprintf(msg, sizeof msg, "json_schema at /properties/x: unsupported keyword '%s'", unsupported[i]);
        expect_error(schema, msg);
    }
    expect_error("{\"type\":\"object\",\"not\":{}}", "json_schema at /: unsupported keyword 'not'");
    expect_error("{\"type\":\"string\",\"format\":\"email\"}", "unsupported format 'email'");
    expect_error("{\"type\":\"strin\"}", "unknown type 'strin'");
    expect_error("{\"type\":[\"string\",5]}", "unknown type");
    expect_error("{\"$ref\":\"#/$defs/missing\"}", "$ref '#/$defs/missing' not found");
    expect_error("{\"$ref\":\"other.json#/a\"}", "only local refs");
    expect_error("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"anyOf\":[{\"$ref\":\"#/$defs/a\"}]}},"
                 "\"$ref\":\"#/$defs/a\"}",
                 "refers back to itself");
    expect_error("{\"type\":\"array\",\"minItems\":3,\"maxItems\":2}", "minItems 3 is greater than maxItems 2");
    expect_error("{\"type\":\"array\",\"minItems\":-1}", "'minItems' must be a non-negative integer");
    expect_error("{\"type\":\"string\",\"maxLength\":100000}", "over the limit");
    expect_error("{\"type\":\"integer\",\"minimum\":5,\"maximum\":4}", "no integer");
    expect_error("{\"type\":\"integer\",\"exclusiveMinimum\":4,\"exclusiveMaximum\":5}", "no integer");
    expect_error("{\"type\":\"number\",\"exclusiveMinimum\":0}", "'exclusiveMinimum' is supported for integers only");
    expect_error("{\"type\":\"number\",\"minimum\":0.5}", "not an integer is not supported");
    expect_error("{\"type\":\"object\",", "json_schema: not valid JSON at byte");
    expect_error("{\"a\":1} x", "not valid JSON at byte 8");
    expect_error("[1,2]", "must be an object or a boolean");
    expect_error("false", "the schema false accepts no value");
    expect_error("{\"properties\":{\"a\":5}}", "json_schema at /properties/a: a schema must be an object");
    expect_error("{\"required\":[\"a\"],\"properties\":{\"b\":{}},\"additionalProperties\":false}",
                 "required property 'a' is not allowed");
    expect_error("{\"enum\":[1,2],\"type\":\"string\"}", "no value of 'enum'");
    expect_error("{\"anyOf\":[{\"type\":\"integer\"}],\"type\":\"integer\"}", "'anyOf' together with 'type'");
    expect_error("{\"allOf\":[{\"type\":\"string\"},{\"maxLength\":2}]}", "combines object schemas only");
    expect_error("{\"type\":\"string\",\"pattern\":\"a\",\"maxLength\":3}", "together with minLength or maxLength");
    static const struct {
        const char *pattern, *msg;
    } bad_patterns[] = {
        {"(?=a)b", "a lookahead"},        {"(?!a)b", "a lookahead"},
        {"(?<=a)b", "a lookbehind"},      {"(a)\\\\1", "a backreference"},
        {"\\\\bword", "word boundary"},   {"a^b", "an anchor inside"},
        {"(?i)abc", "inline flag"},       {"a{2,1}", "n < m"},
        {"a**", "a repeated quantifier"}, {"[z-a]", "reversed class range"},
        {"(ab", "unclosed group"},        {"ab)", "unmatched ')'"},
        {"\\\\p{L}", "Unicode property"}, {"a{20000}", "over 10000"},
        {"*a", "nothing to repeat"},      {"a++", "possessive"},
    };
    for (size_t i = 0; i < sizeof bad_patterns / sizeof bad_patterns[0]; i++) {
        char schema[200];
        snprintf(schema, sizeof schema, "{\"type\":\"string\",\"pattern\":\"%s\"}", bad_patterns[i].pattern);
        expect_error(schema, bad_patterns[i].msg);
    }
    /* nesting bound */
    char deep[2000] = "";
    for (int i = 0; i < 70; i++) strcat(deep, "{\"items\":");
    strcat(deep, "{}");
    for (int i = 0; i < 70; i++) strcat(deep, "}");
    expect_error(deep, "nested deeper than 64 levels");
    char *g = (char *)1;
    CHECK(hearth_json_schema_to_grammar(NULL, &g) == HEARTH_ERR_INVALID_ARG);
    CHECK(hl_json_schema_to_gbnf_rules("{}", 2, "p-", "bad name", &g) == HEARTH_ERR_INVALID_ARG && !g);
}

/* The _rules form: prefixed names, the start rule named by the caller, no
 * root; two of them concatenate into one grammar. */
static void test_rules_variant(void) {
    const char *a = "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}";
    const char *b = "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\",\"minimum\":1}}}";
    char *ga = NULL, *gb = NULL;
    CHECK(hl_json_schema_to_gbnf_rules(a, strlen(a), "get_weather.", "get-weather-args", &ga) == HEARTH_OK);
    CHECK(hl_json_schema_to_gbnf_rules(b, strlen(b), "count-", "count-args", &gb) == HEARTH_OK);
    if (!ga || !gb) return;
    CHECK(strncmp(ga, "get-weather-args ::= ", 21) == 0);
    CHECK(strstr(ga, "root ::=") == NULL && strstr(ga, "\nspace ::=") == NULL);
    CHECK(strstr(ga, "\nget-weather-space ::=") != NULL);
    size_t n = strlen(ga) + strlen(gb) + 100;
    char *all = malloc(n);
    snprintf(all, n, "root ::= get-weather-args | count-args\n%s%s", ga, gb);
    hl_grammar *g = NULL;
    CHECK_MSG(hl_grammar_parse(all, strlen(all), &g) == HEARTH_OK, "%s\n%s", hearth_last_error(), all);
    if (g) {
        CHECK(hl_grammar_matches(g, "{\"city\": \"Paris\"}", 17));
        CHECK(hl_grammar_matches(g, "{\"n\": 3}", 8));
        CHECK(!hl_grammar_matches(g, "{\"n\": 0}", 8));
        hl_grammar_free(g);
    }
    free(all);
    free(ga);
    free(gb);
    /* the public wrapper */
    char *text = NULL;
    CHECK(hearth_json_schema_to_grammar("{\"type\":\"object\"}", &text) == HEARTH_OK && text);
    CHECK(text && strncmp(text, "root ::= object", 15) == 0);
    CHECK(hearth_grammar_check(text) == HEARTH_OK);
    hearth_grammar_free_text(text);
    hearth_grammar_free_text(NULL);
}

int main(void) {
    test_primitives();
    test_objects();
    test_arrays();
    test_enum_const();
    test_combinators();
    test_refs();
    test_strings();
    test_integer_ranges();
    test_number_ranges();
    test_errors();
    test_rules_variant();
    return check_report();
}
