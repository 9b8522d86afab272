/* act_int8.h: activations rounded to int8 for the integer dot products of
 * the block types (engine-internal).
 *
 * Decode with Q8_0, Q4_0 and the K-quants is llama.cpp's scheme: the
 * activation vector x is quantized once per matrix-vector product, in blocks
 * of 32, and each weight block meets it as an int8 x int8 (or uint8 x int8)
 * dot product: exact integers, one float scale per pair of blocks.  The
 * rounding of x is the only difference from the f32 path; it is defined
 * here exactly so that every kernel set (generic, avx2, avx512) gets the
 * same integers and the tests can emulate it:
 *
 *   amax = max |x[i]| over the block;  d = f16(amax / 127)  (0 for a zero block)
 *   q[i] = round-half-to-even(x[i] * (127 / amax))         (in [-127, 127])
 *
 * f16() rounds to the nearest IEEE half (ties to even), as llama.cpp
 * stores the scale of its Q8_0 activation blocks: so our Q4_0 decode can
 * be checked against llama.cpp's to a few 1e-6 (tests/engine/test-llamacpp.sh).
 * A scale beyond the half range (amax > 8.3e6) stays f32.
 *
 * A block whose amax is so small that 127 / amax overflows (amax below
 * 127 / FLT_MAX, about 3.7e-37: denormals and the smallest normals) counts
 * as a zero block: d = 0, q = 0.  x must be finite.
 *
 * (127 / amax and x * that are f32 operations, as the SIMD code does them.)
 */
#ifndef ELMCHAT_ENGINE_QUANT_ACT_H
#define ELMCHAT_ENGINE_QUANT_ACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/elm.h"
#include "engine/kernels/cpu.h"

#define ELM_QA_BLOCK 32

/* n activations (n a multiple of 32), structure of arrays so that SIMD
 * code loads 64 consecutive q with one instruction. */
struct elm_qact {
    int64_t n;
    int8_t *q;      /* [n] */
    float *d;       /* [n / 32] block scales */
    int16_t *sum16; /* [n / 16] sums of q over each 16 values (offsets, mins) */
};

/* The scale d of a block of largest magnitude amax, and in *inv the
 * multiplier 127 / amax of its values (the rule above, zero blocks
 * included): every kernel set's rounding starts here. */
float elm_qact_scale(float amax, float *inv);
/* Bytes that elm_qact_init needs for n activations (64-byte aligned parts). */
size_t elm_qact_bytes(int64_t n);
/* Lay out a over buf (elm_qact_bytes(n) bytes, 64-byte aligned). */
void elm_qact_init(struct elm_qact *a, int64_t n, void *buf);
/* Quantize x[0..a->n) into a, by the rule above (portable C: the
 * definition; SIMD versions must give the same bytes). */
void elm_quantize_act_ref(const float *x, struct elm_qact *a);
/* The same, with the kernel set in use (kernels.c). */
void elm_quantize_act(const float *x, struct elm_qact *a);

/* y[r] (+)= dot(row r of W, x) for r < nrows: W's rows start at w, ldw
 * bytes apart, each cols weights (a multiple of the dtype's block). */
typedef void (*elm_qrows_fn)(const uint8_t *w, size_t ldw, int64_t cols, const struct elm_qact *x,
                             float *y, long nrows, bool accumulate);

/* The same for m tokens (1 <= m <= ELM_QROWS_MULTI_MAX) at once: token t's
 * activations x[t], its outputs y + t * ldy.  Each weight is read once for
 * all of them, and each token's sums are the one-token kernel's bits. */
#define ELM_QROWS_MULTI_MAX 8
/* fn(..., n) with the token count m as the constant n (1 to
 * ELM_QROWS_MULTI_MAX): how the several-token kernels get their token loops
 * unrolled. */
#define ELM_QROWS_MULTI_DISPATCH(m, fn, ...)                                                      \
    switch (m) {                                                                                  \
    case 1: fn(__VA_ARGS__, 1); break;                                                            \
    case 2: fn(__VA_ARGS__, 2); break;                                                            \
    case 3: fn(__VA_ARGS__, 3); break;                                                            \
    case 4: fn(__VA_ARGS__, 4); break;                                                            \
    case 5: fn(__VA_ARGS__, 5); break;                                                            \
    case 6: fn(__VA_ARGS__, 6); break;                                                            \
    case 7: fn(__VA_ARGS__, 7); break;                                                            \
    default: fn(__VA_ARGS__, 8); break;                                                           \
    }
typedef void (*elm_qrows_multi_fn)(const uint8_t *w, size_t ldw, int64_t cols,
                                   const struct elm_qact *x, int m, float *y, long ldy,
                                   long nrows, bool accumulate);

/* The Q8_0 / Q4_0 kernels of a set (q8q4*.c); NULL for other types or
 * when this CPU cannot run the set.  The several-token ones exist for AVX2,
 * for AVX-512 VNNI with rows of up to 16,384 weights, and for every AArch64
 * set (NULL: the one-token kernel per token). */
elm_qrows_fn elm_q80_q40_rows(enum elm_dtype dtype, enum elm_isa isa);
elm_qrows_multi_fn elm_q80_q40_rows_multi(enum elm_dtype dtype, enum elm_isa isa, int64_t cols);
/* The same for Q4_K, Q5_K, Q6_K (kquant*.c); several tokens: AVX-512
 * (with VNNI or not) and rows of up to 16,384 weights, and every AArch64 set. */
elm_qrows_fn elm_kquant_rows(enum elm_dtype dtype, enum elm_isa isa);
elm_qrows_multi_fn elm_kquant_rows_multi(enum elm_dtype dtype, enum elm_isa isa, int64_t cols);

#endif
