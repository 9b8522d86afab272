/* stopwatch.h: the clocks the benchmarks read (bench, bench --chat). */
#ifndef ELMCHAT_SRC_STOPWATCH_H
#define ELMCHAT_SRC_STOPWATCH_H

/* Seconds on the monotonic clock (differences only). */
double wall_seconds(void);
/* CPU seconds of the whole process, every thread. */
double cpu_seconds(void);

#endif
