/* commands.h: the subcommands.  Every one is `int cmd_NAME(int argc, char
 * **argv)` with argv[0] = "NAME"; it returns the process exit code
 * (src/diag.h: 0 ok, 1 runtime error, 2 usage error). */
#ifndef ELMCHAT_CLI_COMMANDS_H
#define ELMCHAT_CLI_COMMANDS_H

#include "src/diag.h"

int cmd_run(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_sessions(int argc, char **argv);

#endif
