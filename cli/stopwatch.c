/* stopwatch.c: the benchmarks' clocks. */
#include "config.h"

#include "cli/stopwatch.h"

#include <time.h>

static double seconds(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double wall_seconds(void)
{
    return seconds(CLOCK_MONOTONIC);
}

/* On a shared machine it says what the work cost when the wall clock is noisy. */
double cpu_seconds(void)
{
    return seconds(CLOCK_PROCESS_CPUTIME_ID);
}
