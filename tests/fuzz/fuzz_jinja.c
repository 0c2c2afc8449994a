/* libFuzzer harness for the Jinja chat-template interpreter: any template must
 * parse and render to OK or an error status, within the limits, without
 * crashing, leaking or hanging. The input is the template; it renders over a
 * small conversation with tighter limits than the defaults (so each run is
 * fast). Not built by CMake; build and run it from the repository root: */
// clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Iinclude -Isrc src/base/status.c src/text/jinja/*.c tests/fuzz/fuzz_jinja.c -o fuzz_jinja -lm && ./fuzz_jinja -max_total_time=60 -dict=tests/fuzz/jinja.dict CORPUS_DIR tests/reference/chat/templates
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/jinja/jinja.h"

static bool set_messages(hl_jinja_env *env) {
    static const char *const turns[][2] = {{"system", "Be brief."},
                                           {"user", "Hi <b>\"there\"</b>\n"},
                                           {"assistant", "<think>x</think>\n\nHello 🙂"},
                                           {"user", "Bye"}};
    jv list, role_key, content_key;
    if (!hl_jv_list(env, &list) || !hl_jv_str(env, "role", 4, &role_key) || !hl_jv_str(env, "content", 7, &content_key))
        return false;
    for (size_t i = 0; i < sizeof turns / sizeof turns[0]; i++) {
        jv msg, role, content;
        if (!hl_jv_dict(env, &msg) || !hl_jv_str(env, turns[i][0], strlen(turns[i][0]), &role) ||
            !hl_jv_str(env, turns[i][1], strlen(turns[i][1]), &content) || !hl_jv_dict_set(env, msg, role_key, role) ||
            !hl_jv_dict_set(env, msg, content_key, content) || !hl_jv_list_push(env, list, msg))
            return false;
    }
    return hl_jinja_env_set(env, "messages", list) == HEARTH_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hl_jinja_tmpl *t;
    if (hl_jinja_parse((const char *)data, size, &t) != HEARTH_OK) return 0;
    hl_jinja_limits lim = hl_jinja_default_limits();
    lim.max_output = 1 << 20;
    lim.max_memory = 32 << 20;
    lim.max_iterations = 20000;
    hl_jinja_env *env;
    if (hl_jinja_env_init(&lim, 1741964966, &env) == HEARTH_OK) {
        jv bos;
        if (set_messages(env) && hl_jv_str(env, "<s>", 3, &bos) &&
            hl_jinja_env_set(env, "bos_token", bos) == HEARTH_OK &&
            hl_jinja_env_set(env, "add_generation_prompt", hl_jv_bool(true)) == HEARTH_OK) {
            char *out;
            size_t len;
            if (hl_jinja_render(env, t, &out, &len) == HEARTH_OK) {
                if (strlen(out) > len) abort(); /* the length covers the text */
                free(out);
            }
        }
        hl_jinja_env_free(env);
    }
    hl_jinja_tmpl_free(t);
    return 0;
}
