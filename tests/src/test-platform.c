/* test-platform.c: src/platform.c.  The executable's path: on Linux
 * /proc/self/exe; with --enable-portable-fallbacks (.ci/stage-portable) the
 * branch macOS's fallback and the BSDs take, argv[0] made absolute, through
 * $PATH when it is a bare name (empty entries are the current folder).  The
 * durable fsync on a real file. */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/base/platform.h"
#include "tests/lib/tap.h"

static bool same_path(char *got, const char *want)
{
    bool same = got && want && strcmp(got, want) == 0;
    if (!same)
        diag("got %s, want %s", got ? got : "(null)", want ? want : "(null)");
    free(got);
    return same;
}

int main(int argc, char **argv)
{
    (void)argc;
    plan_lazy();
    char *self = realpath(argv[0], NULL);
    if (!self)
        bail_out("realpath %s failed", argv[0]);
    platform_set_argv0(argv[0]);
    ok(same_path(platform_exe_path(), self), "the test program's own path");

#if ELM_PORTABLE_FALLBACKS || !defined(__linux__)
    diag("the argv[0] + $PATH fallback");
    /* A program found on $PATH by its bare name. */
    const char *dir = tap_tmpdir();
    char bin[PATH_MAX], prog[PATH_MAX + 16], path[2 * PATH_MAX];
    snprintf(bin, sizeof bin, "%s/bin", dir);
    mkdir(bin, 0700);
    snprintf(prog, sizeof prog, "%s/fakeprog", bin);
    FILE *f = fopen(prog, "w");
    if (!f)
        bail_out("cannot write %s", prog);
    fclose(f);
    char *real_prog = NULL;
    char *saved_path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    /* Not executable yet: not a program $PATH would find. */
    snprintf(path, sizeof path, "/nonexistent-elmchat::%s", bin);
    setenv("PATH", path, 1);
    platform_set_argv0("fakeprog");
    ok(platform_exe_path() == NULL, "a file on $PATH that is not executable is not it");
    chmod(prog, 0700);
    real_prog = realpath(prog, NULL);
    ok(same_path(platform_exe_path(), real_prog), "a bare name is looked up on $PATH");
    platform_set_argv0("no-such-program-elmchat");
    ok(platform_exe_path() == NULL, "a name on no $PATH folder: unknown (NULL)");
    /* An empty $PATH entry is the current folder. */
    if (chdir(bin) == 0) {
        setenv("PATH", "/nonexistent-elmchat:", 1);
        platform_set_argv0("fakeprog");
        ok(same_path(platform_exe_path(), real_prog), "an empty $PATH entry is the current folder");
        platform_set_argv0("./fakeprog");
        ok(same_path(platform_exe_path(), real_prog), "a relative name with a '/' is made absolute");
    }
    free(real_prog);
    /* The tap library's cleanup runs rm. */
    if (saved_path)
        setenv("PATH", saved_path, 1);
    free(saved_path);
    if (chdir("/") != 0)
        diag("chdir /");
#else
    diag("Linux: /proc/self/exe (argv[0] is not read)");
    platform_set_argv0("no-such-program-elmchat");
    ok(same_path(platform_exe_path(), self), "argv[0] is not needed");
#endif
    free(self);

    char file[PATH_MAX + 16];
    snprintf(file, sizeof file, "%s/synced", tap_tmpdir());
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ok(fd >= 0 && write(fd, "x", 1) == 1 && platform_fsync(fd) == 0, "platform_fsync on a file");
    if (fd >= 0)
        close(fd);
    return done_testing();
}
