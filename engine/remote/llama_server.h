/* llama_server.h: llama.cpp's llama-server as elmchat's remote engine: what
 * its endpoints take and give (json-c), on top of http_client.h.  Only the
 * native API: /health, /props, /v1/models, /tokenize, /completion (token ids
 * in, streamed token ids out) and /slots/{id}?action=save|restore.
 * Engine-internal; the worker thread only.  The mapping of the request
 * fields: docs/DESIGN.md, "The remote engine". */
#ifndef ELMCHAT_ENGINE_REMOTE_LLAMA_SERVER_H
#define ELMCHAT_ENGINE_REMOTE_LLAMA_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/elm.h"
#include "engine/elm_tokenizer.h"
#include "engine/remote/http_client.h"

/* What connecting found out. */
struct lsrv_info {
    int n_vocab;
    int n_ctx;            /* one slot's context (the server's -c divided by -np) */
    int n_slots;          /* -np */
    bool snapshots;       /* started with --slot-save-path: slot save/restore work */
    uint64_t fingerprint; /* URL, model file, size, parameters, vocabulary */
    char model[128];      /* the server's model file, base name */
};

/* Check the server and that it tokenizes as tok does: /health, /props,
 * /v1/models (n_vocab), /tokenize on a probe text.  ELM_E_MISMATCH with a
 * message naming the difference when the vocabulary is not tok's; ELM_E_IO
 * (down, timeout, 401, 503...) with err saying which. */
elm_status lsrv_connect(struct http_client *h, const elm_tokenizer *tok, http_abort_fn should_abort,
                        void *user, struct lsrv_info *out, char *err, size_t err_size);

struct lsrv_generate {
    const int32_t *prompt; /* the whole sequence the slot must hold (ids) */
    int n_prompt;
    int id_slot;
    int n_predict; /* >= 1 */
    struct elm_sampler_params sampler;
    const char *grammar; /* GBNF the reply must match (elm_grammar_text), NULL: none */
};
/* The /completion body (owned, free()), NULL on OOM. */
char *lsrv_completion_body(const struct lsrv_generate *g);

/* One event of the /completion stream. */
struct lsrv_chunk {
    int32_t id;            /* the token this event brings, -1: none */
    int n_decoded;         /* tokens_predicted so far (a gap: ids the server did not send) */
    const char *content;   /* its text (borrowed from the parsed JSON), "" when none */
    bool final;            /* the last event: the counts below are set */
    const char *stop_type; /* final: "eos", "limit", "word", "none" */
    int n_prompt;          /* tokens_evaluated: the prompt's length */
    int n_cached;          /* tokens_cached: what the slot holds afterwards */
    int prompt_n;          /* timings.prompt_n: prompt tokens computed (not reused) */
    double prompt_tps, predicted_tps;
};

struct lsrv_parser;
struct lsrv_parser *lsrv_parser_new(void);
void lsrv_parser_free(struct lsrv_parser *p);
/* Parse one line of the stream.  1: *out is an event (valid until the next
 * call); 0: a line with no event (blank, comment); negative: malformed or
 * an error event, err says what (the server's message for an error). */
int lsrv_parse_line(struct lsrv_parser *p, const char *line, size_t len, struct lsrv_chunk *out,
                    char *err, size_t err_size);

/* The message for an answer with a non-2xx status (401, 503, 500...),
 * with the server's own message when its body has one. */
void lsrv_status_error(const struct http_client *h, const char *what, long status, const char *body,
                       char *err, size_t err_size);

/* /slots/{id}?action=save|restore with the file name given (the server
 * keeps the files in its --slot-save-path).  *n_tokens: what was saved or
 * restored. */
elm_status lsrv_slot_action(struct http_client *h, int id_slot, const char *action,
                            const char *filename, http_abort_fn should_abort, void *user,
                            int *n_tokens, char *err, size_t err_size);

#endif
