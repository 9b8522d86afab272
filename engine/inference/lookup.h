/* lookup.h: prompt lookup decoding (engine-internal; elm_generate uses it).
 *
 * Chat repeats itself: a reply quotes the message or file it answers, a
 * /retry says much of the replaced reply again.  The draft for the next
 * tokens is what followed the latest earlier occurrence of the last n
 * tokens (n = 3, then 2), looked up first in an extra source (the reply
 * being replaced), then in the sequence itself.  elm_generate verifies a
 * draft of k tokens in one batched pass, which reads the weights once, and
 * keeps the longest prefix the model itself samples: the output is the
 * model's whatever the draft.
 *
 * Adaptive: k grows while drafts are accepted whole and shrinks when they
 * are not; the wall time per token of the verifying passes is compared
 * with that of plain steps, and drafting stops for the rest of the reply
 * when it does not pay (a model with nothing to repeat, random weights). */
#ifndef ELMCHAT_ENGINE_LOOKUP_H
#define ELMCHAT_ENGINE_LOOKUP_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/elm.h"

/* At most 11 tokens a verifying pass: up to there quantized weights go
 * through the row kernels, whose sums for each token are decode's bits
 * (the int8 GEMM from 12 tokens rounds differently, and a draft kept on
 * other logits would make the reply differ); the k curves flatten long
 * before anyway (bench --verify). */
#define ELM_LOOKUP_K_MAX ELM_DRAFT_MAX
#define ELM_LOOKUP_NGRAM_MAX 3
#define ELM_LOOKUP_NGRAM_MIN 2

struct elm_lookup {
    int k;                 /* draft length to try next */
    bool off;              /* stopped for this reply */
    double plain_s;        /* mean wall time of a plain step (0: none yet) */
    int n_plain;
    double pass_s;         /* mean wall time per token of the verifying passes */
    int n_pass_tokens;
    /* what the reply's drafts did */
    int n_passes, n_drafted, n_accepted;
    bool model;            /* a draft model's: its guesses cost steps of their own */
    bool fixed;            /* k never changes and drafting never stops */
    struct elm_draft_profile profile;
};

void elm_lookup_init(struct elm_lookup *lk);
/* For a draft model: drafts of 2 first (doubling while kept), and two
 * passes in a row with nothing kept stop it (a model that does not know
 * this text). */
void elm_lookup_init_model(struct elm_lookup *lk);
/* Drafts of k ids every pass, never stopped (elm_generate_params.draft_k). */
void elm_lookup_fix(struct elm_lookup *lk, int k);
/* Up to max ids after the latest earlier occurrence of the last n tokens of
 * hist[0..n_hist) (extra first) into out; their count (0: no match). */
int elm_lookup_draft(const int32_t *hist, int n_hist, const int32_t *extra, int n_extra, int max,
                     int32_t *out);
/* A plain step took secs; a pass of k drafted ids kept `accepted` of them
 * in secs (accepted + 1 tokens came out of it). */
void elm_lookup_plain(struct elm_lookup *lk, double secs);
void elm_lookup_pass(struct elm_lookup *lk, int k, int accepted, double secs);
/* A draft model's pass: its k - 1 steps after the catch-up took steps_s,
 * verifying took verify_s.  A draft that could not beat plain steps even
 * if every id of the longest drafts were accepted (one as slow as the
 * model: a model drafting for itself, tiny models bound by per-token
 * overhead) is stopped at once, before more passes lose time. */
void elm_lookup_draft_costs(struct elm_lookup *lk, int k, double steps_s, double verify_s);
/* What it did, as elm_generate_result says it. */
struct elm_draft_stats elm_lookup_stats(const struct elm_lookup *lk);

#endif
