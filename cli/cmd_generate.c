/* cmd_generate.c: `elmchat generate`: new token ids for a token list, on
 * one line, space-separated. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/option_loop.h"
#include "src/base/options.h"
#include "cli/model_open.h"
#include "src/base/xalloc.h"

#define DEFAULT_N 16

static void help(void)
{
    printf("Usage: elmchat generate [-m MODEL] --tokens IDS [-n N] [OPTION]...\n"
           "Prefill the token ids IDS (e.g. 1,450,4996) and generate up to N new tokens\n"
           "(default %d). Print the new ids on one line, separated by spaces. Generation\n"
           "stops after the end-of-sequence id (which is printed) unless --ignore-eos.\n"
           "\n"
           "  -m, --model MODEL        model folder or name (default: guide-small-instruct)\n"
           "      --tokens IDS         prompt token ids, separated by commas or spaces\n"
           "      --ignore-eos         keep going after the end-of-sequence id\n"
           "%s"
           "  -h, --help               display this help and exit\n"
           "\n"
           "Sampling is greedy by default (--temp 0; ties go to the lowest id). The\n"
           "repetition penalty counts every id of the prompt and of the new tokens.\n"
           "Exit status: 0 ok, 1 runtime error, 2 usage error.\n",
           DEFAULT_N, cli_common_help);
}

/* The new ids on one line, space-separated. */
static void print_id(void *user, int32_t id, const char *text, size_t len)
{
    int *n_printed = user;
    (void)text;
    (void)len;
    if (id >= 0)
        printf("%s%d", (*n_printed)++ ? " " : "", (int)id);
}

int cmd_generate(int argc, char **argv)
{
    enum { OPT_TOKENS = 0x2000, OPT_IGNORE_EOS };
    static const struct option opts[] = {
        {"model", 1, NULL, 'm'}, {"tokens", 1, NULL, OPT_TOKENS},
        {"ignore-eos", 0, NULL, OPT_IGNORE_EOS}, {"help", 0, NULL, 'h'}, CLI_COMMON_LONGOPTS,
        {NULL, 0, NULL, 0}};
    struct cli_common c;
    cli_common_init(&c);
    const char *tokens_arg = NULL;
    bool ignore_eos = false;
    int opt;
    option_loop_begin();
    while ((opt = getopt_long(argc, argv, ":m:n:h", opts, NULL)) != -1) {
        switch (opt) {
        case 'm': c.model = optarg; break;
        case 'n': opt = OPT_MAX_TOKENS; /* -n is --max-tokens */
            if (cli_common_option(&c, argv[0], opt, optarg) < 0)
                return EXIT_USAGE;
            break;
        case OPT_TOKENS: tokens_arg = optarg; break;
        case OPT_IGNORE_EOS: ignore_eos = true; break;
        case 'h': help(); return EXIT_OK;
        case ':':
        case '?': return option_loop_error(argv[0], opt, argv);
        default: {
            int r = cli_common_option(&c, argv[0], opt, optarg);
            if (r < 0)
                return EXIT_USAGE;
            if (r == 0)
                return cli_usage_error(argv[0], "unrecognized option '%s'", argv[optind - 1]);
        }
        }
    }
    if (optind < argc)
        return cli_usage_error(argv[0], "unexpected argument '%s'", argv[optind]);
    int32_t *prompt;
    size_t n_prompt;
    int urc = cmd_parse_tokens(argv[0], tokens_arg, &prompt, &n_prompt);
    if (urc != EXIT_OK)
        return urc;
    int n_new = c.max_tokens >= 0 ? c.max_tokens : DEFAULT_N;

    int rc = EXIT_RUNTIME;
    elm_ctx *ctx = NULL, *draft_ctx = NULL;
    elm_model *draft = NULL;
    float *logits = NULL;
    elm_model *model = cmd_load_model(c.model, c.n_threads);
    if (!model)
        goto done;
    if ((rc = cmd_check_ids(argv[0], model, prompt, n_prompt)) != EXIT_OK)
        goto done;
    rc = EXIT_RUNTIME;
    if (!(ctx = cmd_new_ctx(model, c.n_ctx, c.n_threads, c.exact)))
        goto done;
    if (!cmd_open_draft(c.draft, model, elm_ctx_n_ctx(ctx), c.n_threads, &draft, &draft_ctx))
        goto done;
    const struct elm_model_info *in = elm_model_get_info(model);
    if (n_prompt > (size_t)elm_ctx_n_ctx(ctx)) {
        cli_error("%zu prompt tokens do not fit in a context of %d", n_prompt, elm_ctx_n_ctx(ctx));
        goto done;
    }
    logits = x_reallocarray(NULL, (size_t)in->n_vocab, sizeof *logits);
    elm_status st = elm_decode(ctx, prompt, (int)n_prompt, logits, 0);
    struct elm_generate_result res = {0};
    char err[ELM_ERR_MAX] = "";
    if (st == ELM_OK && n_new > 0) {
        struct elm_generate_params gp = elm_generate_default_params();
        gp.sampler = c.sampler;
        gp.max_tokens = n_new;
        gp.ignore_eos = ignore_eos;
        gp.lookup = !c.no_lookup;
        gp.draft = draft_ctx;
        gp.on_token = print_id;
        int n_printed = 0;
        gp.user = &n_printed;
        st = elm_generate(ctx, logits, &gp, &res, err, sizeof err);
        if (st == ELM_E_NOMEM)
            x_fatal("out of memory");
        if (res.reason == ELM_STOP_CONTEXT_FULL)
            st = ELM_E_CONTEXT_FULL;
    }
    putchar('\n');
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_error("write error: %s", strerror(errno));
        goto done;
    }
    if (st != ELM_OK) {
        cli_error("stopped after %d new tokens: %s", res.n_generated,
                  err[0] ? err : elm_status_str(st));
        goto done;
    }
    rc = EXIT_OK;
done:
    free(logits);
    free(prompt);
    elm_ctx_free(draft_ctx);
    elm_model_free(draft);
    elm_ctx_free(ctx);
    elm_model_free(model);
    return rc;
}
