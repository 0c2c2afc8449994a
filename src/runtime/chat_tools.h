/* The runtime's side of tool calling: a request's conversation and tools
 * rendered with the model's (or the engine's) chat template and special
 * texts, the way hearth_chat_render() renders a plain conversation. */
#ifndef HEARTH_RUNTIME_CHAT_TOOLS_H
#define HEARTH_RUNTIME_CHAT_TOOLS_H

#include "hearth.h"
#include "runtime/toolcall/toolcall.h"

/* The BOS and EOS texts of `model` ("" when it has none), malloc'd; and
 * whether its tokenizer adds BOS itself. Errors: OUT_OF_MEMORY. */
hearth_status hl_chat_special_texts(const hearth_model *model, char **bos, char **eos);
/* Drops a leading BOS text from `text` when the tokenizer adds BOS itself,
 * as llama.cpp does (common/chat.cpp), so the tokens start with one BOS. */
void hl_chat_drop_bos(const hearth_model *model, const char *bos, char *text);

/* hl_tools_prepare() for request `p` (messages_json, tools_json,
 * tool_choice, parallel_tool_calls) with `tmpl` or, when NULL, the model's
 * chat template. Errors: those of hl_tools_prepare(), INVALID_ARG (no
 * template), OUT_OF_MEMORY. */
hearth_status hl_chat_tools(const hearth_model *model, const char *tmpl, const hearth_request_params *p,
                            hl_tool_setup *out);

#endif
