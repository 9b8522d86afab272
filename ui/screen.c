/* screen.c: curses setup/teardown, colours, stderr capture (see screen.h). */
#include "config.h"

#include "ui/screen.h"

#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <term.h>
#include <termios.h>
#include <unistd.h>

#include "src/base/strbuf.h"

static SCREEN *scr;
static bool visual;       /* between newterm and endwin (ulfalizer's rule) */
static int saved_stderr = -1;
static FILE *captured;    /* where fd 2 goes while curses is up */
static int attrs[SA_COUNT];
static bool paste_on;

/* ------------------------------------------------------- fatal signals */

/* Prepared before anything can crash: what the handler writes is ready,
 * and it makes only async-signal-safe calls (write, tcsetattr, raise). */
static struct termios tty_before; /* the modes curses found */
static bool have_tty_before;
static char leave_seq[128];       /* rmcup, cursor on, bracketed paste off */
static char crash_note[600];      /* screen_set_crash_note */

static void put_safe(int fd, const char *s)
{
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

static void on_fatal(int sig)
{
    put_safe(STDOUT_FILENO, leave_seq);
    if (have_tty_before)
        tcsetattr(STDIN_FILENO, TCSANOW, &tty_before);
    const char *name = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS"
                       : sig == SIGFPE ? "SIGFPE" : sig == SIGILL ? "SIGILL" : "SIGABRT";
    int fd = saved_stderr >= 0 ? saved_stderr : STDERR_FILENO;
    put_safe(fd, "\r\nelmchat: crashed (");
    put_safe(fd, name);
    put_safe(fd, "). ");
    put_safe(fd, crash_note);
    put_safe(fd, "\r\n");
    /* SA_RESETHAND: the default action now, so that the exit status and
     * the core dump are the signal's */
    raise(sig);
}

static void install_fatal(void)
{
    const char *rmcup = tigetstr("rmcup");
    snprintf(leave_seq, sizeof leave_seq, "%s\033[?25h\033[?2004l",
             rmcup && rmcup != (char *)-1 ? rmcup : "\033[?1049l");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal;
    sa.sa_flags = (int)SA_RESETHAND | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
}

void screen_set_crash_note(const char *text)
{
    snprintf(crash_note, sizeof crash_note, "%s", text ? text : "");
}

static void capture_stderr(void)
{
    /* A temp file rather than a pipe: a full pipe would block the writer. */
    captured = tmpfile();
    if (!captured)
        return;
    fflush(stderr);
    saved_stderr = dup(STDERR_FILENO);
    if (saved_stderr < 0 || dup2(fileno(captured), STDERR_FILENO) < 0) {
        if (saved_stderr >= 0)
            close(saved_stderr);
        saved_stderr = -1;
        fclose(captured);
        captured = NULL;
    }
}

static void replay_stderr(void)
{
    if (saved_stderr < 0)
        return;
    fflush(stderr);
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    saved_stderr = -1;
    rewind(captured);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, captured)) > 0)
        if (fwrite(buf, 1, n, stderr) != n)
            break;
    fclose(captured);
    captured = NULL;
}

static void setup_attrs(void)
{
    const char *nc = getenv("NO_COLOR");
    bool color = has_colors() && !(nc && *nc);
    /* Monochrome first; colours replace these when available. */
    attrs[SA_NORMAL] = A_NORMAL;
    attrs[SA_USER] = A_BOLD;
    attrs[SA_ASSISTANT] = A_BOLD;
    attrs[SA_SYSTEM] = A_BOLD;
    attrs[SA_INFO] = A_DIM;
    attrs[SA_ERROR] = A_BOLD;
    attrs[SA_STATUS] = A_REVERSE;
    attrs[SA_STATUS_WARN] = A_REVERSE | A_BOLD;
    attrs[SA_STATUS_BUSY] = A_REVERSE | A_BOLD;
    attrs[SA_LIST] = A_NORMAL;
    attrs[SA_LIST_CURRENT] = A_REVERSE;
    attrs[SA_MARK] = A_DIM;
    /* markdown without colour: bold / underline / reverse only */
    attrs[SA_CODE] = A_BOLD;
    attrs[SA_MD_MARKER] = A_BOLD;
    attrs[SA_MD_DIM] = A_NORMAL;
    if (!color)
        return;
    start_color();
    use_default_colors();
    short bg = -1;
    init_pair(1, COLOR_CYAN, bg);
    init_pair(2, COLOR_GREEN, bg);
    init_pair(3, COLOR_YELLOW, bg);
    init_pair(4, COLOR_RED, bg);
    init_pair(5, COLOR_WHITE, COLOR_BLUE);
    init_pair(6, COLOR_BLACK, COLOR_YELLOW);
    init_pair(7, COLOR_BLACK, COLOR_GREEN);
    init_pair(8, COLOR_MAGENTA, bg);
    attrs[SA_USER] = A_BOLD | COLOR_PAIR(1);
    attrs[SA_ASSISTANT] = A_BOLD | COLOR_PAIR(2);
    attrs[SA_SYSTEM] = A_BOLD | COLOR_PAIR(3);
    attrs[SA_INFO] = COLOR_PAIR(3);
    attrs[SA_ERROR] = A_BOLD | COLOR_PAIR(4);
    attrs[SA_STATUS] = COLOR_PAIR(5);
    attrs[SA_STATUS_WARN] = A_BOLD | COLOR_PAIR(6);
    attrs[SA_STATUS_BUSY] = A_BOLD | COLOR_PAIR(7);
    attrs[SA_LIST_CURRENT] = A_BOLD | COLOR_PAIR(5);
    attrs[SA_MARK] = COLOR_PAIR(8);
    init_pair(9, COLOR_YELLOW, bg);
    attrs[SA_CODE] = COLOR_PAIR(9);
    attrs[SA_MD_MARKER] = COLOR_PAIR(1);
    attrs[SA_MD_DIM] = A_DIM;
}

/* The size comes from the tty (TIOCGWINSZ) from the start, never from
 * terminfo's "lines" (24 in most entries): newterm sets the terminal's
 * scroll region to the size it starts with, and resizeterm() afterwards
 * does not set it again, so a 30-row terminal would keep scrolling rows
 * 1-24 and the input would be drawn over the status bar.  LINES and
 * COLUMNS in the environment are ignored too: the size is ours to track
 * (SIGWINCH via the self-pipe), and they would freeze it. */
static void tty_size_from_ioctl(void)
{
#if defined(NCURSES_VERSION_PATCH) && NCURSES_VERSION_PATCH >= 20120707
    use_env(FALSE);   /* not $LINES / $COLUMNS ... */
    use_tioctl(TRUE); /* ... but the tty's size, over terminfo's */
#else
    /* Other curses: with no LINES / COLUMNS set, use_env's default asks
     * the tty. */
    unsetenv("LINES");
    unsetenv("COLUMNS");
#endif
}

/* Bracketed paste mode on/off (readline's prep function would do it). */
static void screen_bracketed_paste(bool on)
{
    if (!visual || on == paste_on)
        return;
    paste_on = on;
    /* Written straight to the tty, as readline's prep function would. */
    const char *seq = on ? "\033[?2004h" : "\033[?2004l";
    fflush(stdout);
    if (write(STDOUT_FILENO, seq, strlen(seq)) < 0) {
        /* nothing to do: the terminal is gone */
    }
}

bool screen_init(char *err, size_t err_size)
{
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        snprintf(err, err_size, "the chat needs a terminal (try 'elmchat run' for scripts)");
        return false;
    }
    const char *term = getenv("TERM");
    if (!term || !*term || strcmp(term, "dumb") == 0) {
        snprintf(err, err_size, "TERM is %s: the chat needs a full-screen terminal",
                 term && *term ? "dumb" : "not set");
        return false;
    }
    tty_size_from_ioctl();
    have_tty_before = tcgetattr(STDIN_FILENO, &tty_before) == 0;
    scr = newterm(NULL, stdout, stdin);
    if (!scr) {
        snprintf(err, err_size, "cannot start the terminal '%s' (no terminfo entry?)", term);
        return false;
    }
    set_term(scr);
    visual = true;
    capture_stderr();
    install_fatal();
    cbreak();
    noecho();
    nonl();
    intrflush(stdscr, FALSE);
    keypad(stdscr, FALSE);
    set_escdelay(25);
    setup_attrs();
    screen_resize();
    screen_bracketed_paste(true);
    return true;
}

void screen_end(void)
{
    if (!visual)
        return;
    screen_bracketed_paste(false);
    curs_set(1);
    endwin();
    visual = false;
    delscreen(scr);
    scr = NULL;
    replay_stderr();
}

int screen_attr(enum screen_attr a)
{
    return a >= 0 && a < SA_COUNT ? attrs[a] : (int)A_NORMAL;
}

bool screen_resize(void)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) < 0 || ws.ws_row == 0 || ws.ws_col == 0)
        return false;
    if (ws.ws_row == LINES && ws.ws_col == COLS)
        return false;
    resizeterm(ws.ws_row, ws.ws_col);
    return true;
}

void screen_pause(void)
{
    if (!visual)
        return;
    screen_bracketed_paste(false);
    endwin();
}

void screen_resume(void)
{
    if (!visual)
        return;
    reset_prog_mode();
    screen_resize();
    clearok(curscr, TRUE);
    refresh();
    screen_bracketed_paste(true);
}

void screen_suspend(void)
{
    if (!visual)
        return;
    screen_pause();
    /* The default action of SIGTSTP stops us; our handler is back after. */
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTSTP, &sa, &old);
    sigset_t set, oldset;
    sigemptyset(&set);
    sigaddset(&set, SIGTSTP);
    sigprocmask(SIG_UNBLOCK, &set, &oldset);
    kill(0, SIGTSTP);
    sigprocmask(SIG_SETMASK, &oldset, NULL);
    sigaction(SIGTSTP, &old, NULL);
    /* Continued. */
    screen_resume();
}

static void base64(struct sbuf *out, const unsigned char *s, size_t n)
{
    static const char b64_digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)s[i] << 16 | (i + 1 < n ? (unsigned)s[i + 1] << 8 : 0) |
                     (i + 2 < n ? s[i + 2] : 0);
        char q[4] = {b64_digits[v >> 18 & 63], b64_digits[v >> 12 & 63], i + 1 < n ? b64_digits[v >> 6 & 63] : '=',
                     i + 2 < n ? b64_digits[v & 63] : '='};
        sbuf_add(out, q, 4);
    }
}

static bool write_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        s += w;
        n -= (size_t)w;
    }
    return true;
}

bool screen_clipboard(const char *text, size_t len)
{
    const char *term = getenv("TERM");
    /* the Linux console has no clipboard sequence */
    if (!visual || (term && strcmp(term, "linux") == 0))
        return false;
    struct sbuf b64 = {0};
    base64(&b64, (const unsigned char *)text, len);
    struct sbuf seq = {0};
    sbuf_add(&seq, "\033]52;c;", 7);
    sbuf_add(&seq, b64.data, b64.len);
    sbuf_add(&seq, "\a", 1);
    if (getenv("TMUX")) {
        /* tmux takes the plain one with set-clipboard on; the wrapped one
         * reaches the outer terminal with allow-passthrough on */
        sbuf_add(&seq, "\033Ptmux;\033\033]52;c;", 14);
        sbuf_add(&seq, b64.data, b64.len);
        sbuf_add(&seq, "\a\033\\", 3);
    }
    bool ok = write_all(STDOUT_FILENO, seq.data, seq.len);
    sbuf_fini(&seq);
    sbuf_fini(&b64);
    return ok;
}
