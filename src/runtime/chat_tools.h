/* The runtime's chat rendering with a model's facts (its chat template, BOS
 * and EOS texts, whether its tokenizer adds BOS) around any way of
 * rendering, and the tool-calling form of it: a request's conversation and
 * tools rendered as hearth_chat_render() renders a plain conversation. */
#ifndef HEARTH_RUNTIME_CHAT_TOOLS_H
#define HEARTH_RUNTIME_CHAT_TOOLS_H

#include "hearth.h"
#include "runtime/toolcall/toolcall.h"

/* Renders with `tmpl`, the model's BOS and EOS texts and `ctx`, into *out
 * (malloc'd). */
typedef hearth_status (*hl_chat_apply_fn)(const char *tmpl, const char *bos, const char *eos, void *ctx, char **out);

/* Calls `apply` with `tmpl` (NULL: the model's chat template) and the
 * model's BOS and EOS texts, then drops a BOS the template wrote when the
 * tokenizer adds one itself, as llama.cpp does (common/chat.cpp). Errors:
 * apply's, INVALID_ARG (no template), OUT_OF_MEMORY. (runtime/chat.c) */
hearth_status hl_chat_render_for_model(const hearth_model *model, const char *tmpl, hl_chat_apply_fn apply, void *ctx,
                                       char **out);

/* hl_tools_prepare() for request `p` (messages_json, tools_json,
 * tool_choice, parallel_tool_calls) with `tmpl` or, when NULL, the model's
 * chat template. Errors: those of hl_tools_prepare(), INVALID_ARG (no
 * template), OUT_OF_MEMORY. */
hearth_status hl_chat_tools(const hearth_model *model, const char *tmpl, const hearth_request_params *p,
                            hl_tool_setup *out);

#endif
