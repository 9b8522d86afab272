/* platform.c: the executable's path, the durable fsync and the clock
 * (platform.h). */
#include "config.h"

#include "src/base/platform.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(__APPLE__) && !ELM_PORTABLE_FALLBACKS
#include <mach-o/dyld.h>
#endif

#include "src/base/xalloc.h"

static const char *saved_argv0;

void platform_set_argv0(const char *argv0)
{
    saved_argv0 = argv0;
}

/* argv[0] with a '/' names the file (relative to the current folder);
 * a bare name was found on $PATH by the shell. */
static char *exe_from_argv0(const char *argv0)
{
    if (!argv0 || !*argv0)
        return NULL;
    if (strchr(argv0, '/'))
        return realpath(argv0, NULL);
    const char *path = getenv("PATH");
    if (!path)
        return NULL;
    for (const char *p = path;; p++) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        /* An empty entry is the current folder. */
        char *cand = len ? x_asprintf("%.*s/%s", (int)len, p, argv0) : x_asprintf("./%s", argv0);
        struct stat st;
        char *real = NULL;
        if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
            real = realpath(cand, NULL);
        free(cand);
        if (real)
            return real;
        if (!colon)
            return NULL;
        p = colon;
    }
}

char *platform_exe_path(void)
{
#if defined(__linux__) && !ELM_PORTABLE_FALLBACKS
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        return x_strdup(exe);
    }
#elif defined(__APPLE__) && !ELM_PORTABLE_FALLBACKS
    char exe[PATH_MAX];
    uint32_t size = sizeof exe;
    if (_NSGetExecutablePath(exe, &size) == 0) {
        char *real = realpath(exe, NULL);
        if (real)
            return real;
    }
#endif
    return exe_from_argv0(saved_argv0);
}

int platform_fsync(int fd)
{
#if defined(__APPLE__) && defined(F_FULLFSYNC) && !ELM_PORTABLE_FALLBACKS
    if (fcntl(fd, F_FULLFSYNC) == 0)
        return 0;
    /* Not supported here (a network or FAT file system): plain fsync. */
#endif
    return fsync(fd);
}

double platform_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
