/* chat_args.c: the chat's options (chat_args.h) and the choice of front
 * end: the inline one when asked (--inline, --screen-reader, config.yaml's
 * ui: inline) or when there is no terminal to draw on (a pipe, a file). */
#include "config.h"

#include "ui/chat_args.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/base/options.h"
#include "src/config/config_file.h"

enum {
    OPT_INLINE = 0x2000,
    OPT_SCREEN_READER,
    OPT_COLOR,
    OPT_FULL,
};

static void usage_hint(void)
{
    fprintf(stderr, "Try 'elmchat --help' for more information.\n");
}

/* config.yaml's ui: inline.  A config that does not load is said by the
 * chat itself (chat_init), with its line and column. */
static bool config_wants_inline(void)
{
    struct config cfg;
    char err[1024];
    config_init(&cfg);
    bool yes = config_load(&cfg, NULL, err, sizeof err) == 0 && cfg.ui_inline;
    config_fini(&cfg);
    return yes;
}

int chat_args_parse(int argc, char **argv, struct chat_args *a)
{
    static const struct option longopts[] = {
        {"model", 1, NULL, 'm'},   {"template", 1, NULL, 't'}, {"session", 1, NULL, 's'},
        {"continue", 0, NULL, 'c'},
        {"system", 1, NULL, 'S'},  {"role", 1, NULL, 'R'},     {"max-tokens", 1, NULL, 'n'},
        {"raw", 0, NULL, 'W'},     {"tokenizer", 1, NULL, 'K'}, {"api-key", 1, NULL, 'A'},
        {"inline", 0, NULL, OPT_INLINE}, {"screen-reader", 0, NULL, OPT_SCREEN_READER},
        {"color", 0, NULL, OPT_COLOR}, {"colour", 0, NULL, OPT_COLOR},
        {"full", 0, NULL, OPT_FULL},     {"file", 1, NULL, 'f'},
        CLI_COMMON_LONGOPTS,
        {NULL, 0, NULL, 0},
    };
    memset(a, 0, sizeof *a);
    struct chat_options *o = &a->chat;
    cli_common_init(&o->common);
    bool full = false, want_inline = false;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":m:t:s:n:cf:", longopts, NULL)) != -1) {
        switch (ch) {
        case 'm':
            o->common.model = optarg;
            break;
        case 't':
            o->template_name = optarg;
            break;
        case 's':
            o->session_name = optarg;
            break;
        case 'c':
            o->continue_last = true;
            break;
        case 'S':
            o->system = optarg;
            break;
        case 'R':
            o->role = optarg;
            break;
        case 'W':
            o->raw = true;
            break;
        case 'K':
            o->tokenizer = optarg;
            break;
        case 'A':
            o->api_key = optarg;
            break;
        case 'f':
            a->input = optarg;
            break;
        case OPT_INLINE:
            want_inline = true;
            break;
        case OPT_SCREEN_READER:
            want_inline = a->screen_reader = true;
            break;
        case OPT_COLOR:
            a->color = true;
            break;
        case OPT_FULL:
            full = true;
            break;
        case 'n':
            if (cli_common_option(&o->common, NULL, OPT_MAX_TOKENS, optarg) < 0)
                return EXIT_USAGE;
            break;
        case ':':
            return cli_usage_error(NULL, "option '%s' needs a value", argv[optind - 1]);
        case '?':
            return cli_usage_error(NULL, "unknown option '%s'", argv[optind - 1]);
        default: {
            int r = cli_common_option(&o->common, NULL, ch, optarg);
            if (r < 0)
                return EXIT_USAGE;
            if (r == 0) {
                usage_hint();
                return EXIT_USAGE;
            }
        }
        }
    }
    if (optind < argc)
        return cli_usage_error(NULL, "unexpected argument '%s'", argv[optind]);
    if (o->session_name && o->continue_last)
        return cli_usage_error(NULL, "-s NAME and -c (the most recent session) both choose the "
                                     "conversation: give one");
    if (o->system && o->role)
        return cli_usage_error(NULL, "--system and --role both set the system prompt: give one");
    if (full && want_inline)
        return cli_usage_error(NULL, "--full and --inline (or --screen-reader) choose different "
                                     "front ends: give one");
    bool terminal = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
    if (a->input && !want_inline && terminal && full)
        return cli_usage_error(NULL, "-f FILE sends the file as one message in the inline chat: "
                                     "drop --full");
    a->inline_mode = want_inline || a->input || !terminal || (!full && config_wants_inline());
    return 0;
}
