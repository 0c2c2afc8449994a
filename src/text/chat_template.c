/* The public chat-template calls: render a conversation with a model's Jinja
 * chat template (tokenizer.chat_template) as transformers'
 * apply_chat_template does, through the interpreter in text/jinja/. */
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

hearth_status hearth_chat_render(const hearth_model *model, const char *tmpl, const hearth_chat_message *msgs,
                                 size_t n_msgs, char **out) {
    if (!model || !out) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_chat_render: NULL model or out");
    *out = NULL;
    char *own = NULL;
    if (!tmpl) {
        HL_TRY(hearth_model_chat_template(model, &own));
        if (!own)
            return hl_fail(HEARTH_ERR_INVALID_ARG, "the model has no chat template (tokenizer.chat_template): give one "
                                                   "(--chat-template FILE)");
        tmpl = own;
    }
    char *bos = token_text(model, hearth_token_bos(model)), *eos = token_text(model, hearth_token_eos(model));
    hearth_status st = bos && eos ? hearth_chat_apply_template(tmpl, msgs, n_msgs, true, bos, eos, out)
                                  : HEARTH_ERR_OUT_OF_MEMORY;
    /* llama.cpp (common/chat.cpp) drops a BOS the template wrote when the
     * tokenizer adds one itself, so the tokens start with exactly one BOS */
    const size_t nb = bos ? strlen(bos) : 0;
    if (st == HEARTH_OK && nb && !strncmp(*out, bos, nb) && adds_bos(model)) memmove(*out, *out + nb, strlen(*out) - nb + 1);
    free(bos);
    free(eos);
    free(own);
    return st;
}
