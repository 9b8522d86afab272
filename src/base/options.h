/* options.h: the command-line options every front end shares (run, generate,
 * the chat), strict number parsing, model name resolution.  Main thread only. */
#ifndef ELMCHAT_SRC_OPTIONS_H
#define ELMCHAT_SRC_OPTIONS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/elm.h"
#include "src/base/diag.h"
#include "src/base/macros.h"



/* "1,2,3" (also spaces) -> ids; false on a malformed list.  *ids owned. */
bool cli_parse_ids(const char *s, int32_t **ids, size_t *n);
/* Strict integer / float parsing of an option value. */
bool cli_parse_int(const char *s, long min, long max, long *out);
bool cli_parse_float(const char *s, double min, double max, double *out);
/* A weight type elm_quantize writes ("q8_0", "Q4_K", "bf16", ...). */
bool cli_parse_dtype(const char *s, enum elm_dtype *out);

/* Sampling and context options shared by run, generate, the TUI. */
struct cli_common {
    const char *model;
    int n_ctx;
    int n_threads;
    struct elm_sampler_params sampler;
    int max_tokens; /* -1: not given */
    bool exact;     /* --exact: BF16 weights keep f32 activations (elm_ctx_params.exact) */
    bool no_lookup; /* --no-lookup: no prompt lookup drafts (elm_generate_params.lookup) */
    const char *draft; /* --draft MODEL: a smaller model proposes tokens (NULL: none) */
    bool no_pull;      /* --no-pull: a model that is not here is not downloaded */
};
void cli_common_init(struct cli_common *c);
/* getopt_long ids for the shared long options (>= 0x1000). */
enum {
    OPT_CTX = 0x1000, OPT_THREADS, OPT_TEMP, OPT_TOP_K, OPT_TOP_P, OPT_MIN_P,
    OPT_REPEAT_PENALTY, OPT_SEED, OPT_MAX_TOKENS, OPT_EXACT, OPT_NO_LOOKUP, OPT_DRAFT, OPT_NO_PULL,
};
/* The struct option entries for the shared options (terminated), to append
 * to a command's own table. */
#define CLI_COMMON_LONGOPTS                                           \
    {"ctx", 1, NULL, OPT_CTX}, {"threads", 1, NULL, OPT_THREADS},     \
    {"temp", 1, NULL, OPT_TEMP}, {"top-k", 1, NULL, OPT_TOP_K},       \
    {"top-p", 1, NULL, OPT_TOP_P}, {"min-p", 1, NULL, OPT_MIN_P},     \
    {"repeat-penalty", 1, NULL, OPT_REPEAT_PENALTY},                   \
    {"seed", 1, NULL, OPT_SEED}, {"max-tokens", 1, NULL, OPT_MAX_TOKENS}, \
    {"exact", 0, NULL, OPT_EXACT}, {"no-lookup", 0, NULL, OPT_NO_LOOKUP}, \
    {"draft", 1, NULL, OPT_DRAFT}, {"no-pull", 0, NULL, OPT_NO_PULL}
/* Handle one shared option; returns 1 handled, 0 not ours, -1 bad value
 * (message printed). */
int cli_common_option(struct cli_common *c, const char *cmd, int opt, const char *arg);
/* Help text lines for the shared options. */
extern const char cli_common_help[];

#endif
