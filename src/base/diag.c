/* diag.c: the program's one error format ("elmchat: message"), shared by
 * every front end and by xalloc's fatal path.  Messages often quote what
 * the user gave (a name, a path, a line of a file): control characters in
 * them are written as \xNN, so that no escape sequence reaches the
 * terminal through an error. */
#include "config.h"

#include "src/base/diag.h"

#include <stdarg.h>
#include <stdio.h>

/* fmt with ap to stderr, control characters escaped (a tab and a message's
 * own line breaks are kept). */
static void put_clean(const char *fmt, va_list ap) ATTR_FORMAT(1, 0);
static void put_clean(const char *fmt, va_list ap)
{
    char buf[4096];
    vsnprintf(buf, sizeof buf, fmt, ap);
    for (const unsigned char *p = (const unsigned char *)buf; *p; p++) {
        if ((*p < 0x20 && *p != '\t' && *p != '\n') || *p == 0x7f)
            fprintf(stderr, "\\x%02x", *p);
        else
            fputc(*p, stderr);
    }
}

static void put_cleanf(const char *fmt, ...) ATTR_FORMAT(1, 2);
static void put_cleanf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    put_clean(fmt, ap);
    va_end(ap);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    put_cleanf("elmchat%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    put_clean(fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'elmchat%s%s --help' for more information.\n", cmd ? " " : "",
            cmd ? cmd : "");
    return EXIT_USAGE;
}

void cli_verror(const char *fmt, va_list ap)
{
    fputs("elmchat: ", stderr);
    put_clean(fmt, ap);
    fputc('\n', stderr);
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cli_verror(fmt, ap);
    va_end(ap);
}
