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
 * One thread: the one that calls chat_new. */
#ifndef ELMCHAT_SRC_CHAT_CONTROLLER_H
#define ELMCHAT_SRC_CHAT_CONTROLLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/elm_worker.h"
#include "src/chat/chat_status.h"
#include "src/base/options.h"
#include "src/chat/slash_commands.h"

/* The controller (opaque: its fields are src/chat/chat_internal.h's). */
struct chat;

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
    const struct pull_ui *pull_ui; /* what that download shows and asks (NULL: nothing, yes) */
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
    /* The key that does what hint names, in the input's mode (vi's Esc is
     * readline's): for the notices that name it.  NULL: "Esc". */
    const char *(*key_name)(void *user, enum chat_hint hint);
    /* A notice (chat_notice), for a front end without a status bar: it
     * prints it as a line (ui/inline_chat.c).  chat_get_status has it too. */
    void (*noticed)(void *user, bool error, const char *text);
    /* /help's paragraph on keys, when they are not the full screen's. */
    const char *help_keys;
};


/* Load config, template, tokenizer and session; start the worker and the
 * model load.  view (copied; NULL: none) hears from here on.  NULL with
 * err filled. */
struct chat *chat_new(const struct chat_options *opt, const struct chat_view *view, char *err,
                      size_t err_size);
/* Save every open conversation with messages, stop the worker, free
 * (NULL: nothing).  Waits up to 3 s for the KV snapshots being written. */
void chat_free(struct chat *c);

/* A submitted line (owned; freed here).  NULL: end of input (quit). */
void chat_submit(struct chat *c, char *line);
/* The commands, typed: the slash commands (chat_submit parses them) and
 * the UI's keys both come here.  Each is a row of the action table
 * (chat_commands.c: cmd_table): refused with a notice where the row says
 * it may not run now (a reply streaming, no model), else run; false when
 * refused.  n is an exchange number (1 = the first), 0: the last one. */
bool chat_run_command(struct chat *c, const struct cmd *cmd); /* a parsed one */
bool chat_pin(struct chat *c, int n);
bool chat_unpin(struct chat *c, int n);
/* Message n into the input line (input_replaced); the next message sent
 * replaces it, what followed stays as a branch. */
bool chat_edit(struct chat *c, int n);
/* Message n sent again as it is (the r key): a new version of its reply. */
bool chat_resend(struct chat *c, int n);
bool chat_remove(struct chat *c, int n);
bool chat_fork(struct chat *c, int n);
/* Version k of message n (reply: of its reply); k 0: say which there are. */
bool chat_branch(struct chat *c, int n, bool reply, int k);
/* User message n to the clipboard (struct chat_view's copy). */
bool chat_copy_message(struct chat *c, int n);
bool chat_switch_session(struct chat *c, const char *name);
/* A saved session other than the open one: its file and snapshot. */
bool chat_delete_session(struct chat *c, const char *name);
bool chat_retry(struct chat *c);
bool chat_undo(struct chat *c);
/* /model NAME: loaded in the background, the current one answers meanwhile. */
bool chat_load_model(struct chat *c, const char *name);
/* Saved (as name, NULL: its own; force: over a saved name). */
bool chat_save_session(struct chat *c, const char *name, bool force);

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
    bool prefilling;      /* a background prefill (or the snapshot load standing for
                             it) is under way */
    unsigned n_prefills;  /* background prefills posted since chat_new (a resume
                             from a KV snapshot posts none) */
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

/* Is line a shell command?  Then it is run, and true: !COMMAND (its output
 * goes with the next message, as /read's file does, cut to the room a turn
 * has) and !!COMMAND (only shown).  It runs in /bin/sh -c, stdin /dev/null,
 * stdout and stderr together, for at most config.yaml's shell_timeout
 * seconds (Ctrl-C stops it), its output capped (chat_shell.c).  The first
 * command of a run asks y/n first (the next submitted line answers;
 * shell_confirm: false in config.yaml turns the question off).  Blocks
 * while it runs.  The front ends' one hook for the input line. */
bool chat_shell_line(struct chat *c, const char *line);

#endif
