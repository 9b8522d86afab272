/* fake-remote.c: the remote engine's entry points for test-worker-fake,
 * which builds the worker on the stand-in engine without libcurl: no path
 * is a server there (the real one is tested by tests/engine/test-remote.sh). */
#include "config.h"

#include "engine/worker/shared_state.h"

bool wk_is_remote_path(const char *path)
{
    (void)path;
    return false;
}

elm_status wk_remote_connect(elm_worker *w, const struct elm_request *rq, struct model_rec *m,
                             bool (*should_abort)(void *), char *err, size_t err_size)
{
    (void)w, (void)rq, (void)m, (void)should_abort, (void)err, (void)err_size;
    return ELM_E_UNSUPPORTED;
}

void wk_remote_free(struct remote_model *r)
{
    (void)r;
}

void wk_remote_generate(elm_worker *w)
{
    (void)w;
}

void wk_remote_state(elm_worker *w, bool save)
{
    (void)w, (void)save;
}

void wk_remote_truncate(elm_worker *w)
{
    (void)w;
}

void wk_remote_free_slot(struct remote_model *r, int slot)
{
    (void)r, (void)slot;
}

void wk_remote_adopted(struct remote_model *r)
{
    (void)r;
}
