/* decode_few.h: a decode step whose LM head computes only the rows a
 * grammar allows next (forward.c; generate.c; the fake engine of the
 * tests).  Engine-internal. */
#ifndef ELMCHAT_ENGINE_INFERENCE_DECODE_FEW_H
#define ELMCHAT_ENGINE_INFERENCE_DECODE_FEW_H

#include <stdint.h>

#include "engine/elm.h"

/* elm_decode of one token, with the logits of ids[0..n_ids) only
 * (ascending; the bits elm_decode gives them), every other entry
 * -INFINITY: the LM head reads those rows alone. */
elm_status elm_decode_few(elm_ctx *ctx, int32_t token, float *logits, const int32_t *ids,
                          int n_ids);
/* After elm_decode_few, with nothing decoded since: every logit of that
 * token (the LM head whole).  ELM_E_INVALID when that state is gone. */
elm_status elm_decode_head_rest(elm_ctx *ctx, float *logits);

#endif
