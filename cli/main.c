/* main.c: the elmchat program: global options and subcommand dispatch. */
#include "config.h"

#include <getopt.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "src/base/options.h"
#include "src/base/platform.h"
#include "ui/tui.h"

static const struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"run", cmd_run, "one reply to stdout, no TUI"},
    {"bench", cmd_bench, "prefill and decode speed"},
    {"tokenize", cmd_tokenize, "stdin text -> token ids"},
    {"detokenize", cmd_detokenize, "stdin token ids -> text"},
    {"logits", cmd_logits, "raw little-endian f32 logits for a token list"},
    {"generate", cmd_generate, "new token ids for a token list"},
    {"quantize", cmd_quantize, "write a GGUF file from a model"},
    {"info", cmd_info, "model configuration and per-layer shapes"},
    {"sessions", cmd_sessions, "list the saved conversations, or --grep them"},
    {"pull", cmd_pull, "download a model from the Hugging Face Hub"},
    {"models", cmd_models, "list the models here (--rm one from the Hub cache)"},
};

static void print_help(FILE *f)
{
    fprintf(f,
            "Usage: elmchat [OPTION]...              interactive chat (full-screen TUI)\n"
            "  or:  elmchat COMMAND [OPTION]...\n"
            "Chat in the terminal with Apple's OpenELM models, privately, on the CPU.\n"
            "\n"
            "Chat options:\n"
            "  -m, --model MODEL        model folder (Hugging Face layout), .gguf file or name\n"
            "                           (default: the bundled guide-small-instruct, a tiny\n"
            "                           guide to elmchat and dictionary; see man elmchat)\n"
            "  -t, --template NAME      chat template (default: from the model)\n"
            "  -s, --session NAME       open or create this saved conversation\n"
            "  -c, --continue           reopen the most recently saved conversation\n"
            "      --system TEXT        system prompt for a new conversation\n"
            "      --role NAME          a role preset's system prompt instead (/role lists them)\n"
            "      --raw                show replies as written (no markdown rendering)\n"
            "      --inline             chat on the normal terminal, replies in the scrollback\n"
            "                           (no full screen: for ssh, script; config ui: inline)\n"
            "      --screen-reader      --inline with speaker and end-of-turn lines, nothing\n"
            "                           redrawn, no colour (--color turns it on)\n"
            "  -f, --file FILE          send FILE (-: standard input) as one message, then exit\n"
            "      --tokenizer FILE     with -m server:URL: the tokenizer the server's is\n"
            "                           checked against (default: elmchat's LLaMA-2 one)\n"
            "      --api-key KEY        with -m server:URL: its bearer token (default:\n"
            "                           $ELMCHAT_API_KEY)\n"
            "%s"
            "  -h, --help               display this help and exit\n"
            "  -V, --version            output version information and exit\n"
            "\n"
            "Commands:\n",
            cli_common_help);
    for (size_t i = 0; i < ARRAY_LEN(commands); i++)
        fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(f,
            "\nWithout a terminal on standard input elmchat reads a message a line, replies\n"
            "on stdout, status lines on stderr:\n"
            "  printf 'hello\\n/retry\\n' | elmchat -s demo\n"
            "  git diff | elmchat -f - > review.md\n"
            "  ssh host elmchat --inline\n"
            "A line !COMMAND runs COMMAND in the shell, its output attached to the next\n"
            "message (!!COMMAND: only shown).\n"
            "\n'elmchat COMMAND --help' describes a command.\n"
            "MODEL is a path or a name under $XDG_DATA_HOME/elmchat/models, or\n"
            "server:http://HOST:PORT (a llama-server).\n"
            "Exit status: 0 ok, 1 runtime error, 2 usage error.\n"
            "\n"
            "Report bugs to: %s\n"
            "%s home page: <https://github.com/elmchat/elmchat>\n",
            PACKAGE_BUGREPORT, PACKAGE_NAME);
}

static void print_version(void)
{
    printf("%s %s\n"
           "Copyright (C) 2026 the elmchat authors.\n"
           "License MIT: <https://opensource.org/licenses/MIT>.\n"
           "This is free software: you are free to change and redistribute it.\n"
           "There is NO WARRANTY, to the extent permitted by law.\n",
           PACKAGE_NAME, PACKAGE_VERSION);
}

int main(int argc, char **argv)
{
    /* Only LC_CTYPE: numbers in files and options always use '.' */
    setlocale(LC_CTYPE, "");
    platform_set_argv0(argv[0]);

    if (argc >= 2 && argv[1][0] != '-') {
        for (size_t i = 0; i < ARRAY_LEN(commands); i++)
            if (strcmp(argv[1], commands[i].name) == 0)
                return commands[i].fn(argc - 1, argv + 1);
        return cli_usage_error(NULL, "unknown command '%s'", argv[1]);
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            print_help(stdout);
            return EXIT_OK;
        }
        if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0) {
            print_version();
            return EXIT_OK;
        }
    }
    return tui_main(argc, argv);
}
