/* grammar_option.h: the structured-output options of run and bench:
 * --json, --json-schema FILE|JSON, --grammar FILE. */
#ifndef ELMCHAT_CLI_GRAMMAR_OPTION_H
#define ELMCHAT_CLI_GRAMMAR_OPTION_H

#include <stdbool.h>

#include "engine/elm_grammar.h"

struct grammar_option {
    bool json;               /* --json: any JSON value */
    const char *json_schema; /* --json-schema: a file, or the schema itself ({...}) */
    const char *grammar;     /* --grammar: a GBNF file */
};

#define GRAMMAR_OPTION_HELP                                                              \
    "      --json               the reply is one JSON value\n"                          \
    "      --json-schema FILE|JSON\n"                                                   \
    "                           the reply is JSON that the schema (a file, or the\n"   \
    "                           schema's text) allows\n"                               \
    "      --grammar FILE       the reply matches FILE's GBNF grammar (llama.cpp's\n"  \
    "                           syntax)\n"

/* The grammar asked for (*out NULL: none).  false: the message was printed
 * (a usage error when two were given: *usage set). */
bool grammar_option_load(const struct grammar_option *o, const char *cmd, elm_grammar **out,
                         bool *usage);
/* What was asked, for messages: "the JSON value", "the text the grammar
 * describes". */
const char *grammar_option_what(const struct grammar_option *o);
/* A reply that ended before what was complete: says why on stderr (at_limit:
 * max_tokens cut it) and that the output is not valid. */
void grammar_option_say_cut(const char *what, bool at_limit, int max_tokens);

#endif
