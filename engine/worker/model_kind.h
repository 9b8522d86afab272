/* model_kind.h: what the worker does with one kind of model, as a table of
 * functions (as ggml's backend interface does for devices): weights on this
 * machine (model_local.c) or a llama-server (model_remote.c).  The worker
 * thread and the loader call a model's kind; nothing else asks which kind
 * a model is.  Engine-internal.
 *
 * A new kind: a table here, its file, its place in model_kind.c's list. */
#ifndef ELMCHAT_ENGINE_WORKER_MODEL_KIND_H
#define ELMCHAT_ENGINE_WORKER_MODEL_KIND_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/worker/shared_state.h"

struct model_kind {
    const char *name;
    /* Is path (LOAD_MODEL's) a model of this kind? */
    bool (*claims)(const char *path);
    /* Loader thread: make rq's model into m (m->info on success; on
     * failure m holds nothing of it).  progress and should_abort (user: w)
     * are the loader's callbacks. */
    elm_status (*load)(elm_worker *w, const struct elm_request *rq, struct model_rec *m,
                       void (*progress)(float fraction, void *user),
                       bool (*should_abort)(void *user), char *err, size_t err_size);
    /* Frees what load made (m and its caches stay: residency.c). */
    void (*unload)(struct model_rec *m);
    /* m became the current model (again); NULL: nothing to do. */
    void (*adopted)(struct model_rec *m);
    /* The requests on the current model (w->run), each ending with its
     * final event. */
    void (*generate)(elm_worker *w);
    void (*truncate)(elm_worker *w);
    void (*state)(elm_worker *w, bool save);
    /* FREE_CTX beyond m's caches: what the kind keeps for slot; NULL: nothing. */
    void (*free_slot)(struct model_rec *m, int slot);
    /* The weights a draft model must match; NULL: this kind takes no draft. */
    const elm_model *(*draft_target)(const struct model_rec *m);
};

extern const struct model_kind wk_model_local; /* model_local.c */
extern const struct model_kind wk_model_remote; /* model_remote.c */

/* The kind that claims path (the local one claims every path). */
const struct model_kind *wk_model_kind_of(const char *path);
/* The current model's kind; with none, the local kind, whose requests
 * answer "no model loaded". */
const struct model_kind *wk_current_kind(const elm_worker *w);

#endif
