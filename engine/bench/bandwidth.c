/* bandwidth.c: how fast this machine reads memory, the roofline of decode
 * (elm_bench.h): a buffer read by the engine's thread pool, pass by pass. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine/base/platform.h"
#include "engine/elm_bench.h"
#include "engine/kernels/kernels.h"
#include "engine/kernels/threadpool.h"

/* ------------------------------------------------------ read bandwidth */

/* Each thread's sum on its own cache line keeps the reads alive. */
#define SINK_STRIDE 16

struct elm_bw_probe {
    float *buf;
    size_t n; /* floats */
    float *sink; /* [n_threads * SINK_STRIDE] */
    struct elm_threadpool *pool;
    long chunk;
};

static void read_task(void *arg, long b, long e, int ith)
{
    struct elm_bw_probe *p = arg;
    p->sink[ith * SINK_STRIDE] += elm_read_sum(p->buf + b, (size_t)(e - b));
}

/* Real data: untouched pages would all map the zero page. */
static void fill_task(void *arg, long b, long e, int ith)
{
    (void)ith;
    struct elm_bw_probe *p = arg;
    for (long i = b; i < e; i++)
        p->buf[i] = (float)(i & 1023);
}

elm_bw_probe *elm_bw_probe_new(int n_threads, size_t bytes)
{
    size_t n = bytes / sizeof(float) / 4096 * 4096;
    if (n == 0)
        return NULL;
    if (n_threads < 1)
        n_threads = 1;
    struct elm_bw_probe *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->n = n;
    /* Default pages (no MADV_HUGEPAGE), like the model's file mappings:
     * huge pages read 5-8 % faster here, which decode could not use. */
    p->buf = aligned_alloc(4096, n * sizeof *p->buf);
    p->sink = aligned_alloc(64, (size_t)n_threads * SINK_STRIDE * sizeof *p->sink);
    if (!p->buf || !p->sink || elm_threadpool_new(n_threads, &p->pool) != ELM_OK) {
        elm_bw_probe_free(p);
        return NULL;
    }
    memset(p->sink, 0, (size_t)n_threads * SINK_STRIDE * sizeof *p->sink);
    p->chunk = elm_threadpool_chunk(p->pool, (long)n, 8, 4096, 4096);
    elm_threadpool_for(p->pool, (long)n, p->chunk, fill_task, p);
    return p;
}

void elm_bw_probe_run(elm_bw_probe *p, int passes, double *bps)
{
    for (int i = 0; i < passes; i++) {
        double t0 = elm_now_seconds();
        elm_threadpool_for(p->pool, (long)p->n, p->chunk, read_task, p);
        double t = elm_now_seconds() - t0;
        bps[i] = t > 0 ? (double)(p->n * sizeof *p->buf) / t : 0.0;
    }
}

void elm_bw_probe_free(elm_bw_probe *p)
{
    if (!p)
        return;
    elm_threadpool_free(p->pool);
    free(p->sink);
    free(p->buf);
    free(p);
}
