/* test-generate.c: elm_generate, the one sampling loop (engine/inference/
 * generate.c): its ids against a hand-written decode + greedy loop, the
 * logits it leaves, every stop reason, and stop strings: the text before
 * one is reported exactly once, a possible start of one is held back and
 * released when it turns out not to be one.  On the bundled demo shape
 * (random weights, synthetic tokenizer) made at check time. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/elm.h"
#include "engine/grammar/tokens.h"
#include "engine/inference/lookup.h"
#include "engine/inference/sampler.h"
#include "tests/lib/tap.h"

enum { N_PROMPT = 9, N_GEN = 16 };

static elm_model *model;
static int n_vocab;
static int32_t prompt[N_PROMPT] = {1, 450, 4996, 17354, 1701, 432, 29871, 263, 3186};

/* What the callbacks saw. */
struct seen {
    int32_t ids[64];
    int n_ids;
    char text[4096];
    size_t n_text;
    int stop_after;   /* should_stop: true once this many ids came (-1: never) */
    const char *stop; /* the stop string of the run: reported text must never hold it */
    bool held_ok;     /* every report so far was a prefix-free of stop */
};

static void on_token(void *user, int32_t id, const char *text, size_t len)
{
    struct seen *s = user;
    if (id >= 0 && s->n_ids < 64)
        s->ids[s->n_ids++] = id;
    if (len && s->n_text + len < sizeof s->text) {
        memcpy(s->text + s->n_text, text, len);
        s->n_text += len;
        s->text[s->n_text] = '\0';
    }
    if (s->stop && strstr(s->text, s->stop))
        s->held_ok = false;
}

static bool should_stop(void *user)
{
    struct seen *s = user;
    return s->stop_after >= 0 && s->n_ids >= s->stop_after;
}

static elm_ctx *new_ctx(int n_ctx)
{
    char err[ELM_ERR_MAX];
    struct elm_ctx_params cp = elm_ctx_default_params();
    cp.n_ctx = n_ctx;
    cp.n_threads = 1;
    elm_ctx *c = NULL;
    if (elm_ctx_new(model, &cp, &c, err, sizeof err) != ELM_OK)
        bail_out("elm_ctx_new: %s", err);
    return c;
}

/* A ctx holding the prompt, and the logits after it. */
static elm_ctx *prefilled(int n_ctx, float *logits)
{
    elm_ctx *c = new_ctx(n_ctx);
    if (elm_decode(c, prompt, N_PROMPT, logits, 0) != ELM_OK)
        bail_out("prefill failed");
    return c;
}

static struct elm_generate_params params(struct seen *s, int max_tokens)
{
    struct elm_generate_params p = elm_generate_default_params();
    p.sampler.temperature = 0;
    p.sampler.repeat_penalty = 1.3f; /* the history (the cache) matters */
    p.max_tokens = max_tokens;
    p.ignore_eos = true;
    p.tokenizer = elm_model_tokenizer(model);
    p.on_token = on_token;
    p.should_stop = should_stop;
    p.user = s;
    memset(s, 0, sizeof *s);
    s->stop_after = -1;
    s->held_ok = true;
    return p;
}

static struct seen run(struct elm_generate_params *p, struct seen *s, int n_ctx,
                       struct elm_generate_result *res, elm_status *st, int *n_past)
{
    float *logits = malloc((size_t)n_vocab * sizeof *logits);
    elm_ctx *c = prefilled(n_ctx, logits);
    char err[ELM_ERR_MAX];
    *st = elm_generate(c, logits, p, res, err, sizeof err);
    *n_past = elm_ctx_n_past(c);
    elm_ctx_free(c);
    free(logits);
    return *s;
}

/* The loop written out by hand: decode, greedy with the penalty, feed. */
static void reference_ids(int32_t *ids, int n)
{
    float *logits = malloc((size_t)n_vocab * sizeof *logits);
    elm_ctx *c = prefilled(0, logits);
    struct elm_sampler_params sp = elm_sampler_default_params();
    sp.temperature = 0;
    sp.repeat_penalty = 1.3f;
    elm_sampler *smp = elm_sampler_new(&sp);
    for (int i = 0; i < n; i++) {
        ids[i] = elm_sampler_sample(smp, logits, n_vocab, elm_ctx_tokens(c), elm_ctx_n_past(c));
        if (i + 1 < n && elm_decode(c, &ids[i], 1, logits, 0) != ELM_OK)
            bail_out("decode failed");
    }
    elm_sampler_free(smp);
    elm_ctx_free(c);
    free(logits);
}

static void test_ids_and_logits(void)
{
    int32_t want[N_GEN];
    reference_ids(want, N_GEN);
    struct seen s;
    struct elm_generate_params p = params(&s, N_GEN);
    struct elm_generate_result res;
    float *logits = malloc((size_t)n_vocab * sizeof *logits);
    elm_ctx *c = prefilled(0, logits);
    char err[ELM_ERR_MAX];
    elm_status st = elm_generate(c, logits, &p, &res, err, sizeof err);
    ok(st == ELM_OK && res.reason == ELM_STOP_LENGTH && res.n_generated == N_GEN,
       "max_tokens: ELM_STOP_LENGTH after %d ids", res.n_generated);
    ok(s.n_ids == N_GEN && memcmp(s.ids, want, sizeof want) == 0,
       "the ids equal a hand-written decode + greedy loop (repetition penalty on the cache)");
    is_int(elm_ctx_n_past(c), N_PROMPT + N_GEN - 1, "the last id is reported, not fed");

    /* The logits left are the cache's last token's: a fresh ctx fed the
     * same tokens one path alike gives the same bits. */
    float *again = malloc((size_t)n_vocab * sizeof *again);
    elm_ctx *f = prefilled(0, again);
    for (int i = 0; i < N_GEN - 1; i++)
        elm_decode(f, &want[i], 1, again, 0);
    ok(memcmp(logits, again, (size_t)n_vocab * sizeof *again) == 0,
       "the logits left are those of the cache's last token (bit-identical)");

    /* ... so a second call goes on as if the loop had not stopped. */
    struct seen s2;
    struct elm_generate_params p2 = params(&s2, 1);
    elm_generate(c, logits, &p2, &res, err, sizeof err);
    ok(s2.n_ids == 1 && s2.ids[0] == want[N_GEN - 1],
       "a second call on those logits samples the same next id");

    char *text = NULL;
    size_t len = 0;
    elm_detokenize(elm_model_tokenizer(model), want, N_GEN, &text, &len);
    ok(text && len == s.n_text && memcmp(text, s.text, len) == 0,
       "the text reported is elm_detokenize of the ids (%zu bytes)", len);
    free(text);
    free(again);
    elm_ctx_free(f);
    elm_ctx_free(c);
    free(logits);
}

/* A grammar that allows few ids at each step: every draw is over them
 * alone and each plain step's LM head computes only their rows.  The ids
 * equal a loop written out with every logit and the full mask; the logits
 * left are whole again, bit for bit those of that loop. */
static void test_few_rows(void)
{
    static const char gbnf[] = "root ::= [a-e]+\n";
    char err[ELM_ERR_MAX];
    elm_grammar *g = NULL;
    if (elm_grammar_parse(gbnf, sizeof gbnf - 1, &g, err, sizeof err) != ELM_OK)
        bail_out("grammar: %s", err);
    const elm_tokenizer *tok = elm_model_tokenizer(model);

    struct seen s;
    struct elm_generate_params p = params(&s, N_GEN);
    p.grammar = g;
    struct elm_generate_result res;
    float *logits = malloc((size_t)n_vocab * sizeof *logits);
    elm_ctx *c = prefilled(0, logits);
    elm_status st = elm_generate(c, logits, &p, &res, err, sizeof err);
    ok(st == ELM_OK && res.n_generated == N_GEN, "[a-e]+: %d ids (%s)", res.n_generated,
       st == ELM_OK ? "ok" : err);
    is_int(res.grammar.few, N_GEN, "each drawn among the few ids allowed");

    /* the loop by hand: every logit, the full mask, greedy over it */
    float *ref = malloc((size_t)n_vocab * sizeof *ref);
    float *scratch = malloc((size_t)n_vocab * sizeof *scratch);
    elm_ctx *r = prefilled(0, ref);
    struct gtokens *t = gtokens_new(g, tok, NULL, 0);
    struct elm_sampler_params sp = elm_sampler_default_params();
    sp.temperature = 0;
    sp.repeat_penalty = 1.3f;
    elm_sampler *smp = elm_sampler_new(&sp);
    int32_t want[N_GEN];
    int min_allowed = n_vocab, max_allowed = 0;
    for (int i = 0; i < N_GEN; i++) {
        memcpy(scratch, ref, (size_t)n_vocab * sizeof *ref);
        elm_sampler_penalize(smp, scratch, n_vocab, elm_ctx_tokens(r), elm_ctx_n_past(r));
        int n = 0;
        const uint32_t *mask = gtokens_mask(t, &n);
        if (!mask)
            bail_out("gtokens_mask failed");
        min_allowed = n < min_allowed ? n : min_allowed;
        max_allowed = n > max_allowed ? n : max_allowed;
        want[i] = elm_sampler_draw(smp, scratch, n_vocab, mask);
        gtokens_take(t, want[i]);
        if (i + 1 < N_GEN && elm_decode(r, &want[i], 1, ref, 0) != ELM_OK)
            bail_out("decode failed");
    }
    diag("ids allowed at a step: %d to %d of %d", min_allowed, max_allowed, n_vocab);
    ok(min_allowed > 1 && max_allowed < n_vocab / 4, "a choice at each step, among few ids");
    ok(s.n_ids == N_GEN && memcmp(s.ids, want, sizeof want) == 0,
       "the ids equal the loop with every logit and the full mask");
    ok(memcmp(logits, ref, (size_t)n_vocab * sizeof *ref) == 0,
       "the logits left are whole: those of the cache's last token, bit-identical");
    elm_sampler_free(smp);
    gtokens_free(t);
    elm_ctx_free(r);
    elm_ctx_free(c);
    free(scratch);
    free(ref);
    free(logits);
    elm_grammar_free(g);
}

/* Prompt lookup: with drafts from a source that repeats the reply (as a
 * retry gives it), the ids, the text and the cache are those of a run
 * without it; greedy and sampled (a draft is kept only when the model's
 * own sample equals it, so the sampler's stream is used the same way);
 * a cancel and a stop string inside a verified draft leave the cache as
 * without drafts. */
static void test_lookup(const char *type)
{
    enum { N = 48 };
    struct seen a, b;
    struct elm_generate_result ra, rb;
    elm_status st;
    int past_a, past_b;
    /* and under a grammar that allows few ids a step: their draws, and the
     * plain steps' LM head of their rows only, are those of drafts
     * verified on every logit */
    static const char gbnf[] = "root ::= [a-e]+\n";
    char err[ELM_ERR_MAX];
    elm_grammar *g = NULL;
    if (elm_grammar_parse(gbnf, sizeof gbnf - 1, &g, err, sizeof err) != ELM_OK)
        bail_out("grammar: %s", err);
    for (int round = 0; round < 4; round++) {
        int sampled = round & 1;
        const elm_grammar *grammar = round >= 2 ? g : NULL;
        struct elm_generate_params pa = params(&a, N);
        pa.lookup = false;
        pa.grammar = grammar;
        if (sampled) {
            pa.sampler.temperature = 0.9f;
            pa.sampler.seed = 5;
        }
        run(&pa, &a, 0, &ra, &st, &past_a);
        /* the source: the prompt's end and the reply, as a retry gives it */
        int32_t src[N + 8];
        memcpy(src, prompt + N_PROMPT - 8, 8 * sizeof *src);
        memcpy(src + 8, a.ids, (size_t)a.n_ids * sizeof *src);
        struct elm_generate_params pb = params(&b, N);
        pb.lookup_extra = src;
        pb.n_lookup_extra = 8 + a.n_ids;
        pb.grammar = grammar;
        if (sampled) {
            pb.sampler.temperature = 0.9f;
            pb.sampler.seed = 5;
        }
        run(&pb, &b, 0, &rb, &st, &past_b);
        char how[96];
        snprintf(how, sizeof how, "%s, %s%s", type,
                 sampled ? "sampled (temperature 0.9, seed 5)" : "greedy",
                 grammar ? ", grammar [a-e]+" : "");
        ok(a.n_ids == N && b.n_ids == N && memcmp(a.ids, b.ids, sizeof a.ids[0] * N) == 0 &&
               a.n_text == b.n_text && memcmp(a.text, b.text, a.n_text) == 0,
           "%s: the same %d ids and text with lookup drafts", how, N);
        ok(rb.lookup.accepted > N / 2 && rb.lookup.passes < N / 2,
           "%s: the drafts were used: %d of %d accepted in %d passes", how, rb.lookup.accepted,
           rb.lookup.drafted, rb.lookup.passes);
        is_int(past_b, past_a, "%s: the cache ends where it does without them", how);
        if (grammar)
            /* a pass also draws after its last draft: one more draw than ids */
            ok(ra.grammar.few == N && rb.grammar.few >= N,
               "%s: every id drawn among the few allowed (%ld, %ld)", how, ra.grammar.few,
               rb.grammar.few);
    }
    elm_grammar_free(g);
    /* A cancel after 11 ids: the drafts verified beyond them leave the cache. */
    struct elm_generate_params pa = params(&a, N);
    pa.lookup = false;
    run(&pa, &a, 0, &ra, &st, &past_a);
    int32_t src[N + 8];
    memcpy(src, prompt + N_PROMPT - 8, 8 * sizeof *src);
    memcpy(src + 8, a.ids, (size_t)a.n_ids * sizeof *src);
    struct elm_generate_params pc = params(&b, N);
    pc.lookup_extra = src;
    pc.n_lookup_extra = 8 + a.n_ids;
    b.stop_after = 11;
    run(&pc, &b, 0, &rb, &st, &past_b);
    ok(rb.reason == ELM_STOP_CANCELLED && b.n_ids == 11 && past_b == N_PROMPT + 11,
       "a cancel inside a verified draft: %d ids, the cache holds the prompt and them (%d)",
       b.n_ids, past_b);
    /* max_tokens inside a draft: the last id is reported, not fed. */
    struct elm_generate_params pd = params(&b, 13);
    pd.lookup_extra = src;
    pd.n_lookup_extra = 8 + a.n_ids;
    run(&pd, &b, 0, &rb, &st, &past_b);
    ok(rb.reason == ELM_STOP_LENGTH && b.n_ids == 13 && memcmp(b.ids, a.ids, 13 * sizeof *b.ids) == 0 &&
           past_b == N_PROMPT + 12,
       "max_tokens inside a verified draft: 13 ids, 12 fed (%d)", past_b - N_PROMPT);
}

/* A draft model: the same model (everything accepted) and another one of
 * the same vocabulary (random weights of another seed: little accepted);
 * greedy and sampled, the ids and the cache are the target's own, as
 * without a draft; the draft's cache follows the sequence. */
static void test_draft(elm_model *other, elm_model *foreign)
{
    enum { N = 40 };
    char err[ELM_ERR_MAX];
    ok(elm_model_can_draft(model, other, err, sizeof err), "a model of the same vocabulary can draft");
    ok(foreign && !elm_model_can_draft(model, foreign, err, sizeof err) &&
           strstr(err, "a vocabulary of 1024 tokens, not 32000"),
       "another vocabulary cannot: %s", err);
    elm_model *drafts[2] = {model, other};
    for (int d = 0; d < 2; d++)
        for (int sampled = 0; sampled < 2; sampled++) {
            struct seen a, b;
            struct elm_generate_result ra, rb;
            elm_status st;
            int past_a, past_b;
            struct elm_generate_params pa = params(&a, N);
            pa.lookup = false;
            pa.sampler.repeat_penalty = 1.0f;
            if (sampled)
                pa.sampler.temperature = 0.8f, pa.sampler.seed = 11;
            run(&pa, &a, 0, &ra, &st, &past_a);
            char derr[ELM_ERR_MAX];
            struct elm_ctx_params cp = elm_ctx_default_params();
            cp.n_threads = 1;
            elm_ctx *dc = NULL;
            if (elm_ctx_new(drafts[d], &cp, &dc, derr, sizeof derr) != ELM_OK)
                bail_out("draft ctx: %s", derr);
            struct elm_generate_params pb = pa;
            struct seen *sb = &b;
            memset(sb, 0, sizeof *sb);
            b.stop_after = -1;
            b.held_ok = true;
            pb.user = &b;
            pb.draft = dc;
            /* the cost rule would stop the self-draft after one pass: many
             * passes are what this checks (the draft's cache following) */
            pb.draft_k = 4;
            run(&pb, &b, 0, &rb, &st, &past_b);
            const char *who = d ? "another model drafting" : "the model drafting for itself";
            const char *how = sampled ? "sampled" : "greedy";
            ok(a.n_ids == N && b.n_ids == N && memcmp(a.ids, b.ids, N * sizeof *a.ids) == 0 &&
                   past_a == past_b,
               "%s, %s: the same %d ids and cache as without a draft", who, how, N);
            if (d == 0 && !sampled)
                ok(rb.draft.passes > 2 && rb.draft.accepted == rb.draft.drafted,
                   "%s, greedy: every drafted id accepted (%d in %d passes)", who,
                   rb.draft.accepted, rb.draft.passes);
            else
                diag("%s, %s: %d of %d drafted ids accepted in %d passes%s", who, how,
                     rb.draft.accepted, rb.draft.drafted, rb.draft.passes,
                     rb.draft.turned_off ? ", then off" : "");
            if (d == 0 && !sampled) {
                /* with a repetition penalty the draft picks as the target's
                 * sampler does (draft.h): a self-draft keeps everything */
                struct elm_generate_params pp = pa;
                pp.sampler.repeat_penalty = 1.5f;
                pp.sampler.repeat_last_n = 64;
                memset(&a, 0, sizeof a);
                a.stop_after = -1;
                a.held_ok = true;
                run(&pp, &a, 0, &ra, &st, &past_a);
                memset(sb, 0, sizeof *sb);
                b.stop_after = -1;
                b.held_ok = true;
                struct elm_generate_params pq = pp;
                pq.user = &b;
                pq.draft = dc;
                pq.draft_k = 4;
                run(&pq, &b, 0, &rb, &st, &past_b);
                ok(b.n_ids == N && memcmp(a.ids, b.ids, N * sizeof *a.ids) == 0 &&
                       rb.draft.passes > 4 && rb.draft.accepted == rb.draft.drafted,
                   "%s, repetition penalty 1.5: the same ids, every drafted id kept (%d of %d in "
                   "%d passes)", who, rb.draft.accepted, rb.draft.drafted, rb.draft.passes);
            }
            if (d == 1 && !sampled) {
                /* fixed drafts of 3 (bench --spec -k 3): the same ids, every
                 * pass 3 drafted ids, the profile adding up to the totals */
                memset(sb, 0, sizeof *sb);
                b.stop_after = -1;
                b.held_ok = true;
                pb.draft_k = 3;
                elm_ctx_truncate(dc, 0);
                run(&pb, &b, 0, &rb, &st, &past_b);
                const struct elm_draft_profile *pr = &rb.draft_profile;
                int kept = 0;
                for (int i = 0; i < ELM_DRAFT_MAX; i++)
                    kept += pr->kept[i];
                ok(b.n_ids == N && memcmp(a.ids, b.ids, N * sizeof *a.ids) == 0 &&
                       past_a == past_b && !rb.draft.turned_off && rb.draft.passes > 4 &&
                       rb.draft.drafted == 3 * rb.draft.passes &&
                       pr->reached[0] == rb.draft.passes && pr->reached[3] == 0 &&
                       kept == rb.draft.accepted,
                   "%s, drafts of 3: the same ids, %d passes of 3 never stopped, the profile "
                   "adds up (%d/%d %d/%d %d/%d kept)", who, rb.draft.passes, pr->kept[0],
                   pr->reached[0], pr->kept[1], pr->reached[1], pr->kept[2], pr->reached[2]);
            }
            elm_ctx_free(dc);
        }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sampled with drafts, each id is distributed as the target's own
 * conditional: over many seeds, every id after the two plain steps (each
 * out of a verifying pass: a kept draft or the sample that replaced one)
 * gets its randomized probability integral transform under the target's
 * softmax at temperature T given the actual prefix (the ids ordered by
 * probability); those are independent uniforms exactly when the ids follow
 * the target, whatever the drafts.
 * Kolmogorov-Smirnov against uniform, alpha 0.001.  The model drafts for
 * itself with drafts of 3 (its greedy guess is often kept at T = 0.6). */
static void test_draft_distribution(void)
{
    enum { RUNS = 300, GEN = 8, FIRST = 2, SEQ = N_PROMPT + GEN };
    const float T = 0.6f;
    double *u = malloc(sizeof(double) * RUNS * (GEN - FIRST));
    float *logits = malloc((size_t)n_vocab * sizeof *logits);
    float *rows = malloc((size_t)SEQ * (size_t)n_vocab * sizeof *rows);
    char err[ELM_ERR_MAX];
    struct elm_ctx_params cp = elm_ctx_default_params();
    cp.n_threads = 1;
    elm_ctx *dc = NULL;
    if (elm_ctx_new(model, &cp, &dc, err, sizeof err) != ELM_OK)
        bail_out("draft ctx: %s", err);
    int n = 0, kept = 0, drafted = 0;
    uint64_t rng = 0x2545f4914f6cdd1dull;
    for (int run = 0; run < RUNS; run++) {
        struct seen s;
        struct elm_generate_params p = params(&s, GEN);
        p.lookup = false;
        p.sampler.temperature = T;
        p.sampler.top_k = 0;
        p.sampler.top_p = 1.0f;
        p.sampler.min_p = 0.0f;
        p.sampler.repeat_penalty = 1.0f;
        p.sampler.seed = 1000 + (uint64_t)run;
        p.draft = dc;
        p.draft_k = 3;
        elm_ctx *c = prefilled(0, logits);
        struct elm_generate_result res;
        if (elm_generate(c, logits, &p, &res, err, sizeof err) != ELM_OK || s.n_ids != GEN)
            bail_out("generate: %s", err);
        kept += res.draft.accepted;
        drafted += res.draft.drafted;
        /* the target's logits at every position of the actual sequence */
        int32_t seq[SEQ];
        memcpy(seq, prompt, sizeof prompt);
        memcpy(seq + N_PROMPT, s.ids, GEN * sizeof *s.ids);
        elm_ctx_truncate(c, 0);
        if (elm_decode(c, seq, SEQ - 1, rows, ELM_DECODE_ALL_LOGITS) != ELM_OK)
            bail_out("decode failed");
        for (int i = FIRST; i < GEN; i++) {
            const float *row = rows + (size_t)(N_PROMPT - 1 + i) * (size_t)n_vocab;
            float mx = row[0];
            for (int v = 1; v < n_vocab; v++)
                mx = row[v] > mx ? row[v] : mx;
            /* the ids in order of probability, most likely first (ties by
             * id): a draft kept too often shows as too many small values */
            const int32_t id = s.ids[i];
            double z = 0, below = 0, at = 0;
            for (int v = 0; v < n_vocab; v++) {
                double e = exp(((double)row[v] - mx) / T);
                z += e;
                if (row[v] > row[id] || (row[v] == row[id] && v < id))
                    below += e;
                else if (v == id)
                    at = e;
            }
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            double r = (double)(rng >> 11) / 9007199254740992.0;
            u[n++] = (below + r * at) / z;
        }
        elm_ctx_free(c);
    }
    qsort(u, (size_t)n, sizeof *u, cmp_double);
    double d = 0;
    for (int i = 0; i < n; i++)
        d = fmax(d, fmax(fabs(u[i] - (double)i / n), fabs((double)(i + 1) / n - u[i])));
    double crit = 1.95 / sqrt((double)n);
    ok(kept > drafted / 10 && kept < drafted && d < crit,
       "sampled at T %.1f with drafts (%d of %d kept), %d ids follow the target's conditionals: "
       "KS distance %.4f < %.4f (alpha 0.001)", (double)T, kept, drafted, n, d, crit);
    elm_ctx_free(dc);
    free(rows);
    free(logits);
    free(u);
}

/* When drafting stops, on made-up timings (the rules, not this machine's
 * clock): plain steps of 1 ms. */
static void test_draft_rules(void)
{
    struct elm_lookup lk;
    elm_lookup_init(&lk);
    elm_lookup_plain(&lk, 1e-3);
    elm_lookup_plain(&lk, 1e-3);
    /* a draft step as dear as the model's: even 10 of 10 accepted would
     * not pay ((10 x 1 + 1.5) / 11 ms a token) */
    elm_lookup_draft_costs(&lk, 4, 3e-3, 1.5e-3);
    ok(lk.off, "a draft as slow as the model stops after one pass");
    elm_lookup_init(&lk);
    elm_lookup_plain(&lk, 1e-3);
    elm_lookup_plain(&lk, 1e-3);
    /* a tenth of the model's cost: (10 x 0.1 + 1.3) / 11 = 0.21 ms at best */
    elm_lookup_draft_costs(&lk, 4, 0.3e-3, 1.3e-3);
    elm_lookup_pass(&lk, 4, 4, 1.6e-3);
    ok(!lk.off && lk.k == 8, "a cheap draft goes on, its next draft longer (k %d)", lk.k);
    /* nothing accepted for eight (cheap) passes: off whatever the clock says */
    elm_lookup_init(&lk);
    elm_lookup_plain(&lk, 1e-3);
    elm_lookup_plain(&lk, 1e-3);
    for (int i = 0; i < 7; i++)
        elm_lookup_pass(&lk, lk.k, 0, 0.1e-3);
    bool on_at_7 = !lk.off;
    elm_lookup_pass(&lk, lk.k, 0, 0.1e-3);
    ok(on_at_7 && lk.off && lk.k == 1, "eight passes with nothing accepted stop it (k down to %d)",
       lk.k);
    /* passes dearer per token than plain steps: off after four */
    elm_lookup_init(&lk);
    elm_lookup_plain(&lk, 1e-3);
    elm_lookup_plain(&lk, 1e-3);
    int passes = 0;
    while (!lk.off && passes < 20) {
        elm_lookup_pass(&lk, 4, 1, 2.5e-3); /* 2 tokens for 2.5 ms */
        passes++;
    }
    ok(lk.off && passes == 4, "passes dearer than plain steps stop it after %d", passes);
    /* a draft model: drafts of 2 first, off after two (cheap) passes with nothing kept */
    elm_lookup_init_model(&lk);
    elm_lookup_plain(&lk, 1e-3);
    elm_lookup_plain(&lk, 1e-3);
    int first_k = lk.k;
    elm_lookup_pass(&lk, lk.k, 0, 0.1e-3);
    bool on_at_1 = !lk.off;
    elm_lookup_pass(&lk, lk.k, 0, 0.1e-3);
    ok(first_k == 2 && on_at_1 && lk.off,
       "a draft model starts at k = %d and stops after two passes with nothing kept", first_k);
    /* a fixed k (bench --spec -k): neither the clocks nor misses change it */
    elm_lookup_init_model(&lk);
    elm_lookup_fix(&lk, 3);
    elm_lookup_plain(&lk, 1e-3);
    elm_lookup_plain(&lk, 1e-3);
    elm_lookup_draft_costs(&lk, 3, 3e-3, 5e-3);
    for (int i = 0; i < 10; i++)
        elm_lookup_pass(&lk, 3, 0, 9e-3);
    elm_lookup_pass(&lk, 3, 3, 1e-3);
    elm_lookup_pass(&lk, 2, 1, 1e-3); /* a source with two ids left */
    ok(!lk.off && lk.k == 3, "a fixed k stays %d and on after dear passes with nothing kept",
       lk.k);
    /* the profile: depth 1 checked by all 12 passes, kept by 2; depth 2
     * reached by those 2, kept by 1 (the whole draft); depth 3 by 1 */
    struct elm_draft_profile pr = lk.profile;
    ok(pr.reached[0] == 12 && pr.kept[0] == 2 && pr.reached[1] == 2 && pr.kept[1] == 1 &&
           pr.reached[2] == 1 && pr.kept[2] == 1 && pr.reached[3] == 0,
       "the profile counts each depth reached and kept: %d/%d %d/%d %d/%d %d", pr.kept[0],
       pr.reached[0], pr.kept[1], pr.reached[1], pr.kept[2], pr.reached[2], pr.reached[3]);
}

/* A pass of 2..11 ids (what verifies a draft of up to ELM_LOOKUP_K_MAX)
 * gives each row the logits decoding the ids one at a time gives, to the
 * bit: a draft is kept exactly when plain decoding would have produced it. */
static void test_verify_bits(elm_model *m, const char *type)
{
    enum { MAX = ELM_LOOKUP_K_MAX + 1 };
    int nv = elm_model_get_info(m)->n_vocab;
    struct elm_ctx_params cp = elm_ctx_default_params();
    cp.n_ctx = 128;
    cp.n_threads = 1;
    float *one = malloc((size_t)nv * MAX * sizeof *one), *all = malloc((size_t)nv * MAX * sizeof *all);
    float *scratch = malloc((size_t)nv * sizeof *scratch);
    int32_t ids[MAX];
    for (int i = 0; i < MAX; i++)
        ids[i] = 100 + 37 * i;
    int worst_rows = 0, passes = 0;
    for (int n = 2; n <= MAX; n++) {
        char err[ELM_ERR_MAX];
        elm_ctx *a = NULL, *b = NULL;
        if (elm_ctx_new(m, &cp, &a, err, sizeof err) != ELM_OK ||
            elm_ctx_new(m, &cp, &b, err, sizeof err) != ELM_OK)
            bail_out("elm_ctx_new: %s", err);
        elm_decode(a, prompt, N_PROMPT, scratch, 0);
        elm_decode(b, prompt, N_PROMPT, scratch, 0);
        for (int i = 0; i < n; i++)
            elm_decode(a, &ids[i], 1, one + (size_t)i * nv, 0);
        if (elm_decode(b, ids, n, all, ELM_DECODE_ALL_LOGITS) != ELM_OK)
            bail_out("a batch of %d", n);
        int differ = 0;
        for (int i = 0; i < n; i++)
            differ += memcmp(one + (size_t)i * nv, all + (size_t)i * nv, (size_t)nv * sizeof *one) != 0;
        if (differ > worst_rows)
            worst_rows = differ;
        passes += differ == 0;
        elm_ctx_free(a);
        elm_ctx_free(b);
    }
    ok(passes == MAX - 1, "%s: passes of 2 to %d ids give every row decode's logits, bit for bit "
                          "(%d of %d passes; at worst %d rows differ)",
       type, MAX, passes, MAX - 1, worst_rows);
    free(one);
    free(all);
    free(scratch);
}

/* Cumulative text length after each id of a plain run. */
static void text_ends(const int32_t *ids, int n, size_t *ends)
{
    for (int i = 0; i < n; i++) {
        char *t = NULL;
        size_t len = 0;
        elm_detokenize(elm_model_tokenizer(model), ids, (size_t)i + 1, &t, &len);
        ends[i] = len;
        free(t);
    }
}

static void test_stop_strings(void)
{
    struct seen plain;
    struct elm_generate_params p = params(&plain, N_GEN);
    struct elm_generate_result res;
    elm_status st;
    int n_past;
    run(&p, &plain, 0, &res, &st, &n_past);
    size_t ends[N_GEN];
    text_ends(plain.ids, N_GEN, ends);

    /* A stop string that straddles the boundary between two ids' text, in
     * the middle of the reply. */
    int k = -1;
    for (int i = N_GEN / 2; i < N_GEN - 1 && k < 0; i++)
        if (ends[i] >= 2 && ends[i + 1] >= ends[i] + 2)
            k = i;
    if (!ok(k > 0, "the plain reply has a token boundary to stop across (id %d)", k))
        return;
    char stop[8];
    size_t at = ends[k] - 2;
    memcpy(stop, plain.text + at, 4);
    stop[4] = '\0';
    /* where it first occurs, and the id whose text completes it */
    const char *first = strstr(plain.text, stop);
    size_t cut = (size_t)(first - plain.text);
    int last = 0;
    while (ends[last] < cut + strlen(stop))
        last++;

    struct seen s;
    p = params(&s, N_GEN);
    const char *stops[] = {"\xff\xfe never", stop};
    p.stop_strings = stops;
    p.n_stop_strings = 2;
    s.stop = stop;
    run(&p, &s, 0, &res, &st, &n_past);
    ok(st == ELM_OK && res.reason == ELM_STOP_STRING && res.stop_string == stops[1],
       "ELM_STOP_STRING, naming the stop string matched");
    is_int(res.n_generated, last + 1, "it ends at the id whose text completes the stop string");
    ok(s.n_text == cut && memcmp(s.text, plain.text, cut) == 0 && s.held_ok,
       "exactly the text before it is reported, and never a byte of it (%zu bytes)", cut);
    is_int(n_past, N_PROMPT + last, "the cache holds every id before the last");

    /* What only begins like a stop string is held back, then released. */
    char tail[16];
    size_t tl = plain.n_text >= 2 ? 2 : plain.n_text;
    memcpy(tail, plain.text + plain.n_text - tl, tl);
    memcpy(tail + tl, "\x01!", 3);
    const char *tails[] = {tail};
    p = params(&s, N_GEN);
    p.stop_strings = tails;
    p.n_stop_strings = 1;
    run(&p, &s, 0, &res, &st, &n_past);
    ok(res.reason == ELM_STOP_LENGTH && s.n_text == plain.n_text &&
           memcmp(s.text, plain.text, plain.n_text) == 0,
       "a reply that ends like the start of a stop string gets its whole text at the end");

    /* Stop strings need text. */
    p = params(&s, N_GEN);
    p.stop_strings = stops;
    p.n_stop_strings = 2;
    p.tokenizer = NULL;
    run(&p, &s, 0, &res, &st, &n_past);
    ok(st == ELM_E_INVALID && res.reason == ELM_STOP_ERROR && s.n_ids == 0,
       "stop strings without a tokenizer: ELM_E_INVALID before sampling");
}

static void test_other_reasons(void)
{
    struct seen s;
    struct elm_generate_params p = params(&s, N_GEN);
    struct elm_generate_result res;
    elm_status st;
    int n_past;
    run(&p, &s, 0, &res, &st, &n_past);
    int32_t third = s.ids[2];
    int first_at = 0;
    while (s.ids[first_at] != third)
        first_at++;

    p = params(&s, N_GEN);
    p.stop_ids = &third;
    p.n_stop_ids = 1;
    run(&p, &s, 0, &res, &st, &n_past);
    ok(res.reason == ELM_STOP_ID && res.n_generated == first_at + 1 && s.ids[first_at] == third,
       "a stop id ends the reply where it is first sampled (id %d)", first_at + 1);

    p = params(&s, N_GEN);
    s.stop_after = 5;
    run(&p, &s, 0, &res, &st, &n_past);
    ok(st == ELM_OK && res.reason == ELM_STOP_CANCELLED && res.n_generated == 5 &&
           n_past == N_PROMPT + 5,
       "should_stop: ELM_STOP_CANCELLED before the 6th id, the 5 before it fed");

    p = params(&s, N_GEN);
    run(&p, &s, N_PROMPT + 3, &res, &st, &n_past);
    ok(st == ELM_OK && res.reason == ELM_STOP_CONTEXT_FULL && res.n_generated == 4 &&
           n_past == N_PROMPT + 3,
       "a full cache: ELM_STOP_CONTEXT_FULL with the cache full (%d ids)", res.n_generated);

    p = params(&s, 0);
    run(&p, &s, 0, &res, &st, &n_past);
    ok(st == ELM_E_INVALID && res.reason == ELM_STOP_ERROR, "max_tokens 0 is refused");

    /* EOS ends the reply unless ignored. */
    p = params(&s, N_GEN);
    p.ignore_eos = false;
    int32_t eos = elm_model_get_info(model)->eos_id;
    p.stop_ids = NULL;
    run(&p, &s, 0, &res, &st, &n_past);
    bool has_eos = false;
    for (int i = 0; i < s.n_ids; i++)
        has_eos |= s.ids[i] == eos;
    ok(res.reason == ELM_STOP_EOS ? s.ids[s.n_ids - 1] == eos : !has_eos,
       "EOS ends the reply (or never came)");
}

/* elm_model_params.tokenizer: the model shares the caller's tokenizer (no
 * second copy), and each holder may free its reference in any order. */
static void test_shared_tokenizer(const char *dir)
{
    char err[ELM_ERR_MAX];
    elm_tokenizer *tok = NULL;
    if (!ok(elm_tokenizer_load_for_model(dir, &tok, err, sizeof err) == ELM_OK,
            "the model's tokenizer, loaded by the caller"))
        return;
    struct elm_model_params mp = elm_model_default_params();
    mp.tokenizer = tok;
    elm_model *m = NULL;
    ok(elm_model_load(dir, &mp, &m, err, sizeof err) == ELM_OK && elm_model_tokenizer(m) == tok,
       "the model uses it instead of loading its own");
    elm_tokenizer_free(tok); /* the caller's reference */
    int32_t *ids = NULL;
    size_t n = 0;
    const elm_tokenizer *mt = m ? elm_model_tokenizer(m) : NULL;
    ok(mt && elm_tokenize(mt, "hello world", 11, true, &ids, &n) == ELM_OK && n > 1,
       "it outlives the caller's reference (%zu ids)", n);
    free(ids);
    elm_model_free(m);
    elm_tokenizer *a = NULL;
    elm_tokenizer_load_for_model(dir, &a, err, sizeof err);
    ok(a && elm_tokenizer_share(a) == a, "elm_tokenizer_share gives the same tokenizer");
    elm_tokenizer_free(a);
    ok(a && elm_tokenizer_n_vocab(a) == n_vocab, "one free of two leaves it usable");
    elm_tokenizer_free(a);
}

int main(void)
{
    char dir[4096];
    if (!tap_gen_checkpoint("--preset default", dir,
                            sizeof dir, "default"))
        skip_all("tests/lib/gen-checkpoint is not built");
    char err[ELM_ERR_MAX];
    if (elm_model_load(dir, NULL, &model, err, sizeof err) != ELM_OK)
        bail_out("%s", err);
    if (!elm_model_tokenizer(model))
        bail_out("the generated model has no tokenizer");
    n_vocab = elm_model_get_info(model)->n_vocab;
    plan_lazy();
    test_ids_and_logits();
    test_few_rows();
    test_stop_strings();
    test_other_reasons();
    test_lookup("f32");
    test_verify_bits(model, "f32");
    {
        char dir16[4096];
        elm_model *bf16 = NULL;
        if (tap_gen_checkpoint("--preset default --dtype bf16", dir16, sizeof dir16, "bf16") &&
            elm_model_load(dir16, NULL, &bf16, err, sizeof err) == ELM_OK)
            test_verify_bits(bf16, "bf16");
        else
            ok(0, "a BF16 model: %s", err);
        elm_model_free(bf16);
    }
    /* Quantized: the verifying passes' sums are decode's bits only on the
     * row kernels (up to 11 tokens; the int8 GEMM from 12 rounds otherwise);
     * Q8_0 and Q4_K have several-token row kernels of their own */
    static const enum elm_dtype quants[] = {ELM_DTYPE_Q8_0, ELM_DTYPE_Q4_K};
    for (size_t qi = 0; qi < sizeof quants / sizeof quants[0]; qi++) {
        const char *name = elm_dtype_name(quants[qi]);
        char qpath[4096];
        snprintf(qpath, sizeof qpath, "%s/default-%s.gguf", tap_tmpdir(), name);
        struct elm_quantize_params qp = elm_quantize_default_params();
        qp.type = quants[qi];
        elm_model *f32 = model, *quant = NULL;
        if (elm_quantize(dir, qpath, &qp, err, sizeof err) != ELM_OK ||
            elm_model_load(qpath, NULL, &quant, err, sizeof err) != ELM_OK)
            bail_out("a %s copy: %s", name, err);
        model = quant;
        if (quants[qi] == ELM_DTYPE_Q8_0)
            test_lookup(name);
        test_verify_bits(quant, name);
        model = f32;
        elm_model_free(quant);
    }
    char dir_b[4096], dir_c[4096];
    elm_model *other = NULL, *foreign = NULL;
    if (tap_gen_checkpoint("--preset default --seed 9", dir_b, sizeof dir_b, "other") &&
        elm_model_load(dir_b, NULL, &other, err, sizeof err) == ELM_OK &&
        tap_gen_checkpoint("--preset micro", dir_c, sizeof dir_c, "micro")) {
        elm_model_load(dir_c, NULL, &foreign, err, sizeof err);
        test_draft(other, foreign);
    }
    test_draft_rules();
    test_draft_distribution();
    elm_model_free(other);
    elm_model_free(foreign);
    test_shared_tokenizer(dir);
    elm_model_free(model);
    return done_testing();
}
