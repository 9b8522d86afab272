/* test-threadpool.c: the compute pool's wait and wake (engine/kernels/
 * threadpool.c, engine/base/wait_word.c): every range of many small jobs
 * runs exactly once; jobs after the workers went to sleep wake them; an idle
 * pool uses no CPU (issue 51: off Linux it spun, 1.98 s of CPU in 2 s idle);
 * a job storm ends in time (under qemu-user the spin made a 2-thread reply
 * take minutes).  Built with --enable-portable-fallbacks this tests the
 * condition-variable branch a Mac takes. */
#include "config.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "engine/kernels/threadpool.h"
#include "tests/lib/tap.h"

typedef void (*for_fn)(struct elm_threadpool *, long, long, elm_range_fn, void *);

struct job {
    atomic_int *hits; /* [n]: how often each item ran */
    atomic_int bad_ith;
    int n_threads;
    /* streams: each thread's ranges within its own stretch come in order */
    long n, chunk;
    long last_own[8]; /* per thread: the end of its last range in its stretch */
    atomic_int out_of_order;
};

static void mark(void *arg, long begin, long end, int ith)
{
    struct job *j = arg;
    if (ith < 0 || ith >= j->n_threads) {
        atomic_fetch_add(&j->bad_ith, 1);
        return;
    }
    for (long i = begin; i < end; i++)
        atomic_fetch_add(&j->hits[i], 1);
    /* only this thread writes last_own[ith] */
    long chunks = (j->n + j->chunk - 1) / j->chunk;
    long lo = chunks * ith / j->n_threads * j->chunk, hi = chunks * (ith + 1) / j->n_threads * j->chunk;
    if (begin >= lo && begin < hi) {
        if (begin < j->last_own[ith])
            atomic_fetch_add(&j->out_of_order, 1);
        j->last_own[ith] = end;
    }
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* Run `jobs` jobs of n items with `run`; true when every item ran once per
 * job (and, for streams, each thread met its own stretch front to back). */
static bool run_jobs_with(for_fn run, struct elm_threadpool *pool, int jobs, long n, long chunk)
{
    struct job j = {.hits = calloc((size_t)n, sizeof *j.hits), .n_threads = elm_threadpool_size(pool),
                    .n = n, .chunk = chunk};
    if (!j.hits)
        bail_out("out of memory");
    atomic_init(&j.bad_ith, 0);
    atomic_init(&j.out_of_order, 0);
    for (int k = 0; k < jobs; k++) {
        for (int t = 0; t < 8; t++)
            j.last_own[t] = 0;
        run(pool, n, chunk, mark, &j);
    }
    bool good = atomic_load(&j.bad_ith) == 0;
    if (run == elm_threadpool_for_streams)
        good = good && atomic_load(&j.out_of_order) == 0;
    for (long i = 0; i < n; i++)
        good = good && atomic_load(&j.hits[i]) == jobs;
    free(j.hits);
    return good;
}

static bool run_jobs(struct elm_threadpool *pool, int jobs, long n, long chunk)
{
    return run_jobs_with(elm_threadpool_for, pool, jobs, n, chunk);
}

static bool run_streams(struct elm_threadpool *pool, int jobs, long n, long chunk)
{
    return run_jobs_with(elm_threadpool_for_streams, pool, jobs, n, chunk);
}

/* Sleep for seconds (the idle time is what is measured here). */
static void idle(double seconds)
{
    double end = now() + seconds;
    for (double t = now(); t < end; t = now()) {
        struct timespec ts = {(time_t)(end - t), (long)((end - t - (double)(time_t)(end - t)) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

int main(void)
{
    plan_lazy();
    diag("portable fallbacks: %s", ELM_PORTABLE_FALLBACKS ? "forced" : "off");

    for (int nt = 2; nt <= 4; nt += 2) {
        struct elm_threadpool *pool = NULL;
        if (!ok(elm_threadpool_new(nt, &pool) == ELM_OK, "pool of %d threads", nt))
            continue;
        is_int(elm_threadpool_size(pool), nt, "its size");
        ok(run_jobs(pool, 2000, 37, 1), "%d threads: 2000 jobs of 37 ranges, each item once", nt);
        ok(run_jobs(pool, 50, 100000, 1000), "%d threads: 50 jobs of 100 ranges", nt);
        /* Past the spin: every worker is asleep, the next jobs must wake them. */
        idle(0.05);
        ok(run_jobs(pool, 3, 1000, 10), "%d threads: jobs after the workers slept", nt);
        /* Streams: own stretch first, in order, then the others' ends. */
        ok(run_streams(pool, 2000, 37, 1), "%d threads, streams: 2000 jobs of 37 ranges, each item "
           "once, each stretch met in order by its owner", nt);
        ok(run_streams(pool, 50, 100000, 1000), "%d threads, streams: 50 jobs of 100 ranges", nt);
        ok(run_streams(pool, 500, 3, 1), "%d threads, streams: fewer ranges than threads", nt);
        ok(run_streams(pool, 500, 1001, 64), "%d threads, streams: a last range cut short", nt);
        idle(0.05);
        ok(run_streams(pool, 3, 1000, 10),
           "%d threads, streams: after the workers slept (the caller takes over their stretches)",
           nt);
        elm_threadpool_free(pool);
    }

    /* A storm of tiny jobs (a decode step's shape) ends in time: the wait is
     * neither a yield storm nor a spin that starves the caller. */
    struct elm_threadpool *pool = NULL;
    if (!ok(elm_threadpool_new(2, &pool) == ELM_OK, "pool of 2 threads"))
        return done_testing();
    double t0 = now();
    ok(run_jobs(pool, 20000, 4, 1), "20000 jobs of 4 ranges");
    double storm = now() - t0;
    diag("20000 jobs: %.3f s", storm);
    ok(storm < 60, "20000 tiny jobs end within 60 s (took %.3f s)", storm);

    /* Idle: the workers sleep.  2 s without jobs cost well under 0.2 s of
     * CPU (a spinning worker costs the whole 2 s). */
    double c0 = cpu_seconds(), w0 = now();
    idle(2.0);
    double cpu = cpu_seconds() - c0, wall = now() - w0;
    diag("idle 2-thread pool: %.3f s CPU in %.3f s", cpu, wall);
    ok(cpu < 0.2, "an idle 2-thread pool uses no CPU (%.3f s in %.3f s)", cpu, wall);
    elm_threadpool_free(pool);
    return done_testing();
}
