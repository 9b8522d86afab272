/* threadpool.h: a small persistent pool of compute threads (engine-internal).
 *
 * elm_threadpool_for(pool, n, chunk, fn, arg) hands out the ranges
 * [0, chunk), [chunk, 2 chunk) ... of n items to the calling thread and to
 * the pool's workers, first come first served, and returns when every range
 * is done.  A worker the OS has not scheduled (a busy machine) never delays
 * a job: the others take its ranges.  One caller at a time: a pool belongs
 * to one elm_ctx.
 *
 * Idle workers spin for a few tens of microseconds (a decode step hands
 * out dozens of small jobs), then sleep (a futex on Linux), so between
 * tokens they use no CPU.
 */
#ifndef ELMCHAT_ENGINE_THREADPOOL_H
#define ELMCHAT_ENGINE_THREADPOOL_H

#include <stdbool.h>

#include "engine/elm.h"

struct elm_threadpool;
/* Items [begin, end); ith is 0 for the caller, 1 .. n_threads - 1 for the
 * workers (an index into per-thread scratch). */
typedef void (*elm_range_fn)(void *arg, long begin, long end, int ith);

/* n_threads >= 1 (the caller counts as one).  *out owned. */
elm_status elm_threadpool_new(int n_threads, struct elm_threadpool **out);
void elm_threadpool_free(struct elm_threadpool *pool);
int elm_threadpool_size(const struct elm_threadpool *pool);
void elm_threadpool_for(struct elm_threadpool *pool, long n, long chunk, elm_range_fn fn,
                        void *arg);

/* The same, but each thread first takes the chunks of its own stretch in
 * order, front to back (thread i of T: chunks [C i / T, C (i + 1) / T) of
 * the C chunks), then helps the others from the backs of theirs: one
 * unbroken stream of addresses per thread where the work is a pass over
 * memory (decode's rows). */
void elm_threadpool_for_streams(struct elm_threadpool *pool, long n, long chunk,
                                elm_range_fn fn, void *arg);

/* A chunk size for n items over the pool: about `per_thread` ranges per
 * thread, a multiple of align, at least min_chunk. */
long elm_threadpool_chunk(const struct elm_threadpool *pool, long n, int per_thread, long align,
                          long min_chunk);


#endif
