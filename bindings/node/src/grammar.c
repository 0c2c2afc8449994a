/* jsonSchemaToGrammar(schema): the GBNF grammar of the JSON texts a JSON
 * Schema accepts (hearth_json_schema_to_grammar), the grammar that
 * jsonSchema and responseFormat constrain a request's text with. */
#include <stdlib.h>

#include "addon.h"

/* jsonSchemaToGrammar(schema: string, JSON text) -> string (GBNF, start
 * rule root). Throws ERR_INVALID_ARG with the library's message for text
 * that is not JSON or a keyword outside its subset. */
napi_value hn_json_schema_to_grammar(napi_env env, napi_callback_info info) {
    napi_value argv[1], out = NULL;
    if (!hn_args(env, info, 1, argv)) return NULL;
    char *schema = hn_string(env, argv[0], "schema", NULL), *gbnf = NULL;
    if (!schema) return NULL;
    const hearth_status st = hearth_json_schema_to_grammar(schema, &gbnf);
    free(schema);
    if (st != HEARTH_OK) hn_throw_status(env, st);
    else out = hn_string_new(env, gbnf, NAPI_AUTO_LENGTH);
    hearth_grammar_free_text(gbnf);
    return out;
}
