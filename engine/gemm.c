/* gemm.c: C (+)= A x W^T through BLIS, widening 16-bit weights tile by tile. */
#include "config.h"

#include "engine/gemm.h"

#include <blis.h>

#include "engine/kernels.h"
#include "engine/quant.h"
#include "engine/threadpool.h"

struct widen_job {
    const struct elm_matrix *w;
    long r0, rows;
    float *dst;
};

static void widen_task(void *arg, int ith, int nth)
{
    const struct widen_job *j = arg;
    long b, e;
    elm_split(j->rows, ith, nth, 8, &b, &e);
    size_t cols = (size_t)j->w->cols, row_bytes = elm_row_size(j->w->dtype, j->w->cols);
    const char *src = (const char *)j->w->data + ((size_t)j->r0 + (size_t)b) * row_bytes;
    if (e > b)
        elm_to_f32(src, j->w->dtype, j->dst + (size_t)b * cols, (size_t)(e - b) * cols);
}

static void sgemm(long m, long n, long k, const float *a, long lda, const float *b, long ldb,
                  float *c, long ldc, bool accumulate, int n_threads)
{
    float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(n_threads, &rntm);
    /* BLIS never writes A or B; its typed API just lacks const. */
    bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_TRANSPOSE, m, n, k, &one, (float *)a, lda, 1,
                 (float *)b, ldb, 1, &beta, c, ldc, 1, NULL, &rntm);
}

void elm_gemm(const float *a, long lda, long m, const struct elm_matrix *w, float *c, long ldc,
              bool accumulate, int n_threads, struct elm_threadpool *pool,
              struct elm_gemm_tile *tile)
{
    long rows = (long)w->rows, cols = (long)w->cols;
    if (w->dtype == ELM_DTYPE_F32) {
        sgemm(m, rows, cols, a, lda, w->data, cols, c, ldc, accumulate, n_threads);
        return;
    }
    long step = (long)(tile->floats / (size_t)cols) / 16 * 16;
    if (step < 1)
        step = 1;
    for (long r0 = 0; r0 < rows; r0 += step) {
        long n = rows - r0 < step ? rows - r0 : step;
        struct widen_job job = {.w = w, .r0 = r0, .rows = n, .dst = tile->buf};
        elm_threadpool_run(pool, widen_task, &job);
        sgemm(m, n, cols, a, lda, tile->buf, cols, c + r0, ldc, accumulate, n_threads);
    }
}
