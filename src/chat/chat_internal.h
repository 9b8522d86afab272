/* chat_internal.h: what the chat controller's files share (not for its
 * callers: they use chat_controller.h; each of those files includes both).
 *   chat_life.c        chat_new, chat_save_all, chat_free
 *   chat_events.c      the worker's events: replies, loads, prefills, saves
 *   chat_input.c       submitted lines: commands, messages, the queue, /edit's
 *   chat_state.c       the status bar's fields and the accessors
 *   chat_base.c        what they all share: the worker, the view, notices,
 *                      the sampling in effect
 *   chat_reply.c       starting a reply (its request, the /format grammar)
 *   chat_sessions.c    open conversations (one worker slot each), saving,
 *                      KV snapshots, session switches, name lists
 *   chat_model.c       model names, tokenizers, background loads, switches
 *   chat_commands.c    running the slash commands
 *   chat_branches.c    the conversation's tree: /fork, /branch, /tree, picks
 *   chat_attach.c      /read: a file attached to the next message
 *   chat_pull.c        /model of a model not downloaded: ask, pull, load
 *   chat_shell.c       !COMMAND: run, show, attach its output */
#ifndef ELMCHAT_SRC_CHAT_INTERNAL_H
#define ELMCHAT_SRC_CHAT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/elm_worker.h"
#include "src/base/strbuf.h"
#include "src/chat/chat_controller.h"
#include "src/config/config_file.h"
#include "src/config/sampling_rule.h"
#include "src/conversation/attachment.h"
#include "src/conversation/conversation.h"
#include "src/conversation/session.h"
#include "src/template/template.h"

struct cmd;

struct conv {
    struct session *s;          /* owned */
    struct conversation cv;     /* borrows s, tpl and the chat's tokenizer */
    struct template *tpl;       /* owned */
    int slot;                   /* the worker's cache slot */
    bool dirty;                 /* unsaved: only a changed session is written */
    int lock;                   /* session_lock.h: held while open (< 0: none) */
    char *lock_name;            /* the name the lock was taken for (owned) */
    bool read_only;             /* open in another elmchat: never written under its name */
    long lock_holder;           /* that one's pid (0: unknown) */
    bool kv_try;                /* opened from a file: adopt its snapshot when a model is ready */
    bool kv_loaded;             /* its snapshot's LOAD_STATE (or the prefill after one) is
                                   posted: say what it saved */
    bool warned;                /* the context warning was shown in the transcript */
    int n_reused, n_computed;   /* the last request's cache use */
    int n_dropped_note;         /* messages evicted by the turn being answered */
    int edited_exchange;        /* the reply answers an /edit of this exchange */
    char branch_note[96];       /* a branch switch's prefill is under way: what to say at its end */
    unsigned sampling_by_cli;   /* SAMPLING_* bits the command line gave this session */
    unsigned sampling_by_set;   /* ... and /set, in this run (both are saved with it) */
};

/* A model as the controller holds it: the current one (struct chat's
 * model), or the one being loaded (its load.next), which becomes the
 * current one whole at MODEL_READY. */
struct chat_model {
    char *arg;                   /* as the user named it (owned), NULL: default */
    char path[4096];
    char name[128];              /* what its replies are labelled with */
    bool bundled;                /* one of the models elmchat ships (model_find.h) */
    elm_tokenizer *tok;          /* owned: loaded here, immutable, any thread */
    char *tokenizer_from;        /* owned: elmchat's tokenizer.model it came from (the model
                                    folder has none), NULL: the model's own */
};

/* A model being loaded (/model, or the first one). */
struct chat_load {
    bool active;
    float progress;
    uint64_t req;
    double started;
    /* the model it brings (tok NULL: the first load, of the current model) */
    struct chat_model next;
    /* MODEL_READY that came while a reply was streaming: the switch waits
     * for its DONE (the old model keeps serving during a load) */
    struct elm_event pending_ready;
    bool has_pending_ready;
};

/* The reply being generated. */
struct chat_reply {
    bool active;
    uint64_t req;
    struct conv *conv;
    size_t n_ids;
    struct sbuf text;
    float prefill_progress;
    bool got_token;
    double t0;                   /* chat_now() when the reply was asked for */
};

struct chat {
    struct chat_options opt;
    struct chat_view view;
    struct config cfg;
    struct conv_policy policy;   /* from config.yaml's context: section */
    elm_worker *worker;
    uint64_t mem_budget;         /* ELMCHAT_MEM_BUDGET: models + caches kept (0: default) */

    struct chat_model model;     /* the current model */
    bool model_ready;            /* a model is current in the worker */
    struct elm_model_info *info; /* owned copy from MODEL_READY */
    int n_ctx;
    struct chat_load load;

    /* A message typed while a reply streams or the model loads: sent to
     * queued_conv when that ends (owned; NULL: none queued) */
    char *queued;
    struct conv *queued_conv;
    bool markdown_off; /* /set markdown off, --raw */
    bool lookup_off;   /* /set lookup off, --no-lookup */
    /* the draft model of speculative decoding (--draft, /set draft) */
    char draft_name[128];        /* as named, "" none */
    uint64_t draft_req;          /* its SET_DRAFT, until DONE */
    bool draft_ready;
    struct elm_draft_stats last_draft;
    struct elm_draft_stats last_lookup; /* the last reply's (DONE) */
    struct attachment attach;    /* /read FILE: sent with the next message (name NULL: none) */
    size_t attach_tokens;

    /* /edit N: the next message sent replaces user message edit_msg (a
     * session index) of edit_conv and drops what followed */
    struct conv *edit_conv;
    size_t edit_msg;
    int edit_exchange;

    /* conversations */
    struct conv **convs;
    size_t n_convs;
    struct conv *cur;
    int next_slot;

    struct chat_reply reply;
    double ttft_ms;              /* the last reply's time to first token (0: none yet) */
    uint64_t prefill_req;        /* background prefill (model switch, load, switch) or the
                                    snapshot load that stands for it */
    struct conv *prefill_conv;
    unsigned n_prefills;         /* posted (chat_activity) */
    double prefill_tps, decode_tps;
    int n_past;
    int n_kv_saves;              /* SAVE_STATE requests not answered yet */

    char save_error[1024];       /* the last failed save, whole (/info); "" none */
    char notice[512];
    bool notice_error;
    double notice_until;         /* monotonic seconds */
    char state_text[160];
    struct chat_pull *pull;      /* a /model download under way (chat_pull.c), NULL: none */
    bool http_ready;             /* libcurl started (for the pulls) */
    char warn_text[128];
    bool quit;
    struct chat_shell *shell;    /* !COMMAND's state (chat_shell.c), NULL: none yet */
};

/* chat_base.c: the worker (every request goes through here), the view,
 * sampling, starting a reply */
uint64_t chat_post(struct chat *c, const struct elm_request *req);
void chat_changed(struct chat *c);
void chat_info_msg(struct chat *c, bool error, const char *text); /* an info or error line */
void chat_show_conv(struct chat *c);
/* v's path was cut or replaced (/fork, /undo, /remove, /clear): marked to be
 * saved, shown, and a pending branch-switch note dropped */
void chat_path_replaced(struct chat *c, struct conv *v);
void chat_put_input(struct chat *c, const char *text);
/* The key the view names for hint ("Esc", "Ctrl-C" in vi mode...). */
const char *chat_key_name(const struct chat *c, enum chat_hint hint);
/* v's context is near full: less than a sixth of it left after the reply's
 * reserve (*pct: how full, may be NULL). */
bool chat_near_full(const struct chat *c, const struct conv *v, int *pct);
void chat_session_list_changed(struct chat *c);
size_t chat_exchange_of(const struct session *s, size_t i);
/* A reply is streaming: say so (a notice) and refuse. */
bool chat_busy_refuse(struct chat *c);
/* The user message of exchange arg (N counts the exchanges, i.e. the user
 * messages, from 1; NULL: the last one): its session index, or SIZE_MAX
 * after saying why (verb names the command). */
size_t chat_find_exchange(struct chat *c, const struct session *s, const char *arg,
                          const char *verb);
/* The same for exchange n (0: the last one). */
size_t chat_exchange_index(struct chat *c, const struct session *s, int n, const char *verb);
/* The sampling in effect (src/config/sampling_rule.h): the engine's
 * defaults < the template < the model (generation_config.json, GGUF) <
 * config.yaml < the session's own (the command line, /set). */
#define CHAT_DEFAULT_MAX_TOKENS 256
enum sampling_origin {
    ORIGIN_DEFAULT = SAMPLING_FROM_DEFAULT,
    ORIGIN_TEMPLATE = SAMPLING_FROM_TEMPLATE,
    ORIGIN_MODEL = SAMPLING_FROM_MODEL,
    ORIGIN_CONFIG = SAMPLING_FROM_CONFIG,
    ORIGIN_SESSION = SAMPLING_FROM_OWN, /* saved with the session */
    ORIGIN_COMMAND_LINE, /* given to this run */
    ORIGIN_SET,          /* /set in this run */
};
void chat_effective_sampling(const struct chat *c, struct elm_sampler_params *p, int *max_tokens);
/* The same, and where each field's value comes from (from[bit number of
 * its SAMPLING_* bit]; NULL: not wanted). */
void chat_sampling_sources(const struct chat *c, struct elm_sampler_params *p, int *max_tokens,
                           enum sampling_origin from[SAMPLING_N_FIELDS]);
/* The command line's sampling options (those that differ from the engine's
 * defaults, and --max-tokens) into *out (may be NULL); returns their bits. */
unsigned chat_cli_sampling(const struct chat *c, struct sampling *out);
void chat_apply_cli_sampling(struct chat *c, struct session *s);
int chat_reply_reserve(const struct chat *c);
void chat_start_reply(struct chat *c);
/* a transcript line to the view; a session message as the view shows it */
void chat_add_message(struct chat *c, const struct chat_message *m);
struct chat_message chat_session_message(const struct session *s, size_t i);

/* chat_sessions.c */
struct conv *chat_conv_find(struct chat *c, const char *name);
struct conv *chat_conv_by_slot(struct chat *c, int slot);
void chat_conv_free(struct conv *v);
const char *chat_wanted_template(const struct chat *c, const struct conv *v);
struct conv *chat_conv_open(struct chat *c, struct session *s, char *err, size_t err_size);
struct session *chat_session_load(const char *name, bool create, char *err, size_t err_size);
/* /rename NEW: v's file and snapshot under the new name, the old ones
 * removed.  /delete NAME: a session other than the open one, its file,
 * snapshot and (when open in the background) its conversation and cache.
 * false with err filled. */
bool chat_conv_rename(struct chat *c, struct conv *v, const char *name, char *err,
                      size_t err_size);
bool chat_session_delete(struct chat *c, const char *name, char *err, size_t err_size);
struct conv *chat_open_session(struct chat *c, const char *name, bool create, char *err,
                               size_t err_size);
char *chat_auto_session_name(void);
/* Write v when it changed (v->dirty): its file and KV snapshot.  A
 * read-only one (open in another elmchat) is saved as a copy under a free
 * name instead ("NAME-copy"), and says so. */
bool chat_save_conv(struct chat *c, struct conv *v, bool quiet);
/* v's name becomes name, its lock moved with it (a save as, a rename).
 * false with err filled when name is taken: a saved file (unless
 * overwrite), or open here or in another elmchat. */
bool chat_conv_take_name(struct chat *c, struct conv *v, const char *name, bool overwrite,
                         char *err, size_t err_size);
/* Whether a file for the session called name is saved. */
bool chat_session_exists(const char *name);
/* The most recently saved session's name (owned), NULL when none. */
char *chat_last_session_name(void);
void chat_post_prefill(struct chat *c, struct conv *v);
/* v's cache made ready in the background: its KV snapshot when one waits
 * (opened from a file; the next reply computes the few ids after it in its
 * own pass), else chat_post_prefill. */
void chat_prepare_cache(struct chat *c, struct conv *v);
void chat_switch_to(struct chat *c, struct conv *v);

/* chat_branches.c: /fork [N], /branch N [reply] [K], /tree */
void chat_fork_command(struct chat *c, struct conv *v, int n);
void chat_branch_command(struct chat *c, struct conv *v, int n, bool reply, int k);
void chat_tree_command(struct chat *c);
/* /undo right after /clear or /remove: the path as it was, prefilled */
void chat_undo_restore(struct chat *c, struct conv *v);

/* chat_attach.c: /read FILE [LINES] | off; the message to send with the
 * attached file (owned; NULL: none attached), and forgetting it once sent */
void chat_read_command(struct chat *c, struct conv *v, const char *arg);
/* a (taken over, emptied) becomes the next message's attachment when it
 * fits the room a turn has.  Too large: with path (a file) refused with the
 * /read PATH N that fits; without (a command's output) cut to the first
 * lines that fit, and the notice says so.  false: nothing attached. */
struct attachment;
bool chat_attach_take(struct chat *c, struct conv *v, struct attachment *a, const char *path);
char *chat_attach_to(struct chat *c, const char *text);
void chat_attach_sent(struct chat *c);

/* chat_format.c: /format json | schema FILE | grammar FILE | off (the
 * session's setting); the grammar of v's setting for a reply (NULL: none,
 * or a notice says why); the status bar's words (NULL: off) */
void chat_format_command(struct chat *c, struct conv *v, const char *arg);
elm_grammar *chat_format_grammar(struct chat *c, const struct conv *v);
/* After a reply max-tokens cut: when text is not a whole match of v's
 * format, the notice saying the value is incomplete (true: given). */
bool chat_format_cut_notice(struct chat *c, const struct conv *v, const char *text);
const char *chat_format_label(const struct conv *v);

/* chat_model.c */
/* m's memory freed, m emptied. */
void chat_model_clear(struct chat_model *m);
/* --draft, /set draft NAME|off: SET_DRAFT for the worker (false: the name
 * resolves to nothing, err says why). */
bool chat_set_draft(struct chat *c, const char *name, char *err, size_t err_size);
bool chat_resolve_model(struct chat *c, const char *arg, char *path, size_t size, char *err,
                        size_t err_size);
bool chat_model_init(struct chat *c, const char *arg, char *err, size_t err_size);
void chat_post_load_model(struct chat *c);
/* chat_pull.c: /model NAME of a model not downloaded.  offer: true when it
 * took the name over (a known name or a Hub id); answer: true when line was
 * the y/n to its question; cancel: true when there was a pull to stop. */
bool chat_pull_offer(struct chat *c, const char *name);
bool chat_pull_answer(struct chat *c, const char *line);
bool chat_pull_cancel(struct chat *c);
void chat_pull_tick(struct chat *c);
bool chat_pull_status(struct chat *c, char *buf, size_t size);
void chat_pull_fini(struct chat *c);
bool chat_begin_model_load(struct chat *c, const char *arg, const char *path, char *err,
                           size_t err_size);
void chat_model_ready(struct chat *c, struct elm_event *ev);
void chat_model_failed(struct chat *c, const struct elm_event *ev);

/* chat_commands.c: the r key's resend begins as an /edit of exchange n
 * does (the row's checks, a model ready), without the input line: false
 * (and a notice) when refused. */
bool chat_resend_begin(struct chat *c, int n);

/* chat_events.c: stopping the reply; its end (from DONE, or a cancel
 * chat_save_all makes one); the KV snapshots still being written */
void chat_cancel_reply(struct chat *c);
void chat_finish_reply(struct chat *c, const struct elm_event *ev);
void chat_wait_kv_saves(struct chat *c, double limit);

/* chat_shell.c: the y/n to !COMMAND's question (true: line was it; a
 * line that is neither y nor n declines, and is not taken), and its
 * state freed */
bool chat_shell_answer(struct chat *c, const char *line);
void chat_shell_fini(struct chat *c);


#endif
