/* bench_grammar.c: the cost of structured output (bench_grammar.h). */
#include "config.h"

#include "cli/bench_grammar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/stopwatch.h"
#include "src/base/diag.h"
#include "src/base/xalloc.h"

struct mode {
    const char *name;
    float temp;
    int top_k;
    float top_p;
};

struct tally {
    double seconds;
    long tokens;
};

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* One reply; its decode seconds, tokens added to *t, grammar times appended. */
static bool one_reply(elm_ctx *ctx, const int32_t *prompt, int n_prompt, float *logits,
                      const struct mode *m, int n_gen, const elm_tokenizer *tok,
                      const elm_grammar *g, uint64_t seed, struct tally *t, float *times,
                      int *n_times, struct elm_grammar_stats *gs)
{
    elm_ctx_truncate(ctx, 0);
    if (elm_decode(ctx, prompt, n_prompt, logits, 0) != ELM_OK) {
        cli_error("decode failed");
        return false;
    }
    struct elm_generate_params gp = elm_generate_default_params();
    gp.sampler.temperature = m->temp;
    gp.sampler.top_k = m->top_k;
    gp.sampler.top_p = m->top_p;
    gp.sampler.seed = seed;
    gp.max_tokens = n_gen;
    gp.tokenizer = tok;
    gp.lookup = false; /* the constraint's cost alone */
    gp.grammar = g;
    gp.ignore_eos = !g; /* without: always n_gen ids */
    gp.grammar_us = g ? times + *n_times : NULL;
    struct elm_generate_result res;
    char err[ELM_ERR_MAX];
    double t0 = wall_seconds();
    if (elm_generate(ctx, logits, &gp, &res, err, sizeof err) != ELM_OK) {
        cli_error("%s", err);
        return false;
    }
    t->seconds += wall_seconds() - t0;
    t->tokens += res.n_generated;
    if (g) {
        *n_times += res.grammar.n_times;
        gs->checks += res.grammar.checks;
        gs->masks += res.grammar.masks;
        gs->walks += res.grammar.walks;
        gs->few += res.grammar.few;
        gs->seconds += res.grammar.seconds;
        gs->complete = res.grammar.complete;
    }
    return true;
}

bool bench_grammar(elm_ctx *ctx, const elm_tokenizer *tok, const elm_grammar *grammar,
                   const char *name, int n_gen, int reps, float *logits, bool json)
{
    static const char text[] = "Answer in JSON: describe a user with a name, an age, a score, "
                               "whether they are active, a note and their kind of pet.";
    int32_t *prompt;
    size_t n_prompt;
    if (!tok) {
        cli_error("%s: the model has no tokenizer: no grammar to bench", name);
        return false;
    }
    if (elm_tokenize(tok, text, sizeof text - 1, true, &prompt, &n_prompt) != ELM_OK) {
        cli_error("cannot tokenize the bench prompt");
        return false;
    }
    static const struct mode modes[] = {
        {"greedy", 0.0f, 0, 1.0f},
        {"temp 1", 1.0f, 0, 1.0f},
        {"temp 0.8 top-k 40 top-p 0.95", 0.8f, 40, 0.95f},
    };
    float *times = x_reallocarray(NULL, (size_t)(reps + 1) * (size_t)n_gen, sizeof *times);
    bool good = true;
    if (!json)
        printf("\ngrammar: %s, replies of up to %d tokens, %d runs each way (after a warm-up)\n"
               "%-30s %9s %9s %7s %9s %8s %8s %8s %8s %7s %7s\n",
               name, n_gen, reps, "sampling", "plain t/s", "gram t/s", "cost", "gram us", "p50 us",
               "p99 us", "checks", "masks", "walks", "few");
    for (size_t k = 0; k < sizeof modes / sizeof *modes && good; k++) {
        const struct mode *m = &modes[k];
        struct tally plain = {0, 0}, con = {0, 0};
        struct elm_grammar_stats gs = {0};
        int n_times = 0, n_complete = 0; /* replies whose value was whole */
        for (int r = 0; r <= reps && good; r++) {
            struct tally p1 = {0, 0}, c1 = {0, 0};
            struct elm_grammar_stats g1 = {0};
            int nt = 0;
            /* alternate so that a slower moment of a loaded machine hits both */
            good = one_reply(ctx, prompt, (int)n_prompt, logits, m, n_gen, tok, NULL,
                             (uint64_t)r + 1, &p1, NULL, NULL, NULL) &&
                   one_reply(ctx, prompt, (int)n_prompt, logits, m, n_gen, tok, grammar,
                             (uint64_t)r + 1, &c1, times + n_times, &nt, &g1);
            if (r == 0)
                continue; /* the warm-up: the trie, the caches */
            plain.seconds += p1.seconds, plain.tokens += p1.tokens;
            con.seconds += c1.seconds, con.tokens += c1.tokens;
            gs.checks += g1.checks, gs.masks += g1.masks, gs.walks += g1.walks;
            gs.few += g1.few;
            gs.seconds += g1.seconds;
            n_complete += g1.complete;
            n_times += nt;
        }
        if (!good)
            break;
        double tps_plain = plain.tokens / plain.seconds, tps_con = con.tokens / con.seconds;
        qsort(times, (size_t)n_times, sizeof *times, cmp_float);
        double mean = n_times ? gs.seconds * 1e6 / n_times : 0;
        double p50 = n_times ? times[n_times / 2] : 0;
        double p99 = n_times ? times[(int)((n_times - 1) * 0.99)] : 0;
        double cost = 100.0 * (1.0 - tps_con / tps_plain);
        if (json)
            printf("{\"test\":\"grammar\",\"grammar\":\"%s\",\"sampling\":\"%s\",\"plain_tps\":%.2f,"
                   "\"grammar_tps\":%.2f,\"cost_pct\":%.2f,\"grammar_us_mean\":%.2f,"
                   "\"grammar_us_p50\":%.2f,\"grammar_us_p99\":%.2f,\"checks\":%ld,\"masks\":%ld,"
                   "\"walks\":%ld,\"few\":%ld,\"tokens\":%ld,\"complete\":%d}\n",
                   name, m->name, tps_plain, tps_con, cost, mean, p50, p99, gs.checks, gs.masks,
                   gs.walks, gs.few, con.tokens, n_complete);
        else
            printf("%-30s %9.2f %9.2f %6.1f%% %9.1f %8.1f %8.1f %8ld %8ld %7ld %7ld\n", m->name,
                   tps_plain, tps_con, cost, mean, p50, p99, gs.checks, gs.masks, gs.walks,
                   gs.few);
        fflush(stdout);
    }
    if (good && !json)
        printf("cost: how much slower the constrained decode is (tokens/s; plain replies are\n"
               "n tokens, constrained ones end where the value does).  gram us: time in the\n"
               "grammar per sampled token.  checks: single-id checks; masks: full masks (walks:\n"
               "of them, walks of the token trie; the rest came from the cache).  few: tokens\n"
               "where few ids were allowed (drawn over them alone; a plain step's LM head\n"
               "computed only their rows, so a constrained decode can be the faster one).\n");
    free(times);
    free(prompt);
    return good;
}
