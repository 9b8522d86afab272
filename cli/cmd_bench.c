/* cmd_bench.c: `elmchat bench`: prefill and decode speed, like llama-bench's
 * pp (one batch of -p tokens) and tg (-n single-token decode steps from an
 * empty cache) tests.  Each test runs once untimed, then -r timed times.
 * Against the machine's limits: tg against the read bandwidth, probed
 * around the tg runs (elm_bw_probe_*); pp's matrix products (the engine's
 * phase timing, elm_ctx_set_profiling) against BLIS sgemm on the same
 * shapes (elm_blis_reference). */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench_chat.h"
#include "cli/bench_grammar.h"
#include "cli/grammar_option.h"
#include "cli/bench_spec.h"
#include "cli/json_print.h"
#include "cli/option_loop.h"
#include "engine/elm_bench.h"
#include "cli/commands.h"
#include "src/base/options.h"
#include "cli/model_open.h"
#include "cli/stopwatch.h"
#include "src/base/xalloc.h"

static void help(void)
{
    printf("Usage: elmchat bench [-m MODEL] [-p N] [-n N] [-t THREADS] [-r REPS] [--json]\n"
           "                     [--profile] [--no-bandwidth] [--no-blis] [--exact] [--retry]\n"
           "                     [--verify] [--draft MODEL]\n"
           "                     [--grammar FILE | --json-schema FILE|JSON]\n"
           "       elmchat bench --spec FILE [options]  chat prompts with drafts (add --help)\n"
           "       elmchat bench --chat [options]       a conversation's turns (add --help)\n"
           "Measure prompt processing (ppN: one batch of N tokens) and text generation\n"
           "(tgN: N decode steps of one token each, from an empty cache) in tokens per\n"
           "second, as llama-bench does.  Each test runs once to warm up, then REPS times.\n"
           "\n"
           "Decode reads every weight once a token: tg rows show the weight bytes read\n"
           "per second and their share of this machine's read bandwidth (the roofline),\n"
           "measured with the same threads before, between and after the tg runs (median\n"
           "of 7 passes over 256 MiB each time); the footer gives the value used and its\n"
           "spread.  pp rows show the GFLOPS of the prefill's matrix products and of BLIS\n"
           "sgemm on the same shapes (M = the prompt's tokens, at most 512 a batch; the\n"
           "model's layers; same threads; one shot, ~1 s at most), and our share of BLIS.\n"
           "\n"
           "  -m, --model MODEL     model folder or name (default: guide-small-instruct)\n"
           "  -p, --n-prompt N      prompt tokens (default 512; 0 skips the pp test)\n"
           "  -n, --n-gen N         generated tokens (default 128; 0 skips the tg test)\n"
           "  -t, --threads N       compute threads (default: all cores)\n"
           "  -r, --repetitions N   timed runs per test (default 5)\n"
           "      --json            one JSON object per line and test, not a table\n"
           "      --profile         where the time goes: matrix products, attention and\n"
           "                        the rest (norms, RoPE, SwiGLU), for pp and tg\n"
           "      --kernels         print the compute kernels chosen for this CPU and exit\n"
           "      --no-bandwidth    skip the bandwidth measurement (no roofline)\n"
           "      --no-blis         skip the BLIS sgemm reference\n"
           "      --retry           also a greedy reply made again with the first one as\n"
           "                        prompt lookup's source (what /retry does): both\n"
           "                        timed, and the replies compared id for id\n"
           "      --draft MODEL     also greedy and sampled replies with MODEL drafting\n"
           "                        (speculative decoding), timed and compared id for id\n"
           "      --grammar FILE    also the cost of structured output: replies with and\n"
           "                        without the GBNF grammar (greedy, temperature 1, and\n"
           "                        temperature 0.8 with top-k 40 and top-p 0.95): decode\n"
           "                        tokens/s, the grammar's time per token (mean, p50,\n"
           "                        p99), single-id checks against full masks\n"
           "      --json-schema FILE|JSON  the same for a JSON schema\n"
           "      --verify          the cost of checking k = 1..12 drafted tokens in one\n"
           "                        pass, against one decode step\n"
           "      --exact           BF16 weights: f32 activations in the prefill (the\n"
           "                        default rounds them to bf16 on AVX512_BF16 CPUs)\n"
           "  -h, --help            display this help and exit\n"
           "\n"
           "Exit status: 0 ok, 1 runtime error, 2 usage error.\n");
}

/* One run; returns the seconds taken, or a negative value on error. */
static double run_once(elm_ctx *ctx, const int32_t *ids, int n_prompt, int n_gen, float *logits)
{
    elm_ctx_truncate(ctx, 0);
    double t0 = wall_seconds();
    elm_status st = ELM_OK;
    if (n_prompt > 0)
        st = elm_decode(ctx, ids, n_prompt, logits, 0);
    for (int i = 0; st == ELM_OK && i < n_gen; i++)
        st = elm_decode(ctx, &ids[i], 1, logits, 0);
    if (st != ELM_OK) {
        cli_error("decode failed: %s", elm_status_str(st));
        return -1.0;
    }
    return wall_seconds() - t0;
}

/* ------------------------------------------------ a retry, by lookup */

struct collect {
    int32_t *ids;
    int n, cap;
};

static void collect_id(void *user, int32_t id, const char *text, size_t len)
{
    (void)text, (void)len;
    struct collect *c = user;
    if (id >= 0 && c->n < c->cap)
        c->ids[c->n++] = id;
}

/* One reply of n ids after the prompt (with a draft model: draft); its
 * decode seconds, or < 0. */
static double reply_with(elm_ctx *ctx, const int32_t *prompt, int n_prompt, int n, float *logits,
                         bool lookup, const struct collect *extra, struct collect *out,
                         struct elm_generate_result *res, float temperature, elm_ctx *draft)
{
    elm_ctx_truncate(ctx, 0);
    if (elm_decode(ctx, prompt, n_prompt, logits, 0) != ELM_OK)
        return -1.0;
    struct elm_generate_params gp = elm_generate_default_params();
    gp.sampler.temperature = temperature;
    gp.sampler.seed = 7;
    gp.max_tokens = n;
    gp.ignore_eos = true;
    gp.lookup = lookup;
    gp.lookup_extra = extra ? extra->ids : NULL;
    gp.n_lookup_extra = extra ? extra->n : 0;
    gp.draft = draft;
    gp.on_token = collect_id;
    gp.user = out;
    out->n = 0;
    char err[ELM_ERR_MAX];
    double t0 = wall_seconds();
    if (elm_generate(ctx, logits, &gp, res, err, sizeof err) != ELM_OK)
        return -1.0;
    return wall_seconds() - t0;
}

/* reps + 1 pairs of replies to ids (the first pair a warm-up): plain
 * decoding into first, then with prompt lookup (its source the first reply
 * with the 8 ids before it, as /retry gives it, when retry_source) or the
 * draft into again; their times summed into *plain and *other, *same
 * cleared when any pair differs.  false when a reply failed. */
static bool paired_replies(elm_ctx *ctx, const int32_t *ids, int n_prompt, int n_gen,
                           float *logits, int reps, float temp, bool lookup, bool retry_source,
                           elm_ctx *draft, struct collect *first, struct collect *again,
                           struct elm_generate_result *res, double *plain, double *other,
                           bool *same)
{
    for (int r = 0; r <= reps; r++) {
        double a = reply_with(ctx, ids, n_prompt, n_gen, logits, false, NULL, first, res, temp,
                              NULL);
        struct collect src = {NULL, 0, 0};
        if (retry_source) { /* src/conversation/conversation.c, remember_reply */
            src.ids = x_reallocarray(NULL, (size_t)n_gen + 8, sizeof(int32_t));
            memcpy(src.ids, ids + n_prompt - 8, 8 * sizeof(int32_t));
            memcpy(src.ids + 8, first->ids, (size_t)first->n * sizeof(int32_t));
            src.n = first->n + 8;
        }
        double b = reply_with(ctx, ids, n_prompt, n_gen, logits, lookup,
                              retry_source ? &src : NULL, again, res, temp, draft);
        free(src.ids);
        if (!(a > 0 && b > 0))
            return false;
        *same &= first->n == again->n &&
                 memcmp(first->ids, again->ids, (size_t)first->n * sizeof(int32_t)) == 0;
        if (r > 0)
            *plain += a, *other += b;
    }
    return true;
}

/* --draft MODEL: greedy and sampled replies with and without the draft
 * (no lookup in either), timed, compared id for id. */
static bool draft_bench(elm_ctx *ctx, elm_ctx *draft, const int32_t *ids, int n_gen, int reps,
                        float *logits)
{
    enum { PROMPT = 32 };
    struct collect a = {x_reallocarray(NULL, (size_t)n_gen, sizeof(int32_t)), 0, n_gen};
    struct collect b = {x_reallocarray(NULL, (size_t)n_gen, sizeof(int32_t)), 0, n_gen};
    bool good = true;
    for (int sampled = 0; sampled < 2 && good; sampled++) {
        double plain = 0.0, with = 0.0;
        struct elm_generate_result res = {0};
        bool same = true;
        float temp = sampled ? 1.0f : 0.0f;
        good = paired_replies(ctx, ids, PROMPT, n_gen, logits, reps, temp, false, false, draft,
                              &a, &b, &res, &plain, &with, &same);
        if (good)
            printf("%stg%d %s with the draft %s: plain %.1f t/s, drafted %.1f t/s: %.2fx; %d "
                   "passes, %d of %d drafted accepted (%.0f%%)%s; replies identical: %s\n",
                   sampled ? "" : "\n", n_gen, sampled ? "sampled (temperature 1)" : "greedy",
                   elm_model_get_info(elm_ctx_model(draft))->name, n_gen * reps / plain,
                   n_gen * reps / with, plain / with, res.draft.passes, res.draft.accepted,
                   res.draft.drafted,
                   res.draft.drafted ? 100.0 * res.draft.accepted / res.draft.drafted : 0.0,
                   res.draft.turned_off ? ", then off" : "", same ? "yes" : "NO");
        good &= same;
    }
    free(a.ids);
    free(b.ids);
    return good;
}

/* --retry: a greedy reply, then the same request again with that reply as
 * prompt lookup's extra source (what /retry gives the worker): both
 * timed, the replies compared id for id. */
static bool retry_bench(elm_ctx *ctx, const int32_t *ids, int n_gen, int reps, float *logits,
                        bool json)
{
    enum { PROMPT = 32 };
    struct collect first = {x_reallocarray(NULL, (size_t)n_gen, sizeof(int32_t)), 0, n_gen};
    struct collect again = {x_reallocarray(NULL, (size_t)n_gen, sizeof(int32_t)), 0, n_gen};
    double plain = 0.0, retry = 0.0;
    struct elm_generate_result res = {0};
    bool same = true;
    bool good = paired_replies(ctx, ids, PROMPT, n_gen, logits, reps, 0.0f, true, true, NULL,
                               &first, &again, &res, &plain, &retry, &same);
    if (good && json)
        printf("{\"test\": \"tg%d retry\", \"plain_ts\": %.2f, \"lookup_ts\": %.2f, "
               "\"speedup\": %.3f, \"passes\": %d, \"drafted\": %d, \"accepted\": %d, "
               "\"identical\": %s}\n",
               n_gen, n_gen * reps / plain, n_gen * reps / retry, plain / retry, res.lookup.passes,
               res.lookup.drafted, res.lookup.accepted, same ? "true" : "false");
    else if (good)
        printf("\ntg%d retry (greedy, the replaced reply as prompt lookup's source): plain "
               "%.1f t/s, lookup %.1f t/s: %.2fx; %d passes, %d of %d drafted accepted "
               "(%.2f tokens a pass); replies identical: %s\n",
               n_gen, n_gen * reps / plain, n_gen * reps / retry, plain / retry, res.lookup.passes,
               res.lookup.accepted, res.lookup.drafted,
               res.lookup.passes ? (double)(res.lookup.accepted + res.lookup.passes) / res.lookup.passes : 0.0,
               same ? "yes" : "NO");
    else
        cli_error("the retry benchmark failed");
    /* Sampled at temperature 1 with no source: what lookup costs when it
     * finds little to draft (it must turn itself off, >= 0.95x). */
    double off = 0.0, on = 0.0;
    struct elm_generate_result sres = {0};
    good = good && paired_replies(ctx, ids, PROMPT, n_gen, logits, reps, 1.0f, true, false, NULL,
                                  &first, &again, &sres, &off, &on, &same);
    if (good && json)
        printf("{\"test\": \"tg%d sampled\", \"plain_ts\": %.2f, \"lookup_ts\": %.2f, "
               "\"speedup\": %.3f, \"passes\": %d, \"drafted\": %d, \"accepted\": %d, "
               "\"turned_off\": %s, \"identical\": %s}\n",
               n_gen, n_gen * reps / off, n_gen * reps / on, off / on, sres.lookup.passes,
               sres.lookup.drafted, sres.lookup.accepted, sres.lookup.turned_off ? "true" : "false",
               same ? "true" : "false");
    else if (good)
        printf("tg%d sampled (temperature 1, seed 7, no source): plain %.1f t/s, lookup %.1f "
               "t/s: %.2fx; %d passes, %d of %d drafted accepted%s; replies identical: %s\n",
               n_gen, n_gen * reps / off, n_gen * reps / on, off / on, sres.lookup.passes,
               sres.lookup.accepted, sres.lookup.drafted, sres.lookup.turned_off ? ", then turned off" : "",
               same ? "yes" : "NO");
    free(first.ids);
    free(again.ids);
    return good && same;
}

/* --verify: what checking k drafted tokens costs, one batched pass of k + 1
 * tokens at a context of 256, against one decode step there (the weights
 * are read once either way; the attention and the per-token work grow). */
static bool verify_curve(elm_ctx *ctx, const int32_t *ids, int reps, float *logits, bool json)
{
    enum { AT = 256, K_MAX = 12 };
    elm_ctx_truncate(ctx, 0);
    if (elm_decode(ctx, ids, AT, logits, 0) != ELM_OK)
        return false;
    float *rows = x_reallocarray(NULL, (size_t)(K_MAX + 1) * (size_t)elm_model_get_info(
                                           elm_ctx_model(ctx))->n_vocab, sizeof *rows);
    double one = 0.0;
    if (!json)
        printf("\nverifying k drafted tokens (one pass of k + 1 at a context of %d) against "
               "one decode step:\n", AT);
    bool good = true;
    for (int k = 0; k <= K_MAX && good; k++) {
        double best = 1e9;
        for (int r = 0; r <= reps; r++) {
            elm_ctx_truncate(ctx, AT);
            double t0 = wall_seconds();
            good = elm_decode(ctx, ids + AT, k + 1, k ? rows : logits,
                              k ? ELM_DECODE_ALL_LOGITS : 0) == ELM_OK;
            double t = wall_seconds() - t0;
            if (r > 0 && t < best)
                best = t;
        }
        if (k == 0)
            one = best;
        if (json)
            printf("{\"test\": \"verify\", \"k\": %d, \"ms\": %.3f, \"of_one_step\": %.3f}\n",
                   k, best * 1e3, best / one);
        else
            printf("  k %2d: %7.2f ms, %.2fx one step; break-even at %.2f accepted\n", k,
                   best * 1e3, best / one, best / one - 1.0);
    }
    free(rows);
    return good;
}

/* ------------------------------------------------------- the roofline */

#define PROBE_MIB 256 /* far more than any L3 cache */
#define PASSES_PER_PROBE 7
#define MAX_PROBES 11 /* before the tg runs, between up to 9 of them, after */

/* The read-bandwidth probes taken around the tg runs: the machine is
 * shared, its bandwidth drifts, so one measurement first is not enough. */
struct bandwidth {
    elm_bw_probe *probe;
    int n_probes, n_pass;
    double median[MAX_PROBES];                 /* of each probe's passes */
    double pass[MAX_PROBES * PASSES_PER_PROBE]; /* bytes per second */
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
    double s[MAX_PROBES * PASSES_PER_PROBE];
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static void probe(struct bandwidth *bw)
{
    if (!bw || !bw->probe || bw->n_probes == MAX_PROBES)
        return;
    double *p = bw->pass + bw->n_pass;
    elm_bw_probe_run(bw->probe, PASSES_PER_PROBE, p);
    bw->n_pass += PASSES_PER_PROBE;
    bw->median[bw->n_probes++] = median(p, PASSES_PER_PROBE);
}

/* The value used (median of every pass), the drift (lowest and highest
 * probe median) and the noise (lowest and highest pass). */
struct bw_summary {
    double used, probe_min, probe_max, pass_min, pass_max;
};

static bool bw_summarize(const struct bandwidth *bw, struct bw_summary *out)
{
    if (!bw->probe || bw->n_probes == 0)
        return false;
    out->used = median(bw->pass, bw->n_pass);
    out->probe_min = out->probe_max = bw->median[0];
    for (int i = 1; i < bw->n_probes; i++) {
        out->probe_min = fmin(out->probe_min, bw->median[i]);
        out->probe_max = fmax(out->probe_max, bw->median[i]);
    }
    out->pass_min = out->pass_max = bw->pass[0];
    for (int i = 1; i < bw->n_pass; i++) {
        out->pass_min = fmin(out->pass_min, bw->pass[i]);
        out->pass_max = fmax(out->pass_max, bw->pass[i]);
    }
    return out->used > 0 && out->probe_min > 0;
}

/* ----------------------------------------------------------- the tests */

struct result {
    char test[32];
    int n_prompt, n_gen, reps;
    double avg_ts, sd_ts, avg_ms;
    double cpu_share; /* process CPU time / (wall time x threads) in the runs */
    bool profiled;
    struct elm_ctx_stats st; /* summed over the timed runs */
};

static bool run_test(elm_ctx *ctx, const int32_t *ids, int n_prompt, int n_gen, int reps,
                     int threads, bool profile, float *logits, struct bandwidth *bw,
                     struct result *r)
{
    int n = n_prompt ? n_prompt : n_gen;
    snprintf(r->test, sizeof r->test, "%s%d", n_prompt ? "pp" : "tg", n);
    r->n_prompt = n_prompt;
    r->n_gen = n_gen;
    r->reps = reps;
    if (run_once(ctx, ids, n_prompt, n_gen, logits) < 0)
        return false;
    elm_ctx_set_profiling(ctx, profile);
    /* A probe before the runs, every stride runs, and after the last. */
    int stride = (reps + MAX_PROBES - 2) / (MAX_PROBES - 1);
    double sum = 0, sum2 = 0, sum_s = 0, cpu = 0;
    for (int i = 0; i < reps; i++) {
        if (i % stride == 0)
            probe(bw);
        double c0 = cpu_seconds();
        double s = run_once(ctx, ids, n_prompt, n_gen, logits);
        if (s < 0)
            return false;
        cpu += cpu_seconds() - c0;
        double ts = n / s;
        sum += ts;
        sum2 += ts * ts;
        sum_s += s;
    }
    probe(bw);
    r->profiled = profile;
    elm_ctx_get_stats(ctx, &r->st);
    elm_ctx_set_profiling(ctx, false);
    r->avg_ts = sum / reps;
    r->sd_ts = reps > 1 ? sqrt(fmax(0.0, (sum2 - sum * sum / reps) / (reps - 1))) : 0.0;
    r->avg_ms = sum_s / reps * 1e3;
    r->cpu_share = sum_s > 0 ? cpu / (sum_s * threads) : 0;
    return true;
}

/* The prefill's matrix part against BLIS: GFLOPS of the layers' products
 * (QKV, out, FFN; the LM head of one token is a matvec, left out), over
 * every layer and over the layers BLIS ran (the share compares those). */
struct gemm_cmp {
    bool have_ours, have_blis;
    double ours_gflops, ours_same_gflops, blis_gflops, share;
    struct elm_blis_reference ref;
};

static void compare_gemm(const struct result *r, struct gemm_cmp *g)
{
    const struct elm_ctx_stats *st = &r->st;
    double s = st->matrix_s - st->head_s, f = st->matrix_flops - st->head_flops;
    g->have_ours = r->profiled && s > 0;
    if (g->have_ours)
        g->ours_gflops = f / s / 1e9;
    if (!g->have_blis || !g->have_ours || g->ref.seconds <= 0)
        return;
    g->blis_gflops = g->ref.flops / g->ref.seconds / 1e9;
    double fs = 0, ss = 0;
    for (int i = 0; i < g->ref.n_layers; i++) {
        fs += st->layer_matrix_flops[g->ref.layers[i]];
        ss += st->layer_matrix_s[g->ref.layers[i]];
    }
    g->ours_same_gflops = ss > 0 ? fs / ss / 1e9 : 0;
    g->share = g->blis_gflops > 0 ? g->ours_same_gflops / g->blis_gflops : 0;
}

/* Per run, in milliseconds. */
struct phases {
    double total, matrix, attention, other, norm, rope, swiglu, head;
};

static struct phases phases_of(const struct result *r)
{
    const struct elm_ctx_stats *st = &r->st;
    double k = 1e3 / r->reps;
    struct phases p = {.total = st->total_s * k, .matrix = st->matrix_s * k,
                       .attention = st->attention_s * k, .norm = st->norm_s * k,
                       .rope = st->rope_s * k, .swiglu = st->swiglu_s * k, .head = st->head_s * k};
    p.other = fmax(0.0, p.total - p.matrix - p.attention);
    return p;
}

static double pct(double part, double whole)
{
    return whole > 0 ? 100.0 * part / whole : 0.0;
}

/* ------------------------------------------------------------- output */

static void json_line(const struct elm_model_info *in, long threads, const struct result *r,
                      const struct bw_summary *bw, const struct bandwidth *bwt,
                      const struct gemm_cmp *g)
{
    double bytes_tok = (double)in->weight_bytes; /* every weight once a token (tied head) */
    printf("{\"test\": \"%s\", \"tokens_per_second\": %.3f, \"stddev\": %.3f, "
           "\"threads\": %ld, \"type\": \"%s\", \"model\": ",
           r->test, r->avg_ts, r->sd_ts, threads, elm_dtype_name(in->dtype));
    json_print_string(in->name);
    printf(", \"n_params\": %" PRIu64 ", \"model_bytes\": %" PRIu64
           ", \"n_prompt\": %d, \"n_gen\": %d, \"reps\": %d, \"avg_ms\": %.3f"
           ", \"cpu_share\": %.3f",
           in->n_params, in->weight_bytes, r->n_prompt, r->n_gen, r->reps, r->avg_ms,
           r->cpu_share);
    if (r->n_gen > 0)
        printf(", \"weight_gb_per_second\": %.3f", r->avg_ts * bytes_tok / 1e9);
    if (r->n_gen > 0 && bw) {
        double w = r->avg_ts * bytes_tok;
        printf(", \"machine_gb_per_second\": %.3f, \"machine_gb_per_second_min\": %.3f, "
               "\"machine_gb_per_second_max\": %.3f, \"bw_pass_gb_per_second_min\": %.3f, "
               "\"bw_pass_gb_per_second_max\": %.3f, \"bw_probes\": %d, \"bw_passes\": %d, "
               "\"bw_buffer_mib\": %d, \"roofline_tokens_per_second\": %.3f, "
               "\"roofline_share\": %.4f, \"roofline_share_min\": %.4f, "
               "\"roofline_share_max\": %.4f",
               bw->used / 1e9, bw->probe_min / 1e9, bw->probe_max / 1e9, bw->pass_min / 1e9,
               bw->pass_max / 1e9, bwt->n_probes, bwt->n_pass, PROBE_MIB, bw->used / bytes_tok,
               w / bw->used, w / bw->probe_max, w / bw->probe_min);
    }
    if (g && g->have_ours)
        printf(", \"matrix_gflops\": %.3f", g->ours_gflops);
    if (g && g->have_blis && g->blis_gflops > 0) {
        printf(", \"blis_gflops\": %.3f, \"blis_share\": %.4f, \"matrix_gflops_blis_layers\": "
               "%.3f, \"blis_m\": %d, \"blis_threads\": %d, \"blis_cpu_share\": %.3f, "
               "\"blis_reshots\": %d, \"blis_arch\": ",
               g->blis_gflops, g->share, g->ours_same_gflops, g->ref.m, g->ref.n_threads,
               g->ref.cpu_share, g->ref.n_reshots);
        json_print_string(g->ref.arch);
        printf(", \"blis_layers\": [");
        for (int i = 0; i < g->ref.n_layers; i++)
            printf("%s%d", i ? ", " : "", g->ref.layers[i]);
        printf("], \"blis_flops_share\": %.4f, \"blis_seconds\": %.4f, \"blis_settle_ms\": %.1f",
               g->ref.flops_share, g->ref.seconds, g->ref.settle_seconds * 1e3);
    }
    if (r->profiled) {
        struct phases p = phases_of(r);
        const struct elm_ctx_stats *st = &r->st;
        printf(", \"eval_ms\": %.3f, \"matrix_ms\": %.3f, \"attention_ms\": %.3f, "
               "\"other_ms\": %.3f, \"norm_ms\": %.3f, \"rope_ms\": %.3f, \"swiglu_ms\": %.3f, "
               "\"head_ms\": %.3f, \"matrix_all_gflops\": %.3f, "
               "\"matrix_weight_gb_per_second\": %.3f",
               p.total, p.matrix, p.attention, p.other, p.norm, p.rope, p.swiglu, p.head,
               st->matrix_s > 0 ? st->matrix_flops / st->matrix_s / 1e9 : 0.0,
               st->matrix_s > 0 ? st->matrix_weight_bytes / st->matrix_s / 1e9 : 0.0);
    }
    printf(", \"kernels\": ");
    json_print_string(elm_system_info());
    printf("}\n");
}

static void table_header(void)
{
    printf("| %-24s | %-5s | %9s | %9s | %7s | %7s | %20s | %6s | %7s | %13s | %11s | %7s |\n",
           "model", "type", "size", "params", "threads", "test", "t/s", "GB/s", "of bw",
           "matrix GFLOPS", "BLIS GFLOPS", "of BLIS");
    printf("| %.24s | %.5s | %.9s | %.9s | %.7s | %.7s | %.20s | %.6s | %.7s | %.13s | %.11s "
           "| %.7s |\n",
           "------------------------", "-----", "---------", "---------", "-------", "-------",
           "--------------------", "------", "-------", "-------------", "-----------",
           "-------");
}

static void table_row(const struct elm_model_info *in, long threads, const struct result *r,
                      const struct bw_summary *bw, const struct gemm_cmp *g)
{
    double bytes_tok = (double)in->weight_bytes;
    char ts[32], gbs[16] = "", share[16] = "", gf[16] = "", blis[16] = "", bshare[16] = "";
    snprintf(ts, sizeof ts, "%.2f ± %.2f", r->avg_ts, r->sd_ts);
    if (r->n_gen > 0)
        snprintf(gbs, sizeof gbs, "%.1f", r->avg_ts * bytes_tok / 1e9);
    if (r->n_gen > 0 && bw)
        snprintf(share, sizeof share, "%.1f %%", 100.0 * r->avg_ts * bytes_tok / bw->used);
    if (g && g->have_ours)
        snprintf(gf, sizeof gf, "%.1f", g->ours_gflops);
    if (g && g->have_blis && g->blis_gflops > 0) {
        snprintf(blis, sizeof blis, "%.1f", g->blis_gflops);
        snprintf(bshare, sizeof bshare, "%.1f %%", 100.0 * g->share);
    }
    printf("| %-24.24s | %-5s | %5.0f MiB | %7.2f M | %7ld | %7s | %21s | %6s | %7s | %13s | %11s "
           "| %7s |\n",
           in->name, elm_dtype_name(in->dtype), (double)in->weight_bytes / (1 << 20),
           (double)in->n_params / 1e6, threads, r->test, ts, gbs, share, gf, blis, bshare);
}

static void footer_bandwidth(const struct elm_model_info *in, long threads,
                             const struct result *tg, const struct bw_summary *bw,
                             const struct bandwidth *bwt)
{
    double bytes_tok = (double)in->weight_bytes;
    printf("\nread bandwidth, %ld thread%s, %d MiB: %.1f GB/s used (median of %d passes in %d "
           "probes before, between and after the tg runs); probe medians %.1f-%.1f GB/s, "
           "passes %.1f-%.1f GB/s\n",
           threads, threads == 1 ? "" : "s", PROBE_MIB, bw->used / 1e9, bwt->n_pass,
           bwt->n_probes, bw->probe_min / 1e9, bw->probe_max / 1e9, bw->pass_min / 1e9,
           bw->pass_max / 1e9);
    double w = tg->avg_ts * bytes_tok;
    printf("decode roofline %.1f t/s (%.1f-%.1f over the probe medians); %s: %.1f %% of it "
           "(%.1f-%.1f %%)\n",
           bw->used / bytes_tok, bw->probe_min / bytes_tok, bw->probe_max / bytes_tok, tg->test,
           100.0 * w / bw->used, 100.0 * w / bw->probe_max, 100.0 * w / bw->probe_min);
    if (w > bw->probe_min)
        printf("note: decode read faster than a probe did: the machine's bandwidth changed "
               "during the run (see the spread), or the %.0f MiB of weights are partly read "
               "from the CPU caches\n",
               bytes_tok / (1 << 20));
}

static void footer_gemm(const struct elm_model_info *in, const struct result *pp,
                        const struct gemm_cmp *g)
{
    printf("\nprefill matrix part (%s): %.1f GFLOPS over the QKV, out and FFN products of %d "
           "layers",
           pp->test, g->ours_gflops, in->n_layers);
    if (!(g->have_blis && g->blis_gflops > 0)) {
        printf("\n");
        return;
    }
    printf("; BLIS sgemm '%s', %d thread%s, M = %d, one shot on layer%s", g->ref.arch,
           g->ref.n_threads, g->ref.n_threads == 1 ? "" : "s", g->ref.m,
           g->ref.n_layers == 1 ? "" : "s");
    for (int i = 0; i < g->ref.n_layers; i++)
        printf(" %d", g->ref.layers[i]);
    printf(" (%.0f %% of the flops): %.1f GFLOPS; ours on those layers %.1f GFLOPS = %.1f %% of "
           "BLIS\n",
           100.0 * g->ref.flops_share, g->blis_gflops, g->ours_same_gflops, 100.0 * g->share);
    printf("CPU time / (wall x threads): %.0f %% in the pp runs, %.0f %% while BLIS ran "
           "(%d products run again for lack of cores)\n",
           100.0 * pp->cpu_share, 100.0 * g->ref.cpu_share, g->ref.n_reshots);
    if (g->ref.cpu_share < 0.9 || pp->cpu_share < 0.9)
        printf("note: below 90 %% the threads did not have their cores (a busy machine): BLIS "
               "(spinning barriers) loses more than our pool; measure again when it is quiet\n");
}

static void profile_table(const struct result *res, int n)
{
    printf("\n| %-7s | %10s | %6s | %12s | %6s | %9s | %6s | %9s | %13s | %11s |\n", "test",
           "matrix ms", "%", "attention ms", "%", "other ms", "%", "total ms", "matrix GFLOPS",
           "matrix GB/s");
    printf("| ------- | ---------- | ------ | ------------ | ------ | --------- | ------ | "
           "--------- | ------------- | ----------- |\n");
    for (int i = 0; i < n; i++) {
        const struct result *r = &res[i];
        if (!r->profiled)
            continue;
        struct phases p = phases_of(r);
        const struct elm_ctx_stats *st = &r->st;
        printf("| %7s | %10.2f | %4.1f %% | %12.2f | %4.1f %% | %9.2f | %4.1f %% | %9.2f | %13.1f "
               "| %11.1f |\n",
               r->test, p.matrix, pct(p.matrix, p.total), p.attention, pct(p.attention, p.total),
               p.other, pct(p.other, p.total), p.total,
               st->matrix_s > 0 ? st->matrix_flops / st->matrix_s / 1e9 : 0.0,
               st->matrix_s > 0 ? st->matrix_weight_bytes / st->matrix_s / 1e9 : 0.0);
    }
    printf("matrix: every weight product, the LM head included (the pp rows' matrix GFLOPS "
           "leave it out)\n");
    for (int i = 0; i < n; i++) {
        const struct result *r = &res[i];
        if (!r->profiled)
            continue;
        struct phases p = phases_of(r);
        printf("%s per run: matrix %.2f ms (LM head %.2f); other %.2f ms = norms %.2f, "
               "QK-norm/RoPE/cache %.2f, SwiGLU %.2f, embedding rows and gaps %.2f\n",
               r->test, p.matrix, p.head, p.other, p.norm, p.rope, p.swiglu,
               fmax(0.0, p.other - p.norm - p.rope - p.swiglu));
    }
}

int cmd_bench(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) { /* `bench --chat`, `bench --spec FILE`: their own files */
        if (strcmp(argv[i], "--chat") == 0)
            return bench_chat_main(argc, argv);
        if (strcmp(argv[i], "--spec") == 0 || strncmp(argv[i], "--spec=", 7) == 0)
            return bench_spec_main(argc, argv);
    }
    enum { OPT_JSON = 0x2000, OPT_KERNELS, OPT_NO_BW, OPT_NO_BLIS, OPT_PROFILE, OPT_BENCH_EXACT,
           OPT_RETRY, OPT_VERIFY, OPT_DRAFT_MODEL, OPT_GRAMMAR, OPT_JSON_SCHEMA };
    static const struct option opts[] = {
        {"model", 1, NULL, 'm'},       {"n-prompt", 1, NULL, 'p'}, {"n-gen", 1, NULL, 'n'},
        {"threads", 1, NULL, 't'},     {"repetitions", 1, NULL, 'r'},
        {"json", 0, NULL, OPT_JSON},   {"help", 0, NULL, 'h'},     {"kernels", 0, NULL, OPT_KERNELS},
        {"no-bandwidth", 0, NULL, OPT_NO_BW}, {"no-blis", 0, NULL, OPT_NO_BLIS},
        {"profile", 0, NULL, OPT_PROFILE}, {"exact", 0, NULL, OPT_BENCH_EXACT},
        {"retry", 0, NULL, OPT_RETRY}, {"verify", 0, NULL, OPT_VERIFY},
        {"draft", 1, NULL, OPT_DRAFT_MODEL},
        {"grammar", 1, NULL, OPT_GRAMMAR}, {"json-schema", 1, NULL, OPT_JSON_SCHEMA},
        {NULL, 0, NULL, 0}};
    struct grammar_option gopt = {0};
    elm_grammar *grammar = NULL;
    const char *model_arg = NULL;
    long n_prompt = 512, n_gen = 128, threads = cmd_all_cpus(), reps = 5;
    bool json = false, bandwidth = true, blis = true, profile = false, exact = false;
    bool retry = false, verify = false;
    const char *draft_arg = NULL;
    elm_model *draft_model = NULL;
    elm_ctx *draft_ctx = NULL;
    int opt;
    option_loop_begin();
    while ((opt = getopt_long(argc, argv, ":m:p:n:t:r:h", opts, NULL)) != -1) {
        switch (opt) {
        case 'm': model_arg = optarg; break;
        case 'p':
            if (!cli_parse_int(optarg, 0, 1 << 20, &n_prompt))
                return cli_usage_error(argv[0], "invalid -p '%s'", optarg);
            break;
        case 'n':
            if (!cli_parse_int(optarg, 0, 1 << 20, &n_gen))
                return cli_usage_error(argv[0], "invalid -n '%s'", optarg);
            break;
        case 't':
            if (!cli_parse_int(optarg, 1, 1024, &threads))
                return cli_usage_error(argv[0], "invalid -t '%s'", optarg);
            break;
        case 'r':
            if (!cli_parse_int(optarg, 1, 1000, &reps))
                return cli_usage_error(argv[0], "invalid -r '%s'", optarg);
            break;
        case OPT_JSON: json = true; break;
        case OPT_KERNELS: printf("%s\n", elm_system_info()); return EXIT_OK;
        case OPT_NO_BW: bandwidth = false; break;
        case OPT_NO_BLIS: blis = false; break;
        case OPT_PROFILE: profile = true; break;
        case OPT_BENCH_EXACT: exact = true; break;
        case OPT_RETRY: retry = true; break;
        case OPT_VERIFY: verify = true; break;
        case OPT_DRAFT_MODEL: draft_arg = optarg; break;
        case OPT_GRAMMAR: gopt.grammar = optarg; break;
        case OPT_JSON_SCHEMA: gopt.json_schema = optarg; break;
        case 'h': help(); return EXIT_OK;
        default: return option_loop_error(argv[0], opt, argv);
        }
    }
    if (optind < argc)
        return cli_usage_error(argv[0], "unexpected argument '%s'", argv[optind]);

    bool usage;
    if (!grammar_option_load(&gopt, argv[0], &grammar, &usage))
        return usage ? EXIT_USAGE : EXIT_RUNTIME;
    int rc = EXIT_RUNTIME;
    elm_ctx *ctx = NULL;
    float *logits = NULL;
    int32_t *ids = NULL;
    struct bandwidth bwt = {.probe = NULL};
    elm_model *model = cmd_load_model(model_arg, (int)threads);
    if (!model) {
        elm_grammar_free(grammar);
        return EXIT_RUNTIME;
    }
    const struct elm_model_info *in = elm_model_get_info(model);
    long need = n_prompt > n_gen ? n_prompt : n_gen;
    if ((retry || draft_arg) && n_gen + 32 > need)
        need = n_gen + 32; /* the retry test's prompt of 32, then its reply */
    if (grammar && need < n_gen + 64)
        need = n_gen + 64; /* bench_grammar's prompt, then its replies */
    if (verify && need < 256 + 13)
        need = 256 + 13;
    if (need > in->n_ctx_train) {
        cli_error("%ld tokens do not fit in the model's context of %d", need, in->n_ctx_train);
        goto done;
    }
    if (!(ctx = cmd_new_ctx(model, need > 0 ? (int)need : 1, (int)threads, exact)))
        goto done;
    logits = x_reallocarray(NULL, (size_t)in->n_vocab, sizeof *logits);
    ids = x_reallocarray(NULL, (size_t)need + 1, sizeof *ids);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    ids[0] = in->bos_id;
    for (long i = 1; i <= need; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = (int32_t)((s >> 33) % (uint64_t)in->n_vocab);
    }

    /* Allocated and filled first, measured around the tg runs. */
    if (bandwidth && n_gen > 0 &&
        !(bwt.probe = elm_bw_probe_new((int)threads, (size_t)PROBE_MIB << 20)))
        cli_error("no memory for the bandwidth probe: no roofline");
    if (!json) {
        table_header();
        fflush(stdout);
    }
    struct result res[2];
    struct gemm_cmp gemm = {.have_ours = false};
    struct bw_summary bw;
    bool have_bw = false;
    int n_res = 0;
    for (int k = 0; k < 2; k++) {
        int np = k == 0 ? (int)n_prompt : 0, ng = k == 1 ? (int)n_gen : 0;
        if (np == 0 && ng == 0)
            continue;
        struct result *r = &res[n_res++];
        /* The pp runs are always timed by phase (the matrix GFLOPS); the
         * tg runs only with --profile, so that their t/s stay untouched. */
        if (!run_test(ctx, ids, np, ng, (int)reps, (int)threads, np > 0 || profile, logits,
                      ng > 0 ? &bwt : NULL, r))
            goto done;
        const struct gemm_cmp *g = NULL;
        if (np > 0) {
            char err[ELM_ERR_MAX];
            gemm.have_blis = blis && elm_blis_reference(ctx, np, 1.0, &gemm.ref, err,
                                                        sizeof err) == ELM_OK;
            if (blis && !gemm.have_blis)
                cli_error("BLIS reference: %s", err);
            compare_gemm(r, &gemm);
            g = &gemm;
        }
        if (ng > 0)
            have_bw = bw_summarize(&bwt, &bw);
        if (json)
            json_line(in, threads, r, have_bw && ng > 0 ? &bw : NULL, &bwt, g);
        else
            table_row(in, threads, r, have_bw && ng > 0 ? &bw : NULL, g);
        fflush(stdout);
    }
    if (!json) {
        for (int i = 0; i < n_res; i++) {
            if (res[i].n_prompt > 0 && gemm.have_ours)
                footer_gemm(in, &res[i], &gemm);
            if (res[i].n_gen > 0 && have_bw)
                footer_bandwidth(in, threads, &res[i], &bw, &bwt);
        }
        if (profile)
            profile_table(res, n_res);
    }
    if (retry && n_gen > 0 && !retry_bench(ctx, ids, (int)n_gen, (int)reps, logits, json))
        goto done;
    if (verify && !verify_curve(ctx, ids, (int)reps, logits, json))
        goto done;
    if (draft_arg && n_gen > 0 &&
        (!cmd_open_draft(draft_arg, model, elm_ctx_n_ctx(ctx), (int)threads, &draft_model,
                         &draft_ctx) ||
         !draft_bench(ctx, draft_ctx, ids, (int)n_gen, (int)reps, logits)))
        goto done;
    if (grammar && n_gen > 0 &&
        !bench_grammar(ctx, elm_model_tokenizer(model), grammar,
                       gopt.grammar ? gopt.grammar : gopt.json_schema, (int)n_gen, (int)reps,
                       logits, json))
        goto done;
    if (!json)
        printf("\nkernels: %s\n", elm_system_info());
    if (ferror(stdout)) {
        cli_error("write error: %s", strerror(errno));
        goto done;
    }
    rc = EXIT_OK;
done:
    elm_grammar_free(grammar);
    elm_ctx_free(draft_ctx);
    elm_model_free(draft_model);
    elm_bw_probe_free(bwt.probe);
    free(ids);
    free(logits);
    elm_ctx_free(ctx);
    elm_model_free(model);
    return rc;
}
