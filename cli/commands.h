/* commands.h: the subcommands.  Every one is `int cmd_NAME(int argc, char
 * **argv)` with argv[0] = "NAME"; it returns the process exit code
 * (src/base/diag.h: 0 ok, 1 runtime error, 2 usage error). */
#ifndef ELMCHAT_CLI_COMMANDS_H
#define ELMCHAT_CLI_COMMANDS_H

#include <stdbool.h>

#include "engine/elm.h"
#include "src/base/diag.h"

int cmd_run(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_sessions(int argc, char **argv);
int cmd_pull(int argc, char **argv);
int cmd_models(int argc, char **argv);

/* quantize's work, also pull --quantize's: PATH (resolved) to OUT.gguf,
 * checked by loading it; progress and the summary unless quiet.  An exit
 * code. */
int quantize_model(const char *path, const char *out, enum elm_dtype type, bool quiet);

#endif
