/* cmd_stubs.c: subcommands that are not built yet.  Each says so and exits
 * with the usage status; no fake output.  Remove an entry when its
 * src/cmd_NAME.c lands. */
#include "config.h"

#include <stdio.h>

#include "src/cli.h"

static int not_yet(const char *name)
{
    fprintf(stderr, "elmchat: the '%s' command is not implemented yet\n", name);
    return EXIT_USAGE;
}

int cmd_run(int argc, char **argv)
{
    (void)argc;
    return not_yet(argv[0]);
}

int cmd_bench(int argc, char **argv)
{
    (void)argc;
    return not_yet(argv[0]);
}

int cmd_tokenize(int argc, char **argv)
{
    (void)argc;
    return not_yet(argv[0]);
}

int cmd_detokenize(int argc, char **argv)
{
    (void)argc;
    return not_yet(argv[0]);
}

int cmd_logits(int argc, char **argv)
{
    (void)argc;
    return not_yet(argv[0]);
}

int cmd_generate(int argc, char **argv)
{
    (void)argc;
    return not_yet(argv[0]);
}

int cmd_quantize(int argc, char **argv)
{
    (void)argc;
    return not_yet(argv[0]);
}

int cmd_info(int argc, char **argv)
{
    (void)argc;
    return not_yet(argv[0]);
}
