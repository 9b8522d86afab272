/* http_client.h: the HTTP side of the remote engine (libcurl): one
 * connection to one server, kept alive between requests, JSON bodies in and
 * out, a streamed body handed over line by line (server-sent events), and a
 * cancel that closes the stream within 20 ms.  Engine-internal; the worker
 * thread only (one request at a time per client).
 *
 * The bearer token is sent as a header and kept in memory that is wiped
 * when the client is freed; no message this file writes contains it (curl's
 * error texts name the host and the failure, never a header). */
#ifndef ELMCHAT_ENGINE_REMOTE_HTTP_CLIENT_H
#define ELMCHAT_ENGINE_REMOTE_HTTP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/elm_status.h"

struct http_client;

/* base_url: "http://host:port" (a trailing '/' is dropped); api_key NULL or
 * "": none; timeout_s: a request with no byte from the server for that long
 * fails.  NULL on OOM. */
struct http_client *http_client_new(const char *base_url, const char *api_key, int timeout_s);
void http_client_free(struct http_client *h);
const char *http_client_url(const struct http_client *h); /* borrowed */

/* One line of a streamed body (without the '\n'); false stops the transfer
 * (http_request then returns ELM_E_ABORTED). */
typedef bool (*http_line_fn)(void *user, const char *line, size_t len);
/* Polled every 20 ms while a request waits: true closes the connection
 * (http_request returns ELM_E_ABORTED). */
typedef bool (*http_abort_fn)(void *user);

struct http_call {
    const char *method;   /* "GET" or "POST" */
    const char *path;     /* "/completion" */
    const char *body;     /* POST: JSON text, NULL: none */
    http_line_fn on_line; /* NULL: the whole body into *reply */
    void *user;           /* on_line's */
    http_abort_fn should_abort;
    void *abort_user;
};

/* Run call.  ELM_OK when the server answered (any status: *status says
 * which; a body that was not streamed, or the body of a non-2xx answer, is
 * in *reply, owned, NUL-terminated); ELM_E_IO when it could not be reached
 * or the connection broke (err says how, with the URL); ELM_E_ABORTED when
 * a callback stopped it. */
elm_status http_request(struct http_client *h, const struct http_call *call, long *status,
                        char **reply, char *err, size_t err_size);

#endif
