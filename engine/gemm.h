/* gemm.h: C (+)= A x W^T through BLIS (engine-internal). */
#ifndef ELMCHAT_ENGINE_GEMM_H
#define ELMCHAT_ENGINE_GEMM_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/model.h"

struct elm_threadpool;

/* Scratch for widening 16-bit weights, reused across calls (one per ctx). */
struct elm_gemm_tile {
    float *buf;    /* owned */
    size_t floats; /* capacity */
};

/* C[m, W.rows] (+)= A[m, W.cols] x W^T, row strides lda and ldc (floats).
 * F32 weights go to BLIS as they are mapped; BF16/F16 weights are widened
 * a block of rows at a time into tile (with the pool's threads), so no f32
 * copy of a whole matrix ever exists.  n_threads: BLIS threads. */
void elm_gemm(const float *a, long lda, long m, const struct elm_matrix *w, float *c, long ldc,
              bool accumulate, int n_threads, struct elm_threadpool *pool,
              struct elm_gemm_tile *tile);

#endif
