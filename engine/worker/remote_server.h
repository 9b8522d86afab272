/* remote_server.h: a llama-server as the worker knows it (remote_server.c;
 * used by model_remote.c, the remote kind of model): the server, its slots.
 * Engine-internal, the worker thread only (the loader thread makes it). */
#ifndef ELMCHAT_ENGINE_WORKER_REMOTE_SERVER_H
#define ELMCHAT_ENGINE_WORKER_REMOTE_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/elm_tokenizer.h"
#include "engine/remote/http_client.h"
#include "engine/remote/llama_server.h"
#include "engine/worker/shared_state.h"

/* What one server slot holds, as far as the replies told us. */
struct remote_slot {
    int owner; /* the worker slot on it, -1: none */
    uint64_t last_used;
    int32_t *held; /* the ids it caches */
    int n_held, cap;
};

struct remote_model {
    struct http_client *http;
    elm_tokenizer *tok; /* shared: the caller's, checked against the server's */
    struct lsrv_info srv;
    struct elm_model_info info;
    struct remote_slot *slots; /* srv.n_slots */
    uint64_t clock;
    bool recheck;         /* a failure: reconnect and check before the next request */
    int adopted;          /* times it became the current model */
    int n_ctx;            /* the context in use: the server slot's, or less if asked */
    int n_ctx_asked;      /* LOAD_MODEL's n_ctx (<= 0: the server's) */
    int32_t byte_id[256]; /* the <0xXX> pieces: ids the stream skipped are bytes */
};

/* The remote kind's entries (model_kind.h) that concern the server
 * itself; its requests are model_remote.c's. */
bool remote_claims(const char *path); /* "server:URL" */
/* Loader thread: connect to rq->path's server and check it against
 * rq->tokenizer (a connect has no progress to report). */
elm_status remote_load(elm_worker *w, const struct elm_request *rq, struct model_rec *m,
                       void (*progress)(float, void *), bool (*should_abort)(void *), char *err,
                       size_t err_size);
void remote_unload(struct model_rec *m);
/* A kept server is checked again before its next use. */
void remote_adopted(struct model_rec *m);
/* FREE_CTX: the slot's server slot is erased (where slot actions work). */
void remote_free_slot(struct model_rec *m, int slot);

/* The worker slot owner's server slot, NULL: none. */
struct remote_slot *remote_slot_owned(struct remote_model *r, int owner);
/* owner's server slot: its own, else a free one, else the least recently
 * used (whose session re-prefills when it comes back). */
struct remote_slot *remote_slot_take(struct remote_model *r, int owner);
/* Its id_slot on the server. */
int remote_slot_index(const struct remote_model *r, const struct remote_slot *s);
/* What the slot holds now: a[0..na) then b[0..nb) (a may be s->held);
 * false on OOM (it holds nothing then). */
bool remote_slot_hold(struct remote_slot *s, const int32_t *a, int na, const int32_t *b, int nb);
/* http_client's abort callback for the running request: cancel, shutdown. */
bool remote_should_abort(void *worker);
/* After a failure: connect again (with backoff) and check that it is still
 * the same vocabulary and model; ELM_OK at once when nothing failed. */
elm_status remote_ensure_connected(elm_worker *w, struct remote_model *r, char *err,
                                   size_t err_size);

#endif
