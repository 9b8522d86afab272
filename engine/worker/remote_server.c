/* remote_server.c: a llama-server as the worker knows it (elm_worker.h, "A
 * remote engine"; docs/DESIGN.md, "The remote engine"): connecting and
 * checking it (the loader thread), its slots shared by the sessions (least
 * recently used first), the reconnect after a failure.  What each request
 * does with it, and the remote kind's table: model_remote.c. */
#include "config.h"

#include "engine/worker/remote_server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/base/error.h"

#define SERVER_PREFIX "server:"
/* Reconnect attempts after a failure, the first at once, then waiting
 * this long times 2^k (a server restarting takes a few seconds). */
#define RECONNECT_TRIES 4
#define RECONNECT_WAIT_S 0.5

bool remote_claims(const char *path)
{
    return path && strncmp(path, SERVER_PREFIX, strlen(SERVER_PREFIX)) == 0;
}

static void remote_free(struct remote_model *r)
{
    if (!r)
        return;
    http_client_free(r->http);
    elm_tokenizer_free(r->tok);
    for (int i = 0; r->slots && i < r->srv.n_slots; i++)
        free(r->slots[i].held);
    free(r->slots);
    free(r);
}

static void find_byte_pieces(struct remote_model *r)
{
    for (int b = 0; b < 256; b++)
        r->byte_id[b] = -1;
    int n = elm_tokenizer_n_vocab(r->tok);
    for (int id = 0; id < n; id++) {
        const char *p = elm_tokenizer_piece(r->tok, id);
        unsigned b;
        if (p && strlen(p) == 6 && sscanf(p, "<0x%2X>", &b) == 1 && b < 256)
            r->byte_id[b] = id;
    }
}

elm_status remote_load(elm_worker *w, const struct elm_request *rq, struct model_rec *m,
                              void (*progress)(float, void *), bool (*should_abort)(void *),
                              char *err, size_t err_size)
{
    (void)progress;
    const char *url = rq->path + strlen(SERVER_PREFIX);
    if (!rq->tokenizer)
        return elm_set_error(err, err_size, ELM_E_INVALID,
                             "%s: a server needs elmchat's tokenizer to check it against",
                             rq->path);
    char base[1024];
    if (strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0)
        snprintf(base, sizeof base, "%s", url);
    else
        snprintf(base, sizeof base, "http://%s", url); /* server:host:port */
    if (strlen(base) < 8 || strchr(base, ' '))
        return elm_set_error(err, err_size, ELM_E_INVALID,
                             "%s: not a URL (server:http://HOST:PORT)", rq->path);
    struct remote_model *r = calloc(1, sizeof *r);
    if (!r)
        return elm_set_error(err, err_size, ELM_E_NOMEM, "out of memory");
    r->http = http_client_new(base, rq->api_key, rq->timeout_s);
    r->tok = elm_tokenizer_share(rq->tokenizer);
    if (!r->http) {
        remote_free(r);
        return elm_set_error(err, err_size, ELM_E_NOMEM, "cannot start an HTTP client");
    }
    elm_status st = lsrv_connect(r->http, r->tok, should_abort, w, &r->srv, err, err_size);
    if (st != ELM_OK) {
        remote_free(r);
        return st;
    }
    r->slots = calloc((size_t)r->srv.n_slots, sizeof *r->slots);
    if (!r->slots) {
        remote_free(r);
        return elm_set_error(err, err_size, ELM_E_NOMEM, "out of memory");
    }
    for (int i = 0; i < r->srv.n_slots; i++)
        r->slots[i].owner = -1;
    find_byte_pieces(r);
    r->n_ctx_asked = rq->n_ctx;
    r->n_ctx = rq->n_ctx > 0 && rq->n_ctx < r->srv.n_ctx ? rq->n_ctx : r->srv.n_ctx;
    struct elm_model_info *mi = &r->info;
    mi->n_vocab = r->srv.n_vocab;
    mi->n_ctx_train = r->srv.n_ctx;
    mi->bos_id = elm_tokenizer_bos(r->tok);
    mi->eos_id = elm_tokenizer_eos(r->tok);
    mi->fingerprint = r->srv.fingerprint;
    snprintf(mi->name, sizeof mi->name, "%s", r->srv.model);
    mi->remote = true;
    mi->remote_slots = r->srv.n_slots;
    mi->remote_snapshots = r->srv.snapshots;
    m->remote = r;
    m->info = mi;
    return ELM_OK;
}

/* ------------------------------------------------------------------ slots */

struct remote_slot *remote_slot_owned(struct remote_model *r, int owner)
{
    for (int i = 0; i < r->srv.n_slots; i++)
        if (r->slots[i].owner == owner)
            return &r->slots[i];
    return NULL;
}

/* owner's server slot: its own, else a free one, else the least recently
 * used (whose session re-prefills when it comes back). */
struct remote_slot *remote_slot_take(struct remote_model *r, int owner)
{
    struct remote_slot *s = remote_slot_owned(r, owner);
    if (!s) {
        s = &r->slots[0]; /* n_slots >= 1 */
        for (int i = 1; i < r->srv.n_slots; i++) {
            struct remote_slot *c = &r->slots[i];
            if (s->owner >= 0 && (c->owner < 0 || c->last_used < s->last_used))
                s = c;
        }
        s->owner = owner;
        s->n_held = 0; /* another session's: the server keeps what is common */
    }
    s->last_used = ++r->clock;
    return s;
}

int remote_slot_index(const struct remote_model *r, const struct remote_slot *s)
{
    return (int)(s - r->slots);
}

bool remote_slot_hold(struct remote_slot *s, const int32_t *a, int na, const int32_t *b, int nb)
{
    int n = na + nb;
    if (n > s->cap) {
        int32_t *p = realloc(s->held, (size_t)n * sizeof *p);
        if (!p) {
            s->n_held = 0;
            return false;
        }
        s->held = p;
        s->cap = n;
    }
    if (a != s->held && na > 0)
        memmove(s->held, a, (size_t)na * sizeof *a);
    if (nb > 0)
        memcpy(s->held + na, b, (size_t)nb * sizeof *b);
    s->n_held = n;
    return true;
}

void remote_unload(struct model_rec *m)
{
    remote_free(m->remote);
    m->remote = NULL;
}

void remote_adopted(struct model_rec *m)
{
    struct remote_model *r = m->remote;
    if (r && r->adopted++ > 0)
        r->recheck = true;
}

void remote_free_slot(struct model_rec *m, int slot)
{
    struct remote_model *r = m->remote;
    struct remote_slot *s = r ? remote_slot_owned(r, slot) : NULL;
    if (!s)
        return;
    /* FREE_CTX drops the cache: on the server too where slot actions are
     * allowed (elsewhere its cache stays until another prompt replaces it,
     * which only a common prefix could use) */
    if (r->srv.snapshots && !r->recheck && s->n_held > 0) {
        char err[ELM_ERR_MAX];
        int n;
        if (lsrv_slot_action(r->http, remote_slot_index(r, s), "erase", "", NULL, NULL, &n, err,
                             sizeof err) != ELM_OK)
            r->recheck = true; /* checked again before the next request */
    }
    s->owner = -1;
    s->n_held = 0;
}

/* ------------------------------------------------------------- reconnect */

bool remote_should_abort(void *user)
{
    return wk_cancelled(user);
}

/* Sleep up to sec, false when cancelled meanwhile. */
static bool wait_cancellable(elm_worker *w, double sec)
{
    double until = now_sec() + sec;
    while (now_sec() < until) {
        if (wk_cancelled(w))
            return false;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return true;
}

/* A restarted server may have other slots, another context or a slot save
 * path now: what the requests and the next MODEL_READY go by.  Every slot
 * is empty after a restart. */
static bool adopt_restart(struct remote_model *r, const struct lsrv_info *now)
{
    if (now->n_slots != r->srv.n_slots) {
        struct remote_slot *ns = calloc((size_t)now->n_slots, sizeof *ns);
        if (!ns)
            return false;
        for (int i = 0; i < r->srv.n_slots; i++)
            free(r->slots[i].held);
        free(r->slots);
        r->slots = ns;
        for (int i = 0; i < now->n_slots; i++)
            r->slots[i].owner = -1;
    }
    r->srv = *now;
    for (int i = 0; i < r->srv.n_slots; i++)
        r->slots[i].n_held = 0;
    r->n_ctx = r->n_ctx_asked > 0 && r->n_ctx_asked < now->n_ctx ? r->n_ctx_asked : now->n_ctx;
    r->info.n_ctx_train = now->n_ctx;
    r->info.remote_slots = now->n_slots;
    r->info.remote_snapshots = now->snapshots;
    return true;
}

/* After a failure: connect again (with backoff) and check that it is still
 * the same vocabulary (a restarted server may serve another model). */
elm_status remote_ensure_connected(elm_worker *w, struct remote_model *r, char *err,
                                   size_t err_size)
{
    if (!r->recheck)
        return ELM_OK;
    elm_status st = ELM_E_IO;
    double wait = RECONNECT_WAIT_S;
    for (int k = 0; k < RECONNECT_TRIES; k++) {
        if (k > 0) {
            if (!wait_cancellable(w, wait))
                return ELM_E_ABORTED;
            wait *= 2;
        }
        struct lsrv_info now;
        st = lsrv_connect(r->http, r->tok, remote_should_abort, w, &now, err, err_size);
        if (st == ELM_E_ABORTED)
            return st;
        if (st == ELM_OK && now.fingerprint != r->srv.fingerprint) {
            st = elm_set_error(err, err_size, ELM_E_MISMATCH,
                               "%s serves another model now (%s, was %s): /model it again",
                               http_client_url(r->http), now.model, r->srv.model);
            return st;
        }
        if (st == ELM_OK) {
            if (!adopt_restart(r, &now))
                return elm_set_error(err, err_size, ELM_E_NOMEM, "out of memory");
            r->recheck = false;
            return ELM_OK;
        }
        if (st == ELM_E_MISMATCH)
            return st;
    }
    size_t n = strlen(err);
    snprintf(err + n, err_size - n, " (reconnect: %d tries)", RECONNECT_TRIES);
    return st;
}
