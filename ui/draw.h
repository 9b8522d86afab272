/* draw.h: drawing the transcript, the status bar and the session list
 * into their curses windows (wnoutrefresh only; the caller does one
 * doupdate).  UI thread only. */
#ifndef ELMCHAT_UI_DRAW_H
#define ELMCHAT_UI_DRAW_H

#include <stdbool.h>
#include <stddef.h>

#include "src/chat/chat_status.h"
#include "ui/transcript.h"

/* win: the curses WINDOW (void * keeps curses out of this header). */
void draw_transcript(void *win, struct transcript *t, const char *assistant_label);
void draw_status(void *win, const struct chat_status *s);
struct session_list;
/* The session list; with the keyboard on it (l->focused) the chosen row
 * highlighted and the filter in the title. */
void draw_sessions(void *win, char *const *names, size_t n, const char *current,
                   const struct session_list *l);

struct tree_view;
struct chat;
/* /tree in the transcript's place: a title, one row per message (the path
 * bold and marked, the chosen row reversed), kept in view. */
void draw_tree(void *win, struct tree_view *tv, struct chat *c);

#endif
