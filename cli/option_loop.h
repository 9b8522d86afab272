/* option_loop.h: what every subcommand's getopt_long loop shares.  The
 * optstring starts with ':' so that a missing value comes back as ':'. */
#ifndef ELMCHAT_CLI_OPTION_LOOP_H
#define ELMCHAT_CLI_OPTION_LOOP_H

/* Before the loop: options from argv[1] on (subcommands run one after the
 * other in one process in the tests), getopt's own messages off. */
void option_loop_begin(void);
/* A ':' (an option without its value) or anything the loop does not know:
 * the usage error printed, exit 2. */
int option_loop_error(const char *cmd, int opt, char **argv);

#endif
