/* worker_testing.h: what the worker's tests call (engine-internal: the
 * tests include it; the application never does).  The hooks a test program
 * sets for every worker it makes (a slow disk, token pacing, a scripted
 * reply, fixed drafts) are engine/base/test_hooks.h's. */
#ifndef ELMCHAT_ENGINE_WORKER_TESTING_H
#define ELMCHAT_ENGINE_WORKER_TESTING_H

#include "engine/elm_worker.h"

/* At least ms between two sampled tokens (the wait ends at once on
 * cancel); 0: as fast as possible.  Read at every reply. */
void elm_worker_test_set_token_interval(elm_worker *w, int ms);

/* What the worker keeps in memory: read it only while the worker is idle
 * (after a request's final event, which orders the worker's writes before
 * the caller's reads). */
struct elm_worker_test_resident {
    int n_models, n_caches; /* caches of every model */
    int n_draft_caches;
    bool draft_loaded;
    uint64_t bytes; /* as the budget counts them */
};
void elm_worker_test_resident(elm_worker *w, struct elm_worker_test_resident *out);

#endif
