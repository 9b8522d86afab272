/* gemm_bf16_avx512.h: the prefill GEMM for BF16 weights on CPUs with
 * AVX512_BF16 (Zen 4/5, Sapphire Rapids and later): vdpbf16ps multiplies
 * pairs of bf16 and adds them to f32, twice the work of an FMA per
 * instruction.  The activations are rounded to bf16 (round to nearest
 * even), as llama.cpp does for bf16 weights; the sums stay f32.  The error
 * against the float64 reference is measured in tests/engine/test-gemm-bf16.c.
 * Engine-internal. */
#ifndef ELMCHAT_ENGINE_GEMM_BF16_AVX512_H
#define ELMCHAT_ENGINE_GEMM_BF16_AVX512_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/kernels/matrix.h"

#define ELM_GBF16_MR 14  /* tokens per micro-tile */
#define ELM_GBF16_NR 32  /* weight rows per micro-tile (two vectors) */
#define ELM_GBF16_KC 512 /* columns per packed panel (256 pairs): 32 KiB of W */

/* True when this CPU has AVX512_BF16, the avx512 kernel set is in use, and
 * vdpbf16ps does more work per second than an FMA here (measured once: not
 * everywhere it does; a test hook may decide instead: test_hooks.h). */
bool elm_gemm_bf16_available(void);
/* That measurement: vdpbf16ps flops over FMA flops (0: no AVX512_BF16; -1:
 * not measured, a test hook decided). */
double elm_gemm_bf16_measured_ratio(void);
/* 32-bit words of the packed A of m tokens by k columns (pairs of bf16). */
size_t elm_gemm_bf16_apack_words(long m, long k);
/* Tokens [t0, t0 + MR) of A[m, k] rounded to bf16 into their panel of ap
 * (the whole packed A: the panel starts at word t0 * ceil(k / 2)). */
void elm_gemm_bf16_pack_a(const float *a, long lda, long m, long k, long t0, uint32_t *ap);
/* C[:, r0..r1) (+)= A W[r0..r1)^T, W BF16, from the packed A; wp: a W panel
 * (64-byte aligned). */
void elm_gemm_bf16_rows(const uint32_t *apack, long m, const struct elm_matrix *w, long r0,
                        long r1, float *c, long ldc, bool accumulate, uint32_t *wp);

#endif
