/* events.c: the event queue (coalescing TOKEN events, replacing unread
 * progress, the preallocated final event), the wake pipe, and the reader's
 * side: elm_worker_next_event. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/worker/shared_state.h"

void elm_event_fini(struct elm_event *ev)
{
    if (!ev)
        return;
    free(ev->ids);
    free(ev->text);
    free(ev->info);
    ev->ids = NULL;
    ev->text = NULL;
    ev->info = NULL;
    ev->n_ids = 0;
}

static void wake_locked(elm_worker *w)
{
    if (w->wake_pending)
        return;
    w->wake_pending = true;
    char b = 1;
    ssize_t r;
    do
        r = write(w->wake_w, &b, 1);
    while (r < 0 && errno == EINTR);
    /* EAGAIN: the pipe is full, so the reader will wake anyway. */
}

/* Merge a TOKEN into the unread tail event of the same request.  False when
 * it cannot (then the caller queues a new event). */
static bool merge_token_locked(struct ev_node *t, const int32_t *ids, int n_ids, const char *text,
                               size_t len)
{
    if (t->ids_cap - t->ev.n_ids < n_ids) {
        int cap = t->ids_cap ? t->ids_cap : 16;
        while (cap - t->ev.n_ids < n_ids)
            cap *= 2;
        int32_t *p = realloc(t->ev.ids, (size_t)cap * sizeof *p);
        if (!p)
            return false;
        t->ev.ids = p;
        t->ids_cap = cap;
    }
    if (t->text_cap - t->text_len < len + 1) {
        size_t cap = t->text_cap ? t->text_cap : 64;
        while (cap - t->text_len < len + 1)
            cap *= 2;
        char *p = realloc(t->ev.text, cap);
        if (!p)
            return false;
        t->ev.text = p;
        t->text_cap = cap;
    }
    if (n_ids)
        memcpy(t->ev.ids + t->ev.n_ids, ids, (size_t)n_ids * sizeof *ids);
    t->ev.n_ids += n_ids;
    memcpy(t->ev.text + t->text_len, text, len);
    t->text_len += len;
    t->ev.text[t->text_len] = '\0';
    return true;
}

void wk_append_locked(elm_worker *w, struct ev_node *n)
{
    n->next = NULL;
    if (w->eq_tail)
        w->eq_tail->next = n;
    else
        w->eq_head = n;
    w->eq_tail = n;
    wake_locked(w);
}

/* TOKEN: merge into the tail when the reader has not taken it yet.  On OOM
 * the token is dropped (DONE still arrives: it is preallocated). */
void wk_emit_token(elm_worker *w, const int32_t *ids, int n_ids, const char *text, size_t len)
{
    const struct req_node *r = w->run;
    pthread_mutex_lock(&w->mu);
    struct ev_node *t = w->eq_tail;
    if (t && t->ev.type == ELM_EV_TOKEN && t->ev.request_id == r->id &&
        merge_token_locked(t, ids, n_ids, text, len)) {
        pthread_mutex_unlock(&w->mu);
        return;
    }
    pthread_mutex_unlock(&w->mu);

    struct ev_node *n = calloc(1, sizeof *n);
    if (!n)
        return;
    n->ev.type = ELM_EV_TOKEN;
    n->ev.request_id = r->id;
    n->ev.request_type = r->req.type;
    n->ev.slot = r->req.slot;
    if (!merge_token_locked(n, ids, n_ids, text, len)) {
        elm_event_fini(&n->ev);
        free(n);
        return;
    }
    pthread_mutex_lock(&w->mu);
    wk_append_locked(w, n);
    pthread_mutex_unlock(&w->mu);
}

/* Progress of request r: an unread one of the same request is updated in
 * place.  Called from the worker thread and from the loader. */
void wk_emit_progress(elm_worker *w, const struct req_node *r, enum elm_event_type type,
                          float fraction)
{
    pthread_mutex_lock(&w->mu);
    struct ev_node *t = w->eq_tail;
    if (t && t->ev.type == type && t->ev.request_id == r->id) {
        t->ev.progress = fraction;
        pthread_mutex_unlock(&w->mu);
        return;
    }
    pthread_mutex_unlock(&w->mu);
    struct ev_node *n = calloc(1, sizeof *n);
    if (!n)
        return; /* progress is advisory */
    n->ev.type = type;
    n->ev.request_id = r->id;
    n->ev.request_type = r->req.type;
    n->ev.slot = r->req.slot;
    n->ev.progress = fraction;
    pthread_mutex_lock(&w->mu);
    wk_append_locked(w, n);
    pthread_mutex_unlock(&w->mu);
}

/* The preallocated final event of the running request, filled by the caller
 * and queued by wk_finish(). */
struct elm_event *wk_final_ev(elm_worker *w)
{
    return &w->run->final->ev;
}

void wk_set_text(struct elm_event *ev, const char *fmt, ...)
{
    char buf[ELM_ERR_MAX + 256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    free(ev->text);
    ev->text = strdup(buf); /* NULL on OOM: the status still says why */
}

void wk_finish(elm_worker *w)
{
    struct ev_node *n = w->run->final;
    w->run->final = NULL;
    pthread_mutex_lock(&w->mu);
    wk_append_locked(w, n);
    pthread_mutex_unlock(&w->mu);
}

void wk_finish_error(elm_worker *w, elm_status st, int n_past, const char *msg)
{
    struct elm_event *ev = wk_final_ev(w);
    ev->type = ELM_EV_DONE;
    ev->reason = ELM_DONE_ERROR;
    ev->status = st;
    ev->n_past = n_past;
    wk_set_text(ev, "%s", msg && *msg ? msg : elm_status_str(st));
    wk_finish(w);
}

int elm_worker_wake_fd(const elm_worker *w)
{
    return w ? w->wake_r : -1;
}

void elm_worker_drain_wake(elm_worker *w)
{
    if (!w)
        return;
    /* Under the lock, as the writer: the pipe holds a byte exactly while
     * wake_pending is set, so no wake-up is lost or left stale. */
    pthread_mutex_lock(&w->mu);
    char buf[64];
    ssize_t r;
    do
        r = read(w->wake_r, buf, sizeof buf);
    while (r > 0 || (r < 0 && errno == EINTR));
    w->wake_pending = false;
    pthread_mutex_unlock(&w->mu);
}

bool elm_worker_next_event(elm_worker *w, struct elm_event *ev)
{
    if (!w || !ev)
        return false;
    pthread_mutex_lock(&w->mu);
    struct ev_node *n = w->eq_head;
    if (n) {
        w->eq_head = n->next;
        if (!w->eq_head)
            w->eq_tail = NULL;
    }
    pthread_mutex_unlock(&w->mu);
    if (!n)
        return false;
    *ev = n->ev;
    free(n);
    return true;
}
