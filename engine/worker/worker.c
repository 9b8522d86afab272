/* worker.c: the worker thread (one request at a time, loads adopted
 * between requests, its nice level) and the worker's life: new, free.
 * The contract is engine/elm_worker.h; the shared state is described in
 * engine/worker/shared_state.h. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/base/platform.h"
#include "engine/base/test_hooks.h"
#include "engine/worker/model_kind.h"
#include "engine/worker/shared_state.h"
#include "engine/worker/worker_testing.h"

/* elm_worker_params.nice: renice this thread before it starts any other:
 * the loader and the compute threads inherit it, so they all run behind the
 * UI thread (Linux only: engine/base/platform.h says why). */
static void apply_nice(const elm_worker *w)
{
    elm_thread_lower_priority(w->nice_inc);
}

static void *worker_main(void *arg)
{
    elm_worker *w = arg;
    apply_nice(w);
    for (;;) {
        pthread_mutex_lock(&w->mu);
        /* With no current model, requests wait for the load in progress
         * (a first LOAD_MODEL then GENERATE behaves as if run in order). */
        while (!w->ld_done && (!w->rq_head || (w->ld_running && !w->cur)))
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->ld_done) {
            w->ld_done = false;
            pthread_mutex_unlock(&w->mu);
            wk_complete_load(w); /* MODEL_READY: between two requests */
            continue;
        }
        struct req_node *n = w->rq_head;
        w->rq_head = n->next;
        if (!w->rq_head)
            w->rq_tail = NULL;
        w->current = n;
        pthread_mutex_unlock(&w->mu);

        if (n->req.type == ELM_REQ_SHUTDOWN || atomic_load(&w->quitting)) {
            bool stop = n->req.type == ELM_REQ_SHUTDOWN;
            if (n != &w->stop_node)
                wk_req_free(n);
            if (stop)
                break;
            continue;
        }
        w->run = n;
        struct elm_event *ev = &n->final->ev;
        ev->request_id = n->id;
        ev->request_type = n->req.type;
        ev->slot = n->req.slot;
        switch (n->req.type) {
        case ELM_REQ_LOAD_MODEL:
            /* in turn with the other loads, beside everything else */
            w->run = NULL;
            n->next = NULL;
            if (w->ld_q_tail)
                w->ld_q_tail->next = n;
            else
                w->ld_q_head = n;
            w->ld_q_tail = n;
            pthread_mutex_lock(&w->mu);
            w->current = NULL;
            pthread_mutex_unlock(&w->mu);
            wk_next_load(w);
            continue;
        case ELM_REQ_GENERATE:
            wk_current_kind(w)->generate(w);
            break;
        case ELM_REQ_TRUNCATE:
            wk_current_kind(w)->truncate(w);
            break;
        case ELM_REQ_SAVE_STATE:
        case ELM_REQ_LOAD_STATE:
            wk_current_kind(w)->state(w, n->req.type == ELM_REQ_SAVE_STATE);
            break;
        case ELM_REQ_FREE_CTX:
            wk_do_free_ctx(w);
            break;
        case ELM_REQ_SET_DRAFT:
            wk_do_set_draft(w);
            break;
        case ELM_REQ_SHUTDOWN:
            break;
        default:
            wk_finish_error(w, ELM_E_INVALID, 0, "unknown request type");
            break;
        }
        w->run = NULL;
        pthread_mutex_lock(&w->mu);
        w->current = NULL;
        pthread_mutex_unlock(&w->mu);
        wk_req_free(n);
    }
    /* A load in progress: its abort callback sees the quit flag, so
     * elm_model_load returns ELM_E_ABORTED within a tensor. */
    if (w->ld_running) {
        pthread_join(w->ld_thread, NULL);
        w->ld_running = false;
        w->ld_rec->kind->unload(w->ld_rec);
        free(w->ld_rec->path);
        free(w->ld_rec);
        wk_req_free(w->ld_node);
        w->ld_rec = NULL;
        w->ld_node = NULL;
    }
    while (w->ld_q_head) {
        struct req_node *n = w->ld_q_head;
        w->ld_q_head = n->next;
        wk_req_free(n);
    }
    wk_draft_free(w);
    while (w->models) {
        struct model_rec *m = w->models;
        w->models = m->next;
        wk_model_rec_free(m);
    }
    w->cur = NULL;
    return NULL;
}

static int make_pipe(int fds[2])
{
    if (pipe(fds) != 0)
        return -errno;
    for (int i = 0; i < 2; i++) {
        int fl = fcntl(fds[i], F_GETFL);
        if (fl < 0 || fcntl(fds[i], F_SETFL, fl | O_NONBLOCK) < 0 ||
            fcntl(fds[i], F_SETFD, FD_CLOEXEC) < 0) {
            int e = errno;
            close(fds[0]);
            close(fds[1]);
            return -e;
        }
    }
    return 0;
}

struct elm_worker_params elm_worker_default_params(void)
{
    return (struct elm_worker_params){0, 0};
}

elm_worker *elm_worker_new(const struct elm_worker_params *params, char *err, size_t err_size)
{
    struct elm_worker_params p = params ? *params : elm_worker_default_params();
    elm_worker *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, err_size, "elm_worker: out of memory");
        return NULL;
    }
    int fds[2];
    int e = make_pipe(fds);
    if (e < 0) {
        snprintf(err, err_size, "elm_worker: pipe: %s", strerror(-e));
        free(w);
        return NULL;
    }
    w->wake_r = fds[0];
    w->wake_w = fds[1];
    atomic_init(&w->cancel_upto, 0);
    atomic_init(&w->quitting, false);
    w->nice_inc = p.nice < 0 ? 0 : p.nice > 19 ? 19 : p.nice;
    w->budget = p.mem_budget ? p.mem_budget : wk_phys_half();
    struct elm_test_hooks hooks; /* none in the shipped program */
    elm_test_hooks(&hooks);
    w->load_delay_ms = hooks.load_delay_ms;
    atomic_init(&w->token_interval_ms, hooks.token_interval_ms);
    w->test_draft_k = hooks.draft_k;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);

    /* Signals go to the UI thread: block them in the worker (and in the
     * compute threads it starts, which inherit its mask). */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGWINCH);
    sigaddset(&block, SIGHUP);
    sigaddset(&block, SIGQUIT);
    sigaddset(&block, SIGTSTP);
    sigaddset(&block, SIGCONT);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    e = pthread_create(&w->thread, NULL, worker_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e != 0) {
        snprintf(err, err_size, "elm_worker: pthread_create: %s", strerror(e));
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        close(w->wake_r);
        close(w->wake_w);
        free(w);
        return NULL;
    }
    return w;
}

void elm_worker_free(elm_worker *w)
{
    if (!w)
        return;
    atomic_store(&w->quitting, true);
    pthread_mutex_lock(&w->mu);
    /* The queued requests are dropped; SHUTDOWN goes first. */
    struct req_node *q = w->rq_head;
    w->rq_head = w->rq_tail = NULL;
    w->shutdown_posted = true;
    pthread_mutex_unlock(&w->mu);
    while (q) {
        struct req_node *next = q->next;
        wk_req_free(q);
        q = next;
    }
    w->stop_node.req.type = ELM_REQ_SHUTDOWN;
    pthread_mutex_lock(&w->mu);
    wk_queue_locked(w, &w->stop_node);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);

    /* Left over when the caller had posted its own SHUTDOWN. */
    while (w->rq_head) {
        struct req_node *n = w->rq_head;
        w->rq_head = n->next;
        if (n != &w->stop_node)
            wk_req_free(n);
    }

    while (w->eq_head) {
        struct ev_node *n = w->eq_head;
        w->eq_head = n->next;
        elm_event_fini(&n->ev);
        free(n);
    }
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    close(w->wake_r);
    close(w->wake_w);
    free(w);
}

void elm_worker_test_set_token_interval(elm_worker *w, int ms)
{
    atomic_store(&w->token_interval_ms, ms);
}
