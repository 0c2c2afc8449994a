/* The chat calls that need a model: its template (tokenizer.chat_template)
 * and hearth_chat_render / hearth_chat_render_json, which render a
 * conversation with the model's BOS and EOS texts through
 * text/chat_template.c and drop a BOS the template wrote when the tokenizer
 * adds one itself. */
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "hearth.h"
#include "runtime/chat_tools.h"

hearth_status hearth_model_chat_template(const hearth_model *model, char **out) {
    if (!model || !out) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_model_chat_template: NULL argument");
    *out = NULL;
    size_t len;
    char probe;
    hearth_status st = hearth_model_meta_str(model, "tokenizer.chat_template", &probe, 1, &len);
    if (st == HEARTH_ERR_INVALID_ARG) { /* no template in the file */
        hl_clear_error();
        return HEARTH_OK;
    }
    if (st == HEARTH_OK) { /* the empty string */
        *out = hl_calloc(1, 1);
        return *out ? HEARTH_OK : HEARTH_ERR_OUT_OF_MEMORY;
    }
    if (st != HEARTH_ERR_BUFFER_TOO_SMALL) return st;
    char *s = hl_malloc(len + 1);
    if (!s) return HEARTH_ERR_OUT_OF_MEMORY;
    st = hearth_model_meta_str(model, "tokenizer.chat_template", s, len + 1, &len);
    if (st != HEARTH_OK) {
        free(s);
        return st;
    }
    *out = s;
    return HEARTH_OK;
}

/* The text of a special token ("" when the model has none); malloc'd. */
static char *token_text(const hearth_model *model, int32_t tok) {
    size_t len = 0;
    char probe;
    if (tok < 0) return hl_calloc(1, 1);
    hearth_status st = hearth_token_to_piece(model, tok, true, &probe, 0, &len);
    if (st != HEARTH_OK && st != HEARTH_ERR_BUFFER_TOO_SMALL) return hl_calloc(1, 1);
    char *s = hl_malloc(len + 1);
    if (!s) return NULL;
    if (hearth_token_to_piece(model, tok, true, s, len, &len) != HEARTH_OK) len = 0;
    s[len] = '\0';
    return s;
}

/* Whether the tokenizer adds BOS itself: tokenizing "" with add_special
 * gives exactly that BOS. */
static bool adds_bos(const hearth_model *model) {
    int32_t tok[2];
    size_t n = 0;
    const int32_t bos = hearth_token_bos(model);
    return bos >= 0 && hearth_tokenize(model, "", 0, true, false, tok, 2, &n) == HEARTH_OK && n >= 1 && tok[0] == bos;
}

hearth_status hl_chat_render_for_model(const hearth_model *model, const char *tmpl, hl_chat_apply_fn apply, void *ctx,
                                       char **out) {
    char *own = NULL;
    if (!tmpl) {
        HL_TRY(hearth_model_chat_template(model, &own));
        if (!own)
            return hl_fail(HEARTH_ERR_INVALID_ARG, "the model has no chat template (tokenizer.chat_template): give one "
                                                   "(--chat-template FILE)");
        tmpl = own;
    }
    char *bos = token_text(model, hearth_token_bos(model)), *eos = token_text(model, hearth_token_eos(model));
    hearth_status st = bos && eos ? apply(tmpl, bos, eos, ctx, out) : HEARTH_ERR_OUT_OF_MEMORY;
    /* llama.cpp (common/chat.cpp) drops a BOS the template wrote when the
     * tokenizer adds one itself, so the tokens start with exactly one BOS */
    const size_t nb = bos ? strlen(bos) : 0;
    if (st == HEARTH_OK && nb && !strncmp(*out, bos, nb) && adds_bos(model))
        memmove(*out, *out + nb, strlen(*out) - nb + 1);
    free(bos);
    free(eos);
    free(own);
    return st;
}

typedef struct msg_list {
    const hearth_chat_message *msgs;
    size_t n;
} msg_list;

static hearth_status apply_list(const char *tmpl, const char *bos, const char *eos, void *ctx, char **out) {
    const msg_list *ml = ctx;
    return hearth_chat_apply_template(tmpl, ml->msgs, ml->n, true, bos, eos, out);
}

hearth_status hearth_chat_render(const hearth_model *model, const char *tmpl, const hearth_chat_message *msgs,
                                 size_t n_msgs, char **out) {
    if (out) *out = NULL;
    if (!model || !out) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_chat_render: NULL model or out");
    const msg_list ml = {msgs, n_msgs};
    return hl_chat_render_for_model(model, tmpl, apply_list, (void *)&ml, out);
}

typedef struct json_conv {
    const char *messages, *tools;
} json_conv;

static hearth_status apply_json(const char *tmpl, const char *bos, const char *eos, void *ctx, char **out) {
    const json_conv *jc = ctx;
    return hearth_chat_apply_template_json(tmpl, jc->messages, jc->tools, true, bos, eos, out);
}

hearth_status hearth_chat_render_json(const hearth_model *model, const char *tmpl, const char *messages,
                                      const char *tools, char **out) {
    if (out) *out = NULL;
    if (!model || !out) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_chat_render_json: NULL model or out");
    const json_conv jc = {messages, tools};
    return hl_chat_render_for_model(model, tmpl, apply_json, (void *)&jc, out);
}
