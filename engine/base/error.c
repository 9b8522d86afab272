/* error.c: small helpers shared by the engine's loaders. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "engine/base/error.h"
#include "engine/base/error.h"

elm_status elm_set_error(char *err, size_t err_size, elm_status status, const char *fmt, ...)
{
    if (err && err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_size, fmt, ap);
        va_end(ap);
    }
    return status;
}

elm_status elm_vset_error_at(char *err, size_t err_size, elm_status status, const char *path,
                             const char *what, const char *fmt, va_list ap)
{
    if (err && err_size) {
        char msg[384];
        vsnprintf(msg, sizeof msg, fmt, ap);
        if (what)
            snprintf(err, err_size, "%s: %s: %s", path, what, msg);
        else
            snprintf(err, err_size, "%s: %s", path, msg);
    }
    return status;
}

size_t elm_dtype_size(enum elm_dtype dtype)
{
    switch (dtype) {
    case ELM_DTYPE_F32: return 4;
    case ELM_DTYPE_F16:
    case ELM_DTYPE_BF16: return 2;
    default: return 0;
    }
}
