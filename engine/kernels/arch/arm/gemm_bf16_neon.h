/* gemm_bf16_neon.h: the prefill GEMM for BF16 weights on AArch64 CPUs with
 * FEAT_BF16 (Apple M2 and later, Neoverse V1/V2/N2, Graviton 3/4, Cortex-
 * A510/A710 and later): bfmmla multiplies a 2 x 4 tile of bf16 (two
 * tokens) by a 4 x 2 one (two weight rows) into four f32 sums.  As on x86
 * (gemm_bf16_avx512.h) the activations are rounded to bf16 (round to
 * nearest even, elm_f32_to_bf16's bits) and the sums stay f32; the error
 * against the float64 reference is measured in tests/engine/test-gemm-bf16.c.
 * Its speed is not measured here (no ARM hardware).  Engine-internal. */
#ifndef ELMCHAT_ENGINE_GEMM_BF16_NEON_H
#define ELMCHAT_ENGINE_GEMM_BF16_NEON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/kernels/matrix.h"

#define ELM_GBF16N_MR 8   /* tokens per micro-tile */
#define ELM_GBF16N_NR 32  /* weight rows per packed panel (four 8-row micro-tiles) */
#define ELM_GBF16N_KC 512 /* columns per packed panel: 32 KiB of W */

/* True when this CPU has FEAT_BF16, a NEON kernel set is in use, the
 * compiler has the bf16 intrinsics, and ELM_GEMM_BF16 is not "off". */
bool elm_gemm_bf16_neon_available(void);
/* Halves (bf16) of the packed A of m tokens by k columns. */
size_t elm_gemm_bf16_neon_apack_halves(long m, long k);
/* Tokens [t0, t0 + MR) of A[m, k] rounded to bf16 into their panel of ap
 * (the whole packed A: the panel starts at half t0 * ceil(k / 4) * 4). */
void elm_gemm_bf16_neon_pack_a(const float *a, long lda, long m, long k, long t0, uint16_t *ap);
/* C[:, r0..r1) (+)= A W[r0..r1)^T, W BF16, from the packed A; wp: a W panel
 * (KC / 4 x NR x 4 halves, 16-byte aligned: gemm.c's f32 panel, which holds it). */
void elm_gemm_bf16_neon_rows(const uint16_t *apack, long m, const struct elm_matrix *w, long r0,
                             long r1, float *c, long ldc, bool accumulate, uint16_t *wp);

#endif
