/* lookup.c: prompt lookup drafts and when they pay (lookup.h). */
#include "config.h"

#include "engine/inference/lookup.h"

#include <string.h>

void elm_lookup_init(struct elm_lookup *lk)
{
    memset(lk, 0, sizeof *lk);
    lk->k = 4;
}

void elm_lookup_init_model(struct elm_lookup *lk)
{
    elm_lookup_init(lk);
    lk->k = 2;
    lk->model = true;
}

void elm_lookup_fix(struct elm_lookup *lk, int k)
{
    lk->k = k;
    lk->fixed = true;
    lk->off = false;
}

/* The latest i < n_src - n with src[i..i+n) == key: what follows it. */
static int find(const int32_t *src, int n_src, const int32_t *key, int n, bool self, int max,
                int32_t *out)
{
    /* in the sequence itself the key is its own end: look before it */
    int last = self ? n_src - n - 1 : n_src - n;
    for (int i = last; i >= 0; i--) {
        if (memcmp(src + i, key, (size_t)n * sizeof *key) != 0)
            continue;
        int from = i + n, k = 0;
        while (k < max && from + k < n_src)
            out[k] = src[from + k], k++;
        if (k > 0)
            return k;
    }
    return 0;
}

int elm_lookup_draft(const int32_t *hist, int n_hist, const int32_t *extra, int n_extra, int max,
                     int32_t *out)
{
    if (max <= 0)
        return 0;
    for (int n = ELM_LOOKUP_NGRAM_MAX; n >= ELM_LOOKUP_NGRAM_MIN; n--) {
        if (n_hist < n)
            continue;
        const int32_t *key = hist + n_hist - n;
        int k = extra && n_extra > n ? find(extra, n_extra, key, n, false, max, out) : 0;
        if (!k)
            k = find(hist, n_hist, key, n, true, max, out);
        if (k)
            return k;
    }
    return 0;
}

void elm_lookup_draft_costs(struct elm_lookup *lk, int k, double steps_s, double verify_s)
{
    if (lk->fixed || k < 2 || lk->n_plain < 2 || lk->plain_s <= 0)
        return;
    /* best case: K drafted ids a pass (K draft steps), all kept, and the
     * verify no dearer than this one's (it is, for more ids): K + 1 ids */
    const int K = ELM_LOOKUP_K_MAX;
    double step = steps_s / (k - 1);
    double best = (K * step + verify_s) / (K + 1);
    if (best > 0.9 * lk->plain_s)
        lk->off = true;
}

struct elm_draft_stats elm_lookup_stats(const struct elm_lookup *lk)
{
    return (struct elm_draft_stats){lk->n_passes, lk->n_drafted, lk->n_accepted, lk->off};
}

void elm_lookup_plain(struct elm_lookup *lk, double secs)
{
    lk->plain_s = (lk->plain_s * lk->n_plain + secs) / (lk->n_plain + 1);
    lk->n_plain++;
}

void elm_lookup_pass(struct elm_lookup *lk, int k, int accepted, double secs)
{
    lk->n_passes++;
    lk->n_drafted += k;
    lk->n_accepted += accepted;
    int tokens = accepted + 1;
    lk->pass_s = (lk->pass_s * lk->n_pass_tokens + secs) / (lk->n_pass_tokens + tokens);
    lk->n_pass_tokens += tokens;
    for (int i = 0; i < k && i <= accepted; i++) {
        lk->profile.reached[i]++;
        lk->profile.kept[i] += i < accepted;
    }
    if (lk->fixed)
        return;
    /* whole drafts: try longer ones; none kept: shorter */
    if (accepted == k && lk->k < ELM_LOOKUP_K_MAX)
        lk->k = lk->k * 2 > ELM_LOOKUP_K_MAX ? ELM_LOOKUP_K_MAX : lk->k * 2;
    else if (accepted == 0 && lk->k > 1)
        lk->k /= 2;
    /* Break-even: a token out of a pass must cost no more than a plain
     * step (judged once both have a few samples). */
    if (lk->n_plain >= 2 && lk->n_passes >= 4 && lk->pass_s > lk->plain_s)
        lk->off = true;
    /* and with nothing accepted at all after a while, whatever the clocks say
     * (a draft model: after two passes) */
    if (lk->n_passes >= 8 && lk->n_accepted * 8 < lk->n_drafted)
        lk->off = true;
    if (lk->model && lk->n_passes >= 2 && lk->n_accepted == 0)
        lk->off = true;
}
