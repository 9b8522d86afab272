/* sampler.h: the sampler chain's parts, for sampling under a grammar
 * (engine/inference/constrain.c).  Engine-internal. */
#ifndef ELMCHAT_ENGINE_INFERENCE_SAMPLER_H
#define ELMCHAT_ENGINE_INFERENCE_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/elm.h"

/* The repetition penalty, in place (the chain's first step). */
void elm_sampler_penalize(elm_sampler *s, float *logits, int n_vocab, const int32_t *history,
                          int n_history);
/* The rest of the chain on penalized logits, over the ids whose bit is set
 * in allowed (NULL: every id): the same as the chain on logits with the
 * others removed first.  -1 when allowed holds no id. */
int32_t elm_sampler_draw(elm_sampler *s, const float *logits, int n_vocab,
                         const uint32_t *allowed);
/* Another draw from what the last elm_sampler_draw weighed (its logits,
 * mask and chain; one unit of the generator, as a draw): where a draw is
 * refused and drawn again from the same logits, the weighing (an exp of
 * every candidate) is not done again.  -1 when the last draw was greedy,
 * or there was none. */
int32_t elm_sampler_redraw(elm_sampler *s);
/* Is "draw over every id; when the id is not allowed, draw again over the
 * allowed ones" a draw of the allowed distribution?  True for greedy and
 * for plain temperature (no top-k, top-p or min-p: they cut by rank or by
 * mass over the whole vocabulary, which the allowed ids do not share). */
bool elm_sampler_rejection_exact(const elm_sampler *s);

/* The k largest logits' ids, largest first (equal logits: lower id first,
 * the chain's own order; NaN counts as -inf); returns how many. */
int elm_sampler_top_ids(elm_sampler *s, const float *logits, int n_vocab, int k, int32_t *ids);
const struct elm_sampler_params *elm_sampler_params_of(const elm_sampler *s);

#endif
