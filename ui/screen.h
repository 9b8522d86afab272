/* screen.h: the curses facade (after htop's CRT): terminal setup and
 * teardown, colours by role with a monochrome fallback, stderr capture,
 * suspend and resize.  The only module that starts or ends curses.
 * UI thread only. */
#ifndef ELMCHAT_UI_SCREEN_H
#define ELMCHAT_UI_SCREEN_H

#include <stdbool.h>
#include <stddef.h>

enum screen_attr {
    SA_NORMAL = 0,
    SA_USER,        /* the user's name line */
    SA_ASSISTANT,   /* the model's name line */
    SA_SYSTEM,
    SA_INFO,        /* command output */
    SA_ERROR,
    SA_STATUS,      /* the status bar */
    SA_STATUS_WARN, /* demo model, context nearly full */
    SA_STATUS_BUSY,
    SA_LIST,        /* session list */
    SA_LIST_CURRENT,
    SA_MARK,        /* "interrupted", "out of context" */
    SA_CODE,        /* markdown: code blocks and inline code */
    SA_MD_MARKER,   /* markdown: bullets, numbers, quote bars, "[N] lang" */
    SA_MD_DIM,      /* markdown: a link's URL, frames, rules (plain without colour) */
    SA_COUNT
};

/* Start curses on the terminal (newterm on stdin/stdout), capture fd 2.
 * false with err filled when the terminal cannot be used. */
bool screen_init(char *err, size_t err_size);
/* End curses (once; safe to call again and from the fatal path), restore
 * stderr and replay what was captured.  Async-signal-unsafe: not from a
 * handler. */
void screen_end(void);
/* What a crash (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) says after the
 * terminal is restored, e.g. where the sessions are (copied: set it before,
 * the handler only writes it). */
void screen_set_crash_note(const char *text);
/* The curses attribute for a role (colour or monochrome). */
int screen_attr(enum screen_attr a);
/* Query the tty size and tell curses (after SIGWINCH).  Returns true when
 * the size changed. */
bool screen_resize(void);
/* Ctrl-Z: leave curses, stop the process, come back. */
void screen_suspend(void);
/* The terminal back to the shell's modes (another program runs in it), and
 * curses back afterwards, the screen redrawn. */
void screen_pause(void);
/* Put text on the terminal's clipboard (OSC 52; inside tmux also wrapped for
 * its passthrough).  false when this terminal cannot take it. */
bool screen_clipboard(const char *text, size_t len);
void screen_resume(void);

#endif
