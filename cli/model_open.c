/* model_open.c: model and context loading shared by the engine subcommands. */
#include "config.h"

#include "cli/model_open.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "src/models/model_find.h"
#include "src/base/options.h"

elm_model *cmd_load_model(const char *arg, int n_threads)
{
    char path[4096], err[ELM_ERR_MAX];
    if (!model_resolve_file(arg, path, sizeof path, err, sizeof err)) {
        cli_error("%s", err);
        return NULL;
    }
    struct elm_model_params mp = elm_model_default_params();
    mp.n_threads = n_threads;
    /* a folder without a tokenizer: the one elmchat ships (shared by the model) */
    char *from = NULL;
    elm_tokenizer *tok = model_tokenizer(path, NULL, &from, err, sizeof err);
    mp.tokenizer = tok;
    elm_model *model = NULL;
    elm_status st = elm_model_load(path, &mp, &model, err, sizeof err);
    elm_tokenizer_free(tok);
    free(from);
    if (st != ELM_OK) {
        cli_error("%s", err);
        return NULL;
    }
    return model;
}

elm_ctx *cmd_new_ctx(const elm_model *model, int n_ctx, int n_threads, bool exact)
{
    char err[ELM_ERR_MAX];
    struct elm_ctx_params cp = elm_ctx_default_params();
    cp.n_ctx = n_ctx;
    cp.n_threads = n_threads;
    cp.exact = exact;
    elm_ctx *ctx = NULL;
    if (elm_ctx_new(model, &cp, &ctx, err, sizeof err) != ELM_OK) {
        cli_error("%s", err);
        return NULL;
    }
    return ctx;
}

int cmd_check_ids(const char *cmd, const elm_model *model, const int32_t *ids, size_t n)
{
    int n_vocab = elm_model_get_info(model)->n_vocab;
    for (size_t i = 0; i < n; i++)
        if (ids[i] >= n_vocab)
            return cli_usage_error(cmd, "token id %d is outside the vocabulary (0..%d)",
                                   (int)ids[i], n_vocab - 1);
    return EXIT_OK;
}

int cmd_parse_tokens(const char *cmd, const char *arg, int32_t **ids, size_t *n)
{
    if (!arg)
        return cli_usage_error(cmd, "--tokens is required");
    if (!cli_parse_ids(arg, ids, n))
        return cli_usage_error(cmd, "invalid --tokens '%s'", arg);
    if (*n == 0) {
        free(*ids);
        *ids = NULL;
        return cli_usage_error(cmd, "--tokens is empty");
    }
    return EXIT_OK;
}

long cmd_all_cpus(void)
{
    return elm_cpu_count();
}

bool cmd_open_draft(const char *arg, const elm_model *target, int n_ctx, int n_threads,
                    elm_model **model, elm_ctx **ctx)
{
    *model = NULL;
    *ctx = NULL;
    if (!arg)
        return true;
    char err[ELM_ERR_MAX];
    if (!(*model = cmd_load_model(arg, n_threads)))
        return false;
    if (!elm_model_can_draft(target, *model, err, sizeof err)) {
        cli_error("--draft %s: %s", arg, err);
        elm_model_free(*model);
        *model = NULL;
        return false;
    }
    if (!(*ctx = cmd_new_ctx(*model, n_ctx, n_threads, false))) {
        elm_model_free(*model);
        *model = NULL;
        return false;
    }
    return true;
}
