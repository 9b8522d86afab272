/* bench_chat.c: `elmchat bench --chat` (bench_chat.h).
 *
 * The conversation is driven through conversation.h exactly as the chat
 * does (rendered user turn + generation prompt appended, the reply's
 * sampled ids appended, the template's closing), on the synchronous engine
 * API.  With reuse, the ctx keeps its cache across turns and only what
 * differs from it is computed (the worker's ELM_GEN_SYNC rule); without,
 * a second ctx is emptied each turn and the whole sequence is prefilled.
 * Time to first token = that prefill + the first sample.  Replies have a
 * fixed length (EOS masked) so that every turn has the same size.
 *
 * --switch MODEL2 measures a model switch through the worker (the app's
 * path): 270M -> MODEL2 -> 270M with the conversation re-prefilled.
 * After the table, resume from a snapshot: elm_state_save, a fresh ctx,
 * kvcache_restore_sync, and the next turn's time to first token. */
#include "config.h"

#include "cli/bench_chat.h"

#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/elm_worker.h"
#include "src/options.h"
#include "cli/model_open.h"
#include "src/conversation.h"
#include "src/kvcache_store.h"
#include "src/session.h"
#include "cli/stopwatch.h"
#include "src/template.h"
#include "src/xalloc.h"

static void help(void)
{
    printf("Usage: elmchat bench --chat [-m MODEL] [--turns N] [options]\n"
           "Replay an N-turn conversation of equal-size synthetic messages and print, per\n"
           "turn, the tokens computed and reused and the time to first token, with the\n"
           "KV cache kept across turns and without (the whole sequence prefilled anew).\n"
           "\n"
           "  -m, --model MODEL     model folder or name (default: the bundled demo model)\n"
           "      --turns N         turns (default 8)\n"
           "      --words N         words per user message (default 48)\n"
           "      --reply N         tokens per reply (default 32)\n"
           "      --template NAME   openelm-instruct (default) or plain\n"
           "      --system TEXT     system prompt (default: a short one)\n"
           "  -t, --threads N       compute threads (default: all cores)\n"
           "      --switch MODEL2   also time a model switch MODEL -> MODEL2 -> MODEL\n"
           "                        through the worker, the conversation re-prefilled\n"
           "      --no-resume       skip the snapshot resume measurement\n"
           "  -h, --help            display this help and exit\n"
           "\n"
           "Exit status: 0 ok, 1 runtime error, 2 usage error.\n");
}

static const char *const words[] = {
    "the",     "river",  "carried", "small",  "boats",    "past",    "old",    "stone",
    "houses",  "where",  "people",  "sold",   "bread",    "and",     "fish",   "every",
    "morning", "before", "the",     "market", "opened",   "its",     "gates",  "to",
    "traders", "from",   "distant", "towns",  "bringing", "cloth",   "salt",   "and",
    "spices",  "while",  "children", "played", "near",    "the",     "water",  "under",
    "tall",    "trees",  "that",    "shaded", "the",      "narrow",  "lanes",  "all",
};
#define N_WORDS (sizeof words / sizeof words[0])

/* Turn t's message: n words of the list, rotated by t (same words, so
 * nearly the same number of tokens every turn). */
static char *message(int t, int n)
{
    size_t cap = (size_t)n * 12 + 32, len = 0;
    char *s = x_malloc(cap);
    s[0] = '\0';
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(s + len, cap - len, "%s%s", i ? " " : "",
                                words[((size_t)t * 7 + (size_t)i) % N_WORDS]);
    snprintf(s + len, cap - len, "?");
    return s;
}

struct row {
    int seq, computed, reused;
    double ttft, cpu;
    int fresh_computed;
    double fresh_ttft, fresh_cpu;
};

/* Prefill what ctx lacks of seq and sample the first id (greedy). */
static elm_status prefill_first(elm_ctx *ctx, const struct idvec *seq, float *logits, int n_vocab,
                                int eos, int *computed, int32_t *first)
{
    size_t n_past = (size_t)elm_ctx_n_past(ctx);
    size_t keep = conv_common_prefix(elm_ctx_tokens(ctx), n_past, seq->v, seq->n);
    if (keep == seq->n && keep > 0)
        keep--;
    elm_status st = elm_ctx_truncate(ctx, (int)keep);
    if (st == ELM_OK)
        st = elm_decode(ctx, seq->v + keep, (int)(seq->n - keep), logits, 0);
    if (st != ELM_OK)
        return st;
    *computed = (int)(seq->n - keep);
    logits[eos] = -INFINITY;
    int32_t best = 0;
    for (int i = 1; i < n_vocab; i++)
        if (logits[i] > logits[best])
            best = i;
    *first = best;
    return ELM_OK;
}

/* ------------------------------------------------------------ the worker */

static bool wait_final(elm_worker *w, uint64_t id, struct elm_event *out, double timeout)
{
    double end = wall_seconds() + timeout;
    while (wall_seconds() < end) {
        struct pollfd p = {elm_worker_wake_fd(w), POLLIN, 0};
        poll(&p, 1, 100);
        elm_worker_drain_wake(w);
        struct elm_event ev;
        while (elm_worker_next_event(w, &ev)) {
            if (ev.request_id == id &&
                (ev.type == ELM_EV_DONE ||
                 ev.type == ELM_EV_MODEL_READY)) {
                *out = ev;
                return true;
            }
            elm_event_fini(&ev);
        }
    }
    return false;
}

static bool worker_load(elm_worker *w, const char *path, int threads, double *secs)
{
    struct elm_request rq = elm_request_default(ELM_REQ_LOAD_MODEL);
    rq.path = (char *)(uintptr_t)path;
    rq.n_threads = threads;
    double t0 = wall_seconds();
    struct elm_event ev;
    if (!wait_final(w, elm_worker_post(w, &rq), &ev, 600)) {
        cli_error("%s: loading timed out", path);
        return false;
    }
    *secs = wall_seconds() - t0;
    bool okay = ev.type == ELM_EV_MODEL_READY;
    if (!okay)
        cli_error("%s", ev.text ? ev.text : "model load failed");
    elm_event_fini(&ev);
    return okay;
}

static bool worker_prefill(elm_worker *w, const struct conversation *cv, double *secs,
                           int *computed, int *reused)
{
    struct elm_request rq = elm_request_default(ELM_REQ_GENERATE);
    conversation_request(cv, &rq);
    rq.max_tokens = 1; /* the first token: what a user waits for */
    rq.sampler.temperature = 0;
    double t0 = wall_seconds();
    struct elm_event ev;
    if (!wait_final(w, elm_worker_post(w, &rq), &ev, 600)) {
        cli_error("prefill timed out");
        return false;
    }
    *secs = wall_seconds() - t0;
    bool okay = ev.type == ELM_EV_DONE && ev.reason != ELM_DONE_ERROR;
    if (!okay)
        cli_error("%s", ev.text ? ev.text : "prefill failed");
    *computed = ev.n_prefilled;
    *reused = ev.n_reused;
    elm_event_fini(&ev);
    return okay;
}

static int bench_switch(const char *path1, const char *path2, const struct conversation *cv,
                        int threads)
{
    char err[ELM_ERR_MAX];
    elm_worker *w = elm_worker_new(NULL, err, sizeof err);
    if (!w) {
        cli_error("%s", err);
        return EXIT_RUNTIME;
    }
    int rc = EXIT_RUNTIME;
    double t_load, t_pf;
    int comp, reu;
    printf("\nmodel switch through the worker (%zu tokens in the conversation):\n",
           cv->tokens.n);
    printf("| %-36s | %9s | %9s | %8s | %8s |\n", "step", "load ms", "ttft ms", "computed",
           "reused");
    printf("|--------------------------------------|-----------|-----------|----------|----------|\n");
#define STEP(label, path)                                                                   \
    do {                                                                                    \
        if (!worker_load(w, path, threads, &t_load) ||                                      \
            !worker_prefill(w, cv, &t_pf, &comp, &reu))                                     \
            goto out;                                                                       \
        printf("| %-36s | %9.1f | %9.1f | %8d | %8d |\n", label, t_load * 1e3, t_pf * 1e3,  \
               comp, reu);                                                                  \
        fflush(stdout);                                                                     \
    } while (0)
    STEP("load MODEL, prefill the conversation", path1);
    STEP("switch to MODEL2 (re-prefill)", path2);
    STEP("switch back to MODEL (kept cache)", path1);
    STEP("switch to MODEL2 again (kept)", path2);
#undef STEP
    rc = EXIT_OK;
out:
    elm_worker_free(w);
    return rc;
}

/* ------------------------------------------------------------------ main */

int bench_chat_main(int argc, char **argv)
{
    enum { OPT_CHAT = 0x2100, OPT_TURNS, OPT_WORDS, OPT_REPLY, OPT_TEMPLATE, OPT_SYSTEM,
           OPT_SWITCH, OPT_NO_RESUME };
    static const struct option opts[] = {
        {"chat", 0, NULL, OPT_CHAT},         {"model", 1, NULL, 'm'},
        {"turns", 1, NULL, OPT_TURNS},       {"words", 1, NULL, OPT_WORDS},
        {"reply", 1, NULL, OPT_REPLY},       {"template", 1, NULL, OPT_TEMPLATE},
        {"system", 1, NULL, OPT_SYSTEM},     {"threads", 1, NULL, 't'},
        {"switch", 1, NULL, OPT_SWITCH},     {"no-resume", 0, NULL, OPT_NO_RESUME},
        {"help", 0, NULL, 'h'},              {NULL, 0, NULL, 0}};
    const char *model_arg = NULL, *tpl_name = "openelm-instruct", *switch_arg = NULL;
    const char *system = "You are a helpful assistant. Answer briefly.";
    long turns = 8, n_words = 48, n_reply = 32, threads = 0;
    bool resume = true;
    int opt;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":m:t:h", opts, NULL)) != -1) {
        switch (opt) {
        case OPT_CHAT: break;
        case 'm': model_arg = optarg; break;
        case OPT_TURNS:
            if (!cli_parse_int(optarg, 1, 1000, &turns))
                return cli_usage_error(argv[0], "invalid --turns '%s'", optarg);
            break;
        case OPT_WORDS:
            if (!cli_parse_int(optarg, 1, 2000, &n_words))
                return cli_usage_error(argv[0], "invalid --words '%s'", optarg);
            break;
        case OPT_REPLY:
            if (!cli_parse_int(optarg, 1, 2000, &n_reply))
                return cli_usage_error(argv[0], "invalid --reply '%s'", optarg);
            break;
        case OPT_TEMPLATE: tpl_name = optarg; break;
        case OPT_SYSTEM: system = optarg; break;
        case 't':
            if (!cli_parse_int(optarg, 1, 1024, &threads))
                return cli_usage_error(argv[0], "invalid -t '%s'", optarg);
            break;
        case OPT_SWITCH: switch_arg = optarg; break;
        case OPT_NO_RESUME: resume = false; break;
        case 'h': help(); return EXIT_OK;
        case ':': return cli_usage_error(argv[0], "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error(argv[0], "unrecognized option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage_error(argv[0], "unexpected argument '%s'", argv[optind]);
    if (threads == 0)
        threads = cmd_all_cpus();

    char err[1024];
    struct template *tpl = template_load(tpl_name, err, sizeof err);
    if (!tpl) {
        cli_error("%s", err);
        return EXIT_RUNTIME;
    }
    int rc = EXIT_RUNTIME;
    elm_ctx *ctx = NULL, *fresh = NULL;
    float *logits = NULL;
    struct session *s = NULL;
    struct conversation cv;
    bool have_cv = false;
    elm_model *model = cmd_load_model(model_arg, (int)threads);
    if (!model)
        goto done;
    const struct elm_model_info *in = elm_model_get_info(model);
    const elm_tokenizer *tok = elm_model_tokenizer(model);
    if (!tok) {
        cli_error("%s: the model has no tokenizer (tokenizer.model or tokenizer.json)", elm_model_path(model));
        goto done;
    }
    if (!(ctx = cmd_new_ctx(model, 0, (int)threads)) ||
        !(fresh = cmd_new_ctx(model, 0, (int)threads)))
        goto done;
    logits = x_reallocarray(NULL, (size_t)in->n_vocab, sizeof *logits);
    s = session_new("bench");
    s->system = x_strdup(system);
    struct conv_policy pol = conv_policy_default();
    pol.policy = CONTEXT_STOP; /* the bench measures reuse, not eviction */
    conversation_init(&cv, s, tpl, tok, elm_ctx_n_ctx(ctx), &pol);
    have_cv = true;
    if (conversation_render(&cv, err, sizeof err) != 0) {
        cli_error("%s", err);
        goto done;
    }

    printf("model %s (%s, %d layers), template %s, %ld threads, %ld words per message, "
           "%ld-token replies\n",
           in->name, elm_dtype_name(in->dtype), in->n_layers, tpl->name, threads, n_words,
           n_reply);
    printf("| %4s | %6s | %8s | %6s | %8s | %8s | %14s | %13s | %12s |\n", "turn", "seq",
           "computed", "reused", "ttft ms", "cpu ms", "fresh computed", "fresh ttft ms",
           "fresh cpu ms");
    printf("|------|--------|----------|--------|----------|----------|----------------|"
           "---------------|--------------|\n");
    fflush(stdout);
    struct row first = {0}, last = {0};
    for (long t = 1; t <= turns; t++) {
        char *msg = message((int)t, (int)n_words);
        struct conv_plan plan;
        int r = conversation_user_turn(&cv, msg, (int)n_reply, &plan, err, sizeof err);
        free(msg);
        if (r != 0) {
            cli_error("turn %ld: %s", t, err);
            goto done;
        }
        struct row row = {0};
        row.seq = (int)cv.tokens.n;
        row.reused = plan.n_reuse;
        int32_t id = 0, id2 = 0;
        /* without reuse first (so the reuse run is not helped by warm caches
         * it would not have had... both see the same warm weights) */
        elm_ctx_truncate(fresh, 0);
        double t0 = wall_seconds(), c0 = cpu_seconds();
        elm_status st = prefill_first(fresh, &cv.tokens, logits, in->n_vocab, in->eos_id,
                                      &row.fresh_computed, &id2);
        row.fresh_ttft = wall_seconds() - t0;
        row.fresh_cpu = cpu_seconds() - c0;
        if (st == ELM_OK) {
            t0 = wall_seconds();
            c0 = cpu_seconds();
            st = prefill_first(ctx, &cv.tokens, logits, in->n_vocab, in->eos_id, &row.computed,
                               &id);
            row.ttft = wall_seconds() - t0;
            row.cpu = cpu_seconds() - c0;
        }
        if (st != ELM_OK) {
            cli_error("decode failed: %s", elm_status_str(st));
            goto done;
        }
        row.reused = (int)cv.tokens.n - row.computed;
        /* the reply: n_reply ids, the last one not fed (as the worker) */
        conversation_reply_push(&cv, &id, 1);
        for (long k = 1; k < n_reply; k++) {
            if ((st = elm_decode(ctx, &id, 1, logits, 0)) != ELM_OK) {
                cli_error("decode failed: %s", elm_status_str(st));
                goto done;
            }
            logits[in->eos_id] = -INFINITY;
            int32_t best = 0;
            for (int i = 1; i < in->n_vocab; i++)
                if (logits[i] > logits[best])
                    best = i;
            id = best;
            conversation_reply_push(&cv, &id, 1);
        }
        if (conversation_reply_end(&cv, TEMPLATE_END_CUT, "(reply)", false, err, sizeof err)) {
            cli_error("%s", err);
            goto done;
        }
        conversation_set_cached(&cv, elm_ctx_n_past(ctx));
        printf("| %4ld | %6d | %8d | %6d | %8.1f | %8.1f | %14d | %13.1f | %12.1f |\n", t,
               row.seq, row.computed, row.reused, row.ttft * 1e3, row.cpu * 1e3,
               row.fresh_computed, row.fresh_ttft * 1e3, row.fresh_cpu * 1e3);
        fflush(stdout);
        if (t == 1)
            first = row;
        last = row;
    }
    printf("turn %ld / turn 1 time to first token: %.2fx with reuse, %.2fx without "
           "(cpu time: %.2fx, %.2fx)\n",
           turns, last.ttft / first.ttft, last.fresh_ttft / first.fresh_ttft,
           last.cpu / first.cpu, last.fresh_cpu / first.fresh_cpu);

    if (resume) {
        /* Resume from a snapshot: the next turn after a restart. */
        char path[] = "/tmp/elmchat-bench-XXXXXX";
        int fd = mkstemp(path);
        if (fd < 0) {
            cli_error("cannot make a temporary file");
            goto done;
        }
        close(fd);
        double t0 = wall_seconds();
        elm_status st = elm_state_save(ctx, path, err, sizeof err);
        double t_save = wall_seconds() - t0;
        char *msg = message((int)turns + 1, (int)n_words);
        struct conv_plan plan;
        int r = conversation_user_turn(&cv, msg, (int)n_reply, &plan, err, sizeof err);
        free(msg);
        elm_ctx_free(ctx);
        ctx = NULL;
        if (st != ELM_OK || r != 0 || !(ctx = cmd_new_ctx(model, 0, (int)threads))) {
            cli_error("snapshot: %s", err);
            unlink(path);
            goto done;
        }
        size_t reused = 0;
        t0 = wall_seconds();
        st = kvcache_restore_sync(ctx, path, cv.tokens.v, cv.tokens.n, &reused, err, sizeof err);
        double t_load = wall_seconds() - t0;
        int computed = 0, fc = 0;
        int32_t id;
        t0 = wall_seconds();
        if (st == ELM_OK)
            st = prefill_first(ctx, &cv.tokens, logits, in->n_vocab, in->eos_id, &computed, &id);
        double ttft = wall_seconds() - t0;
        elm_ctx_truncate(fresh, 0);
        t0 = wall_seconds();
        if (st == ELM_OK)
            st = prefill_first(fresh, &cv.tokens, logits, in->n_vocab, in->eos_id, &fc, &id);
        double fttft = wall_seconds() - t0;
        unlink(path);
        if (st != ELM_OK) {
            cli_error("resume: %s", elm_status_str(st));
            goto done;
        }
        printf("\nresume from a snapshot (%zu ids): save %.1f ms, load %.1f ms; next turn "
               "computes %d, ttft %.1f ms (load + ttft %.1f ms) vs %.1f ms re-prefilling %d\n",
               reused, t_save * 1e3, t_load * 1e3, computed, ttft * 1e3, (t_load + ttft) * 1e3,
               fttft * 1e3, fc);
    }
    rc = EXIT_OK;
    if (switch_arg) {
        char p1[4096], p2[4096];
        if (!cli_resolve_model(model_arg, p1, sizeof p1, err, sizeof err) ||
            !cli_resolve_model(switch_arg, p2, sizeof p2, err, sizeof err)) {
            cli_error("%s", err);
            rc = EXIT_RUNTIME;
            goto done;
        }
        /* free the bench's own contexts: the worker holds its own */
        elm_ctx_free(ctx);
        elm_ctx_free(fresh);
        ctx = fresh = NULL;
        rc = bench_switch(p1, p2, &cv, (int)threads);
    }
done:
    if (have_cv)
        conversation_fini(&cv);
    session_free(s);
    free(logits);
    elm_ctx_free(ctx);
    elm_ctx_free(fresh);
    elm_model_free(model);
    template_free(tpl);
    return rc;
}
