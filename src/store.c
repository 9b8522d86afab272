/* store.c: atomic replace of a file: temp file, fsync, rename, fsync dir. */
#include "config.h"

#include "src/store.h"

#include <errno.h>
#include <stdbool.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/platform.h"
#include "src/xalloc.h"

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

int store_write_atomic(const char *path, const void *data, size_t len, char *err,
                       size_t err_size)
{
    char *dir = dir_of(path);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    /* Hidden, same folder (so rename is atomic), unique per attempt; the
     * pid tells a later start whether its writer still lives. */
    char *tmp = x_asprintf("%s/.%s.tmp.%ld.XXXXXX", dir, base, (long)getpid());
    int rc = 0;
    int fd = mkstemp(tmp); /* mode 0600 */
    if (fd < 0) {
        rc = fail(errno, err, err_size, path, "cannot create a temporary file");
        goto out;
    }
    if (fchmod(fd, 0600) < 0) {
        rc = fail(errno, err, err_size, tmp, "chmod");
        goto bad;
    }
    const char *p = data;
    size_t left = len;
    while (left) {
        ssize_t n = write(fd, p, left);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            rc = fail(errno, err, err_size, tmp, "write");
            goto bad;
        }
        p += n;
        left -= (size_t)n;
    }
    if (platform_fsync(fd) < 0) {
        rc = fail(errno, err, err_size, tmp, "fsync");
        goto bad;
    }
    if (close(fd) < 0) {
        fd = -1;
        rc = fail(errno, err, err_size, tmp, "close");
        goto bad;
    }
    fd = -1;
    if (rename(tmp, path) < 0) {
        rc = fail(errno, err, err_size, path, "rename");
        goto bad;
    }
    /* Make the rename itself durable. */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        if (platform_fsync(dfd) < 0 && errno != EINVAL && errno != EROFS)
            rc = fail(errno, err, err_size, dir, "fsync");
        close(dfd);
    }
    goto out;
bad:
    if (fd >= 0)
        close(fd);
    unlink(tmp);
out:
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
