/* chat_format.c: /format json | schema FILE | grammar FILE | off: the
 * structured output of a conversation's replies (issue 47).  The setting is
 * the session's (saved with it, "format: json"); its grammar is built from
 * it for each reply, so an edited schema file counts from the next one. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/elm_grammar.h"
#include "src/chat/chat_controller.h"
#include "src/chat/chat_internal.h"
#include "src/store/store.h"
#include "src/base/xalloc.h"

#define FORMAT_MAX_FILE (4 * 1024 * 1024)

/* The grammar of a setting ("json", "schema FILE", "grammar FILE"); NULL
 * with err filled. */
static elm_grammar *grammar_of(const char *format, char *err, size_t err_size)
{
    char *text = NULL, *gbnf = NULL;
    size_t len = 0;
    elm_grammar *g = NULL;
    bool schema = strncmp(format, "schema ", 7) == 0, gram = strncmp(format, "grammar ", 8) == 0;
    const char *file = schema ? format + 7 : gram ? format + 8 : NULL;
    if (strcmp(format, "json") != 0 && !file) {
        snprintf(err, err_size, "unknown format '%s' (json, schema FILE, grammar FILE, off)",
                 format);
        return NULL;
    }
    if (file && store_read_file(file, FORMAT_MAX_FILE, &text, &len, err, err_size) < 0)
        return NULL;
    char msg[1024];
    if (!gram && elm_grammar_json_schema(text, len, &gbnf, msg, sizeof msg) != ELM_OK) {
        snprintf(err, err_size, "%s: %s", file ? file : "json", msg);
    } else {
        const char *src = gram ? text : gbnf;
        if (elm_grammar_parse(src, strlen(src), &g, msg, sizeof msg) != ELM_OK)
            snprintf(err, err_size, "%s: %s", file ? file : "json", msg);
    }
    free(text);
    free(gbnf);
    return g;
}

elm_grammar *chat_format_grammar(struct chat *c, const struct conv *v)
{
    if (!v->s->format)
        return NULL;
    char err[1200];
    elm_grammar *g = grammar_of(v->s->format, err, sizeof err);
    if (!g)
        chat_notice(c, true, "/format: %s (the reply is not constrained)", err);
    return g;
}

void chat_format_command(struct chat *c, struct conv *v, const char *arg)
{
    while (arg && (*arg == ' ' || *arg == '\t'))
        arg++;
    if (!arg || !*arg) {
        chat_notice(c, false, "format: %s", v->s->format ? v->s->format : "off (free text)");
        return;
    }
    char want[4200];
    snprintf(want, sizeof want, "%s", arg);
    for (size_t n = strlen(want); n > 0 && (want[n - 1] == ' ' || want[n - 1] == '\t');)
        want[--n] = '\0';
    if (strcmp(want, "off") == 0) {
        free(v->s->format);
        v->s->format = NULL;
        v->dirty = true;
        chat_notice(c, false, "format off: replies are free text");
        chat_changed(c);
        return;
    }
    /* a file by its full path: the session may be resumed elsewhere */
    char *sp = strchr(want, ' ');
    if (sp && sp[1] != '/') {
        char *full = realpath(sp + 1, NULL);
        if (full) {
            size_t k = (size_t)(sp + 1 - want);
            snprintf(want + k, sizeof want - k, "%s", full);
            free(full);
        }
    }
    char err[1200];
    elm_grammar *g = grammar_of(want, err, sizeof err);
    if (!g) {
        chat_notice(c, true, "/format: %s", err);
        return;
    }
    elm_grammar_free(g);
    free(v->s->format);
    v->s->format = x_strdup(want);
    v->dirty = true;
    chat_notice(c, false, "format %s: the replies follow it (/format off ends it)", want);
    chat_changed(c);
}

bool chat_format_cut_notice(struct chat *c, const struct conv *v, const char *text)
{
    if (!v->s->format)
        return false;
    char err[1200];
    elm_grammar *g = grammar_of(v->s->format, err, sizeof err);
    if (!g)
        return false; /* said when the reply was asked for */
    bool whole = elm_grammar_fit(g, text, strlen(text)) == ELM_GRAMMAR_MATCH;
    elm_grammar_free(g);
    if (whole)
        return false;
    bool gram = strncmp(v->s->format, "grammar ", 8) == 0;
    chat_notice(c, true,
                "the reply was cut before %s was complete (max tokens %d): it is not valid; "
                "/set max-tokens N gives it more room",
                gram ? "the text the grammar describes" : "the JSON value", chat_reply_reserve(c));
    return true;
}

const char *chat_format_label(const struct conv *v)
{
    return v && v->s->format ? v->s->format : NULL;
}
