/* options.c: the command-line options every front end shares (run, generate,
 * the chat), strict number parsing, model name resolution. */
#include "config.h"

#include "src/base/options.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "src/base/diag.h"
#include "src/base/xalloc.h"

bool cli_parse_int(const char *s, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        return false;
    *out = v;
    return true;
}

bool cli_parse_float(const char *s, double min, double max, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < min || v > max)
        return false;
    *out = v;
    return true;
}

bool cli_parse_ids(const char *s, int32_t **ids, size_t *n)
{
    size_t cap = 16, len = 0;
    int32_t *v = x_malloc(cap * sizeof *v);
    const char *p = s;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == ',')
            p++;
        if (!*p)
            break;
        char *end;
        errno = 0;
        long id = strtol(p, &end, 10);
        if (errno || end == p || id < 0 || id > INT32_MAX ||
            (*end && *end != ',' && *end != ' ' && *end != '\t' && *end != '\n')) {
            free(v);
            return false;
        }
        if (len == cap) {
            cap *= 2;
            v = x_reallocarray(v, cap, sizeof *v);
        }
        v[len++] = (int32_t)id;
        p = end;
    }
    *ids = v;
    *n = len;
    return true;
}

bool cli_parse_dtype(const char *s, enum elm_dtype *out)
{
    static const enum elm_dtype types[] = {ELM_DTYPE_F32,  ELM_DTYPE_F16,  ELM_DTYPE_BF16,
                                           ELM_DTYPE_Q8_0, ELM_DTYPE_Q4_0, ELM_DTYPE_Q4_K,
                                           ELM_DTYPE_Q5_K, ELM_DTYPE_Q6_K};
    for (size_t i = 0; i < ARRAY_LEN(types); i++) {
        if (strcasecmp(s, elm_dtype_name(types[i])) == 0) {
            *out = types[i];
            return true;
        }
    }
    return false;
}

void cli_common_init(struct cli_common *c)
{
    memset(c, 0, sizeof *c);
    c->sampler = elm_sampler_default_params();
    c->max_tokens = -1;
}

const char cli_common_help[] =
    "      --ctx N              context length in tokens (default: the model's, 2048)\n"
    "      --threads N          compute threads (default: all cores)\n"
    "      --temp T             sampling temperature, 0 = greedy\n"
    "      --top-k K            keep the K most likely tokens (0 = off)\n"
    "      --top-p P            nucleus sampling threshold (1 = off)\n"
    "      --min-p P            drop tokens below P x the top probability (0 = off)\n"
    "      --repeat-penalty R   HF repetition penalty (1 = off)\n"
    "      --seed N             random seed\n"
    "  -n, --max-tokens N       stop after N new tokens\n"
    "      --exact              BF16 weights: f32 activations in the prefill (by default\n"
    "                           rounded to bf16 where the CPU does bf16 pairs fastest)\n"
    "      --no-lookup          no prompt lookup (drafts of repeated text verified in one\n"
    "                           pass; the reply is the same either way, only its speed)\n"
    "      --draft MODEL        a smaller model of the same vocabulary proposes tokens\n"
    "                           that the model checks in one pass (the same reply)\n"
    "      --no-pull            a model named with -m that is not here (270M-instruct,\n"
    "                           owner/name) is not downloaded from the Hugging Face Hub\n";

int cli_common_option(struct cli_common *c, const char *cmd, int opt, const char *arg)
{
    long l;
    double d;
    switch (opt) {
    case OPT_CTX:
        if (!cli_parse_int(arg, 1, 1 << 20, &l))
            return cli_usage_error(cmd, "invalid --ctx '%s'", arg), -1;
        c->n_ctx = (int)l;
        return 1;
    case OPT_THREADS: {
        /* more threads than a few per core only queue behind each other */
        long cores = elm_cpu_count(), most = 4 * cores;
        if (!cli_parse_int(arg, 1, 1024, &l))
            return cli_usage_error(cmd, "invalid --threads '%s'", arg), -1;
        if (l > most)
            return cli_usage_error(cmd, "--threads %ld: this machine has %ld cores (at most %ld "
                                        "threads)", l, cores, most), -1;
        c->n_threads = (int)l;
        return 1;
    }
    case OPT_TEMP:
        if (!cli_parse_float(arg, 0, 100, &d))
            return cli_usage_error(cmd, "invalid --temp '%s'", arg), -1;
        c->sampler.temperature = (float)d;
        return 1;
    case OPT_TOP_K:
        if (!cli_parse_int(arg, 0, INT32_MAX, &l))
            return cli_usage_error(cmd, "invalid --top-k '%s'", arg), -1;
        c->sampler.top_k = (int)l;
        return 1;
    case OPT_TOP_P:
        if (!cli_parse_float(arg, 0, 1, &d))
            return cli_usage_error(cmd, "invalid --top-p '%s'", arg), -1;
        c->sampler.top_p = (float)d;
        return 1;
    case OPT_MIN_P:
        if (!cli_parse_float(arg, 0, 1, &d))
            return cli_usage_error(cmd, "invalid --min-p '%s'", arg), -1;
        c->sampler.min_p = (float)d;
        return 1;
    case OPT_REPEAT_PENALTY:
        if (!cli_parse_float(arg, 0.01, 100, &d))
            return cli_usage_error(cmd, "invalid --repeat-penalty '%s'", arg), -1;
        c->sampler.repeat_penalty = (float)d;
        return 1;
    case OPT_SEED:
        if (!cli_parse_int(arg, 0, LONG_MAX, &l))
            return cli_usage_error(cmd, "invalid --seed '%s'", arg), -1;
        c->sampler.seed = (uint64_t)l;
        return 1;
    case OPT_MAX_TOKENS:
        if (!cli_parse_int(arg, 0, 1 << 20, &l))
            return cli_usage_error(cmd, "invalid --max-tokens '%s'", arg), -1;
        c->max_tokens = (int)l;
        return 1;
    case OPT_EXACT:
        c->exact = true;
        return 1;
    case OPT_NO_LOOKUP:
        c->no_lookup = true;
        return 1;
    case OPT_NO_PULL:
        c->no_pull = true;
        return 1;
    case OPT_DRAFT:
        c->draft = arg;
        return 1;
    default:
        return 0;
    }
}
