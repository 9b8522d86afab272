/* draft.c: a draft model's proposals (draft.h). */
#include "config.h"

#include "engine/inference/draft.h"

#include <string.h>

#include "engine/base/platform.h"

int elm_draft_propose(elm_ctx *draft, elm_sampler *smp, int32_t *hist, int n_hist, int max,
                      int32_t *out, float *scratch, double *catchup_s)
{
    double t0 = elm_now_seconds();
    *catchup_s = 0;
    int n_vocab = elm_model_get_info(elm_ctx_model(draft))->n_vocab;
    int room = elm_ctx_n_ctx(draft) - n_hist;
    if (max > room)
        max = room;
    if (max <= 0 || n_hist <= 0)
        return 0;
    /* the common prefix, at least one token short of hist: its last token's
     * logits are wanted */
    int have = elm_ctx_n_past(draft), keep = 0;
    const int32_t *t = elm_ctx_tokens(draft);
    while (keep < have && keep < n_hist - 1 && t[keep] == hist[keep])
        keep++;
    if (elm_ctx_truncate(draft, keep) != ELM_OK ||
        elm_decode(draft, hist + keep, n_hist - keep, scratch, 0) != ELM_OK)
        return 0;
    *catchup_s = elm_now_seconds() - t0;
    int k = 0;
    while (k < max) {
        /* the target's penalty over the same history: its pick, if the
         * draft's logits were its */
        int32_t id = elm_sampler_greedy(smp, scratch, n_vocab, hist, n_hist + k);
        if (id < 0)
            break;
        out[k] = hist[n_hist + k] = id;
        if (++k == max || elm_decode(draft, &out[k - 1], 1, scratch, 0) != ELM_OK)
            break;
    }
    return k;
}
