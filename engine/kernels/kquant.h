/* kquant.h: what every K-quant kernel file shares (engine-internal): the
 * portable kernels and the lookup (kquant.c), the x86 ones (kquant_x86.h).
 * The interface is elm_kquant_rows in act_int8.h. */
#ifndef ELMCHAT_ENGINE_KERNELS_KQUANT_H
#define ELMCHAT_ENGINE_KERNELS_KQUANT_H

#include <stdbool.h>

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

#endif
