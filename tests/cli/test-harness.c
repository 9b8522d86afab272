/* test-harness.c: the TAP harness's own checks, and the program's command
 * line contract (help, version, usage errors). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "src/options.h"
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

    /* The harness itself. */
    ok(1, "ok() passes a true condition");
    is_int(2 + 2, 4, "is_int compares integers");
    is_str("abc", "abc", "is_str compares strings");
    near(0.1 + 0.2, 0.3, 1e-12, "near() allows a tolerance");
    const char *dir = tap_tmpdir();
    ok(dir && strstr(dir, "elmchat-test-") != NULL, "tap_tmpdir makes a private directory");
    FILE *f = fopen(tap_data_path("README.md"), "r");
    ok(f != NULL, "tap_data_path finds tests/data/README.md (%s)", tap_data_path("README.md"));
    if (f)
        fclose(f);

    /* Shared option parsing. */
    int32_t *ids = NULL;
    size_t n = 0;
    ok(cli_parse_ids("1,2, 30000", &ids, &n) && n == 3 && ids[2] == 30000, "cli_parse_ids");
    free(ids);
    ok(!cli_parse_ids("1,x,3", &ids, &n), "cli_parse_ids rejects junk");
    ok(!cli_parse_ids("-4", &ids, &n), "cli_parse_ids rejects negative ids");
    long l;
    ok(!cli_parse_int("12abc", 0, 100, &l), "cli_parse_int rejects trailing junk");
    ok(!cli_parse_int("101", 0, 100, &l), "cli_parse_int enforces the range");

    /* The program's GNU-style command line. */
    char out[8192];
    is_int(run_status("--help", out, sizeof out), 0, "--help exits 0");
    ok(strstr(out, "Usage: elmchat") != NULL, "--help prints usage");
    is_int(run_status("--version", out, sizeof out), 0, "--version exits 0");
    ok(strncmp(out, "elmchat " PACKAGE_VERSION, strlen("elmchat " PACKAGE_VERSION)) == 0,
       "--version prints 'elmchat %s'", PACKAGE_VERSION);
    is_int(run_status("no-such-command", out, sizeof out), 2, "unknown command exits 2");
    ok(strstr(out, "unknown command") != NULL, "unknown command is named");

    return done_testing();
}
