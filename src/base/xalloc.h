/* xalloc.h: allocation that cannot fail (core and UI only; never the engine).
 * On out-of-memory the registered fatal hook runs (the UI restores the
 * terminal and saves the session), then the program exits. */
#ifndef ELMCHAT_SRC_XALLOC_H
#define ELMCHAT_SRC_XALLOC_H

#include <stddef.h>

#include "src/base/macros.h"

void *x_malloc(size_t size) ATTR_MALLOC ATTR_WUR;
void *x_calloc(size_t n, size_t size) ATTR_MALLOC ATTR_WUR;
void *x_realloc(void *p, size_t size) ATTR_WUR;
void *x_reallocarray(void *p, size_t n, size_t size) ATTR_WUR;
char *x_strdup(const char *s) ATTR_MALLOC ATTR_WUR ATTR_NONNULL;
char *x_strndup(const char *s, size_t n) ATTR_MALLOC ATTR_WUR ATTR_NONNULL;
char *x_asprintf(const char *fmt, ...) ATTR_FORMAT(1, 2) ATTR_MALLOC ATTR_WUR;

/* Called once before exiting on a fatal error (e.g. to end curses). */
void x_set_fatal_hook(void (*hook)(void));
void x_fatal(const char *fmt, ...) ATTR_FORMAT(1, 2) ATTR_NORETURN;

#endif
