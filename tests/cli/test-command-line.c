/* test-command-line.c: the program's command-line contract through the
 * binary ($ELMCHAT): --help, --version, an unknown command. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/lib/tap.h"

static int run_status(const char *args, char *out, size_t out_size)
{
    const char *bin = getenv("ELMCHAT");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", bin ? bin : "./elmchat", args);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t n = fread(out, 1, out_size - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(void)
{
    plan_lazy();

    /* The program's GNU-style command line. */
    char out[8192];
    is_int(run_status("--help", out, sizeof out), 0, "--help exits 0");
    ok(strstr(out, "Usage: elmchat") != NULL, "--help prints usage");
    is_int(run_status("--version", out, sizeof out), 0, "--version exits 0");
    ok(strncmp(out, "elmchat " PACKAGE_VERSION, strlen("elmchat " PACKAGE_VERSION)) == 0,
       "--version prints 'elmchat %s'", PACKAGE_VERSION);
    is_int(run_status("no-such-command", out, sizeof out), 2, "unknown command exits 2");
    ok(strstr(out, "unknown command") != NULL, "unknown command is named");
    /* a name with an escape sequence: echoed escaped, never raw */
    run_status("run -p x -m \"$(printf 'no\\033[31msuch')\"", out, sizeof out);
    ok(strstr(out, "no\\x1b[31msuch") != NULL && !strchr(out, '\033'),
       "an error quoting a name with ESC writes it as \\x1b: %s", out);
    /* run's input is UTF-8, as sessions are */
    const char *latin1 = tap_write_tmp("latin1.txt", "caf\351\n", 5);
    const char *bdir = getenv("top_builddir");
    char args[8192];
    snprintf(args, sizeof args, "run --dry-run --tokenizer '%s/tests/random-model/tokenizer.model' < '%s'",
             bdir ? bdir : ".", latin1);
    is_int(run_status(args, out, sizeof out), 1, "latin-1 on run's standard input: refused");
    ok(strstr(out, "standard input:1:4: not UTF-8 text (byte 0xe9)") != NULL,
       "... with its line and column: %s", out);
    /* more threads than 4 a core would only queue */
    is_int(run_status("run -p x --threads 1000", out, sizeof out), 2, "--threads 1000: a usage error");
    ok(strstr(out, "--threads 1000: this machine has") != NULL, "... saying how many cores there are");

    return done_testing();
}
