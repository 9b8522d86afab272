/* layout.h: where each part of the chat screen goes, as a pure function of
 * the terminal size.  No curses: testable alone.  Any thread. */
#ifndef ELMCHAT_UI_LAYOUT_H
#define ELMCHAT_UI_LAYOUT_H

#include <stdbool.h>

/* A rectangle of cells; h == 0 or w == 0 means "not shown" (never create a
 * curses window for it: newwin(0, 0) would be full screen). */
struct ui_rect {
    int y, x, h, w;
};

#define LAYOUT_INPUT_MAX 6
#define LAYOUT_SESSIONS_W 22  /* preferred width of the session list */
#define LAYOUT_SESSIONS_MIN_COLS 48 /* narrower screens never show it */

struct ui_layout {
    struct ui_rect transcript; /* top left: the conversation */
    struct ui_rect sessions;   /* top right: the session list (may be empty) */
    struct ui_rect status;     /* one row between transcript and input */
    struct ui_rect input;      /* bottom: 1..LAYOUT_INPUT_MAX rows */
};

/* rows x cols terminal; want_input_rows: rows the input text needs (clamped
 * to 1..LAYOUT_INPUT_MAX and to what fits); show_sessions: the list is
 * toggled on.  Rules, most important first: the input always gets a row
 * (when rows >= 1); then the status bar; then the transcript gets at least
 * one row before the input grows past one; the rectangles never overlap,
 * stay inside the screen, and their rows add up to the screen. */
void layout_compute(int rows, int cols, int want_input_rows, bool show_sessions,
                    struct ui_layout *out);
/* The same with the session list sessions_w columns wide if it fits (0:
 * not shown): at least LAYOUT_SESSIONS_W, at most a third of the screen. */
void layout_compute_list(int rows, int cols, int want_input_rows, int sessions_w,
                         struct ui_layout *out);

#endif
