/* cmd_logits.c: `elmchat logits`: raw little-endian f32 logits of a token
 * list, the last position's row or (--all) every position's row in order. */
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

static void help(void)
{
    printf("Usage: elmchat logits [-m MODEL] --tokens IDS -o FILE [--all]\n"
           "Run the model on the token ids IDS (e.g. 1,450,4996) in one batch and write\n"
           "the logits as raw little-endian float32: the last position's row of\n"
           "vocab_size values, or with --all one row per position, in order.\n"
           "\n"
           "  -m, --model MODEL   model folder or name (default: guide-small-instruct)\n"
           "      --tokens IDS    token ids, separated by commas or spaces\n"
           "  -o, --output FILE   where to write the logits ('-' for standard output)\n"
           "      --all           every position's row, not only the last\n"
           "      --ctx N         context length (default: the model's)\n"
           "      --threads N     compute threads (default: all cores)\n"
           "  -h, --help          display this help and exit\n"
           "\n"
           "Exit status: 0 ok, 1 runtime error, 2 usage error.\n");
}

int cmd_logits(int argc, char **argv)
{
    enum { OPT_TOKENS = 0x2000, OPT_ALL };
    static const struct option opts[] = {
        {"model", 1, NULL, 'm'}, {"tokens", 1, NULL, OPT_TOKENS}, {"output", 1, NULL, 'o'},
        {"all", 0, NULL, OPT_ALL}, {"help", 0, NULL, 'h'}, CLI_COMMON_LONGOPTS,
        {NULL, 0, NULL, 0}};
    struct cli_common c;
    cli_common_init(&c);
    const char *tokens_arg = NULL, *out_path = NULL;
    bool all = false;
    int opt;
    option_loop_begin();
    while ((opt = getopt_long(argc, argv, ":m:o:h", opts, NULL)) != -1) {
        switch (opt) {
        case 'm': c.model = optarg; break;
        case 'o': out_path = optarg; break;
        case OPT_TOKENS: tokens_arg = optarg; break;
        case OPT_ALL: all = true; break;
        case 'h': help(); return EXIT_OK;
        case OPT_CTX:
        case OPT_THREADS:
            if (cli_common_option(&c, argv[0], opt, optarg) < 0)
                return EXIT_USAGE;
            break;
        default: return option_loop_error(argv[0], opt, argv);
        }
    }
    if (optind < argc)
        return cli_usage_error(argv[0], "unexpected argument '%s'", argv[optind]);
    if (tokens_arg && !out_path) /* a missing --tokens is said first */
        return cli_usage_error(argv[0], "-o FILE is required");
    int32_t *ids;
    size_t n;
    int urc = cmd_parse_tokens(argv[0], tokens_arg, &ids, &n);
    if (urc != EXIT_OK)
        return urc;

    int rc = EXIT_RUNTIME;
    float *logits = NULL;
    FILE *out = NULL;
    elm_ctx *ctx = NULL;
    elm_model *model = cmd_load_model(c.model, c.n_threads);
    if (!model)
        goto done;
    if ((rc = cmd_check_ids(argv[0], model, ids, n)) != EXIT_OK)
        goto done;
    rc = EXIT_RUNTIME;
    const struct elm_model_info *in = elm_model_get_info(model);
    if (c.n_ctx <= 0 && n > (size_t)in->n_ctx_train) {
        cli_error("%zu tokens do not fit in the model's context of %d", n, in->n_ctx_train);
        goto done;
    }
    if (!(ctx = cmd_new_ctx(model, c.n_ctx, c.n_threads, true /* the reference: always exact */)))
        goto done;
    size_t rows = all ? n : 1;
    logits = x_reallocarray(NULL, rows * (size_t)in->n_vocab, sizeof *logits);
    elm_status st = elm_decode(ctx, ids, (int)n, logits, all ? ELM_DECODE_ALL_LOGITS : 0);
    if (st != ELM_OK) {
        cli_error("decoding %zu tokens: %s", n, elm_status_str(st));
        goto done;
    }
    out = strcmp(out_path, "-") == 0 ? stdout : fopen(out_path, "wb");
    if (!out) {
        cli_error("%s: %s", out_path, strerror(errno));
        goto done;
    }
    /* The host is little-endian (configure checks), so the floats go out as they are. */
    size_t count = rows * (size_t)in->n_vocab;
    bool okay = fwrite(logits, sizeof *logits, count, out) == count;
    okay = (out == stdout ? fflush(out) == 0 : fclose(out) == 0) && okay;
    out = NULL;
    if (!okay) {
        cli_error("%s: write error: %s", out_path, strerror(errno));
        goto done;
    }
    rc = EXIT_OK;
done:
    if (out && out != stdout)
        fclose(out);
    free(logits);
    free(ids);
    elm_ctx_free(ctx);
    elm_model_free(model);
    return rc;
}
