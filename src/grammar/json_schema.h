/* JSON Schema to GBNF: the grammar of the JSON texts a schema accepts, for
 * structured outputs (OpenAI's response_format json_schema, tools'
 * parameters). The supported subset is listed in json_schema.c; any other
 * keyword is an error that names it, never silently dropped. Whitespace
 * between tokens is bounded so a model cannot loop on spaces. */
#ifndef HEARTH_GRAMMAR_JSON_SCHEMA_H
#define HEARTH_GRAMMAR_JSON_SCHEMA_H

#include <stddef.h>

#include "hearth.h"

/* Converts the schema (JSON text, len bytes, need not be NUL-terminated) to
 * GBNF whose start rule is `root`. *out is malloc'd, NUL-terminated; free()
 * it. Errors: INVALID_ARG ("json_schema: not valid JSON at byte N", "json_schema
 * at /properties/x: unsupported keyword 'not'", "... $ref '#/$defs/y' not
 * found", a type that is not a JSON type), OUT_OF_MEMORY. */
hearth_status hl_json_schema_to_gbnf(const char *schema, size_t len, char **out);

/* The same, with the rules' names prefixed by `prefix` and the start rule
 * named `root_name` instead of root, and no `root` rule: for embedding a
 * schema in a larger grammar (a tool call's arguments). The rules of the
 * shared JSON primitives (value, string, number, space ...) are named with
 * the prefix too, so two schemas' outputs can be concatenated. The prefix
 * is used with characters outside [a-zA-Z0-9-] turned into '-' (include a
 * separator: "get-weather-"); root_name must be [a-zA-Z0-9-]+ (else
 * INVALID_ARG) and is used as given, without the prefix. */
hearth_status hl_json_schema_to_gbnf_rules(const char *schema, size_t len, const char *prefix, const char *root_name,
                                           char **out);

#endif
