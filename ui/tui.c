/* tui.c: the interactive chat: options, the curses windows, signals and
 * the poll() main loop (tty + self-pipe + worker wake fd).
 *
 * Resize: we own SIGWINCH through the self-pipe (docs/STYLE.md B.10 5b), so the
 * loop has one uniform wait; bursts are coalesced and resizeterm() is
 * called from the loop.  Input: bytes are read from the tty with read(2)
 * (a paste arrives in large chunks; wgetch would also refresh the window
 * implicitly) and fed to readline through input.c's FIFO. */
#include "config.h"

#include "ui/tui.h"

#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <langinfo.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/base/options.h"
#include "src/store/paths.h"
#include "src/base/xalloc.h"
#include "src/chat/chat_controller.h"
#include "ui/chat_args.h"
#include "ui/chat_view.h"
#include "ui/inline_chat.h"
#include "ui/draw.h"
#include "ui/external_editor.h"
#include "ui/input.h"
#include "ui/layout.h"
#include "ui/message_actions.h"
#include "ui/screen.h"

/* How far the worker and its compute threads sit below the UI thread
 * (nice levels; Linux).  The scheduler groups threads (by session or
 * cgroup): against other groups decoding loses nothing, inside its group
 * the UI runs first.  A busy program in the same group (a job of the
 * same shell; every program where nothing is grouped) gets about three
 * times the CPU of one compute thread. */
#define COMPUTE_NICE 5

static int sig_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    if (write(sig_pipe[1], &b, 1) < 0) {
        /* pipe full: a byte for this signal is already pending */
    }
    errno = saved;
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGTSTP, SIGQUIT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* ------------------------------------------------------------- the screen */

struct tui {
    struct chat chat;
    enum cmd_arg_kind names_kind; /* of the last completion: matches are marked by it */
    struct tui_view view;  /* what the chat reports, drawn here */
    WINDOW *w_transcript, *w_status, *w_input, *w_sessions;
    struct ui_layout layout;
    int input_rows;
    int list_want; /* the columns the session list wanted at the last layout */
    bool full_redraw;
    FILE *latency_log;
    double key_time; /* when the last keystroke was read (latency log) */
};

static struct tui *the_tui; /* for the fatal hook */

static void del_windows(struct tui *t)
{
    WINDOW **ws[] = {&t->w_transcript, &t->w_status, &t->w_input, &t->w_sessions};
    for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) {
        if (*ws[i])
            delwin(*ws[i]);
        *ws[i] = NULL;
    }
}

static WINDOW *make_win(struct ui_rect r)
{
    if (r.h <= 0 || r.w <= 0)
        return NULL;
    WINDOW *w = newwin(r.h, r.w, r.y, r.x);
    if (w)
        leaveok(w, TRUE);
    return w;
}

/* Recompute every rectangle and recreate the windows. */
static void relayout(struct tui *t)
{
    int want = input_rows_wanted(COLS);
    t->input_rows = want;
    int list_w = t->view.show_sessions
                     ? session_list_width(t->view.session_list, t->view.n_session_list)
                     : 0;
    t->list_want = list_w;
    if (t->view.show_sessions && list_w == 0)
        list_w = LAYOUT_SESSIONS_W;
    layout_compute_list(LINES, COLS, want, list_w, &t->layout);
    del_windows(t);
    t->w_transcript = make_win(t->layout.transcript);
    t->w_status = make_win(t->layout.status);
    t->w_sessions = make_win(t->layout.sessions);
    t->w_input = make_win(t->layout.input);
    if (t->w_input) {
        leaveok(t->w_input, FALSE);
        keypad(t->w_input, FALSE);
        nodelay(t->w_input, TRUE);
    }
    input_set_window(t->w_input, LINES);
    transcript_set_width(&t->view.tr, t->layout.transcript.w, t->layout.transcript.h);
    t->view.height = t->layout.transcript.h;
    t->full_redraw = true;
}

static void draw(struct tui *t)
{
    double now = chat_now();
    struct chat_status st;
    chat_get_status(&t->chat, &st, now);
    /* The keys named are the ones that do it in this input mode: in vi
     * mode Esc is vi's, Ctrl-C stops and Ctrl-G takes a message back. */
    const char *vi = input_vi_mode();
    const char *hint = st.hint == CHAT_HINT_STOP      ? vi ? " · Ctrl-C stops" : " · Esc stops"
                       : st.hint == CHAT_HINT_UNQUEUE ? vi ? " (Ctrl-G takes it back)"
                                                           : " (Esc takes it back)"
                                                      : "";
    char state[200];
    snprintf(state, sizeof state, "%s%s%s%s", st.state ? st.state : "idle", hint, vi ? " · " : "",
             vi ? vi : "");
    st.state = state;
    /* The input may have grown or shrunk. */
    int want = input_rows_wanted(COLS);
    int clamped = want > LAYOUT_INPUT_MAX ? LAYOUT_INPUT_MAX : want;
    int cur = t->input_rows > LAYOUT_INPUT_MAX ? LAYOUT_INPUT_MAX : t->input_rows;
    /* ... and the session list may have a longer name */
    if (clamped != cur ||
        (t->view.show_sessions &&
         session_list_width(t->view.session_list, t->view.n_session_list) != t->list_want))
        relayout(t);
    if (t->full_redraw) {
        wnoutrefresh(stdscr);
    }
    if (t->view.changed || t->full_redraw) {
        if (t->view.tree.open)
            draw_tree(t->w_transcript, &t->view.tree, &t->chat);
        else
            draw_transcript(t->w_transcript, &t->view.tr, chat_model_label(&t->chat));
        if (t->w_sessions)
            draw_sessions(t->w_sessions, t->view.session_list, t->view.n_session_list,
                          chat_session_name(&t->chat), &t->view.list);
    }
    draw_status(t->w_status, &st);
    input_draw(st.busy);
    doupdate();
    t->view.changed = false;
    t->full_redraw = false;
    if (t->latency_log && t->key_time > 0) {
        /* ms, then both CLOCK_MONOTONIC instants: tests/lib/keylatency matches
         * them with its own write and read times */
        double done = chat_now();
        fprintf(t->latency_log, "%.3f %.6f %.6f\n", (done - t->key_time) * 1e3, t->key_time, done);
        fflush(t->latency_log);
        t->key_time = 0;
    }
}

static void fatal_hook(void)
{
    if (the_tui) {
        chat_save_all(&the_tui->chat);
    }
    screen_end();
}

/* --------------------------------------------------------------- callbacks */

/* Ctrl-F (dir 1: older) / Ctrl-B (-1: newer) while searching. */
static void find_step(struct tui *t, int dir)
{
    size_t i, n;
    if (transcript_search_step(&t->view.tr, dir, t->layout.transcript.h, &i, &n))
        chat_notice(&t->chat, false, "find '%s': line %zu of %zu · Ctrl-F older · Ctrl-B newer · "
                                     "Esc leaves",
                    t->view.tr.search, i, n);
    else
        chat_notice(&t->chat, true, "find '%s': not in this conversation", t->view.tr.search);
    t->view.changed = true;
}

/* Esc on an empty line while searching: the search ends. */
static bool find_leave(struct tui *t)
{
    if (!t->view.tr.search || !input_line_empty())
        return false;
    transcript_search(&t->view.tr, NULL, t->layout.transcript.h);
    chat_notice(&t->chat, false, "search off");
    t->view.changed = true;
    return true;
}

static void on_line(char *line, void *user)
{
    struct tui *t = user;
    if (line && !*line && t->view.tr.search) { /* Enter: the next match */
        free(line);
        find_step(t, 1);
        return;
    }
    if (chat_shell_line(&t->chat, line)) { /* !COMMAND, !!COMMAND */
        free(line);
        return;
    }
    chat_submit(&t->chat, line);
}

static char **on_names(enum cmd_arg_kind kind, void *user)
{
    struct tui *t = user;
    t->names_kind = kind;
    return chat_names(&t->chat, kind);
}

static void on_matches(const char *const *m, int n, void *user)
{
    struct tui *t = user;
    char buf[400];
    size_t len = 0;
    buf[0] = '\0';
    bool marked = false;
    for (int i = 0; i < n && len + 2 < sizeof buf; i++) {
        /* a model named but not downloaded: elmchat -m NAME or pull gets it */
        bool away = t->names_kind == ARG_MODEL && !chat_model_here(&t->chat, m[i]);
        marked |= away;
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s%s", i ? "  " : "", m[i],
                                away ? "(+)" : "");
    }
    if (marked && len + 2 < sizeof buf)
        snprintf(buf + len, sizeof buf - len, "   (+): not downloaded, elmchat pull NAME");
    chat_notice(&t->chat, false, "%s", buf);
}

static void on_action(enum input_action a, void *user)
{
    struct tui *t = user;
    int h = t->layout.transcript.h;
    int page = h > 2 ? h - 2 : 1;
    switch (a) {
    case IA_SCROLL_UP:
        transcript_scroll(&t->view.tr, page, h);
        break;
    case IA_SCROLL_DOWN:
        transcript_scroll(&t->view.tr, -page, h);
        break;
    case IA_SCROLL_TOP:
        transcript_scroll_home(&t->view.tr, h);
        break;
    case IA_SCROLL_BOTTOM:
        transcript_scroll_end(&t->view.tr);
        break;
    case IA_CANCEL:
        /* Esc: the search ends, a queued message comes back, the reply stops */
        if (find_leave(t) || (input_line_empty() && chat_unqueue(&t->chat)))
            break;
        if (chat_generating(&t->chat))
            chat_cancel(&t->chat);
        else
            input_clear_line();
        break;
    case IA_TOGGLE_SESSIONS:
        tui_view_toggle_sessions(&t->view);
        relayout(t);
        return;
    case IA_REDRAW:
        clearok(curscr, TRUE);
        t->full_redraw = true;
        break;
    case IA_SELECT_PREV:
    case IA_SELECT_NEXT:
        if (transcript_select_step(&t->view.tr, a == IA_SELECT_PREV ? -1 : 1,
                                   t->layout.transcript.h) != SIZE_MAX)
            message_actions_hint(&t->chat, &t->view.tr);
        else
            chat_notice(&t->chat, false, "no message selected");
        t->view.changed = true;
        break;
    case IA_FIND_NEXT:
        if (t->view.tr.search)
            find_step(t, 1);
        else
            input_set_text("/find "); /* the search prompt */
        break;
    case IA_FIND_PREV:
        if (t->view.tr.search)
            find_step(t, -1);
        break;
    case IA_EDIT_EXTERNAL: {
        /* the edited text comes back into the input line, not sent */
        char *text = input_text(), *edited = NULL, err[700];
        if (external_edit(text, &edited, err, sizeof err)) {
            input_set_text(edited);
            free(edited);
        } else {
            chat_notice(&t->chat, true, "%s", err);
        }
        free(text);
        t->full_redraw = true;
        break;
    }
    }
    t->view.changed = true;
}

/* ------------------------------------------------------------- main loop */

static void handle_signals(struct tui *t, bool *resize, bool *leave)
{
    unsigned char buf[64];
    ssize_t n;
    while ((n = read(sig_pipe[0], buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < n; i++) {
            switch (buf[i]) {
            case SIGWINCH:
                *resize = true;
                break;
            case SIGINT:
                if (chat_generating(&t->chat) || chat_pull_active(&t->chat))
                    chat_cancel(&t->chat);
                else if (!input_line_empty())
                    input_clear_line();
                else
                    chat_notice(&t->chat, false, "Ctrl-D or /quit leaves");
                t->view.changed = true;
                break;
            case SIGTSTP:
                screen_suspend();
                *resize = true;
                t->full_redraw = true;
                break;
            case SIGTERM:
            case SIGHUP:
            case SIGQUIT:
                *leave = true;
                break;
            }
        }
    }
}

/* The bytes of the first key in buf: a CSI or SS3 sequence, an Alt-key,
 * a UTF-8 character or one byte. */
static size_t key_length(const char *buf, size_t n)
{
    if (n >= 3 && buf[0] == '\033' && buf[1] == 'O')
        return 3;
    if (n >= 2 && buf[0] == '\033' && buf[1] == '[') {
        size_t i = 2;
        while (i < n && !((unsigned char)buf[i] >= 0x40 && (unsigned char)buf[i] <= 0x7e))
            i++;
        return i < n ? i + 1 : n;
    }
    if (n >= 2 && buf[0] == '\033')
        return 2;
    unsigned char c = (unsigned char)buf[0];
    size_t k = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    return k <= n ? k : n;
}

/* A lone ESC at the end of what was read: nothing follows within 30 ms
 * (the man page's Alt-prefix timeout).  Otherwise ESC is the start of a
 * key (Alt keys, arrows) and belongs to readline. */
static bool trailing_escape(const char *buf, size_t n, int fd)
{
    if (n == 0 || buf[n - 1] != '\033' || (n >= 2 && buf[n - 2] == '\033'))
        return false;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, 30) == 0;
}

/* Streamed tokens redraw at most this often; keystrokes, signals and
 * everything else redraw at once.  A small model makes thousands of
 * tokens a second: a draw for each would take a tenth of a core from the
 * compute threads for nothing anyone can see. */
#define STREAM_FRAME_SEC (1.0 / 60)

static int run(struct tui *t)
{
    int tty = STDIN_FILENO;
    int wake = chat_wake_fd(&t->chat);
    bool leave = false;
    bool urgent = true; /* draw at once, not at the next frame */
    double last_draw = 0;
    input_set_tty_fd(tty);
    relayout(t);
    while (!chat_quit_requested(&t->chat) && !leave) {
        chat_tick(&t->chat);
        double now = chat_now();
        bool deferred = !urgent && now - last_draw < STREAM_FRAME_SEC;
        if (!deferred) {
            draw(t);
            last_draw = now;
            urgent = false;
        }
        /* While a frame is deferred, more tokens need no wake-up (the
         * worker merges them); keys and signals still end the wait. */
        struct pollfd fds[3] = {
            {.fd = tty, .events = POLLIN},
            {.fd = sig_pipe[0], .events = POLLIN},
            {.fd = deferred ? -1 : wake, .events = POLLIN},
        };
        /* Wake up for the notice to expire and the busy display. */
        int timeout = chat_has_notice(&t->chat) ? 250 : -1;
        if (deferred)
            timeout = (int)((last_draw + STREAM_FRAME_SEC - now) * 1e3) + 1;
        int r = poll(fds, 3, timeout);
        if (r < 0 && errno != EINTR) {
            chat_notice(&t->chat, true, "poll: %s", strerror(errno));
            break;
        }
        if (r <= 0) {
            t->view.changed = true;
            urgent = !deferred;
            continue;
        }
        bool resize = false;
        if (fds[1].revents & POLLIN) {
            handle_signals(t, &resize, &leave);
            urgent = true;
        }
        if (leave)
            break;
        if (fds[2].revents & POLLIN)
            chat_poll_events(&t->chat);
        if (fds[0].revents & (POLLHUP | POLLERR) && !(fds[0].revents & POLLIN)) {
            leave = true; /* the terminal went away: same as SIGHUP */
            break;
        }
        if (fds[0].revents & POLLIN) {
            char buf[4096];
            ssize_t n = read(tty, buf, sizeof buf);
            if (n == 0) {
                leave = true;
                break;
            }
            if (n > 0) {
                urgent = true;
                if (t->latency_log)
                    t->key_time = chat_now();
                size_t len = (size_t)n;
                /* The session list has the keyboard (Alt-S, F2): one key at
                 * a time, the rest typed as usual once it lets go. */
                size_t off = 0;
                while (off < len && input_line_empty()) {
                    size_t k = key_length(buf + off, len - off);
                    /* F2 / Alt-S here too, so that the keys after it in the
                     * same read go where it sent the keyboard */
                    if ((k == 3 && memcmp(buf + off, "\033OQ", 3) == 0) ||
                        (k == 2 && memcmp(buf + off, "\033s", 2) == 0)) {
                        tui_view_toggle_sessions(&t->view);
                        relayout(t);
                        off += k;
                        continue;
                    }
                    if (!t->view.show_sessions || !t->view.list.focused)
                        break;
                    if (k == 1 && buf[off] == '\033' && off + 1 == len &&
                        !trailing_escape(buf, len, tty))
                        break; /* an Alt prefix still coming */
                    if (!session_list_key(&t->view.list, &t->chat, t->view.session_list,
                                          t->view.n_session_list, buf + off, k))
                        break;
                    off += k;
                    t->view.changed = true;
                }
                if (off) {
                    memmove(buf, buf + off, len - off);
                    len -= off;
                }
                /* /tree has the keyboard until Enter or Esc. */
                off = 0;
                while (off < len && t->view.tree.open) {
                    size_t k = key_length(buf + off, len - off);
                    if (k == 1 && buf[off] == '\033' && off + 1 == len &&
                        !trailing_escape(buf, len, tty))
                        break; /* an Alt prefix still coming */
                    tree_view_key(&t->view.tree, &t->chat, buf + off, k, t->layout.transcript.h);
                    off += k;
                    t->view.changed = true;
                }
                if (off) {
                    memmove(buf, buf + off, len - off);
                    len -= off;
                }
                /* A message is selected: its action keys, Esc ends it, any
                 * other key ends it and types as usual. */
                off = 0;
                while (off < len && t->view.tr.selected != SIZE_MAX && input_line_empty()) {
                    size_t k = key_length(buf + off, len - off);
                    bool select_key = k == 6 && memcmp(buf + off, "\033[1;3", 5) == 0 &&
                                      (buf[off + 5] == 'A' || buf[off + 5] == 'B');
                    if (select_key)
                        break; /* readline's binding moves the selection */
                    t->view.changed = true;
                    if (message_action(&t->chat, &t->view.tr, buf + off, k)) {
                        off += k;
                        continue;
                    }
                    t->view.tr.selected = SIZE_MAX;
                    if (k == 1 && buf[off] == '\033' && off + 1 == len &&
                        trailing_escape(buf, len, tty)) {
                        chat_notice(&t->chat, false, "selection off");
                        off += k;
                    }
                    break;
                }
                if (off) {
                    memmove(buf, buf + off, len - off);
                    len -= off;
                }
                /* Esc alone (nothing after it within the Alt-prefix
                 * timeout) is the Esc key, busy or idle: given to readline
                 * it would wait as a prefix for the next key (Esc, then
                 * "/retry" sent "retry", Alt-/ having eaten the slash).
                 * Readline keeps it where it is readline's: vi mode (Ctrl-C
                 * stops the reply there), a history search. */
                bool esc = len > 0 && !input_wants_esc() && trailing_escape(buf, len, tty);
                if (esc)
                    len--;
                if (len)
                    input_feed(buf, len);
                if (esc && !find_leave(t) && !(input_line_empty() && chat_unqueue(&t->chat)))
                    chat_cancel(&t->chat);
            }
        }
        if (resize) {
            /* Coalesce a burst: read the size once, after the last signal. */
            screen_resize();
            clearok(curscr, TRUE);
            relayout(t);
        }
    }
    return leave ? 1 : 0;
}

int tui_main(int argc, char **argv)
{
    struct chat_args args;
    int rc = chat_args_parse(argc, argv, &args);
    if (rc)
        return rc;
    if (args.inline_mode)
        return inline_chat_main(&args);
    struct chat_options o = args.chat;

    /* Wide-character drawing needs a UTF-8 locale; main() set LC_CTYPE. */
    /* C.UTF-8 on Linux; macOS and the BSDs call it UTF-8. */
    if (strcmp(nl_langinfo(CODESET), "UTF-8") != 0 && !setlocale(LC_CTYPE, "C.UTF-8") &&
        !setlocale(LC_CTYPE, "UTF-8")) {
        cli_error("the chat needs a UTF-8 locale (LANG=C.UTF-8 works)");
        return EXIT_RUNTIME;
    }
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        cli_error("the chat needs a terminal (for scripts: elmchat run)");
        return EXIT_RUNTIME;
    }

    /* Before curses starts, so that ncurses leaves SIGWINCH and SIGTSTP to
     * us; before the worker starts, which blocks them in its thread. */
    if (pipe(sig_pipe) != 0) {
        cli_error("pipe: %s", strerror(errno));
        return EXIT_RUNTIME;
    }
    for (int i = 0; i < 2; i++) {
        fcntl(sig_pipe[i], F_SETFL, fcntl(sig_pipe[i], F_GETFL) | O_NONBLOCK);
        fcntl(sig_pipe[i], F_SETFD, FD_CLOEXEC);
    }
    install_signals();

    struct tui *t = x_calloc(1, sizeof *t);
    char err[2048];
    struct chat_view ops;
    tui_view_init(&t->view, &t->chat, &ops);
    o.worker_nice = COMPUTE_NICE;
    o.pull_missing = !o.common.no_pull; /* asked and shown before the screen starts */
    if (!chat_init(&t->chat, &o, &ops, err, sizeof err)) {
        cli_error("%s", err);
        chat_fini(&t->chat);
        tui_view_fini(&t->view);
        free(t);
        return EXIT_RUNTIME;
    }
    /* Test hook: one line per keystroke read: ms from the read to the
     * refresh written, then both CLOCK_MONOTONIC instants (tests/lib/keylatency). */
    const char *lat = getenv("ELMCHAT_LATENCY_LOG");
    if (lat && *lat)
        t->latency_log = fopen(lat, "a");

    char *state_dir = paths_dir(PATHS_STATE, NULL);
    paths_mkdir_p(state_dir);
    char *history = x_asprintf("%s/history", state_dir);
    free(state_dir);

    if (!screen_init(err, sizeof err)) {
        cli_error("%s", err);
        chat_fini(&t->chat);
        tui_view_fini(&t->view);
        free(history);
        free(t);
        return EXIT_RUNTIME;
    }
    the_tui = t;
    x_set_fatal_hook(fatal_hook);
    char *sessions = paths_dir(PATHS_DATA, "sessions");
    char *note = x_asprintf("The conversations are saved after every reply, in %s (elmchat -s "
                            "NAME opens one); a reply that was streaming is lost.", sessions);
    screen_set_crash_note(note);
    free(note);
    free(sessions);

    struct input_hooks hooks = {on_line, on_names, on_matches, on_action, t};
    input_init(NULL, &hooks, history);
    free(history);

    int status = run(t);

    /* Shutdown order (docs/STYLE.md B.9): save, stop the worker, readline, curses. */
    chat_save_all(&t->chat);
    char *exit_note = chat_exit_note(&t->chat);
    chat_fini(&t->chat);
    tui_view_fini(&t->view);
    input_fini();
    del_windows(t);
    the_tui = NULL;
    x_set_fatal_hook(NULL);
    screen_end();
    /* where the conversation is and how to come back to it */
    if (exit_note)
        printf("%s\n", exit_note);
    free(exit_note);
    if (t->latency_log)
        fclose(t->latency_log);
    free(t);
    (void)status;
    return EXIT_OK;
}
