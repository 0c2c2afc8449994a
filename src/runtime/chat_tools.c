/* hl_chat_tools (chat_tools.h): hl_tools_prepare() rendered through the
 * model's chat facts like any conversation (hl_chat_render_for_model). */
#include "runtime/chat_tools.h"

#include "base/status.h"

typedef struct tools_ctx {
    const hearth_request_params *p;
    hl_tool_setup *setup;
} tools_ctx;

/* Prepares the tools; the prompt goes out through *out for the BOS rule and
 * comes back into the setup. */
static hearth_status apply_tools(const char *tmpl, const char *bos, const char *eos, void *ctx, char **out) {
    tools_ctx *tc = ctx;
    const hearth_request_params *p = tc->p;
    HL_TRY(hl_tools_prepare(tmpl, p->messages_json, p->tools_json, p->tool_choice, p->parallel_tool_calls, bos, eos,
                            tc->setup));
    *out = tc->setup->prompt;
    tc->setup->prompt = NULL;
    return HEARTH_OK;
}

hearth_status hl_chat_tools(const hearth_model *model, const char *tmpl, const hearth_request_params *p,
                            hl_tool_setup *out) {
    *out = (hl_tool_setup){0};
    tools_ctx tc = {p, out};
    char *prompt = NULL;
    hearth_status st = hl_chat_render_for_model(model, tmpl, apply_tools, &tc, &prompt);
    out->prompt = prompt;
    if (st != HEARTH_OK) hl_tool_setup_free(out);
    return st;
}
