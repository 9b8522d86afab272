/* bench_chat.c: `elmchat bench --chat` (bench_chat.h).
 *
 * The conversation runs on the chat controller (src/chat/chat_controller.h),
 * the code the TUI runs: each message goes in as a submitted line and the
 * reply comes back through the worker, so the figures are those of the
 * app (rendering, the ELM_GEN_SYNC prefix reuse, autosave and snapshots
 * included).  Time to first token = from the line submitted to the first
 * TOKEN event.  Without reuse: after each reply the session's cache is
 * dropped (chat_drop_cache) and /retry asks for the reply again, so the
 * same sequence is prefilled whole.  Replies are greedy, at most --reply
 * tokens (the template's sampling otherwise; EOS may end one earlier).
 *
 * The chat's files go to a temporary XDG tree (a config.yaml with the
 * context policy stop: the bench measures reuse, not eviction), removed
 * at the end.  After the table, resume from a snapshot: /save, a restart
 * that adopts the snapshot, the next turn.  --switch MODEL2: /model
 * MODEL2, /model MODEL, /model MODEL2 after a restart from nothing, each
 * with the background re-prefill the switch brings. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "config.h"

#include "cli/bench_chat.h"

#include <ftw.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/model_open.h"
#include "cli/option_loop.h"
#include "cli/stopwatch.h"
#include "src/chat/chat_controller.h"
#include "src/conversation/kvcache_store.h"
#include "src/models/model_find.h"
#include "src/base/options.h"
#include "src/store/paths.h"
#include "src/store/store.h"
#include "src/base/xalloc.h"

static void help(void)
{
    printf("Usage: elmchat bench --chat [-m MODEL] [--turns N] [options]\n"
           "Replay an N-turn conversation of equal-size synthetic messages on the chat's\n"
           "own code and print, per turn, the tokens computed and reused and the time to\n"
           "first token, with the KV cache kept across turns and without (the whole\n"
           "sequence prefilled anew).\n"
           "\n"
           "  -m, --model MODEL     model folder or name (default: guide-small-instruct)\n"
           "      --turns N         turns (default 8)\n"
           "      --words N         words per user message (default 48)\n"
           "      --reply N         at most N tokens per reply, greedy (default 32)\n"
           "      --template NAME   openelm-instruct (default) or plain\n"
           "      --system TEXT     system prompt (default: a short one)\n"
           "  -t, --threads N       compute threads (default: all cores)\n"
           "      --tokenizer FILE  with -m server:URL: the tokenizer the server's is checked\n"
           "                        against (default: elmchat's LLaMA-2 one)\n"
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

/* ------------------------------------------------- a private XDG tree */

/* The chat keeps sessions, snapshots and its config under XDG folders:
 * give it fresh ones, so that the user's files are neither read nor
 * written.  Returns the root (owned), NULL after saying why. */
static char *private_xdg(char *err, size_t err_size)
{
    const char *tmp = getenv("TMPDIR");
    char *root = x_asprintf("%s/elmchat-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(root)) {
        snprintf(err, err_size, "%s: cannot make a temporary folder", root);
        free(root);
        return NULL;
    }
    static const char *const vars[][2] = {{"XDG_CONFIG_HOME", "config"},
                                          {"XDG_DATA_HOME", "data"},
                                          {"XDG_STATE_HOME", "state"},
                                          {"XDG_CACHE_HOME", "cache"}};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        char *dir = x_asprintf("%s/%s", root, vars[i][1]);
        setenv(vars[i][0], dir, 1);
        free(dir);
    }
    char *dir = paths_dir(PATHS_CONFIG, NULL);
    char *cfg = x_asprintf("%s/config.yaml", dir);
    static const char policy[] = "context:\n  policy: stop\n";
    int rc = paths_mkdir_p(dir) == 0
                 ? store_write_atomic(cfg, policy, sizeof policy - 1, err, err_size)
                 : (snprintf(err, err_size, "%s: cannot create", dir), -1);
    free(cfg);
    free(dir);
    if (rc != 0) {
        rmdir(root);
        free(root);
        return NULL;
    }
    return root;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void remove_tree(char *root)
{
    if (root)
        nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(root);
}

/* ---------------------------------------------------- the controller */

typedef bool (*until_fn)(const struct chat_activity *a);

static bool model_settled(const struct chat_activity *a)
{
    return !a->model_loading;
}

static bool first_token(const struct chat_activity *a)
{
    return a->reply_ids > 0 || !a->generating;
}

/* Nothing left to do: no load, reply, background prefill or snapshot. */
static bool idle(const struct chat_activity *a)
{
    return !a->model_loading && !a->generating && !a->prefilling && !a->saving;
}

/* What the chat said last on its status line, for an error. */
static const char *last_notice(struct chat *c)
{
    struct chat_status st;
    chat_get_status(c, &st, chat_now());
    return st.notice ? st.notice : "no reason given";
}

static bool wait_until(struct chat *c, until_fn until, const char *what)
{
    double end = wall_seconds() + 600;
    for (;;) {
        struct chat_activity a;
        chat_get_activity(c, &a);
        if (until(&a))
            return true;
        if (wall_seconds() > end) {
            cli_error("%s timed out", what);
            return false;
        }
        chat_wait_events(c, 100);
    }
}

/* Start the chat on session (loading the model) and wait until the model
 * is ready: *load its load time, *settle the time after it until the
 * background work (snapshot, prefill) is done. */
static bool start(struct chat **cp, const struct chat_options *opt, double *load,
                  double *settle, double *settle_cpu)
{
    char err[2048];
    double t0 = wall_seconds();
    struct chat *c = *cp = chat_new(opt, NULL, err, sizeof err);
    if (!c) {
        cli_error("%s", err);
        return false;
    }
    if (!wait_until(c, model_settled, "loading the model"))
        return false;
    struct chat_activity a;
    chat_get_activity(c, &a);
    if (!a.model_ready) {
        cli_error("%s", last_notice(c));
        return false;
    }
    double t1 = wall_seconds(), c1 = cpu_seconds();
    *load = t1 - t0;
    if (!wait_until(c, idle, "the first prefill"))
        return false;
    *settle = wall_seconds() - t1;
    if (settle_cpu)
        *settle_cpu = cpu_seconds() - c1;
    return true;
}

struct reply_cost {
    int seq, computed, reused;
    double ttft, cpu;
};

/* Submit line (owned) and wait for the whole reply and its autosave. */
static bool timed_reply(struct chat *c, char *line, struct reply_cost *r)
{
    double t0 = wall_seconds(), c0 = cpu_seconds();
    chat_submit(c, line);
    struct chat_activity a;
    chat_get_activity(c, &a);
    if (!a.generating) {
        cli_error("no reply: %s", last_notice(c));
        return false;
    }
    r->seq = (int)a.n_tokens;
    if (!wait_until(c, first_token, "the first token"))
        return false;
    r->ttft = wall_seconds() - t0;
    r->cpu = cpu_seconds() - c0;
    if (!wait_until(c, idle, "the reply"))
        return false;
    chat_last_request(c, &r->reused, &r->computed);
    return true;
}

/* The same reply again without the cache: the whole sequence prefilled. */
static bool timed_reply_fresh(struct chat *c, struct reply_cost *r)
{
    chat_drop_cache(c);
    return timed_reply(c, x_strdup("/retry"), r);
}

/* /model path, then the switch's re-prefill: one row of the switch table. */
static bool timed_switch(struct chat *c, const char *label, const char *path)
{
    double t0 = wall_seconds();
    chat_load_model(c, path);
    struct chat_activity a;
    chat_get_activity(c, &a);
    int reused = (int)a.n_tokens, computed = 0; /* the current model: nothing to do */
    bool loads = a.model_loading;
    if (!wait_until(c, model_settled, "the model switch"))
        return false;
    double t1 = wall_seconds();
    if (!wait_until(c, idle, "the prefill after the switch"))
        return false;
    if (loads)
        chat_last_request(c, &reused, &computed);
    printf("| %-36s | %9.1f | %9.1f | %8d | %8d |\n", label, (t1 - t0) * 1e3,
           (wall_seconds() - t1) * 1e3, computed, reused);
    fflush(stdout);
    return true;
}

/* --switch: a restart without the snapshot (the first load prefills the
 * whole conversation), then back and forth. */
static bool bench_switch(struct chat **cp, const struct chat_options *opt, const char *p1,
                         const char *p2)
{
    chat_free(*cp);
    *cp = NULL;
    char *kv = kvcache_path_for(opt->session_name);
    if (kv)
        kvcache_remove(kv);
    free(kv);
    double load, settle;
    if (!start(cp, opt, &load, &settle, NULL))
        return false;
    struct chat *c = *cp;
    struct chat_activity a;
    chat_get_activity(c, &a);
    printf("\nmodel switch through the worker (%zu tokens in the conversation):\n", a.n_tokens);
    printf("| %-36s | %9s | %9s | %8s | %8s |\n", "step", "load ms", "ttft ms", "computed",
           "reused");
    printf("|--------------------------------------|-----------|-----------|----------|----------|\n");
    int reused, computed;
    chat_last_request(c, &reused, &computed);
    printf("| %-36s | %9.1f | %9.1f | %8d | %8d |\n", "load MODEL, prefill the conversation",
           load * 1e3, settle * 1e3, computed, reused);
    fflush(stdout);
    return timed_switch(c, "switch to MODEL2 (re-prefill)", p2) &&
           timed_switch(c, "switch back to MODEL (kept cache)", p1) &&
           timed_switch(c, "switch to MODEL2 again (kept)", p2);
}

/* After the table: /save, a restart adopting the snapshot, the next turn
 * with it and without. */
static bool bench_resume(struct chat **cp, const struct chat_options *opt, long turn,
                         long n_words, const struct reply_cost *live)
{
    struct chat *c = *cp;
    double t0 = wall_seconds();
    chat_save_session(c, NULL, false);
    if (!wait_until(c, idle, "the snapshot"))
        return false;
    double t_save = wall_seconds() - t0;
    chat_free(c);
    *cp = NULL;
    double load, t_load, cpu_load;
    if (!start(cp, opt, &load, &t_load, &cpu_load))
        return false;
    c = *cp;
    int reused, computed;
    chat_last_request(c, &reused, &computed);
    struct reply_cost next, fresh;
    if (!timed_reply(c, message((int)turn, (int)n_words), &next) ||
        !timed_reply_fresh(c, &fresh))
        return false;
    printf("\nresume from a snapshot (%d ids): save %.1f ms, load %.1f ms; next turn "
           "computes %d, ttft %.1f ms (load + ttft %.1f ms) vs %.1f ms re-prefilling %d\n",
           reused, t_save * 1e3, t_load * 1e3, next.computed, next.ttft * 1e3,
           (t_load + next.ttft) * 1e3, fresh.ttft * 1e3, fresh.computed);
    /* the ratio the resume is judged by, in cpu time too: on a busy
     * machine the wall clock measures the neighbours */
    printf("resume + first token / the last live turn: %.2fx (cpu: load %.1f ms + %.1f ms = "
           "%.2fx of %.1f ms)\n",
           (t_load + next.ttft) / live->ttft, cpu_load * 1e3, next.cpu * 1e3,
           (cpu_load + next.cpu) / live->cpu, live->cpu * 1e3);
    return true;
}

/* ------------------------------------------------------------------ main */

int bench_chat_main(int argc, char **argv)
{
    enum { OPT_CHAT = 0x2100, OPT_TURNS, OPT_WORDS, OPT_REPLY, OPT_TEMPLATE, OPT_SYSTEM,
           OPT_SWITCH, OPT_NO_RESUME, OPT_TOKENIZER };
    static const struct option opts[] = {
        {"chat", 0, NULL, OPT_CHAT},         {"model", 1, NULL, 'm'},
        {"turns", 1, NULL, OPT_TURNS},       {"words", 1, NULL, OPT_WORDS},
        {"reply", 1, NULL, OPT_REPLY},       {"template", 1, NULL, OPT_TEMPLATE},
        {"system", 1, NULL, OPT_SYSTEM},     {"threads", 1, NULL, 't'},
        {"switch", 1, NULL, OPT_SWITCH},     {"no-resume", 0, NULL, OPT_NO_RESUME},
        {"tokenizer", 1, NULL, OPT_TOKENIZER},
        {"help", 0, NULL, 'h'},              {NULL, 0, NULL, 0}};
    const char *model_arg = NULL, *tpl_name = "openelm-instruct", *switch_arg = NULL;
    const char *tokenizer = NULL;
    const char *system = "You are a helpful assistant. Answer briefly.";
    long turns = 8, n_words = 48, n_reply = 32, threads = cmd_all_cpus();
    bool resume = true;
    int opt;
    option_loop_begin();
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
        case OPT_TOKENIZER: tokenizer = optarg; break;
        case 'h': help(); return EXIT_OK;
        default: return option_loop_error(argv[0], opt, argv);
        }
    }
    if (optind < argc)
        return cli_usage_error(argv[0], "unexpected argument '%s'", argv[optind]);

    /* Model names resolve against the user's folders, before the private
     * ones replace them. */
    char err[1024], p1[4096], p2[4096];
    if (!model_resolve(model_arg, p1, sizeof p1, err, sizeof err) ||
        (switch_arg && !model_resolve(switch_arg, p2, sizeof p2, err, sizeof err))) {
        cli_error("%s", err);
        return EXIT_RUNTIME;
    }
    char *root = private_xdg(err, sizeof err);
    if (!root) {
        cli_error("%s", err);
        return EXIT_RUNTIME;
    }
    struct chat_options o = {.template_name = tpl_name, .session_name = "bench",
                             .system = system, .tokenizer = tokenizer};
    cli_common_init(&o.common);
    o.common.model = p1;
    o.common.n_threads = (int)threads;
    o.common.sampler.temperature = 0;
    o.common.max_tokens = (int)n_reply;

    int rc = EXIT_RUNTIME;
    struct chat *c = NULL;
    double load, settle;
    if (!start(&c, &o, &load, &settle, NULL))
        goto done;
    const struct elm_model_info *in = chat_model_info(c);
    struct chat_status st;
    chat_get_status(c, &st, chat_now());
    if (in->remote)
        printf("model %s (on a llama-server, %d slots), template %s, %ld words per message, "
               "%ld-token replies\n",
               in->name, in->remote_slots, st.template_name, n_words, n_reply);
    else
        printf("model %s (%s, %d layers), template %s, %ld threads, %ld words per message, "
               "%ld-token replies\n",
               in->name, elm_dtype_name(in->dtype), in->n_layers, st.template_name, threads,
               n_words, n_reply);
    printf("| %4s | %6s | %8s | %6s | %8s | %8s | %14s | %13s | %12s |\n", "turn", "seq",
           "computed", "reused", "ttft ms", "cpu ms", "fresh computed", "fresh ttft ms",
           "fresh cpu ms");
    printf("|------|--------|----------|--------|----------|----------|----------------|"
           "---------------|--------------|\n");
    fflush(stdout);
    struct reply_cost first = {0}, first_fresh = {0}, last = {0}, last_fresh = {0};
    for (long t = 1; t <= turns; t++) {
        struct reply_cost r, f;
        if (!timed_reply(c, message((int)t, (int)n_words), &r) || !timed_reply_fresh(c, &f))
            goto done;
        printf("| %4ld | %6d | %8d | %6d | %8.1f | %8.1f | %14d | %13.1f | %12.1f |\n", t, r.seq,
               r.computed, r.reused, r.ttft * 1e3, r.cpu * 1e3, f.computed, f.ttft * 1e3,
               f.cpu * 1e3);
        fflush(stdout);
        if (t == 1)
            first = r, first_fresh = f;
        last = r, last_fresh = f;
    }
    printf("turn %ld / turn 1 time to first token: %.2fx with reuse, %.2fx without "
           "(cpu time: %.2fx, %.2fx)\n",
           turns, last.ttft / first.ttft, last_fresh.ttft / first_fresh.ttft,
           last.cpu / first.cpu, last_fresh.cpu / first_fresh.cpu);
    if (resume && !bench_resume(&c, &o, turns + 1, n_words, &last))
        goto done;
    if (switch_arg && !bench_switch(&c, &o, p1, p2))
        goto done;
    rc = EXIT_OK;
done:
    chat_free(c);
    remove_tree(root);
    return rc;
}
