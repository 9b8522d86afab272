/* kernels_info.c: what the compute kernels are, and how fast this machine
 * reads memory (the roofline `elmchat bench` compares decode against). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/elm.h"
#include "engine/gemm.h"
#include "engine/kernels.h"
#include "engine/threadpool.h"

const char *elm_system_info(void)
{
    static char line[320];
    bool ours = false;
    const char *arch = elm_gemm_blis_arch(&ours);
    snprintf(line, sizeof line,
             "matvec/small batches: %s (f32 bf16 f16%s; other block types: quant.c); "
             "prefill gemm (from %d f32,quantized / %d bf16,f16 tokens): %s; BLIS '%s'%s",
             elm_kernels_name(),
             strcmp(elm_kernels_name(), "avx512") == 0 ? " q8_0 q4_0" : "",
             elm_gemm_min_blis_m(ELM_DTYPE_F32),
             elm_gemm_min_blis_m(ELM_DTYPE_BF16),
             elm_gemm_large_name()[0] == 'o' ? "own AVX-512 14x32 packed kernel"
                                             : "BLIS, single-threaded per row range",
             arch,
             ours ? " (chosen by elmchat)" : getenv("BLIS_ARCH_TYPE") ? " (BLIS_ARCH_TYPE)" : "");
    return line;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct read_job {
    const float *buf;
    float sink[64]; /* keeps the sums alive; one cache line per thread */
};

static void read_task(void *arg, long b, long e, int ith)
{
    struct read_job *j = arg;
    j->sink[(ith * 16) % 64] += elm_read_sum(j->buf + b, (size_t)(e - b));
}

double elm_measure_bandwidth(int n_threads, size_t bytes)
{
    size_t n = bytes / sizeof(float) / 4096 * 4096;
    if (n == 0)
        return 0.0;
    float *buf = aligned_alloc(4096, n * sizeof *buf);
    struct elm_threadpool *pool = NULL;
    if (!buf || elm_threadpool_new(n_threads, &pool) != ELM_OK) {
        free(buf);
        return 0.0;
    }
    /* Fill with real data: untouched pages would all map the zero page. */
    for (size_t i = 0; i < n; i++)
        buf[i] = (float)(i & 1023);
    struct read_job job = {.buf = buf};
    long chunk = elm_threadpool_chunk(pool, (long)n, 8, 4096, 4096);
    double best = 0.0;
    for (int pass = 0; pass < 8; pass++) { /* best of 8: other processes share the bus */
        double t0 = now_s();
        elm_threadpool_for(pool, (long)n, chunk, read_task, &job);
        double t = now_s() - t0;
        double bw = (double)(n * sizeof *buf) / t;
        best = bw > best ? bw : best;
    }
    elm_threadpool_free(pool);
    free(buf);
    return best;
}
