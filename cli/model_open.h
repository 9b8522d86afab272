/* model_open.h: loading a model and a context for the engine subcommands
 * (info, logits, generate, bench).  Errors are printed; NULL means exit 1. */
#ifndef ELMCHAT_SRC_CMD_MODEL_H
#define ELMCHAT_SRC_CMD_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "engine/elm.h"

/* MODEL as for -m (NULL: the bundled default).  Owned: elm_model_free. */
elm_model *cmd_load_model(const char *arg, int n_threads);
/* --draft MODEL for target: loaded, checked (the same vocabulary), and a
 * ctx of n_ctx on it.  NULL (nothing to free) when arg is NULL; false after
 * an error message. */
bool cmd_open_draft(const char *arg, const elm_model *target, int n_ctx, int n_threads,
                    elm_model **model, elm_ctx **ctx);
/* Owned: elm_ctx_free. */
elm_ctx *cmd_new_ctx(const elm_model *model, int n_ctx, int n_threads, bool exact);
/* --tokens ARG (required, comma/space separated ids, at least one) into
 * *ids (owned) and *n: EXIT_OK, or a usage error printed (exit 2). */
int cmd_parse_tokens(const char *cmd, const char *arg, int32_t **ids, size_t *n);
/* The number of online CPUs (at least 1): what -t 0 means. */
long cmd_all_cpus(void);
/* Usage error (exit 2) when an id is outside the model's vocabulary. */
int cmd_check_ids(const char *cmd, const elm_model *model, const int32_t *ids, size_t n);

#endif
