/* sampler.c: the sampler chain of elm.h: repetition penalty (HF semantics)
 * -> top-k -> top-p -> min-p -> temperature -> draw, with a seeded PRNG. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/elm.h"
#include "engine/inference/sampler.h"

struct cand {
    float logit;
    int32_t id;
};

/* A selection of at most this many best candidates is one pass over them
 * (a small sorted buffer); more, a quickselect. */
#define SCAN_TOP 256

struct elm_sampler {
    struct elm_sampler_params p;
    uint64_t rng[4];        /* xoshiro256** */
    struct cand *cands;     /* [cap] */
    double *wt;             /* [cap] weights of cands, moved with them */
    struct cand head[SCAN_TOP]; /* the best so far of a one-pass selection */
    struct {                    /* the last temperature draw's weighing, for redraws */
        bool ok;
        int32_t fixed;          /* >= 0: the only possible id (an infinite logit) */
        int n, sorted;          /* candidates c[0, n), of them c[0, sorted) sorted */
        double sum;             /* of their weights wt[0, n) */
    } last;
    unsigned char *seen;    /* [cap] penalty marks */
    int cap;
};

struct elm_sampler_params elm_sampler_default_params(void)
{
    struct elm_sampler_params p = {
        .temperature = 0.0f,
        .top_k = 0,
        .top_p = 1.0f,
        .min_p = 0.0f,
        .repeat_penalty = 1.0f,
        .repeat_last_n = -1,
        .seed = 0,
    };
    return p;
}

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t next_u64(uint64_t *s)
{
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

/* Uniform in [0, 1) with 53 random bits. */
static double next_unit(uint64_t *s)
{
    return (double)(next_u64(s) >> 11) * 0x1p-53;
}

elm_sampler *elm_sampler_new(const struct elm_sampler_params *params)
{
    elm_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->p = params ? *params : elm_sampler_default_params();
    uint64_t seed = s->p.seed;
    for (int i = 0; i < 4; i++)
        s->rng[i] = splitmix64(&seed);
    return s;
}

void elm_sampler_free(elm_sampler *s)
{
    if (!s)
        return;
    free(s->cands);
    free(s->wt);
    free(s->seen);
    free(s);
}

/* Larger logit first; equal logits by lower id, so every order is total. */
static int by_logit(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->logit != y->logit)
        return x->logit > y->logit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* HF RepetitionPenaltyLogitsProcessor: each distinct id of the history once. */
static void penalize(elm_sampler *s, float *logits, int n_vocab, const int32_t *history,
                     int n_history)
{
    float pen = s->p.repeat_penalty;
    if (pen == 1.0f || s->p.repeat_last_n == 0 || !history || n_history <= 0)
        return;
    int first = 0;
    if (s->p.repeat_last_n > 0 && n_history > s->p.repeat_last_n)
        first = n_history - s->p.repeat_last_n;
    memset(s->seen, 0, (size_t)n_vocab);
    for (int i = first; i < n_history; i++) {
        int32_t id = history[i];
        if (id < 0 || id >= n_vocab || s->seen[id])
            continue;
        s->seen[id] = 1;
        float v = logits[id];
        logits[id] = v > 0 ? v / pen : v * pen;
    }
}

static int32_t argmax(const float *logits, int n)
{
    int32_t best = 0;
    for (int i = 1; i < n; i++)
        if (logits[i] > logits[best] || (isnan(logits[best]) && !isnan(logits[i])))
            best = i;
    return best;
}

/* Is x before y in the chain's order (by_logit's)? */
static inline bool before(struct cand x, struct cand y)
{
    return x.logit > y.logit || (x.logit == y.logit && x.id < y.id);
}

/* Put x among the m best so far, head[0, m) sorted, at most k kept; the
 * new count. */
static int scan_insert(struct cand *head, int m, int k, struct cand x)
{
    int i = m < k ? m : k - 1;
    while (i > 0 && before(x, head[i - 1])) {
        head[i] = head[i - 1];
        i--;
    }
    head[i] = x;
    return m < k ? m + 1 : k;
}

/* The k best of c[0, n) (k <= SCAN_TOP) in head, sorted: one pass that
 * keeps the best so far; most candidates cost one compare with the k-th. */
static int scan_top(const struct cand *c, int n, int k, struct cand *head)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m == k && !before(c[i], head[k - 1]))
            continue;
        m = scan_insert(head, m, k, c[i]);
    }
    return m;
}

/* Keep the k best candidates of n sorted in c[0, k), the others after them
 * in any order.  A few best (the usual top-k, the draw's sorted head): one
 * pass, then the others moved up; many: quickselect, then sort k.  The
 * quickselect over 32,000 ids cost ~300 us a token; the pass ~30. */
static int keep_top(elm_sampler *s, struct cand *c, int n, int k)
{
    if (k <= 0 || k >= n) {
        qsort(c, (size_t)n, sizeof *c, by_logit);
        return n;
    }
    if (k <= SCAN_TOP) {
        struct cand *head = s->head;
        k = scan_top(c, n, k, head);
        struct cand last = head[k - 1];
        int w = 0;
        for (int i = 0; i < n; i++) /* the others to the front, in order */
            if (before(last, c[i]))
                c[w++] = c[i];
        memmove(c + k, c, (size_t)w * sizeof *c);
        memcpy(c, head, (size_t)k * sizeof *c);
        return k;
    }
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        struct cand pivot = c[(lo + hi) / 2];
        int i = lo, j = hi;
        while (i <= j) {
            while (by_logit(&c[i], &pivot) < 0)
                i++;
            while (by_logit(&c[j], &pivot) > 0)
                j--;
            if (i <= j) {
                struct cand t = c[i];
                c[i++] = c[j];
                c[j--] = t;
            }
        }
        if (k - 1 <= j)
            hi = j;
        else if (k - 1 >= i)
            lo = i;
        else
            break;
    }
    qsort(c, (size_t)k, sizeof *c, by_logit);
    return k;
}

/* How many of the best candidates a draw without top-k sorts first. */
#define SORTED_HEAD 64

static void swap_cands(struct cand *c, double *wt, int i, int j)
{
    struct cand t = c[i];
    c[i] = c[j];
    c[j] = t;
    double w = wt[i];
    wt[i] = wt[j];
    wt[j] = w;
}

/* Does a running weight of cum pass target?  A draw's: target < cum (the
 * first candidate whose running weight exceeds the unit); top-p's:
 * target <= cum (the first at which the mass reaches p). */
static bool passes(double cum, double target, bool strict)
{
    return strict ? target < cum : target <= cum;
}

/* The candidate of c[lo, hi) (after c[0, lo) in the chain's order, their
 * weights' sum cum) at which the running weight in the chain's order first
 * passes target, without sorting c[lo, hi): split around a pivot, add the
 * better side's weights, go on in the side that holds it (quickselect's
 * steps: ~2 (hi - lo) looks, where a sort of 32,000 candidates cost ~3 ms).
 * On return c[lo, i) are all before c[i] in the chain's order and c[i + 1,
 * hi) after it; wt moves with c.  The sums add in another order than a
 * walk in the chain's order would: a double's last bits. */
static int find_running(struct cand *c, double *wt, int lo, int hi, double cum, double target,
                        bool strict)
{
    while (hi - lo > 16) {
        struct cand a = c[lo], b = c[lo + (hi - lo) / 2], z = c[hi - 1], p;
        if (before(a, b))
            p = before(b, z) ? b : before(a, z) ? z : a;
        else
            p = before(a, z) ? a : before(b, z) ? z : b;
        int w = lo, at = -1;
        double sum = 0.0;
        for (int i = lo; i < hi; i++) {
            if (before(c[i], p)) {
                sum += wt[i];
                swap_cands(c, wt, i, w);
                if (at == w)
                    at = i; /* the pivot was moved out of the way */
                w++;
            } else if (c[i].id == p.id) {
                at = i;
            }
        }
        if (w > lo && passes(cum + sum, target, strict)) {
            hi = w;
            continue;
        }
        cum += sum; /* past the better side: then the pivot, the best of the rest */
        swap_cands(c, wt, w, at);
        cum += wt[w];
        if (passes(cum, target, strict))
            return w;
        lo = w + 1;
    }
    for (int i = lo + 1; i < hi; i++) /* a few left: in the chain's order */
        for (int j = i; j > lo && before(c[j], c[j - 1]); j--)
            swap_cands(c, wt, j, j - 1);
    for (int i = lo; i < hi; i++) {
        cum += wt[i];
        if (passes(cum, target, strict))
            return i;
    }
    return hi - 1; /* rounding left the target just out of reach: the last */
}

static bool reserve(elm_sampler *s, int n_vocab)
{
    if (n_vocab <= s->cap)
        return true;
    struct cand *c = realloc(s->cands, (size_t)n_vocab * sizeof *c);
    if (c)
        s->cands = c;
    double *wt = realloc(s->wt, (size_t)n_vocab * sizeof *wt);
    if (wt)
        s->wt = wt;
    unsigned char *seen = realloc(s->seen, (size_t)n_vocab);
    if (seen)
        s->seen = seen;
    if (!c || !wt || !seen)
        return false;
    s->cap = n_vocab;
    return true;
}

int32_t elm_sampler_greedy(elm_sampler *s, float *logits, int n_vocab, const int32_t *history,
                           int n_history)
{
    if (!s || !logits || n_vocab <= 0 || !reserve(s, n_vocab))
        return -1;
    penalize(s, logits, n_vocab, history, n_history);
    return argmax(logits, n_vocab);
}

void elm_sampler_penalize(elm_sampler *s, float *logits, int n_vocab, const int32_t *history,
                          int n_history)
{
    if (s && logits && n_vocab > 0 && reserve(s, n_vocab))
        penalize(s, logits, n_vocab, history, n_history);
}

bool elm_sampler_rejection_exact(const elm_sampler *s)
{
    return !(s->p.temperature > 0.0f) ||
           (s->p.top_k <= 0 && s->p.top_p >= 1.0f && s->p.min_p <= 0.0f);
}

/* One draw from the candidates the last draw weighed (c[0, last.n) in the
 * chain's order, their weights' sum): a unit of the generator, then the
 * first candidate whose running weight passes it. */
static int32_t draw_weighed(elm_sampler *s)
{
    if (s->last.fixed >= 0)
        return s->last.fixed;
    const struct cand *c = s->cands;
    int n = s->last.n, head = s->last.sorted < n ? s->last.sorted : n;
    double u = next_unit(s->rng) * s->last.sum, cum = 0.0;
    for (int i = 0; i < head; i++) {
        cum += s->wt[i];
        if (u < cum)
            return c[i].id;
    }
    if (head == n)
        return c[n - 1].id;
    return c[find_running(s->cands, s->wt, head, n, cum, u, true)].id;
}

int32_t elm_sampler_draw(elm_sampler *s, const float *logits, int n_vocab,
                         const uint32_t *allowed)
{
    if (!s || !logits || n_vocab <= 0 || !reserve(s, n_vocab))
        return -1;
    s->last.ok = false;
    if (!(s->p.temperature > 0.0f)) {
        if (!allowed)
            return argmax(logits, n_vocab);
        int32_t best = -1;
        for (int32_t w = 0; w * 32 < n_vocab; w++) /* the set bits, in id order */
            for (uint32_t bits = allowed[w]; bits; bits &= bits - 1) {
                int32_t i = w * 32 + __builtin_ctz(bits);
                if (i >= n_vocab)
                    break;
                if (best < 0 || logits[i] > logits[best] ||
                    (isnan(logits[best]) && !isnan(logits[i])))
                    best = i;
            }
        return best;
    }

    /* the chain over the allowed ids only: the others are not candidates */
    struct cand *c = s->cands;
    int n_c = 0;
    if (!allowed) {
        for (int i = 0; i < n_vocab; i++)
            c[n_c++] = (struct cand){isnan(logits[i]) ? -INFINITY : logits[i], i};
    } else {
        for (int32_t w = 0; w * 32 < n_vocab; w++)
            for (uint32_t bits = allowed[w]; bits; bits &= bits - 1) {
                int32_t i = w * 32 + __builtin_ctz(bits);
                if (i >= n_vocab)
                    break;
                c[n_c++] = (struct cand){isnan(logits[i]) ? -INFINITY : logits[i], i};
            }
    }
    if (n_c == 0)
        return -1;
    /* The chain's candidates are c[0, n) in logit order.  Without top-k
     * only the best SORTED_HEAD are sorted: top-p, min-p and the draw
     * rarely read past them, and a sort of the whole vocabulary cost ~2 ms
     * a token; past them find_running() finds the candidate without a
     * sort.  Sums over the unsorted part add in another order (the last
     * bits of a double). */
    int n = n_c, sorted;
    if (s->p.top_k > 0 && s->p.top_k < n_c)
        sorted = n = keep_top(s, c, n_c, s->p.top_k); /* the k best, sorted */
    else
        sorted = keep_top(s, c, n_c, n_c < SORTED_HEAD ? n_c : SORTED_HEAD);
    if (isinf(c[0].logit)) { /* +inf wins outright; all -inf leaves nothing to weigh */
        s->last.ok = true;
        s->last.fixed = c[0].id;
        return c[0].id;
    }

    /* top-p and min-p on the probabilities at temperature 1 (the fixed order). */
    float mx = c[0].logit;
    double *wt = s->wt;
    if (s->p.top_p < 1.0f) {
        double total = 0.0;
        for (int i = 0; i < n; i++)
            total += wt[i] = exp((double)c[i].logit - mx);
        double target = (double)s->p.top_p * total, cum = 0.0;
        int i = 0;
        for (; i < sorted && i < n; i++) {
            cum += wt[i];
            if (cum >= target)
                break;
        }
        if (i < n && i >= sorted)
            i = find_running(c, wt, sorted, n, cum, target, false);
        n = i < n ? i + 1 : n;
    }
    if (s->p.min_p > 0.0f) {
        /* p_i >= min_p * p_max  <=>  logit_i >= max + log(min_p) */
        double cut = mx + log((double)s->p.min_p);
        int keep = 1;
        while (keep < n && keep < sorted && c[keep].logit >= cut)
            keep++;
        if (keep == sorted) /* past the sorted head: every candidate at or over the cut */
            for (int i = sorted; i < n; i++)
                if (c[i].logit >= cut) {
                    swap_cands(c, wt, i, keep);
                    keep++;
                }
        n = keep;
    }

    double inv_t = 1.0 / s->p.temperature, sum = 0.0;
    for (int i = 0; i < n; i++)
        sum += wt[i] = exp(((double)c[i].logit - mx) * inv_t);
    s->last.n = n;
    s->last.sorted = sorted;
    s->last.sum = sum;
    s->last.fixed = -1;
    s->last.ok = true;
    return draw_weighed(s);
}

int32_t elm_sampler_redraw(elm_sampler *s)
{
    return s && s->last.ok ? draw_weighed(s) : -1;
}

int elm_sampler_top_ids(elm_sampler *s, const float *logits, int n_vocab, int k, int32_t *ids)
{
    if (!s || !logits || n_vocab <= 0 || k <= 0 || !reserve(s, n_vocab))
        return 0;
    struct cand *c = s->cands;
    if (k <= SCAN_TOP) { /* straight from the logits, no candidate array */
        int m = 0;
        for (int i = 0; i < n_vocab; i++) {
            float v = isnan(logits[i]) ? -INFINITY : logits[i];
            if (m == k && !(v > s->head[k - 1].logit))
                continue; /* ids rise: an equal logit comes after the k-th */
            m = scan_insert(s->head, m, k, (struct cand){v, i});
        }
        for (int i = 0; i < m; i++)
            ids[i] = s->head[i].id;
        return m;
    }
    for (int i = 0; i < n_vocab; i++)
        c[i] = (struct cand){isnan(logits[i]) ? -INFINITY : logits[i], i};
    int n = keep_top(s, c, n_vocab, k < n_vocab ? k : n_vocab);
    for (int i = 0; i < n; i++)
        ids[i] = c[i].id;
    return n;
}

const struct elm_sampler_params *elm_sampler_params_of(const elm_sampler *s)
{
    return &s->p;
}

int32_t elm_sampler_sample(elm_sampler *s, float *logits, int n_vocab, const int32_t *history,
                           int n_history)
{
    if (!s || !logits || n_vocab <= 0 || !reserve(s, n_vocab))
        return -1;
    penalize(s, logits, n_vocab, history, n_history);
    return elm_sampler_draw(s, logits, n_vocab, NULL);
}
