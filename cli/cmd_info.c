/* cmd_info.c: `elmchat info -m MODEL`: the configuration and the per-layer
 * shapes of a model. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/option_loop.h"
#include "src/models/hub_cache.h"
#include "src/base/options.h"
#include "cli/model_open.h"
#include "src/models/model_find.h"
#include "src/template/template.h"

static void help(void)
{
    printf("Usage: elmchat info [-m MODEL] [--check]\n"
           "Load MODEL, check every tensor, and print its configuration and the\n"
           "per-layer table of query heads, KV heads and FFN width.\n"
           "\n"
           "  -m, --model MODEL   model folder (Hugging Face layout) or name\n"
           "                      (default: guide-small-instruct)\n"
           "      --check         also scan every weight for NaN and infinity and name the\n"
           "                      tensors that hold some (exit 1 when any does)\n"
           "  -h, --help          display this help and exit\n"
           "\n"
           "Exit status: 0 ok, 1 runtime error, 2 usage error.\n");
}

/* The model's own sampling defaults, in the /set names. */
static void print_sampling(const struct elm_model_sampling *m)
{
    printf("sampling defaults:   ");
    if (!m->set)
        printf(" none\n");
    if (m->set & ELM_SAMPLING_TEMPERATURE)
        printf(" temperature %g", (double)m->temperature);
    if (m->set & ELM_SAMPLING_TOP_K)
        printf(" top-k %d", m->top_k);
    if (m->set & ELM_SAMPLING_TOP_P)
        printf(" top-p %g", (double)m->top_p);
    if (m->set & ELM_SAMPLING_MIN_P)
        printf(" min-p %g", (double)m->min_p);
    if (m->set & ELM_SAMPLING_REPEAT_PENALTY)
        printf(" repeat-penalty %g", (double)m->repeat_penalty);
    if (m->set & ELM_SAMPLING_REPEAT_LAST_N)
        printf(" repeat-last-n %d", m->repeat_last_n);
    if (m->set)
        printf("\n");
}

static void report_bad(void *user, const char *tensor, long n_bad)
{
    (void)user;
    printf("  %s: %ld NaN or infinite value%s\n", tensor, n_bad, n_bad == 1 ? "" : "s");
}

int cmd_info(int argc, char **argv)
{
    static const struct option opts[] = {
        {"model", 1, NULL, 'm'}, {"help", 0, NULL, 'h'}, {"check", 0, NULL, 'c'},
        {NULL, 0, NULL, 0}};
    const char *model_arg = NULL;
    bool check = false;
    int opt;
    option_loop_begin();
    while ((opt = getopt_long(argc, argv, ":m:h", opts, NULL)) != -1) {
        switch (opt) {
        case 'm': model_arg = optarg; break;
        case 'c': check = true; break;
        case 'h': help(); return EXIT_OK;
        default: return option_loop_error(argv[0], opt, argv);
        }
    }
    if (optind < argc)
        return cli_usage_error(argv[0], "unexpected argument '%s'", argv[optind]);

    elm_model *model = cmd_load_model(model_arg, 1);
    if (!model)
        return EXIT_RUNTIME;
    const struct elm_model_info *in = elm_model_get_info(model);
    const elm_tokenizer *tok = elm_model_tokenizer(model);
    long kv = 0;
    for (int i = 0; i < in->n_layers; i++)
        kv += 2L * in->n_kv_heads[i] * in->head_dim;
    char label[256]; /* a Hub cache snapshot's folder is a commit id */
    printf("name:                 %s\n",
           hub_label_of_path(elm_model_path(model), label, sizeof label) ? label : in->name);
    printf("path:                 %s\n", elm_model_path(model));
    printf("weights:              %s, %" PRIu64 " parameters, %" PRIu64 " bytes\n",
           elm_dtype_name(in->dtype), in->n_params, in->weight_bytes);
    printf("layers:               %d\n", in->n_layers);
    printf("model_dim:            %d\n", in->model_dim);
    printf("head_dim:             %d\n", in->head_dim);
    printf("vocab_size:           %d\n", in->n_vocab);
    printf("max_context_length:   %d\n", in->n_ctx_train);
    printf("num_gqa_groups:       %d\n", in->num_gqa_groups);
    printf("ffn_dim_divisor:      %d\n", in->ffn_dim_divisor);
    printf("rope_freq_constant:   %g\n", (double)in->rope_theta);
    printf("rms_norm_eps:         %g\n", (double)in->rms_eps);
    printf("bos_token_id:         %d\n", in->bos_id);
    printf("eos_token_id:         %d\n", in->eos_id);
    printf("kv_floats_per_token:  %ld\n", kv);
    printf("fingerprint:          %016" PRIx64 "\n", in->fingerprint);
    print_sampling(&in->sampling);
    char *shipped = model_tokenizer_path(elm_model_path(model), NULL);
    if (tok && shipped)
        printf("tokenizer:            %d pieces, elmchat's LLaMA-2 tokenizer.model (the folder "
               "has none): %s\n",
               elm_tokenizer_n_vocab(tok), shipped);
    else if (tok)
        printf("tokenizer:            %d pieces, the model's own\n", elm_tokenizer_n_vocab(tok));
    else
        printf("tokenizer:            none\n");
    free(shipped);
    char why[320]; /* what the chat and run use unless -t or config.yaml say otherwise */
    const char *tpl = template_for_model(elm_model_path(model), why, sizeof why);
    printf("template:             %s (%s)\n", tpl, why);
    printf("kernels:              %s\n", elm_system_info());
    printf("\nlayer  q_heads  kv_heads  ffn_mult  ffn_dim\n");
    for (int i = 0; i < in->n_layers; i++)
        printf("%5d  %7d  %8d  %8.2f  %7d\n", i, in->n_query_heads[i], in->n_kv_heads[i],
               (double)in->ffn_multipliers[i], in->ffn_dim[i]);
    int rc = EXIT_OK;
    if (check) {
        long bad = 0;
        printf("\nweights:\n");
        fflush(stdout);
        if (elm_model_check(model, report_bad, NULL, &bad) != ELM_OK) {
            cli_error("out of memory for the check");
            rc = EXIT_RUNTIME;
        } else if (bad) {
            printf("  %ld NaN or infinite values in all: the model is damaged\n", bad);
            rc = EXIT_RUNTIME;
        } else {
            printf("  every value finite\n");
        }
    }
    elm_model_free(model);
    if (rc != EXIT_OK)
        return rc;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_error("write error: %s", strerror(errno));
        return EXIT_RUNTIME;
    }
    return EXIT_OK;
}
