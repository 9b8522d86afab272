/* threadpool.h: a small persistent pool of compute threads (engine-internal).
 *
 * threadpool_run(pool, fn, arg) calls fn(arg, ith, nth) once on each of the
 * nth threads (the caller is thread 0) and returns when all have finished.
 * One caller at a time: a pool belongs to one elm_ctx.
 */
#ifndef ELMCHAT_ENGINE_THREADPOOL_H
#define ELMCHAT_ENGINE_THREADPOOL_H

#include <stdbool.h>

#include "engine/elm.h"

struct elm_threadpool;
typedef void (*elm_task_fn)(void *arg, int ith, int nth);

/* n_threads >= 1 (the caller counts as one).  *out owned. */
elm_status elm_threadpool_new(int n_threads, struct elm_threadpool **out);
void elm_threadpool_free(struct elm_threadpool *pool);
int elm_threadpool_size(const struct elm_threadpool *pool);
void elm_threadpool_run(struct elm_threadpool *pool, elm_task_fn fn, void *arg);

/* Whether idle workers spin before they sleep.  Spinning makes the many
 * small jobs of a decode step cheap; it must be off while BLIS's own threads
 * run (a prefill), or the two sets of threads fight for the cores. */
void elm_threadpool_set_spin(struct elm_threadpool *pool, bool spin);

/* The part [*begin, *end) of n items that thread ith of nth works on,
 * rounded to multiples of align. */
void elm_split(long n, int ith, int nth, long align, long *begin, long *end);

#endif
