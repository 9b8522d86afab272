/* kquant.h: what every K-quant kernel file shares (engine-internal): the
 * portable kernels and the lookup (kquant.c), the x86 ones (kquant_x86.h),
 * the AArch64 ones (arch/arm/kquant_neon.c).
 * The interface is elm_kquant_rows in act_int8.h. */
#ifndef ELMCHAT_ENGINE_KERNELS_KQUANT_H
#define ELMCHAT_ENGINE_KERNELS_KQUANT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "engine/kernels/blocks.h"
#include "engine/kernels/act_int8.h"

/* An elm_qrows_fn from body, the value of one row: b its first block, nb
 * its super-blocks, x the activations; attr: the target attribute or
 * nothing.  Shared by the portable and the x86 kernels. */
#define ELM_KQUANT_ROWS(name, attr, body)                                                          \
    attr static void name(const uint8_t *w, size_t ldw, int64_t cols, const struct elm_qact *x,    \
                          float *y, long nrows, bool accumulate)                                   \
    {                                                                                              \
        const int64_t nb = cols / ELM_QK_K;                                                        \
        for (long r = 0; r < nrows; r++) {                                                         \
            const uint8_t *b = w + (size_t)r * ldw;                                                \
            float v = body;                                                                        \
            y[r] = accumulate ? y[r] + v : v;                                                      \
        }                                                                                          \
    }

/* The 6-bit scales and mins of the 8 sub-blocks (layout in blocks.c), from
 * the 12 packed bytes read as three words: sub-blocks 0..3 are the low 6
 * bits of words 0 (scales) and 1 (mins); 4..7 take their low 4 bits from
 * word 2 and their top 2 from the spare top bits of words 0 and 1.  Every
 * step stays within a byte, so the byte order of the words does not
 * matter. */
static inline void elm_kquant_scales(const uint8_t *s, uint8_t sc[8], uint8_t m[8])
{
    uint32_t a, b, c;
    memcpy(&a, s, 4);
    memcpy(&b, s + 4, 4);
    memcpy(&c, s + 8, 4);
    const uint32_t v[4] = {a & 0x3f3f3f3fu, (c & 0x0f0f0f0fu) | ((a >> 2) & 0x30303030u),
                           b & 0x3f3f3f3fu, ((c >> 4) & 0x0f0f0f0fu) | ((b >> 2) & 0x30303030u)};
    memcpy(sc, v, 8);
    memcpy(m, v + 2, 8);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define ELM_KQUANT_X86 1
/* The kernels of a set for dtype (Q4_K, Q5_K, Q6_K; else NULL), for
 * elm_kquant_rows, which has checked that the CPU runs the set: AVX2
 * (kquant_avx2.c); AVX-512 with VNNI's vpdpbusd or, vnni false, AVX-512BW
 * alone (kquant_avx512.c; the same bits, and the tests run both). */
elm_qrows_fn elm_kquant_rows_avx2(enum elm_dtype dtype);
elm_qrows_fn elm_kquant_rows_avx512(enum elm_dtype dtype, bool vnni);
/* Their several-token versions (rows of at most 16,384 weights, else NULL). */
elm_qrows_multi_fn elm_kquant_rows_multi_avx512(enum elm_dtype dtype, bool vnni, int64_t cols);
#endif

#if defined(__aarch64__) && defined(__GNUC__)
#define ELM_KQUANT_ARM 1
/* The AArch64 kernels (arch/arm/kquant_neon.c): sdot (dotprod true, the
 * CPU must have FEAT_DotProd) or plain NEON; the same bits. */
elm_qrows_fn elm_kquant_rows_neon(enum elm_dtype dtype, bool dotprod);
/* Their several-token versions (any width). */
elm_qrows_multi_fn elm_kquant_rows_multi_neon(enum elm_dtype dtype, bool dotprod);
#endif

#endif
