/* stopwatch.c: the benchmarks' clocks. */
#include "config.h"

#include "cli/stopwatch.h"

#include <time.h>

#include "src/base/platform.h"

double wall_seconds(void)
{
    return platform_now();
}

/* On a shared machine it says what the work cost when the wall clock is noisy. */
double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
