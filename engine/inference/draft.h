/* draft.h: draft-model speculative decoding (engine-internal; elm_generate
 * uses it).  A smaller model with the same vocabulary proposes the next
 * tokens (greedy: its argmax), the target verifies them in one batched
 * pass and keeps those its own samples equal (so the output is the
 * target's, sampled or greedy, exactly as without a draft).  The draft's
 * cache follows the target's sequence by its common prefix, like the
 * worker's: it computes only what it lacks. */
#ifndef ELMCHAT_ENGINE_DRAFT_H
#define ELMCHAT_ENGINE_DRAFT_H

#include <stdint.h>

#include "engine/elm.h"

/* Up to max ids after hist[0..n_hist) into out, each the one the target's
 * sampler smp would pick greedily (its repetition penalty over the
 * sequence and the ids drafted before) from the draft's logits; hist has
 * room for max more ids (they are appended there too), and the draft's
 * cache is brought to hist first.  scratch: n_vocab floats.  The count (0
 * on any error: then simply no draft).  *catchup_s: the time bringing the
 * cache to hist took (the rest went into its k - 1 steps). */
int elm_draft_propose(elm_ctx *draft, elm_sampler *smp, int32_t *hist, int n_hist, int max,
                      int32_t *out, float *scratch, double *catchup_s);
/* Whether a model can draft for another: elm_model_can_draft (elm.h,
 * engine/model/vocab_match.c). */

#endif
