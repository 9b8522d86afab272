/* elm_grammar.h: grammars that constrain generation (part of libelm).
 *
 * GBNF in llama.cpp's syntax: `name ::= alternatives` rules (the start rule
 * is `root`), `|` alternation, `( )` groups, `* + ?` and `{m}` `{m,}`
 * `{m,n}` repetition, "literals" and [character classes] (ranges, `^`
 * negation) with \n \r \t \\ \" \[ \] \- \xHH \uHHHH \UHHHHHHHH escapes,
 * `.` for any character, `#` comments.  Matching is over the UTF-8 bytes of
 * the reply, so a token may end inside a character.
 *
 * Refused, with the line and column: malformed text, an undefined rule, a
 * repetition count over 1000, left recursion (a rule that can reach itself
 * without consuming a character: the parse could never move on), a root
 * that matches nothing, and more than 2^20 elements once repetition is
 * expanded.  While matching, more than 4096 live parse stacks at one point
 * or 2^22 stack nodes in a reply ends the reply with an error (the grammar
 * is too ambiguous), never a hang.
 *
 * A grammar is immutable once parsed: any thread may use it. */
#ifndef ELMCHAT_ENGINE_ELM_GRAMMAR_H
#define ELMCHAT_ENGINE_ELM_GRAMMAR_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/elm_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct elm_grammar elm_grammar;

/* Parse len bytes of GBNF.  err: "line L, column C: problem". */
elm_status elm_grammar_parse(const char *text, size_t len, elm_grammar **out, char *err,
                             size_t err_size);
/* Another reference; elm_grammar_free drops one, the last frees it. */
elm_grammar *elm_grammar_share(elm_grammar *g);
void elm_grammar_free(elm_grammar *g);
/* The GBNF g was parsed from (NUL-terminated; valid while g lives): what a
 * remote engine (llama-server's "grammar") is sent, so both engines apply
 * the same grammar. */
const char *elm_grammar_text(const elm_grammar *g);

/* How len bytes of text stand against the grammar. */
enum elm_grammar_fit {
    ELM_GRAMMAR_NO = 0,      /* no match starts with this text */
    ELM_GRAMMAR_PREFIX = 1,  /* the start of a match, not a whole one */
    ELM_GRAMMAR_MATCH = 2,   /* a whole match (more may follow) */
    ELM_GRAMMAR_LIMIT = -1,  /* a matching limit was reached */
};
enum elm_grammar_fit elm_grammar_fit(const elm_grammar *g, const char *text, size_t len);

/* GBNF for the JSON a JSON Schema allows (len bytes of schema; NULL or
 * len 0: any JSON value, what --json asks for).  Supported: type (one or a
 * list), properties, required, additionalProperties (false, true, or a
 * schema for an object without properties), enum, const, items, minItems,
 * maxItems, minLength, maxLength, anyOf, oneOf (as anyOf), propertyNames
 * (a string schema, for a map), $ref to #/$defs/
 * or #/definitions/, format date, time, date-time, uuid; annotations
 * (title, description, default, examples, ...) are ignored.  Any other
 * keyword is refused: err "/json/pointer: unsupported keyword 'pattern'".
 * Properties come in the schema's order, optional ones may be left out,
 * none outside `properties` is written.  *gbnf: malloc'd text. */
elm_status elm_grammar_json_schema(const char *schema, size_t len, char **gbnf, char *err,
                                   size_t err_size);

#ifdef __cplusplus
}
#endif
#endif
