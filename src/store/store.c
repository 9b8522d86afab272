/* store.c: atomic replace of a file: temp file, fsync, rename, fsync dir. */
#include "config.h"

#include "src/store/store.h"

#include <errno.h>
#include <stdbool.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "src/base/platform.h"
#include "src/base/xalloc.h"

static int fail(int e, char *err, size_t err_size, const char *path, const char *what)
{
    snprintf(err, err_size, "%s: %s: %s", path, what, strerror(e));
    return -e;
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return x_strdup(".");
    if (slash == path)
        return x_strdup("/");
    return x_strndup(path, (size_t)(slash - path));
}

/* A write's failure: the file and the reason first (a status line shows
 * that much), then the step. */
static int fail_write(int e, char *err, size_t err_size, const char *path, const char *step)
{
    snprintf(err, err_size, "cannot write %s: %s (%s)", path, strerror(e), step);
    return -e;
}

/* data into fd and onto the disk.  0, or -errno with *step set. */
static int fill(int fd, const void *data, size_t len, const char **step)
{
    *step = "chmod";
    if (fchmod(fd, 0600) < 0)
        return -errno;
    const char *p = data;
    size_t left = len;
    *step = "write";
    while (left) {
        ssize_t n = write(fd, p, left);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        left -= (size_t)n;
    }
    *step = "fsync";
    return platform_fsync(fd) < 0 ? -errno : 0;
}

/* The temporary files of one target: hidden, same folder (so that rename
 * is atomic), the writer's pid (a later run tells whether it still lives),
 * six characters that make it unique. */
static char *temp_template(const char *dir, const char *base)
{
    return x_asprintf("%s/.%s.tmp.%ld.XXXXXX", dir, base, (long)getpid());
}

/* Linux's O_TMPFILE: the data goes into a file without a name, which gets
 * one only once it is complete, just before the rename: a run killed
 * while writing leaves nothing behind.  1 when the system or the file
 * system has no such files (then a named temporary file is used). */
static int write_unnamed(const char *dir, const char *base, const char *path, const void *data,
                         size_t len, char **tmp, char *err, size_t err_size)
{
#if defined(O_TMPFILE) && defined(AT_EMPTY_PATH) && !ELM_PORTABLE_FALLBACKS
    int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0)
        return errno == ENOENT || errno == ENOTDIR || errno == EACCES || errno == EROFS ||
                       errno == ENOSPC || errno == EDQUOT
                   ? fail_write(errno, err, err_size, path, "cannot create a temporary file")
                   : 1;
    const char *step;
    int rc = fill(fd, data, len, &step);
    if (rc) {
        close(fd);
        return fail_write(-rc, err, err_size, path, step);
    }
    /* a name: through /proc (any user), else AT_EMPTY_PATH (privileged) */
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    for (int attempt = 0; attempt < 100; attempt++) {
        *tmp = temp_template(dir, base);
        size_t n = strlen(*tmp);
        unsigned long r = ((unsigned long)time(NULL) * 2654435761u) ^ ((unsigned long)attempt << 7) ^
                          (unsigned long)(uintptr_t)tmp ^ (unsigned long)clock();
        for (size_t i = n - 6; i < n; i++, r /= 36)
            (*tmp)[i] = "0123456789abcdefghijklmnopqrstuvwxyz"[r % 36];
        if (linkat(AT_FDCWD, proc, AT_FDCWD, *tmp, AT_SYMLINK_FOLLOW) == 0 ||
            linkat(fd, "", AT_FDCWD, *tmp, AT_EMPTY_PATH) == 0) {
            close(fd);
            return 0;
        }
        int e = errno;
        free(*tmp);
        *tmp = NULL;
        if (e != EEXIST) {
            close(fd);
            return 1; /* no /proc, no privilege: written again, named */
        }
    }
    close(fd);
    return 1;
#else
    (void)dir, (void)base, (void)path, (void)data, (void)len, (void)tmp, (void)err,
        (void)err_size;
    return 1;
#endif
}

/* mkstemp's named temporary file (mode 0600). */
static int write_named(const char *dir, const char *base, const char *path, const void *data,
                       size_t len, char **tmp, char *err, size_t err_size)
{
    *tmp = temp_template(dir, base);
    int fd = mkstemp(*tmp);
    if (fd < 0) {
        int e = errno;
        free(*tmp);
        *tmp = NULL;
        return fail_write(e, err, err_size, path, "cannot create a temporary file");
    }
    const char *step;
    int rc = fill(fd, data, len, &step);
    if (rc == 0 && close(fd) < 0)
        rc = -errno, step = "close";
    else if (rc)
        close(fd);
    if (rc) {
        unlink(*tmp);
        free(*tmp);
        *tmp = NULL;
        return fail_write(-rc, err, err_size, path, step);
    }
    return 0;
}

/* ".BASE.tmp.PID.XXXXXX" beside path whose writer is gone: what a killed
 * run left of this very file (any folder: an /export's too). */
static void remove_dead_temps_of(const char *dir, const char *base);

int store_write_atomic(const char *path, const void *data, size_t len, char *err,
                       size_t err_size)
{
    char *dir = dir_of(path);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    char *tmp = NULL;
    remove_dead_temps_of(dir, base);
    int rc = write_unnamed(dir, base, path, data, len, &tmp, err, err_size);
    if (rc == 1)
        rc = write_named(dir, base, path, data, len, &tmp, err, err_size);
    if (rc == 0 && rename(tmp, path) < 0) {
        rc = fail_write(errno, err, err_size, path, "rename");
        unlink(tmp);
    }
    if (rc == 0) {
        /* Make the rename itself durable. */
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            if (platform_fsync(dfd) < 0 && errno != EINVAL && errno != EROFS)
                rc = fail_write(errno, err, err_size, path, "fsync of its folder");
            close(dfd);
        }
    }
    free(tmp);
    free(dir);
    return rc;
}

int store_read_file(const char *path, size_t max_size, char **data, size_t *len, char *err,
                    size_t err_size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(errno, err, err_size, path, "cannot open");
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return fail(e, err, err_size, path, "stat");
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        snprintf(err, err_size, "%s: not a regular file", path);
        return -EINVAL;
    }
    if ((unsigned long long)st.st_size > max_size) {
        close(fd);
        snprintf(err, err_size, "%s: file too large (%lld bytes, at most %zu)", path,
                 (long long)st.st_size, max_size);
        return -EFBIG;
    }
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *buf = x_malloc(cap + 1);
    for (;;) {
        if (n == cap) {
            if (cap > max_size) {
                free(buf);
                close(fd);
                snprintf(err, err_size, "%s: file too large (at most %zu bytes)", path, max_size);
                return -EFBIG;
            }
            cap *= 2;
            buf = x_realloc(buf, cap + 1);
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            free(buf);
            close(fd);
            return fail(e, err, err_size, path, "read");
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (n > max_size) {
        free(buf);
        snprintf(err, err_size, "%s: file too large (at most %zu bytes)", path, max_size);
        return -EFBIG;
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return 0;
}

/* "...tmp.PID.XXXXXX" (or the older "...tmp.XXXXXX"): mkstemp's six
 * characters at the end.  *pid: the writer's, 0 when the name has none. */
static bool is_our_temp(const char *name, long *pid)
{
    size_t n = strlen(name);
    *pid = 0;
    if (n < 12 || name[n - 7] != '.')
        return false;
    if (strncmp(name + n - 11, ".tmp.", 5) == 0)
        return true;
    /* back from the last dot over the pid's digits to ".tmp." */
    size_t i = n - 7;
    while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
        i--;
    if (i == n - 7 || i < 5 || strncmp(name + i - 5, ".tmp.", 5) != 0)
        return false;
    *pid = strtol(name + i, NULL, 10);
    return true;
}

/* The writer is gone: no such process (a pid of another machine's or a
 * recycled one errs on the side of keeping the file). */
static bool writer_gone(long pid)
{
    return pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

int store_remove_stale_temps(const char *dir, time_t older_than)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long pid;
        if (!is_our_temp(e->d_name, &pid))
            continue;
        char *path = x_asprintf("%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) &&
            (writer_gone(pid) || st.st_mtime < older_than) && unlink(path) == 0)
            removed++;
        free(path);
    }
    closedir(d);
    return removed;
}

static void remove_dead_temps_of(const char *dir, const char *base)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    size_t bl = strlen(base);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long pid;
        if (e->d_name[0] != '.' || strncmp(e->d_name + 1, base, bl) != 0 ||
            strncmp(e->d_name + 1 + bl, ".tmp.", 5) != 0 || !is_our_temp(e->d_name, &pid) ||
            !writer_gone(pid))
            continue;
        char *p = x_asprintf("%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISREG(st.st_mode))
            unlink(p);
        free(p);
    }
    closedir(d);
}
