/* generate_testing.h: elm_generate with a script (engine-internal, for the
 * worker's reply test hook; never in the public API). */
#ifndef ELMCHAT_ENGINE_GENERATE_TESTING_H
#define ELMCHAT_ENGINE_GENERATE_TESTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/elm.h"

/* elm_generate, but the reply is ids[0..n_ids) and then EOS whatever the
 * model says: the decode, the pacing and cancel hooks, stop strings and the
 * events all run as for a sampled reply. */
elm_status elm_generate_scripted(elm_ctx *ctx, float *logits, const struct elm_generate_params *p,
                                 const int32_t *ids, size_t n_ids,
                                 struct elm_generate_result *res, char *err, size_t err_size);

#endif
