/* hearth_chat_apply_template_json against Python jinja2 (fixtures from
 * tests/reference/chat/make_tool_fixtures.py): the tool-capable reference
 * templates (Qwen2.5/3, QwQ, Hermes 3, Llama 3.1-3.3, Mistral Nemo and Small
 * 3.2) over conversations with tools, tool calls (arguments as the JSON text
 * OpenAI clients send), tool results and text parts, with and without tools
 * and the generation prompt, byte for byte (or failing where jinja2 fails,
 * with the template's message when it called raise_exception). Then the
 * JSON errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "hearth.h"
#include "json_file.h"

/* `s` with every `from` replaced by `to` (same length); caller frees. */
static char *replaced(const char *s, const char *from, const char *to) {
    char *r = strdup(s);
    for (char *p = r; r && (p = strstr(p, from));) {
        memcpy(p, to, strlen(to));
        p += strlen(to);
    }
    return r;
}

/* strftime_now renders today's date where jinja2 rendered the fixed one:
 * `expected` with each [fixed text, format] of `dates` replaced by today's
 * text in that format (the same length). Caller frees. */
static char *with_today(const char *expected, const cJSON *dates) {
    const time_t now = time(NULL);
    char *s = strdup(expected);
    for (const cJSON *d = dates->child; d && s; d = d->next) {
        char today[64];
        strftime(today, sizeof today, cJSON_GetArrayItem(d, 1)->valuestring, localtime(&now));
        char *r = replaced(s, cJSON_GetArrayItem(d, 0)->valuestring, today);
        free(s);
        s = r;
    }
    return s;
}

static void test_fixtures(void) {
    cJSON *root = json_file_read(check_test_path("reference/chat/tools.json"));
    CHECK(root != NULL);
    if (!root) return;
    const cJSON *dates = cJSON_GetObjectItem(root, "dates");
    char *tools = cJSON_PrintUnformatted(cJSON_GetObjectItem(root, "tools"));
    const cJSON *convs = cJSON_GetObjectItem(root, "conversations");
    int n = 0;
    for (const cJSON *c = cJSON_GetObjectItem(root, "cases")->child; c; c = c->next, n++) {
        const char *name = cJSON_GetObjectItem(c, "template")->valuestring;
        const char *conv = cJSON_GetObjectItem(c, "conversation")->valuestring;
        const bool with_tools = cJSON_IsTrue(cJSON_GetObjectItem(c, "with_tools"));
        const bool gen = cJSON_IsTrue(cJSON_GetObjectItem(c, "add_generation_prompt"));
        char rel[256];
        snprintf(rel, sizeof rel, "reference/chat/templates/%s.jinja", name);
        size_t len;
        char *src = (char *)check_read_file(check_test_path(rel), &len);
        CHECK_MSG(src != NULL, "cannot read %s", rel);
        if (!src) continue;
        char *tmpl = realloc(src, len + 1);
        tmpl[len] = '\0';
        char *messages = cJSON_PrintUnformatted(cJSON_GetObjectItem(convs, conv));
        char *out = NULL;
        const hearth_status st = hearth_chat_apply_template_json(
            tmpl, messages, with_tools ? tools : NULL, gen, cJSON_GetObjectItem(c, "bos_token")->valuestring,
            cJSON_GetObjectItem(c, "eos_token")->valuestring, &out);
        const cJSON *expected = cJSON_GetObjectItem(c, "expected"), *error = cJSON_GetObjectItem(c, "error");
        if (expected) {
            char *want = with_today(expected->valuestring, dates);
            CHECK_MSG(st == HEARTH_OK && !strcmp(out, want),
                      "%s / %s / tools %d / generation prompt %d:\n--- expected\n%s\n--- got (%s)\n%s\n", name, conv,
                      with_tools, gen, want, st == HEARTH_OK ? "ok" : hearth_last_error(), out ? out : "");
            free(want);
        } else if (cJSON_IsTrue(cJSON_GetObjectItem(c, "raised"))) {
            CHECK_MSG(st == HEARTH_ERR_INVALID_ARG && !strcmp(hearth_last_error(), error->valuestring),
                      "%s / %s: want '%s', got %s", name, conv, error->valuestring,
                      st == HEARTH_OK ? out : hearth_last_error());
        } else {
            CHECK_MSG(st != HEARTH_OK, "%s / %s: jinja2 fails ('%s'), hearth renders", name, conv, error->valuestring);
        }
        hearth_chat_free(out);
        cJSON_free(messages);
        free(tmpl);
    }
    printf("tool templates: %d cases\n", n);
    cJSON_free(tools);
    cJSON_Delete(root);
}

static void expect_error(const char *messages, const char *tools, const char *want) {
    char *out = (char *)"unset";
    const hearth_status st = hearth_chat_apply_template_json("{{ messages | length }}", messages, tools, true, NULL,
                                                             NULL, &out);
    CHECK_MSG(st == HEARTH_ERR_INVALID_ARG && !out && strstr(hearth_last_error(), want),
              "%s / %s: want '%s', got %s '%s'", messages, tools ? tools : "NULL", want, hearth_status_str(st),
              st == HEARTH_OK ? out : hearth_last_error());
    if (st == HEARTH_OK) hearth_chat_free(out);
}

static void test_errors_and_values(void) {
    expect_error("[{\"role\": \"user\", \"content\": \"hi\"}", NULL, "messages: not valid JSON at byte 34");
    expect_error("{\"role\": \"user\"}", NULL, "messages: not a JSON array");
    expect_error("[{\"role\": \"user\"}, 3]", NULL, "messages[1]: not an object with a string \"role\"");
    expect_error("[{\"role\": 1}]", NULL, "messages[0]: not an object");
    expect_error("[]", "[1,", "tools: not valid JSON");
    expect_error("[]", "{}", "tools: not a JSON array");
    char *out = NULL;
    CHECK(hearth_chat_apply_template_json(NULL, "[]", NULL, true, NULL, NULL, &out) == HEARTH_ERR_INVALID_ARG && !out);
    CHECK(hearth_chat_apply_template_json("x", NULL, NULL, true, NULL, NULL, &out) == HEARTH_ERR_INVALID_ARG);
    CHECK(hearth_chat_apply_template_json("x", "[]", NULL, true, NULL, NULL, NULL) == HEARTH_ERR_INVALID_ARG);
    /* values as the template sees them: arguments text parsed (text that is
     * not JSON stays text), numbers, null, tools None when absent */
    const char *tmpl =
        "{% for m in messages %}{{ m.content }}|{% for c in m.tool_calls or [] %}{{ c.function.arguments | tojson }}"
        "{{ c.function.arguments is string }};{% endfor %}{% endfor %}{{ tools is none }}{{ tools is defined }}"
        "{{ messages[0].extra }}";
    const char *msgs =
        "[{\"role\": \"assistant\", \"content\": null, \"extra\": [1, 2.5, true, \"s\"], \"tool_calls\": ["
        "{\"function\": {\"name\": \"f\", \"arguments\": \"{\\\"a\\\": [1, 2.5, null, \\\"\\u00e9\\\"]}\"}},"
        "{\"function\": {\"name\": \"g\", \"arguments\": \"not json\"}}]}]";
    CHECK(hearth_chat_apply_template_json(tmpl, msgs, NULL, false, NULL, NULL, &out) == HEARTH_OK);
    CHECK_MSG(out &&
                  !strcmp(out, "None|{\"a\": [1, 2.5, null, \"é\"]}False;\"not json\"True;TrueTrue[1, 2.5, True, 's']"),
              "got %s", out ? out : hearth_last_error());
    hearth_chat_free(out);
}

/* hearth_chat_render_json renders as hearth_chat_render does for the same
 * conversation (the model's template, BOS and EOS); skipped without the
 * model. */
static void test_render_json(void) {
    const char *path = getenv("HEARTH_MODEL");
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f) {
        printf("render_json: skipped (no model)\n");
        return;
    }
    fclose(f);
    hearth_model_params mp = hearth_model_default_params();
    mp.vocab_only = true;
    hearth_model *model;
    CHECK(hearth_model_load(path, &mp, &model) == HEARTH_OK);
    const hearth_chat_message msgs[] = {{"system", "Be brief."}, {"user", "Hi"}};
    char *a = NULL, *b = NULL;
    CHECK(hearth_chat_render(model, NULL, msgs, 2, &a) == HEARTH_OK);
    CHECK(hearth_chat_render_json(model, NULL,
                                  "[{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", "
                                  "\"content\": [{\"type\": \"text\", \"text\": \"Hi\"}]}]",
                                  NULL, &b) == HEARTH_OK);
    CHECK_MSG(a && b && !strcmp(a, b), "render %s\nrender_json %s", a ? a : "", b ? b : hearth_last_error());
    hearth_chat_free(a);
    hearth_chat_free(b);
    CHECK(hearth_chat_render_json(NULL, NULL, "[]", NULL, &b) == HEARTH_ERR_INVALID_ARG && !b);
    hearth_model_free(model);
}

int main(void) {
    test_fixtures();
    test_errors_and_values();
    test_render_json();
    return check_report();
}
