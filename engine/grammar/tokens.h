/* tokens.h: a grammar over a tokenizer's ids: which ids may come next
 * (one id's check, or the full mask by a walk of the token trie) and the
 * state after each id.  Engine-internal (generate.c, the tests). */
#ifndef ELMCHAT_ENGINE_GRAMMAR_TOKENS_H
#define ELMCHAT_ENGINE_GRAMMAR_TOKENS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/elm_grammar.h"
#include "engine/elm_tokenizer.h"

struct gtokens;

/* Per reply.  end_ids (EOS, stop ids) are allowed only where the grammar
 * is complete.  NULL on OOM or when the tokenizer has no trie. */
struct gtokens *gtokens_new(const elm_grammar *g, const elm_tokenizer *tok, const int32_t *end_ids,
                            int n_end_ids);
void gtokens_free(struct gtokens *t);
/* May id come next? */
bool gtokens_allows(struct gtokens *t, int32_t id);
/* Every id that may come next, as bits (bit id % 32 of word id / 32; valid
 * until the next call); *n_allowed their count.  NULL on a matching error. */
const uint32_t *gtokens_mask(struct gtokens *t, int *n_allowed);
/* gtokens_mask where few ids may come next, known without a walk of the
 * whole vocabulary: at most max_first_bytes ASCII bytes and no other
 * character may come next, and the walk found at most max_ids ids.  NULL
 * otherwise (many, unknown cheaply, or an error: gtokens_error says). */
const uint32_t *gtokens_few(struct gtokens *t, int max_first_bytes, int max_ids, int *n_allowed);
/* Take id (allowed or not: false when the grammar refuses it). */
bool gtokens_take(struct gtokens *t, int32_t id);
/* How many of ids[0..n) are allowed one after the other from here
 * (the state is not changed): drafts are cut there. */
int gtokens_prefix_allowed(struct gtokens *t, const int32_t *ids, int n);
/* Is the text so far a complete match? */
bool gtokens_complete(const struct gtokens *t);
/* Non-NULL when matching hit a limit. */
const char *gtokens_error(const struct gtokens *t);

struct gtokens_stats {
    long checks; /* single-id checks */
    long masks;  /* full masks built (walks and cache hits) */
    long walks;  /* of them, trie walks */
};
struct gtokens_stats gtokens_stats(const struct gtokens *t);

#endif
