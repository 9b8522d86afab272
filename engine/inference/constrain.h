/* constrain.h: sampling under a grammar, for the generation loop
 * (generate.c): exact (the chain's distribution with the refused ids
 * removed first), one check per id where that is provably the same, and
 * the time it costs.  Engine-internal. */
#ifndef ELMCHAT_ENGINE_GRAMMAR_CONSTRAIN_H
#define ELMCHAT_ENGINE_GRAMMAR_CONSTRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/elm.h"

struct constrain;

/* NULL with err filled on failure. */
struct constrain *constrain_new(const struct elm_generate_params *p, int32_t eos_id, char *err,
                                size_t err_size);
void constrain_free(struct constrain *c);

#define CONSTRAIN_DONE (-2)  /* nothing may follow and the text is complete */
#define CONSTRAIN_ERROR (-3) /* constrain_error says why */

/* Sample the next id from logits (modified: the penalty is applied in
 * place) and take it. */
int32_t constrain_sample(struct constrain *c, elm_sampler *smp, float *logits, int n_vocab,
                         const int32_t *history, int n_history);
/* Where the grammar allows few ids next (known without a walk of the
 * whole vocabulary): their count and the ids (ascending) in *ids, valid
 * until the next call; the next constrain_sample draws over them alone and
 * needs only their logits.  0: many, or not known cheaply. */
int constrain_few_next(struct constrain *c, const int32_t **ids);
/* How many drafts of ids[0..n) the grammar allows from here. */
int constrain_drafts(struct constrain *c, const int32_t *ids, int n);
/* Take an id not sampled by constrain_sample (a test script's). */
void constrain_take(struct constrain *c, int32_t id);
const char *constrain_error(const struct constrain *c);
/* The counters and times so far. */
void constrain_stats(const struct constrain *c, struct elm_grammar_stats *out);

#endif
