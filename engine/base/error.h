/* error.h: how every engine loader fills the caller's error buffer
 * ("FILE: what is wrong"; the engine never prints).  Engine-internal. */
#ifndef ELMCHAT_ENGINE_ERROR_H
#define ELMCHAT_ENGINE_ERROR_H

#include <stdarg.h>
#include <stddef.h>

#include "engine/elm.h"

/* Fill err with printf-style text; returns status (helper for every loader). */
elm_status elm_set_error(char *err, size_t err_size, elm_status status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* "PATH: WHAT: message" (no "WHAT: " when what is NULL), for a parser's own
 * fail() that adds its context to every message; returns status. */
elm_status elm_vset_error_at(char *err, size_t err_size, elm_status status, const char *path,
                             const char *what, const char *fmt, va_list ap)
    __attribute__((format(printf, 6, 0)));
/* Size in bytes of one element of a dense dtype (0 for block types). */
size_t elm_dtype_size(enum elm_dtype dtype);

#endif
