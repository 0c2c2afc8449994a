/* The tool-call formats: which one a chat template teaches (read from the
 * template's text: the markers it writes around calls), their names, and
 * the texts a lazy grammar of each starts at. Checked against the templates
 * in tests/reference/chat/templates (Qwen2.5/3, QwQ, Hermes 3: <tool_call>;
 * Llama 3.1-3.3: <|python_tag|> and the ipython role; Mistral Nemo and
 * Small 3.2: [TOOL_CALLS]). */
#include <string.h>

#include "runtime/toolcall/toolcall_impl.h"

hl_tool_format hl_tool_format_of(const char *chat_template) {
    if (!chat_template) return HL_TOOLS_GENERIC;
    if (strstr(chat_template, "<tool_call>")) return HL_TOOLS_HERMES;
    if (strstr(chat_template, "[TOOL_CALLS]")) return HL_TOOLS_MISTRAL;
    if (strstr(chat_template, "<|python_tag|>") ||
        (strstr(chat_template, "<|start_header_id|>") &&
         (strstr(chat_template, "ipython") || strstr(chat_template, "tools"))))
        return HL_TOOLS_LLAMA3;
    return HL_TOOLS_GENERIC;
}

const char *hl_tool_format_name(hl_tool_format f) {
    switch (f) {
    case HL_TOOLS_HERMES: return "hermes";
    case HL_TOOLS_LLAMA3: return "llama3";
    case HL_TOOLS_MISTRAL: return "mistral";
    case HL_TOOLS_GENERIC: break;
    }
    return "generic";
}

/* Llama 3.x writes a call as the whole reply, {"name": ...} (the template's
 * instruction), or after <|python_tag|> (its built-in tools); Hermes models
 * write <tool_call> blocks, and some (Qwen2.5-Coder) the bare call as the
 * whole reply, as llama.cpp's Hermes handler also accepts; GENERIC's
 * grammar is never lazy. */
const char *const *hl_tool_triggers(hl_tool_format f, size_t *n) {
    static const char *const hermes[] = {"<tool_call>", "{\"name\""};
    static const char *const llama3[] = {"<|python_tag|>", "{\"name\""};
    static const char *const mistral[] = {"[TOOL_CALLS]"};
    switch (f) {
    case HL_TOOLS_HERMES: *n = 2; return hermes;
    case HL_TOOLS_LLAMA3: *n = 2; return llama3;
    case HL_TOOLS_MISTRAL: *n = 1; return mistral;
    case HL_TOOLS_GENERIC: break;
    }
    *n = 0;
    return NULL;
}
