/* bench_spec.c: `elmchat bench --spec FILE` (bench_spec.h).
 *
 * Each prompt of the file is rendered by the template as the first turn of
 * a chat and answered twice from the same prefilled cache: plain decoding,
 * then with the drafts (a draft model, prompt lookup or both).  Only
 * elm_generate is timed, so the draft's catch-up on the prompt counts
 * against it, as it does in the chat.  Greedy replies must be the same id
 * for id; the drafts' acceptance is summed by depth (the profile a
 * projection to other model sizes needs: bench --verify gives the cost
 * side). */
#include "config.h"

#include "cli/bench_spec.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/model_open.h"
#include "cli/json_print.h"
#include "cli/option_loop.h"
#include "cli/stopwatch.h"
#include "src/base/idvec.h"
#include "src/models/model_find.h"
#include "src/base/options.h"
#include "src/config/sampling_rule.h"
#include "src/template/template.h"
#include "src/base/xalloc.h"

static void help(void)
{
    printf("Usage: elmchat bench --spec FILE [-m MODEL] [--draft MODEL] [--lookup] [-k N]\n"
           "                     [-n N] [-r REPS] [-t THREADS] [--template NAME]\n"
           "                     [--system TEXT] [--temperature T] [--json]\n"
           "Answer each prompt of FILE (one a line; blank lines and lines starting with\n"
           "'#' are skipped) as the first turn of a chat, plainly and with drafts, and\n"
           "print per prompt and in total the tokens per second of both, the speed-up,\n"
           "the drafted ids kept, and whether the replies are the same id for id; then\n"
           "where the drafts fail: of the passes that checked a draft's i-th id (every\n"
           "one before it kept), how many kept it too.  The replies are timed, not the\n"
           "prompt's prefill (a draft model's catch-up on the prompt is, as in the chat).\n"
           "\n"
           "  -m, --model MODEL     model folder or name (default: guide-small-instruct)\n"
           "      --draft MODEL     a smaller model of the same vocabulary drafts\n"
           "      --lookup          prompt lookup drafts too (without --draft: always)\n"
           "  -k, --draft-len N     drafts of N ids (1-%d), never turned off (default:\n"
           "                        adaptive, as in the chat)\n"
           "  -n, --n-gen N         at most N tokens a reply (default 128; EOS ends one)\n"
           "  -r, --repetitions N   replies per prompt and kind, times summed (default 1)\n"
           "  -t, --threads N       compute threads (default: all cores)\n"
           "      --template NAME   chat template (default: the model's)\n"
           "      --system TEXT     system prompt (default: the template's)\n"
           "      --temperature T   sample (same seed both ways) instead of greedy\n"
           "      --json            one JSON object per prompt and one for the total\n"
           "  -h, --help            display this help and exit\n"
           "\n"
           "Exit status: 0 ok (replies identical), 1 runtime error or replies that\n"
           "differ, 2 usage error.\n",
           ELM_DRAFT_MAX);
}

/* --------------------------------------------------------- the prompts */

struct prompts {
    char **v;
    int n;
};

static void prompts_fini(struct prompts *p)
{
    for (int i = 0; i < p->n; i++)
        free(p->v[i]);
    free(p->v);
}

/* FILE's prompts; false after saying what is wrong with it. */
static bool prompts_read(const char *path, struct prompts *out)
{
    enum { MAX_PROMPTS = 100000 };
    *out = (struct prompts){0};
    FILE *f = fopen(path, "r");
    if (!f) {
        cli_error("%s: %s", path, strerror(errno));
        return false;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int cap_v = 0, lineno = 0;
    bool good = true;
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (len == 0 || line[0] == '#')
            continue;
        if (memchr(line, '\0', (size_t)len)) {
            cli_error("%s:%d: a NUL byte: not a text file", path, lineno);
            good = false;
            break;
        }
        if (out->n == MAX_PROMPTS) {
            cli_error("%s: more than %d prompts", path, MAX_PROMPTS);
            good = false;
            break;
        }
        if (out->n == cap_v) {
            cap_v = cap_v ? 2 * cap_v : 64;
            out->v = x_reallocarray(out->v, (size_t)cap_v, sizeof *out->v);
        }
        out->v[out->n++] = x_strdup(line);
    }
    if (good && ferror(f)) {
        cli_error("%s: %s", path, strerror(errno));
        good = false;
    }
    free(line);
    fclose(f);
    if (good && out->n == 0) {
        cli_error("%s: no prompts (one a line)", path);
        good = false;
    }
    if (!good)
        prompts_fini(out);
    return good;
}

/* ------------------------------------------------------------- replies */

struct reply {
    int32_t *ids;
    int n, cap;
};

static void collect(void *user, int32_t id, const char *text, size_t len)
{
    (void)text, (void)len;
    struct reply *r = user;
    if (id >= 0 && r->n < r->cap)
        r->ids[r->n++] = id;
}

struct setup {
    elm_ctx *ctx, *draft;
    const struct template *tpl;
    const elm_tokenizer *tok;
    struct elm_sampler_params sampler;
    int max_tokens, draft_k;
    bool lookup;
    float *logits;
};

/* The prompt prefilled (untimed), then one reply into r: its seconds, or < 0. */
static double reply(const struct setup *s, const struct idvec *prompt, bool drafts,
                    struct reply *r, struct elm_generate_result *res)
{
    char err[ELM_ERR_MAX];
    elm_ctx_truncate(s->ctx, 0);
    elm_status st = elm_decode(s->ctx, prompt->v, (int)prompt->n, s->logits, 0);
    if (st != ELM_OK) {
        cli_error("prefill failed: %s", elm_status_str(st));
        return -1.0;
    }
    struct elm_generate_params gp = elm_generate_default_params();
    gp.sampler = s->sampler;
    gp.max_tokens = s->max_tokens;
    gp.ignore_eos = !s->tpl->stop_eos;
    gp.stop_strings = (const char *const *)s->tpl->stop;
    gp.n_stop_strings = (int)s->tpl->n_stop;
    gp.tokenizer = s->tok;
    gp.lookup = drafts && s->lookup;
    gp.draft = drafts ? s->draft : NULL;
    gp.draft_k = drafts ? s->draft_k : 0;
    gp.on_token = collect;
    gp.user = r;
    r->n = 0;
    double t0 = wall_seconds();
    if (elm_generate(s->ctx, s->logits, &gp, res, err, sizeof err) != ELM_OK) {
        cli_error("%s", err);
        return -1.0;
    }
    return wall_seconds() - t0;
}

/* What a set of replies did, summed. */
struct tally {
    int prompts, same, tokens, turned_off;
    double plain_s, spec_s;
    struct elm_draft_stats d;
    struct elm_draft_profile at;
};

static void tally_add(struct tally *t, const struct elm_draft_stats *d,
                      const struct elm_draft_profile *at)
{
    t->d.passes += d->passes;
    t->d.drafted += d->drafted;
    t->d.accepted += d->accepted;
    for (int i = 0; i < ELM_DRAFT_MAX; i++) {
        t->at.reached[i] += at->reached[i];
        t->at.kept[i] += at->kept[i];
    }
}

/* reps plain and drafted replies to one prompt, added to t (and to one
 * prompt's own tally, *one); false when a reply failed. */
static bool answer(const struct setup *s, const struct idvec *prompt, int reps, struct reply *a,
                   struct reply *b, struct tally *one)
{
    *one = (struct tally){.prompts = 1, .same = 1};
    for (int i = 0; i < reps; i++) {
        struct elm_generate_result ra, rb;
        double ta = reply(s, prompt, false, a, &ra);
        double tb = ta >= 0 ? reply(s, prompt, true, b, &rb) : -1.0;
        if (tb < 0)
            return false;
        one->plain_s += ta;
        one->spec_s += tb;
        one->tokens += a->n;
        if (a->n != b->n || memcmp(a->ids, b->ids, (size_t)a->n * sizeof *a->ids) != 0)
            one->same = 0;
        /* both kinds' drafts: lookup's first where it finds something */
        tally_add(one, &rb.lookup, &rb.lookup_profile);
        tally_add(one, &rb.draft, &rb.draft_profile);
        one->turned_off |= rb.lookup.turned_off || rb.draft.turned_off;
    }
    return true;
}

static void tally_merge(struct tally *t, const struct tally *one)
{
    t->prompts += one->prompts;
    t->same += one->same;
    t->tokens += one->tokens;
    t->plain_s += one->plain_s;
    t->spec_s += one->spec_s;
    t->turned_off += one->turned_off;
    tally_add(t, &one->d, &one->at);
}

/* ---------------------------------------------------------------- output */

static double ratio(double a, double b)
{
    return b > 0 ? a / b : 0.0;
}

/* At most max bytes of s, not cutting a character (a table column). */
static int head_bytes(const char *s, int max)
{
    int n = (int)strnlen(s, (size_t)max + 1);
    if (n <= max)
        return n;
    n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

static void print_row(int i, const struct tally *t, const char *prompt, bool json)
{
    double plain = ratio(t->tokens, t->plain_s), spec = ratio(t->tokens, t->spec_s);
    if (json) {
        printf("{\"prompt\": %d, \"text\": ", i);
        json_print_string(prompt);
        printf(", \"tokens\": %d, \"plain_ts\": %.2f, \"spec_ts\": %.2f, \"speedup\": %.3f, "
               "\"passes\": %d, \"drafted\": %d, \"accepted\": %d, \"turned_off\": %s, "
               "\"identical\": %s}\n",
               t->tokens, plain, spec, ratio(t->plain_s, t->spec_s), t->d.passes, t->d.drafted,
               t->d.accepted, t->turned_off ? "true" : "false", t->same ? "true" : "false");
        return;
    }
    char kept[32];
    snprintf(kept, sizeof kept, "%d/%d", t->d.accepted, t->d.drafted);
    printf("| %3d | %6d | %9.1f | %9.1f | %7.2fx | %6d | %11s | %4s | %.*s\n", i, t->tokens,
           plain, spec, ratio(t->plain_s, t->spec_s), t->d.passes, kept,
           t->same ? "yes" : "NO", head_bytes(prompt, 48), prompt);
}

static void print_total(const struct tally *t, bool json)
{
    int reached = 0, kept = 0, depth = 0;
    for (int i = 0; i < ELM_DRAFT_MAX; i++) {
        reached += t->at.reached[i];
        kept += t->at.kept[i];
        if (t->at.reached[i])
            depth = i + 1;
    }
    /* With every depth kept at one rate a, kept / reached is its maximum
     * likelihood estimate (the a of the projection formula). */
    double a = ratio(kept, reached);
    if (json) {
        printf("{\"total\": true, \"prompts\": %d, \"tokens\": %d, \"plain_ts\": %.2f, "
               "\"spec_ts\": %.2f, \"speedup\": %.3f, \"passes\": %d, \"drafted\": %d, "
               "\"accepted\": %d, \"acceptance\": %.4f, \"turned_off\": %d, \"identical\": %d, "
               "\"reached\": [",
               t->prompts, t->tokens, ratio(t->tokens, t->plain_s), ratio(t->tokens, t->spec_s),
               ratio(t->plain_s, t->spec_s), t->d.passes, t->d.drafted, t->d.accepted, a,
               t->turned_off, t->same);
        for (int i = 0; i < depth; i++)
            printf("%s%d", i ? ", " : "", t->at.reached[i]);
        printf("], \"kept\": [");
        for (int i = 0; i < depth; i++)
            printf("%s%d", i ? ", " : "", t->at.kept[i]);
        printf("]}\n");
        return;
    }
    printf("\n%d prompts, %d tokens: plain %.1f t/s, with drafts %.1f t/s: %.2fx; %d passes, "
           "%d of %d drafted ids kept (%.0f%%), %.2f tokens a pass; drafts turned off in %d "
           "replies; replies identical: %d of %d%s\n",
           t->prompts, t->tokens, ratio(t->tokens, t->plain_s), ratio(t->tokens, t->spec_s),
           ratio(t->plain_s, t->spec_s), t->d.passes, t->d.accepted, t->d.drafted,
           100.0 * ratio(t->d.accepted, t->d.drafted),
           ratio(t->d.accepted + t->d.passes, t->d.passes), t->turned_off, t->same, t->prompts,
           t->same == t->prompts ? "" : " (NOT ALL)");
    if (depth == 0)
        return;
    printf("\nwhere the drafts fail (of the passes that checked a draft's i-th id, every one "
           "before it kept):\n| %-8s |", "depth i");
    for (int i = 0; i < depth; i++)
        printf(" %5d |", i + 1);
    printf("\n| %-8s |", "checked");
    for (int i = 0; i < depth; i++)
        printf(" %5d |", t->at.reached[i]);
    printf("\n| %-8s |", "kept");
    for (int i = 0; i < depth; i++)
        printf(" %5d |", t->at.kept[i]);
    printf("\n| %-8s |", "rate");
    for (int i = 0; i < depth; i++)
        printf(" %5.3f |", ratio(t->at.kept[i], t->at.reached[i]));
    printf("\nacceptance over every depth: %d of %d, a = %.3f\n", kept, reached, a);
}

/* ------------------------------------------------------------------ main */

static bool load_template(const char *name, const char *model_arg, struct template **tpl)
{
    char path[4096], err[ELM_ERR_MAX + 256];
    if (!name) {
        if (!model_resolve_file(model_arg, path, sizeof path, err, sizeof err)) {
            cli_error("%s", err);
            return false;
        }
        name = template_default_for_model(path);
    }
    if (!(*tpl = template_load(name, err, sizeof err)))
        cli_error("%s", err);
    return *tpl != NULL;
}

int bench_spec_main(int argc, char **argv)
{
    enum { OPT_SPEC = 0x2200, OPT_SPEC_DRAFT, OPT_LOOKUP, OPT_TEMPLATE, OPT_SYSTEM, OPT_SPEC_TEMP,
           OPT_JSON };
    static const struct option opts[] = {
        {"spec", 1, NULL, OPT_SPEC},         {"model", 1, NULL, 'm'},
        {"draft", 1, NULL, OPT_SPEC_DRAFT},       {"lookup", 0, NULL, OPT_LOOKUP},
        {"draft-len", 1, NULL, 'k'},         {"n-gen", 1, NULL, 'n'},
        {"repetitions", 1, NULL, 'r'},       {"threads", 1, NULL, 't'},
        {"template", 1, NULL, OPT_TEMPLATE}, {"system", 1, NULL, OPT_SYSTEM},
        {"temperature", 1, NULL, OPT_SPEC_TEMP},  {"json", 0, NULL, OPT_JSON},
        {"help", 0, NULL, 'h'},              {NULL, 0, NULL, 0}};
    const char *file = NULL, *model_arg = NULL, *draft_arg = NULL, *tpl_name = NULL;
    const char *system = NULL;
    long k = 0, n_gen = 128, reps = 1, threads = cmd_all_cpus();
    double temperature = 0.0;
    bool lookup = false, json = false;
    int opt;
    option_loop_begin();
    while ((opt = getopt_long(argc, argv, ":m:k:n:r:t:h", opts, NULL)) != -1) {
        switch (opt) {
        case OPT_SPEC: file = optarg; break;
        case 'm': model_arg = optarg; break;
        case OPT_SPEC_DRAFT: draft_arg = optarg; break;
        case OPT_LOOKUP: lookup = true; break;
        case 'k':
            if (!cli_parse_int(optarg, 1, ELM_DRAFT_MAX, &k))
                return cli_usage_error(argv[0], "invalid -k '%s' (1 to %d)", optarg,
                                       ELM_DRAFT_MAX);
            break;
        case 'n':
            if (!cli_parse_int(optarg, 1, 1 << 16, &n_gen))
                return cli_usage_error(argv[0], "invalid -n '%s'", optarg);
            break;
        case 'r':
            if (!cli_parse_int(optarg, 1, 1000, &reps))
                return cli_usage_error(argv[0], "invalid -r '%s'", optarg);
            break;
        case 't':
            if (!cli_parse_int(optarg, 1, 1024, &threads))
                return cli_usage_error(argv[0], "invalid -t '%s'", optarg);
            break;
        case OPT_TEMPLATE: tpl_name = optarg; break;
        case OPT_SYSTEM: system = optarg; break;
        case OPT_SPEC_TEMP: {
            char *end;
            errno = 0;
            temperature = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(temperature >= 0 && temperature <= 100))
                return cli_usage_error(argv[0], "invalid --temperature '%s'", optarg);
            break;
        }
        case OPT_JSON: json = true; break;
        case 'h': help(); return EXIT_OK;
        default: return option_loop_error(argv[0], opt, argv);
        }
    }
    if (optind < argc)
        return cli_usage_error(argv[0], "unexpected argument '%s'", argv[optind]);
    if (!draft_arg)
        lookup = true; /* nothing else drafts */

    int rc = EXIT_RUNTIME;
    struct prompts ps = {0};
    struct template *tpl = NULL;
    elm_model *model = NULL, *draft_model = NULL;
    struct setup s = {.max_tokens = (int)n_gen, .draft_k = (int)k, .lookup = lookup};
    struct reply a = {0}, b = {0};
    if (!prompts_read(file, &ps) || !load_template(tpl_name, model_arg, &tpl) ||
        !(model = cmd_load_model(model_arg, (int)threads)))
        goto done;
    s.tpl = tpl;
    if (!(s.tok = elm_model_tokenizer(model))) {
        cli_error("%s: the model has no tokenizer", elm_model_get_info(model)->name);
        goto done;
    }
    const struct elm_model_info *in = elm_model_get_info(model);
    /* The template's sampling and the model's (sampling_rule.h; not
     * config.yaml's: the comparison is the same on every machine), then
     * greedy unless told. */
    const struct sampling_layers layers = {.tpl = &tpl->sampling, .model = &in->sampling};
    int unused;
    sampling_resolve(&layers, 0, &s.sampler, &unused, NULL);
    s.sampler.temperature = (float)temperature;
    s.sampler.seed = 7;
    /* Every prompt rendered first: the context fits the longest. */
    struct idvec *rendered = x_calloc((size_t)ps.n, sizeof *rendered);
    size_t longest = 0;
    for (int i = 0; i < ps.n; i++) {
        const struct template_msg msg = {ROLE_USER, ps.v[i]};
        int r = template_render_conversation(tpl, s.tok, system, &msg, 1, true, &rendered[i]);
        if (r < 0) {
            cli_error("%s: prompt %d: cannot tokenize: %s", file, i + 1,
                      elm_status_str((elm_status)r));
            goto free_rendered;
        }
        if (rendered[i].n > longest)
            longest = rendered[i].n;
    }
    long need = (long)longest + n_gen + 1;
    if (need > in->n_ctx_train) {
        cli_error("%s: a prompt of %zu tokens and a reply of %ld do not fit in the model's "
                  "context of %d", file, longest, n_gen, in->n_ctx_train);
        goto free_rendered;
    }
    if (!(s.ctx = cmd_new_ctx(model, (int)need, (int)threads, false)) ||
        !cmd_open_draft(draft_arg, model, (int)need, (int)threads, &draft_model, &s.draft))
        goto free_rendered;
    s.logits = x_reallocarray(NULL, (size_t)in->n_vocab, sizeof *s.logits);
    a = (struct reply){x_reallocarray(NULL, (size_t)n_gen, sizeof(int32_t)), 0, (int)n_gen};
    b = (struct reply){x_reallocarray(NULL, (size_t)n_gen, sizeof(int32_t)), 0, (int)n_gen};

    if (!json) {
        char len[32];
        snprintf(len, sizeof len, k ? "drafts of %ld" : "adaptive drafts", k);
        printf("model %s (%s); %s by %s%s%s; %s replies of at most %ld tokens; %ld "
               "thread%s; %d prompts from %s\n",
               in->name, elm_dtype_name(in->dtype), len, draft_arg ? draft_arg : "",
               draft_arg && lookup ? " and " : "", lookup ? "prompt lookup" : "",
               temperature > 0 ? "sampled" : "greedy", n_gen, threads,
               threads == 1 ? "" : "s", ps.n, file);
        printf("| %3s | %6s | %9s | %9s | %8s | %6s | %11s | %4s | prompt\n", "#", "tokens",
               "plain t/s", "spec t/s", "speed-up", "passes", "kept", "same");
        printf("|-----|--------|-----------|-----------|----------|--------|-------------|"
               "------|-------\n");
    }
    fflush(stdout);
    struct tally warm, total = {0};
    if (!answer(&s, &rendered[0], 1, &a, &b, &warm)) /* caches, pages, clocks */
        goto free_rendered;
    for (int i = 0; i < ps.n; i++) {
        struct tally one;
        if (!answer(&s, &rendered[i], (int)reps, &a, &b, &one))
            goto free_rendered;
        print_row(i + 1, &one, ps.v[i], json);
        fflush(stdout);
        tally_merge(&total, &one);
    }
    print_total(&total, json);
    if (ferror(stdout))
        cli_error("write error: %s", strerror(errno));
    else
        rc = total.same == total.prompts ? EXIT_OK : EXIT_RUNTIME;
free_rendered:
    for (int i = 0; i < ps.n; i++)
        idvec_fini(&rendered[i]);
    free(rendered);
done:
    free(a.ids);
    free(b.ids);
    free(s.logits);
    elm_ctx_free(s.draft);
    elm_model_free(draft_model);
    elm_ctx_free(s.ctx);
    elm_model_free(model);
    template_free(tpl);
    prompts_fini(&ps);
    return rc;
}
