/* shared_state.h: the worker's shared state and its files' internal functions
 * (engine-internal; the contract is engine/elm_worker.h).
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
#ifndef ELMCHAT_ENGINE_WORKER_SHARED_STATE_H
#define ELMCHAT_ENGINE_WORKER_SHARED_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "engine/base/platform.h"
#include "engine/elm_worker.h"

/* Prefill goes in chunks so a cancel keeps what is done and progress moves. */
#define PREFILL_CHUNK 128
/* Progress events at most this often (seconds). */
#define PROGRESS_PERIOD 0.05

struct req_node {
    struct req_node *next;
    uint64_t id;
    struct elm_request req; /* path, tokens and stop strings owned by the node */
    atomic_bool cancel;     /* elm_worker_cancel(id) */
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

struct remote_model; /* remote_server.h */
struct model_kind;   /* model_kind.h */

struct model_rec {
    struct model_rec *next;
    const struct model_kind *kind; /* what it is; only its kind's file reads the next two */
    elm_model *model;              /* the local kind's weights */
    struct remote_model *remote;   /* the remote kind's llama-server ("server:URL") */
    const struct elm_model_info *info;
    char *path;
    int n_ctx, n_threads; /* as requested */
    bool exact;           /* ELM_LOAD_EXACT */
    struct slot_ctx *ctxs;
    uint64_t last_used;
};

struct elm_worker {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu */
    struct req_node *rq_head, *rq_tail;
    struct req_node *current; /* the request running: cancel by id finds it */
    struct ev_node *eq_head, *eq_tail;
    uint64_t last_id;
    bool shutdown_posted;
    bool wake_pending;
    /* any thread */
    atomic_uint_fast64_t cancel_upto; /* GENERATEs with id <= this stop */
    atomic_bool quitting;
    int wake_r, wake_w;
    struct req_node stop_node; /* elm_worker_free's SHUTDOWN: cannot fail */

    int nice_inc;        /* elm_worker_params.nice, read-only */
    /* test hooks (engine/base/test_hooks.h, worker_testing.h); 0: none */
    atomic_int token_interval_ms;
    int test_draft_k; /* read-only: elm_generate_params.draft_k */

    bool ld_done;      /* the loader thread has finished */
    int load_delay_ms;     /* test hook, read-only */
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
    elm_model *draft;             /* SET_DRAFT: the draft model, NULL: none */
    char *draft_path;
    struct slot_ctx *draft_ctxs;  /* its caches, one per slot */
    const elm_model *draft_checked_for; /* the model draft_fits was checked against */
    bool draft_fits;              /* the same vocabulary as that model */
    struct model_rec *models; /* the current one and the kept ones */
    struct model_rec *cur;
    uint64_t clock; /* LRU ticks */
    uint64_t budget;
    struct req_node *run;        /* the running request */
    /* prefill progress, updated from the abort callback */
    bool in_prefill;
    int pf_total, pf_done, pf_chunk, pf_polls, pf_layers;
    double pf_last_emit;
};

static inline double now_sec(void)
{
    return elm_now_seconds(); /* engine/base/platform.h */
}

/* events.c */
void wk_append_locked(elm_worker *w, struct ev_node *n);
void wk_emit_progress(elm_worker *w, const struct req_node *r, enum elm_event_type type, float fraction);
void wk_emit_token(elm_worker *w, const int32_t *ids, int n_ids, const char *text, size_t len);
struct elm_event *wk_final_ev(elm_worker *w);
void wk_finish(elm_worker *w);
void wk_finish_error(elm_worker *w, elm_status st, int n_past, const char *msg);
void wk_set_text(struct elm_event *ev, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* residency.c */
void wk_enforce_budget(elm_worker *w, const struct slot_ctx *keep);
/* A cache's bytes for the budget: its KV of n_ctx positions and logits. */
uint64_t wk_ctx_bytes(const struct elm_model_info *info, int n_ctx);
void wk_model_rec_free(struct model_rec *m);
uint64_t wk_phys_half(void);
void wk_slot_ctx_free(struct slot_ctx *sc);
/* FREE_CTX: m's cache for slot goes (the kind's own part: free_slot). */
void wk_slot_drop(struct model_rec *m, int slot);
/* The draft's cache for slot goes. */
void wk_draft_free_slot(elm_worker *w, int slot);
struct slot_ctx *wk_slot_find(struct model_rec *m, int slot);
elm_status wk_slot_get(elm_worker *w, int slot, struct slot_ctx **out, char *err, size_t err_size);

/* queue.c */
bool wk_cancelled(const elm_worker *w);
/* The ctx abort callback: cancel, shutdown, and prefill progress. */
bool wk_should_abort(void *user);
void wk_queue_locked(elm_worker *w, struct req_node *n);
void wk_req_free(struct req_node *n);

/* loader.c */
void wk_complete_load(elm_worker *w);
void wk_next_load(elm_worker *w);

/* request_generate.c: the local kind's GENERATE (model_kind.h) */
void wk_do_generate(elm_worker *w);

/* request_draft.c */
void wk_do_set_draft(elm_worker *w);
void wk_draft_free(elm_worker *w);
/* The draft's cache for slot (made on first use; n_ctx: at least the
 * target's), NULL when there is no draft or it does not fit the model. */
elm_ctx *wk_draft_ctx(elm_worker *w, int slot, int n_ctx);

/* request_cache.c: FREE_CTX, and the local kind's other requests */
void wk_do_free_ctx(elm_worker *w);
void wk_do_state(elm_worker *w, bool save);
void wk_do_truncate(elm_worker *w);

#endif
