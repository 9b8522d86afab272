/* queue.c: the request queue: post (copying the request), cancel (by id,
 * or a watermark for all), and the cancel checks the running request polls. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/worker/shared_state.h"

struct elm_request elm_request_default(enum elm_request_type type)
{
    struct elm_request r;
    memset(&r, 0, sizeof r);
    r.type = type;
    r.n_keep = -1;
    r.max_tokens = 256;
    r.sampler = elm_sampler_default_params();
    return r;
}

void wk_req_free(struct req_node *n)
{
    if (!n)
        return;
    free(n->req.path);
    if (n->req.api_key) {
        for (volatile char *p = n->req.api_key; *p; p++)
            *p = '\0'; /* a secret: not left in freed memory */
        free(n->req.api_key);
    }
    free(n->req.tokens);
    free(n->req.lookup_tokens);
    elm_tokenizer_free(n->req.tokenizer); /* the reference post took */
    elm_grammar_free(n->req.grammar);
    for (int i = 0; i < n->req.n_stop_strings && n->req.stop_strings; i++)
        free(n->req.stop_strings[i]);
    free(n->req.stop_strings);
    if (n->final) {
        elm_event_fini(&n->final->ev);
        free(n->final);
    }
    free(n);
}


bool wk_cancelled(const elm_worker *w)
{
    return atomic_load(&w->quitting) || atomic_load(&w->run->cancel) ||
           atomic_load(&w->cancel_upto) >= (uint_fast64_t)w->run->id;
}

/* The engine's abort callback: polled between layers of elm_decode on this
 * (the worker) thread.  It also drives prefill progress. */
bool wk_should_abort(void *user)
{
    elm_worker *w = user;
    if (!w->run)
        return false;
    if (wk_cancelled(w))
        return true;
    if (w->in_prefill && w->pf_layers > 0) {
        w->pf_polls++;
        double t = now_sec();
        if (t - w->pf_last_emit >= PROGRESS_PERIOD) {
            int polls = w->pf_polls < w->pf_layers ? w->pf_polls : w->pf_layers;
            double done = w->pf_done + (double)w->pf_chunk * polls / w->pf_layers;
            wk_emit_progress(w, w->run, ELM_EV_PREFILL_PROGRESS, (float)(done / w->pf_total));
            w->pf_last_emit = t;
        }
    }
    return false;
}

void wk_queue_locked(elm_worker *w, struct req_node *n)
{
    n->next = NULL;
    if (w->rq_tail)
        w->rq_tail->next = n;
    else
        w->rq_head = n;
    w->rq_tail = n;
    pthread_cond_signal(&w->cv);
}

uint64_t elm_worker_post(elm_worker *w, const struct elm_request *req)
{
    if (!w || !req)
        return 0;
    struct req_node *n = calloc(1, sizeof *n);
    if (!n)
        return 0;
    n->req = *req;
    n->req.path = NULL;
    n->req.api_key = NULL;
    n->req.tokens = NULL;
    n->req.lookup_tokens = NULL;
    n->req.n_lookup_tokens = 0;
    n->req.stop_strings = NULL;
    n->req.tokenizer = elm_tokenizer_share(req->tokenizer);
    n->req.grammar = elm_grammar_share(req->grammar);
    n->req.n_stop_strings = 0;
    atomic_init(&n->cancel, false);
    n->final = calloc(1, sizeof *n->final);
    if (!n->final)
        goto oom;
    if (req->path && !(n->req.path = strdup(req->path)))
        goto oom;
    if (req->api_key && !(n->req.api_key = strdup(req->api_key)))
        goto oom;
    if (req->n_tokens > 0 && req->tokens) {
        n->req.tokens = malloc((size_t)req->n_tokens * sizeof *req->tokens);
        if (!n->req.tokens)
            goto oom;
        memcpy(n->req.tokens, req->tokens, (size_t)req->n_tokens * sizeof *req->tokens);
    } else if (req->n_tokens > 0) {
        n->req.n_tokens = -1; /* reported as a bad request on the worker */
    }
    if (req->n_lookup_tokens > 0 && req->lookup_tokens) {
        n->req.lookup_tokens = malloc((size_t)req->n_lookup_tokens * sizeof *req->lookup_tokens);
        if (!n->req.lookup_tokens)
            goto oom;
        memcpy(n->req.lookup_tokens, req->lookup_tokens,
               (size_t)req->n_lookup_tokens * sizeof *req->lookup_tokens);
        n->req.n_lookup_tokens = req->n_lookup_tokens;
    }
    if (req->n_stop_strings > 0 && req->stop_strings) {
        n->req.stop_strings = calloc((size_t)req->n_stop_strings, sizeof *n->req.stop_strings);
        if (!n->req.stop_strings)
            goto oom;
        for (int i = 0; i < req->n_stop_strings; i++, n->req.n_stop_strings++)
            if (!(n->req.stop_strings[i] = strdup(req->stop_strings[i] ? req->stop_strings[i] : "")))
                goto oom;
    }
    pthread_mutex_lock(&w->mu);
    if (w->shutdown_posted) {
        pthread_mutex_unlock(&w->mu);
        wk_req_free(n);
        return 0;
    }
    n->id = ++w->last_id;
    if (req->type == ELM_REQ_SHUTDOWN)
        w->shutdown_posted = true;
    wk_queue_locked(w, n);
    uint64_t id = n->id;
    pthread_mutex_unlock(&w->mu);
    return id;
oom:
    wk_req_free(n);
    return 0;
}

/* The request id, waiting or running (under mu). */
static struct req_node *find_locked(elm_worker *w, uint64_t id)
{
    if (w->current && w->current->id == id)
        return w->current;
    for (struct req_node *n = w->rq_head; n; n = n->next)
        if (n->id == id)
            return n;
    return NULL;
}

void elm_worker_cancel(elm_worker *w, uint64_t request_id)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    uint64_t upto = w->last_id;
    if (request_id != ELM_CANCEL_ALL) {
        struct req_node *n = find_locked(w, request_id);
        if (n)
            atomic_store(&n->cancel, true);
        pthread_mutex_unlock(&w->mu);
        return;
    }
    pthread_mutex_unlock(&w->mu);
    /* Monotonic: a late store of a smaller watermark must not undo a newer
     * cancel from another thread. */
    uint_fast64_t cur = atomic_load(&w->cancel_upto);
    while (cur < upto && !atomic_compare_exchange_weak(&w->cancel_upto, &cur, upto))
        ;
}
