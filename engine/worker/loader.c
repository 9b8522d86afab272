/* loader.c: LOAD_MODEL on a loader thread, so the current model keeps
 * serving: one load at a time, in order; the new model becomes current
 * between two requests (MODEL_READY); shutdown ends a load at its next
 * cancel point. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/worker/model_kind.h"
#include "engine/worker/shared_state.h"

/* The loader thread's progress callback. */
static void load_progress(float fraction, void *user)
{
    elm_worker *w = user;
    double t = now_sec();
    if (fraction < 1.0f && t - w->ld_last_emit < PROGRESS_PERIOD)
        return;
    w->ld_last_emit = t;
    wk_emit_progress(w, w->ld_node, ELM_EV_LOAD_PROGRESS, fraction);
}

static void model_ready(elm_worker *w, struct model_rec *m)
{
    w->cur = m;
    m->last_used = ++w->clock;
    if (m->kind->adopted)
        m->kind->adopted(m);
    wk_enforce_budget(w, NULL);
    struct elm_event *ev = wk_final_ev(w);
    ev->type = ELM_EV_MODEL_READY;
    ev->progress = 1.0f;
    ev->n_ctx = m->n_ctx > 0 && m->n_ctx < m->info->n_ctx_train ? m->n_ctx : m->info->n_ctx_train;
    ev->info = malloc(sizeof *ev->info);
    if (ev->info)
        memcpy(ev->info, m->info, sizeof *ev->info);
    wk_finish(w);
}

/* The loader thread's abort callback, polled by elm_model_load before each
 * tensor and step: only shutdown stops a load (elm_worker_cancel is for
 * replies).  The test hook's slow disk is spent in the first poll, inside
 * the load, so that a shutdown has to go through the engine's cancel
 * points to end it. */
static bool load_should_abort(void *user)
{
    elm_worker *w = user;
    while (!atomic_load(&w->quitting) && now_sec() < w->ld_delay_until) {
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return atomic_load(&w->quitting);
}

static void *loader_main(void *arg)
{
    elm_worker *w = arg;
    const struct elm_request *rq = &w->ld_node->req;
    w->ld_delay_until = now_sec() + w->load_delay_ms * 1e-3;
    w->ld_err[0] = '\0';
    w->ld_status = w->ld_rec->kind->load(w, rq, w->ld_rec, load_progress, load_should_abort,
                                         w->ld_err, sizeof w->ld_err);
    pthread_mutex_lock(&w->mu);
    w->ld_done = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Runs LOAD_MODEL n (its turn has come): a kept model is current at once,
 * else the loader thread starts and n stays in ld_node until it is done. */
static void start_load(elm_worker *w, struct req_node *n)
{
    const struct elm_request *rq = &n->req;
    w->run = n;
    if (!rq->path || !*rq->path) {
        wk_finish_error(w, ELM_E_INVALID, 0, "LOAD_MODEL without a path");
        goto done;
    }
    for (struct model_rec *m = w->models; m; m = m->next) {
        if (strcmp(m->path, rq->path) == 0 && m->n_ctx == rq->n_ctx &&
            m->n_threads == rq->n_threads && m->exact == ((rq->flags & ELM_LOAD_EXACT) != 0)) {
            model_ready(w, m); /* kept: instant, caches intact */
            goto done;
        }
    }
    struct model_rec *m = calloc(1, sizeof *m);
    char *path = strdup(rq->path);
    if (!m || !path) {
        free(m);
        free(path);
        wk_finish_error(w, ELM_E_NOMEM, 0, NULL);
        goto done;
    }
    m->path = path;
    m->kind = wk_model_kind_of(rq->path);
    m->n_ctx = rq->n_ctx;
    m->n_threads = rq->n_threads;
    m->exact = (rq->flags & ELM_LOAD_EXACT) != 0;
    w->ld_node = n;
    w->ld_rec = m;
    w->ld_last_emit = 0;
    /* The loader inherits this thread's signal mask (all blocked). */
    int e = pthread_create(&w->ld_thread, NULL, loader_main, w);
    if (e != 0) {
        w->ld_node = NULL;
        w->ld_rec = NULL;
        free(m->path);
        free(m);
        char msg[128];
        snprintf(msg, sizeof msg, "cannot start the loader thread: %s", strerror(e));
        wk_finish_error(w, ELM_E_NOMEM, 0, msg);
        goto done;
    }
    w->ld_running = true;
    w->run = NULL;
    return;
done:
    w->run = NULL;
    wk_req_free(n);
}

/* Start the next waiting LOAD_MODEL when no load is running (none once
 * shutting down: they are dropped). */
void wk_next_load(elm_worker *w)
{
    while (!w->ld_running && w->ld_q_head && !atomic_load(&w->quitting)) {
        struct req_node *n = w->ld_q_head;
        w->ld_q_head = n->next;
        if (!w->ld_q_head)
            w->ld_q_tail = NULL;
        start_load(w, n);
    }
}

/* The loader is done (ld_done seen): join it and adopt the model, or
 * report the failure (the current model stays current). */
void wk_complete_load(elm_worker *w)
{
    pthread_join(w->ld_thread, NULL);
    w->ld_running = false;
    struct model_rec *m = w->ld_rec;
    struct req_node *n = w->ld_node;
    w->ld_rec = NULL;
    w->ld_node = NULL;
    w->run = n;
    if (w->ld_status != ELM_OK) {
        m->kind->unload(m);
        free(m->path);
        free(m);
        struct slot_ctx *sc = wk_slot_find(w->cur, n->req.slot);
        wk_finish_error(w, w->ld_status, sc ? elm_ctx_n_past(sc->ctx) : 0, w->ld_err);
    } else {
        m->next = w->models;
        w->models = m;
        model_ready(w, m);
    }
    w->run = NULL;
    wk_req_free(n);
    wk_next_load(w);
}
