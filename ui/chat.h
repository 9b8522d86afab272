/* chat.h: the conversation controller of the TUI: open sessions and their
 * token sequences (the truth, DESIGN.md §5), the worker requests and
 * events, the slash commands.  Draws nothing itself: it fills the
 * transcript and the status fields that tui.c draws.  UI thread only. */
#ifndef ELMCHAT_UI_CHAT_H
#define ELMCHAT_UI_CHAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/elm_worker.h"
#include "src/options.h"
#include "src/config_file.h"
#include "src/conversation.h"
#include "src/session.h"
#include "src/template.h"
#include "ui/commands.h"
#include "ui/draw.h"
#include "ui/transcript.h"

struct conv;

struct chat_options {
    struct cli_common common;   /* -m, --temp, ... (model: NULL = config/default) */
    const char *template_name;  /* -t */
    const char *session_name;   /* -s */
    const char *system;         /* --system */
};

struct chat {
    struct chat_options opt;
    struct config cfg;
    struct conv_policy policy;   /* from config.yaml's context: section */
    elm_worker *worker;
    uint64_t mem_budget;         /* ELMCHAT_MEM_BUDGET: models + caches kept (0: default) */

    /* the current model */
    char *model_arg;             /* as the user named it (owned), NULL: default */
    char model_path[4096];
    char model_name[128];
    bool demo;                   /* the bundled random-weight model */
    bool model_ready;            /* a model is current in the worker */
    struct elm_model_info *info; /* owned copy from MODEL_READY */
    elm_tokenizer *tok;          /* owned: loaded here, immutable, any thread */
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
    size_t gen_tr;               /* its transcript message */
    size_t reply_n_ids;
    struct sbuf reply_text;
    float prefill_progress;
    bool got_token;
    uint64_t prefill_req;        /* background prefill (model switch, load, switch) */
    struct conv *prefill_conv;
    double prefill_tps, decode_tps;
    int n_past;
    int n_kv_saves;              /* SAVE_STATE requests not answered yet */

    struct transcript tr;
    bool show_sessions;
    char **session_list;         /* for the list window (owned) */
    size_t n_session_list;

    char notice[512];
    bool notice_error;
    double notice_until;         /* monotonic seconds */
    char state_text[128];
    char warn_text[128];
    bool quit;
    bool changed;                /* something to redraw */
};

/* Load config, template, tokenizer and session; start the worker and the
 * model load.  false with err filled (before curses starts: printed). */
bool chat_init(struct chat *c, const struct chat_options *opt, char *err, size_t err_size);
/* Save every open conversation with messages, stop the worker, free. */
void chat_fini(struct chat *c);

/* A submitted line (owned; freed here). */
void chat_submit(struct chat *c, char *line);
/* Drain the worker's events (after its wake fd fired). */
void chat_poll_events(struct chat *c);
/* Ctrl-C / Esc while generating. */
void chat_cancel(struct chat *c);
/* SIGTERM/SIGHUP/fatal: keep a partial reply, save everything now. */
void chat_save_all(struct chat *c);

/* Status bar fields (borrowed strings, valid until the next chat call). */
void chat_status(struct chat *c, struct status_info *st, double now);
/* One-line transient message in the status bar. */
void chat_notice(struct chat *c, bool error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Names for completion (owned NULL-ended list). */
char **chat_names(struct chat *c, enum cmd_arg_kind kind);
void chat_refresh_session_list(struct chat *c);
const char *chat_session_name(const struct chat *c);

double chat_now(void);

#endif
