/* q8q4.h: what the Q8_0 / Q4_0 kernel files share (engine-internal):
 * q8q4.c (the portable kernels and the lookup), q8q4_avx2.c, q8q4_avx512.c,
 * and what kernels.c calls of them.  The rest of the engine goes through
 * act_int8.h and kernels.h. */
#ifndef ELMCHAT_ENGINE_KERNELS_QUANT_H
#define ELMCHAT_ENGINE_KERNELS_QUANT_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/kernels/act_int8.h"

/* elm_quantize_act_ref's bytes, with AVX2 / AVX-512 (the CPU must have them). */
void elm_quantize_act_avx2(const float *x, struct elm_qact *a);
void elm_quantize_act_avx512(const float *x, struct elm_qact *a);

/* Q8_0 / Q4_0 rows x int8 activations; NULL for other types (the caller,
 * elm_q80_q40_rows, has checked that the CPU runs the set).  AVX-512 with
 * vnni uses vpdpbusd, without it AVX-512BW's vpmaddubsw; both give the same
 * bits (exact int32 block sums, the same float steps), and the tests run
 * both. */
elm_qrows_fn elm_q80_q40_rows_avx2(enum elm_dtype dtype);
elm_qrows_fn elm_q80_q40_rows_avx512(enum elm_dtype dtype, bool vnni);

/* The same for several tokens at once (act_int8.h): AVX2, and AVX-512
 * VNNI (and GFNI for Q4_0) for rows of up to 16,384 weights; NULL
 * otherwise. */
elm_qrows_multi_fn elm_q80_q40_rows_multi_avx2(enum elm_dtype dtype);
elm_qrows_multi_fn elm_q80_q40_rows_multi_avx512(enum elm_dtype dtype, int64_t cols);

/* The AArch64 ones (arch/arm/q8q4_neon.c): the rounding with NEON, rows
 * with sdot (dotprod true, the CPU must have FEAT_DotProd) or plain NEON;
 * both give the same bits.  Elsewhere: the reference rounding and NULL. */
void elm_quantize_act_neon(const float *x, struct elm_qact *a);
elm_qrows_fn elm_q80_q40_rows_neon(enum elm_dtype dtype, bool dotprod);
/* Their several-token versions (any width). */
elm_qrows_multi_fn elm_q80_q40_rows_multi_neon(enum elm_dtype dtype, bool dotprod);

/* Widen n weights (a multiple of 32) of a Q8_0 / Q4_0 row with AVX-512. */
void elm_quant_widen_avx512(const void *src, enum elm_dtype dtype, float *dst, size_t n);

#endif
