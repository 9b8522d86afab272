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
#include "ui/keys.h"
#include "ui/layout.h"
#include "ui/message_actions.h"
#include "ui/pull_progress.h"
#include "ui/screen.h"
#include "ui/signal_pipe.h"
#include "ui/test_hooks.h"

/* How far the worker and its compute threads sit below the UI thread
 * (nice levels; Linux).  The scheduler groups threads (by session or
 * cgroup): against other groups decoding loses nothing, inside its group
 * the UI runs first.  A busy program in the same group (a job of the
 * same shell; every program where nothing is grouped) gets about three
 * times the CPU of one compute thread. */
#define COMPUTE_NICE 5


/* ------------------------------------------------------------- the screen */

struct tui {
    struct chat *chat;
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
    chat_get_status(t->chat, &st, now);
    /* The keys named are the ones that do it in this input mode (tui_key_name). */
    const char *vi = input_vi_mode();
    char hint[64] = "";
    if (st.hint == CHAT_HINT_STOP)
        snprintf(hint, sizeof hint, " · %s stops", tui_key_name(st.hint));
    else if (st.hint == CHAT_HINT_UNQUEUE)
        snprintf(hint, sizeof hint, " (%s takes it back)", tui_key_name(st.hint));
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
            draw_tree(t->w_transcript, &t->view.tree, t->chat);
        else
            draw_transcript(t->w_transcript, &t->view.tr, chat_model_label(t->chat));
        if (t->w_sessions)
            draw_sessions(t->w_sessions, t->view.session_list, t->view.n_session_list,
                          chat_session_name(t->chat), &t->view.list);
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
        chat_save_all(the_tui->chat);
    }
    screen_end();
}

/* --------------------------------------------------------------- callbacks */

/* The one place reactions are acted on, at once (a relayout before the
 * next key of the same read).  Resize and quit are the loop's: a burst of
 * signals is one resize. */
static unsigned react(struct tui *t, unsigned r)
{
    if (r & REACT_RELAYOUT)
        relayout(t);
    if (r & REACT_CLEAR)
        clearok(curscr, TRUE);
    if (r & REACT_REDRAW_ALL)
        t->full_redraw = true;
    if (r & REACT_REDRAW)
        t->view.changed = true;
    return r & (REACT_RESIZE | REACT_QUIT);
}

/* Ctrl-F (dir 1: older) / Ctrl-B (-1: newer) while searching. */
static unsigned find_step(struct tui *t, int dir)
{
    size_t i, n;
    if (transcript_search_step(&t->view.tr, dir, t->layout.transcript.h, &i, &n))
        chat_notice(t->chat, false, "find '%s': line %zu of %zu · Ctrl-F older · Ctrl-B newer · "
                                     "Esc leaves",
                    t->view.tr.search, i, n);
    else
        chat_notice(t->chat, true, "find '%s': not in this conversation", t->view.tr.search);
    return REACT_REDRAW;
}

/* Esc on an empty line while searching: the search ends. */
static bool find_leave(struct tui *t)
{
    if (!t->view.tr.search || !input_line_empty())
        return false;
    transcript_search(&t->view.tr, NULL, t->layout.transcript.h);
    chat_notice(t->chat, false, "search off");
    return true;
}

static void on_line(char *line, void *user)
{
    struct tui *t = user;
    if (line && !*line && t->view.tr.search) { /* Enter: the next match */
        free(line);
        react(t, find_step(t, 1));
        return;
    }
    if (chat_shell_line(t->chat, line)) { /* !COMMAND, !!COMMAND */
        free(line);
        return;
    }
    chat_submit(t->chat, line);
}

static char **on_names(enum cmd_arg_kind kind, void *user)
{
    struct tui *t = user;
    t->names_kind = kind;
    return chat_names(t->chat, kind);
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
        bool away = t->names_kind == ARG_MODEL && !chat_model_here(t->chat, m[i]);
        marked |= away;
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s%s", i ? "  " : "", m[i],
                                away ? "(+)" : "");
    }
    if (marked && len + 2 < sizeof buf)
        snprintf(buf + len, sizeof buf - len, "   (+): not downloaded, elmchat pull NAME");
    chat_notice(t->chat, false, "%s", buf);
}

/* ------------------------------------------- readline's actions (input.h) */

static int page_rows(const struct tui *t)
{
    int h = t->layout.transcript.h;
    return h > 2 ? h - 2 : 1;
}

static unsigned act_scroll_up(struct tui *t)
{
    transcript_scroll(&t->view.tr, page_rows(t), t->layout.transcript.h);
    return REACT_REDRAW;
}

static unsigned act_scroll_down(struct tui *t)
{
    transcript_scroll(&t->view.tr, -page_rows(t), t->layout.transcript.h);
    return REACT_REDRAW;
}

static unsigned act_scroll_top(struct tui *t)
{
    transcript_scroll_home(&t->view.tr, t->layout.transcript.h);
    return REACT_REDRAW;
}

static unsigned act_scroll_bottom(struct tui *t)
{
    transcript_scroll_end(&t->view.tr);
    return REACT_REDRAW;
}

/* Ctrl-G: the search ends, a queued message comes back, the reply stops,
 * else the line goes. */
static unsigned act_cancel(struct tui *t)
{
    if (find_leave(t) || (input_line_empty() && chat_unqueue(t->chat)))
        return REACT_REDRAW;
    if (chat_generating(t->chat))
        chat_cancel(t->chat);
    else
        input_clear_line();
    return REACT_REDRAW;
}

static unsigned act_toggle_sessions(struct tui *t)
{
    tui_view_toggle_sessions(&t->view);
    return REACT_RELAYOUT;
}

static unsigned act_redraw(struct tui *t)
{
    (void)t;
    return REACT_CLEAR | REACT_REDRAW_ALL | REACT_REDRAW;
}

static unsigned select_step(struct tui *t, int dir)
{
    if (transcript_select_step(&t->view.tr, dir, t->layout.transcript.h) != SIZE_MAX)
        message_actions_hint(t->chat, &t->view.tr);
    else
        chat_notice(t->chat, false, "no message selected");
    return REACT_REDRAW;
}

static unsigned act_select_prev(struct tui *t)
{
    return select_step(t, -1);
}

static unsigned act_select_next(struct tui *t)
{
    return select_step(t, 1);
}

static unsigned act_find_next(struct tui *t)
{
    if (t->view.tr.search)
        return find_step(t, 1);
    input_set_text("/find "); /* the search prompt */
    return REACT_REDRAW;
}

static unsigned act_find_prev(struct tui *t)
{
    return t->view.tr.search ? find_step(t, -1) : REACT_REDRAW;
}

/* The edited text comes back into the input line, not sent. */
static unsigned act_edit_external(struct tui *t)
{
    char *text = input_text(), *edited = NULL, err[700];
    if (external_edit(text, &edited, err, sizeof err)) {
        input_set_text(edited);
        free(edited);
    } else {
        chat_notice(t->chat, true, "%s", err);
    }
    free(text);
    return REACT_REDRAW_ALL | REACT_REDRAW;
}

/* Indexed by enum input_action; readline's keymap says which key sends
 * which (input.c, rebindable in ~/.inputrc). */
action_fn *const tui_actions[IA_COUNT] = {
    [IA_SCROLL_UP] = act_scroll_up,
    [IA_SCROLL_DOWN] = act_scroll_down,
    [IA_SCROLL_TOP] = act_scroll_top,
    [IA_SCROLL_BOTTOM] = act_scroll_bottom,
    [IA_CANCEL] = act_cancel,
    [IA_TOGGLE_SESSIONS] = act_toggle_sessions,
    [IA_REDRAW] = act_redraw,
    [IA_EDIT_EXTERNAL] = act_edit_external,
    [IA_FIND_NEXT] = act_find_next,
    [IA_FIND_PREV] = act_find_prev,
    [IA_SELECT_PREV] = act_select_prev,
    [IA_SELECT_NEXT] = act_select_next,
};

static void on_action(enum input_action a, void *user)
{
    if (a > 0 && a < IA_COUNT && tui_actions[a])
        react(user, tui_actions[a](user));
}

/* ------------------------------------------- keys before readline (keys.h) */

static unsigned key_toggle_sessions(struct tui *t, const struct key *k)
{
    (void)k;
    return act_toggle_sessions(t);
}

static bool list_has_keyboard(struct tui *t)
{
    return t->view.show_sessions && t->view.list.focused;
}

static unsigned key_session_list(struct tui *t, const struct key *k)
{
    return session_list_key(&t->view.list, t->chat, t->view.session_list,
                            t->view.n_session_list, k->bytes, k->len)
               ? REACT_REDRAW
               : REACT_PASS;
}

static unsigned key_tree(struct tui *t, const struct key *k)
{
    tree_view_key(&t->view.tree, t->chat, k->bytes, k->len, t->layout.transcript.h);
    return REACT_REDRAW;
}

/* Alt-Up/Alt-Down: readline's binding moves the selection. */
static unsigned key_to_readline(struct tui *t, const struct key *k)
{
    (void)t, (void)k;
    return REACT_PASS;
}

/* The selected message's action keys; Esc ends the selection, any other
 * key ends it and types as usual. */
static unsigned key_message(struct tui *t, const struct key *k)
{
    if (message_action(t->chat, &t->view.tr, k->bytes, k->len))
        return REACT_REDRAW;
    t->view.tr.selected = SIZE_MAX;
    if (key_escape(k) == KEY_ESC_ALONE) {
        chat_notice(t->chat, false, "selection off");
        return REACT_REDRAW;
    }
    return REACT_REDRAW | REACT_PASS;
}

/* Esc alone (nothing after it within the Alt-prefix timeout) is the Esc
 * key, busy or idle: given to readline it would wait as a prefix for the
 * next key (Esc, then "/retry" sent "retry", Alt-/ having eaten the
 * slash).  The search ends, a queued message comes back, the reply stops. */
static unsigned key_esc(struct tui *t)
{
    if (find_leave(t))
        return REACT_REDRAW;
    if (!(input_line_empty() && chat_unqueue(t->chat)))
        chat_cancel(t->chat);
    return 0;
}

/* The session list has the keyboard (Alt-S, F2): one key at a time, the
 * rest typed as usual once it lets go.  F2 / Alt-S here too, so that the
 * keys after it in the same read go where it sent the keyboard. */
const struct key_binding tui_key_bindings[] = {
    {KEY_MODE_SESSION_LIST, "\033OQ", NULL, false, key_toggle_sessions}, /* F2 */
    {KEY_MODE_SESSION_LIST, "\033s", NULL, false, key_toggle_sessions},  /* Alt-S */
    {KEY_MODE_SESSION_LIST, NULL, list_has_keyboard, true, key_session_list},
    /* /tree has the keyboard until Enter or Esc. */
    {KEY_MODE_TREE, NULL, NULL, true, key_tree},
    {KEY_MODE_SELECTION, "\033[1;3A", NULL, false, key_to_readline}, /* Alt-Up */
    {KEY_MODE_SELECTION, "\033[1;3B", NULL, false, key_to_readline}, /* Alt-Down */
    {KEY_MODE_SELECTION, NULL, NULL, false, key_message},
};
const size_t tui_n_key_bindings = sizeof tui_key_bindings / sizeof tui_key_bindings[0];

static bool mode_active(struct tui *t, enum key_mode m)
{
    switch (m) {
    case KEY_MODE_SESSION_LIST:
        return input_line_empty();
    case KEY_MODE_TREE:
        return t->view.tree.open;
    case KEY_MODE_SELECTION:
        return t->view.tr.selected != SIZE_MAX && input_line_empty();
    case KEY_MODES:
        break;
    }
    return false;
}

/* One read from the tty: each mode in turn takes keys while it is active;
 * the first key none takes and all after it go to readline, but for an
 * Esc alone at the end, which is the chat's (unless readline keeps Esc:
 * vi mode, a history search). */
static unsigned take_keys(struct tui *t, const char *buf, size_t len, int tty)
{
    struct key_read rd = {.buf = buf, .len = len, .fd = tty};
    unsigned out = 0;
    size_t off = 0;
    for (enum key_mode m = 0; m < KEY_MODES; m++) {
        rd.from = off;
        while (off < len && mode_active(t, m)) {
            struct key k = key_at(&rd, off);
            const struct key_binding *b =
                key_binding_find(tui_key_bindings, tui_n_key_bindings, m, &k, t);
            if (!b || (b->waits_for_alt && key_escape(&k) == KEY_ESC_PREFIX))
                break;
            unsigned r = b->fn(t, &k);
            out |= react(t, r);
            if (r & REACT_PASS)
                break;
            off += k.len;
        }
    }
    rd.from = off;
    bool esc = off < len && !input_wants_esc() && key_read_tail(&rd) == KEY_ESC_ALONE;
    size_t rest = len - off - (esc ? 1 : 0);
    if (rest)
        input_feed(buf + off, rest);
    if (esc)
        out |= react(t, key_esc(t));
    return out;
}

/* ---------------------------------------------------------------- options */

/* -------------------------------------------------------- signals, loop */

static unsigned sig_interrupt(struct tui *t)
{
    if (chat_generating(t->chat) || chat_pull_active(t->chat))
        chat_cancel(t->chat);
    else if (!input_line_empty())
        input_clear_line();
    else
        chat_notice(t->chat, false, "Ctrl-D or /quit leaves");
    return REACT_REDRAW;
}

static unsigned sig_resize(struct tui *t)
{
    (void)t;
    return REACT_RESIZE;
}

static unsigned sig_suspend(struct tui *t)
{
    (void)t;
    screen_suspend();
    return REACT_RESIZE | REACT_REDRAW_ALL;
}

static unsigned sig_leave(struct tui *t)
{
    (void)t;
    return REACT_QUIT;
}

/* The signals the chat takes (through the self-pipe) and what each does. */
static const struct {
    int sig;
    action_fn *fn;
} signal_bindings[] = {
    {SIGINT, sig_interrupt}, {SIGTERM, sig_leave},   {SIGHUP, sig_leave},
    {SIGWINCH, sig_resize},  {SIGTSTP, sig_suspend}, {SIGQUIT, sig_leave},
};

static unsigned take_signals(struct tui *t)
{
    unsigned char buf[64];
    ssize_t n;
    unsigned out = 0;
    while ((n = signal_pipe_take(buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n; i++)
            for (size_t j = 0; j < sizeof signal_bindings / sizeof signal_bindings[0]; j++)
                if (signal_bindings[j].sig == buf[i])
                    out |= react(t, signal_bindings[j].fn(t));
    return out;
}

/* ------------------------------------------------------------- main loop */

/* Streamed tokens redraw at most this often; keystrokes, signals and
 * everything else redraw at once.  A small model makes thousands of
 * tokens a second: a draw for each would take a tenth of a core from the
 * compute threads for nothing anyone can see. */
#define STREAM_FRAME_SEC (1.0 / 60)

/* Waits for the tty, the signals and the worker; the handlers say what to
 * do (reaction bits) and the loop does it. */
static int run(struct tui *t)
{
    int tty = STDIN_FILENO;
    int wake = chat_wake_fd(t->chat);
    unsigned r = 0;
    bool urgent = true; /* draw at once, not at the next frame */
    double last_draw = 0;
    input_set_tty_fd(tty);
    relayout(t);
    while (!chat_quit_requested(t->chat) && !(r & REACT_QUIT)) {
        chat_tick(t->chat);
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
            {.fd = signal_pipe_fd(), .events = POLLIN},
            {.fd = deferred ? -1 : wake, .events = POLLIN},
        };
        /* Wake up for the notice to expire and the busy display. */
        int timeout = chat_has_notice(t->chat) ? 250 : -1;
        if (deferred)
            timeout = (int)((last_draw + STREAM_FRAME_SEC - now) * 1e3) + 1;
        int n = poll(fds, 3, timeout);
        if (n < 0 && errno != EINTR) {
            chat_notice(t->chat, true, "poll: %s", strerror(errno));
            break;
        }
        if (n <= 0) {
            t->view.changed = true;
            urgent = !deferred;
            continue;
        }
        r = 0;
        if (fds[1].revents & POLLIN) {
            r |= take_signals(t);
            urgent = true;
        }
        if (r & REACT_QUIT)
            break;
        if (fds[2].revents & POLLIN)
            chat_poll_events(t->chat);
        if (fds[0].revents & (POLLHUP | POLLERR) && !(fds[0].revents & POLLIN)) {
            r |= REACT_QUIT; /* the terminal went away: same as SIGHUP */
            break;
        }
        if (fds[0].revents & POLLIN) {
            char buf[4096];
            ssize_t got = read(tty, buf, sizeof buf);
            if (got == 0) {
                r |= REACT_QUIT;
                break;
            }
            if (got > 0) {
                urgent = true;
                if (t->latency_log)
                    t->key_time = chat_now();
                r |= take_keys(t, buf, (size_t)got, tty);
            }
        }
        if (r & REACT_RESIZE) {
            /* Coalesce a burst: read the size once, after the last signal. */
            screen_resize();
            clearok(curscr, TRUE);
            relayout(t);
        }
    }
    return r & REACT_QUIT ? 1 : 0;
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
    int sigs[sizeof signal_bindings / sizeof signal_bindings[0]];
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigs[i] = signal_bindings[i].sig;
    if (!signal_pipe_open(sigs, sizeof sigs / sizeof sigs[0])) {
        cli_error("pipe: %s", strerror(errno));
        return EXIT_RUNTIME;
    }

    struct tui *t = x_calloc(1, sizeof *t);
    char err[2048];
    struct chat_view ops;
    tui_view_init(&t->view, &ops);
    o.worker_nice = COMPUTE_NICE;
    o.pull_missing = !o.common.no_pull; /* asked and shown before the screen starts */
    o.pull_ui = pull_progress_terminal();
    t->chat = chat_new(&o, &ops, err, sizeof err);
    if (!t->chat) {
        cli_error("%s", err);
        tui_view_fini(&t->view);
        free(t);
        return EXIT_RUNTIME;
    }
    t->view.chat = t->chat;
    /* elmchat-testing's latency log (ui/test_hooks.h); the shipped one has none */
    struct ui_test_hooks hooks_in_force;
    if (ui_test_hooks(&hooks_in_force) && hooks_in_force.latency_log)
        t->latency_log = fopen(hooks_in_force.latency_log, "a");

    char *state_dir = paths_dir(PATHS_STATE, NULL);
    paths_mkdir_p(state_dir);
    char *history = x_asprintf("%s/history", state_dir);
    free(state_dir);

    if (!screen_init(err, sizeof err)) {
        cli_error("%s", err);
        chat_free(t->chat);
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
    chat_save_all(t->chat);
    char *exit_note = chat_exit_note(t->chat);
    chat_free(t->chat);
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
