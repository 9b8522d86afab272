/* slash_commands.h: the slash commands of the chat: the table, parsing,
 * validation, completion candidates.  Application logic, not drawing: the
 * controller holds the table (chat_commands.c) and runs a parsed command,
 * the UI's completion reads the table.  Pure: no I/O.  One thread. */
#ifndef ELMCHAT_SRC_SLASH_COMMANDS_H
#define ELMCHAT_SRC_SLASH_COMMANDS_H

#include <stdbool.h>
#include <stddef.h>

enum cmd_id {
    CMD_HELP = 1,
    CMD_NEW,
    CMD_SESSIONS,
    CMD_SWITCH,
    CMD_MODEL,
    CMD_TEMPLATE,
    CMD_SYSTEM,
    CMD_SET,
    CMD_SAVE,
    CMD_LOAD,
    CMD_EXPORT,
    CMD_RETRY,
    CMD_UNDO,
    CMD_CLEAR,
    CMD_INFO,
    CMD_QUIT,
    CMD_PIN,
    CMD_UNPIN,
    CMD_EDIT,
    CMD_ROLE,
    CMD_COPY,
    CMD_FIND,
    CMD_RENAME,
    CMD_DELETE,
    CMD_REMOVE,
    CMD_FORK,
    CMD_BRANCH,
    CMD_TREE,
    CMD_READ,
    CMD_FORMAT,
};

/* What an argument completes to. */
enum cmd_arg_kind {
    ARG_NONE,
    ARG_TEXT,
    ARG_SESSION,
    ARG_MODEL,
    ARG_TEMPLATE,
    ARG_PARAM,
    ARG_FILE,
    ARG_ROLE,
    ARG_EXCHANGE, /* N: an exchange number (cmd.n), none: the last */
    ARG_VERSION,  /* N [reply] [K] (cmd.n, cmd.reply, cmd.k) */
};

enum cmd_param {
    PARAM_TEMPERATURE = 1,
    PARAM_TOP_K,
    PARAM_TOP_P,
    PARAM_MIN_P,
    PARAM_REPEAT_PENALTY,
    PARAM_SEED,
    PARAM_MAX_TOKENS,
    PARAM_MARKDOWN, /* a display setting: on or off (ivalue 1 or 0) */
    PARAM_REPEAT_LAST_N,
    PARAM_LOOKUP,   /* prompt lookup drafts: on or off (ivalue 1 or 0) */
    PARAM_DRAFT,    /* the draft model: a name or off (the value in cmd.arg) */
};

struct chat;
struct cmd;

/* What the dispatcher (chat_run_command) applies before a row's handler. */
enum cmd_flags {
    CMD_REFUSED_BUSY = 1 << 0,  /* refused while a reply streams */
    CMD_ENDS_EDIT = 1 << 1,     /* leaves an /edit in progress (another conversation) */
    CMD_NEEDS_MODEL = 1 << 2,   /* refused until a model is ready */
};

/* One slash command, one row: what the parser, the completion and /help
 * read (name, argument, usage, help), what the dispatcher applies
 * (flags) and the handler, which calls the controller's typed entry point
 * (chat_controller.h).  The rows are the controller's (chat_commands.c). */
struct cmd_info {
    const char *name;  /* without the slash */
    enum cmd_id id;
    enum cmd_arg_kind arg;
    int arg_required;  /* 1: required, 0: optional, -1: none allowed */
    const char *usage; /* "/switch NAME" */
    const char *help;
    unsigned flags;    /* enum cmd_flags */
    void (*run)(struct chat *c, const struct cmd *cmd);
};
extern const struct cmd_info cmd_table[];
extern const size_t cmd_table_len;

struct cmd {
    enum cmd_id id;
    char *arg;                /* owned (free with cmd_fini); NULL when none */
    enum cmd_param param;     /* CMD_SET */
    double value;             /* CMD_SET: the value (floats) */
    long long ivalue;         /* CMD_SET: the value (integers: top-k, seed, max-tokens) */
    int n;                    /* ARG_EXCHANGE, ARG_VERSION: exchange N (0: the last) */
    bool reply;               /* ARG_VERSION: of N's reply */
    int k;                    /* ARG_VERSION: version K (0: list them) */
    bool force;               /* /save NAME --force (arg: NAME alone) */
};
void cmd_fini(struct cmd *c);

enum cmd_parse_result {
    CMD_NOT_A_COMMAND, /* plain text: send it (*text_start says from where) */
    CMD_OK,
    CMD_ERROR,         /* err holds a one-line hint; nothing is sent */
};

/* Parse one submitted line.  A line is a command when it starts with '/';
 * "//text" sends "/text" as plain text (*text_start = 1); leading spaces
 * before the slash are allowed.  Unique prefixes of command names work
 * ("/h" is /help). */
enum cmd_parse_result cmd_parse(const char *line, struct cmd *out, size_t *text_start, char *err,
                                size_t err_size);

/* PARAM names for /set, by enum; NULL at the end. */
extern const char *const cmd_param_names[];

/* Completion.  line[0, point) is the text before the cursor.  Says what
 * the word being completed is: *kind, and [*word_start, point) its prefix.
 * ARG_NONE with *word_start = 0 and a leading '/' means a command name. */
enum cmd_complete_what { COMPLETE_NOTHING, COMPLETE_COMMAND, COMPLETE_ARG };
enum cmd_complete_what cmd_complete_context(const char *line, size_t point, size_t *word_start,
                                            enum cmd_arg_kind *kind);
/* The i-th candidate (i from 0) among names[] that starts with prefix, or
 * NULL when exhausted. */
const char *cmd_complete_from(const char *const *names, size_t n_names, const char *prefix,
                              size_t *state);
/* Command names ("/help", ...) matching prefix (with its slash); iterate
 * with *state = 0 first.  Static strings. */
const char *cmd_complete_command(const char *prefix, size_t *state);

#endif
