/* cmd_quantize.c: `elmchat quantize MODEL OUT.gguf --type TYPE`: write a
 * model (Hugging Face folder or GGUF) as a GGUF file llama.cpp can load. */
#include "config.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "cli/option_loop.h"
#include "src/models/model_convert.h"
#include "src/models/model_find.h"
#include "src/base/options.h"

static void help(void)
{
    printf("Usage: elmchat quantize MODEL OUT.gguf [--type TYPE] [--quiet]\n"
           "Write MODEL (a Hugging Face folder with config.json and safetensors, a\n"
           ".gguf file, or a model name) as an OpenELM GGUF file in the layout of\n"
           "llama.cpp's converter, which llama.cpp and elmchat both load.\n"
           "\n"
           "  -t, --type TYPE   weight type of the matrices: f32, f16, bf16, q8_0, q4_0,\n"
           "                    q4_k, q5_k or q6_k (default q8_0).  Norm weights stay\n"
           "                    f32; the embedding (which is also the output layer) is\n"
           "                    q8_0 with q4_0, q6_k with q4_k and q5_k; K-quant rows\n"
           "                    whose length 256 does not divide are q8_0.\n"
           "  -q, --quiet       no progress and no summary\n"
           "  -h, --help        display this help and exit\n"
           "\n"
           "The vocabulary comes from MODEL's tokenizer.model (or the GGUF's own).\n"
           "Exit status: 0 ok, 1 runtime error, 2 usage error.\n");
}


static void progress(float f, void *user)
{
    int *last = user;
    int pct = (int)(f * 100.0f);
    if (pct != *last) {
        *last = pct;
        fprintf(stderr, "\relmchat quantize: %3d%%", pct);
        fflush(stderr);
    }
}

int quantize_model(const char *path, const char *out, enum elm_dtype type, bool quiet)
{
    struct elm_quantize_params qp = elm_quantize_default_params();
    qp.type = type;
    char err[ELM_ERR_MAX];
    int last = -1;
    if (!quiet) {
        qp.progress_cb = progress;
        qp.progress_user = &last;
    }
    char *from = NULL;
    elm_status st = model_convert(path, out, &qp, &from, err, sizeof err);
    if (!quiet && last >= 0)
        fputc('\n', stderr);
    if (from && !quiet)
        fprintf(stderr, "elmchat quantize: vocabulary from %s (the model has none)\n", from);
    free(from);
    if (st) {
        cli_error("%s", err);
        return EXIT_RUNTIME;
    }
    if (quiet)
        return EXIT_OK;

    /* Load what was written: a check of the file, and its summary. */
    struct elm_model_params mp = elm_model_default_params();
    mp.n_threads = 1;
    elm_model *m;
    if ((st = elm_model_load(out, &mp, &m, err, sizeof err))) {
        cli_error("the file just written does not load: %s", err);
        return EXIT_RUNTIME;
    }
    const struct elm_model_info *in = elm_model_get_info(m);
    struct stat sb;
    long long size = stat(out, &sb) == 0 ? (long long)sb.st_size : -1;
    printf("%s: %s, %d layers, %llu parameters, %lld bytes\n", out, elm_dtype_name(qp.type),
           in->n_layers, (unsigned long long)in->n_params, size);
    if (!elm_model_tokenizer(m))
        fprintf(stderr,
                "elmchat quantize: warning: %s has no vocabulary (no tokenizer.model next to "
                "the model); llama.cpp will not run it\n",
                out);
    elm_model_free(m);
    return EXIT_OK;
}

int cmd_quantize(int argc, char **argv)
{
    static const struct option opts[] = {{"type", 1, NULL, 't'},
                                         {"quiet", 0, NULL, 'q'},
                                         {"help", 0, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    struct elm_quantize_params qp = elm_quantize_default_params();
    bool quiet = false;
    int opt;
    option_loop_begin();
    while ((opt = getopt_long(argc, argv, ":t:qh", opts, NULL)) != -1) {
        switch (opt) {
        case 't':
            if (!cli_parse_dtype(optarg, &qp.type))
                return cli_usage_error(argv[0],
                                       "unknown type '%s' (f32, f16, bf16, q8_0, q4_0, q4_k, q5_k, q6_k)",
                                       optarg);
            break;
        case 'q': quiet = true; break;
        case 'h': help(); return EXIT_OK;
        default: return option_loop_error(argv[0], opt, argv);
        }
    }
    if (argc - optind != 2)
        return cli_usage_error(argv[0], "expected MODEL and OUT.gguf");
    const char *model_arg = argv[optind], *out = argv[optind + 1];
    size_t n = strlen(out);
    if (n < 5 || strcmp(out + n - 5, ".gguf") != 0)
        return cli_usage_error(argv[0], "the output file name must end in .gguf");

    char path[PATH_MAX], err[ELM_ERR_MAX];
    if (!model_resolve_file(model_arg, path, sizeof path, err, sizeof err)) {
        cli_error("%s", err);
        return EXIT_RUNTIME;
    }
    return quantize_model(path, out, qp.type, quiet);
}
