/* tap.c: TAP output for the C tests. */
#include "config.h"

#include "tests/lib/tap.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int n_planned = -1;
static int n_run;
static int n_failed;
static char tmpdir[4096];

static void remove_tmpdir(void)
{
    if (tmpdir[0] && n_failed == 0) {
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "# could not remove %s\n", tmpdir);
    }
}

void plan(int n)
{
    n_planned = n;
    printf("1..%d\n", n);
    fflush(stdout);
}

void plan_lazy(void)
{
    n_planned = -1;
}

int done_testing(void)
{
    if (n_planned < 0)
        printf("1..%d\n", n_run);
    else if (n_planned != n_run)
        printf("# planned %d tests but ran %d\n", n_planned, n_run);
    fflush(stdout);
    return (n_failed == 0 && (n_planned < 0 || n_planned == n_run)) ? 0 : 1;
}

__attribute__((format(printf, 2, 0))) static bool report(bool cond, const char *fmt, va_list ap)
{
    n_run++;
    if (!cond)
        n_failed++;
    printf("%sok %d - ", cond ? "" : "not ", n_run);
    vprintf(fmt, ap);
    putchar('\n');
    fflush(stdout);
    return cond;
}

bool ok(bool cond, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(cond, fmt, ap);
    va_end(ap);
    return cond;
}

bool is_int(long long got, long long want, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bool r = report(got == want, fmt, ap);
    va_end(ap);
    if (!r)
        printf("#   got: %lld\n#  want: %lld\n", got, want);
    return r;
}

bool is_str(const char *got, const char *want, const char *fmt, ...)
{
    bool same = (got == NULL && want == NULL) || (got && want && strcmp(got, want) == 0);
    va_list ap;
    va_start(ap, fmt);
    bool r = report(same, fmt, ap);
    va_end(ap);
    if (!r)
        printf("#   got: \"%s\"\n#  want: \"%s\"\n", got ? got : "(null)", want ? want : "(null)");
    return r;
}

bool near(double got, double want, double tol, const char *fmt, ...)
{
    bool close = isfinite(got) && fabs(got - want) <= tol;
    va_list ap;
    va_start(ap, fmt);
    bool r = report(close, fmt, ap);
    va_end(ap);
    if (!r)
        printf("#   got: %.9g\n#  want: %.9g (tolerance %.3g)\n", got, want, tol);
    return r;
}

void skip(int n, const char *reason)
{
    for (int i = 0; i < n; i++) {
        n_run++;
        printf("ok %d # SKIP %s\n", n_run, reason);
    }
    fflush(stdout);
}

void diag(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("# ", stdout);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
    fflush(stdout);
}

void skip_all(const char *reason)
{
    printf("1..0 # SKIP %s\n", reason);
    fflush(stdout);
    exit(0);
}

void bail_out(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("Bail out! ", stdout);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
    fflush(stdout);
    exit(255);
}

const char *tap_data_path(const char *name)
{
    static char path[4096];
    const char *top = getenv("top_srcdir");
    snprintf(path, sizeof path, "%s/tests/data/%s", top && *top ? top : ".", name);
    return path;
}

const char *tap_tmpdir(void)
{
    if (!tmpdir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(tmpdir, sizeof tmpdir, "%s/elmchat-test-XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(tmpdir))
            bail_out("mkdtemp %s failed", tmpdir);
        atexit(remove_tmpdir);
    }
    return tmpdir;
}

void tap_private_xdg(void)
{
    static const char *const vars[][2] = {{"XDG_CONFIG_HOME", "config"},
                                          {"XDG_DATA_HOME", "data"},
                                          {"XDG_STATE_HOME", "state"},
                                          {"XDG_CACHE_HOME", "cache"}};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        char dir[8192];
        snprintf(dir, sizeof dir, "%s/%s", tap_tmpdir(), vars[i][1]);
        setenv(vars[i][0], dir, 1);
    }
}

void *tap_alloc64(size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p)
        bail_out("out of memory");
    return p;
}

double tap_uniform(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (double)(uint32_t)(*s >> 16) / 2147483648.0 - 1.0;
}

double tap_time_scale(void)
{
    const char *v = getenv("ELMCHAT_TEST_TIME_SCALE");
    if (!v || !*v)
        return 1.0;
    char *end = NULL;
    double s = strtod(v, &end);
    return *end == '\0' && s >= 1.0 && s <= 1000.0 ? s : 1.0;
}

const char *tap_write_tmp(const char *name, const void *data, size_t len)
{
    static char path[8192];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", tap_tmpdir(), name) >= sizeof path)
        bail_out("a test file name too long: %s", name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0)
        bail_out("cannot write %s", path);
    return path;
}

bool tap_gen_checkpoint(const char *args, char *dir, size_t dir_size, const char *name)
{
    const char *b = getenv("top_builddir");
    char gen[4096];
    snprintf(gen, sizeof gen, "%s/tests/lib/gen-checkpoint", b ? b : ".");
    if (access(gen, X_OK) != 0)
        return false;
    snprintf(dir, dir_size, "%s/%s", tap_tmpdir(), name);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' %s -o '%s' >/dev/null", gen, args, dir);
    if (system(cmd) != 0)
        bail_out("%s failed", cmd);
    return true;
}
