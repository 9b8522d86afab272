/* pull_on_demand.h: `-m NAME` for a model that is not here yet: a known
 * OpenELM name or a Hub repository id found neither on disk nor in the
 * Hugging Face cache is offered for download (asked on a terminal, with its
 * size), pulled with progress on standard error, then resolved.  For the
 * front ends before they take the terminal (run, the chat's start).  Main
 * thread only. */
#ifndef ELMCHAT_SRC_PULL_ON_DEMAND_H
#define ELMCHAT_SRC_PULL_ON_DEMAND_H

#include <stdbool.h>
#include <stddef.h>

/* model_resolve, and when that fails for a name the Hub could have: the
 * pull (unless allow_pull is false or HF_HUB_OFFLINE is set: then err says
 * how to get it), then a GGUF of type quantize beside it when that is not
 * NULL (config.yaml's pull_quantize).  false with err when there is no
 * model. */
bool model_resolve_or_pull(const char *arg, bool allow_pull, const char *quantize, char *path,
                           size_t path_size, char *err, size_t err_size);
/* The Hub id arg names when it is a known model or a repository id (id
 * filled), else false. */
bool model_hub_id(const char *arg, char *id, size_t size);

#endif
