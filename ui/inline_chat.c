/* inline_chat.c: the inline front end (inline_chat.h).
 *
 * On a terminal: readline's callback interface shows the prompt while the
 * chat is idle.  A submitted line takes the prompt away (the handler is
 * removed, the terminal in cbreak mode without echo) until the reply, the
 * load or the command has ended; then the status line (inline_view.c) and a
 * new prompt.  While busy, Esc (alone) or Ctrl-C stops the reply, and what
 * else is typed is kept for the next prompt.  Readline writes only the
 * prompt and the line typed; nothing here moves the cursor or erases.
 *
 * Without a terminal on standard input: one message (or /command, or
 * !command) a line, each sent when the chat is idle again; -f FILE sends
 * the whole file as one message.  Replies go to standard output, the rest
 * to standard error; Ctrl-C stops the reply and ends the run. */
#include "config.h"

#include "ui/inline_chat.h"
#include "ui/pull_progress.h"
#include "ui/signal_pipe.h"

#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "src/base/options.h"
#include "src/base/xalloc.h"
#include "src/store/store.h"
#include "ui/inline_view.h"

/* How far the worker sits below the UI thread (as ui/tui.c's). */
#define COMPUTE_NICE 5
#define PROMPT "> "
#define TYPEAHEAD_MAX 4096

struct inline_chat {
    struct chat *chat;
    struct inline_view view;
    bool terminal;        /* a person at a terminal (readline), else lines from stdin */
    bool prompt_shown;    /* readline's handler is installed */
    bool leave;           /* SIGTERM, SIGHUP, the terminal gone, Ctrl-C in a pipe */
    struct termios saved; /* the terminal as we found it */
    bool have_saved;
    char *next_input;     /* the next prompt's text (/undo gives a message back) */
    struct sbuf typeahead; /* typed while busy */
    struct sbuf in;       /* a pipe's bytes not yet a whole line */
    bool in_eof;
};

static struct inline_chat *the_chat; /* readline's handler has no user pointer */

static int term_width(void)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return 80;
}

/* The chat is doing something the prompt waits for. */
static bool busy(struct inline_chat *ic)
{
    struct chat_status st;
    chat_get_status(ic->chat, &st, chat_now());
    return st.busy;
}

/* The model never came: not ready and not loading (the load failed). */
static bool no_model(struct inline_chat *ic)
{
    struct chat_activity a;
    chat_get_activity(ic->chat, &a);
    return !a.model_ready && !a.model_loading;
}

/* --------------------------------------------------------------- terminal */

/* Busy: no echo, keys one at a time (Esc), Ctrl-C still a signal. */
static void terminal_busy(struct inline_chat *ic)
{
    if (!ic->have_saved)
        return;
    struct termios t = ic->saved;
    t.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
    t.c_lflag |= ISIG;
    t.c_cc[VMIN] = 1;
    t.c_cc[VTIME] = 0;
    tcsetattr(STDIN_FILENO, TCSANOW, &t);
}

static void terminal_restore(struct inline_chat *ic)
{
    if (ic->have_saved)
        tcsetattr(STDIN_FILENO, TCSANOW, &ic->saved);
}

static void on_line(char *line);

static void prompt_hide(struct inline_chat *ic)
{
    if (!ic->prompt_shown)
        return;
    rl_callback_handler_remove();
    ic->prompt_shown = false;
    terminal_busy(ic);
}

static void prompt_show(struct inline_chat *ic)
{
    if (ic->prompt_shown)
        return;
    terminal_restore(ic);
    fflush(stdout);
    rl_callback_handler_install(PROMPT, on_line);
    ic->prompt_shown = true;
    /* what /undo gave back, then what was typed during the reply */
    bool more = false;
    if (ic->next_input) {
        rl_insert_text(ic->next_input);
        free(ic->next_input);
        ic->next_input = NULL;
        more = true;
    }
    if (ic->typeahead.len) {
        sbuf_add(&ic->typeahead, "", 0);
        rl_insert_text(ic->typeahead.data);
        ic->typeahead.len = 0;
        more = true;
    }
    if (more)
        rl_redisplay();
}

static void on_line(char *line)
{
    struct inline_chat *ic = the_chat;
    prompt_hide(ic);
    if (!line) { /* Ctrl-D on an empty line */
        fputs("\n", stdout);
        chat_submit(ic->chat, NULL);
        return;
    }
    if (chat_shell_line(ic->chat, line)) { /* !COMMAND, !!COMMAND */
        free(line);
        return;
    }
    chat_submit(ic->chat, line);
}

/* Bytes typed while busy: Esc alone stops the reply; printable text is
 * kept for the next prompt. */
static void busy_keys(struct inline_chat *ic)
{
    char buf[256];
    ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
    if (n == 0) {
        ic->leave = true;
        return;
    }
    for (ssize_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)buf[i];
        if (ch == 27) {
            /* a key's sequence (an arrow) starts with Esc too: only a lone
             * one (nothing follows within 30 ms) stops */
            struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
            if (i + 1 == n && poll(&p, 1, 30) == 0) {
                if (chat_generating(ic->chat) || chat_pull_active(ic->chat))
                    chat_cancel(ic->chat);
            } else {
                i = n; /* drop the sequence */
            }
        } else if ((ch >= 32 && ch != 127) && ic->typeahead.len < TYPEAHEAD_MAX) {
            sbuf_add(&ic->typeahead, (char *)&ch, 1);
        }
    }
}

/* --------------------------------------------------------------- signals */

static void handle_signals(struct inline_chat *ic)
{
    unsigned char buf[64];
    ssize_t n;
    while ((n = signal_pipe_take(buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < n; i++) {
            switch (buf[i]) {
            case SIGINT:
                if (chat_generating(ic->chat) || chat_pull_active(ic->chat)) {
                    chat_cancel(ic->chat);
                } else if (!ic->terminal) {
                    ic->leave = true;
                } else if (ic->prompt_shown) {
                    /* the line is dropped; a fresh prompt below it */
                    bool empty = rl_end == 0;
                    rl_replace_line("", 0);
                    rl_callback_sigcleanup();
                    fputs("\n", stdout);
                    if (empty)
                        inline_view_say(&ic->view, "Ctrl-D or /quit leaves");
                    rl_on_new_line();
                    rl_redisplay();
                }
                if (!ic->terminal)
                    ic->leave = true; /* a pipe: Ctrl-C ends the run */
                break;
            case SIGWINCH:
                ic->view.width = term_width();
                if (ic->terminal) {
                    struct winsize ws;
                    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
                        rl_set_screen_size(ws.ws_row, ws.ws_col);
                }
                break;
            case SIGTERM:
            case SIGHUP:
            case SIGQUIT:
                ic->leave = true;
                break;
            }
        }
    }
}

/* ------------------------------------------------------------ the loops */

/* Wait for the worker, the signals and (when wanted) standard input, and
 * handle what came.  in_ready: stdin is readable. */
static void wait_once(struct inline_chat *ic, bool want_input, bool *in_ready)
{
    struct pollfd fds[3] = {
        {.fd = want_input ? STDIN_FILENO : -1, .events = POLLIN},
        {.fd = signal_pipe_fd(), .events = POLLIN},
        {.fd = chat_wake_fd(ic->chat), .events = POLLIN},
    };
    int timeout = chat_has_notice(ic->chat) || chat_pull_active(ic->chat) ? 250 : -1;
    *in_ready = false;
    int r = poll(fds, 3, timeout);
    if (r < 0 && errno != EINTR) {
        inline_view_say(&ic->view, "poll: %s", strerror(errno));
        ic->leave = true;
        return;
    }
    if (r <= 0)
        return;
    if (fds[1].revents & POLLIN)
        handle_signals(ic);
    if (fds[2].revents & POLLIN)
        chat_poll_events(ic->chat);
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR))
        *in_ready = true;
}

static int run_terminal(struct inline_chat *ic)
{
    ic->have_saved = tcgetattr(STDIN_FILENO, &ic->saved) == 0;
    terminal_busy(ic);
    while (!chat_quit_requested(ic->chat) && !ic->leave) {
        chat_tick(ic->chat);
        inline_view_flush(&ic->view);
        bool is_busy = busy(ic);
        if (!is_busy && !ic->prompt_shown) {
            if (no_model(ic) && !chat_pull_active(ic->chat)) {
                /* said by the controller's notice: nothing can be sent */
                inline_view_say(&ic->view, "no model: /model NAME loads one, /quit leaves");
            }
            prompt_show(ic);
        } else if (is_busy && ic->prompt_shown && rl_end == 0) {
            /* something started without a line (a queued message) */
            prompt_hide(ic);
            fputs("\n", stdout);
        }
        bool in_ready;
        wait_once(ic, true, &in_ready);
        if (!in_ready || ic->leave)
            continue;
        if (ic->prompt_shown)
            rl_callback_read_char();
        else
            busy_keys(ic);
    }
    prompt_hide(ic);
    terminal_restore(ic);
    return EXIT_OK;
}

/* The next whole line of ic->in (owned), NULL when none; at EOF the rest. */
static char *next_line(struct inline_chat *ic)
{
    if (!ic->in.len)
        return NULL;
    char *nl = memchr(ic->in.data, '\n', ic->in.len);
    if (!nl && !ic->in_eof)
        return NULL;
    size_t n = nl ? (size_t)(nl - ic->in.data) : ic->in.len;
    char *line = x_malloc(n + 1);
    memcpy(line, ic->in.data, n);
    line[n] = '\0';
    if (n && line[n - 1] == '\r')
        line[n - 1] = '\0';
    size_t used = nl ? n + 1 : n;
    memmove(ic->in.data, ic->in.data + used, ic->in.len - used);
    ic->in.len -= used;
    return line;
}

static void read_input(struct inline_chat *ic)
{
    char buf[65536];
    ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
    if (n > 0)
        sbuf_add(&ic->in, buf, (size_t)n);
    else if (n == 0 || (errno != EINTR && errno != EAGAIN))
        ic->in_eof = true;
}

/* Lines from standard input (or one message: message non-NULL). */
static int run_lines(struct inline_chat *ic, char *message)
{
    int status = EXIT_OK;
    bool sent = false;
    while (!chat_quit_requested(ic->chat) && !ic->leave) {
        chat_tick(ic->chat);
        inline_view_flush(&ic->view);
        if (busy(ic)) {
            bool in_ready;
            wait_once(ic, false, &in_ready);
            continue;
        }
        if (no_model(ic) && !chat_pull_active(ic->chat)) {
            status = EXIT_RUNTIME; /* the controller said why */
            break;
        }
        if (message) {
            if (sent)
                break;
            sent = true;
            chat_submit(ic->chat, message);
            message = NULL;
            continue;
        }
        char *line = next_line(ic);
        if (line) {
            if (chat_shell_line(ic->chat, line))
                free(line);
            else
                chat_submit(ic->chat, line);
            continue;
        }
        if (ic->in_eof)
            break;
        bool in_ready;
        wait_once(ic, true, &in_ready);
        if (in_ready && !ic->leave)
            read_input(ic);
    }
    free(message);
    inline_view_flush(&ic->view);
    return ic->leave && chat_generating(ic->chat) ? EXIT_RUNTIME : status;
}

/* -f FILE ("-": standard input): the whole of it, as one message. */
static char *read_message(const char *path)
{
    char *data = NULL;
    size_t len = 0;
    char err[1024];
    if (strcmp(path, "-") == 0) {
        struct sbuf b = {0};
        char buf[65536];
        ssize_t n;
        while ((n = read(STDIN_FILENO, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
            if (n > 0)
                sbuf_add(&b, buf, (size_t)n);
        sbuf_add(&b, "", 0);
        data = b.data;
        len = b.len;
    } else if (store_read_file(path, 16u << 20, &data, &len, err, sizeof err) != 0) {
        cli_error("%s", err);
        return NULL;
    }
    while (len && (data[len - 1] == '\n' || data[len - 1] == '\r'))
        data[--len] = '\0';
    if (!len) {
        cli_error("%s: no message in it (it is empty)", strcmp(path, "-") ? path : "standard input");
        free(data);
        return NULL;
    }
    return data;
}

/* -------------------------------------------------------------- callbacks */

/* The view's user is the inline_view; these two are the input's (the_chat). */
static void on_input_replaced(void *user, const char *text)
{
    struct inline_chat *ic = the_chat;
    (void)user;
    free(ic->next_input);
    ic->next_input = NULL;
    if (!text || !*text || !ic->terminal)
        return;
    /* one line at the prompt (readline would move the cursor up over
     * several): without an attached output or file, newlines as spaces */
    char *t = x_strdup(text);
    char *block = strstr(t, "\n\n<file name=");
    if (block)
        *block = '\0';
    for (char *p = t; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    ic->next_input = t;
}

static void on_line_remembered(void *user, const char *line)
{
    (void)user;
    if (the_chat->terminal && line && *line)
        add_history(line);
}

static const char inline_keys[] =
    "\n"
    "Enter send · Ctrl-R search history · Up/Down earlier lines · Ctrl-D (empty line) quit\n"
    "Esc or Ctrl-C stop the reply (what came stays) · Ctrl-C clear the line\n"
    "Replies print below the prompt and stay in the terminal's scrollback: its own scrolling\n"
    "and search apply. '//' sends a '/'; a message starting with '!' needs a space before it.";

static void setup_readline(bool screen_reader)
{
    rl_readline_name = "elmchat";
    rl_catch_signals = 0;
    rl_catch_sigwinch = 0;
    rl_change_environment = 0;
    rl_outstream = stdout;
    if (screen_reader) /* no mode switches around each line */
        rl_variable_bind("enable-bracketed-paste", "off");
    stifle_history(1000);
}

int inline_chat_main(const struct chat_args *a)
{
    /* widths of what is printed: a UTF-8 locale when there is one */
    if (strcmp(nl_langinfo(CODESET), "UTF-8") != 0 && !setlocale(LC_CTYPE, "C.UTF-8"))
        setlocale(LC_CTYPE, "UTF-8");
    char *message = NULL;
    if (a->input && !(message = read_message(a->input)))
        return EXIT_RUNTIME;
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGQUIT};
    if (!signal_pipe_open(sigs, sizeof sigs / sizeof sigs[0])) {
        cli_error("pipe: %s", strerror(errno));
        free(message);
        return EXIT_RUNTIME;
    }
    struct inline_chat *ic = x_calloc(1, sizeof *ic);
    the_chat = ic;
    ic->terminal = !message && isatty(STDIN_FILENO);
    struct inline_view *v = &ic->view;
    struct chat_view ops;
    inline_view_init(v, NULL, &ops); /* v->chat: once chat_new returns */
    ops.input_replaced = on_input_replaced;
    ops.line_remembered = on_line_remembered;
    ops.help_keys = inline_keys;
    v->info = ic->terminal && isatty(STDOUT_FILENO) ? stdout : stderr;
    v->screen_reader = a->screen_reader;
    v->color = a->color || (isatty(STDOUT_FILENO) && !a->screen_reader && !getenv("NO_COLOR"));
    /* into a file or a program: the text as the model wrote it */
    v->markdown = !a->chat.raw && !a->screen_reader && isatty(STDOUT_FILENO);
    v->width = isatty(STDOUT_FILENO) ? term_width() : 80;
    if (ic->terminal)
        setup_readline(a->screen_reader);

    struct chat_options o = a->chat;
    o.worker_nice = COMPUTE_NICE;
    /* the y/n before a download is asked on the terminal: only with one */
    o.pull_missing = !o.common.no_pull && ic->terminal;
    char err[2048];
    int status = EXIT_OK;
    o.pull_ui = pull_progress_terminal();
    ic->chat = chat_new(&o, &ops, err, sizeof err);
    v->chat = ic->chat;
    if (!ic->chat) {
        cli_error("%s", err);
        status = EXIT_RUNTIME;
    } else {
        if (ic->terminal) {
            inline_view_flush(v);
            inline_view_say(v, "elmchat %s: Esc or Ctrl-C stops a reply, /help lists the "
                               "commands, Ctrl-D or /quit leaves",
                            PACKAGE_VERSION);
            status = run_terminal(ic);
        } else {
            status = run_lines(ic, message);
            message = NULL;
        }
        chat_save_all(ic->chat);
        char *note = chat_exit_note(ic->chat);
        if (note)
            fprintf(stderr, "%s\n", note);
        free(note);
    }
    free(message);
    chat_free(ic->chat);
    inline_view_fini(v);
    sbuf_fini(&ic->typeahead);
    sbuf_fini(&ic->in);
    free(ic->next_input);
    if (ic->terminal)
        rl_callback_handler_remove();
    free(ic);
    the_chat = NULL;
    return status;
}
