/* model_local.c: weights on this machine as the worker's model (the local
 * kind of model_kind.h): loaded by elm_model_load on the loader thread;
 * its requests run on the slots' caches (request_generate.c,
 * request_cache.c; the caches: residency.c) and it takes a draft model
 * (request_draft.c). */
#include "config.h"

#include "engine/worker/model_kind.h"

static bool local_claims(const char *path)
{
    (void)path;
    return true; /* what no other kind claims is a file */
}

static elm_status local_load(elm_worker *w, const struct elm_request *rq, struct model_rec *m,
                             void (*progress)(float, void *), bool (*should_abort)(void *),
                             char *err, size_t err_size)
{
    struct elm_model_params mp = elm_model_default_params();
    mp.n_threads = rq->n_threads;
    mp.progress_cb = progress;
    mp.progress_user = w;
    mp.abort_cb = should_abort;
    mp.abort_user = w;
    mp.tokenizer = rq->tokenizer;
    elm_status st = elm_model_load(rq->path, &mp, &m->model, err, err_size);
    if (st == ELM_OK)
        m->info = elm_model_get_info(m->model);
    return st;
}

static void local_unload(struct model_rec *m)
{
    elm_model_free(m->model);
    m->model = NULL;
}

static const elm_model *local_draft_target(const struct model_rec *m)
{
    return m->model;
}

const struct model_kind wk_model_local = {
    .name = "local",
    .claims = local_claims,
    .load = local_load,
    .unload = local_unload,
    .adopted = NULL,
    .generate = wk_do_generate,
    .truncate = wk_do_truncate,
    .state = wk_do_state,
    .free_slot = NULL, /* its caches are all it keeps */
    .draft_target = local_draft_target,
};
