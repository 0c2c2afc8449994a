/* Tool calling (src/runtime/toolcall/): the format each reference chat
 * template teaches, hl_tools_prepare's checks (each bad input named), the
 * grammars it builds (they compile; sample calls of each format are
 * accepted, wrong names and bad arguments rejected), and the streaming
 * parser: every format's replies pushed whole, split at every character
 * boundary and at random boundaries give the same content and calls. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "grammar/grammar.h"
#include "json_file.h"
#include "runtime/toolcall/toolcall.h"

static char *read_text(const char *path) {
    size_t n;
    uint8_t *b = check_read_file(path, &n);
    if (!b) return NULL;
    char *s = realloc(b, n + 1);
    if (!s) {
        free(b);
        return NULL;
    }
    s[n] = '\0';
    return s;
}

static char *template_text(const char *name) {
    char rel[256];
    snprintf(rel, sizeof rel, "reference/chat/templates/%s.jinja", name);
    return read_text(check_test_path(rel));
}

/* ------------------------------------------------------------ detection -- */

static void test_formats(void) {
    static const struct {
        const char *name;
        hl_tool_format f;
    } want[] = {
        {"deepseek-r1-llama", HL_TOOLS_GENERIC},
        {"deepseek-r1-qwen", HL_TOOLS_GENERIC},
        {"gemma2", HL_TOOLS_GENERIC},
        {"gemma3", HL_TOOLS_GENERIC},
        {"hermes3-tool-use", HL_TOOLS_HERMES},
        {"llama3.1", HL_TOOLS_LLAMA3},
        {"llama3.2", HL_TOOLS_LLAMA3},
        {"llama3.3", HL_TOOLS_LLAMA3},
        {"mistral-nemo", HL_TOOLS_MISTRAL},
        {"mistral-small-3.2", HL_TOOLS_MISTRAL},
        {"phi3.5", HL_TOOLS_GENERIC},
        {"qwen2.5", HL_TOOLS_HERMES},
        {"qwen3", HL_TOOLS_HERMES},
        {"qwq", HL_TOOLS_HERMES},
        {"smollm2", HL_TOOLS_GENERIC},
    };
    const size_t n_want = sizeof want / sizeof want[0];
    for (size_t i = 0; i < n_want; i++) {
        char *t = template_text(want[i].name);
        CHECK_MSG(t && hl_tool_format_of(t) == want[i].f, "%s: %s, want %s", want[i].name,
                  t ? hl_tool_format_name(hl_tool_format_of(t)) : "unreadable", hl_tool_format_name(want[i].f));
        free(t);
    }
    /* every template of the folder is in the table */
    size_t n_files = 0;
    DIR *d = opendir(check_test_path("reference/chat/templates"));
    CHECK(d != NULL);
    for (struct dirent *e; d && (e = readdir(d));) n_files += strstr(e->d_name, ".jinja") != NULL;
    if (d) closedir(d);
    CHECK_MSG(n_files == n_want, "%zu templates in the folder, %zu in the table", n_files, n_want);
    CHECK(!strcmp(hl_tool_format_name(HL_TOOLS_GENERIC), "generic") &&
          !strcmp(hl_tool_format_name(HL_TOOLS_HERMES), "hermes") &&
          !strcmp(hl_tool_format_name(HL_TOOLS_LLAMA3), "llama3") &&
          !strcmp(hl_tool_format_name(HL_TOOLS_MISTRAL), "mistral"));
}

/* ------------------------------------------------------------ prepare -- */

static const char *TOOLS =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"The weather in a city\", "
    "\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, \"days\": {\"type\": "
    "\"integer\"}}, \"required\": [\"city\"]}}},"
    " {\"type\": \"function\", \"function\": {\"name\": \"get_time\", \"description\": \"The time in a zone\", "
    "\"parameters\": {\"type\": \"object\", "
    "\"properties\": {\"zone\": {\"type\": \"string\", \"enum\": [\"UTC\", \"CET\"]}}, \"required\": [\"zone\"]}}}]";
static const char *MSGS = "[{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": "
                          "\"Weather in Paris?\"}]";

static void expect_prepare_error(const char *tools, const char *choice, const char *want) {
    char *t = template_text("qwen2.5");
    hl_tool_setup s;
    hearth_status st = hl_tools_prepare(t, MSGS, tools, choice, true, "", "<|im_end|>", &s);
    CHECK_MSG(st == HEARTH_ERR_INVALID_ARG && strstr(hearth_last_error(), want),
              "tools %s / choice %s: want '%s', got %s '%s'", tools, choice ? choice : "NULL", want,
              hearth_status_str(st), st == HEARTH_OK ? "" : hearth_last_error());
    CHECK(!s.prompt && !s.grammar && !s.triggers);
    free(t);
}

static void test_prepare_errors(void) {
    expect_prepare_error("{", NULL, "tools: not a JSON array");
    expect_prepare_error("{}", NULL, "tools: not a JSON array");
    expect_prepare_error("[]", NULL, "tools: an empty array");
    expect_prepare_error("[1]", NULL, "tools[0] is not an object");
    expect_prepare_error("[{\"function\": {\"name\": \"f\"}}]", NULL, "tools[0].type must be \"function\"");
    expect_prepare_error("[{\"type\": \"retrieval\", \"function\": {\"name\": \"f\"}}]", NULL, "tools[0].type");
    expect_prepare_error("[{\"type\": \"function\"}]", NULL, "tools[0].function is missing");
    expect_prepare_error(
        "[{\"type\": \"function\", \"function\": {\"name\": \"f\"}}, {\"type\": \"function\", \"function\": "
        "{\"description\": \"d\"}}]",
        NULL, "tools[1].function.name is missing");
    expect_prepare_error("[{\"type\": \"function\", \"function\": {\"name\": \"\"}}]", NULL,
                         "tools[0].function.name must be a non-empty string");
    expect_prepare_error("[{\"type\": \"function\", \"function\": {\"name\": 3}}]", NULL,
                         "tools[0].function.name must be");
    expect_prepare_error("[{\"type\": \"function\", \"function\": {\"name\": \"a\\\"b\"}}]", NULL,
                         "tools[0].function.name 'a\"b'");
    expect_prepare_error(
        "[{\"type\": \"function\", \"function\": {\"name\": \"f\"}}, {\"type\": \"function\", \"function\": "
        "{\"name\": \"f\"}}]",
        NULL, "tools[1].function.name 'f' is also tools[0]'s");
    expect_prepare_error("[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"description\": 1}}]", NULL,
                         "tools[0].function.description must be a string");
    expect_prepare_error("[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": [1]}}]", NULL,
                         "tools[0].function.parameters must be a JSON Schema object");
    expect_prepare_error(
        "[{\"type\": \"function\", \"function\": {\"name\": \"f\"}}, {\"type\": \"function\", \"function\": "
        "{\"name\": \"g\", \"parameters\": {\"not\": {\"type\": \"string\"}}}}]",
        NULL, "tools[1].function.parameters: ");
    expect_prepare_error(TOOLS, "get_wether", "tool_choice names 'get_wether', which is not among the tools");
    /* the messages' errors are the renderer's */
    char *t = template_text("qwen2.5");
    hl_tool_setup s;
    CHECK(hl_tools_prepare(t, "[{\"content\": \"x\"}]", TOOLS, NULL, true, "", "", &s) == HEARTH_ERR_INVALID_ARG &&
          strstr(hearth_last_error(), "messages[0]"));
    CHECK(hl_tools_prepare(t, "[", TOOLS, NULL, true, "", "", &s) == HEARTH_ERR_INVALID_ARG &&
          strstr(hearth_last_error(), "messages: not valid JSON"));
    free(t);
}

/* Checks that `g` accepts each of ok[] and rejects each of bad[]. */
static void check_grammar(const char *what, const char *gbnf, const char *const *ok, const char *const *bad) {
    hl_grammar *g = NULL;
    hearth_status st = gbnf ? hl_grammar_parse(gbnf, strlen(gbnf), &g) : HEARTH_ERR_INVALID_ARG;
    CHECK_MSG(st == HEARTH_OK, "%s: grammar does not parse: %s\n%s", what, gbnf ? hearth_last_error() : "none",
              gbnf ? gbnf : "");
    if (st != HEARTH_OK) return;
    for (; ok && *ok; ok++) CHECK_MSG(hl_grammar_matches(g, *ok, strlen(*ok)), "%s: rejects %s", what, *ok);
    for (; bad && *bad; bad++) CHECK_MSG(!hl_grammar_matches(g, *bad, strlen(*bad)), "%s: accepts %s", what, *bad);
    hl_grammar_free(g);
}

/* A lazy grammar's sentence begins with its trigger. */
static void check_trigger(const char *what, const char *gbnf, const char *trigger) {
    hl_grammar *g = NULL;
    hl_grammar_state *st = NULL;
    if (!gbnf || hl_grammar_parse(gbnf, strlen(gbnf), &g) != HEARTH_OK) return; /* check_grammar reports it */
    CHECK(hl_grammar_state_init(g, &st) == HEARTH_OK);
    CHECK_MSG(st && hl_grammar_accept(st, trigger, strlen(trigger)), "%s: the grammar does not start with '%s'", what,
              trigger);
    hl_grammar_state_free(st);
    hl_grammar_free(g);
}

typedef struct grammar_case {
    const char *tmpl;
    const char *choice;
    bool parallel;
    const char *ok[5];
    const char *bad[6];
} grammar_case;

#define W1 "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}"
#define W2 "{\"name\": \"get_time\", \"arguments\": {\"zone\": \"UTC\"}}"
#define WBADNAME "{\"name\": \"get_wether\", \"arguments\": {\"city\": \"Paris\"}}"
#define WBADARGS "{\"name\": \"get_weather\", \"arguments\": {\"days\": 3}}"
#define L1 "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}"

static void test_prepare(void) {
    static const grammar_case cases[] = {
        {"qwen2.5",
         NULL,
         true,
         {"<tool_call>\n" W1 "\n</tool_call>", "<tool_call>\n" W1 "\n</tool_call>\n<tool_call>\n" W2 "\n</tool_call>",
          "<tool_call>" W2 "</tool_call>", W1},
         {"<tool_call>\n" WBADNAME "\n</tool_call>", "<tool_call>\n" WBADARGS "\n</tool_call>", W1 "\n" W2,
          "<tool_call>\n{\"arguments\": {\"city\": \"Paris\"}, \"name\": \"get_weather\"}\n</tool_call>",
          "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"PST\"}}\n</tool_call>"}},
        {"qwen3",
         "get_time",
         false,
         {"<tool_call>\n" W2 "\n</tool_call>"},
         {"<tool_call>\n" W1 "\n</tool_call>", "<tool_call>\n" W2 "\n</tool_call>\n<tool_call>\n" W2 "\n</tool_call>"}},
        {"hermes3-tool-use", "required", true, {"<tool_call>\n" W1 "\n</tool_call>"}, {"Hello", ""}},
        {"llama3.1",
         NULL,
         true,
         {L1, "<|python_tag|>" L1},
         {W1, L1 "\n" L1, "{\"name\": \"get_weather\", \"parameters\": {}}"}},
        {"mistral-nemo",
         NULL,
         true,
         {"[TOOL_CALLS][" W1 ", " W2 "]",
          "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}, \"id\": \"a1B2c3D4e\"}]"},
         {"[TOOL_CALLS][" WBADNAME "]", "[TOOL_CALLS]" W1,
          "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}, \"id\": \"short\"}]"}},
        {"mistral-small-3.2", NULL, false, {"[TOOL_CALLS][" W2 "]"}, {"[TOOL_CALLS][" W1 ", " W2 "]"}},
        {"smollm2",
         NULL,
         true,
         {"{\"tool_calls\": [" W1 ", " W2 "]}", "{\"response\": \"It is \\\"sunny\\\".\\n\"}"},
         {"{\"tool_calls\": [" WBADARGS "]}", "{\"response\": 3}", "Hello", "{\"tool_calls\": []}"}},
        {"gemma3",
         "required",
         false,
         {"{\"tool_calls\": [" W1 "]}"},
         {"{\"response\": \"hi\"}", "{\"tool_calls\": [" W1 ", " W2 "]}"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const grammar_case *c = &cases[i];
        char *t = template_text(c->tmpl);
        hl_tool_setup s;
        hearth_status st = hl_tools_prepare(t, MSGS, TOOLS, c->choice, c->parallel, "<s>", "</s>", &s);
        CHECK_MSG(st == HEARTH_OK, "%s: %s", c->tmpl, hearth_last_error());
        if (st == HEARTH_OK) {
            const hl_tool_format f = hl_tool_format_of(t);
            CHECK_MSG(strstr(s.prompt, "get_weather") && strstr(s.prompt, "Weather in Paris?"), "%s prompt:\n%s",
                      c->tmpl, s.prompt);
            const bool is_auto = !c->choice;
            CHECK_MSG(s.n_triggers == (is_auto && (f == HL_TOOLS_LLAMA3 || f == HL_TOOLS_HERMES) ? 2u
                                       : is_auto && f != HL_TOOLS_GENERIC                        ? 1u
                                                                                                 : 0u),
                      "%s: %zu triggers", c->tmpl, s.n_triggers);
            for (size_t k = 0; k < s.n_triggers; k++) check_trigger(c->tmpl, s.grammar, s.triggers[k]);
            check_grammar(c->tmpl, s.grammar, c->ok, c->bad);
            if (f == HL_TOOLS_GENERIC) /* the tools are described in a system message, merged into the first */
                CHECK_MSG(strstr(s.prompt, "Be brief.\n\nYou can call these tools") &&
                              strstr(s.prompt, "\"tool_calls\""),
                          "%s prompt:\n%s", c->tmpl, s.prompt);
        }
        hl_tool_setup_free(&s);
        /* none: no grammar; GENERIC renders without the tools */
        st = hl_tools_prepare(t, MSGS, TOOLS, "none", true, "<s>", "</s>", &s);
        CHECK(st == HEARTH_OK && !s.grammar && !s.n_triggers);
        if (st == HEARTH_OK)
            CHECK_MSG((strstr(s.prompt, "get_weather") != NULL) == (hl_tool_format_of(t) != HL_TOOLS_GENERIC),
                      "%s none:\n%s", c->tmpl, s.prompt);
        hl_tool_setup_free(&s);
        free(t);
    }
    /* GENERIC without a system message: one is put first */
    char *t = template_text("smollm2");
    hl_tool_setup s;
    CHECK(hl_tools_prepare(t, "[{\"role\": \"user\", \"content\": \"hi\"}]", TOOLS, NULL, true, "", "", &s) ==
          HEARTH_OK);
    CHECK_MSG(s.prompt && !strncmp(s.prompt, "<|im_start|>system\nYou can call these tools", 43), "%s", s.prompt);
    hl_tool_setup_free(&s);
    free(t);
}

/* ------------------------------------------------------------- parser -- */

typedef struct parsed {
    char content[4096];
    size_t content_len;
    int n_calls;
    char ids[8][32];
    char names[8][64];
    char args[8][1024];
    bool ok; /* the deltas were well formed */
} parsed;

static void collect(parsed *r, const hl_tool_output *o) {
    memcpy(r->content + r->content_len, o->content, o->content_len);
    r->content_len += o->content_len;
    r->content[r->content_len] = '\0';
    for (int32_t i = 0; i < o->n_calls; i++) {
        const hearth_tool_call_delta *d = &o->calls[i];
        if (d->id) { /* a new call: the next index, with its name */
            r->ok = r->ok && d->index == r->n_calls && d->name && strlen(d->id) == 29;
            snprintf(r->ids[d->index], sizeof r->ids[0], "%s", d->id);
            snprintf(r->names[d->index], sizeof r->names[0], "%s", d->name);
            r->n_calls++;
        } else r->ok = r->ok && !d->name && d->index == r->n_calls - 1;
        strncat(r->args[d->index], d->arguments, d->arguments_len);
    }
}

/* Pushes `text` in the pieces that `cuts` (sorted offsets, n_cuts) make. */
static void run(hl_tool_format f, uint64_t seed, const char *text, const size_t *cuts, size_t n_cuts, parsed *r) {
    memset(r, 0, sizeof *r);
    r->ok = true;
    hl_tool_parser *p;
    CHECK(hl_tool_parser_init(f, seed, &p) == HEARTH_OK);
    size_t at = 0;
    const size_t n = strlen(text);
    for (size_t k = 0; k <= n_cuts; k++) {
        const size_t end = k < n_cuts ? cuts[k] : n;
        hl_tool_output o;
        CHECK(hl_tool_parser_push(p, text + at, end - at, k == n_cuts, &o) == HEARTH_OK);
        collect(r, &o);
        at = end;
    }
    CHECK(hl_tool_parser_n_calls(p) == r->n_calls);
    hl_tool_parser_free(p);
}

static bool same(const parsed *a, const parsed *b) {
    if (strcmp(a->content, b->content) || a->n_calls != b->n_calls) return false;
    for (int i = 0; i < a->n_calls; i++)
        if (strcmp(a->ids[i], b->ids[i]) || strcmp(a->names[i], b->names[i]) || strcmp(a->args[i], b->args[i]))
            return false;
    return true;
}

typedef struct parse_case {
    hl_tool_format f;
    const char *text;
    const char *content;
    int n_calls;
    const char *names[3];
    const char *args[3];
    bool unfinished; /* the last call's arguments stop short */
} parse_case;

static void check_parse_case(const parse_case *c, uint64_t *rng) {
    parsed whole, part;
    run(c->f, 42, c->text, NULL, 0, &whole);
    bool ok = whole.ok && !strcmp(whole.content, c->content) && whole.n_calls == c->n_calls;
    for (int i = 0; ok && i < c->n_calls; i++)
        ok = !strcmp(whole.names[i], c->names[i]) && !strcmp(whole.args[i], c->args[i]);
    CHECK_MSG(ok, "%s %s: content '%s' (want '%s'), %d calls (want %d)%s%s %s", hl_tool_format_name(c->f), c->text,
              whole.content, c->content, whole.n_calls, c->n_calls, whole.n_calls ? ", first: " : "", whole.names[0],
              whole.args[0]);
    for (int i = 0; i < whole.n_calls; i++) {
        CHECK_MSG(!strncmp(whole.ids[i], "call_", 5) &&
                      strspn(whole.ids[i] + 5, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") == 24,
                  "id %s", whole.ids[i]);
        for (int j = 0; j < i; j++) CHECK(strcmp(whole.ids[i], whole.ids[j]));
        /* complete arguments parse as JSON */
        cJSON *a = cJSON_Parse(whole.args[i]);
        CHECK_MSG(a || (c->unfinished && i == whole.n_calls - 1), "arguments do not parse: %s", whole.args[i]);
        cJSON_Delete(a);
    }
    /* split in two at every character boundary */
    const size_t n = strlen(c->text);
    for (size_t cut = 1; cut < n; cut++) {
        if (((unsigned char)c->text[cut] & 0xC0) == 0x80) continue;
        run(c->f, 42, c->text, &cut, 1, &part);
        CHECK_MSG(part.ok && same(&whole, &part), "%s %s split at %zu: content '%s'", hl_tool_format_name(c->f),
                  c->text, cut, part.content);
    }
    /* one character a push, and random pieces */
    size_t cuts[1024], n_cuts = 0;
    for (size_t i = 1; i < n && n_cuts < 1024; i++)
        if (((unsigned char)c->text[i] & 0xC0) != 0x80) cuts[n_cuts++] = i;
    run(c->f, 42, c->text, cuts, n_cuts, &part);
    CHECK_MSG(part.ok && same(&whole, &part), "%s %s: a character a push differs", hl_tool_format_name(c->f), c->text);
    for (int trial = 0; trial < 20; trial++) {
        size_t rc[64], m = 0;
        for (size_t i = 0; i < n_cuts; i++)
            if (check_splitmix64(rng) % 5 == 0 && m < 64) rc[m++] = cuts[i];
        run(c->f, 42, c->text, rc, m, &part);
        CHECK_MSG(part.ok && same(&whole, &part), "%s %s: random pieces (trial %d) differ", hl_tool_format_name(c->f),
                  c->text, trial);
    }
    /* ids depend on the seed */
    if (c->n_calls) {
        run(c->f, 43, c->text, NULL, 0, &part);
        CHECK(strcmp(part.ids[0], whole.ids[0]) != 0);
    }
}

#define ARGS_W "{\"city\": \"Paris\", \"note\": \"a } ] in \\\"it\\\" {\"}"

static void test_parser(void) {
    const hl_tool_format H = HL_TOOLS_HERMES, L = HL_TOOLS_LLAMA3, M = HL_TOOLS_MISTRAL, G = HL_TOOLS_GENERIC;
    static const parse_case cases[] = {
        /* HERMES */
        {H,
         "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " ARGS_W "}\n</tool_call>",
         "",
         1,
         {"get_weather"},
         {ARGS_W},
         false},
        {H,
         "Let me check: ünïcode 🙂\n<tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call>",
         "Let me check: ünïcode 🙂\n",
         1,
         {"f"},
         {"{}"},
         false},
        {H,
         "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": [1, {\"y\": "
         "2}]}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {\"z\": null}}\n</tool_call>",
         "",
         2,
         {"a", "b"},
         {"{\"x\": [1, {\"y\": 2}]}", "{\"z\": null}"},
         false},
        {H,
         "a <toolbox> is not a call, nor <tool_call> this",
         "a <toolbox> is not a call, nor <tool_call> this",
         0,
         {0},
         {0},
         false},
        {H, "ends with <tool", "ends with <tool", 0, {0}, {0}, false},
        {H, "\n<tool_call>\n{\"name\": \"f\"", "\n<tool_call>\n{\"name\": \"f\"", 0, {0}, {0}, false},
        {H, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, 2", "", 1, {"f"}, {"{\"a\": [1, 2"}, true},
        {H, "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>\nDone.", "\nDone.", 1, {"f"}, {"{}"}, false},
        {H, "<tool_call>{\"name\": \"f\", \"arguments\": {}}\n</tool_", "", 1, {"f"}, {"{}"}, false},
        {H, " {\"name\": \"f\", \"arguments\": {\"a\": 1}}\n", "", 1, {"f"}, {"{\"a\": 1}"}, false}, /* a bare call */
        {H,
         "Use {\"name\": \"f\", \"arguments\": {}} later",
         "Use {\"name\": \"f\", \"arguments\": {}} later",
         0,
         {0},
         {0},
         false},
        /* LLAMA3 */
        {L, "{\"name\": \"get_weather\", \"parameters\": " ARGS_W "}", "", 1, {"get_weather"}, {ARGS_W}, false},
        {L,
         " \n<|python_tag|>{\"name\": \"g\", \"parameters\": {\"q\": \"x\"}}",
         "",
         1,
         {"g"},
         {"{\"q\": \"x\"}"},
         false},
        {L,
         "The call is {\"name\": \"g\", \"parameters\": {}}",
         "The call is {\"name\": \"g\", \"parameters\": {}}",
         0,
         {0},
         {0},
         false},
        {L, "{\"foo\": 1}", "{\"foo\": 1}", 0, {0}, {0}, false},
        /* MISTRAL */
        {M,
         "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"x\": [1, {\"y\": \"]\"}]}, \"id\": \"abc123XYZ\"}, "
         "{\"name\": \"b\", \"arguments\": {}}]",
         "",
         2,
         {"a", "b"},
         {"{\"x\": [1, {\"y\": \"]\"}]}", "{}"},
         false},
        {M,
         "Sure.[TOOL_CALLS] [ {\"name\": \"a\", \"arguments\": {\"k\": \"v\"}} ]",
         "Sure.",
         1,
         {"a"},
         {"{\"k\": \"v\"}"},
         false},
        {M, "[TOOL_CALLS is not a marker", "[TOOL_CALLS is not a marker", 0, {0}, {0}, false},
        {M, "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b", "", 1, {"a"}, {"{}"}, false},
        /* GENERIC */
        {G,
         "{\"tool_calls\": [{\"name\": \"a\", \"arguments\": {\"k\": \"v\"}}, {\"name\": \"b\", \"arguments\": " ARGS_W
         "}]}",
         "",
         2,
         {"a", "b"},
         {"{\"k\": \"v\"}", ARGS_W},
         false},
        {G,
         "{\"response\": \"Hello \\\"world\\\"\\n\\u00e9\\ud83d\\ude00 ok\\\\\"}",
         "Hello \"world\"\né😀 ok\\",
         0,
         {0},
         {0},
         false},
        {G, "Hi there {\"response\": \"x\"}", "Hi there {\"response\": \"x\"}", 0, {0}, {0}, false},
        {G, "{\"answer\": 1}", "{\"answer\": 1}", 0, {0}, {0}, false},
        {G,
         "\n {\"response\" : \"bad \\q escape, lone \\ud800 half\"}",
         "bad \\q escape, lone \\ud800 half",
         0,
         {0},
         {0},
         false},
    };
    uint64_t rng = 7;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_parse_case(&cases[i], &rng);
}

/* GENERIC templates get past calls as the reply form and null content as
 * "" (SmolLM2's template would fail on `+ None`). */
static void test_generic_history(void) {
    static const char *msgs =
        "[{\"role\": \"user\", \"content\": \"Weather in Paris?\"},"
        " {\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"call_1\", \"type\": \"function\","
        " \"function\": {\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Paris\\\"}\"}}]},"
        " {\"role\": \"tool\", \"tool_call_id\": \"call_1\", \"name\": \"get_weather\", \"content\": \"sunny\"}]";
    char *t = template_text("smollm2");
    for (int none = 0; none < 2; none++) {
        hl_tool_setup s;
        hearth_status st = hl_tools_prepare(t, msgs, TOOLS, none ? "none" : NULL, true, "", "", &s);
        CHECK_MSG(st == HEARTH_OK, "%s", hearth_last_error());
        if (st != HEARTH_OK) continue;
        CHECK_MSG(
            strstr(s.prompt, "{\"tool_calls\":[{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}]}") &&
                strstr(s.prompt, "sunny") && (none || strstr(s.prompt, "\"response\"")),
            "prompt:\n%s", s.prompt);
        hl_tool_setup_free(&s);
    }
    free(t);
}

int main(void) {
    test_formats();
    test_generic_history();
    test_prepare_errors();
    test_prepare();
    test_parser();
    return check_report();
}
