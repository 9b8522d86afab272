/* pull_on_demand.h: `-m NAME` for a model that is not here yet: a known
 * OpenELM name or a Hub repository id found neither on disk nor in the
 * Hugging Face cache is offered for download (with its size), pulled, then
 * resolved.  What is shown and asked is the front end's (struct pull_ui:
 * ui/pull_progress.h's on a terminal); nothing here reads or writes the
 * terminal.  For the front ends before they take the terminal (run, the
 * chat's start).  Main thread only. */
#ifndef ELMCHAT_SRC_PULL_ON_DEMAND_H
#define ELMCHAT_SRC_PULL_ON_DEMAND_H

#include <stdbool.h>
#include <stddef.h>

#include "src/models/hub_pull.h"

/* What a front end shows and asks while a model is pulled on demand, in
 * this order; every member may be NULL (nothing shown; yes). */
struct pull_ui {
    /* A line to show: asking the Hub for the size, a retry. */
    void (*notice)(void *user, const char *line);
    /* Download id (bytes in all) into the cache folder?  true: go on. */
    bool (*confirm)(void *user, const char *id, long long bytes, const char *cache);
    /* The download of id starts; hub_pull's events; it ended (r: what came;
     * NULL: it failed). */
    void (*begin)(void *user, const char *id);
    void (*event)(void *user, const struct hub_pull_event *ev);
    void (*end)(void *user, const struct hub_pull_result *r);
    /* pull_quantize: the GGUF being written (0..1), then written (gguf;
     * NULL: it failed). */
    void (*converting)(void *user, float fraction);
    void (*converted)(void *user, const char *gguf);
    void *user;
};

/* model_resolve, and when that fails for a name the Hub could have: the
 * pull (unless allow_pull is false or HF_HUB_OFFLINE is set: then err says
 * how to get it), then a GGUF of type quantize beside it when that is not
 * NULL (config.yaml's pull_quantize); ui (may be NULL) shows it.  false
 * with err when there is no model. */
bool model_resolve_or_pull(const char *arg, bool allow_pull, const char *quantize,
                           const struct pull_ui *ui, char *path, size_t path_size, char *err,
                           size_t err_size);
/* The Hub id arg names when it is a known model or a repository id (id
 * filled), else false. */
bool model_hub_id(const char *arg, char *id, size_t size);

#endif
