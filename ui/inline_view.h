/* inline_view.h: the controller's notifications as plain lines of text,
 * for the inline front end (ui/inline_chat.c): replies streamed below the
 * prompt, never redrawn (markdown as text with light markers, one block at
 * a time, or as written), one status line after each reply, notices and
 * information lines as lines.  No curses, no cursor addressing: only text,
 * newlines and (when colour is on) SGR attributes.  UI thread only. */
#ifndef ELMCHAT_UI_INLINE_VIEW_H
#define ELMCHAT_UI_INLINE_VIEW_H

#include <stdbool.h>
#include <stdio.h>

#include "src/base/strbuf.h"
#include "src/chat/chat_controller.h"
#include "ui/markdown.h"

struct inline_view {
    struct chat *chat;
    FILE *out;           /* replies */
    FILE *info;          /* status lines, notices, information lines */
    bool screen_reader;  /* speaker and end-of-turn lines, whole lines only */
    bool color;          /* SGR attributes */
    bool markdown;       /* replies rendered (off: as written) */
    int width;           /* columns markdown is laid out for */

    /* the reply streaming */
    bool in_reply;
    struct sbuf pending; /* raw bytes not yet sanitized (a character cut by a chunk) */
    struct sbuf text;    /* the reply so far, sanitized */
    size_t shown;        /* as written: bytes of text printed */
    size_t md_done;      /* markdown: bytes of text printed as whole blocks */
    size_t md_lines;     /* ... and the display lines they gave */
    struct md_out md;
    bool status_owed;    /* a reply ended: its status line comes at the next flush */
    bool interrupted;
    bool out_midline;    /* the last byte written to out was not a newline */

    /* the transcript sent again (a session opened, /undo, /clear) */
    bool replaying;
    size_t n_exchanges;
    char *last_user, *last_reply; /* owned copies, for the summary */
};

/* ops gets the callbacks (user: v); the caller may set more (input). */
void inline_view_init(struct inline_view *v, struct chat *chat, struct chat_view *ops);
void inline_view_fini(struct inline_view *v);
/* After each call into the controller: a replay's summary, the status
 * line of a reply that ended. */
void inline_view_flush(struct inline_view *v);
/* A line of our own on the info stream (a newline first when a reply's
 * line is open on the same terminal). */
void inline_view_say(struct inline_view *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
