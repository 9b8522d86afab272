/* option_loop.c: the subcommands' getopt_long set-up and errors. */
#include "config.h"

#include "cli/option_loop.h"

#include <getopt.h>

#include "src/base/diag.h"

void option_loop_begin(void)
{
    optind = 1;
    opterr = 0;
}

int option_loop_error(const char *cmd, int opt, char **argv)
{
    if (opt == ':')
        return cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
    return cli_usage_error(cmd, "unrecognized option '%s'", argv[optind - 1]);
}
