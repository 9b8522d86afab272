/* elm_worker.h: the engine thread.  One pthread owns every elm_model and
 * elm_ctx; other threads post requests and read events (after mpv's client
 * API).  Every function here may be called from any thread unless noted;
 * the usual caller is the UI thread, which never calls elm_decode itself.
 *
 * Wake-up: elm_worker_wake_fd() becomes readable when events are queued.
 * Drain it with elm_worker_drain_wake(), then call elm_worker_next_event()
 * until it returns false.
 */
#ifndef ELMCHAT_ENGINE_ELM_WORKER_H
#define ELMCHAT_ENGINE_ELM_WORKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/elm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct elm_worker elm_worker;

enum elm_request_type {
    ELM_REQ_LOAD_MODEL = 1, /* path; becomes the current model when ready */
    ELM_REQ_GENERATE,       /* ctx slot, tokens to append, sampler, limits */
    ELM_REQ_TRUNCATE,       /* ctx slot, n_keep */
    ELM_REQ_SAVE_STATE,     /* ctx slot, path */
    ELM_REQ_LOAD_STATE,     /* ctx slot, path */
    ELM_REQ_FREE_CTX,       /* ctx slot */
    ELM_REQ_SHUTDOWN,
};

#define ELM_MAX_STOP_IDS 8

struct elm_request {
    enum elm_request_type type;
    int slot;                  /* conversation context slot (one per session) */
    char *path;                /* LOAD_MODEL, SAVE/LOAD_STATE; copied by post */
    int32_t *tokens;           /* GENERATE: appended before sampling; copied */
    int n_tokens;
    int n_keep;                /* TRUNCATE; GENERATE: truncate to this first if >= 0 */
    int max_tokens;            /* GENERATE: 0 = prefill only */
    struct elm_sampler_params sampler;
    int32_t stop_ids[ELM_MAX_STOP_IDS];
    int n_stop_ids;
    int n_ctx;                 /* LOAD_MODEL: context length, <= 0 default */
    int n_threads;             /* LOAD_MODEL: <= 0 default */
};

enum elm_event_type {
    ELM_EV_LOAD_PROGRESS = 1,
    ELM_EV_MODEL_READY,
    ELM_EV_PREFILL_PROGRESS,
    ELM_EV_TOKEN,    /* coalesced: text may hold several tokens */
    ELM_EV_DONE,
    ELM_EV_ERROR,
};

enum elm_done_reason {
    ELM_DONE_EOS = 1,
    ELM_DONE_LENGTH,
    ELM_DONE_STOP,
    ELM_DONE_CANCELLED,
    ELM_DONE_ERROR,
    ELM_DONE_CONTEXT_FULL,
};

struct elm_event {
    enum elm_event_type type;
    uint64_t request_id;
    int slot;
    float progress;            /* LOAD_PROGRESS, PREFILL_PROGRESS: 0..1 */
    int32_t *ids;              /* TOKEN: the token ids (owned by the event) */
    int n_ids;
    char *text;                /* TOKEN: UTF-8 text; ERROR: message (owned) */
    enum elm_done_reason reason;
    elm_status status;
    int n_past;                /* DONE */
    double prefill_tps, decode_tps; /* DONE */
    int n_prefilled, n_generated;   /* DONE */
};
void elm_event_fini(struct elm_event *ev); /* frees ids and text */

/* Start the thread.  NULL on failure (err filled). */
elm_worker *elm_worker_new(char *err, size_t err_size);
/* Cancel, post SHUTDOWN, join, free everything.  NULL is a no-op. */
void elm_worker_free(elm_worker *w);

/* Copy req into the queue; returns its id (> 0), or 0 on OOM. */
uint64_t elm_worker_post(elm_worker *w, const struct elm_request *req);
/* Out of band: lands within one layer of the running request. */
void elm_worker_cancel(elm_worker *w);

int elm_worker_wake_fd(const elm_worker *w);
void elm_worker_drain_wake(elm_worker *w);
/* Pops the next event into *ev (caller calls elm_event_fini). */
bool elm_worker_next_event(elm_worker *w, struct elm_event *ev);

#ifdef __cplusplus
}
#endif
#endif
