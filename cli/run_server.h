/* run_server.h: `elmchat run -m server:URL`: the one reply computed by a
 * llama-server, through the worker (the remote engine is one of its
 * models: elm_worker.h). */
#ifndef ELMCHAT_CLI_RUN_SERVER_H
#define ELMCHAT_CLI_RUN_SERVER_H

#include "engine/elm.h"
#include "engine/elm_tokenizer.h"
#include "src/base/idvec.h"
#include "src/template/template.h"

/* Structured output on the server: the grammar (sent as GBNF, the same the
 * local engine would apply; NULL: none) and what it asks for, for the
 * message when the reply ends before it is complete. */
struct run_grammar {
    const elm_grammar *grammar;
    const char *what;
};

/* Connect to url ("server:URL", checked against tok), send prompt's ids,
 * print the reply to stdout as it streams (ending at EOS or a stop string
 * of tpl).  api_key: the bearer token, NULL for none.  An exit code; a
 * failure is said on stderr with the server's URL, and so is a reply that
 * ended before g's grammar was complete (exit 1). */
int run_on_server(const char *url, const elm_tokenizer *tok, const struct template *tpl,
                  const struct idvec *prompt, const struct elm_sampler_params *sp, int max_tokens,
                  int n_ctx, const char *api_key, const struct run_grammar *g);

#endif
