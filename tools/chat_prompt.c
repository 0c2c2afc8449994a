/* Chat prompts for `hearth chat` and `hearth run --chat`: the model's chat
 * template (or one from a file), its BOS/EOS texts, and rendering a
 * conversation with BOS handled as llama.cpp does (common/chat.cpp: when the
 * tokenizer adds BOS itself, a BOS the template wrote is dropped from the
 * text, so the prompt starts with exactly one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The text of a special token ("" when the model has none). */
static void token_text(const hearth_model *model, int32_t tok, char *buf, size_t size) {
    size_t len = 0;
    buf[0] = '\0';
    if (tok >= 0 && hearth_token_to_piece(model, tok, true, buf, size - 1, &len) == HEARTH_OK) buf[len] = '\0';
    else buf[0] = '\0';
}

int chat_template_load(const hearth_model *model, const char *file, chat_template *ct) {
    *ct = (chat_template){0};
    if (file) {
        size_t len;
        ct->tmpl = cli_read_file(file, "chat template", &len);
        if (!ct->tmpl) return 1;
        if (strlen(ct->tmpl) != len) {
            fprintf(stderr, "hearth: chat template '%s' contains a NUL byte\n", file);
            return 1;
        }
    } else {
        if (hearth_model_chat_template(model, &ct->tmpl) != HEARTH_OK) return cli_fail("chat template");
        if (!ct->tmpl) {
            fprintf(stderr, "hearth: the model has no chat template (tokenizer.chat_template): give one with --chat-template FILE\n");
            return 1;
        }
    }
    token_text(model, hearth_token_bos(model), ct->bos, sizeof ct->bos);
    token_text(model, hearth_token_eos(model), ct->eos, sizeof ct->eos);
    /* add_bos: tokenizing "" with add_special gives the BOS the tokenizer adds */
    int32_t tok[2];
    size_t n = 0;
    ct->add_bos = hearth_tokenize(model, "", 0, true, false, tok, 2, &n) == HEARTH_OK && n >= 1 &&
                  tok[0] == hearth_token_bos(model);
    return 0;
}

void chat_template_free(chat_template *ct) {
    hearth_chat_free(ct->tmpl);
    ct->tmpl = NULL;
}

int chat_render(const chat_template *ct, const hearth_chat_message *msgs, size_t n_msgs, char **prompt, size_t *skip) {
    if (hearth_chat_apply_template(ct->tmpl, msgs, n_msgs, true, ct->bos, ct->eos, prompt) != HEARTH_OK)
        return cli_fail("chat template");
    size_t nb = strlen(ct->bos);
    *skip = ct->add_bos && nb && !strncmp(*prompt, ct->bos, nb) ? nb : 0;
    return 0;
}
