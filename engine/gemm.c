/* gemm.c: C (+)= A x W^T: the row kernels for small batches, BLIS sgemm
 * (one single-threaded call per range of rows, on our pool) for larger ones,
 * widening 16-bit and quantized weights tile by tile. */
#include "config.h"

#include "engine/gemm.h"

#include <blis.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kernels.h"
#include "engine/quant.h"
#include "engine/threadpool.h"

/* ------------------------------------------------- BLIS configuration */

/* BLIS 0.9 chooses its kernels from CPUID and falls back to the slow
 * reference ("generic") ones on CPUs it does not know, such as AMD family
 * 1Ah (Zen 5); its only override is the BLIS_ARCH_TYPE variable (a
 * configuration number), read once when BLIS initializes.  So before main
 * (single-threaded, so setenv is safe) and only if the user has not set it,
 * name the configuration this CPU's features deserve: 'skx' with AVX-512
 * (measured here 5x the generic kernels, 1.2-1.9x 'haswell' and 'zen3' at
 * M >= 128; the small batches where those win go to our own kernels). */
static bool arch_chosen;

__attribute__((constructor)) static void choose_blis_arch(void)
{
    if (getenv("BLIS_ARCH_TYPE"))
        return;
    int id = -1;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
#ifdef BLIS_CONFIG_SKX
    if (id < 0 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
        id = BLIS_ARCH_SKX;
#endif
#if defined(BLIS_CONFIG_ZEN3) && defined(BLIS_CONFIG_HASWELL)
    /* AVX2 only: BLIS knows these CPUs, unless they are AMD's newer ones. */
    if (id < 0 && __builtin_cpu_is("amd") && __builtin_cpu_supports("avx2") &&
        __builtin_cpu_supports("fma") && !__builtin_cpu_is("amdfam17h") &&
        !__builtin_cpu_is("amdfam19h") && !__builtin_cpu_is("amdfam15h") &&
        !__builtin_cpu_is("amdfam10h"))
        id = BLIS_ARCH_ZEN3;
#endif
#endif
    if (id < 0)
        return;
    char v[16];
    snprintf(v, sizeof v, "%d", id);
    arch_chosen = setenv("BLIS_ARCH_TYPE", v, 0) == 0;
}

const char *elm_gemm_blis_arch(bool *chosen_by_us)
{
    if (chosen_by_us)
        *chosen_by_us = arch_chosen;
    bli_init(); /* querying before BLIS initializes aborts in BLIS 0.9 */
    return bli_arch_string(bli_arch_query_id());
}

/* ------------------------------------------------------------- tiles */

/* 1 Mi floats (4 MiB) a thread: BLIS repacks A once per call, so a call
 * should cover a few hundred rows of W. */
#define TILE_FLOATS ((size_t)1 << 20)

bool elm_gemm_tile_init(struct elm_gemm_tile *tile, int n_threads, size_t cols_max)
{
    tile->n = n_threads;
    tile->floats = TILE_FLOATS > 64 * cols_max ? TILE_FLOATS : 64 * cols_max;
    tile->buf = calloc((size_t)n_threads, sizeof *tile->buf);
    if (!tile->buf)
        return false;
    /* Allocated on first use: an F32 model never needs them. */
    return true;
}

void elm_gemm_tile_free(struct elm_gemm_tile *tile)
{
    if (tile->buf)
        for (int i = 0; i < tile->n; i++)
            free(tile->buf[i]);
    free(tile->buf);
    tile->buf = NULL;
}

/* -------------------------------------------------------------- jobs */

struct gemm_job {
    const float *a;
    long lda, m;
    const struct elm_matrix *w;
    float *c;
    long ldc;
    bool accumulate;
    struct elm_gemm_tile *tile;
};

static void sgemm1(long m, long n, long k, const float *a, long lda, const float *b, long ldb,
                   float *c, long ldc, bool accumulate)
{
    float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(1, &rntm);
    /* BLIS never writes A or B; its typed API just lacks const. */
    bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_TRANSPOSE, m, n, k, &one, (float *)a, lda, 1,
                 (float *)b, ldb, 1, &beta, c, ldc, 1, NULL, &rntm);
}

static void rows_task(void *arg, long b, long e, int ith)
{
    (void)ith;
    const struct gemm_job *j = arg;
    elm_matmul_rows(j->w, j->a, j->lda, (int)j->m, j->c + b, j->ldc, b, e, j->accumulate);
}

static void blis_task(void *arg, long b, long e, int ith)
{
    const struct gemm_job *j = arg;
    const struct elm_matrix *w = j->w;
    long cols = (long)w->cols;
    if (w->dtype == ELM_DTYPE_F32) {
        sgemm1(j->m, e - b, cols, j->a, j->lda, (const float *)w->data + (size_t)b * cols, cols,
               j->c + b, j->ldc, j->accumulate);
        return;
    }
    float **buf = &j->tile->buf[ith];
    if (!*buf) {
        *buf = aligned_alloc(64, j->tile->floats * sizeof(float));
        if (!*buf) { /* out of memory: the row kernels need no scratch */
            elm_matmul_rows(w, j->a, j->lda, (int)j->m, j->c + b, j->ldc, b, e, j->accumulate);
            return;
        }
    }
    long step = (long)(j->tile->floats / (size_t)cols);
    size_t row_bytes = elm_row_size(w->dtype, w->cols);
    for (long r = b; r < e; r += step) {
        long n = e - r < step ? e - r : step;
        elm_to_f32((const char *)w->data + (size_t)r * row_bytes, w->dtype, *buf,
                   (size_t)n * (size_t)cols);
        sgemm1(j->m, n, cols, j->a, j->lda, *buf, cols, j->c + r, j->ldc, j->accumulate);
    }
}

void elm_gemm(const float *a, long lda, long m, const struct elm_matrix *w, float *c, long ldc,
              bool accumulate, struct elm_threadpool *pool, struct elm_gemm_tile *tile)
{
    struct gemm_job job = {.a = a, .lda = lda, .m = m, .w = w, .c = c, .ldc = ldc,
                           .accumulate = accumulate, .tile = tile};
    long rows = (long)w->rows;
    if (m < ELM_GEMM_MIN_BLIS_M) {
        /* Ranges of 16 rows keep each thread's outputs on its own cache lines. */
        long chunk = elm_threadpool_chunk(pool, rows, 4, 16, 64);
        elm_threadpool_for(pool, rows, chunk, rows_task, &job);
    } else {
        long chunk = elm_threadpool_chunk(pool, rows, 2, 16, 256);
        elm_threadpool_for(pool, rows, chunk, blis_task, &job);
    }
}
