/* Chat prompts for `hearth chat` and `hearth run --chat`: the template
 * from --chat-template FILE or the model's, rendered by the library
 * (hearth_chat_render: the generation prompt, BOS as llama.cpp handles it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int chat_template_load(const hearth_model *model, const char *file, chat_template *ct) {
    *ct = (chat_template){.model = model};
    if (file) {
        size_t len;
        ct->tmpl = cli_read_file(file, "chat template", &len);
        if (!ct->tmpl) return 1;
        if (strlen(ct->tmpl) != len) {
            fprintf(stderr, "hearth: chat template '%s' contains a NUL byte\n", file);
            return 1;
        }
        return 0;
    }
    char *own;
    if (hearth_model_chat_template(model, &own) != HEARTH_OK) return cli_fail("chat template");
    if (!own) {
        fprintf(
            stderr,
            "hearth: the model has no chat template (tokenizer.chat_template): give one with --chat-template FILE\n");
        return 1;
    }
    hearth_chat_free(own);
    return 0;
}

void chat_template_free(chat_template *ct) {
    free(ct->tmpl);
    ct->tmpl = NULL;
}

int chat_render(const chat_template *ct, const hearth_chat_message *msgs, size_t n_msgs, char **prompt) {
    if (hearth_chat_render(ct->model, ct->tmpl, msgs, n_msgs, prompt) != HEARTH_OK) return cli_fail("chat template");
    return 0;
}
