/* grammar_option.c: --json, --json-schema, --grammar to an elm_grammar. */
#include "config.h"

#include "cli/grammar_option.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/diag.h"
#include "src/store/store.h"

#define GRAMMAR_MAX_FILE (4 * 1024 * 1024)

const char *grammar_option_what(const struct grammar_option *o)
{
    return o->grammar ? "the text the grammar describes" : "the JSON value";
}

void grammar_option_say_cut(const char *what, bool at_limit, int max_tokens)
{
    if (at_limit)
        cli_error("the reply was cut before %s was complete (max tokens %d: raise -n): the "
                  "output is not valid",
                  what, max_tokens);
    else
        cli_error("the reply ended before %s was complete: the output is not valid", what);
}

bool grammar_option_load(const struct grammar_option *o, const char *cmd, elm_grammar **out,
                         bool *usage)
{
    *out = NULL;
    *usage = false;
    int n = (o->json != 0) + (o->json_schema != NULL) + (o->grammar != NULL);
    if (n == 0)
        return true;
    if (n > 1) {
        *usage = true;
        cli_usage_error(cmd, "--json, --json-schema and --grammar: give one");
        return false;
    }
    char err[1024];
    char *text = NULL, *gbnf = NULL;
    size_t len = 0;
    const char *name = o->grammar ? o->grammar : o->json_schema;
    if (o->grammar || (o->json_schema && o->json_schema[strspn(o->json_schema, " \t\r\n")] != '{')) {
        if (store_read_file(name, GRAMMAR_MAX_FILE, &text, &len, err, sizeof err) < 0) {
            cli_error("%s", err);
            return false;
        }
    } else if (o->json_schema) {
        name = "--json-schema";
        text = strdup(o->json_schema);
        len = strlen(o->json_schema);
    }
    bool good = true;
    if (!o->grammar) {
        if (elm_grammar_json_schema(text, len, &gbnf, err, sizeof err) != ELM_OK) {
            cli_error("%s: %s", name, err);
            good = false;
        }
    }
    if (good) {
        const char *g = o->grammar ? text : gbnf;
        if (elm_grammar_parse(g, strlen(g), out, err, sizeof err) != ELM_OK) {
            /* a converted schema's grammar is ours: its fault is a bug */
            cli_error("%s: %s%s", name, o->grammar ? "" : "the grammar made of it: ", err);
            good = false;
        }
    }
    free(text);
    free(gbnf);
    return good;
}
