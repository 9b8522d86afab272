/* slash_commands.c: slash command parsing and completion (see slash_commands.h). */
#include "config.h"

#include "src/chat/slash_commands.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/options.h"
#include "src/base/xalloc.h"

const struct cmd_info cmd_table[] = {
    {"help", CMD_HELP, ARG_NONE, -1, "/help", "list the commands and keys"},
    {"new", CMD_NEW, ARG_TEXT, 0, "/new [NAME]", "start a new conversation"},
    {"sessions", CMD_SESSIONS, ARG_NONE, -1, "/sessions", "show or hide the session list"},
    {"switch", CMD_SWITCH, ARG_SESSION, 1, "/switch NAME", "switch to an open or saved session"},
    {"model", CMD_MODEL, ARG_MODEL, 1, "/model NAME|PATH", "load another model"},
    {"template", CMD_TEMPLATE, ARG_TEMPLATE, 1, "/template NAME", "use another chat template"},
    {"system", CMD_SYSTEM, ARG_TEXT, 1, "/system TEXT", "set the system prompt"},
    {"role", CMD_ROLE, ARG_ROLE, 0, "/role [NAME]",
     "use a role preset as the system prompt (no NAME: list them)"},
    {"set", CMD_SET, ARG_PARAM, 0, "/set [PARAM VALUE]",
     "sampling: temperature top-k top-p min-p repeat-penalty repeat-last-n seed max-tokens; "
     "markdown on|off; lookup on|off; draft NAME|off; alone: the values and where they come "
     "from"},
    {"format", CMD_FORMAT, ARG_TEXT, 0, "/format [json|schema F|grammar F|off]",
     "structured replies: JSON, JSON the schema F allows, text the GBNF grammar F matches"},
    {"save", CMD_SAVE, ARG_SESSION, 0, "/save [NAME] [--force]",
     "save the conversation (as NAME; --force replaces a saved NAME)"},
    {"load", CMD_LOAD, ARG_SESSION, 1, "/load NAME", "load a saved conversation"},
    {"rename", CMD_RENAME, ARG_TEXT, 1, "/rename NEW", "rename this conversation (its file too)"},
    {"delete", CMD_DELETE, ARG_SESSION, 1, "/delete NAME",
     "delete a saved conversation (not the open one): its file and cache snapshot"},
    {"export", CMD_EXPORT, ARG_FILE, 1, "/export FILE",
     "write the conversation as Markdown, or FILE.json: the whole tree as JSON"},
    {"read", CMD_READ, ARG_FILE, 1, "/read FILE",
     "attach a text file to your next message (/read off drops it)"},
    {"find", CMD_FIND, ARG_TEXT, 0, "/find [TEXT]",
     "search the whole conversation (Ctrl-F next, Ctrl-B previous, Esc leaves)"},
    {"copy", CMD_COPY, ARG_TEXT, 0, "/copy [N|reply|#M] [FILE]",
     "copy code block N (default: the last) of the last reply, the reply, or your message #M"},
    {"retry", CMD_RETRY, ARG_NONE, -1, "/retry",
     "regenerate the last reply (the old one stays as a branch)"},
    {"undo", CMD_UNDO, ARG_NONE, -1, "/undo",
     "take the last exchange back (it stays as a branch); after /clear or /remove: undo them"},
    {"remove", CMD_REMOVE, ARG_TEXT, 0, "/remove [N]",
     "remove exchange N (default: the last); it stays as a branch, /undo puts it back"},
    {"edit", CMD_EDIT, ARG_TEXT, 0, "/edit [N]",
     "edit your message N (default: the last): the old version stays as a branch"},
    {"fork", CMD_FORK, ARG_TEXT, 0, "/fork [N]",
     "start a new branch after exchange N (default: the last); what followed stays"},
    {"branch", CMD_BRANCH, ARG_TEXT, 1, "/branch N [reply] [K]",
     "show version K of your message N (or of its reply); no K: list them"},
    {"tree", CMD_TREE, ARG_NONE, -1, "/tree",
     "the conversation's branches: Up/Down choose, Enter shows that path"},
    {"pin", CMD_PIN, ARG_TEXT, 0, "/pin [N]",
     "keep exchange N (default: the last) in context when old turns are dropped"},
    {"unpin", CMD_UNPIN, ARG_TEXT, 0, "/unpin [N]", "let exchange N (default: the last) be dropped"},
    {"clear", CMD_CLEAR, ARG_NONE, -1, "/clear",
     "start the conversation over (the old one stays as a branch; /undo brings it back)"},
    {"info", CMD_INFO, ARG_NONE, -1, "/info", "model, template, context and speed"},
    {"quit", CMD_QUIT, ARG_NONE, -1, "/quit", "save and leave"},
};
const size_t cmd_table_len = sizeof cmd_table / sizeof cmd_table[0];

const char *const cmd_param_names[] = {
    "temperature", "top-k", "top-p", "min-p", "repeat-penalty", "seed", "max-tokens", "markdown",
    "repeat-last-n", "lookup", "draft", NULL,
};

void cmd_fini(struct cmd *c)
{
    free(c->arg);
    c->arg = NULL;
}

static const char *skip_ws(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

/* Exact name, else the unique command that starts with it. */
static const struct cmd_info *find_command(const char *name, size_t len, bool *ambiguous)
{
    const struct cmd_info *hit = NULL;
    int n_hits = 0;
    *ambiguous = false;
    for (size_t i = 0; i < cmd_table_len; i++) {
        if (strncmp(cmd_table[i].name, name, len) != 0)
            continue;
        if (strlen(cmd_table[i].name) == len)
            return &cmd_table[i];
        hit = &cmd_table[i];
        n_hits++;
    }
    if (n_hits > 1) {
        *ambiguous = true;
        return NULL;
    }
    return hit;
}

static bool param_by_name(const char *name, enum cmd_param *param)
{
    char norm[32];
    size_t n = strlen(name);
    if (n == 0 || n >= sizeof norm)
        return false;
    for (size_t i = 0; i <= n; i++)
        norm[i] = name[i] == '_' ? '-' : (char)tolower((unsigned char)name[i]);
    if (strcmp(norm, "temp") == 0) {
        *param = PARAM_TEMPERATURE;
        return true;
    }
    for (int i = 0; cmd_param_names[i]; i++) {
        if (strcmp(norm, cmd_param_names[i]) == 0) {
            *param = (enum cmd_param)(i + 1);
            return true;
        }
    }
    return false;
}

bool cmd_parse_param(const char *name, const char *value, struct cmd *out, char *err,
                     size_t err_size)
{
    enum cmd_param p;
    if (!param_by_name(name, &p)) {
        snprintf(err, err_size,
                 "unknown parameter '%s' (temperature, top-k, top-p, min-p, repeat-penalty, "
                 "repeat-last-n, seed, max-tokens, markdown, lookup, draft)",
                 name);
        return false;
    }
    long l = 0;
    double d = 0;
    bool good = false;
    const char *range = "";
    switch (p) {
    case PARAM_TEMPERATURE:
        good = cli_parse_float(value, 0, 100, &d), range = "a number from 0 to 100";
        break;
    case PARAM_TOP_P:
        good = cli_parse_float(value, 0, 1, &d), range = "a number from 0 to 1";
        break;
    case PARAM_MIN_P:
        good = cli_parse_float(value, 0, 1, &d), range = "a number from 0 to 1";
        break;
    case PARAM_REPEAT_PENALTY:
        good = cli_parse_float(value, 0.01, 100, &d), range = "a number from 0.01 to 100";
        break;
    case PARAM_TOP_K:
        good = cli_parse_int(value, 0, INT_MAX, &l), d = (double)l, range = "an integer >= 0";
        break;
    case PARAM_SEED:
        good = cli_parse_int(value, 0, LONG_MAX, &l), d = (double)l, range = "an integer >= 0";
        break;
    case PARAM_MAX_TOKENS:
        good = cli_parse_int(value, 1, 1 << 20, &l), d = (double)l,
        range = "an integer from 1 to 1048576";
        break;
    case PARAM_REPEAT_LAST_N:
        good = cli_parse_int(value, -1, 1 << 20, &l), d = (double)l,
        range = "an integer: the last N tokens, -1 the whole sequence, 0 off";
        break;
    case PARAM_DRAFT:
        good = *value != '\0', range = "a model name or off";
        break;
    case PARAM_MARKDOWN:
    case PARAM_LOOKUP:
        good = strcmp(value, "on") == 0 || strcmp(value, "off") == 0;
        l = strcmp(value, "on") == 0, d = (double)l, range = "on or off";
        break;
    }
    if (!good) {
        snprintf(err, err_size, "%s: '%s' is not %s", cmd_param_names[p - 1], value, range);
        return false;
    }
    out->param = p;
    out->value = d;
    out->ivalue =
        (p == PARAM_TOP_K || p == PARAM_SEED || p == PARAM_MAX_TOKENS || p == PARAM_MARKDOWN ||
         p == PARAM_REPEAT_LAST_N || p == PARAM_LOOKUP)
            ? l
            : 0;
    return true;
}

enum cmd_parse_result cmd_parse(const char *line, struct cmd *out, size_t *text_start, char *err,
                                size_t err_size)
{
    memset(out, 0, sizeof *out);
    *text_start = 0;
    const char *p = skip_ws(line);
    if (*p != '/')
        return CMD_NOT_A_COMMAND;
    if (p[1] == '/') {
        *text_start = (size_t)(p - line) + 1;
        return CMD_NOT_A_COMMAND;
    }
    const char *name = p + 1;
    size_t len = strcspn(name, " \t\n");
    if (len == 0) {
        snprintf(err, err_size, "empty command: type /help for the list ('//' sends a '/')");
        return CMD_ERROR;
    }
    bool ambiguous;
    const struct cmd_info *ci = find_command(name, len, &ambiguous);
    if (!ci) {
        snprintf(err, err_size, "%s command '/%.*s': type /help for the list ('//' sends a '/')",
                 ambiguous ? "ambiguous" : "unknown", (int)(len > 40 ? 40 : len), name);
        return CMD_ERROR;
    }
    const char *arg = skip_ws(name + len);
    if (*arg == '\n')
        arg++;
    /* Trim trailing blanks (not for free text, where they are harmless). */
    size_t alen = strlen(arg);
    while (alen && (arg[alen - 1] == ' ' || arg[alen - 1] == '\t' || arg[alen - 1] == '\n'))
        alen--;
    if (ci->arg_required < 0 && alen) {
        snprintf(err, err_size, "%s takes no argument", ci->usage);
        return CMD_ERROR;
    }
    if (ci->arg_required > 0 && !alen) {
        snprintf(err, err_size, "usage: %s", ci->usage);
        return CMD_ERROR;
    }
    out->id = ci->id;
    if (alen)
        out->arg = x_strndup(arg, alen);
    if (ci->id == CMD_SET && out->arg) { /* alone: show them (param 0) */
        char *sp = strpbrk(out->arg, " \t");
        if (!sp) {
            snprintf(err, err_size, "usage: %s", ci->usage);
            cmd_fini(out);
            return CMD_ERROR;
        }
        *sp = '\0';
        const char *value = skip_ws(sp + 1);
        if (strpbrk(value, " \t")) {
            snprintf(err, err_size, "usage: %s", ci->usage);
            cmd_fini(out);
            return CMD_ERROR;
        }
        if (!cmd_parse_param(out->arg, value, out, err, err_size)) {
            cmd_fini(out);
            return CMD_ERROR;
        }
        if (out->param == PARAM_DRAFT) { /* the name is the argument */
            char *model = x_strdup(value);
            free(out->arg);
            out->arg = model;
        }
    }
    if ((ci->arg == ARG_SESSION || ci->id == CMD_NEW) && out->arg) {
        /* session names become file names: keep them tame */
        for (const char *q = out->arg; *q; q++) {
            if (*q == '/' || (unsigned char)*q < 0x20 || (q == out->arg && *q == '.')) {
                snprintf(err, err_size, "a session name cannot contain '/' or start with '.'");
                cmd_fini(out);
                return CMD_ERROR;
            }
        }
    }
    return CMD_OK;
}

enum cmd_complete_what cmd_complete_context(const char *line, size_t point, size_t *word_start,
                                            enum cmd_arg_kind *kind)
{
    *kind = ARG_NONE;
    *word_start = 0;
    size_t i = 0;
    while (i < point && (line[i] == ' ' || line[i] == '\t'))
        i++;
    if (i >= point || line[i] != '/')
        return COMPLETE_NOTHING;
    size_t name = i + 1;
    size_t j = name;
    while (j < point && line[j] != ' ' && line[j] != '\t')
        j++;
    if (j == point) {
        *word_start = i; /* the slash is part of the word */
        return COMPLETE_COMMAND;
    }
    bool ambiguous;
    const struct cmd_info *ci = find_command(line + name, j - name, &ambiguous);
    if (!ci || ci->arg == ARG_NONE || ci->arg == ARG_TEXT)
        return COMPLETE_NOTHING;
    while (j < point && (line[j] == ' ' || line[j] == '\t'))
        j++;
    size_t word = j;
    /* /set PARAM VALUE: only PARAM completes */
    while (j < point && line[j] != ' ' && line[j] != '\t')
        j++;
    if (j < point && ci->arg != ARG_FILE)
        return COMPLETE_NOTHING;
    *word_start = ci->arg == ARG_FILE ? word : word;
    *kind = ci->arg;
    return COMPLETE_ARG;
}

const char *cmd_complete_from(const char *const *names, size_t n_names, const char *prefix,
                              size_t *state)
{
    size_t plen = strlen(prefix);
    while (*state < n_names) {
        const char *s = names[(*state)++];
        if (s && strncmp(s, prefix, plen) == 0)
            return s;
    }
    return NULL;
}

const char *cmd_complete_command(const char *prefix, size_t *state)
{
    static const char *slashed[64];
    static size_t n_slashed;
    if (!n_slashed) {
        for (size_t i = 0; i < cmd_table_len && i < 64; i++) {
            static char buf[64][24];
            snprintf(buf[i], sizeof buf[i], "/%s", cmd_table[i].name);
            slashed[n_slashed++] = buf[i];
        }
    }
    return cmd_complete_from(slashed, n_slashed, prefix, state);
}
