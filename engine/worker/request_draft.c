/* request_draft.c: SET_DRAFT (the draft model of speculative decoding) and
 * the draft's caches, one per slot, that follow each conversation.
 *
 * The draft is small and loaded on the worker thread itself (a 270M model
 * maps in well under a second).  Its caches are made when a GENERATE first
 * wants one and follow the slot's sequence by their common prefix
 * (engine/inference/draft.c); FREE_CTX drops the slot's.  A draft whose
 * vocabulary is not the current model's is not used (DONE says so once). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/worker/model_kind.h"
#include "engine/worker/shared_state.h"

void wk_draft_free(elm_worker *w)
{
    while (w->draft_ctxs) {
        struct slot_ctx *sc = w->draft_ctxs;
        w->draft_ctxs = sc->next;
        wk_slot_ctx_free(sc);
    }
    elm_model_free(w->draft);
    w->draft = NULL;
    free(w->draft_path);
    w->draft_path = NULL;
    w->draft_checked_for = NULL;
}

void wk_do_set_draft(elm_worker *w)
{
    const struct elm_request *rq = &w->run->req;
    struct elm_event *ev = wk_final_ev(w);
    if (!rq->path || !*rq->path) {
        wk_draft_free(w);
        ev->type = ELM_EV_DONE;
        ev->reason = ELM_DONE_OK;
        wk_finish(w);
        return;
    }
    if (w->draft_path && strcmp(w->draft_path, rq->path) == 0) {
        ev->type = ELM_EV_DONE;
        ev->reason = ELM_DONE_OK;
        wk_finish(w);
        return;
    }
    struct elm_model_params mp = elm_model_default_params();
    mp.n_threads = rq->n_threads;
    elm_model *m = NULL;
    char err[ELM_ERR_MAX];
    elm_status st = elm_model_load(rq->path, &mp, &m, err, sizeof err);
    if (st != ELM_OK) {
        wk_finish_error(w, st, 0, err);
        return;
    }
    const elm_model *target = w->cur ? w->cur->kind->draft_target(w->cur) : NULL;
    if (w->cur && !target) {
        elm_model_free(m);
        wk_finish_error(w, ELM_E_UNSUPPORTED, 0, "a draft model speeds up a local model only");
        return;
    }
    if (target && !elm_model_can_draft(target, m, err, sizeof err)) {
        elm_model_free(m);
        wk_finish_error(w, ELM_E_MISMATCH, 0, err);
        return;
    }
    wk_draft_free(w);
    w->draft = m;
    w->draft_path = strdup(rq->path);
    wk_enforce_budget(w, NULL); /* its weights count too */
    ev->type = ELM_EV_DONE;
    ev->reason = ELM_DONE_OK;
    wk_finish(w);
}

elm_ctx *wk_draft_ctx(elm_worker *w, int slot, int n_ctx)
{
    const elm_model *target = w->cur ? w->cur->kind->draft_target(w->cur) : NULL;
    if (!w->draft || !target)
        return NULL;
    if (w->draft_checked_for != target) {
        char err[ELM_ERR_MAX];
        w->draft_fits = elm_model_can_draft(target, w->draft, err, sizeof err);
        w->draft_checked_for = target;
    }
    if (!w->draft_fits)
        return NULL;
    for (struct slot_ctx *sc = w->draft_ctxs; sc; sc = sc->next)
        if (sc->slot == slot) {
            if (elm_ctx_n_ctx(sc->ctx) >= n_ctx)
                return sc->ctx;
            break; /* a longer context now: made again below */
        }
    wk_draft_free_slot(w, slot);
    struct elm_ctx_params cp = elm_ctx_default_params();
    cp.n_ctx = n_ctx;
    cp.n_threads = w->cur->n_threads;
    cp.abort_cb = wk_should_abort;
    cp.abort_user = w;
    struct slot_ctx *sc = calloc(1, sizeof *sc);
    char err[ELM_ERR_MAX];
    if (!sc || elm_ctx_new(w->draft, &cp, &sc->ctx, err, sizeof err) != ELM_OK) {
        free(sc);
        return NULL;
    }
    sc->slot = slot;
    sc->logits_at = -1;
    sc->bytes = wk_ctx_bytes(elm_model_get_info(w->draft), n_ctx);
    sc->next = w->draft_ctxs;
    w->draft_ctxs = sc;
    /* counted in the budget like the slot's own cache */
    wk_enforce_budget(w, wk_slot_find(w->cur, slot));
    for (struct slot_ctx *d = w->draft_ctxs; d; d = d->next)
        if (d->slot == slot)
            return d->ctx;
    return NULL;
}
