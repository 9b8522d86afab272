/* gemm_int8.h: block-quantized weights x int8 activations for batches
 * (prefill), engine-internal.
 *
 * The same rule as decode (act_int8.h): every activation row is rounded
 * to int8 blocks of 32, every weight sub-block meets it in an exact integer
 * dot product, then the float scales.  So a prompt gives the numbers that
 * feeding it token by token gives, up to the order of float additions.
 *
 * Weights are repacked a panel of NR rows at a time into unsigned bytes u
 * (w = s * (u - bias) per sub-block for Q8_0, Q4_0, Q6_K; w = s * u + o
 * for Q4_K, Q5_K), four consecutive columns of a row in one 32-bit lane:
 * one vpdpbusd then adds four products for each of 16 rows. */
#ifndef ELMCHAT_ENGINE_GEMM_INT8_H
#define ELMCHAT_ENGINE_GEMM_INT8_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/kernels/matrix.h"
#include "engine/kernels/act_int8.h"
#include "engine/kernels/gemm_int8_tiles.h" /* ELM_GI8_MR, ELM_GI8_NR */

/* True when this CPU and the kernel set in use run it for dtype (AVX-512
 * with VNNI; Q8_0, Q4_0, Q4_K, Q5_K, Q6_K) and k suits it. */
bool elm_gemm_i8_available(enum elm_dtype dtype, long k);
/* The kernel in use ("AVX-512 VNNI 4x32", "AVX2 4x8"), NULL without one. */
const char *elm_gemm_i8_name(void);
/* Bytes of the packed activations of m tokens of k columns, and of one
 * thread's weight panel and scratch. */
size_t elm_gemm_i8_apack_bytes(enum elm_dtype dtype, long m, long k);
size_t elm_gemm_i8_wpack_bytes(enum elm_dtype dtype, long k);
/* Pack tokens [t0, t0 + MR) of the rounded activations qa[m] into the
 * whole packed A at ap (t0 a multiple of MR). */
void elm_gemm_i8_pack_a(enum elm_dtype dtype, const struct elm_qact *qa, long m, long t0,
                        void *ap);
/* C[:, r0..r1) (+)= A W[r0..r1)^T from the packed A; wp: one thread's
 * scratch (elm_gemm_i8_wpack_bytes, 64-byte aligned). */
void elm_gemm_i8_rows(const void *apack, long m, const struct elm_matrix *w, long r0, long r1,
                      float *c, long ldc, bool accumulate, void *wp);

#endif
