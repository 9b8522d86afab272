/* chat_shell.c: !COMMAND and !!COMMAND (chat_controller.h).  The command
 * runs in /bin/sh -c with stdin from /dev/null and stdout and stderr into
 * one pipe, in a process group of its own so that the time limit stops
 * everything it started.  Its output is shown as an information line and,
 * for !COMMAND, attached to the next message through chat_attach_take
 * (the same room and cut as /read).  The first command of a run asks y/n:
 * a model's reply must never be one Enter away from running. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/chat/chat_controller.h"
#include "src/chat/chat_internal.h"
#include "src/base/xalloc.h"

/* Lines of output an information line shows (all of it is attached). */
#define SHOWN_LINES 200
/* a command's output kept at most (what goes past is counted, not kept) */
#define CHAT_SHELL_MAX_BYTES (256u * 1024)

struct chat_shell {
    bool confirmed;  /* y was answered once in this run */
    char *pending;   /* the command waiting for y/n (owned), NULL: none */
    bool pending_attach;
};

static struct chat_shell *state(struct chat *c)
{
    if (!c->shell)
        c->shell = x_calloc(1, sizeof *c->shell);
    return c->shell;
}

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

struct run_result {
    struct sbuf out;
    size_t dropped;  /* bytes past CHAT_SHELL_MAX_BYTES, not kept */
    int status;      /* waitpid's */
    bool timed_out, stopped;
    char err[256];   /* the command could not start: why */
};

static void kill_group(pid_t pid)
{
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL); /* if setpgid lost the race */
}

/* Read the pipe until EOF, the deadline or Ctrl-C (our own SIGINT handler
 * for the while: the UI's would only queue it). */
static void collect(int fd, pid_t pid, double limit, struct run_result *r)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    interrupted = 0;
    sigaction(SIGINT, &sa, &old);
    double deadline = chat_now() + limit;
    for (;;) {
        if (interrupted) {
            r->stopped = true;
            break;
        }
        double left = deadline - chat_now();
        if (left <= 0) {
            r->timed_out = true;
            break;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n = poll(&p, 1, left > 0.2 ? 200 : (int)(left * 1e3) + 1);
        if (n < 0 && errno != EINTR)
            break;
        if (n <= 0)
            continue;
        char buf[8192];
        ssize_t k = read(fd, buf, sizeof buf);
        if (k < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (k <= 0)
            break;
        size_t room = CHAT_SHELL_MAX_BYTES - r->out.len;
        size_t keep = (size_t)k < room ? (size_t)k : room;
        sbuf_add(&r->out, buf, keep);
        r->dropped += (size_t)k - keep;
    }
    sigaction(SIGINT, &old, NULL);
    if (r->timed_out || r->stopped)
        kill_group(pid);
}

static bool run(const char *cmd, int timeout, struct run_result *r)
{
    memset(r, 0, sizeof *r);
    sbuf_add(&r->out, "", 0);
    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(r->err, sizeof r->err, "pipe: %s", strerror(errno));
        return false;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(r->err, sizeof r->err, "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return false;
    }
    if (pid == 0) {
        setpgid(0, 0);
        signal(SIGINT, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        int null = open("/dev/null", O_RDONLY);
        if (null >= 0)
            dup2(null, STDIN_FILENO);
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        close(fds[1]);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    close(fds[1]);
    collect(fds[0], pid, timeout, r);
    close(fds[0]);
    /* EOF came: the shell is ending; a stopped one was killed */
    while (waitpid(pid, &r->status, 0) < 0 && errno == EINTR) {
    }
    return true;
}

/* "exit status 3", "killed by signal 9": empty when it succeeded. */
static void status_text(const struct run_result *r, int timeout, char *buf, size_t size)
{
    buf[0] = '\0';
    if (r->timed_out)
        snprintf(buf, size, "stopped after %d s (shell_timeout in config.yaml)", timeout);
    else if (r->stopped)
        snprintf(buf, size, "stopped (Ctrl-C)");
    else if (WIFEXITED(r->status) && WEXITSTATUS(r->status) != 0)
        snprintf(buf, size, "exit status %d", WEXITSTATUS(r->status));
    else if (WIFSIGNALED(r->status))
        snprintf(buf, size, "killed by signal %d", WTERMSIG(r->status));
}

/* The output as an information line: "$ cmd", then at most SHOWN_LINES. */
static void show_output(struct chat *c, const char *cmd, const struct run_result *r,
                        const char *status)
{
    struct sbuf b = {0};
    sbuf_add(&b, "$ ", 2);
    sbuf_add(&b, cmd, strlen(cmd));
    const char *s = r->out.data;
    size_t len = r->out.len, lines = 0, i = 0;
    while (len && s[len - 1] == '\n')
        len--;
    if (len)
        sbuf_add(&b, "\n", 1);
    for (; i < len && lines < SHOWN_LINES; i++) {
        if (s[i] == '\n')
            lines++;
    }
    sbuf_add(&b, s, lines < SHOWN_LINES ? len : i - 1);
    char more[160];
    if (i < len) {
        size_t rest = 0;
        for (size_t j = i; j < len; j++)
            rest += s[j] == '\n';
        snprintf(more, sizeof more, "\n... %zu more lines", rest + 1);
        sbuf_add(&b, more, strlen(more));
    }
    if (r->dropped) {
        snprintf(more, sizeof more, "\n... %zu more bytes not read (the limit is %u KB)",
                 r->dropped, CHAT_SHELL_MAX_BYTES / 1024);
        sbuf_add(&b, more, strlen(more));
    }
    if (!len && !*status)
        sbuf_add(&b, "\n(no output)", strlen("\n(no output)"));
    if (*status) {
        snprintf(more, sizeof more, "\n[%s]", status);
        sbuf_add(&b, more, strlen(more));
    }
    chat_info_msg(c, *status != '\0', b.data);
    sbuf_fini(&b);
}

/* The attachment's name: the command, without the quote that ends the
 * block's name attribute. */
static char *block_name(const char *cmd)
{
    char *n = x_asprintf("$ %s", cmd);
    for (char *p = n; *p; p++)
        if (*p == '"' || *p == '\n')
            *p = '\'';
    return n;
}

static void run_now(struct chat *c, const char *cmd, bool attach)
{
    int timeout = c->cfg.shell_timeout > 0 ? c->cfg.shell_timeout : 30;
    struct run_result r;
    if (!run(cmd, timeout, &r)) {
        chat_notice(c, true, "!%s: %s", cmd, r.err);
        sbuf_fini(&r.out);
        return;
    }
    char status[128];
    status_text(&r, timeout, status, sizeof status);
    show_output(c, cmd, &r, status);
    if (!attach) {
        if (*status)
            chat_notice(c, true, "%s: %s (shown, not attached)", cmd, status);
        sbuf_fini(&r.out);
        return;
    }
    /* the model is told how it ended, as the user is */
    if (*status) {
        char tail[160];
        snprintf(tail, sizeof tail, "%s[%s]\n", r.out.len && r.out.data[r.out.len - 1] != '\n'
                                                    ? "\n" : "",
                 status);
        sbuf_add(&r.out, tail, strlen(tail));
    }
    char *name = block_name(cmd);
    struct attachment a;
    char err[1024];
    if (!c->model.tok) {
        chat_notice(c, true, "wait for the model: its tokenizer counts the output's tokens");
    } else if (!c->cur) {
        chat_notice(c, true, "no conversation to attach the output to");
    } else if (attachment_from_text(name, r.out.data, r.out.len, 0, &a, err, sizeof err) != 0) {
        /* empty or binary output: said, nothing attached */
        chat_notice(c, *status != '\0', "%s: nothing attached (%s)", cmd,
                    strstr(err, "empty") ? "no output" : err);
    } else {
        chat_attach_take(c, c->cur, &a, NULL);
        attachment_fini(&a);
    }
    free(name);
    sbuf_fini(&r.out);
}

/* cmd run (attach: its output goes with the next message), after the
 * first-run question (chat_controller.h: chat_shell_line) */
static void chat_shell(struct chat *c, const char *cmd, bool attach)
{
    cmd += strspn(cmd, " \t");
    if (!*cmd) {
        chat_notice(c, true, "!COMMAND runs COMMAND in the shell and attaches its output to your "
                             "next message; !!COMMAND only shows it");
        return;
    }
    struct chat_shell *sh = state(c);
    if (!sh->confirmed && !c->cfg.shell_no_confirm) {
        free(sh->pending);
        sh->pending = x_strdup(cmd);
        sh->pending_attach = attach;
        chat_notice(c, false, "run '%s' in /bin/sh? y/n (once a run; shell_confirm: false in "
                              "config.yaml never asks)",
                    cmd);
        chat_changed(c);
        return;
    }
    run_now(c, cmd, attach);
    chat_changed(c);
}

bool chat_shell_line(struct chat *c, const char *line)
{
    if (!line || line[0] != '!')
        return false;
    bool attach = line[1] != '!';
    if (c->view.line_remembered)
        c->view.line_remembered(c->view.user, line);
    chat_shell(c, line + (attach ? 1 : 2), attach);
    return true;
}

/* 1: the line says yes (y, yes), 0: no (n, no, nothing), -1: neither */
static int yes_or_no(const char *line)
{
    const char *s = line + strspn(line, " \t");
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n'))
        n--;
    if ((n == 1 && strncasecmp(s, "y", 1) == 0) || (n == 3 && strncasecmp(s, "yes", 3) == 0))
        return 1;
    if (n == 0 || (n == 1 && strncasecmp(s, "n", 1) == 0) ||
        (n == 2 && strncasecmp(s, "no", 2) == 0))
        return 0;
    return -1;
}

bool chat_shell_answer(struct chat *c, const char *line)
{
    struct chat_shell *sh = c->shell;
    if (!sh || !sh->pending)
        return false;
    char *cmd = sh->pending;
    sh->pending = NULL;
    int yes = yes_or_no(line);
    if (yes == 1) {
        sh->confirmed = true;
        run_now(c, cmd, sh->pending_attach);
    } else if (yes == 0) {
        chat_notice(c, false, "not run: %s", cmd);
    } else {
        /* a message typed (or piped) instead of an answer is not lost:
         * it goes on as the line it is */
        chat_notice(c, false, "not run: %s (the answer was not y or n; the line goes on as "
                              "typed)",
                    cmd);
    }
    free(cmd);
    chat_changed(c);
    return yes >= 0;
}

void chat_shell_fini(struct chat *c)
{
    if (!c->shell)
        return;
    free(c->shell->pending);
    free(c->shell);
    c->shell = NULL;
}
