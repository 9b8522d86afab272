/* cmd_stubs.c: subcommands that are not built yet.  Each says so and exits
 * with the usage status; no fake output.  Remove an entry when its
 * src/cmd_NAME.c lands.  (Every subcommand has landed: none are left.) */
#include "config.h"
