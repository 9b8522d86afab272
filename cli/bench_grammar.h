/* bench_grammar.h: `elmchat bench --grammar FILE | --json-schema FILE`:
 * decode speed with and without the constraint, the grammar's time per
 * token (mean, p50, p99), single-id checks against full masks. */
#ifndef ELMCHAT_CLI_BENCH_GRAMMAR_H
#define ELMCHAT_CLI_BENCH_GRAMMAR_H

#include <stdbool.h>

#include "engine/elm.h"

/* Replies of up to n_gen ids to a JSON-asking prompt, reps times (after a
 * warm-up) each way, greedy and sampled; a table (or JSON lines) on
 * stdout.  false after a message. */
bool bench_grammar(elm_ctx *ctx, const elm_tokenizer *tok, const elm_grammar *grammar,
                   const char *name, int n_gen, int reps, float *logits, bool json);

#endif
