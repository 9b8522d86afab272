/* cmd_run.c: `elmchat run`: one reply to stdout, no TUI (or, with --dry-run,
 * the token ids the model would receive). */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/grammar_option.h"
#include "cli/model_open.h"
#include "cli/run_server.h"
#include "src/conversation/attachment.h"
#include "src/models/model_find.h"
#include "src/base/macros.h"
#include "src/template/roles.h"
#include "src/base/options.h"
#include "src/store/paths.h"
#include "src/config/config_file.h"
#include "src/config/sampling_rule.h"
#include "src/store/store.h"
#include "src/template/template.h"
#include "src/base/utf8.h"
#include "src/base/xalloc.h"
#include "ui/pull_progress.h"

#define RUN_MAX_INPUT (16 * 1024 * 1024)
#define RUN_DEFAULT_MAX_TOKENS 256

static void print_help(void)
{
    printf("Usage: elmchat run [-m MODEL] [OPTION]... [-p TEXT] [-f FILE]\n"
           "One reply to stdout for a one-turn conversation (the prompt is read from\n"
           "standard input when neither -p nor -f is given).  With -p, -f FILE is\n"
           "attached to the message, as /read attaches a file in the chat (-f -:\n"
           "standard input, e.g. git diff | elmchat run -p 'review this' -f -).\n"
           "\n"
           "  -m, --model MODEL        model folder, .gguf file, name or alias (default:\n"
           "                           default_model of config.yaml, else $ELMCHAT_MODEL,\n"
           "                           else the bundled guide-small-instruct), or\n"
           "                           server:URL (a llama-server; $ELMCHAT_API_KEY)\n"
           "  -t, --template NAME      chat template (default: config.yaml's, else the\n"
           "                           model's: openelm-instruct for an Instruct model,\n"
           "                           known by its chat template, Hub repo id, metadata,\n"
           "                           then name; else plain; --verbose says why)\n"
           "      --system TEXT        system prompt\n"
           "      --role NAME          a role preset's system prompt (as the chat's --role)\n"
           "  -p, --prompt TEXT        the user message\n"
           "  -f, --file FILE          read the user message from FILE (-: standard\n"
           "                           input; with -p: attach it)\n"
           "      --dry-run            print the prompt's token ids and exit\n"
           "      --tokenizer FILE     tokenizer.model or tokenizer.json (with --dry-run\n"
           "                           no model is needed; with server:URL the prompt's,\n"
           "                           default elmchat's LLaMA-2 one)\n"
           "  -v, --verbose            say on standard error which model, template (and\n"
           "                           why) and system prompt the reply uses\n"
           GRAMMAR_OPTION_HELP
           "%s"
           "  -h, --help               display this help and exit\n"
           "\n"
           "The default sampling comes from the template, then the model's own\n"
           "(generation_config.json, or the GGUF's general.sampling keys), then\n"
           "config.yaml, then the options; at most %d new tokens unless -n says\n"
           "otherwise.  With --json, --json-schema or --grammar, the exit status is\n"
           "1 when the reply ended before the value was complete (e.g. at -n; a\n"
           "message says so).  With -m server:URL the same grammar is sent to the\n"
           "server (llama-server's \"grammar\").\n",
           cli_common_help, RUN_DEFAULT_MAX_TOKENS);
}

enum { OPT_SYSTEM = 0x2000, OPT_DRY_RUN, OPT_TOKENIZER, OPT_ROLE, OPT_JSON, OPT_JSON_SCHEMA,
       OPT_GRAMMAR };

/* Which shared options were given (so they win over template and config). */
static unsigned option_bit(int opt)
{
    switch (opt) {
    case OPT_TEMP:
        return ELM_SAMPLING_TEMPERATURE;
    case OPT_TOP_K:
        return ELM_SAMPLING_TOP_K;
    case OPT_TOP_P:
        return ELM_SAMPLING_TOP_P;
    case OPT_MIN_P:
        return ELM_SAMPLING_MIN_P;
    case OPT_REPEAT_PENALTY:
        return ELM_SAMPLING_REPEAT_PENALTY;
    case OPT_SEED:
        return SAMPLING_SEED;
    case OPT_MAX_TOKENS:
        return SAMPLING_MAX_TOKENS;
    default:
        return 0;
    }
}

static char *read_input(const char *file, char *err, size_t err_size)
{
    char *text = NULL;
    size_t len = 0;
    if (file) {
        if (store_read_file(file, RUN_MAX_INPUT, &text, &len, err, err_size) < 0)
            return NULL;
    } else {
        size_t cap = 4096;
        text = x_malloc(cap);
        size_t n;
        while ((n = fread(text + len, 1, cap - len - 1, stdin)) > 0) {
            len += n;
            if (len > RUN_MAX_INPUT) {
                snprintf(err, err_size, "standard input: more than %d bytes", RUN_MAX_INPUT);
                free(text);
                return NULL;
            }
            if (cap - len - 1 == 0) {
                cap *= 2;
                text = x_realloc(text, cap);
            }
        }
        if (ferror(stdin)) {
            snprintf(err, err_size, "standard input: %s", strerror(errno));
            free(text);
            return NULL;
        }
        text[len] = '\0';
    }
    /* `echo question | elmchat run` should not send the newline. */
    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
        text[--len] = '\0';
    if (strlen(text) != len) {
        snprintf(err, err_size, "%s: the text contains a NUL byte", file ? file : "standard input");
        free(text);
        return NULL;
    }
    /* as the chat's sessions: the text must be UTF-8 */
    if (!utf8_check_text(file ? file : "standard input", text, len, err, err_size)) {
        free(text);
        return NULL;
    }
    return text;
}

/* The reply goes to stdout as it comes (elm_generate holds back what may
 * be the start of a stop string). */
static void print_piece(void *user, int32_t id, const char *text, size_t len)
{
    (void)user;
    (void)id;
    if (len) {
        fwrite(text, 1, len, stdout);
        fflush(stdout);
    }
}

static int generate(const char *model_path, const elm_model *model, const elm_tokenizer *tok,
                    const struct template *tpl, const struct cli_common *c,
                    const struct elm_sampler_params *sp, int max_tokens,
                    const struct idvec *prompt, const elm_grammar *grammar, const char *what)
{
    char err[ELM_ERR_MAX] = "";
    struct elm_ctx_params cp = elm_ctx_default_params();
    cp.n_ctx = c->n_ctx;
    cp.n_threads = c->n_threads;
    cp.exact = c->exact;
    elm_ctx *ctx = NULL;
    elm_status st = elm_ctx_new(model, &cp, &ctx, err, sizeof err);
    if (st != ELM_OK) {
        cli_error("%s", err);
        return EXIT_RUNTIME;
    }
    int n_vocab = elm_model_get_info(model)->n_vocab;
    int n_ctx = elm_ctx_n_ctx(ctx);
    if ((int)prompt->n > n_ctx) {
        cli_error("the prompt has %zu tokens, more than the context (%d)", prompt->n, n_ctx);
        elm_ctx_free(ctx);
        return EXIT_RUNTIME;
    }
    for (size_t i = 0; i < prompt->n; i++)
        if (prompt->v[i] < 0 || prompt->v[i] >= n_vocab) {
            /* elm_decode would say only "invalid argument" */
            cli_error("%s: the prompt has token id %d, outside the model's vocabulary of %d: "
                      "the tokenizer is not the model's (give its own with --tokenizer FILE)",
                      model_path, (int)prompt->v[i], n_vocab);
            elm_ctx_free(ctx);
            return EXIT_RUNTIME;
        }
    elm_model *draft = NULL;
    elm_ctx *draft_ctx = NULL;
    if (!cmd_open_draft(c->draft, model, n_ctx, c->n_threads, &draft, &draft_ctx)) {
        elm_ctx_free(ctx);
        return EXIT_RUNTIME;
    }
    float *logits = x_malloc((size_t)n_vocab * sizeof *logits);
    int rc = EXIT_OK;
    st = elm_decode(ctx, prompt->v, (int)prompt->n, logits, 0);
    if (st == ELM_OK && max_tokens > 0) {
        struct elm_generate_params gp = elm_generate_default_params();
        gp.sampler = *sp;
        gp.max_tokens = max_tokens;
        gp.ignore_eos = !tpl->stop_eos;
        gp.stop_strings = (const char *const *)tpl->stop;
        gp.n_stop_strings = (int)tpl->n_stop;
        gp.tokenizer = tok;
        gp.lookup = !c->no_lookup;
        gp.draft = draft_ctx;
        gp.on_token = print_piece;
        gp.grammar = grammar;
        struct elm_generate_result res;
        st = elm_generate(ctx, logits, &gp, &res, err, sizeof err);
        if (st == ELM_OK && grammar && !res.grammar.complete) {
            fputc('\n', stdout);
            fflush(stdout);
            grammar_option_say_cut(what, res.reason == ELM_STOP_LENGTH, max_tokens);
            rc = EXIT_RUNTIME;
            goto done;
        }
    }
    fputc('\n', stdout);
    fflush(stdout);
done:
    if (st == ELM_E_NOMEM)
        x_fatal("out of memory");
    if (st != ELM_OK) {
        /* the engine's words (e.g. NaN logits: damaged weights), and which file */
        cli_error("%s: %s", model_path, err[0] ? err : elm_status_str(st));
        rc = EXIT_RUNTIME;
    }
    free(logits);
    elm_ctx_free(draft_ctx);
    elm_model_free(draft);
    elm_ctx_free(ctx);
    return rc;
}

int cmd_run(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"model", 1, NULL, 'm'},     {"template", 1, NULL, 't'},
        {"system", 1, NULL, OPT_SYSTEM}, {"prompt", 1, NULL, 'p'},
        {"file", 1, NULL, 'f'},      {"dry-run", 0, NULL, OPT_DRY_RUN},
        {"tokenizer", 1, NULL, OPT_TOKENIZER}, {"help", 0, NULL, 'h'},
        {"role", 1, NULL, OPT_ROLE}, {"verbose", 0, NULL, 'v'},
        {"json", 0, NULL, OPT_JSON}, {"json-schema", 1, NULL, OPT_JSON_SCHEMA},
        {"grammar", 1, NULL, OPT_GRAMMAR},
        CLI_COMMON_LONGOPTS,         {NULL, 0, NULL, 0},
    };
    struct cli_common c;
    cli_common_init(&c);
    const char *template_arg = NULL, *system = NULL, *prompt = NULL, *file = NULL;
    const char *tokenizer_path = NULL, *role_name = NULL;
    bool dry_run = false, verbose = false;
    struct grammar_option gopt = {0};
    unsigned given = 0;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "m:t:p:f:n:hv", longopts, NULL)) != -1) {
        switch (opt) {
        case 'm':
            c.model = optarg;
            break;
        case 't':
            template_arg = optarg;
            break;
        case OPT_SYSTEM:
            system = optarg;
            break;
        case 'p':
            prompt = optarg;
            break;
        case 'f':
            file = optarg;
            break;
        case OPT_DRY_RUN:
            dry_run = true;
            break;
        case OPT_TOKENIZER:
            tokenizer_path = optarg;
            break;
        case OPT_ROLE:
            role_name = optarg;
            break;
        case 'v':
            verbose = true;
            break;
        case OPT_JSON:
            gopt.json = true;
            break;
        case OPT_JSON_SCHEMA:
            gopt.json_schema = optarg;
            break;
        case OPT_GRAMMAR:
            gopt.grammar = optarg;
            break;
        case 'h':
            print_help();
            return EXIT_OK;
        case 'n':
            opt = OPT_MAX_TOKENS;
            FALLTHROUGH;
        default: {
            int r = cli_common_option(&c, "run", opt, optarg);
            if (r < 0)
                return EXIT_USAGE;
            if (r == 0)
                return cli_usage_error("run", "unknown option");
            given |= option_bit(opt);
        }
        }
    }
    if (optind < argc)
        return cli_usage_error("run", "unexpected argument '%s'", argv[optind]);
    if (prompt && prompt[strspn(prompt, " \t\r\n")] == '\0')
        return cli_usage_error("run", "-p: the message is empty (give the question to ask)");
    if (system && role_name) /* as the chat */
        return cli_usage_error("run", "--system and --role both set the system prompt: give one");

    elm_grammar *grammar = NULL;
    bool usage;
    if (!grammar_option_load(&gopt, "run", &grammar, &usage))
        return usage ? EXIT_USAGE : EXIT_RUNTIME;

    char err[ELM_ERR_MAX + 256];
    struct config cfg;
    config_init(&cfg);
    if (config_load(&cfg, NULL, err, sizeof err) < 0) {
        cli_error("%s", err);
        config_fini(&cfg);
        elm_grammar_free(grammar);
        return EXIT_RUNTIME;
    }
    if (!c.model && !(dry_run && tokenizer_path))
        c.model = cfg.default_model;
    /* Like the chat: no model anywhere means $ELMCHAT_MODEL or the bundled
     * default ("" resolves to it, or to a message saying it is missing). */
    if (!c.model && !(dry_run && tokenizer_path))
        c.model = "";
    int rc = EXIT_RUNTIME;
    char *input = NULL;
    struct template *tpl = NULL;
    struct role_preset *role = NULL;
    elm_tokenizer *own_tok = NULL;
    elm_model *model = NULL;
    struct idvec ids = {0};

    /* The model: an alias from config.yaml, a path, or a name. */
    char model_path[4096] = "";
    if (c.model) {
        bool found = config_find_model(&cfg, c.model, true, c.no_pull, pull_progress_terminal(),
                                       model_path, sizeof model_path, err, sizeof err);
        if (!found) {
            cli_error("%s", err);
            goto out;
        }
    }
    char why[320];
    if (template_arg)
        snprintf(why, sizeof why, "-t");
    else if ((template_arg = cfg.template_name))
        snprintf(why, sizeof why, "config.yaml's template");
    else
        template_arg = template_for_model(c.model ? model_path : NULL, why, sizeof why);
    tpl = template_load(template_arg, err, sizeof err);
    if (!tpl) {
        cli_error("%s", err);
        goto out;
    }
    if (role_name) {
        if (!(role = role_load(role_name, err, sizeof err))) {
            cli_error("%s", err);
            goto out;
        }
        system = role->system;
    }
    if (verbose) {
        fprintf(stderr, "model: %s\ntemplate: %s (%s), chosen by %s\n",
                model_path[0] ? model_path : "none (--tokenizer only)", tpl->name, tpl->path, why);
        if (role)
            fprintf(stderr, "system prompt: role %s (%s)\n", role->name, role->path);
        else
            fprintf(stderr, "system prompt: %s\n", system ? "--system" : "none");
    }
    if (prompt) {
        /* -p with -f FILE (-f -: standard input): the file is attached to
         * the prompt as /read attaches it in the chat.  Never stdin
         * unasked: a script's `while read` loop feeds it. */
        struct attachment a = {0};
        int ar = 0;
        if (file && strcmp(file, "-") == 0) {
            char *piped = read_input(NULL, err, sizeof err);
            ar = piped ? attachment_from_text("standard input", piped, strlen(piped), 0, &a, err,
                                              sizeof err)
                       : -1;
            free(piped);
        } else if (file) {
            ar = attachment_load(file, 0, &a, err, sizeof err);
        }
        if (ar != 0) {
            cli_error("%s", err);
            goto out;
        }
        input = a.name ? attachment_compose(prompt, &a) : x_strdup(prompt);
        attachment_fini(&a);
    } else if (!(input = read_input(file && strcmp(file, "-") ? file : NULL, err, sizeof err))) {
        cli_error("%s", err);
        goto out;
    } else if (input[strspn(input, " \t\r\n")] == '\0') {
        cli_error("%s: the message is empty (nothing to ask)",
                  file && strcmp(file, "-") ? file : "standard input");
        goto out;
    }

    const elm_tokenizer *tok = NULL;
    bool server = model_is_server(model_path);
    /* the prompt is made here: --tokenizer, else a server's alias's
     * tokenizer:, else model_tokenizer's rule (the server is checked
     * against it) */
    if (!tokenizer_path && server)
        tokenizer_path = config_alias_tokenizer(&cfg, c.model);
    char *from = NULL;
    own_tok = model_tokenizer(model_path, tokenizer_path, &from, err, sizeof err);
    free(from);
    if (!own_tok && *err) {
        cli_error("%s", err);
        goto out;
    }
    if (!own_tok && dry_run &&
        elm_tokenizer_load_for_model(model_path, &own_tok, err, sizeof err) != ELM_OK)
        own_tok = NULL; /* no need to map the weights; else the model load says what is wrong */
    tok = own_tok;
    if (server && !tok) {
        cli_error("%s: no tokenizer to make the prompt with (give --tokenizer FILE)", model_path);
        goto out;
    }
    if (!server && (!tok || !dry_run)) {
        struct elm_model_params mp = elm_model_default_params();
        mp.n_threads = c.n_threads;
        mp.tokenizer = own_tok; /* the caller's (--tokenizer, the shipped one), or none */
        elm_status st = elm_model_load(model_path, &mp, &model, err, sizeof err);
        if (st != ELM_OK) {
            cli_error("%s", err);
            goto out;
        }
        if (!tok)
            tok = elm_model_tokenizer(model);
        if (!tok) {
            cli_error("%s: the model has no tokenizer (give --tokenizer FILE)", model_path);
            goto out;
        }
    }

    const struct template_msg msg = {ROLE_USER, input};
    int r = template_render_conversation(tpl, tok, system, &msg, 1, true, &ids);
    if (r < 0) {
        cli_error("cannot tokenize the prompt: %s", elm_status_str((elm_status)r));
        goto out;
    }
    if (dry_run) {
        for (size_t i = 0; i < ids.n; i++)
            printf("%s%d", i ? " " : "", (int)ids.v[i]);
        printf("\n");
        rc = fflush(stdout) == 0 ? EXIT_OK : EXIT_RUNTIME;
        goto out;
    }

    /* Sampling: engine defaults < template < the model's own < config.yaml
     * < options (sampling_rule.h). */
    struct sampling opts = {given, c.sampler, c.max_tokens};
    const struct sampling_layers layers = {
        .tpl = &tpl->sampling,
        .model = model ? &elm_model_get_info(model)->sampling : NULL,
        .cfg = &cfg,
        .own = &opts,
    };
    struct elm_sampler_params sp;
    int max_tokens;
    sampling_resolve(&layers, RUN_DEFAULT_MAX_TOKENS, &sp, &max_tokens, NULL);
    if (!c.n_ctx)
        c.n_ctx = cfg.n_ctx;
    if (server) {
        const char *key = getenv("ELMCHAT_API_KEY"); /* as the chat's default */
        struct run_grammar rg = {grammar, grammar_option_what(&gopt)};
        rc = run_on_server(model_path, tok, tpl, &ids, &sp, max_tokens, c.n_ctx,
                           key && *key ? key : NULL, &rg);
    } else {
        rc = generate(model_path, model, tok, tpl, &c, &sp, max_tokens, &ids, grammar,
                      grammar_option_what(&gopt));
    }

out:
    elm_grammar_free(grammar);
    idvec_fini(&ids);
    elm_model_free(model);
    elm_tokenizer_free(own_tok);
    template_free(tpl);
    role_free(role);
    free(input);
    config_fini(&cfg);
    return rc;
}
