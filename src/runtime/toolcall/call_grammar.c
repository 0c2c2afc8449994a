/* The GBNF of a request's tool calls: each tool's arguments constrained by
 * its parameters schema (grammar/json_schema.h, rules prefixed "t<i>-"),
 * wrapped in the call syntax of the format:
 *   HERMES   <tool_call>{"name": "f", "arguments": {...}}</tool_call>, blocks
 *            separated by whitespace when parallel; or one bare call as the
 *            whole reply (Qwen2.5-Coder writes calls so)
 *   LLAMA3   {"name": "f", "parameters": {...}}, optionally after
 *            <|python_tag|>; always one call (the Llama 3.x templates refuse
 *            several calls in one message)
 *   MISTRAL  [TOOL_CALLS][{"name": "f", "arguments": {...}, "id": "..."}, ...]
 *            (the id optional; the Nemo template writes one after the
 *            arguments, 9 letters or digits)
 *   GENERIC  {"tool_calls": [{"name": "f", "arguments": {...}}, ...]}, and
 *            with choice AUTO also {"response": "..."}
 * The name comes first and the arguments second: the streaming parser
 * (parser.c) relies on that order. Whitespace between tokens is bounded
 * (rule ws, llama.cpp's SPACE_RULE) so a model cannot loop on it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/json_schema.h"
#include "runtime/toolcall/toolcall_impl.h"

/* The rules of tool i: its arguments (t<i>-args and the schema's rules) and
 * its call object (call<i>). */
static hearth_status tool_rules(hl_str *g, hl_tool_format f, const hl_tool_def *t, size_t i) {
    char prefix[32], root[40];
    snprintf(prefix, sizeof prefix, "t%zu-", i);
    snprintf(root, sizeof root, "t%zu-args", i);
    const char *schema = t->parameters ? t->parameters : "{\"type\": \"object\"}";
    char *rules = NULL;
    hearth_status st = hl_json_schema_to_gbnf_rules(schema, strlen(schema), prefix, root, &rules);
    if (st != HEARTH_OK) {
        if (st != HEARTH_ERR_INVALID_ARG) return st;
        char why[512];
        snprintf(why, sizeof why, "%s", hearth_last_error());
        return hl_fail(st, "tools[%zu].function.parameters: %s", i, why);
    }
    st = hl_str_puts(g, rules);
    free(rules);
    HL_TRY(st);
    HL_TRY(
        hl_str_printf(g,
                      "call%zu ::= \"{\" ws \"\\\"name\\\"\" ws \":\" ws \"\\\"%s\\\"\" ws \",\" ws \"\\\"%s\\\"\" ws "
                      "\":\" ws %s%s ws \"}\"\n",
                      i, t->name, f == HL_TOOLS_LLAMA3 ? "parameters" : "arguments", root,
                      f == HL_TOOLS_MISTRAL ? " mistral-id?" : ""));
    return HEARTH_OK;
}

/* The format's root over `call` (one call of any allowed tool). */
static hearth_status root_rule(hl_str *g, hl_tool_format f, hl_tool_choice_kind choice, bool parallel) {
    switch (f) {
    case HL_TOOLS_HERMES:
        return hl_str_printf(g,
                             "root ::= block %sws | call ws\nblock ::= \"<tool_call>\" ws call ws \"</tool_call>\"\n",
                             parallel ? "(ws block)* " : "");
    case HL_TOOLS_LLAMA3: return hl_str_puts(g, "root ::= \"<|python_tag|>\" ws call | call\n");
    case HL_TOOLS_MISTRAL:
        return hl_str_printf(g,
                             "root ::= \"[TOOL_CALLS]\" ws \"[\" ws call %sws \"]\"\n"
                             "mistral-id ::= ws \",\" ws \"\\\"id\\\"\" ws \":\" ws \"\\\"\" [a-zA-Z0-9]{9} \"\\\"\"\n",
                             parallel ? "(ws \",\" ws call)* " : "");
    case HL_TOOLS_GENERIC: break;
    }
    HL_TRY(hl_str_printf(
        g, "root ::= \"{\" ws \"\\\"tool_calls\\\"\" ws \":\" ws \"[\" ws call %sws \"]\" ws \"}\"%s\n",
        parallel ? "(ws \",\" ws call)* " : "",
        choice == HL_TOOL_CHOICE_AUTO ? " | \"{\" ws \"\\\"response\\\"\" ws \":\" ws str ws \"}\"" : ""));
    return hl_str_puts(g, "str ::= \"\\\"\" ( [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" "
                          "[0-9a-fA-F]{4} ) )* \"\\\"\"\n");
}

hearth_status hl_tools_grammar(hl_tool_format f, const hl_tool_def *tools, size_t n_tools, hl_tool_choice_kind choice,
                               int named, bool parallel, char **out) {
    *out = NULL;
    hl_str g = {0};
    hearth_status st = root_rule(&g, f, choice, parallel && f != HL_TOOLS_LLAMA3);
    if (st == HEARTH_OK) st = hl_str_puts(&g, "ws ::= | \" \" | \"\\n\"{1,2} [ \\t]{0,20}\ncall ::= ");
    for (size_t i = 0, k = 0; i < n_tools && st == HEARTH_OK; i++)
        if (named < 0 || (size_t)named == i) st = hl_str_printf(&g, "%scall%zu", k++ ? " | " : "", i);
    if (st == HEARTH_OK) st = hl_str_puts(&g, "\n");
    for (size_t i = 0; i < n_tools && st == HEARTH_OK; i++)
        if (named < 0 || (size_t)named == i) st = tool_rules(&g, f, &tools[i], i);
    if (st != HEARTH_OK) {
        free(g.p);
        return st;
    }
    *out = g.p;
    return HEARTH_OK;
}
