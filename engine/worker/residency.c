/* residency.c: which models and caches stay in memory: per-slot contexts
 * made on first use, the memory budget (least recently used first, the
 * CACHE_DROPPED event), the budget's default (half the physical memory). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/worker/model_kind.h"
#include "engine/worker/shared_state.h"
#include "engine/worker/worker_testing.h"

uint64_t wk_phys_half(void)
{
    long pages = sysconf(_SC_PHYS_PAGES);
    long psize = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || psize <= 0)
        return UINT64_C(4) << 30;
    return (uint64_t)pages * (uint64_t)psize / 2;
}

uint64_t wk_ctx_bytes(const struct elm_model_info *info, int n_ctx)
{
    uint64_t per_tok = 0;
    for (int l = 0; l < info->n_layers && l < ELM_MAX_LAYERS; l++)
        per_tok += 2u * (uint64_t)info->n_kv_heads[l] * (uint64_t)info->head_dim * sizeof(float);
    return per_tok * (uint64_t)n_ctx + (uint64_t)info->n_vocab * sizeof(float);
}

void wk_slot_ctx_free(struct slot_ctx *sc)
{
    if (!sc)
        return;
    elm_ctx_free(sc->ctx);
    free(sc->logits);
    free(sc);
}

void wk_slot_drop(struct model_rec *m, int slot)
{
    for (struct slot_ctx **ps = &m->ctxs; *ps;) {
        if ((*ps)->slot == slot) {
            struct slot_ctx *sc = *ps;
            *ps = sc->next;
            wk_slot_ctx_free(sc);
        } else {
            ps = &(*ps)->next;
        }
    }
}

/* The draft's caches are counted and dropped here with the others (the
 * draft model itself: request_draft.c). */
void wk_draft_free_slot(elm_worker *w, int slot)
{
    for (struct slot_ctx **p = &w->draft_ctxs; *p; p = &(*p)->next)
        if ((*p)->slot == slot) {
            struct slot_ctx *sc = *p;
            *p = sc->next;
            wk_slot_ctx_free(sc);
            return;
        }
}

void wk_model_rec_free(struct model_rec *m)
{
    if (!m)
        return;
    while (m->ctxs) {
        struct slot_ctx *sc = m->ctxs;
        m->ctxs = sc->next;
        wk_slot_ctx_free(sc);
    }
    m->kind->unload(m);
    free(m->path);
    free(m);
}

/* Every model and cache, the draft's included. */
static uint64_t total_bytes(const elm_worker *w)
{
    uint64_t t = 0;
    for (const struct model_rec *m = w->models; m; m = m->next) {
        t += m->info->weight_bytes;
        for (const struct slot_ctx *sc = m->ctxs; sc; sc = sc->next)
            t += sc->bytes;
    }
    if (w->draft)
        t += elm_model_get_info(w->draft)->weight_bytes;
    for (const struct slot_ctx *sc = w->draft_ctxs; sc; sc = sc->next)
        t += sc->bytes;
    return t;
}

void elm_worker_test_resident(elm_worker *w, struct elm_worker_test_resident *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&w->mu); /* pairs with the final event's append */
    for (const struct model_rec *m = w->models; m; m = m->next) {
        out->n_models++;
        for (const struct slot_ctx *sc = m->ctxs; sc; sc = sc->next)
            out->n_caches++;
    }
    for (const struct slot_ctx *sc = w->draft_ctxs; sc; sc = sc->next)
        out->n_draft_caches++;
    out->draft_loaded = w->draft != NULL;
    out->bytes = total_bytes(w);
    pthread_mutex_unlock(&w->mu);
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
    wk_append_locked(w, e);
    pthread_mutex_unlock(&w->mu);
}

/* Drop least recently used things until under the budget: first whole
 * models other than the current, then caches other than keep (a slot's
 * draft cache goes with its cache: it only ever speeds that one up), then
 * the draft caches of other slots.  Only dropped caches of the current
 * model are reported: a model switch re-prefills every slot anyway. */
void wk_enforce_budget(elm_worker *w, const struct slot_ctx *keep)
{
    while (total_bytes(w) > w->budget) {
        struct model_rec **victim = NULL;
        for (struct model_rec **pm = &w->models; *pm; pm = &(*pm)->next)
            if (*pm != w->cur && (!victim || (*pm)->last_used < (*victim)->last_used))
                victim = pm;
        if (victim) {
            struct model_rec *m = *victim;
            *victim = m->next;
            wk_model_rec_free(m);
            continue;
        }
        struct slot_ctx **sv = NULL;
        if (w->cur)
            for (struct slot_ctx **ps = &w->cur->ctxs; *ps; ps = &(*ps)->next)
                if (*ps != keep && (!sv || (*ps)->last_used < (*sv)->last_used))
                    sv = ps;
        if (!sv) {
            int keep_slot = keep ? keep->slot : -1;
            struct slot_ctx *d = w->draft_ctxs;
            while (d && d->slot == keep_slot)
                d = d->next;
            if (!d)
                return;
            wk_draft_free_slot(w, d->slot);
            continue;
        }
        struct slot_ctx *sc = *sv;
        *sv = sc->next;
        emit_cache_dropped(w, sc);
        wk_draft_free_slot(w, sc->slot);
        wk_slot_ctx_free(sc);
    }
}

struct slot_ctx *wk_slot_find(struct model_rec *m, int slot)
{
    if (!m)
        return NULL;
    for (struct slot_ctx *sc = m->ctxs; sc; sc = sc->next)
        if (sc->slot == slot)
            return sc;
    return NULL;
}

/* The running request's slot in the current model, created on demand. */
elm_status wk_slot_get(elm_worker *w, int slot, struct slot_ctx **out, char *err,
                           size_t err_size)
{
    struct slot_ctx *sc = wk_slot_find(w->cur, slot);
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
        cp.exact = w->cur->exact;
        cp.abort_cb = wk_should_abort;
        cp.abort_user = w;
        elm_status st =
            sc->logits ? elm_ctx_new(w->cur->model, &cp, &sc->ctx, err, err_size) : ELM_E_NOMEM;
        if (st != ELM_OK) {
            wk_slot_ctx_free(sc);
            return st;
        }
        sc->bytes = wk_ctx_bytes(w->cur->info, elm_ctx_n_ctx(sc->ctx));
        sc->next = w->cur->ctxs;
        w->cur->ctxs = sc;
    }
    sc->last_used = ++w->clock;
    w->cur->last_used = w->clock;
    wk_enforce_budget(w, sc);
    *out = sc;
    return ELM_OK;
}
