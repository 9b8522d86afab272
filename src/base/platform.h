/* platform.h: the application's calls that differ between systems, each
 * with a Linux branch, a macOS branch and a POSIX fallback (the engine's
 * are in engine/base/).  ./configure --enable-portable-fallbacks makes Linux
 * take the fallbacks, so CI runs them (.ci/stage-portable). */
#ifndef ELMCHAT_PLATFORM_H
#define ELMCHAT_PLATFORM_H

/* Remember argv[0] (main() calls this first): the fallback of
 * platform_exe_path(). */
void platform_set_argv0(const char *argv0);

/* The running program's absolute path, malloc'd; NULL when unknown.
 * Linux: /proc/self/exe.  macOS: _NSGetExecutablePath.  Else: argv[0]
 * made absolute, through $PATH when it names no folder. */
char *platform_exe_path(void);

/* fsync(fd) that reaches the disk: macOS's fsync leaves the data in the
 * drive's cache, F_FULLFSYNC does not (fsync when the file system does not
 * support it).  0, or -1 with errno. */
int platform_fsync(int fd);

/* Seconds on the monotonic clock (differences only): the one clock of
 * src/, ui/ and cli/ (the engine's is engine/base/platform.h). */
double platform_now(void);

#endif
