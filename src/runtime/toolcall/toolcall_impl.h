/* Internals shared by the tool-calling files: the checked tool list
 * (setup.c), the per-format facts (format.c) and the grammar of a request's
 * calls (call_grammar.c). */
#ifndef HEARTH_RUNTIME_TOOLCALL_IMPL_H
#define HEARTH_RUNTIME_TOOLCALL_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"
#include "base/strbuf.h"
#include "runtime/toolcall/toolcall.h"

/* One checked tool: its name (printable ASCII without '"' or '\', so it
 * needs no escaping in JSON or GBNF) and its parameters schema as JSON
 * text (NULL: none given, any object). Borrowed from the parsed tools. */
typedef struct hl_tool_def {
    const char *name;
    const char *parameters;
} hl_tool_def;

/* The texts a lazy grammar of format f starts at (choice AUTO): *n of them. */
const char *const *hl_tool_triggers(hl_tool_format f, size_t *n);

/* The GBNF of the calls a request may make: every tool's call, or only
 * tools[named] (named >= 0); one call or, with `parallel`, one or more;
 * for GENERIC with AUTO also the {"response": ...} reply. The root starts
 * with the format's opening text, so a lazy grammar starts at its trigger.
 * Errors: INVALID_ARG ("tools[i].function.parameters: <json_schema's
 * message>"), OUT_OF_MEMORY. */
hearth_status hl_tools_grammar(hl_tool_format f, const hl_tool_def *tools, size_t n_tools, hl_tool_choice_kind choice,
                               int named, bool parallel, char **out);

#endif
