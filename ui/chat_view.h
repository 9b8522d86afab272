/* chat_view.h: the TUI's side of the chat controller's notifications
 * (src/chat/chat_controller.h): the transcript they build, the session list
 * window's names, the input line and its history, and whether anything
 * needs drawing.  No drawing here: tui.c draws what this holds.  UI thread
 * only. */
#ifndef ELMCHAT_UI_CHAT_VIEW_H
#define ELMCHAT_UI_CHAT_VIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "src/chat/chat_controller.h"
#include "ui/session_list.h"
#include "ui/transcript.h"
#include "ui/tree_view.h"

struct tui_view {
    struct chat *chat;           /* for the session names (set once chat_new returns) */
    struct transcript tr;
    size_t reply_msg;            /* the streaming reply's transcript message */
    bool show_sessions;          /* the session list window is open */
    char **session_list;         /* its names (owned) */
    size_t n_session_list;
    struct session_list list;    /* its keys (session_list.h) */
    struct tree_view tree;       /* /tree, drawn in the transcript's place */
    char *queued_text;           /* the message typed ahead (owned), NULL */
    size_t queued_msg;           /* its transcript message, SIZE_MAX: none */
    bool changed;                /* the transcript or the list needs drawing */
    int height;                  /* the transcript's rows (scrolling to a match) */
};

/* An empty view and the callbacks to give chat_new (it reports into them
 * while it starts); its chat is set once chat_new returned it. */
void tui_view_init(struct tui_view *v, struct chat_view *ops);
/* The key that does what hint names in the input's mode: in vi mode Esc
 * is vi's, Ctrl-C stops and Ctrl-G takes a message back. */
const char *tui_key_name(enum chat_hint hint);
void tui_view_fini(struct tui_view *v);

/* The session list: open or close it (Alt-S, /sessions). */
void tui_view_toggle_sessions(struct tui_view *v);

#endif
