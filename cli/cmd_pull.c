/* cmd_pull.c: `elmchat pull NAME`: an OpenELM model from the Hugging Face
 * Hub into the Hub cache, with a progress bar, resumable after Ctrl-C or a
 * dropped connection; `--quantize TYPE` writes a GGUF beside it. */
#include "config.h"

#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/option_loop.h"
#include "ui/pull_progress.h"
#include "src/config/config_file.h"
#include "src/models/http_fetch.h"
#include "src/models/hub_cache.h"
#include "src/models/hub_pull.h"
#include "src/models/model_find.h"
#include "src/base/options.h"
#include "src/base/xalloc.h"

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    interrupted = sig; /* the exit status says which: 128 + it */
}

static void help(void)
{
    char *cache = hub_cache_dir();
    printf("Usage: elmchat pull NAME [OPTION...]\n"
           "Download a model from the Hugging Face Hub into its cache (%s),\n"
           "where elmchat -m NAME, huggingface-cli, transformers and mlx find it.\n"
           "NAME: 270M, 450M, 1.1B or 3B, each also with -instruct (Apple's OpenELM\n"
           "repositories), or any owner/name repository id.\n"
           "\n"
           "  -r, --revision REV    a branch, tag or commit (default: main)\n"
           "  -i, --include GLOB    only the files matching GLOB (repeatable; default:\n"
           "                        every file but other weight formats beside safetensors)\n"
           "      --quantize TYPE   then write elmchat-TYPE.gguf beside it (q8_0, q4_k, ...):\n"
           "                        the chat uses it (q8_0 prefills 2.5x, decodes 1.8x bf16)\n"
           "  -q, --quiet           no progress, only errors and the folder\n"
           "  -h, --help            display this help and exit\n"
           "\n"
           "Ctrl-C or a dropped connection leaves a partial file that the next pull\n"
           "resumes; every file is checked against the Hub's sha256 (or git id) before\n"
           "it gets its name.  HF_ENDPOINT names a mirror, HF_TOKEN (or the token of\n"
           "huggingface-cli login) a private or gated repository's access; HF_HUB_OFFLINE=1\n"
           "refuses to download.\n"
           "Exit status: 0 ok, 1 runtime error, 2 usage error, 130 interrupted (143 on\n"
           "SIGTERM).\n",
           cache);
    free(cache);
}

int cmd_pull(int argc, char **argv)
{
    static const struct option opts[] = {{"revision", 1, NULL, 'r'}, {"include", 1, NULL, 'i'},
                                         {"quantize", 1, NULL, 'Q'}, {"quiet", 0, NULL, 'q'},
                                         {"help", 0, NULL, 'h'},     {NULL, 0, NULL, 0}};
    const char *revision = NULL;
    char **include = x_calloc((size_t)argc + 1, sizeof *include);
    size_t n_include = 0;
    bool quiet = false, quantize = false;
    enum elm_dtype qtype = ELM_DTYPE_Q8_0;
    int opt;
    option_loop_begin();
    while ((opt = getopt_long(argc, argv, ":r:i:qh", opts, NULL)) != -1) {
        switch (opt) {
        case 'r':
            revision = optarg;
            break;
        case 'i':
            include[n_include++] = optarg;
            break;
        case 'Q':
            if (!cli_parse_dtype(optarg, &qtype) && qtype != ELM_DTYPE_F32) {
                free(include);
                return cli_usage_error(
                    argv[0], "unknown type '%s' (q8_0, q4_k, q4_0, q5_k, q6_k, f16, bf16)", optarg);
            }
            quantize = true;
            break;
        case 'q':
            quiet = true;
            break;
        case 'h':
            free(include);
            help();
            return EXIT_OK;
        default:
            free(include);
            return option_loop_error(argv[0], opt, argv);
        }
    }
    if (argc - optind != 1) {
        free(include);
        return cli_usage_error(argv[0], "expected one NAME (270M-instruct, owner/name, ...)");
    }
    const char *name = argv[optind];
    char id[256];
    if (!hub_known_repo(name, id, sizeof id))
        snprintf(id, sizeof id, "%s", name);
    if (!hub_repo_id_valid(id)) {
        free(include);
        return cli_usage_error(argv[0],
                               "'%s' is neither a known model (270M, 450M, 1.1B, 3B, with or "
                               "without -instruct) nor a repository id owner/name",
                               name);
    }
    char err[2048];
    struct config cfg;
    config_init(&cfg);
    if (config_load(&cfg, NULL, err, sizeof err) != 0) {
        free(include);
        cli_error("%s", err);
        return EXIT_RUNTIME;
    }
    if (!quantize && cfg.pull_quantize && cli_parse_dtype(cfg.pull_quantize, &qtype))
        quantize = true; /* config.yaml's pull_quantize */
    config_fini(&cfg);
    if (fetch_global_init(err, sizeof err) != 0) {
        free(include);
        cli_error("%s", err);
        return EXIT_RUNTIME;
    }
    struct sigaction sa = {.sa_handler = on_sigint}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);

    struct pull_progress pp;
    pull_progress_init(&pp, id,
                       quiet                   ? PULL_PROGRESS_NONE
                       : isatty(STDERR_FILENO) ? PULL_PROGRESS_BAR
                                               : PULL_PROGRESS_LINES,
                       stderr);
    struct hub_pull_opts po = {.id = id,
                               .revision = revision,
                               .include = n_include ? include : NULL,
                               .on_event = pull_progress_event,
                               .ctx = &pp,
                               .cancel = &interrupted};
    struct hub_pull_result r;
    enum hub_status st = hub_pull(&po, &r, err, sizeof err);
    pull_progress_end(&pp);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    fetch_global_cleanup();
    free(include);
    if (st != HUB_OK) {
        cli_error("%s", err);
        return st == HUB_CANCELLED ? 128 + (interrupted ? (int)interrupted : SIGINT) : EXIT_RUNTIME;
    }
    if (!quiet)
        pull_progress_summary(&pp, &r);
    int rc = EXIT_OK;
    if (quantize) {
        char *out = x_asprintf("%s/elmchat-%s.gguf", r.snapshot, elm_dtype_name(qtype));
        rc = quantize_model(r.snapshot, out, qtype, quiet);
        free(out);
    }
    if (rc == EXIT_OK)
        printf("%s\n", r.snapshot);
    if (rc == EXIT_OK && !quiet)
        fprintf(stderr, "chat with it: elmchat -m %s\n", name);
    free(r.snapshot);
    return rc;
}
