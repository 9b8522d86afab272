/* session_lock.c: a session's lock file (session_lock.h).  The one place
 * that knows flock() and fcntl(). */
#include "config.h"

#include "src/conversation/session_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef HAVE_FLOCK
#include <sys/file.h>
#endif

#include "src/store/paths.h"
#include "src/conversation/session.h"
#include "src/base/xalloc.h"

static char *lock_path(const char *name)
{
    if (!session_name_valid(name))
        return NULL;
    char *dir = paths_dir(PATHS_DATA, "sessions");
    paths_mkdir_p(dir);
    char *path = x_asprintf("%s/.%s.lock", dir, name);
    free(dir);
    return path;
}

/* 0, or -errno (EWOULDBLOCK: held elsewhere).  flock() locks conflict
 * between open file descriptions, even in one process (a second open of a
 * session in the same program is refused too); fcntl() locks belong to the
 * process, so the fallback refuses only other processes. */
static int try_lock(int fd)
{
#ifdef HAVE_FLOCK
    if (flock(fd, LOCK_EX | LOCK_NB) == 0)
        return 0;
    return errno == EWOULDBLOCK ? -EWOULDBLOCK : -errno;
#else
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (fcntl(fd, F_SETLK, &fl) == 0)
        return 0;
    return errno == EACCES || errno == EAGAIN ? -EWOULDBLOCK : -errno;
#endif
}

static long read_pid(int fd)
{
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    long pid = strtol(buf, NULL, 10);
    return pid > 0 ? pid : 0;
}

int session_lock(const char *name, long *holder)
{
    *holder = 0;
    char *path = lock_path(name);
    if (!path)
        return SESSION_LOCK_NONE;
    /* The owner removes the file as it unlocks: a lock taken on a file
     * that was removed (or replaced) meanwhile guards nothing, so check
     * that the path still names what was locked, and try again. */
    for (int attempt = 0; attempt < 20; attempt++) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
            break;
        int rc = try_lock(fd);
        if (rc == -EWOULDBLOCK) {
            *holder = read_pid(fd);
            close(fd);
            free(path);
            return SESSION_LOCK_HELD;
        }
        if (rc != 0) {
            close(fd);
            break;
        }
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
            a.st_ino == b.st_ino) {
            char pid[32];
            int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
            if (ftruncate(fd, 0) == 0 && pwrite(fd, pid, (size_t)n, 0) != n) {
                /* the pid is only for the message: a lock without it holds */
            }
            free(path);
            return fd;
        }
        close(fd);
    }
    free(path);
    return SESSION_LOCK_NONE;
}

bool session_lock_exists(const char *name)
{
    char *path = lock_path(name);
    struct stat st;
    bool there = path && lstat(path, &st) == 0;
    free(path);
    return there;
}

void session_unlock(const char *name, int lock)
{
    if (lock < 0)
        return;
    /* removed while still held: whoever waits on it tries again */
    char *path = lock_path(name);
    if (path)
        unlink(path);
    free(path);
    close(lock);
}
