/* platform.c: CPU count, thread priority and the clock (platform.h). */
#include "config.h"

#include "engine/base/platform.h"

#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "engine/elm.h"

#ifdef __linux__
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#endif

int elm_cpu_count(void)
{
#if defined(__linux__) && !ELM_PORTABLE_FALLBACKS
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (n < 4096 ? (int)n : 4096) : 1;
}

bool elm_thread_lower_priority(int inc)
{
#ifdef __linux__
    /* Not a fallback matter: the other branch does nothing, so Linux keeps
     * its nice with --enable-portable-fallbacks (the latency test checks it). */
    if (inc <= 0)
        return false;
    id_t tid = (id_t)syscall(SYS_gettid);
    errno = 0;
    int base = getpriority(PRIO_PROCESS, tid);
    int v = (errno ? 0 : base) + inc;
    return setpriority(PRIO_PROCESS, tid, v > 19 ? 19 : v) == 0;
#else
    (void)inc;
    return false;
#endif
}

double elm_now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
