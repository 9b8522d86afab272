/* test-sampler.c: the sampler chain: greedy ties, HF repetition
 * penalty semantics, top-k, top-p, min-p, temperature, seed reproducibility. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/elm.h"
#include "engine/inference/sampler.h"
#include "tests/lib/tap.h"

#define V 8

static elm_sampler *make(float temp, int top_k, float top_p, float min_p, float pen, int last_n,
                         uint64_t seed)
{
    struct elm_sampler_params p = elm_sampler_default_params();
    p.temperature = temp;
    p.top_k = top_k;
    p.top_p = top_p;
    p.min_p = min_p;
    p.repeat_penalty = pen;
    p.repeat_last_n = last_n;
    p.seed = seed;
    return elm_sampler_new(&p);
}

/* Counts of each id over n draws from fresh copies of logits. */
static void histogram(elm_sampler *s, const float *logits, int n, int *counts)
{
    memset(counts, 0, V * sizeof *counts);
    float buf[V];
    for (int i = 0; i < n; i++) {
        memcpy(buf, logits, sizeof buf);
        int32_t id = elm_sampler_sample(s, buf, V, NULL, 0);
        if (id >= 0 && id < V)
            counts[id]++;
    }
}


/* ---- the chain by its definition, for a large vocabulary: every
 * candidate sorted (larger logit first, then lower id), top-k, top-p and
 * min-p on that order, the draw by cumulative weight in that order, with
 * the sampler's generator (xoshiro256** seeded by splitmix64, 53-bit
 * units).  The sampler sorts only what it reads (sampler.c): its draws
 * must be these. */
struct ref_cand {
    float logit;
    int32_t id;
};

static int ref_order(const void *a, const void *b)
{
    const struct ref_cand *x = a, *y = b;
    if (x->logit != y->logit)
        return x->logit > y->logit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static uint64_t ref_splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t ref_rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static double ref_unit(uint64_t *s)
{
    uint64_t r = ref_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = ref_rotl(s[3], 45);
    return (double)(r >> 11) * 0x1p-53;
}

static int32_t ref_draw(uint64_t *rng, const float *logits, int n_ids, float temp, int top_k,
                        float top_p, float min_p, const uint32_t *allowed, struct ref_cand *c)
{
    int nv = 0; /* the candidates: the allowed ids (all without a mask) */
    for (int i = 0; i < n_ids; i++)
        if (!allowed || (allowed[i / 32] >> (i % 32) & 1))
            c[nv++] = (struct ref_cand){logits[i], i};
    qsort(c, (size_t)nv, sizeof *c, ref_order);
    int n = top_k > 0 && top_k < nv ? top_k : nv;
    double mx = c[0].logit, total = 0.0;
    for (int i = 0; i < n; i++)
        total += exp((double)c[i].logit - mx);
    if (top_p < 1.0f) {
        double cum = 0.0;
        for (int i = 0; i < n; i++) {
            cum += exp((double)c[i].logit - mx) / total;
            if (cum >= top_p) {
                n = i + 1;
                break;
            }
        }
    }
    if (min_p > 0.0f) {
        double cut = mx + log((double)min_p);
        int keep = 1;
        while (keep < n && c[keep].logit >= cut)
            keep++;
        n = keep;
    }
    double sum = 0.0;
    for (int i = 0; i < n; i++)
        sum += exp(((double)c[i].logit - mx) / temp);
    double u = ref_unit(rng) * sum, cum = 0.0;
    for (int i = 0; i < n; i++) {
        cum += exp(((double)c[i].logit - mx) / temp);
        if (u < cum)
            return c[i].id;
    }
    return c[n - 1].id;
}

/* n draws from a 32,000-id vocabulary (a flat tail: the draw often passes
 * the sorted head) by the sampler and by the definition; how many agree.
 * masked: the draws over a random third of the ids (a grammar's mask). */
static int agree_with_definition(float temp, int top_k, float top_p, float min_p, int n,
                                 bool masked)
{
    enum { NV = 32000 };
    float *logits = malloc(NV * sizeof *logits), *buf = malloc(NV * sizeof *buf);
    struct ref_cand *c = malloc(NV * sizeof *c);
    static uint32_t mask[NV / 32];
    uint64_t mseed = 5;
    for (int i = 0; i < NV / 32; i++)
        mask[i] = ((uint32_t)ref_splitmix(&mseed) & (uint32_t)ref_splitmix(&mseed)) |
                  ((uint32_t)ref_splitmix(&mseed) & (uint32_t)ref_splitmix(&mseed) & 0x55555555u);
    uint64_t seed = 7, rng[4], lseed = 99;
    for (int i = 0; i < 4; i++)
        rng[i] = ref_splitmix(&seed);
    elm_sampler *s = make(temp, top_k, top_p, min_p, 1.0f, -1, 7);
    int same = 0;
    for (int t = 0; t < n && logits && buf && c && s; t++) {
        for (int i = 0; i < NV; i++) /* a few peaks over a wide low plateau */
            logits[i] = (float)(ref_splitmix(&lseed) >> 40) * 0x1p-24f * 4.0f +
                        (i % 997 == t % 997 ? 6.0f : 0.0f);
        memcpy(buf, logits, NV * sizeof *buf);
        int32_t got = masked ? elm_sampler_draw(s, buf, NV, mask)
                             : elm_sampler_sample(s, buf, NV, NULL, 0);
        same += got == ref_draw(rng, logits, NV, temp, top_k, top_p, min_p,
                                masked ? mask : NULL, c);
        /* a redraw (a refused draw's next try) is another draw of the same */
        got = elm_sampler_redraw(s);
        same += got == ref_draw(rng, logits, NV, temp, top_k, top_p, min_p,
                                masked ? mask : NULL, c);
    }
    elm_sampler_free(s);
    free(logits);
    free(buf);
    free(c);
    return same;
}

int main(void)
{
    plan_lazy();
    struct elm_sampler_params d = elm_sampler_default_params();
    ok(d.temperature == 0 && d.repeat_penalty == 1 && d.repeat_last_n < 0 && d.top_p >= 1,
       "defaults: greedy, no penalty, penalty window = whole history");

    /* Greedy, ties to the lowest id. */
    elm_sampler *g = make(0, 0, 1, 0, 1, -1, 0);
    float l1[V] = {1, 5, 3, 5, -2, 0, 5, 1};
    is_int(elm_sampler_sample(g, l1, V, NULL, 0), 1, "greedy: tie goes to the lowest id");
    float lnan[V] = {NAN, 1, 2, 3, 0, 0, 0, 0};
    is_int(elm_sampler_sample(g, lnan, V, NULL, 0), 3, "greedy skips a NaN logit");
    elm_sampler_free(g);

    /* HF repetition penalty: logit / p if > 0 else logit * p, each id once. */
    elm_sampler *p = make(0, 0, 1, 0, 2.0f, -1, 0);
    float l2[V] = {4, -1, 3, 0.5f, 2, 0, 0, 0};
    int32_t hist[] = {0, 0, 1, 3, 0};
    is_int(elm_sampler_sample(p, l2, V, hist, 5), 2, "penalty moves the argmax from 0 to 2");
    ok(l2[0] == 2.0f, "positive logit divided once, however often the id repeats (%g)", l2[0]);
    ok(l2[1] == -2.0f, "negative logit multiplied (%g)", l2[1]);
    ok(l2[3] == 0.25f && l2[2] == 3.0f && l2[4] == 2.0f, "only history ids change");
    elm_sampler_free(p);
    /* repeat_last_n limits the window; 0 turns it off. */
    elm_sampler *w = make(0, 0, 1, 0, 2.0f, 2, 0);
    float l3[V] = {4, -1, 3, 0.5f, 2, 0, 0, 0};
    int32_t hist2[] = {0, 1, 3};
    elm_sampler_sample(w, l3, V, hist2, 3);
    ok(l3[0] == 4.0f && l3[1] == -2.0f && l3[3] == 0.25f, "repeat_last_n = 2: the last 2 only");
    elm_sampler_free(w);
    elm_sampler *off = make(0, 0, 1, 0, 2.0f, 0, 0);
    float l4[V] = {4, -1, 3, 0.5f, 2, 0, 0, 0};
    elm_sampler_sample(off, l4, V, hist2, 3);
    ok(l4[0] == 4.0f && l4[1] == -1.0f, "repeat_last_n = 0: no penalty");
    elm_sampler_free(off);

    /* Filters, seen through what a hot sampler can draw. */
    const float base[V] = {3.0f, 2.9f, 2.8f, 0.0f, -1.0f, -1.0f, -5.0f, 1.0f};
    int counts[V];
    elm_sampler *k2 = make(1.0f, 2, 1, 0, 1, -1, 7);
    histogram(k2, base, 2000, counts);
    ok(counts[0] > 0 && counts[1] > 0 && counts[0] + counts[1] == 2000, "top-k 2: only ids 0, 1");
    elm_sampler_free(k2);
    /* softmax(base): p0 .340, p1 .307, p2 .278: cumulative .340, .647 >= 0.6 */
    elm_sampler *tp = make(1.0f, 0, 0.6f, 0, 1, -1, 7);
    histogram(tp, base, 2000, counts);
    ok(counts[0] + counts[1] == 2000 && counts[1] > 0, "top-p 0.6: the two most likely only");
    elm_sampler_free(tp);
    /* min-p 0.3: keep p >= 0.3 p_max, i.e. logit >= 3 + ln 0.3 = 1.80 */
    elm_sampler *mp = make(1.0f, 0, 1, 0.3f, 1, -1, 7);
    histogram(mp, base, 3000, counts);
    ok(counts[0] && counts[1] && counts[2] && counts[0] + counts[1] + counts[2] == 3000,
       "min-p 0.3: ids 0-2 only");
    elm_sampler_free(mp);
    /* Temperature: cold is nearly greedy, hot spreads out. */
    elm_sampler *cold = make(0.02f, 0, 1, 0, 1, -1, 7), *hot = make(5.0f, 0, 1, 0, 1, -1, 7);
    int hc[V];
    histogram(cold, base, 2000, counts);
    histogram(hot, base, 2000, hc);
    ok(counts[0] > 1700, "temperature 0.02: id 0 in %d of 2000", counts[0]);
    ok(hc[6] > 0 && hc[0] < 600, "temperature 5: even id 6 appears (%d), id 0 %d", hc[6], hc[0]);
    /* The draw follows softmax at temperature 1 (chi-square-ish check). */
    elm_sampler *t1 = make(1.0f, 0, 1, 0, 1, -1, 99);
    histogram(t1, base, 20000, counts);
    double z = 0, sum = 0;
    for (int i = 0; i < V; i++)
        z += exp(base[i]);
    for (int i = 0; i < V; i++) {
        double want = 20000 * exp(base[i]) / z;
        sum += (counts[i] - want) * (counts[i] - want) / (want + 1);
    }
    ok(sum < 40, "temperature 1 draws follow softmax (chi2 %.1f over 8 bins)", sum);
    elm_sampler_free(t1);
    elm_sampler_free(cold);
    elm_sampler_free(hot);

    /* Seeds: same seed, same sequence; other seed, other sequence. */
    elm_sampler *s1 = make(1.0f, 0, 1, 0, 1, -1, 1234), *s2 = make(1.0f, 0, 1, 0, 1, -1, 1234);
    elm_sampler *s3 = make(1.0f, 0, 1, 0, 1, -1, 4321);
    int same = 0, diff = 0;
    for (int i = 0; i < 200; i++) {
        float a[V], b[V], c[V];
        memcpy(a, base, sizeof a);
        memcpy(b, base, sizeof b);
        memcpy(c, base, sizeof c);
        int32_t x = elm_sampler_sample(s1, a, V, NULL, 0), y = elm_sampler_sample(s2, b, V, NULL, 0);
        same += x == y;
        diff += x != elm_sampler_sample(s3, c, V, NULL, 0);
    }
    is_int(same, 200, "same seed: identical 200 draws");
    ok(diff > 50, "another seed: a different sequence (%d of 200 differ)", diff);
    elm_sampler_free(s1);
    elm_sampler_free(s2);
    elm_sampler_free(s3);

    /* Edge cases. */
    elm_sampler *e = make(1.0f, 0, 1, 0, 1, -1, 1);
    float inf[V] = {0, INFINITY, 0, 0, 0, 0, 0, 0};
    is_int(elm_sampler_sample(e, inf, V, NULL, 0), 1, "+inf logit wins");
    float ninf[V];
    for (int i = 0; i < V; i++)
        ninf[i] = -INFINITY;
    int32_t r = elm_sampler_sample(e, ninf, V, NULL, 0);
    ok(r >= 0 && r < V, "all -inf still returns an id (%d)", r);
    is_int(elm_sampler_sample(e, inf, 0, NULL, 0), -1, "n_vocab 0: -1");
    float one[1] = {0.5f};
    is_int(elm_sampler_sample(e, one, 1, NULL, 0), 0, "vocabulary of one");
    elm_sampler_free(e);
    elm_sampler_free(NULL);

    /* the draws of a sampler that sorts only what it reads equal the
     * definition's (the sums over the unsorted tail add in another order:
     * a draw could differ only within a double's last bits of a boundary) */
    static const struct {
        float temp, top_p, min_p;
        int top_k;
    } chains[] = {{1.0f, 1.0f, 0.0f, 0}, {0.7f, 0.9f, 0.0f, 0},  {1.0f, 0.999f, 0.0f, 0},
                  {0.8f, 1.0f, 0.01f, 0}, {1.0f, 0.95f, 0.0f, 40}, {1.5f, 1.0f, 0.0f, 500}};
    for (size_t i = 0; i < sizeof chains / sizeof chains[0]; i++) {
        for (int masked = 0; masked < 2; masked++) {
            int n = 100, agree = agree_with_definition(chains[i].temp, chains[i].top_k,
                                                      chains[i].top_p, chains[i].min_p, n, masked);
            is_int(agree, 2 * n, "32,000 ids%s, temperature %.1f top-k %d top-p %.3f min-p %.2f: "
                                "%d of %d draws and redraws are the definition's",
                   masked ? " (a mask of about a third)" : "", (double)chains[i].temp,
                   chains[i].top_k, (double)chains[i].top_p, (double)chains[i].min_p, agree, 2 * n);
        }
    }

    /* the k best ids (the grammar's look down the logit order) are the
     * definition's first k: ties by lower id, NaN last, on both paths (a
     * pass for k <= 256, a quickselect above) */
    {
        enum { NV = 32000 };
        float *lg = malloc(NV * sizeof *lg);
        struct ref_cand *c = malloc(NV * sizeof *c);
        int32_t *ids = malloc(NV * sizeof *ids);
        elm_sampler *s = make(0.0f, 0, 1.0f, 0.0f, 1.0f, -1, 1);
        uint64_t seed = 3;
        static const int ks[] = {1, 8, 64, 256, 257, 1000, NV, NV + 5};
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0] && lg && c && ids && s; ki++) {
            for (int i = 0; i < NV; i++) /* 16 levels: ties everywhere; some NaN */
                lg[i] = i % 101 == 7 ? NAN : (float)(ref_splitmix(&seed) >> 60);
            for (int i = 0; i < NV; i++)
                c[i] = (struct ref_cand){isnan(lg[i]) ? -INFINITY : lg[i], i};
            qsort(c, NV, sizeof *c, ref_order);
            int got = elm_sampler_top_ids(s, lg, NV, ks[ki], ids), want = ks[ki] < NV ? ks[ki] : NV;
            int equal = got == want;
            for (int i = 0; equal && i < want; i++)
                equal = ids[i] == c[i].id;
            ok(equal, "the %d best of 32,000 ids with ties and NaN: the definition's order (%d ids)",
               ks[ki], got);
        }
        elm_sampler_free(s);
        free(lg);
        free(c);
        free(ids);
    }

    /* greedy under a mask: the best allowed id, ties to the lower */
    {
        elm_sampler *gm = make(0.0f, 0, 1.0f, 0.0f, 1.0f, -1, 1);
        float lg[70];
        for (int i = 0; i < 70; i++)
            lg[i] = (float)(i % 5);
        uint32_t m[3] = {0, 1u << 3 | 1u << 8, 1u << 2 | 1u << 3}; /* ids 35, 40, 66, 67 */
        is_int(elm_sampler_draw(gm, lg, 70, m), 67, "greedy under a mask: the best allowed id");
        m[2] = 0;
        is_int(elm_sampler_draw(gm, lg, 70, m), 35, "greedy under a mask: equal logits, lower id");
        m[1] = 0;
        is_int(elm_sampler_draw(gm, lg, 70, m), -1, "greedy under an empty mask: -1");
        elm_sampler_free(gm);
    }
    return done_testing();
}
