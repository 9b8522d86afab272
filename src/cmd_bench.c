/* cmd_bench.c: `elmchat bench`: prefill and decode speed, like llama-bench's
 * pp (one batch of -p tokens) and tg (-n single-token decode steps from an
 * empty cache) tests.  Each test runs once untimed, then -r timed times. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/bench_chat.h"
#include "src/cli.h"
#include "src/cmd_model.h"
#include "src/stopwatch.h"
#include "src/xalloc.h"

static void help(void)
{
    printf("Usage: elmchat bench [-m MODEL] [-p N] [-n N] [-t THREADS] [-r REPS] [--json]\n"
           "Measure prompt processing (ppN: one batch of N tokens) and text generation\n"
           "(tgN: N decode steps of one token each, from an empty cache) in tokens per\n"
           "second, as llama-bench does.  Each test runs once to warm up, then REPS times.\n"
           "Decode reads every weight once a token: tg rows also show the weight bytes\n"
           "read per second and their share of this machine's read bandwidth, measured\n"
           "first with the same threads (the roofline).\n"
           "\n"
           "  -m, --model MODEL     model folder or name (default: the bundled demo model)\n"
           "  -p, --n-prompt N      prompt tokens (default 512; 0 skips the pp test)\n"
           "  -n, --n-gen N         generated tokens (default 128; 0 skips the tg test)\n"
           "  -t, --threads N       compute threads (default: all cores)\n"
           "  -r, --repetitions N   timed runs per test (default 5)\n"
           "      --json            one JSON object per line and test, not a table\n"
           "      --kernels         print the compute kernels chosen for this CPU and exit\n"
           "      --no-bandwidth    skip the bandwidth measurement (no roofline)\n"
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

struct result {
    char test[32];
    int n_prompt, n_gen;
    double avg_ts, sd_ts, avg_ms;
};

static bool run_test(elm_ctx *ctx, const int32_t *ids, int n_prompt, int n_gen, int reps,
                     float *logits, struct result *r)
{
    int n = n_prompt ? n_prompt : n_gen;
    snprintf(r->test, sizeof r->test, "%s%d", n_prompt ? "pp" : "tg", n);
    r->n_prompt = n_prompt;
    r->n_gen = n_gen;
    if (run_once(ctx, ids, n_prompt, n_gen, logits) < 0)
        return false;
    double sum = 0, sum2 = 0, sum_s = 0;
    for (int i = 0; i < reps; i++) {
        double s = run_once(ctx, ids, n_prompt, n_gen, logits);
        if (s < 0)
            return false;
        double ts = n / s;
        sum += ts;
        sum2 += ts * ts;
        sum_s += s;
    }
    r->avg_ts = sum / reps;
    r->sd_ts = reps > 1 ? sqrt(fmax(0.0, (sum2 - sum * sum / reps) / (reps - 1))) : 0.0;
    r->avg_ms = sum_s / reps * 1e3;
    return true;
}

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

int cmd_bench(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) /* `bench --chat`: src/bench_chat.c */
        if (strcmp(argv[i], "--chat") == 0)
            return bench_chat_main(argc, argv);
    enum { OPT_JSON = 0x2000, OPT_KERNELS, OPT_NO_BW };
    static const struct option opts[] = {
        {"model", 1, NULL, 'm'},       {"n-prompt", 1, NULL, 'p'}, {"n-gen", 1, NULL, 'n'},
        {"threads", 1, NULL, 't'},     {"repetitions", 1, NULL, 'r'},
        {"json", 0, NULL, OPT_JSON},   {"help", 0, NULL, 'h'},     {"kernels", 0, NULL, OPT_KERNELS},
        {"no-bandwidth", 0, NULL, OPT_NO_BW}, {NULL, 0, NULL, 0}};
    const char *model_arg = NULL;
    long n_prompt = 512, n_gen = 128, threads = 0, reps = 5;
    bool json = false, bandwidth = true;
    int opt;
    optind = 1;
    opterr = 0;
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
        case 'h': help(); return EXIT_OK;
        case ':': return cli_usage_error(argv[0], "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error(argv[0], "unrecognized option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage_error(argv[0], "unexpected argument '%s'", argv[optind]);
    if (threads == 0)
        threads = cmd_all_cpus();

    int rc = EXIT_RUNTIME;
    elm_ctx *ctx = NULL;
    float *logits = NULL;
    int32_t *ids = NULL;
    elm_model *model = cmd_load_model(model_arg, (int)threads);
    if (!model)
        return EXIT_RUNTIME;
    const struct elm_model_info *in = elm_model_get_info(model);
    long need = n_prompt > n_gen ? n_prompt : n_gen;
    if (need > in->n_ctx_train) {
        cli_error("%ld tokens do not fit in the model's context of %d", need, in->n_ctx_train);
        goto done;
    }
    if (!(ctx = cmd_new_ctx(model, need > 0 ? (int)need : 1, (int)threads)))
        goto done;
    logits = x_reallocarray(NULL, (size_t)in->n_vocab, sizeof *logits);
    ids = x_reallocarray(NULL, (size_t)need + 1, sizeof *ids);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    ids[0] = in->bos_id;
    for (long i = 1; i <= need; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = (int32_t)((s >> 33) % (uint64_t)in->n_vocab);
    }

    /* 256 MiB: far more than any L3 cache. */
    double bw = bandwidth && n_gen > 0 ? elm_measure_bandwidth((int)threads, (size_t)256 << 20) : 0;
    double bytes_tok = (double)in->weight_bytes; /* every weight once a token (tied head) */
    if (!json) {
        printf("| %-24s | %-5s | %9s | %9s | %7s | %7s | %20s | %6s | %6s |\n", "model", "type",
               "size", "params", "threads", "test", "t/s", "GB/s", "of bw");
        printf("| %.24s | %.5s | %.9s | %.9s | %.7s | %.7s | %.20s | %.6s | %.6s |\n",
               "------------------------", "-----", "---------", "---------", "-------",
               "-------", "--------------------", "------", "------");
        fflush(stdout);
    }
    for (int k = 0; k < 2; k++) {
        int np = k == 0 ? (int)n_prompt : 0, ng = k == 1 ? (int)n_gen : 0;
        if (np == 0 && ng == 0)
            continue;
        struct result r;
        if (!run_test(ctx, ids, np, ng, (int)reps, logits, &r))
            goto done;
        if (json) {
            printf("{\"test\": \"%s\", \"tokens_per_second\": %.3f, \"stddev\": %.3f, "
                   "\"threads\": %ld, \"type\": \"%s\", \"model\": ",
                   r.test, r.avg_ts, r.sd_ts, threads, elm_dtype_name(in->dtype));
            json_string(in->name);
            printf(", \"n_params\": %" PRIu64 ", \"model_bytes\": %" PRIu64
                   ", \"n_prompt\": %d, \"n_gen\": %d, \"reps\": %ld, \"avg_ms\": %.3f",
                   in->n_params, in->weight_bytes, r.n_prompt, r.n_gen, reps, r.avg_ms);
            if (r.n_gen > 0)
                printf(", \"weight_gb_per_second\": %.3f", r.avg_ts * bytes_tok / 1e9);
            if (r.n_gen > 0 && bw > 0)
                printf(", \"machine_gb_per_second\": %.3f, \"roofline_tokens_per_second\": "
                       "%.3f, \"roofline_share\": %.4f",
                       bw / 1e9, bw / bytes_tok, r.avg_ts * bytes_tok / bw);
            printf(", \"kernels\": ");
            json_string(elm_system_info());
            printf("}\n");
        } else {
            char ts[32];
            snprintf(ts, sizeof ts, "%.2f ± %.2f", r.avg_ts, r.sd_ts);
            char gbs[16] = "", share[16] = "";
            if (r.n_gen > 0)
                snprintf(gbs, sizeof gbs, "%.1f", r.avg_ts * bytes_tok / 1e9);
            if (r.n_gen > 0 && bw > 0)
                snprintf(share, sizeof share, "%.1f %%", 100.0 * r.avg_ts * bytes_tok / bw);
            printf("| %-24.24s | %-5s | %5.0f MiB | %7.2f M | %7ld | %7s | %21s | %6s | %6s |\n",
                   in->name, elm_dtype_name(in->dtype), (double)in->weight_bytes / (1 << 20),
                   (double)in->n_params / 1e6, threads, r.test, ts, gbs, share);
        }
        fflush(stdout);
    }
    if (!json && bw > 0)
        printf("\nread bandwidth %.1f GB/s with %ld threads: decode roofline %.1f t/s\n"
               "kernels: %s\n",
               bw / 1e9, threads, bw / bytes_tok, elm_system_info());
    if (ferror(stdout)) {
        cli_error("write error: %s", strerror(errno));
        goto done;
    }
    rc = EXIT_OK;
done:
    free(ids);
    free(logits);
    elm_ctx_free(ctx);
    elm_model_free(model);
    return rc;
}
