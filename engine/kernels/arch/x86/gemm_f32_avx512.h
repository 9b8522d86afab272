/* gemm_f32_avx512.h: our own packed AVX-512 SGEMM for prefill (engine-internal). */
#ifndef ELMCHAT_ENGINE_GEMM_AVX512_H
#define ELMCHAT_ENGINE_GEMM_AVX512_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/kernels/matrix.h"

#define ELM_GEMM512_MR 14  /* tokens per micro-tile */
#define ELM_GEMM512_NR 32  /* weight rows per micro-tile (two vectors) */
#define ELM_GEMM512_KC 256 /* columns per packed panel: 32 KiB of W */

/* True when this CPU runs it (the avx512 kernel set is in use). */
bool elm_gemm512_available(void);
/* Floats of the packed A of m tokens by k columns, and of a W panel. */
size_t elm_gemm512_apack_floats(long m, long k);
size_t elm_gemm512_wpack_floats(void);
/* Pack tokens [t0, t0 + MR) of A[m, k] into ap (the panel at t0 * k of the
 * whole packed A). */
void elm_gemm512_pack_a(const float *a, long lda, long m, long k, long t0, float *ap);
/* C[:, r0..r1) (+)= A W[r0..r1)^T from the packed A.  wp: a W panel
 * (64-byte aligned); row: scratch of 32 * KC floats (widening). */
void elm_gemm512_rows(const float *apack, long m, const struct elm_matrix *w, long r0, long r1,
                      float *c, long ldc, bool accumulate, float *wp, float *row);

#endif
