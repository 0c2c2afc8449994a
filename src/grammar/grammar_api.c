/* The public face of the GBNF engine (include/hearth.h, "grammars"):
 * checking a grammar as a sampler would compile it. */
#include <string.h>

#include "base/status.h"
#include "grammar/grammar.h"

hearth_status hearth_grammar_check(const char *gbnf) {
    if (!gbnf) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_grammar_check: gbnf is NULL");
    hl_grammar *g;
    HL_TRY(hl_grammar_parse(gbnf, strlen(gbnf), &g));
    hl_grammar_free(g);
    return HEARTH_OK;
}
