/* constrain.c: sampling under a grammar (constrain.h).
 *
 * Exactness: the reply must be a draw of the chain on the logits with the
 * refused ids removed first.  Where elm_sampler_rejection_exact holds
 * (greedy, plain temperature), drawing over every id and, on a refused id,
 * drawing again over the allowed ones gives exactly that: P(a) = p(a) +
 * (1 - p(A)) p(a)/p(A) = p(a)/p(A); greedy's argmax, when allowed, is the
 * allowed argmax.  Then most ids cost one check.  Top-k needs only the k
 * best allowed ids (cheap_draw).  Otherwise (top-p or min-p alone cut by
 * mass over the candidates) the mask comes first.  Where few ids are
 * allowed (between a JSON value's tokens) the mask comes first whatever
 * the settings, cached per state, and the LM head computes only their
 * rows (constrain_few_next). */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/base/error.h"
#include "engine/inference/constrain.h"
#include "engine/grammar/tokens.h"
#include "engine/inference/sampler.h"

/* How far down the logit order greedy looks before a full mask: where the
 * best few ids are refused, more usually are (between a JSON value's
 * tokens few are allowed), and each check costs a trie walk. */
#define GREEDY_WINDOW 8
#define REJECTION_TRIES 4
/* Where the grammar allows few ids next (gtokens_few), every draw is over
 * them alone (the chain on their logits: exact by definition), and a
 * plain step's LM head computes only their rows (constrain_few_next).
 * That the draw depends on the state alone, not on which logits were
 * computed, keeps a reply the same with drafts verified on every logit.
 * Tried only where at most FEW_BYTES ASCII bytes and nothing else may come
 * next (between JSON tokens: a quote, digits, ws; inside a string nearly
 * every byte may, and no walk is made), used where the walk finds at most
 * FEW_IDS: a 32,000-row head is 15 % of a 270M decode step, 1,024 rows
 * 0.5 %. */
#define FEW_BYTES 32
#define FEW_IDS 1024

struct constrain {
    struct gtokens *t;
    int32_t *top;      /* [cap_top] ids in the chain's order */
    uint32_t *picked;  /* [words] the top-k allowed ids, as a mask */
    int cap_top, words;
    float *times_us;
    int cap_times, n_times;
    double seconds;
    bool few_known;           /* few_mask is this state's (until an id is taken) */
    const uint32_t *few_mask; /* gtokens_few's mask here, NULL: many ids */
    int n_few_mask;
    int32_t *few;             /* [n_few_mask] its ids, for constrain_few_next */
    int cap_few;
    double few_seconds;       /* their walk, counted with the next sample's time */
    long few_steps;           /* draws over few allowed ids */
};

/* The grammar's own CPU time (a loaded machine's waits are not its cost):
 * the thread's CPU clock, not the monotonic one of engine/base/platform.h. */
static double thread_cpu_seconds(void)
{
    struct timespec ts;
#ifdef CLOCK_THREAD_CPUTIME_ID
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
#else
    clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct constrain *constrain_new(const struct elm_generate_params *p, int32_t eos_id, char *err,
                                size_t err_size)
{
    int32_t *ends = malloc(((size_t)p->n_stop_ids + 1) * sizeof *ends);
    struct constrain *c = calloc(1, sizeof *c);
    if (!ends || !c) {
        free(ends);
        free(c);
        elm_set_error(err, err_size, ELM_E_NOMEM, "out of memory");
        return NULL;
    }
    int n = 0;
    if (!p->ignore_eos && eos_id >= 0)
        ends[n++] = eos_id;
    for (int i = 0; i < p->n_stop_ids; i++)
        ends[n++] = p->stop_ids[i];
    c->t = gtokens_new(p->grammar, p->tokenizer, ends, n);
    free(ends);
    if (!c->t) {
        free(c);
        elm_set_error(err, err_size, ELM_E_NOMEM, "out of memory for the grammar's token trie");
        return NULL;
    }
    if (gtokens_error(c->t)) {
        elm_set_error(err, err_size, ELM_E_INVALID, "%s", gtokens_error(c->t));
        constrain_free(c);
        return NULL;
    }
    c->words = (elm_tokenizer_n_vocab(p->tokenizer) + 31) / 32;
    c->times_us = p->grammar_us;
    c->cap_times = p->grammar_us ? p->max_tokens : 0;
    return c;
}

void constrain_free(struct constrain *c)
{
    if (!c)
        return;
    gtokens_free(c->t);
    free(c->few);
    free(c->top);
    free(c->picked);
    free(c);
}

static bool allows(struct constrain *c, int32_t id)
{
    return gtokens_allows(c->t, id);
}

static void take(struct constrain *c, int32_t id)
{
    gtokens_take(c->t, id);
    c->few_known = false;
}

/* This state's mask where few ids are allowed, else NULL (once a state). */
static const uint32_t *few_here(struct constrain *c)
{
    if (!c->few_known) {
        c->n_few_mask = 0;
        c->few_mask = gtokens_few(c->t, FEW_BYTES, FEW_IDS, &c->n_few_mask);
        if (c->few_mask && c->n_few_mask == 0)
            c->few_mask = NULL; /* nothing allowed: the mask path says why */
        c->few_known = true;
    }
    return c->few_mask;
}

/* The ids of the n best logits (the chain's order) in c->top. */
static int best_ids(struct constrain *c, elm_sampler *smp, const float *logits, int n_vocab,
                    int n)
{
    if (n > c->cap_top) {
        int32_t *t = realloc(c->top, (size_t)n * sizeof *t);
        if (!t)
            return 0;
        c->top = t;
        c->cap_top = n;
    }
    return elm_sampler_top_ids(smp, logits, n_vocab, n, c->top);
}

/* Exact without a full mask where possible (-1: a mask is needed).
 * Greedy: the first allowed id in logit order is the allowed argmax.
 * Top-k: the chain keeps the k best allowed ids and weighs only them (top-p
 * and min-p among them): found in logit order, a draw over just those is
 * the draw over the allowed ones.  Plain temperature: draws over every id
 * until one is allowed are draws of the allowed distribution (rejection
 * sampling), up to a few tries. */
static int32_t cheap_draw(struct constrain *c, elm_sampler *smp, const float *logits, int n_vocab)
{
    const struct elm_sampler_params *sp = elm_sampler_params_of(smp);
    if (!(sp->temperature > 0.0f)) {
        int n = best_ids(c, smp, logits, n_vocab, GREEDY_WINDOW);
        for (int i = 0; i < n; i++)
            if (allows(c, c->top[i]))
                return c->top[i];
        return -1;
    }
    if (sp->top_k > 0) {
        /* where few ids are allowed (between JSON tokens) fewer than k are
         * and the mask is needed anyway: do not look far */
        int window = sp->top_k + sp->top_k / 4 + 8, found = 0;
        int n = best_ids(c, smp, logits, n_vocab, window);
        if (!c->picked && !(c->picked = calloc((size_t)c->words, sizeof *c->picked)))
            return -1;
        int32_t got[256];
        for (int i = 0; i < n && found < sp->top_k && found < 256; i++)
            if (allows(c, c->top[i]))
                got[found++] = c->top[i];
        if (found < sp->top_k)
            return -1; /* fewer than k allowed among the best: the mask says */
        for (int i = 0; i < found; i++)
            c->picked[got[i] >> 5] |= 1u << (got[i] & 31);
        int32_t id = elm_sampler_draw(smp, logits, n_vocab, c->picked);
        for (int i = 0; i < found; i++)
            c->picked[got[i] >> 5] = 0;
        return id;
    }
    if (elm_sampler_rejection_exact(smp)) {
        for (int tries = 0; tries < REJECTION_TRIES; tries++) {
            int32_t id = tries == 0 ? elm_sampler_draw(smp, logits, n_vocab, NULL)
                                    : elm_sampler_redraw(smp);
            if (id >= 0 && allows(c, id))
                return id;
        }
    }
    return -1;
}

static void spent(struct constrain *c, double s)
{
    s += c->few_seconds;
    c->few_seconds = 0;
    c->seconds += s;
    if (c->n_times < c->cap_times)
        c->times_us[c->n_times++] = (float)(s * 1e6);
}

int32_t constrain_sample(struct constrain *c, elm_sampler *smp, float *logits, int n_vocab,
                         const int32_t *history, int n_history)
{
    if (n_vocab > c->words * 32)
        n_vocab = c->words * 32; /* ids past the tokenizer's have no text */
    elm_sampler_penalize(smp, logits, n_vocab, history, n_history);
    double t0 = thread_cpu_seconds();
    const uint32_t *few = few_here(c);
    if (few) { /* few ids allowed: the chain over them alone */
        c->few_steps++;
        int32_t id = elm_sampler_draw(smp, logits, n_vocab, few);
        if (id >= 0)
            take(c, id);
        spent(c, thread_cpu_seconds() - t0);
        return id;
    }
    /* the cheap draw is timed whole (its id ordering and draws are the
     * grammar's cost too): a clock read per check cost more than a check */
    int32_t id = cheap_draw(c, smp, logits, n_vocab);
    double in_grammar = thread_cpu_seconds() - t0;
    if (id >= 0) {
        t0 = thread_cpu_seconds();
        take(c, id);
        spent(c, in_grammar + thread_cpu_seconds() - t0);
        return id;
    }
    t0 = thread_cpu_seconds();
    int n_allowed = 0;
    const uint32_t *mask = gtokens_mask(c->t, &n_allowed);
    in_grammar += thread_cpu_seconds() - t0;
    if (!mask) {
        spent(c, in_grammar);
        return CONSTRAIN_ERROR;
    }
    if (n_allowed == 0) {
        spent(c, in_grammar);
        return gtokens_complete(c->t) ? CONSTRAIN_DONE : CONSTRAIN_ERROR;
    }
    id = elm_sampler_draw(smp, logits, n_vocab, mask);
    t0 = thread_cpu_seconds();
    if (id >= 0)
        take(c, id);
    spent(c, in_grammar + thread_cpu_seconds() - t0);
    return id;
}

int constrain_few_next(struct constrain *c, const int32_t **ids)
{
    double t0 = thread_cpu_seconds();
    const uint32_t *mask = few_here(c);
    int n = c->n_few_mask;
    if (mask && n > c->cap_few) {
        int32_t *f = realloc(c->few, (size_t)n * sizeof *f);
        if (!f) {
            c->few_seconds += thread_cpu_seconds() - t0;
            return 0; /* the whole head, and the draw over the mask still */
        }
        c->few = f;
        c->cap_few = n;
    }
    int k = 0;
    if (mask) {
        for (int w = 0; w < c->words; w++)
            for (uint32_t bits = mask[w]; bits; bits &= bits - 1)
                c->few[k++] = w * 32 + __builtin_ctz(bits);
    }
    c->few_seconds += thread_cpu_seconds() - t0;
    *ids = c->few;
    return k;
}

int constrain_drafts(struct constrain *c, const int32_t *ids, int n)
{
    double t0 = thread_cpu_seconds();
    int k = gtokens_prefix_allowed(c->t, ids, n);
    c->seconds += thread_cpu_seconds() - t0;
    return k;
}

void constrain_take(struct constrain *c, int32_t id)
{
    take(c, id);
}

const char *constrain_error(const struct constrain *c)
{
    const char *e = gtokens_error(c->t);
    return e ? e : "the grammar allows no token here (the text so far cannot be completed)";
}

void constrain_stats(const struct constrain *c, struct elm_grammar_stats *out)
{
    struct gtokens_stats s = gtokens_stats(c->t);
    *out = (struct elm_grammar_stats){
        .used = true,
        .complete = gtokens_complete(c->t),
        .checks = s.checks,
        .masks = s.masks,
        .walks = s.walks,
        .few = c->few_steps,
        .seconds = c->seconds,
        .n_times = c->n_times,
    };
}
