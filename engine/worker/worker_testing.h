/* worker_testing.h: the worker's test hooks (engine-internal: the tests
 * include it; the application never does).  Both are read at every use, so
 * they may be set at any time; the environment variables
 * ELM_WORKER_TEST_LOAD_DELAY_MS and ELM_WORKER_TEST_TOKEN_INTERVAL_MS set
 * them for every worker (the tmux tests drive the real binary with them).
 * ELM_WORKER_TEST_REPLY_FILE makes every reply that file's text (tokenized;
 * request_generate.c): a known markdown reply for the UI tests. */
#ifndef ELMCHAT_ENGINE_WORKER_TESTING_H
#define ELMCHAT_ENGINE_WORKER_TESTING_H

#include "engine/elm_worker.h"

/* Every disk load takes ms longer: a slow disk inside elm_model_load (its
 * first cancel point waits), which only its cancel points can cut short. */
void elm_worker_test_set_load_delay(elm_worker *w, int ms);
/* At least ms between two sampled tokens (the wait ends at once on
 * cancel); 0: as fast as possible.  Pacing for tests and demos. */
void elm_worker_test_set_token_interval(elm_worker *w, int ms);

#endif
