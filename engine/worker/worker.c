/* elm_worker.c: the engine thread (see elm_worker.h for the contract).
 *
 * Shared between threads, and only this: the request queue and the event
 * queue (one mutex, one condvar), the wake pipe, and two atomics (the cancel
 * watermark and the quit flag).  Everything else (models, contexts, slots,
 * the running request) belongs to the worker thread alone.
 *
 * LOAD_MODEL runs on a loader thread that the worker thread starts and
 * joins, so the current model keeps serving meanwhile.  The loader touches
 * only its own model_rec, ld_status/ld_err (read by the worker after the
 * join) and the event queue (progress); it says it is done with ld_done
 * under the mutex.  The worker adopts the new model between two requests.
 * Shutdown stops a load through elm_model_load's abort callback (the quit
 * flag), so joining the loader takes one tensor, not the whole load.
 */
#include "config.h"

#include "engine/elm_worker.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#endif

/* Prefill goes in chunks so a cancel keeps what is done and progress moves. */
#define PREFILL_CHUNK 128
/* Progress events at most this often (seconds). */
#define PROGRESS_PERIOD 0.05

struct req_node {
    struct req_node *next;
    uint64_t id;
    struct elm_request req; /* path and tokens owned by the node */
    struct ev_node *final;  /* preallocated: the final event can't fail */
};

struct ev_node {
    struct ev_node *next;
    struct elm_event ev;
    size_t text_len, text_cap; /* TOKEN merging */
    int ids_cap;
};

/* One cache: a slot's elm_ctx for one model. */
struct slot_ctx {
    struct slot_ctx *next;
    int slot;
    elm_ctx *ctx;
    float *logits;  /* [n_vocab] after the last decode */
    int logits_at;  /* n_past those logits belong to, -1: none */
    uint64_t bytes; /* estimate, for the budget */
    uint64_t last_used;
};

struct model_rec {
    struct model_rec *next;
    elm_model *model;
    const struct elm_model_info *info;
    char *path;
    int n_ctx, n_threads; /* as requested */
    struct slot_ctx *ctxs;
    uint64_t last_used;
};

struct elm_worker {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu */
    struct req_node *rq_head, *rq_tail;
    struct ev_node *eq_head, *eq_tail;
    uint64_t last_id;
    bool shutdown_posted;
    bool wake_pending;
    /* any thread */
    atomic_uint_fast64_t cancel_upto; /* GENERATEs with id <= this stop */
    atomic_bool quitting;
    int wake_r, wake_w;
    struct req_node stop_node; /* elm_worker_free's SHUTDOWN: cannot fail */

    atomic_int nice_inc; /* elm_worker_set_nice: wanted, applied by the worker */

    bool ld_done;      /* the loader thread has finished */
    int load_delay_ms; /* test hook (ELM_WORKER_TEST_LOAD_DELAY_MS), read-only */
    double ld_delay_until; /* loader thread only: the hook's slow disk ends then */

    /* the loader: started and joined by the worker thread, which owns these
     * fields; the loader reads ld_node's request and fills ld_rec,
     * ld_status and ld_err (the worker reads them after the join) */
    pthread_t ld_thread;
    bool ld_running;
    struct req_node *ld_node;  /* the LOAD_MODEL being loaded */
    struct model_rec *ld_rec;
    elm_status ld_status;
    char ld_err[ELM_ERR_MAX];
    double ld_last_emit;                  /* loader thread only */
    struct req_node *ld_q_head, *ld_q_tail; /* LOAD_MODELs waiting their turn */

    /* worker thread only */
    struct model_rec *models; /* the current one and the kept ones */
    struct model_rec *cur;
    uint64_t clock; /* LRU ticks */
    uint64_t budget;
    struct req_node *run;        /* the running request */
    int nice_base, nice_applied; /* this thread's nice at start; the inc in force */
    /* prefill progress, updated from the abort callback */
    bool in_prefill;
    int pf_total, pf_done, pf_chunk, pf_polls, pf_layers;
    double pf_last_emit;
};

static double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------ events */

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

static void append_locked(elm_worker *w, struct ev_node *n)
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
static void emit_token(elm_worker *w, const int32_t *ids, int n_ids, const char *text, size_t len)
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
    append_locked(w, n);
    pthread_mutex_unlock(&w->mu);
}

/* Progress of request r: an unread one of the same request is updated in
 * place.  Called from the worker thread and from the loader. */
static void emit_progress(elm_worker *w, const struct req_node *r, enum elm_event_type type,
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
    append_locked(w, n);
    pthread_mutex_unlock(&w->mu);
}

/* The preallocated final event of the running request, filled by the caller
 * and queued by finish(). */
static struct elm_event *final_ev(elm_worker *w)
{
    return &w->run->final->ev;
}

static void set_text(struct elm_event *ev, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void set_text(struct elm_event *ev, const char *fmt, ...)
{
    char buf[ELM_ERR_MAX + 256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    free(ev->text);
    ev->text = strdup(buf); /* NULL on OOM: the status still says why */
}

static void finish(elm_worker *w)
{
    struct ev_node *n = w->run->final;
    w->run->final = NULL;
    pthread_mutex_lock(&w->mu);
    append_locked(w, n);
    pthread_mutex_unlock(&w->mu);
}

static void finish_error(elm_worker *w, elm_status st, int n_past, const char *msg)
{
    struct elm_event *ev = final_ev(w);
    ev->type = ELM_EV_ERROR;
    ev->status = st;
    ev->n_past = n_past;
    set_text(ev, "%s", msg && *msg ? msg : elm_status_str(st));
    finish(w);
}

/* ------------------------------------------------------- models and slots */

static uint64_t phys_half(void)
{
    long pages = sysconf(_SC_PHYS_PAGES);
    long psize = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || psize <= 0)
        return UINT64_C(4) << 30;
    return (uint64_t)pages * (uint64_t)psize / 2;
}

static uint64_t ctx_bytes(const struct elm_model_info *info, int n_ctx)
{
    uint64_t per_tok = 0;
    for (int l = 0; l < info->n_layers && l < ELM_MAX_LAYERS; l++)
        per_tok += 2u * (uint64_t)info->n_kv_heads[l] * (uint64_t)info->head_dim * sizeof(float);
    return per_tok * (uint64_t)n_ctx + (uint64_t)info->n_vocab * sizeof(float);
}

static void slot_ctx_free(struct slot_ctx *sc)
{
    if (!sc)
        return;
    elm_ctx_free(sc->ctx);
    free(sc->logits);
    free(sc);
}

static void model_rec_free(struct model_rec *m)
{
    if (!m)
        return;
    while (m->ctxs) {
        struct slot_ctx *sc = m->ctxs;
        m->ctxs = sc->next;
        slot_ctx_free(sc);
    }
    elm_model_free(m->model);
    free(m->path);
    free(m);
}

static uint64_t total_bytes(const elm_worker *w)
{
    uint64_t t = 0;
    for (const struct model_rec *m = w->models; m; m = m->next) {
        t += m->info->weight_bytes;
        for (const struct slot_ctx *sc = m->ctxs; sc; sc = sc->next)
            t += sc->bytes;
    }
    return t;
}

/* CACHE_DROPPED for a cache of the current model that held tokens.  Like
 * progress it is advisory: lost only when out of memory. */
static void emit_cache_dropped(elm_worker *w, const struct slot_ctx *sc)
{
    int n = elm_ctx_n_past(sc->ctx);
    if (n <= 0)
        return;
    struct ev_node *e = calloc(1, sizeof *e);
    if (!e)
        return;
    e->ev.type = ELM_EV_CACHE_DROPPED;
    if (w->run) {
        e->ev.request_id = w->run->id;
        e->ev.request_type = w->run->req.type;
    }
    e->ev.slot = sc->slot;
    e->ev.n_dropped = n;
    pthread_mutex_lock(&w->mu);
    append_locked(w, e);
    pthread_mutex_unlock(&w->mu);
}

/* Drop least recently used things until under the budget: first whole
 * models other than the current, then caches other than keep.  Only the
 * latter are reported: a model switch re-prefills every slot anyway. */
static void enforce_budget(elm_worker *w, const struct slot_ctx *keep)
{
    while (total_bytes(w) > w->budget) {
        struct model_rec **victim = NULL;
        for (struct model_rec **pm = &w->models; *pm; pm = &(*pm)->next)
            if (*pm != w->cur && (!victim || (*pm)->last_used < (*victim)->last_used))
                victim = pm;
        if (victim) {
            struct model_rec *m = *victim;
            *victim = m->next;
            model_rec_free(m);
            continue;
        }
        struct slot_ctx **sv = NULL;
        if (w->cur)
            for (struct slot_ctx **ps = &w->cur->ctxs; *ps; ps = &(*ps)->next)
                if (*ps != keep && (!sv || (*ps)->last_used < (*sv)->last_used))
                    sv = ps;
        if (!sv)
            return;
        struct slot_ctx *sc = *sv;
        *sv = sc->next;
        emit_cache_dropped(w, sc);
        slot_ctx_free(sc);
    }
}

static struct slot_ctx *slot_find(struct model_rec *m, int slot)
{
    if (!m)
        return NULL;
    for (struct slot_ctx *sc = m->ctxs; sc; sc = sc->next)
        if (sc->slot == slot)
            return sc;
    return NULL;
}

static bool should_abort(void *user);

/* The running request's slot in the current model, created on demand. */
static elm_status slot_get(elm_worker *w, int slot, struct slot_ctx **out, char *err,
                           size_t err_size)
{
    struct slot_ctx *sc = slot_find(w->cur, slot);
    if (!sc) {
        sc = calloc(1, sizeof *sc);
        if (!sc)
            return ELM_E_NOMEM;
        sc->slot = slot;
        sc->logits_at = -1;
        sc->logits = malloc((size_t)w->cur->info->n_vocab * sizeof *sc->logits);
        struct elm_ctx_params cp = elm_ctx_default_params();
        cp.n_ctx = w->cur->n_ctx;
        cp.n_threads = w->cur->n_threads;
        cp.abort_cb = should_abort;
        cp.abort_user = w;
        elm_status st =
            sc->logits ? elm_ctx_new(w->cur->model, &cp, &sc->ctx, err, err_size) : ELM_E_NOMEM;
        if (st != ELM_OK) {
            slot_ctx_free(sc);
            return st;
        }
        sc->bytes = ctx_bytes(w->cur->info, elm_ctx_n_ctx(sc->ctx));
        sc->next = w->cur->ctxs;
        w->cur->ctxs = sc;
    }
    sc->last_used = ++w->clock;
    w->cur->last_used = w->clock;
    enforce_budget(w, sc);
    *out = sc;
    return ELM_OK;
}

/* ----------------------------------------------------------- cancellation */

static bool cancelled(const elm_worker *w)
{
    return atomic_load(&w->quitting) || atomic_load(&w->cancel_upto) >= (uint_fast64_t)w->run->id;
}

/* The engine's abort callback: polled between layers of elm_decode on this
 * (the worker) thread.  It also drives prefill progress. */
static bool should_abort(void *user)
{
    elm_worker *w = user;
    if (!w->run)
        return false;
    if (cancelled(w))
        return true;
    if (w->in_prefill && w->pf_layers > 0) {
        w->pf_polls++;
        double t = now_sec();
        if (t - w->pf_last_emit >= PROGRESS_PERIOD) {
            int polls = w->pf_polls < w->pf_layers ? w->pf_polls : w->pf_layers;
            double done = w->pf_done + (double)w->pf_chunk * polls / w->pf_layers;
            emit_progress(w, w->run, ELM_EV_PREFILL_PROGRESS, (float)(done / w->pf_total));
            w->pf_last_emit = t;
        }
    }
    return false;
}

/* ------------------------------------------------------------- LOAD_MODEL */

static void req_free(struct req_node *n)
{
    if (!n)
        return;
    free(n->req.path);
    free(n->req.tokens);
    if (n->final) {
        elm_event_fini(&n->final->ev);
        free(n->final);
    }
    free(n);
}

/* The loader thread's progress callback. */
static void load_progress(float fraction, void *user)
{
    elm_worker *w = user;
    double t = now_sec();
    if (fraction < 1.0f && t - w->ld_last_emit < PROGRESS_PERIOD)
        return;
    w->ld_last_emit = t;
    emit_progress(w, w->ld_node, ELM_EV_LOAD_PROGRESS, fraction);
}

static void model_ready(elm_worker *w, struct model_rec *m)
{
    w->cur = m;
    m->last_used = ++w->clock;
    enforce_budget(w, NULL);
    struct elm_event *ev = final_ev(w);
    ev->type = ELM_EV_MODEL_READY;
    ev->progress = 1.0f;
    ev->n_ctx = m->n_ctx > 0 && m->n_ctx < m->info->n_ctx_train ? m->n_ctx : m->info->n_ctx_train;
    ev->info = malloc(sizeof *ev->info);
    if (ev->info)
        memcpy(ev->info, m->info, sizeof *ev->info);
    finish(w);
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
    struct elm_model_params mp = elm_model_default_params();
    mp.n_threads = rq->n_threads;
    mp.progress_cb = load_progress;
    mp.progress_user = w;
    mp.abort_cb = load_should_abort;
    mp.abort_user = w;
    w->ld_err[0] = '\0';
    w->ld_status = elm_model_load(rq->path, &mp, &w->ld_rec->model, w->ld_err, sizeof w->ld_err);
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
    if (rq->mem_budget)
        w->budget = rq->mem_budget;
    if (!rq->path || !*rq->path) {
        finish_error(w, ELM_E_INVALID, 0, "LOAD_MODEL without a path");
        goto done;
    }
    for (struct model_rec *m = w->models; m; m = m->next) {
        if (strcmp(m->path, rq->path) == 0 && m->n_ctx == rq->n_ctx &&
            m->n_threads == rq->n_threads) {
            model_ready(w, m); /* kept: instant, caches intact */
            goto done;
        }
    }
    struct model_rec *m = calloc(1, sizeof *m);
    char *path = strdup(rq->path);
    if (!m || !path) {
        free(m);
        free(path);
        finish_error(w, ELM_E_NOMEM, 0, NULL);
        goto done;
    }
    m->path = path;
    m->n_ctx = rq->n_ctx;
    m->n_threads = rq->n_threads;
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
        finish_error(w, ELM_E_NOMEM, 0, msg);
        goto done;
    }
    w->ld_running = true;
    w->run = NULL;
    return;
done:
    w->run = NULL;
    req_free(n);
}

/* Start the next waiting LOAD_MODEL when no load is running (none once
 * shutting down: they are dropped). */
static void next_load(elm_worker *w)
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
static void complete_load(elm_worker *w)
{
    pthread_join(w->ld_thread, NULL);
    w->ld_running = false;
    struct model_rec *m = w->ld_rec;
    struct req_node *n = w->ld_node;
    w->ld_rec = NULL;
    w->ld_node = NULL;
    w->run = n;
    if (w->ld_status != ELM_OK) {
        elm_model_free(m->model);
        free(m->path);
        free(m);
        struct slot_ctx *sc = slot_find(w->cur, n->req.slot);
        finish_error(w, w->ld_status, sc ? elm_ctx_n_past(sc->ctx) : 0, w->ld_err);
    } else {
        m->info = elm_model_get_info(m->model);
        m->next = w->models;
        w->models = m;
        model_ready(w, m);
    }
    w->run = NULL;
    req_free(n);
    next_load(w);
}

/* --------------------------------------------------------------- GENERATE */

static void done_generate(elm_worker *w, struct slot_ctx *sc, enum elm_done_reason reason,
                          elm_status st, const char *msg)
{
    struct elm_event *ev = final_ev(w);
    ev->type = ELM_EV_DONE;
    ev->reason = reason;
    ev->status = st;
    if (sc) {
        ev->n_past = elm_ctx_n_past(sc->ctx);
        ev->n_ctx = elm_ctx_n_ctx(sc->ctx);
    }
    if (reason == ELM_DONE_ERROR)
        set_text(ev, "%s", msg && *msg ? msg : elm_status_str(st));
    finish(w);
}

/* Feed n tokens in chunks.  Returns ELM_OK or the first failure; on
 * failure the cache keeps the chunks already done. */
static elm_status prefill(elm_worker *w, struct slot_ctx *sc, const int32_t *toks, int n)
{
    w->in_prefill = n > 1;
    w->pf_total = n;
    w->pf_done = 0;
    w->pf_layers = w->cur->info->n_layers;
    w->pf_last_emit = now_sec();
    elm_status st = ELM_OK;
    while (w->pf_done < n) {
        int m = n - w->pf_done < PREFILL_CHUNK ? n - w->pf_done : PREFILL_CHUNK;
        w->pf_chunk = m;
        w->pf_polls = 0;
        st = elm_decode(sc->ctx, toks + w->pf_done, m, sc->logits, 0);
        if (st != ELM_OK)
            break;
        w->pf_done += m;
        sc->logits_at = elm_ctx_n_past(sc->ctx);
    }
    if (st == ELM_OK && w->in_prefill)
        emit_progress(w, w->run, ELM_EV_PREFILL_PROGRESS, 1.0f);
    w->in_prefill = false;
    return st;
}

/* GENERATE's min_token_interval_ms: sleep until since + ms, in short naps
 * so that a cancel or shutdown ends the wait at once. */
static void pace_wait(elm_worker *w, double since, int ms)
{
    double until = since + ms * 1e-3;
    for (;;) {
        double left = until - now_sec();
        if (left <= 0 || cancelled(w))
            return;
        if (left > 0.005)
            left = 0.005;
        struct timespec ts = {0, (long)(left * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* elm_generate's hooks: TOKEN events, and before each sample the pacing
 * wait (min_token_interval_ms) and the cancel check. */
struct gen_pace {
    elm_worker *w;
    int interval_ms;
    int n_sampled;
    double last;
};

static void gen_on_token(void *user, int32_t id, const char *text, size_t len)
{
    struct gen_pace *g = user;
    if (id >= 0)
        emit_token(g->w, &id, 1, text, len);
    else
        emit_token(g->w, NULL, 0, text, len);
}

static bool gen_should_stop(void *user)
{
    struct gen_pace *g = user;
    if (g->interval_ms > 0 && g->n_sampled > 0) {
        pace_wait(g->w, g->last, g->interval_ms);
        g->last = now_sec();
    } else if (g->n_sampled == 0) {
        g->last = now_sec();
    }
    g->n_sampled++;
    return cancelled(g->w);
}

static enum elm_done_reason done_reason_of(enum elm_stop_reason r)
{
    switch (r) {
    case ELM_STOP_EOS: return ELM_DONE_EOS;
    case ELM_STOP_LENGTH: return ELM_DONE_LENGTH;
    case ELM_STOP_ID: return ELM_DONE_STOP;
    case ELM_STOP_STRING: return ELM_DONE_STOP_STRING;
    case ELM_STOP_CANCELLED: return ELM_DONE_CANCELLED;
    case ELM_STOP_CONTEXT_FULL: return ELM_DONE_CONTEXT_FULL;
    case ELM_STOP_ERROR: break;
    }
    return ELM_DONE_ERROR;
}

static void do_generate(elm_worker *w)
{
    const struct elm_request *rq = &w->run->req;
    struct slot_ctx *sc = NULL;
    char err[ELM_ERR_MAX];
    err[0] = '\0';

    if (cancelled(w)) {
        done_generate(w, slot_find(w->cur, rq->slot), ELM_DONE_CANCELLED, ELM_OK, NULL);
        return;
    }
    if (!w->cur) {
        done_generate(w, NULL, ELM_DONE_ERROR, ELM_E_INVALID, "no model loaded");
        return;
    }
    if (rq->n_tokens < 0 || (rq->n_tokens > 0 && !rq->tokens) || rq->max_tokens < 0) {
        done_generate(w, NULL, ELM_DONE_ERROR, ELM_E_INVALID, "bad GENERATE request");
        return;
    }
    elm_status st = slot_get(w, rq->slot, &sc, err, sizeof err);
    if (st != ELM_OK) {
        done_generate(w, NULL, ELM_DONE_ERROR, st, err);
        return;
    }
    int n_past = elm_ctx_n_past(sc->ctx);
    int n_ctx = elm_ctx_n_ctx(sc->ctx);
    const int32_t *cached = elm_ctx_tokens(sc->ctx);

    /* What to keep, what to feed. */
    int keep;
    const int32_t *feed = rq->tokens;
    int n_feed = rq->n_tokens;
    int32_t refeed;
    if (rq->flags & ELM_GEN_SYNC) {
        keep = 0;
        while (keep < n_past && keep < rq->n_tokens && cached[keep] == rq->tokens[keep])
            keep++;
        if (keep == rq->n_tokens && keep > 0 && rq->max_tokens > 0 &&
            !(keep == n_past && sc->logits_at == keep))
            keep--; /* logits needed: recompute the last token */
        feed = rq->tokens + keep;
        n_feed = rq->n_tokens - keep;
    } else {
        keep = rq->n_keep >= 0 ? rq->n_keep : n_past;
        if (keep > n_past) {
            snprintf(err, sizeof err, "n_keep %d > n_past %d", keep, n_past);
            done_generate(w, sc, ELM_DONE_ERROR, ELM_E_INVALID, err);
            return;
        }
        if (n_feed == 0 && rq->max_tokens > 0 && sc->logits_at != keep && keep > 0) {
            refeed = cached[keep - 1];
            keep--;
            feed = &refeed;
            n_feed = 1;
        }
    }
    if (n_feed == 0 && rq->max_tokens > 0 && sc->logits_at != keep) {
        done_generate(w, sc, ELM_DONE_ERROR, ELM_E_INVALID, "nothing to sample from (empty cache)");
        return;
    }
    if (keep + n_feed > n_ctx) {
        done_generate(w, sc, ELM_DONE_CONTEXT_FULL, ELM_E_CONTEXT_FULL, NULL);
        return;
    }
    if (keep < n_past) {
        st = elm_ctx_truncate(sc->ctx, keep);
        if (st != ELM_OK) {
            done_generate(w, sc, ELM_DONE_ERROR, st, "truncate failed");
            return;
        }
        if (sc->logits_at > keep)
            sc->logits_at = -1;
    }
    struct elm_event *fev = final_ev(w);
    fev->n_reused = keep;

    double t0 = now_sec();
    st = prefill(w, sc, feed, n_feed);
    double t1 = now_sec();
    fev->n_prefilled = elm_ctx_n_past(sc->ctx) - keep;
    if (fev->n_prefilled > 0 && t1 > t0)
        fev->prefill_tps = fev->n_prefilled / (t1 - t0);
    if (st == ELM_E_ABORTED) {
        done_generate(w, sc, ELM_DONE_CANCELLED, ELM_OK, NULL);
        return;
    }
    if (st != ELM_OK) {
        done_generate(w, sc, ELM_DONE_ERROR, st, "decode failed during prefill");
        return;
    }
    if (rq->max_tokens == 0) {
        done_generate(w, sc, ELM_DONE_OK, ELM_OK, NULL);
        return;
    }

    /* Sampling. */
    struct gen_pace pace = {w, rq->min_token_interval_ms, 0, 0};
    struct elm_generate_params gp = elm_generate_default_params();
    gp.sampler = rq->sampler;
    gp.max_tokens = rq->max_tokens;
    gp.stop_ids = rq->stop_ids;
    gp.n_stop_ids = rq->n_stop_ids < ELM_MAX_STOP_IDS ? rq->n_stop_ids : ELM_MAX_STOP_IDS;
    gp.tokenizer = elm_model_tokenizer(w->cur->model);
    gp.on_token = gen_on_token;
    gp.should_stop = gen_should_stop;
    gp.user = &pace;
    struct elm_generate_result res;
    double t2 = now_sec();
    elm_status fst = elm_generate(sc->ctx, sc->logits, &gp, &res, err, sizeof err);
    double t3 = now_sec();
    sc->logits_at = elm_ctx_n_past(sc->ctx);
    enum elm_done_reason reason = done_reason_of(res.reason);
    if (reason == ELM_DONE_CONTEXT_FULL)
        fst = ELM_E_CONTEXT_FULL;
    fev->n_generated = res.n_generated;
    if (res.n_generated > 0 && t3 > t2)
        fev->decode_tps = res.n_generated / (t3 - t2);
    done_generate(w, sc, reason, fst, err);
}

/* ------------------------------------------- TRUNCATE, SAVE/LOAD, FREE_CTX */

static void done_ok(elm_worker *w, const struct slot_ctx *sc)
{
    struct elm_event *ev = final_ev(w);
    ev->type = ELM_EV_DONE;
    ev->reason = ELM_DONE_OK;
    if (sc) {
        ev->n_past = elm_ctx_n_past(sc->ctx);
        ev->n_ctx = elm_ctx_n_ctx(sc->ctx);
    }
    finish(w);
}

static void do_truncate(elm_worker *w)
{
    const struct elm_request *rq = &w->run->req;
    struct slot_ctx *sc = slot_find(w->cur, rq->slot);
    int n_past = sc ? elm_ctx_n_past(sc->ctx) : 0;
    if (rq->n_keep < 0 || rq->n_keep > n_past) {
        char msg[96];
        snprintf(msg, sizeof msg, "cannot truncate %d tokens to %d", n_past, rq->n_keep);
        finish_error(w, ELM_E_INVALID, n_past, msg);
        return;
    }
    if (sc && rq->n_keep < n_past) {
        elm_status st = elm_ctx_truncate(sc->ctx, rq->n_keep);
        if (st != ELM_OK) {
            finish_error(w, st, elm_ctx_n_past(sc->ctx), NULL);
            return;
        }
        if (sc->logits_at > rq->n_keep)
            sc->logits_at = -1;
    }
    done_ok(w, sc);
}

static void do_state(elm_worker *w, bool save)
{
    const struct elm_request *rq = &w->run->req;
    char err[ELM_ERR_MAX];
    err[0] = '\0';
    if (!w->cur) {
        finish_error(w, ELM_E_INVALID, 0, "no model loaded");
        return;
    }
    if (!rq->path || !*rq->path) {
        finish_error(w, ELM_E_INVALID, 0, "no path given");
        return;
    }
    struct slot_ctx *sc = slot_find(w->cur, rq->slot);
    if (save && !sc) {
        finish_error(w, ELM_E_INVALID, 0, "the slot has no cache to save");
        return;
    }
    if (!save) {
        elm_status st = slot_get(w, rq->slot, &sc, err, sizeof err);
        if (st != ELM_OK) {
            finish_error(w, st, 0, err);
            return;
        }
    }
    elm_status st = save ? elm_state_save(sc->ctx, rq->path, err, sizeof err)
                         : elm_state_load(sc->ctx, rq->path, err, sizeof err);
    if (!save && st == ELM_OK)
        sc->logits_at = -1; /* the snapshot holds no logits */
    if (st != ELM_OK) {
        finish_error(w, st, elm_ctx_n_past(sc->ctx), err);
        return;
    }
    done_ok(w, sc);
}

static void do_free_ctx(elm_worker *w)
{
    int slot = w->run->req.slot;
    for (struct model_rec *m = w->models; m; m = m->next) {
        for (struct slot_ctx **ps = &m->ctxs; *ps;) {
            if ((*ps)->slot == slot) {
                struct slot_ctx *sc = *ps;
                *ps = sc->next;
                slot_ctx_free(sc);
            } else {
                ps = &(*ps)->next;
            }
        }
    }
    done_ok(w, NULL);
}

/* ------------------------------------------------------------- the thread */

/* elm_worker_set_nice: renice this thread (Linux nice is per thread).  The
 * loader and the compute threads of every ctx created afterwards inherit
 * it when they are started, so they all run behind the UI thread. */
static void apply_nice(elm_worker *w)
{
    int inc = atomic_load(&w->nice_inc);
    if (inc == w->nice_applied)
        return;
    w->nice_applied = inc;
#ifdef __linux__
    int v = w->nice_base + inc;
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), v > 19 ? 19 : v);
#endif
}

static void *worker_main(void *arg)
{
    elm_worker *w = arg;
#ifdef __linux__
    errno = 0;
    int base = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
    w->nice_base = errno ? 0 : base;
#endif
    for (;;) {
        pthread_mutex_lock(&w->mu);
        /* With no current model, requests wait for the load in progress
         * (a first LOAD_MODEL then GENERATE behaves as if run in order). */
        while (!w->ld_done && (!w->rq_head || (w->ld_running && !w->cur)))
            pthread_cond_wait(&w->cv, &w->mu);
        apply_nice(w); /* before anything runs or starts a thread */
        if (w->ld_done) {
            w->ld_done = false;
            pthread_mutex_unlock(&w->mu);
            complete_load(w); /* MODEL_READY: between two requests */
            continue;
        }
        struct req_node *n = w->rq_head;
        w->rq_head = n->next;
        if (!w->rq_head)
            w->rq_tail = NULL;
        pthread_mutex_unlock(&w->mu);

        if (n->req.type == ELM_REQ_SHUTDOWN || atomic_load(&w->quitting)) {
            bool stop = n->req.type == ELM_REQ_SHUTDOWN;
            if (n != &w->stop_node)
                req_free(n);
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
            next_load(w);
            continue;
        case ELM_REQ_GENERATE:
            do_generate(w);
            break;
        case ELM_REQ_TRUNCATE:
            do_truncate(w);
            break;
        case ELM_REQ_SAVE_STATE:
            do_state(w, true);
            break;
        case ELM_REQ_LOAD_STATE:
            do_state(w, false);
            break;
        case ELM_REQ_FREE_CTX:
            do_free_ctx(w);
            break;
        case ELM_REQ_SHUTDOWN:
            break;
        default:
            finish_error(w, ELM_E_INVALID, 0, "unknown request type");
            break;
        }
        w->run = NULL;
        req_free(n);
    }
    /* A load in progress: its abort callback sees the quit flag, so
     * elm_model_load returns ELM_E_ABORTED within a tensor. */
    if (w->ld_running) {
        pthread_join(w->ld_thread, NULL);
        w->ld_running = false;
        elm_model_free(w->ld_rec->model);
        free(w->ld_rec->path);
        free(w->ld_rec);
        req_free(w->ld_node);
        w->ld_rec = NULL;
        w->ld_node = NULL;
    }
    while (w->ld_q_head) {
        struct req_node *n = w->ld_q_head;
        w->ld_q_head = n->next;
        req_free(n);
    }
    while (w->models) {
        struct model_rec *m = w->models;
        w->models = m->next;
        model_rec_free(m);
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

elm_worker *elm_worker_new(char *err, size_t err_size)
{
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
    atomic_init(&w->nice_inc, 0);
    w->budget = phys_half();
    const char *delay = getenv("ELM_WORKER_TEST_LOAD_DELAY_MS");
    if (delay && *delay) {
        long ms = strtol(delay, NULL, 10);
        w->load_delay_ms = ms > 0 && ms <= 60000 ? (int)ms : 0;
    }
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

static void queue_locked(elm_worker *w, struct req_node *n)
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
    n->req.tokens = NULL;
    n->final = calloc(1, sizeof *n->final);
    if (!n->final)
        goto oom;
    if (req->path && !(n->req.path = strdup(req->path)))
        goto oom;
    if (req->n_tokens > 0 && req->tokens) {
        n->req.tokens = malloc((size_t)req->n_tokens * sizeof *req->tokens);
        if (!n->req.tokens)
            goto oom;
        memcpy(n->req.tokens, req->tokens, (size_t)req->n_tokens * sizeof *req->tokens);
    } else if (req->n_tokens > 0) {
        n->req.n_tokens = -1; /* reported as a bad request on the worker */
    }
    pthread_mutex_lock(&w->mu);
    if (w->shutdown_posted) {
        pthread_mutex_unlock(&w->mu);
        req_free(n);
        return 0;
    }
    n->id = ++w->last_id;
    if (req->type == ELM_REQ_SHUTDOWN)
        w->shutdown_posted = true;
    queue_locked(w, n);
    uint64_t id = n->id;
    pthread_mutex_unlock(&w->mu);
    return id;
oom:
    req_free(n);
    return 0;
}

void elm_worker_cancel(elm_worker *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    uint64_t upto = w->last_id;
    pthread_mutex_unlock(&w->mu);
    /* Monotonic: a late store of a smaller watermark must not undo a newer
     * cancel from another thread. */
    uint_fast64_t cur = atomic_load(&w->cancel_upto);
    while (cur < upto && !atomic_compare_exchange_weak(&w->cancel_upto, &cur, upto))
        ;
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
        req_free(q);
        q = next;
    }
    w->stop_node.req.type = ELM_REQ_SHUTDOWN;
    pthread_mutex_lock(&w->mu);
    queue_locked(w, &w->stop_node);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);

    /* Left over when the caller had posted its own SHUTDOWN. */
    while (w->rq_head) {
        struct req_node *n = w->rq_head;
        w->rq_head = n->next;
        if (n != &w->stop_node)
            req_free(n);
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

void elm_worker_set_nice(elm_worker *w, int inc)
{
    if (!w)
        return;
    atomic_store(&w->nice_inc, inc < 0 ? 0 : inc > 19 ? 19 : inc);
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
