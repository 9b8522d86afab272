/* chat_controller.h: the chat application without its screen.  Open
 * sessions and their token sequences (the truth, src/conversation/conversation.h), the
 * worker requests and events, model loads and switches, replies, saving
 * and KV snapshots, the slash commands.
 *
 * Events in: submitted lines (chat_submit), the worker's events
 * (chat_poll_events, when its wake fd is readable: the caller polls it
 * with its own fds; nothing here blocks), cancel.  State out:
 * chat_get_status and the accessors below.  Notifications out: the
 * callbacks of struct chat_view, called from inside those calls; the TUI
 * (ui/chat_view.c) draws them, a bench times them, a test records them.
 *
 * One thread: the one that calls chat_init. */
#ifndef ELMCHAT_SRC_CHAT_CONTROLLER_H
#define ELMCHAT_SRC_CHAT_CONTROLLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/elm_worker.h"
#include "src/conversation/attachment.h"
#include "src/chat/chat_status.h"
#include "src/config/config_file.h"
#include "src/conversation/conversation.h"
#include "src/base/options.h"
#include "src/chat/slash_commands.h"
#include "src/base/strbuf.h"

struct conv;

struct chat_options {
    struct cli_common common;   /* -m, --temp, ... (model: NULL = config/default) */
    const char *template_name;  /* -t */
    const char *session_name;   /* -s */
    bool continue_last;         /* -c: the most recently saved session */
    const char *system;         /* --system */
    const char *role;           /* --role: a role preset's system prompt (roles.h) */
    bool raw;                   /* --raw: replies as written, no markdown */
    int worker_nice;            /* nice levels the worker runs below the caller */
    bool pull_missing;          /* the start's model may be downloaded first (pull_on_demand.h) */
    const char *tokenizer;      /* --tokenizer: a server model's (NULL: alias's, elmchat's) */
    const char *api_key;        /* --api-key: a server's bearer token (NULL: $ELMCHAT_API_KEY) */
};

/* A transcript line's kind. */
enum chat_role { CHAT_USER, CHAT_ASSISTANT, CHAT_SYSTEM, CHAT_INFO, CHAT_ERROR };

struct chat_message {
    enum chat_role role;
    const char *text;        /* raw UTF-8 (borrowed for the call) */
    int ref;                 /* its index in the session, -1 for other lines */
    int exchange;            /* user messages: the exchange number (/pin N), else 0 */
    int version, n_versions; /* its place among its versions (/branch); n_versions 1: none */
    bool interrupted, out_of_context, pinned;
    const char *model;       /* assistant: the model that wrote it (borrowed); NULL: unknown */
};

/* The notifications.  Any callback may be NULL; user is passed back. */
struct chat_view {
    void *user;
    /* The transcript starts over (session switch, undo, marks changed);
     * message_added follows for each message. */
    void (*cleared)(void *user);
    /* A message or an information line at the end of the transcript. */
    void (*message_added)(void *user, const struct chat_message *m);
    /* The reply: an empty assistant message (ref: its session index), its
     * text as it streams (raw bytes: a chunk may end inside a character),
     * then its end.  final_text non-NULL replaces what streamed (a reply
     * a stop string ended: shown as the session keeps it). */
    void (*reply_started)(void *user, const struct chat_message *m);
    void (*reply_text)(void *user, const char *text, size_t n);
    void (*reply_finished)(void *user, bool interrupted, const char *final_text, int ref);
    /* Something chat_get_status or the accessors show changed. */
    void (*changed)(void *user);
    /* The names chat_names(ARG_SESSION) gives changed; /sessions asks to
     * show or hide them. */
    void (*session_list_changed)(void *user);
    void (*session_list_toggled)(void *user);
    /* The input line gets this text (a refused message, /undo, /edit). */
    void (*input_replaced)(void *user, const char *text);
    /* /copy: text for the system clipboard (what: a short description for
     * the notice); false when the terminal cannot take it. */
    bool (*copy)(void *user, const char *text, size_t len, const char *what);
    /* The message typed ahead (NULL: none any more), to show as queued. */
    void (*queued_changed)(void *user, const char *text);
    /* /find TEXT (NULL: search off): the number of matching lines. */
    size_t (*find)(void *user, const char *query);
    /* /set markdown on|off: the replies' markdown rendered or shown raw. */
    void (*markdown_changed)(void *user, bool on);
    /* /tree: show the conversation's tree (chat_tree) and let the user
     * pick a path (chat_select_message).  Without it /tree prints it. */
    void (*tree_shown)(void *user);
    /* A submitted line worth keeping in the input history. */
    void (*line_remembered)(void *user, const char *line);
    /* A notice (chat_notice), for a front end without a status bar: it
     * prints it as a line (ui/inline_chat.c).  chat_get_status has it too. */
    void (*noticed)(void *user, bool error, const char *text);
    /* /help's paragraph on keys, when they are not the full screen's. */
    const char *help_keys;
};

struct chat {
    struct chat_options opt;
    struct chat_view view;
    struct config cfg;
    struct conv_policy policy;   /* from config.yaml's context: section */
    elm_worker *worker;
    uint64_t mem_budget;         /* ELMCHAT_MEM_BUDGET: models + caches kept (0: default) */

    /* the current model */
    char *model_arg;             /* as the user named it (owned), NULL: default */
    char model_path[4096];
    char model_name[128];
    bool bundled;                /* one of the models elmchat ships (model_find.h) */
    bool model_ready;            /* a model is current in the worker */
    struct elm_model_info *info; /* owned copy from MODEL_READY */
    elm_tokenizer *tok;          /* owned: loaded here, immutable, any thread */
    char *tokenizer_from;        /* owned: elmchat's tokenizer.model it came from (the model
                                    folder has none), NULL: the model's own */
    char *load_tokenizer_from;   /* the same for the model being loaded */
    int n_ctx;

    /* a model being loaded (/model, or the first one) */
    bool model_loading;
    float load_progress;
    uint64_t load_req;
    char *load_arg;              /* owned */
    char load_path[4096];
    char load_name[128];
    elm_tokenizer *load_tok;     /* owned until MODEL_READY */
    double load_started;
    /* MODEL_READY that came while a reply was streaming: the switch waits
     * for its DONE (the old model keeps serving during a load) */
    struct elm_event pending_ready;
    bool has_pending_ready;

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

    /* the reply being generated */
    bool generating;
    uint64_t gen_req;
    struct conv *gen_conv;
    size_t reply_n_ids;
    struct sbuf reply_text;
    float prefill_progress;
    bool got_token;
    double reply_t0;   /* chat_now() when the reply was asked for */
    double ttft_ms;    /* the last reply's time to first token (0: none yet) */
    uint64_t prefill_req;        /* background prefill (model switch, load, switch) */
    struct conv *prefill_conv;
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

/* Load config, template, tokenizer and session; start the worker and the
 * model load.  view (copied; NULL: none) hears from here on.  false with
 * err filled. */
bool chat_init(struct chat *c, const struct chat_options *opt, const struct chat_view *view,
               char *err, size_t err_size);
/* Save every open conversation with messages, stop the worker, free.
 * Waits up to 3 s for the KV snapshots being written. */
void chat_fini(struct chat *c);

/* A submitted line (owned; freed here).  NULL: end of input (quit). */
void chat_submit(struct chat *c, char *line);
/* Drain the worker's events (after chat_wake_fd became readable). */
void chat_poll_events(struct chat *c);
/* Ctrl-C / Esc while generating. */
void chat_cancel(struct chat *c);
/* Esc on an empty input line: a queued message goes back into the input
 * line.  false when none was queued. */
bool chat_unqueue(struct chat *c);
/* The message waiting for the reply to end (borrowed), NULL when none. */
const char *chat_queued(const struct chat *c);
/* SIGTERM/SIGHUP/fatal: keep a partial reply, save everything now. */
void chat_save_all(struct chat *c);

/* The worker's wake fd: readable when chat_poll_events has work. */
int chat_wake_fd(const struct chat *c);
/* A reply is being generated. */
bool chat_generating(const struct chat *c);
/* /quit or end of input was seen. */
bool chat_quit_requested(const struct chat *c);
/* A notice is on the status line (it expires: poll with a timeout). */
bool chat_has_notice(const struct chat *c);
/* The current session's name (NULL: none). */
const char *chat_session_name(const struct chat *c);
/* After the last save (chat_save_all): where the conversation was saved
 * and how to resume it, for the terminal once the screen is gone; owned,
 * NULL when there is no conversation. */
char *chat_exit_note(struct chat *c);
/* Does session name's saved file hold text (case-insensitive)?  (The
 * session list's filter.) */
bool chat_session_mentions(const char *name, const char *text);
/* The label of the model's replies: the model's name. */
const char *chat_model_label(const struct chat *c);
/* The current session's last request: tokens reused from the worker's
 * cache and tokens computed. */
void chat_last_request(const struct chat *c, int *reused, int *computed);

/* The current conversation's tree (session_tree.h): owned rows whose
 * messages are borrowed until the next chat call that changes it. */
struct session_tree_row *chat_tree(struct chat *c, size_t *n);
/* The exchange number of a path message (0: not a user message). */
int chat_tree_exchange(const struct chat *c, const struct session_tree_row *r);
/* Make the path run through message id (a /tree pick): rendered again,
 * the cache prefilled, "reused R, computed C" said when it is.  false
 * (and a notice) when refused (a reply is streaming) or unknown. */
bool chat_select_message(struct chat *c, uint32_t id);

/* What the controller is doing, for callers that wait on it (a bench, a
 * test): chat_wait_events, then look again. */
struct chat_activity {
    bool model_ready;     /* a model is current */
    bool model_loading;   /* a load is under way (the first one, /model) */
    bool generating;      /* a reply is being generated */
    bool prefilling;      /* a background prefill is under way */
    bool saving;          /* KV snapshots are being written */
    size_t reply_ids;     /* ids received for the reply being (or last) generated */
    size_t n_tokens;      /* the current conversation's token sequence */
};
void chat_get_activity(const struct chat *c, struct chat_activity *a);
/* For callers without a poll loop of their own: wait up to timeout_ms for
 * the worker, then chat_poll_events.  Blocks: never from a UI. */
void chat_wait_events(struct chat *c, int timeout_ms);
/* Forget the current conversation's KV cache in the worker: its next
 * request computes the whole sequence (what a reply costs without reuse). */
void chat_drop_cache(struct chat *c);
/* The current model, NULL before the first is ready (borrowed). */
const struct elm_model_info *chat_model_info(const struct chat *c);

/* Status bar fields (borrowed strings, valid until the next chat call). */
void chat_get_status(struct chat *c, struct chat_status *st, double now);
/* One-line transient message in the status bar. */
void chat_notice(struct chat *c, bool error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Names for completion and the session list (owned NULL-ended list;
 * strv_free). */
char **chat_names(struct chat *c, enum cmd_arg_kind kind);
/* Is the model name (an alias, a path, a name, a Hub id) on this machine?
 * (Completion marks the known ones that are not: elmchat pull gets them.) */
bool chat_model_here(struct chat *c, const char *name);

/* Work the main loop owes between events (a /model download's end): call
 * it each time the loop wakes; chat_has_notice keeps it waking. */
void chat_tick(struct chat *c);
/* A /model download is being asked about or under way (Esc stops it). */
bool chat_pull_active(const struct chat *c);

/* Monotonic seconds. */
double chat_now(void);

/* !COMMAND (attach: its output goes with the next message, as /read's
 * file does, cut to the room a turn has) and !!COMMAND (attach false: only
 * shown).  cmd runs in /bin/sh -c, stdin /dev/null, stdout and stderr
 * together, for at most config.yaml's shell_timeout seconds (Ctrl-C stops
 * it), its output capped at CHAT_SHELL_MAX_BYTES.  The first command of a
 * run asks y/n first (the next submitted line answers; shell_confirm:
 * false in config.yaml turns the question off).  Blocks while it runs. */
#define CHAT_SHELL_MAX_BYTES (256u * 1024)
void chat_shell(struct chat *c, const char *cmd, bool attach);
/* Is line a shell command (!CMD or !!CMD)?  Then chat_shell_line runs it:
 * the front ends' one hook for the input line. */
bool chat_shell_line(struct chat *c, const char *line);

#endif
