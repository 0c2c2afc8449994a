/* Tool calling, once for every client: a request's tools become the chat
 * template's `tools` and a grammar over the chosen format's call syntax
 * (each call's arguments constrained by its function's parameters schema),
 * and the generated text is split, as it streams, into the text the model
 * wrote outside its calls and OpenAI-shaped tool-call deltas.
 *
 * Formats (chosen from the chat template's text, never from a file name):
 * - HERMES: <tool_call>{"name": ..., "arguments": {...}}</tool_call>
 *   (Hermes 2/3, Qwen2.5, Qwen3, QwQ templates);
 * - LLAMA3: {"name": ..., "parameters": {...}} as the whole reply, or
 *   <|python_tag|> before it (Llama 3.1-3.3 templates);
 * - MISTRAL: [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]
 *   (Mistral Nemo, Small templates);
 * - GENERIC: templates that take no tools: the tools are described in a
 *   system message and the whole reply is JSON, {"tool_calls": [{"name",
 *   "arguments"}]} or {"response": "..."} (llama.cpp's generic form). */
#ifndef HEARTH_RUNTIME_TOOLCALL_H
#define HEARTH_RUNTIME_TOOLCALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hearth.h"

typedef enum hl_tool_format {
    HL_TOOLS_GENERIC = 0,
    HL_TOOLS_HERMES = 1,
    HL_TOOLS_LLAMA3 = 2,
    HL_TOOLS_MISTRAL = 3,
} hl_tool_format;

/* The format a chat template's text calls tools in. */
hl_tool_format hl_tool_format_of(const char *chat_template);
const char *hl_tool_format_name(hl_tool_format f); /* "hermes", "llama3", "mistral", "generic" */

typedef enum hl_tool_choice_kind {
    HL_TOOL_CHOICE_AUTO = 0,
    HL_TOOL_CHOICE_NONE = 1,
    HL_TOOL_CHOICE_REQUIRED = 2,
    HL_TOOL_CHOICE_NAMED = 3,
} hl_tool_choice_kind;

/* What a request with tools needs before it runs. Every pointer is owned
 * (hl_tool_setup_free). */
typedef struct hl_tool_setup {
    hl_tool_format format;
    hl_tool_choice_kind choice;
    /* the conversation rendered with the tools (and, for GENERIC, the
     * system message that describes them), generation prompt included */
    char *prompt;
    /* the GBNF of the calls the request may make; NULL: none (choice NONE) */
    char *grammar;
    /* lazy grammar (choice AUTO): it starts where the text holds one of
     * these; n_triggers 0: from the first token */
    char **triggers;
    size_t n_triggers;
} hl_tool_setup;

/* Checks `tools_json` (a JSON array of {"type": "function", "function":
 * {"name", "description", "parameters"}}; names non-empty and distinct,
 * parameters a JSON Schema object or absent) and `tool_choice` (NULL or
 * "auto", "none", "required", or a given function's name), renders
 * `messages_json` with `tmpl` (hearth_chat_apply_template_json with the
 * generation prompt, bos and eos texts) and builds the grammar.
 * Errors: INVALID_ARG naming the tool and field ("tools[2].function.name
 * is missing", "tool_choice names 'x', which is not among the tools",
 * "tools[0].function.parameters: json_schema at /properties/a: unsupported
 * keyword 'not'"), the template's errors, OUT_OF_MEMORY. */
hearth_status hl_tools_prepare(const char *tmpl, const char *messages_json, const char *tools_json,
                               const char *tool_choice, bool parallel_tool_calls, const char *bos_token,
                               const char *eos_token, hl_tool_setup *out);
void hl_tool_setup_free(hl_tool_setup *s);

/* The streaming split of generated text into content and calls. */
typedef struct hl_tool_parser hl_tool_parser;

/* What one push gave: content bytes to show and tool-call deltas (both
 * valid until the next push or free). */
typedef struct hl_tool_output {
    const char *content;
    size_t content_len;
    const hearth_tool_call_delta *calls;
    int32_t n_calls;
} hl_tool_output;

/* `id_seed` makes the calls' ids ("call_" + 24 characters) differ between
 * requests. Errors: OUT_OF_MEMORY. */
hearth_status hl_tool_parser_init(hl_tool_format f, uint64_t id_seed, hl_tool_parser **out);
void hl_tool_parser_free(hl_tool_parser *p);

/* Feeds the next len bytes of generated text (whole UTF-8 characters).
 * Text that could still begin a call's markup is held back until it
 * cannot; a call's id and name are given once its head has matched up to
 * the '{' of its arguments (with that '{'), and its arguments as they come.
 * Text that began like a call but stopped matching before that point is
 * content, so no text is lost. `final` (the generation ended): everything
 * held is resolved (an opening that never became a call is content, an
 * unfinished call is given as far as it got, its arguments closed only if
 * they were complete, unfinished closing markup is dropped). LLAMA3's
 * {"name" opens a call only at the start of the reply (<|python_tag|>
 * anywhere). Errors: OUT_OF_MEMORY. */
hearth_status hl_tool_parser_push(hl_tool_parser *p, const char *text, size_t len, bool final, hl_tool_output *out);

/* Calls begun so far. */
int32_t hl_tool_parser_n_calls(const hl_tool_parser *p);

#endif
