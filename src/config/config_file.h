/* config_file.h: $XDG_CONFIG_HOME/elmchat/config.yaml (the user's settings).
 * (Not "config.h": that name is autoconf's.)
 *
 *   default_model: 270M-instruct      # a name, alias or path
 *   template: openelm-instruct        # overrides the model's default
 *   models:                           # aliases: name -> folder or .gguf
 *     270M-instruct: /data/OpenELM-270M-Instruct
 *     3B-instruct:                      # or with the draft model that speeds it up
 *       path: /data/OpenELM-3B-Instruct
 *       draft: 270M-instruct
 *     gpu-box:                          # a llama-server (elm_worker.h)
 *       path: server:http://gpu-box:8080
 *       tokenizer: /data/OpenELM-3B-Instruct/tokenizer.model   # default: elmchat's
 *   sampling: {temperature: 0, top_k: 0, top_p: 1, min_p: 0,
 *              repeat_penalty: 1.2, repeat_last_n: -1, seed: 1, max_tokens: 256}
 *   pull_quantize: q8_0               # elmchat pull (and -m on demand) also writes a GGUF
 *   context:
 *     policy: drop-oldest             # or: stop
 *     size: 2048                      # tokens; 0 = the model's
 *   ui: inline                        # or: full (the default; elmchat --inline)
 *   shell_confirm: false              # !COMMAND runs without asking first (default: true)
 *   shell_timeout: 30                 # seconds a !COMMAND may run (default: 30)
 *
 * Every key is optional; unknown keys and wrong types are errors with
 * "FILE:LINE:COLUMN".  UI thread only.
 */
#ifndef ELMCHAT_SRC_CONFIG_FILE_H
#define ELMCHAT_SRC_CONFIG_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "src/template/template.h"

#define CONFIG_MAX_FILE_SIZE (1024 * 1024)

enum context_policy {
    CONTEXT_DROP_OLDEST = 0, /* drop the oldest whole turns (never system/pinned) */
    CONTEXT_STOP,            /* refuse and say why */
};
const char *context_policy_name(enum context_policy p);

struct config_alias {
    char *name, *path; /* owned */
    char *draft;       /* owned, NULL: none (speculative decoding's draft model) */
    char *tokenizer;   /* owned, NULL: none (a server's: what it is checked against) */
};

struct config {
    char *path;          /* the file read (owned), NULL when none existed */
    char *default_model; /* owned or NULL */
    char *template_name; /* owned or NULL */
    struct sampling sampling;
    enum context_policy policy;
    int n_ctx;           /* 0: the model's */
    char *pull_quantize; /* owned or NULL: the type pull converts to (options.h's names) */
    bool ui_inline;      /* ui: inline (the line-by-line front end, ui/inline_chat.c) */
    bool shell_no_confirm; /* shell_confirm: false: !COMMAND asks nothing first */
    int shell_timeout;   /* seconds a !COMMAND may run (chat_shell.c) */
    struct config_alias *aliases; /* owned array */
    size_t n_aliases;
};

/* Defaults (nothing set). */
void config_init(struct config *c);
void config_fini(struct config *c);
/* Read path (NULL: $XDG_CONFIG_HOME/elmchat/config.yaml).  A missing file is
 * not an error (defaults stay).  0 or negative; err = "FILE:LINE:COLUMN: ...".
 * On error *c keeps its defaults. */
int config_load(struct config *c, const char *path, char *err, size_t err_size);
/* The path an alias names (borrowed), NULL when name is not an alias. */
const char *config_alias(const struct config *c, const char *name);
/* The tokenizer the alias names (borrowed), NULL when none. */
const char *config_alias_tokenizer(const struct config *c, const char *name);
/* The draft model the alias names (borrowed), NULL when none. */
const char *config_alias_draft(const struct config *c, const char *name);
/* A model as the user names it (-m, /model, default_model:), the one place
 * that says how: an alias of models: first, then model_resolve's names and
 * paths.  pull: one the Hub has and that is not here is downloaded first,
 * shown by ui (model_resolve_or_pull, with pull_quantize); no_pull
 * (--no-pull): it is not, and err says how to get it.  false with err. */
struct pull_ui;
bool config_find_model(const struct config *c, const char *arg, bool pull, bool no_pull,
                       const struct pull_ui *ui, char *path, size_t size, char *err,
                       size_t err_size);

#endif
