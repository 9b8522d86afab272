/* kernels_kquant.h: glue between the portable K-quant row kernels and
 * lookup (kernels_kquant.c) and the x86 ones (kernels_kquant_x86.c);
 * engine-internal.  The interface is elm_kquant_rows in quant_act.h. */
#ifndef ELMCHAT_ENGINE_KERNELS_KQUANT_H
#define ELMCHAT_ENGINE_KERNELS_KQUANT_H

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
/* The AVX2 or AVX-512 kernel of set ("avx2", "avx512", and "avx512bw": the
 * AVX-512 kernels without VNNI, so that tests run them on a VNNI CPU too);
 * NULL when this CPU cannot run that set. */
elm_qrows_fn elm_kquant_rows_x86(enum elm_dtype dtype, const char *set);
#endif

#endif
