/* test-slash-commands.c: slash command parsing, validation and completion
 * (src/chat/slash_commands.c). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/tap.h"
#include "src/chat/slash_commands.h"

static enum cmd_parse_result parse(const char *line, struct cmd *c, size_t *start, char *err)
{
    return cmd_parse(line, c, start, err, 256);
}

int main(void)
{
    plan_lazy();
    struct cmd c;
    size_t start;
    char err[256];

    is_int(parse("hello", &c, &start, err), CMD_NOT_A_COMMAND, "plain text is sent");
    is_int(parse("//etc/passwd", &c, &start, err), CMD_NOT_A_COMMAND, "'//' escapes a slash");
    is_int((long long)start, 1, "... and the text starts after the first slash");
    is_int(parse("/help", &c, &start, err), CMD_OK, "/help");
    is_int(c.id, CMD_HELP, "/help id");
    is_int(parse("  /quit  ", &c, &start, err), CMD_OK, "leading/trailing blanks allowed");
    is_int(c.id, CMD_QUIT, "/quit id");
    is_int(parse("/q", &c, &start, err), CMD_OK, "unique prefix /q");
    is_int(c.id, CMD_QUIT, "/q is /quit");
    is_int(parse("/s", &c, &start, err), CMD_ERROR, "ambiguous prefix /s");
    ok(strstr(err, "ambiguous") != NULL, "ambiguous is said: %s", err);
    is_int(parse("/frobnicate now", &c, &start, err), CMD_ERROR, "unknown command is an error");
    ok(strstr(err, "unknown command '/frobnicate'") && strstr(err, "/help"),
       "one-line hint names it and /help: %s", err);
    ok(strchr(err, '\n') == NULL, "the hint is one line");
    is_int(parse("/", &c, &start, err), CMD_ERROR, "a lone slash is an error");

    is_int(parse("/new", &c, &start, err), CMD_OK, "/new without a name");
    ok(c.id == CMD_NEW && c.arg == NULL, "no name");
    is_int(parse("/new ideas 2", &c, &start, err), CMD_OK, "/new NAME");
    is_str(c.arg, "ideas 2", "name with a space kept");
    cmd_fini(&c);
    is_int(parse("/new ../etc", &c, &start, err), CMD_ERROR, "path-like session name rejected");
    is_int(parse("/switch", &c, &start, err), CMD_ERROR, "/switch needs a name");
    is_str(err, "usage: /switch NAME", "usage hint");
    is_int(parse("/undo now", &c, &start, err), CMD_ERROR, "/undo takes no argument");
    is_int(parse("/pin", &c, &start, err), CMD_OK, "/pin without a number");
    ok(c.id == CMD_PIN && c.n == 0, "/pin: the last exchange");
    is_int(parse("/pin 3", &c, &start, err), CMD_OK, "/pin N");
    ok(c.id == CMD_PIN && c.n == 3, "/pin 3");
    cmd_fini(&c);
    is_int(parse("/unpin 2", &c, &start, err), CMD_OK, "/unpin N");
    ok(c.id == CMD_UNPIN && c.n == 2, "/unpin 2");
    cmd_fini(&c);
    is_int(parse("/fork", &c, &start, err), CMD_OK, "/fork without a number");
    ok(c.id == CMD_FORK && c.n == 0, "/fork: after the last exchange");
    is_int(parse("/fork 2", &c, &start, err), CMD_OK, "/fork N");
    ok(c.id == CMD_FORK && c.n == 2, "/fork 2");
    cmd_fini(&c);
    is_int(parse("/branch", &c, &start, err), CMD_ERROR, "/branch needs N");
    is_str(err, "usage: /branch N [reply] [K]", "its usage");
    is_int(parse("/branch 3 reply 2", &c, &start, err), CMD_OK, "/branch N reply K");
    ok(c.id == CMD_BRANCH && c.n == 3 && c.reply && c.k == 2, "exchange 3, its reply, version 2");
    cmd_fini(&c);
    is_int(parse("/branch 3 2", &c, &start, err), CMD_OK, "/branch N K");
    ok(c.n == 3 && !c.reply && c.k == 2, "exchange 3, version 2");
    cmd_fini(&c);
    is_int(parse("/branch 3", &c, &start, err), CMD_OK, "/branch N");
    ok(c.n == 3 && !c.reply && c.k == 0, "no K: list the versions");
    cmd_fini(&c);
    is_int(parse("/branch x", &c, &start, err), CMD_ERROR, "/branch x: not a number");
    is_str(err, "/branch N: N is an exchange number (1 = the first)", "... says so");
    is_int(parse("/branch 3 reply 0", &c, &start, err), CMD_ERROR, "/branch K from 1");
    ok(strstr(err, "/branch N [reply] [K]") != NULL, "... with the usage: %s", err);
    cmd_fini(&c);
    is_int(parse("/tree", &c, &start, err), CMD_OK, "/tree");
    is_int(c.id, CMD_TREE, "/tree id");
    is_int(parse("/tree 2", &c, &start, err), CMD_ERROR, "/tree takes no argument");
    is_int(parse("/read", &c, &start, err), CMD_ERROR, "/read needs a file");
    is_int(parse("/read notes.txt 40", &c, &start, err), CMD_OK, "/read FILE LINES");
    ok(c.id == CMD_READ && c.arg && strcmp(c.arg, "notes.txt 40") == 0, "/read's argument");
    cmd_fini(&c);
    is_int(parse("/fo", &c, &start, err), CMD_ERROR, "/fo is ambiguous (/fork, /format)");
    is_int(parse("/fork", &c, &start, err), CMD_OK, "/fork");
    is_int(c.id, CMD_FORK, "/fork is /fork");
    cmd_fini(&c);
    is_int(parse("/form json", &c, &start, err), CMD_OK, "unique prefix /form");
    ok(c.id == CMD_FORMAT && c.arg && strcmp(c.arg, "json") == 0, "/form json is /format json");
    cmd_fini(&c);
    is_int(parse("/format", &c, &start, err), CMD_OK, "/format alone: what is set");
    is_int(parse("/edit", &c, &start, err), CMD_OK, "/edit without a number");
    ok(c.id == CMD_EDIT && c.n == 0, "/edit: the last message");
    is_int(parse("/edit 2", &c, &start, err), CMD_OK, "/edit N");
    ok(c.id == CMD_EDIT && c.n == 2, "/edit 2");
    cmd_fini(&c);
    is_int(parse("/pin 0", &c, &start, err), CMD_ERROR, "/pin 0: exchanges count from 1");
    is_str(err, "/pin N: N is an exchange number (1 = the first)", "... says so");
    is_int(parse("/remove two", &c, &start, err), CMD_ERROR, "/remove two: not a number");
    is_str(err, "/remove N: N is an exchange number (1 = the first)", "... says so");
    is_int(parse("/save s1 --force", &c, &start, err), CMD_OK, "/save NAME --force");
    ok(c.force && c.arg && strcmp(c.arg, "s1") == 0, "force, the name alone");
    cmd_fini(&c);
    is_int(parse("/save --force", &c, &start, err), CMD_OK, "/save --force");
    ok(c.force && !c.arg, "force, no name");
    cmd_fini(&c);
    is_int(parse("/save s1", &c, &start, err), CMD_OK, "/save NAME");
    ok(!c.force && c.arg && strcmp(c.arg, "s1") == 0, "no force");
    cmd_fini(&c);
    is_int(parse("/e", &c, &start, err), CMD_ERROR, "/e is ambiguous (/edit, /export)");
    is_int(parse("/u", &c, &start, err), CMD_ERROR, "/u is ambiguous (/undo, /unpin)");
    is_int(parse("/p", &c, &start, err), CMD_OK, "/p is /pin");
    is_int(parse("/system You are terse.  ", &c, &start, err), CMD_OK, "/system TEXT");
    is_str(c.arg, "You are terse.", "system text, trailing blanks trimmed");
    cmd_fini(&c);
    is_int(parse("/model /tmp/x.gguf", &c, &start, err), CMD_OK, "/model PATH");
    is_str(c.arg, "/tmp/x.gguf", "model path");
    cmd_fini(&c);

    is_int(parse("/set temperature 0.7", &c, &start, err), CMD_OK, "/set temperature");
    ok(c.param == PARAM_TEMPERATURE && c.value > 0.69 && c.value < 0.71, "value 0.7");
    cmd_fini(&c);
    is_int(parse("/set temp 0", &c, &start, err), CMD_OK, "temp alias");
    cmd_fini(&c);
    is_int(parse("/set top_k 40", &c, &start, err), CMD_OK, "top_k spelling");
    ok(c.param == PARAM_TOP_K && c.ivalue == 40, "top-k 40");
    cmd_fini(&c);
    is_int(parse("/set seed 18446744", &c, &start, err), CMD_OK, "seed");
    ok(c.ivalue == 18446744, "seed value");
    cmd_fini(&c);
    is_int(parse("/set max-tokens 64", &c, &start, err), CMD_OK, "max-tokens");
    cmd_fini(&c);
    is_int(parse("/set repeat-last-n 64", &c, &start, err), CMD_OK, "repeat-last-n");
    ok(c.param == PARAM_REPEAT_LAST_N && c.ivalue == 64, "repeat-last-n value");
    cmd_fini(&c);
    is_int(parse("/set repeat_last_n -1", &c, &start, err), CMD_OK, "repeat_last_n -1: the whole sequence");
    ok(c.ivalue == -1, "... -1 kept");
    cmd_fini(&c);
    is_int(parse("/set repeat-last-n -2", &c, &start, err), CMD_ERROR, "repeat-last-n -2 refused");
    ok(strstr(err, "-1 the whole sequence") != NULL, "... with the range: %s", err);
    is_int(parse("/set markdown maybe", &c, &start, err), CMD_ERROR, "markdown takes on or off");
    is_int(parse("/set top-p 1.5", &c, &start, err), CMD_ERROR, "top-p out of range");
    ok(strstr(err, "top-p") && strstr(err, "0 to 1"), "range hint: %s", err);
    is_int(parse("/set min-p x", &c, &start, err), CMD_ERROR, "non-number");
    is_int(parse("/set warmth 1", &c, &start, err), CMD_ERROR, "unknown parameter");
    ok(strstr(err, "repeat-penalty") != NULL, "lists the parameters");
    is_int(parse("/set temperature", &c, &start, err), CMD_ERROR, "missing value");
    is_int(parse("/set", &c, &start, err), CMD_OK, "/set alone: the values in effect");
    ok(c.id == CMD_SET && c.param == 0 && c.arg == NULL, "... no parameter, no argument");
    cmd_fini(&c);
    is_int(parse("/set  ", &c, &start, err), CMD_OK, "/set and blanks: the same");
    ok(c.param == 0 && c.arg == NULL, "... no parameter");
    cmd_fini(&c);
    is_int(parse("/set repeat-penalty 1.1 extra", &c, &start, err), CMD_ERROR, "extra word");

    /* completion */
    size_t ws;
    enum cmd_arg_kind kind;
    is_int(cmd_complete_context("/he", 3, &ws, &kind), COMPLETE_COMMAND, "completes a command name");
    is_int((long long)ws, 0, "word starts at the slash");
    is_int(cmd_complete_context("/switch ma", 10, &ws, &kind), COMPLETE_ARG, "argument of /switch");
    ok(kind == ARG_SESSION && ws == 8, "a session name from column 8");
    is_int(cmd_complete_context("/set te", 7, &ws, &kind), COMPLETE_ARG, "/set PARAM");
    ok(kind == ARG_PARAM, "param names");
    is_int(cmd_complete_context("/set temperature 0", 18, &ws, &kind), COMPLETE_NOTHING, "no completion of values");
    is_int(cmd_complete_context("hello /he", 9, &ws, &kind), COMPLETE_NOTHING, "not a command line");
    is_int(cmd_complete_context("/template ", 10, &ws, &kind), COMPLETE_ARG, "template after a space");
    ok(kind == ARG_TEMPLATE && ws == 10, "template names");

    size_t st = 0;
    const char *a = cmd_complete_command("/s", &st);
    const char *b = cmd_complete_command("/s", &st);
    const char *d = cmd_complete_command("/s", &st);
    const char *e = cmd_complete_command("/s", &st);
    const char *f = cmd_complete_command("/s", &st);
    const char *g = cmd_complete_command("/s", &st);
    ok(a && b && d && e && f && !g, "/s completes to five commands");
    ok(a && strcmp(a, "/sessions") == 0, "first is /sessions");
    st = 0;
    const char *p1 = cmd_complete_from(cmd_param_names, 7, "m", &st);
    const char *p2 = cmd_complete_from(cmd_param_names, 7, "m", &st);
    ok(p1 && p2 && !strcmp(p1, "min-p") && !strcmp(p2, "max-tokens"), "params m* -> min-p, max-tokens");
    return done_testing();
}
