/* hearth_chat_apply_template: render a conversation with a Jinja chat
 * template as transformers' apply_chat_template does, through the interpreter
 * in text/jinja/. The calls that read the template and the special tokens
 * from a model (hearth_model_chat_template, hearth_chat_render) are the
 * runtime's (runtime/chat.c): the text layer does not call up into the model. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/status.h"
#include "text/jinja/jinja.h"

/* Builds messages = [{"role": ..., "content": ...}, ...] in the environment. */
static hearth_status set_messages(hl_jinja_env *env, const hearth_chat_message *msgs, size_t n_msgs) {
    jv list, role_key, content_key;
    if (!hl_jv_list(env, &list) || !hl_jv_str(env, "role", 4, &role_key) || !hl_jv_str(env, "content", 7, &content_key))
        return HEARTH_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < n_msgs; i++) {
        if (!msgs[i].role || !msgs[i].content)
            return hl_fail(HEARTH_ERR_INVALID_ARG, "chat message %zu has a NULL role or content", i);
        jv msg, role, content;
        if (!hl_jv_dict(env, &msg) || !hl_jv_str(env, msgs[i].role, strlen(msgs[i].role), &role) ||
            !hl_jv_str(env, msgs[i].content, strlen(msgs[i].content), &content) ||
            !hl_jv_dict_set(env, msg, role_key, role) || !hl_jv_dict_set(env, msg, content_key, content) ||
            !hl_jv_list_push(env, list, msg))
            return HEARTH_ERR_OUT_OF_MEMORY;
    }
    return hl_jinja_env_set(env, "messages", list);
}

static hearth_status set_str(hl_jinja_env *env, const char *name, const char *s) {
    jv v;
    if (!hl_jv_str(env, s, strlen(s), &v)) return HEARTH_ERR_OUT_OF_MEMORY;
    return hl_jinja_env_set(env, name, v);
}

hearth_status hearth_chat_apply_template(const char *tmpl, const hearth_chat_message *msgs, size_t n_msgs,
                                         bool add_generation_prompt, const char *bos_token, const char *eos_token,
                                         char **out) {
    if (!out) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_chat_apply_template: NULL out");
    *out = NULL;
    if (!tmpl || (!msgs && n_msgs)) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_chat_apply_template: NULL template or messages");
    hl_jinja_tmpl *t;
    HL_TRY(hl_jinja_parse(tmpl, strlen(tmpl), &t));
    hl_jinja_env *env;
    hearth_status st = hl_jinja_env_init(NULL, time(NULL), &env);
    if (st == HEARTH_OK) st = set_messages(env, msgs, n_msgs);
    if (st == HEARTH_OK) st = hl_jinja_env_set(env, "add_generation_prompt", hl_jv_bool(add_generation_prompt));
    if (st == HEARTH_OK) st = set_str(env, "bos_token", bos_token ? bos_token : "");
    if (st == HEARTH_OK) st = set_str(env, "eos_token", eos_token ? eos_token : "");
    size_t len;
    if (st == HEARTH_OK) st = hl_jinja_render(env, t, out, &len);
    hl_jinja_env_free(env);
    hl_jinja_tmpl_free(t);
    return st;
}

void hearth_chat_free(char *text) { free(text); }
