/* xalloc.c: allocation wrappers that end the program cleanly on OOM. */
#include "config.h"

#include "src/base/xalloc.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/diag.h"

static void (*fatal_hook)(void);

void x_set_fatal_hook(void (*hook)(void))
{
    fatal_hook = hook;
}

void x_fatal(const char *fmt, ...)
{
    void (*hook)(void) = fatal_hook;
    fatal_hook = NULL; /* the hook may itself fail */
    if (hook)
        hook();
    va_list ap;
    va_start(ap, fmt);
    cli_verror(fmt, ap); /* the program's one error format */
    va_end(ap);
    exit(EXIT_FAILURE);
}

void *x_malloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        x_fatal("out of memory (%zu bytes)", size);
    return p;
}

void *x_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        x_fatal("out of memory (%zu x %zu bytes)", n, size);
    return p;
}

void *x_realloc(void *p, size_t size)
{
    void *q = realloc(p, size ? size : 1);
    if (!q)
        x_fatal("out of memory (%zu bytes)", size);
    return q;
}

void *x_reallocarray(void *p, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        x_fatal("out of memory (%zu x %zu bytes overflows)", n, size);
    return x_realloc(p, n * size);
}

char *x_strdup(const char *s)
{
    return x_strndup(s, strlen(s));
}

char *x_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = x_malloc(len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *x_asprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        x_fatal("bad format string");
    char *p = x_malloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}
