/* worker_testing.h: the worker's test hooks (engine-internal: the tests
 * include it; the application never does).  Both are read at every use, so
 * they may be set at any time; the environment variables
 * ELM_WORKER_TEST_LOAD_DELAY_MS and ELM_WORKER_TEST_TOKEN_INTERVAL_MS set
 * them for every worker (the tmux tests drive the real binary with them).
 * ELM_WORKER_TEST_REPLY_FILE makes every reply that file's text (tokenized;
 * request_generate.c): a known markdown reply for the UI tests.
 * ELM_WORKER_TEST_DRAFT_K=N (read when a worker is made) gives every reply
 * with a draft model elm_generate_params.draft_k = N: drafts of N ids that
 * never turn themselves off, whatever they cost (the tests draft a model
 * with itself, which the cost rule would stop after one pass). */
#ifndef ELMCHAT_ENGINE_WORKER_TESTING_H
#define ELMCHAT_ENGINE_WORKER_TESTING_H

#include "engine/elm_worker.h"

/* Every disk load takes ms longer: a slow disk inside elm_model_load (its
 * first cancel point waits), which only its cancel points can cut short. */
void elm_worker_test_set_load_delay(elm_worker *w, int ms);
/* At least ms between two sampled tokens (the wait ends at once on
 * cancel); 0: as fast as possible.  Pacing for tests and demos. */
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
