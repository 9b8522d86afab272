/* diag.c: the program's one error format ("elmchat: message"), shared by
 * every front end and by xalloc's fatal path. */
#include "config.h"

#include "src/diag.h"

#include <stdarg.h>
#include <stdio.h>

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "elmchat%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'elmchat%s%s --help' for more information.\n", cmd ? " " : "",
            cmd ? cmd : "");
    return EXIT_USAGE;
}

void cli_verror(const char *fmt, va_list ap)
{
    fputs("elmchat: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cli_verror(fmt, ap);
    va_end(ap);
}
