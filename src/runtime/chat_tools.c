/* hl_chat_tools (chat_tools.h): hl_tools_prepare() with the model's chat
 * template and special texts, and the BOS rule of hearth_chat_render(). */
#include "runtime/chat_tools.h"

#include <stdlib.h>

#include "base/status.h"

hearth_status hl_chat_tools(const hearth_model *model, const char *tmpl, const hearth_request_params *p,
                            hl_tool_setup *out) {
    *out = (hl_tool_setup){0};
    char *own = NULL;
    if (!tmpl) {
        HL_TRY(hearth_model_chat_template(model, &own));
        if (!own)
            return hl_fail(HEARTH_ERR_INVALID_ARG, "the model has no chat template (tokenizer.chat_template): give one "
                                                   "(--chat-template FILE)");
        tmpl = own;
    }
    char *bos = NULL, *eos = NULL;
    hearth_status st = hl_chat_special_texts(model, &bos, &eos);
    if (st == HEARTH_OK)
        st = hl_tools_prepare(tmpl, p->messages_json, p->tools_json, p->tool_choice, p->parallel_tool_calls, bos, eos,
                              out);
    if (st == HEARTH_OK) hl_chat_drop_bos(model, bos, out->prompt);
    free(bos);
    free(eos);
    free(own);
    return st;
}
