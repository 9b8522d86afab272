/* store.h: atomic file writes (docs/DESIGN.md §7).  Any thread. */
#ifndef ELMCHAT_SRC_STORE_H
#define ELMCHAT_SRC_STORE_H

#include <stddef.h>
#include <time.h>

/* Replace path with data: write a temp file in the same folder (mode 0600),
 * fsync it, rename it over path, fsync the folder.  A crash at any moment
 * leaves the old file or the new one.  The temp file has no name while it
 * is written where the system has unnamed files (Linux's O_TMPFILE), so a
 * killed writer leaves nothing; else it is ".BASE.tmp.PID.XXXXXX", and each
 * write first removes those of path whose writer is gone.  0 or -errno; err
 * is "cannot write PATH: reason (step)"; on failure the temp file is
 * removed and path is untouched. */
int store_write_atomic(const char *path, const void *data, size_t len, char *err,
                       size_t err_size);
/* Remove the temporary files a killed writer left in dir: ours by name
 * ("*.tmp.PID.XXXXXX", as store_write_atomic and the KV snapshots make
 * them) whose writer is no longer running, or any of ours last modified
 * before older_than.  The number removed. */
int store_remove_stale_temps(const char *dir, time_t older_than);
/* Read a whole file (owned, NUL added; *len excludes it).  0, -errno, or
 * -EFBIG when larger than max_size. */
int store_read_file(const char *path, size_t max_size, char **data, size_t *len, char *err,
                    size_t err_size);

#endif
