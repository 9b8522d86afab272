/* draw.h: drawing the transcript, the status bar and the session list
 * into their curses windows (wnoutrefresh only; the caller does one
 * doupdate).  UI thread only. */
#ifndef ELMCHAT_UI_DRAW_H
#define ELMCHAT_UI_DRAW_H

#include <stdbool.h>
#include <stddef.h>

#include "ui/transcript.h"

struct status_info {
    const char *model;         /* name shown */
    const char *template_name;
    const char *session;
    int n_past, n_ctx;         /* context gauge; n_ctx 0: unknown */
    double prefill_tps, decode_tps;
    const char *state;         /* "idle", "generating", "loading 40%", ... */
    bool busy;
    bool demo;                 /* the bundled random-weight model */
    const char *warning;       /* e.g. the context nearly full: highlighted, or NULL */
    const char *notice;        /* transient one-line message, or NULL */
    bool notice_error;
};

/* win: the curses WINDOW (void * keeps curses out of this header). */
void draw_transcript(void *win, struct transcript *t, const char *assistant_label);
void draw_status(void *win, const struct status_info *s);
void draw_sessions(void *win, char *const *names, size_t n, const char *current);

/* The status text for a width (pure; for tests): fills buf, returns the
 * column where the warning part starts (or -1). */
int status_format(const struct status_info *s, int width, char *buf, size_t size);

#endif
