/* elm_worker.h: the engine thread.  One pthread owns every elm_model and
 * elm_ctx; other threads post requests and read events (after mpv's client
 * API).  Every function here may be called from any thread unless noted;
 * the usual caller is the UI thread, which never calls elm_decode itself.
 * Only one thread may read events (elm_worker_next_event).
 *
 * Wake-up: elm_worker_wake_fd() becomes readable when events are queued.
 * Drain it with elm_worker_drain_wake() first, then call
 * elm_worker_next_event() until it returns false (one wake-up may stand for
 * many events).
 *
 * Replies: requests run one at a time, in the order posted (except
 * LOAD_MODEL, see Models), and every event echoes the id that
 * elm_worker_post returned.  Each request except SHUTDOWN
 * gets exactly one final event:
 *   LOAD_MODEL   LOAD_PROGRESS*, then MODEL_READY or DONE
 *   GENERATE     PREFILL_PROGRESS*, TOKEN*, then DONE
 *   TRUNCATE, SAVE_STATE, LOAD_STATE, FREE_CTX
 *                DONE
 * Failures take one path: DONE with reason ELM_DONE_ERROR, a status and a
 * message.  Final events are never dropped.  TOKEN events of one request merge when
 * the reader is slow (ids and text concatenated); progress events replace
 * an unread one of the same request.  n_past in DONE is the number of
 * tokens in the slot's cache afterwards (its ctx for the current model).
 *
 * Slots: a slot (any int >= 0, one per conversation) has its own elm_ctx
 * per model, created on first use.  The cache of a slot may be dropped at
 * any time under the memory budget (then n_past is 0 on the next GENERATE):
 * use ELM_GEN_SYNC and the worker re-prefills only what is missing.  When
 * a cache of the current model that held tokens is dropped, a
 * CACHE_DROPPED event says so (slot: the dropped one, n_dropped: the tokens
 * it held, request_id/request_type: the request that needed the room); it
 * is not a final event and comes before that request's final event.
 * Caches of other models go silently with their model (a switch
 * re-prefills anyway).  Like progress it is lost only when out of memory.
 *
 * Models: LOAD_MODEL runs on a loader thread of the worker, so the current
 * model keeps serving: requests posted after a LOAD_MODEL run on the
 * current model until the new one is ready; then, between two requests,
 * it becomes current and MODEL_READY is queued (every event before it
 * comes from the old model, every one after from the new).  Loads run one
 * at a time in the order posted.  With no current model (the first load),
 * the other requests wait for the load.  A failed load leaves the current
 * model current.  Cancelling does not stop a load (it stops replies: Esc
 * during a /model switch must not undo the switch).  Shutdown
 * (elm_worker_free) does: the load stops at its next cancel point (before
 * each tensor and step, every few MiB of a copy, through
 * elm_model_params.abort_cb), its memory is freed and the waiting loads are
 * dropped, so quitting during a slow load takes a fraction of a second.
 * The previous models and their caches are kept while the memory budget
 * allows, so loading the same path again is instant (no disk access,
 * caches intact).
 *
 * A remote engine: LOAD_MODEL of "server:URL" (http://host:port) connects
 * to llama.cpp's llama-server instead of loading a file, with the same
 * requests and events.  The load checks that the server tokenizes as the
 * request's tokenizer does (required) and that the vocabularies have the
 * same size, else DONE{ERROR} with ELM_E_MISMATCH.  GENERATE sends the
 * whole sequence (ELM_GEN_SYNC) as token ids to a server slot of its own
 * (one per slot, the least recently used one taken when there are more
 * slots than the server's); the server keeps the common prefix; DONE's
 * counts are the server's (reused, computed, speeds).  Cancel closes the
 * stream.  A server that fails (down, restarted, timeout, 401/503/500,
 * malformed JSON) ends the request with DONE{ERROR} saying which, after the
 * TOKEN events already received; the next request reconnects (with
 * backoff) and checks the vocabulary again.  SAVE_STATE and LOAD_STATE use
 * the server's slot files when it has a --slot-save-path (else SAVE_STATE
 * does nothing and LOAD_STATE fails: the caller re-prefills).  Drafts and
 * prompt lookup do not apply.
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
    ELM_REQ_LOAD_STATE,     /* ctx slot, path; tokens (optional, local models): only
                               the snapshot's common prefix with them is kept */
    ELM_REQ_FREE_CTX,       /* ctx slot: drop its caches for every model */
    ELM_REQ_SET_DRAFT,      /* path (NULL or "": none): the draft model of speculative
                               decoding (elm_generate_params.draft), loaded now; an
                               ERROR when it does not load or its vocabulary is not the
                               current model's */
    ELM_REQ_SHUTDOWN,
};

#define ELM_MAX_STOP_IDS 8

/* GENERATE flags. */
enum {
    /* tokens is the whole sequence the cache must hold (the session's
     * truth): the worker keeps the longest common prefix already cached,
     * truncates the rest and prefills only what differs.  n_keep ignored. */
    ELM_GEN_SYNC = 1u << 0,
    /* no prompt lookup drafts (/set lookup off) */
    ELM_GEN_NO_LOOKUP = 1u << 1,
    /* no draft model for this reply (/set draft off keeps it loaded) */
    ELM_GEN_NO_DRAFT = 1u << 2,
};

/* LOAD_MODEL flags. */
enum {
    /* the model's contexts keep f32 activations for BF16 weights
     * (elm_ctx_params.exact) */
    ELM_LOAD_EXACT = 1u << 0,
};

struct elm_request {
    enum elm_request_type type;
    int slot;        /* conversation context slot (one per session) */
    char *path;      /* LOAD_MODEL, SAVE/LOAD_STATE; copied by post */
    int32_t *tokens; /* GENERATE: appended before sampling; LOAD_STATE: what to
                        keep of the snapshot; copied */
    int n_tokens;
    int32_t *lookup_tokens; /* GENERATE: extra text for prompt lookup drafts, e.g. the
                               reply a retry replaces (elm_generate_params); copied */
    int n_lookup_tokens;
    int n_keep;     /* TRUNCATE; GENERATE: truncate to this first if >= 0 */
    int max_tokens; /* GENERATE: 0 = prefill only (DONE reason OK) */
    struct elm_sampler_params sampler;
    int32_t stop_ids[ELM_MAX_STOP_IDS]; /* GENERATE: besides the model's EOS */
    int n_stop_ids;
    char **stop_strings; /* GENERATE: end the reply where its text reaches one
                            (held back from TOKEN text; copied by post) */
    int n_stop_strings;
    int n_ctx;           /* LOAD_MODEL: context length, <= 0 default */
    elm_tokenizer *tokenizer; /* LOAD_MODEL, optional: the caller's copy of the
                                 model's tokenizer, shared instead of loading
                                 another (post takes a reference) */
    int n_threads;       /* LOAD_MODEL: <= 0 default */
    char *api_key;       /* LOAD_MODEL of a server: its bearer token, NULL: none (copied;
                            the copy is wiped when freed, and never in a message) */
    int timeout_s;       /* LOAD_MODEL of a server: an answer that stalls this long
                            fails (<= 0: 120 s) */
    unsigned flags;      /* GENERATE: ELM_GEN_*; LOAD_MODEL: ELM_LOAD_* */
    elm_grammar *grammar; /* GENERATE: structured output (elm_grammar.h), NULL: none
                             (post takes a reference) */
};

/* A request of that type with the defaults: n_keep -1 (no truncation),
 * max_tokens 256, elm_sampler_default_params(), everything else 0/NULL.
 * Start from this rather than from {0} (n_keep 0 would empty the cache). */
struct elm_request elm_request_default(enum elm_request_type type);

enum elm_event_type {
    ELM_EV_LOAD_PROGRESS = 1,
    ELM_EV_MODEL_READY,
    ELM_EV_PREFILL_PROGRESS,
    ELM_EV_TOKEN, /* coalesced: text may hold several tokens */
    ELM_EV_DONE,          /* final: how the request ended (reason) */
    ELM_EV_CACHE_DROPPED, /* a slot's cache went under the memory budget */
};

enum elm_done_reason {
    ELM_DONE_EOS = 1,      /* the model's EOS was sampled */
    ELM_DONE_LENGTH,       /* max_tokens sampled */
    ELM_DONE_STOP,         /* one of stop_ids was sampled */
    ELM_DONE_CANCELLED,    /* elm_worker_cancel (or shutdown) */
    ELM_DONE_ERROR,        /* status and text say why */
    ELM_DONE_CONTEXT_FULL, /* nothing more fits; the cache holds n_past */
    ELM_DONE_OK,           /* TRUNCATE, SAVE/LOAD_STATE, FREE_CTX, prefill-only GENERATE */
    ELM_DONE_STOP_STRING,  /* the text reached one of stop_strings (not in TOKEN text) */
};

/* GENERATE and the cache: every sampled id is reported in TOKEN events; the
 * last one (EOS, stop id, the max_tokens-th, or one sampled just before a
 * cancel) is not fed to the model, so the cache holds n_past tokens: the
 * prompt, then the first n_past - prompt generated ids.  With ELM_GEN_SYNC
 * simply send the session's whole sequence next time. */
struct elm_event {
    enum elm_event_type type;
    uint64_t request_id;
    enum elm_request_type request_type;
    int slot;
    float progress; /* LOAD_PROGRESS, PREFILL_PROGRESS: 0..1 */
    int32_t *ids;   /* TOKEN: the token ids (owned by the event) */
    int n_ids;
    char *text; /* TOKEN: UTF-8 text; DONE(ERROR): message (owned) */
    enum elm_done_reason reason;
    elm_status status;              /* DONE(ERROR) */
    int n_past;                     /* DONE: tokens in the slot's cache */
    int n_ctx;                      /* DONE, MODEL_READY: cache capacity */
    double prefill_tps, decode_tps; /* DONE */
    int n_prefilled, n_generated;   /* DONE: tokens computed, ids sampled */
    struct elm_draft_stats lookup, draft; /* DONE: what drafts did (elm_generate_result) */
    int n_reused;                   /* DONE: tokens found already cached */
    struct elm_model_info *info;    /* MODEL_READY: a copy (owned) */
    int n_dropped;                  /* CACHE_DROPPED: tokens the cache held
                                       (the next GENERATE recomputes them) */
};
void elm_event_fini(struct elm_event *ev); /* frees ids, text, info */

struct elm_worker_params {
    uint64_t mem_budget; /* bytes for the models and caches kept (0: half
                            the physical memory) */
    /* Background priority (additive, Linux; ignored elsewhere): the worker
     * thread, its loader and its compute threads run `nice` (0..19) levels
     * below the thread that creates the worker, which keeps its own, so an
     * interactive caller wins the CPU as soon as it wakes. */
    int nice;
};
struct elm_worker_params elm_worker_default_params(void);

/* Start the thread (with SIGINT, SIGTERM, SIGWINCH, SIGHUP, SIGQUIT,
 * SIGTSTP, SIGCONT blocked in it and in the compute threads it starts, so
 * they reach the UI thread).  params NULL: the defaults.  NULL on failure
 * (err filled). */
elm_worker *elm_worker_new(const struct elm_worker_params *params, char *err, size_t err_size);
/* Cancel, post SHUTDOWN, join, free everything.  NULL is a no-op.
 * Returns within one layer of compute, or one tensor of a model load in
 * progress (which is abandoned: its DONE{ERROR} is never delivered). */
void elm_worker_free(elm_worker *w);

/* Copy req into the queue; returns its id (> 0, increasing), or 0 on OOM or
 * after SHUTDOWN. */
uint64_t elm_worker_post(elm_worker *w, const struct elm_request *req);
/* Out of band: the GENERATE request_id ends with DONE{CANCELLED}: within
 * one layer when it runs (a prefill keeps the chunks already computed,
 * n_past says how far), without computing when it waits.  A request that
 * has ended, or is no GENERATE, is left alone.  ELM_CANCEL_ALL: every
 * GENERATE posted before this call. */
#define ELM_CANCEL_ALL 0
void elm_worker_cancel(elm_worker *w, uint64_t request_id);

int elm_worker_wake_fd(const elm_worker *w);
void elm_worker_drain_wake(elm_worker *w);
/* Pops the next event into *ev (caller calls elm_event_fini). */
bool elm_worker_next_event(elm_worker *w, struct elm_event *ev);

#ifdef __cplusplus
}
#endif
#endif
