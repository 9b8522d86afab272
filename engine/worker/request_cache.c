/* request_cache.c: the requests on a slot's cache other than GENERATE:
 * TRUNCATE, SAVE_STATE, LOAD_STATE, FREE_CTX. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/worker/model_kind.h"
#include "engine/worker/shared_state.h"

static void done_ok(elm_worker *w, const struct slot_ctx *sc)
{
    struct elm_event *ev = wk_final_ev(w);
    ev->type = ELM_EV_DONE;
    ev->reason = ELM_DONE_OK;
    if (sc) {
        ev->n_past = elm_ctx_n_past(sc->ctx);
        ev->n_ctx = elm_ctx_n_ctx(sc->ctx);
    }
    wk_finish(w);
}

void wk_do_truncate(elm_worker *w)
{
    const struct elm_request *rq = &w->run->req;
    struct slot_ctx *sc = wk_slot_find(w->cur, rq->slot);
    int n_past = sc ? elm_ctx_n_past(sc->ctx) : 0;
    if (rq->n_keep < 0 || rq->n_keep > n_past) {
        char msg[96];
        snprintf(msg, sizeof msg, "cannot truncate %d tokens to %d", n_past, rq->n_keep);
        wk_finish_error(w, ELM_E_INVALID, n_past, msg);
        return;
    }
    if (sc && rq->n_keep < n_past) {
        elm_status st = elm_ctx_truncate(sc->ctx, rq->n_keep);
        if (st != ELM_OK) {
            wk_finish_error(w, st, elm_ctx_n_past(sc->ctx), NULL);
            return;
        }
        if (sc->logits_at > rq->n_keep)
            sc->logits_at = -1;
    }
    done_ok(w, sc);
}

/* LOAD_STATE with tokens: keep only the snapshot's common prefix with
 * them, so that DONE's n_past is what the next GENERATE (ELM_GEN_SYNC)
 * reuses and the caller needs no prefill to learn it. */
static elm_status keep_common_prefix(struct slot_ctx *sc, const int32_t *tokens, int n)
{
    int n_past = elm_ctx_n_past(sc->ctx);
    const int32_t *cached = elm_ctx_tokens(sc->ctx);
    int keep = 0;
    while (keep < n_past && keep < n && cached[keep] == tokens[keep])
        keep++;
    return keep < n_past ? elm_ctx_truncate(sc->ctx, keep) : ELM_OK;
}

void wk_do_state(elm_worker *w, bool save)
{
    const struct elm_request *rq = &w->run->req;
    char err[ELM_ERR_MAX];
    err[0] = '\0';
    if (!w->cur) {
        wk_finish_error(w, ELM_E_INVALID, 0, "no model loaded");
        return;
    }
    if (!rq->path || !*rq->path) {
        wk_finish_error(w, ELM_E_INVALID, 0, "no path given");
        return;
    }
    struct slot_ctx *sc = wk_slot_find(w->cur, rq->slot);
    if (save && !sc) {
        wk_finish_error(w, ELM_E_INVALID, 0, "the slot has no cache to save");
        return;
    }
    if (!save) {
        elm_status st = wk_slot_get(w, rq->slot, &sc, err, sizeof err);
        if (st != ELM_OK) {
            wk_finish_error(w, st, 0, err);
            return;
        }
    }
    elm_status st = save ? elm_state_save(sc->ctx, rq->path, err, sizeof err)
                         : elm_state_load(sc->ctx, rq->path, err, sizeof err);
    if (!save && st == ELM_OK) {
        sc->logits_at = -1; /* the snapshot holds no logits */
        if (rq->n_tokens > 0 && rq->tokens &&
            (st = keep_common_prefix(sc, rq->tokens, rq->n_tokens)) != ELM_OK)
            snprintf(err, sizeof err, "cannot truncate the restored cache");
    }
    if (st != ELM_OK) {
        wk_finish_error(w, st, elm_ctx_n_past(sc->ctx), err);
        return;
    }
    done_ok(w, sc);
}

void wk_do_free_ctx(elm_worker *w)
{
    int slot = w->run->req.slot;
    for (struct model_rec *m = w->models; m; m = m->next) {
        if (m->kind->free_slot)
            m->kind->free_slot(m, slot);
        wk_slot_drop(m, slot);
    }
    wk_draft_free_slot(w, slot);
    done_ok(w, NULL);
}
