/* The Jinja chat-template interpreter against Python jinja2 (fixtures from
 * tests/reference/chat/make_chat_fixtures.py): 15 real chat templates over 12
 * conversations with and without the generation prompt, and 60 one-feature
 * templates, byte for byte (or failing with jinja2's raise_exception message).
 * Then the errors: unsupported features name themselves and their line,
 * syntax errors give the line, and hostile templates stop at the limits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "json_file.h"
#include "text/jinja/jinja.h"

/* The fixtures' strftime_now time: 2025-03-14 15:09:26 local. */
static time_t fixed_now(void) {
    struct tm tm = {
        .tm_year = 2025 - 1900, .tm_mon = 2, .tm_mday = 14, .tm_hour = 15, .tm_min = 9, .tm_sec = 26, .tm_isdst = -1};
    return mktime(&tm);
}

/* A cJSON value as an interpreter value (integral numbers become ints, as
 * the fixtures' Python values are). */
static bool from_json(hl_jinja_env *env, const cJSON *j, jv *out) {
    if (cJSON_IsNull(j)) *out = hl_jv_none();
    else if (cJSON_IsBool(j)) *out = hl_jv_bool(cJSON_IsTrue(j));
    else if (cJSON_IsNumber(j)) {
        double d = j->valuedouble;
        *out = d == (double)(int64_t)d && d > -9e15 && d < 9e15 ? hl_jv_int((int64_t)d) : hl_jv_float(d);
    } else if (cJSON_IsString(j)) return hl_jv_str(env, j->valuestring, strlen(j->valuestring), out);
    else if (cJSON_IsArray(j)) {
        if (!hl_jv_list(env, out)) return false;
        for (const cJSON *c = j->child; c; c = c->next) {
            jv v;
            if (!from_json(env, c, &v) || !hl_jv_list_push(env, *out, v)) return false;
        }
    } else if (cJSON_IsObject(j)) {
        if (!hl_jv_dict(env, out)) return false;
        for (const cJSON *c = j->child; c; c = c->next) {
            jv k, v;
            if (!hl_jv_str(env, c->string, strlen(c->string), &k) || !from_json(env, c, &v) ||
                !hl_jv_dict_set(env, *out, k, v))
                return false;
        }
    } else return false;
    return true;
}

/* Renders `src` with the members of `vars` (a JSON object) as globals. */
static hearth_status render(const char *src, const cJSON *vars, const hl_jinja_limits *lim, char **out) {
    hl_jinja_tmpl *t;
    *out = NULL;
    hearth_status st = hl_jinja_parse(src, strlen(src), &t);
    if (st != HEARTH_OK) return st;
    hl_jinja_env *env;
    st = hl_jinja_env_init(lim, fixed_now(), &env);
    for (const cJSON *c = vars ? vars->child : NULL; c && st == HEARTH_OK; c = c->next) {
        jv v;
        st = from_json(env, c, &v) ? hl_jinja_env_set(env, c->string, v) : HEARTH_ERR_OUT_OF_MEMORY;
    }
    size_t len;
    if (st == HEARTH_OK) st = hl_jinja_render(env, t, out, &len);
    if (st == HEARTH_OK) CHECK(strlen(*out) == len);
    hl_jinja_env_free(env);
    hl_jinja_tmpl_free(t);
    return st;
}

/* Checks one fixture case: the expected text, or a failure whose message
 * contains jinja2's. */
static void check_case(const char *what, const char *src, const cJSON *vars, const cJSON *c) {
    const cJSON *expected = cJSON_GetObjectItem(c, "expected"), *error = cJSON_GetObjectItem(c, "error");
    char *out;
    hearth_status st = render(src, vars, NULL, &out);
    if (expected) {
        CHECK_MSG(st == HEARTH_OK && !strcmp(out, expected->valuestring), "%s:\n--- expected\n%s\n--- got (%s)\n%s\n",
                  what, expected->valuestring, st == HEARTH_OK ? "ok" : hearth_last_error(), out ? out : "");
    } else {
        CHECK_MSG(st == HEARTH_ERR_INVALID_ARG && strstr(hearth_last_error(), error->valuestring),
                  "%s: expected error '%s', got %s '%s'", what, error->valuestring, hearth_status_str(st),
                  st == HEARTH_OK ? out : hearth_last_error());
    }
    free(out);
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    return buf;
}

static void test_features(void) {
    cJSON *root = json_file_read(check_test_path("reference/chat/features.json"));
    CHECK(root != NULL);
    if (!root) return;
    int i = 0;
    for (const cJSON *c = cJSON_GetObjectItem(root, "cases")->child; c; c = c->next, i++) {
        char what[64];
        snprintf(what, sizeof what, "feature %d", i);
        check_case(what, cJSON_GetObjectItem(c, "template")->valuestring, cJSON_GetObjectItem(c, "variables"), c);
    }
    printf("features: %d cases\n", i);
    cJSON_Delete(root);
}

static void test_templates(void) {
    cJSON *root = json_file_read(check_test_path("reference/chat/templates.json"));
    CHECK(root != NULL);
    if (!root) return;
    const cJSON *convs = cJSON_GetObjectItem(root, "conversations");
    int n = 0;
    for (const cJSON *c = cJSON_GetObjectItem(root, "cases")->child; c; c = c->next, n++) {
        const char *name = cJSON_GetObjectItem(c, "template")->valuestring;
        const char *conv = cJSON_GetObjectItem(c, "conversation")->valuestring;
        char rel[256];
        snprintf(rel, sizeof rel, "reference/chat/templates/%s.jinja", name);
        char *src = read_text(check_test_path(rel));
        CHECK_MSG(src != NULL, "cannot read %s", rel);
        if (!src) continue;
        cJSON *vars = cJSON_CreateObject();
        cJSON_AddItemToObject(vars, "messages", cJSON_Duplicate(cJSON_GetObjectItem(convs, conv), 1));
        cJSON_AddBoolToObject(vars, "add_generation_prompt",
                              cJSON_IsTrue(cJSON_GetObjectItem(c, "add_generation_prompt")));
        cJSON_AddStringToObject(vars, "bos_token", cJSON_GetObjectItem(c, "bos_token")->valuestring);
        cJSON_AddStringToObject(vars, "eos_token", cJSON_GetObjectItem(c, "eos_token")->valuestring);
        char what[160];
        snprintf(what, sizeof what, "%s / %s / generation prompt %s", name, conv,
                 cJSON_IsTrue(cJSON_GetObjectItem(c, "add_generation_prompt")) ? "on" : "off");
        check_case(what, src, vars, c);
        cJSON_Delete(vars);
        free(src);
    }
    printf("templates: %d cases\n", n);
    cJSON_Delete(root);
}

/* The public call on SmolLM2's template equals the fixture. */
static void test_public_api(void) {
    char *src = read_text(check_test_path("reference/chat/templates/smollm2.jinja"));
    CHECK(src != NULL);
    if (!src) return;
    hearth_chat_message msgs[] = {{"system", "You are a concise assistant."},
                                  {"user", "What is the capital of France?"},
                                  {"assistant", "Paris."},
                                  {"user", "And of Italy?"}};
    char *out = NULL;
    CHECK(hearth_chat_apply_template(src, msgs, 4, true, "<|im_start|>", "<|im_end|>", &out) == HEARTH_OK);
    const char *want =
        "<|im_start|>system\nYou are a concise assistant.<|im_end|>\n<|im_start|>user\nWhat is the capital "
        "of France?<|im_end|>\n<|im_start|>assistant\nParis.<|im_end|>\n<|im_start|>user\nAnd of "
        "Italy?<|im_end|>\n<|im_start|>assistant\n";
    CHECK_MSG(out && !strcmp(out, want), "got: %s", out ? out : hearth_last_error());
    hearth_chat_free(out);
    CHECK(hearth_chat_apply_template(src, msgs, 1, false, NULL, NULL, &out) == HEARTH_OK);
    CHECK(out && !strcmp(out, "<|im_start|>system\nYou are a concise assistant.<|im_end|>\n"));
    hearth_chat_free(out);
    /* bad arguments */
    CHECK(hearth_chat_apply_template(NULL, msgs, 1, true, NULL, NULL, &out) == HEARTH_ERR_INVALID_ARG && !out);
    CHECK(hearth_chat_apply_template(src, NULL, 1, true, NULL, NULL, &out) == HEARTH_ERR_INVALID_ARG);
    CHECK(hearth_chat_apply_template(src, msgs, 1, true, NULL, NULL, NULL) == HEARTH_ERR_INVALID_ARG);
    hearth_chat_message bad = {"user", NULL};
    CHECK(hearth_chat_apply_template(src, &bad, 1, true, NULL, NULL, &out) == HEARTH_ERR_INVALID_ARG && !out);
    /* raise_exception: the template's message */
    char *gemma = read_text(check_test_path("reference/chat/templates/gemma3.jinja"));
    hearth_chat_message two_users[] = {{"user", "a"}, {"user", "b"}};
    CHECK(gemma &&
          hearth_chat_apply_template(gemma, two_users, 2, true, "<bos>", "<eos>", &out) == HEARTH_ERR_INVALID_ARG);
    CHECK_MSG(!strcmp(hearth_last_error(), "Conversation roles must alternate user/assistant/user/assistant/..."), "%s",
              hearth_last_error());
    free(gemma);
    free(src);
}

/* The model's own template (skipped without the model). */
static void test_model_template(void) {
    const char *path = getenv("HEARTH_MODEL");
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f) {
        printf("model template: skipped (no model)\n");
        return;
    }
    fclose(f);
    hearth_model_params mp = hearth_model_default_params();
    mp.vocab_only = true;
    hearth_model *model;
    CHECK(hearth_model_load(path, &mp, &model) == HEARTH_OK);
    char *tmpl = NULL, *want = read_text(check_test_path("reference/chat/templates/smollm2.jinja"));
    CHECK(hearth_model_chat_template(model, &tmpl) == HEARTH_OK);
    CHECK(tmpl && want && !strcmp(tmpl, want));
    CHECK(hearth_model_chat_template(NULL, &tmpl) == HEARTH_ERR_INVALID_ARG);
    hearth_chat_free(tmpl);
    free(want);
    hearth_model_free(model);
}

/* `src` fails with `st` and a message containing each of the strings. */
static void expect_error(const char *src, hearth_status st, const char *want1, const char *want2) {
    char *out;
    hearth_status got = render(src, NULL, NULL, &out);
    const char *msg = hearth_last_error();
    CHECK_MSG(got == st && strstr(msg, want1) && (!want2 || strstr(msg, want2)),
              "template %s: expected %s with '%s', got %s '%s'", src, hearth_status_str(st), want1,
              hearth_status_str(got), got == HEARTH_OK ? out : msg);
    free(out);
}

static void test_errors(void) {
    const hearth_status U = HEARTH_ERR_UNSUPPORTED, F = HEARTH_ERR_FORMAT;
    expect_error("{% extends 'base.html' %}", U, "line 1: unsupported Jinja feature 'extends'", NULL);
    expect_error("a\nb\n{% include 'x' %}", U, "line 3: unsupported Jinja feature 'include'", NULL);
    expect_error("{% import 'm' as m %}", U, "unsupported Jinja feature 'import'", NULL);
    expect_error("\n{% block body %}{% endblock %}", U, "line 2: unsupported Jinja feature 'block'", NULL);
    expect_error("{{ x | wordwrap(10) }}", U, "line 1: unsupported Jinja feature 'filter wordwrap'", NULL);
    expect_error("\n\n\n{% if x is divisible %}{% endif %}", U, "line 4: unsupported Jinja feature 'test divisible'",
                 NULL);
    expect_error("{% for x in y recursive %}{% endfor %}", U, "unsupported Jinja feature 'recursive loop'", NULL);
    expect_error("{{ '{} {}'.format(1, 2) }}", U, "line 1: unsupported Jinja feature 'str.format'", NULL);
    expect_error("{{ [1].append(2) }}", U, "unsupported Jinja feature 'list.append'", NULL);
    expect_error("{{ '%s' % 1 }}", U, "unsupported Jinja feature 'string formatting with %'", NULL);
    expect_error("{{ f(*args) }}", U, "unsupported Jinja feature '*args in a call'", NULL);
    expect_error("{{ cycler(1, 2) }}", U, "unsupported Jinja feature 'cycler'", NULL);
    expect_error("{{ 99999999999999999999 }}", U, "integer beyond 64 bits", NULL);
    expect_error("{{ 9223372036854775807 + 1 }}", U, "integer beyond 64 bits", NULL);
    /* syntax errors: FORMAT with the line */
    expect_error("{% if x %}\nno end", F, "line 2: syntax error: missing {% endif %}", NULL);
    expect_error("{{ 1 + }}", F, "line 1: syntax error: expected an expression", NULL);
    expect_error("{% for x y %}{% endfor %}", F, "syntax error: expected 'in'", NULL);
    expect_error("{{ 'unterminated }}", F, "unterminated string", NULL);
    expect_error("{# comment", F, "missing end of comment", NULL);
    expect_error("{% endif %}", F, "unexpected {% endif %}", NULL);
    expect_error("{{ (1 }}", F, "line 1", NULL);
    expect_error("{{ x ]] }}", F, "unexpected ']'", NULL);
    expect_error("a{% break %}", F, "'break' outside loop", NULL);
    expect_error("{% for x in [1] %}{% macro m() %}{% continue %}{% endmacro %}{% endfor %}", F,
                 "'continue' outside loop", NULL);
    /* runtime errors: jinja2's wording */
    expect_error("\n{{ x.y }}", F, "line 2: 'x' is undefined", NULL);
    expect_error("{{ {}.a.b }}", F, "'dict object' has no attribute 'a'", NULL);
    expect_error("{{ 'a' + 1 }}", F, "unsupported operand types for +: 'str' and 'int'", NULL);
    expect_error("{{ 1 / 0 }}", F, "division by zero", NULL);
    expect_error("{% set x = 1 %}{% set x.a = 2 %}", F, "cannot assign attribute on non-namespace object", NULL);
    expect_error("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", F, "takes not more than 1 argument", NULL);
    expect_error("{{ 1 < 'a' }}", F, "cannot order int and str", NULL);
    /* hostile templates stop at the limits */
    expect_error("{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}", F, "nesting deeper than", NULL);
    expect_error("{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(1000) %}{% endfor %}{% endfor "
                 "%}{% endfor %}",
                 F, "loop iterations", NULL);
    expect_error("{{ range(10000000000) }}", F, "range of more than", NULL);
    expect_error("{{ 'x' * 100000000000 }}", F, "exceeds", NULL);
    expect_error("{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% "
                 "endfor %}",
                 HEARTH_ERR_OUT_OF_MEMORY, "rendering needs more than 256 MiB", NULL);
    expect_error("{% set ns = namespace(a=1) %}{% set ns.a = ns %}{{ ns | tojson }}", F, "not JSON serializable", NULL);
    /* nesting: a deep expression fails cleanly */
    char deep[4200];
    size_t n = 0;
    n += (size_t)snprintf(deep + n, sizeof deep - n, "{{ ");
    for (int i = 0; i < 2000; i++) deep[n++] = '(';
    deep[n++] = '1';
    for (int i = 0; i < 2000; i++) deep[n++] = ')';
    snprintf(deep + n, sizeof deep - n, " }}");
    expect_error(deep, U, "nested deeper than 200", NULL);
    /* limits are adjustable */
    hl_jinja_limits lim = hl_jinja_default_limits();
    lim.max_output = 10;
    char *out;
    CHECK(render("{{ 'abcdefghijk' }}", NULL, &lim, &out) == HEARTH_ERR_FORMAT &&
          strstr(hearth_last_error(), "output exceeds"));
    CHECK(render("{{ 'abcdefghij' }}", NULL, &lim, &out) == HEARTH_OK && !strcmp(out, "abcdefghij"));
    free(out);
}

int main(void) {
    test_features();
    test_templates();
    test_public_api();
    test_model_template();
    test_errors();
    return check_report();
}
