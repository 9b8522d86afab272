/* input.h: GNU readline in callback mode, drawn into a curses window
 * (docs/STYLE.md B.10).  Bytes read from the tty go into a FIFO that feeds
 * rl_getc_function; readline never reads the tty itself and never writes
 * to the terminal (rl_outstream is /dev/null): everything it shows is drawn
 * here, with display-column cursor math for wide characters.  Multi-row:
 * the text wraps on columns and the caller grows the window (1..6 rows)
 * from input_rows_wanted().  UI thread only. */
#ifndef ELMCHAT_UI_INPUT_H
#define ELMCHAT_UI_INPUT_H

#include <stdbool.h>
#include <stddef.h>

#include "src/chat/slash_commands.h"


/* Actions of the named functions (rebindable in ~/.inputrc under $if elmchat). */
enum input_action {
    IA_SCROLL_UP = 1,  /* elmchat-scroll-up: PgUp */
    IA_SCROLL_DOWN,    /* elmchat-scroll-down: PgDn */
    IA_SCROLL_TOP,     /* elmchat-scroll-top: Ctrl-Home (Home on an empty line) */
    IA_SCROLL_BOTTOM,  /* elmchat-scroll-bottom: Ctrl-End (End on an empty line) */
    IA_CANCEL,         /* elmchat-cancel: Ctrl-G */
    IA_TOGGLE_SESSIONS,/* elmchat-toggle-sessions: Alt-s, F2 */
    IA_REDRAW,         /* elmchat-redraw: Ctrl-L */
    IA_EDIT_EXTERNAL,  /* elmchat-edit-external: Ctrl-X Ctrl-E ($VISUAL / $EDITOR) */
    IA_FIND_NEXT,      /* elmchat-find: Ctrl-F on an empty line */
    IA_FIND_PREV,      /* elmchat-find-previous: Ctrl-B on an empty line, Shift-Tab */
    IA_SELECT_PREV,    /* elmchat-select-previous: Alt-Up (an earlier message) */
    IA_SELECT_NEXT,    /* elmchat-select-next: Alt-Down */
    IA_COUNT
};

struct input_hooks {
    /* A submitted line (owned: the callee frees it), or NULL for Ctrl-D on
     * an empty line. */
    void (*on_line)(char *line, void *user);
    /* Candidates for an argument of a slash command: owned NULL-terminated
     * array of owned strings, or NULL. */
    char **(*names)(enum cmd_arg_kind kind, void *user);
    /* Completion list to show (borrowed strings). */
    void (*on_matches)(const char *const *matches, int n, void *user);
    void (*on_action)(enum input_action a, void *user);
    void *user;
};

/* Set up readline (history from history_path, may be NULL).  win is the
 * curses WINDOW for the input area. */
void input_init(void *win, const struct input_hooks *hooks, const char *history_path);
/* Remove the handler, save the history. */
void input_fini(void);
void input_set_window(void *win, int screen_rows);

/* Feed bytes read from the tty and let readline process all of them. */
void input_feed(const char *bytes, size_t n);
/* The tty fd readline may read synchronously when the FIFO is empty (in a
 * bracketed paste); -1 for none. */
void input_set_tty_fd(int fd);

/* Rows the prompt + text need at this width (>= 1, not clamped). */
int input_rows_wanted(int width);
/* Draw into the window (wnoutrefresh) and leave the cursor there. */
void input_draw(bool busy);

bool input_line_empty(void);
/* Ctrl-C on an idle line: drop it (and any search in progress). */
void input_clear_line(void);
/* Replace the line (e.g. to give back text that could not be sent). */
void input_set_text(const char *text);
/* The text being typed (owned). */
char *input_text(void);
/* readline's vi mode (set editing-mode vi in ~/.inputrc): "vi insert" or
 * "vi command"; NULL in emacs mode. */
const char *input_vi_mode(void);
/* A lone Esc is readline's own key now (vi mode, a history search);
 * otherwise it is the chat's Esc and must not reach readline, where it
 * would wait as the Alt prefix of the next key. */
bool input_wants_esc(void);
/* Add to the history (not empty, not a repeat of the last entry). */
void input_history_add(const char *line);

#endif
