/* fake-remote.c: the remote kind of model (engine/worker/model_kind.h) for
 * test-worker-fake, which builds the worker on the stand-in engine without
 * libcurl: it claims no path, so no model is a server there (the real one
 * is tested by tests/engine/test-remote.sh). */
#include "config.h"

#include "engine/worker/model_kind.h"

static bool claims_none(const char *path)
{
    (void)path;
    return false;
}

const struct model_kind wk_model_remote = {.name = "remote (none)", .claims = claims_none};
