/* external_editor.c: the input line in the user's editor: a temporary file
 * (mode 0600, removed after), the editor run through the shell so that
 * "code -w" or "emacs -nw" work, the terminal handed over and taken back. */
#include "config.h"

#include "ui/external_editor.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/store/store.h"
#include "src/base/xalloc.h"
#include "ui/screen.h"

#define EDIT_MAX_SIZE (8u << 20)

static const char *editor_command(void)
{
    const char *e = getenv("VISUAL");
    if (!e || !*e)
        e = getenv("EDITOR");
    return e && *e ? e : "vi";
}

/* The editor's wait status, -1 when it could not start.  The command goes
 * through the environment ($ELMCHAT_EDITOR), never into the shell's text. */
static int run_editor(const char *editor, const char *path)
{
    if (setenv("ELMCHAT_EDITOR", editor, 1) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        /* the child: default signals, the editor owns the terminal */
        signal(SIGINT, SIG_DFL);
        signal(SIGQUIT, SIG_DFL);
        signal(SIGTSTP, SIG_DFL);
        signal(SIGWINCH, SIG_DFL);
        execl("/bin/sh", "sh", "-c", "exec $ELMCHAT_EDITOR \"$1\"", "sh", path, (char *)NULL);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return status;
}

bool external_edit(const char *text, char **out, char *err, size_t err_size)
{
    const char *tmp = getenv("TMPDIR");
    char *path = x_asprintf("%s/elmchat-message-XXXXXX.md", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemps(path, 3);
    if (fd < 0) {
        snprintf(err, err_size, "cannot create a temporary file in %s: %s",
                 tmp && *tmp ? tmp : "/tmp", strerror(errno));
        free(path);
        return false;
    }
    FILE *f = fdopen(fd, "w");
    bool ok = f && fputs(text, f) >= 0 && (!*text || fputc('\n', f) != EOF);
    if (f)
        ok = fclose(f) == 0 && ok;
    else
        close(fd);
    if (!ok) {
        snprintf(err, err_size, "%s: cannot write: %s", path, strerror(errno));
        unlink(path);
        free(path);
        return false;
    }
    const char *editor = editor_command();
    screen_pause();
    int status = run_editor(editor, path);
    screen_resume();
    unsetenv("ELMCHAT_EDITOR");
    ok = false;
    if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) == 127) {
        snprintf(err, err_size, "the editor '%s' could not run (set VISUAL or EDITOR)", editor);
    } else if (WEXITSTATUS(status) != 0) {
        snprintf(err, err_size, "the editor '%s' exited with status %d: the message is unchanged",
                 editor, WEXITSTATUS(status));
    } else {
        char *data;
        size_t len;
        char rerr[512];
        if (store_read_file(path, EDIT_MAX_SIZE, &data, &len, rerr, sizeof rerr) != 0) {
            snprintf(err, err_size, "%s", rerr);
        } else {
            if (len > 0 && data[len - 1] == '\n')
                data[--len] = '\0';
            *out = data;
            ok = true;
        }
    }
    unlink(path);
    free(path);
    return ok;
}
