/* slash_commands.c: slash command parsing and completion (see slash_commands.h);
 * the table is the controller's (chat_commands.c). */
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

/* Parse and range-check a /set value; false with a hint in err. */
static bool cmd_parse_param(const char *name, const char *value, struct cmd *out, char *err,
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

/* An exchange number: N >= 1. */
static bool parse_number(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 1 || v > INT_MAX)
        return false;
    *out = (int)v;
    return true;
}

/* ARG_EXCHANGE: [N]; ARG_VERSION: N [reply] [K]. */
static bool parse_exchange_arg(const struct cmd_info *ci, struct cmd *out, char *err,
                               size_t err_size)
{
    if (ci->arg == ARG_EXCHANGE) {
        if (out->arg && !parse_number(out->arg, &out->n)) {
            snprintf(err, err_size, "/%s N: N is an exchange number (1 = the first)", ci->name);
            return false;
        }
        return true;
    }
    char buf[128];
    snprintf(buf, sizeof buf, "%s", out->arg ? out->arg : "");
    char *words[4] = {0};
    size_t nw = 0;
    for (char *save = NULL, *w = strtok_r(buf, " \t", &save); w && nw < 4;
         w = strtok_r(NULL, " \t", &save))
        words[nw++] = w;
    out->reply = nw >= 2 && strcmp(words[1], "reply") == 0;
    const char *k_word = words[out->reply ? 2 : 1];
    if (nw == 0 || nw > (out->reply ? 3u : 2u) || (k_word && !parse_number(k_word, &out->k))) {
        snprintf(err, err_size, "/branch N [reply] [K]: version K of your message N (or of its "
                                "reply); without K, the versions there are");
        return false;
    }
    if (!parse_number(words[0], &out->n)) {
        snprintf(err, err_size, "/%s N: N is an exchange number (1 = the first)", ci->name);
        return false;
    }
    return true;
}

/* /save [NAME] [--force]: --force replaces a saved NAME. */
static void parse_force(struct cmd *out)
{
    char *name = out->arg;
    size_t nl = name ? strlen(name) : 0;
    out->force = nl >= 7 && strcmp(name + nl - 7, "--force") == 0 && (nl == 7 || name[nl - 8] == ' ');
    if (!out->force)
        return;
    nl -= 7;
    while (nl > 0 && name[nl - 1] == ' ')
        nl--;
    name[nl] = '\0';
    if (!*name) {
        free(out->arg);
        out->arg = NULL;
    }
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
    if ((ci->arg == ARG_EXCHANGE || ci->arg == ARG_VERSION) &&
        !parse_exchange_arg(ci, out, err, err_size)) {
        cmd_fini(out);
        return CMD_ERROR;
    }
    if (ci->id == CMD_SAVE)
        parse_force(out);
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
    if (!ci || ci->arg == ARG_NONE || ci->arg == ARG_TEXT || ci->arg == ARG_EXCHANGE ||
        ci->arg == ARG_VERSION)
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
