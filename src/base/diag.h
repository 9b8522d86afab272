/* diag.h: the program's one error format, and its exit codes: 0 ok,
 * 1 runtime error, 2 usage error. */
#ifndef ELMCHAT_SRC_DIAG_H
#define ELMCHAT_SRC_DIAG_H

#include <stdarg.h>

#include "src/base/macros.h"

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

/* Print "elmchat CMD: message" and the --help hint; returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) ATTR_FORMAT(2, 3);
/* Print "elmchat: message" to stderr (runtime errors). */
void cli_error(const char *fmt, ...) ATTR_FORMAT(1, 2);
void cli_verror(const char *fmt, va_list ap) ATTR_FORMAT(1, 0);

#endif
