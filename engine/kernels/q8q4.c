/* q8q4.c: Q8_0 / Q4_0 weight rows times int8 activations (act_int8.h):
 * the portable kernels and the lookup of every set's (q8q4_avx2.c,
 * q8q4_avx512.c, arch/arm/q8q4_neon.c).  kernels.c calls the set in use's. */
#include "config.h"

#include "engine/kernels/q8q4.h"

#include "engine/kernels/act_int8.h"
#include "engine/kernels/blocks.h"
#include "engine/kernels/cpu.h"

/* ------------------------------------------------------------ portable */

/* Exact int32 block sums; the float sums alternate between two partial
 * sums (even and odd blocks), a fixed order for a given cols. */
static void q4_0_generic(const uint8_t *w, size_t ldw, int64_t cols, const struct elm_qact *x,
                         float *y, long nrows, bool accumulate)
{
    long nb = (long)(cols / 32);
    for (long r = 0; r < nrows; r++, w += ldw) {
        float s[2] = {0.0f, 0.0f};
        const uint8_t *b = w;
        for (long i = 0; i < nb; i++, b += ELM_Q4_0_BYTES) {
            const int8_t *q = x->q + 32 * i;
            int32_t isum = 0;
            for (int j = 0; j < 16; j++)
                isum += (b[2 + j] & 15) * q[j] + (b[2 + j] >> 4) * q[j + 16];
            isum -= 8 * (x->sum16[2 * i] + x->sum16[2 * i + 1]);
            s[i & 1] += elm_f16_at(b) * x->d[i] * (float)isum;
        }
        y[r] = accumulate ? y[r] + (s[0] + s[1]) : s[0] + s[1];
    }
}

static void q8_0_generic(const uint8_t *w, size_t ldw, int64_t cols, const struct elm_qact *x,
                         float *y, long nrows, bool accumulate)
{
    long nb = (long)(cols / 32);
    for (long r = 0; r < nrows; r++, w += ldw) {
        float s[2] = {0.0f, 0.0f};
        const uint8_t *b = w;
        for (long i = 0; i < nb; i++, b += ELM_Q8_0_BYTES) {
            const int8_t *q = x->q + 32 * i;
            int32_t isum = 0;
            for (int j = 0; j < 32; j++)
                isum += (int8_t)b[2 + j] * q[j];
            s[i & 1] += elm_f16_at(b) * x->d[i] * (float)isum;
        }
        y[r] = accumulate ? y[r] + (s[0] + s[1]) : s[0] + s[1];
    }
}

/* ------------------------------------------------------------- lookup */

elm_qrows_fn elm_q80_q40_rows(enum elm_dtype dtype, enum elm_isa isa)
{
    if ((dtype != ELM_DTYPE_Q8_0 && dtype != ELM_DTYPE_Q4_0) || !elm_cpu_runs(isa))
        return NULL;
    switch (isa) {
    case ELM_ISA_GENERIC: return dtype == ELM_DTYPE_Q8_0 ? q8_0_generic : q4_0_generic;
    case ELM_ISA_AVX2: return elm_q80_q40_rows_avx2(dtype);
    case ELM_ISA_AVX512: return elm_q80_q40_rows_avx512(dtype, false);
    case ELM_ISA_AVX512_VNNI: return elm_q80_q40_rows_avx512(dtype, true);
    case ELM_ISA_NEON: return elm_q80_q40_rows_neon(dtype, false);
    case ELM_ISA_NEON_DOTPROD:
    case ELM_ISA_NEON_I8MM: return elm_q80_q40_rows_neon(dtype, true);
    }
    return NULL;
}

elm_qrows_multi_fn elm_q80_q40_rows_multi(enum elm_dtype dtype, enum elm_isa isa, int64_t cols)
{
    if ((dtype != ELM_DTYPE_Q8_0 && dtype != ELM_DTYPE_Q4_0) || !elm_cpu_runs(isa))
        return NULL;
    switch (isa) {
    case ELM_ISA_AVX2: return elm_q80_q40_rows_multi_avx2(dtype);
    case ELM_ISA_AVX512_VNNI: return elm_q80_q40_rows_multi_avx512(dtype, cols);
    case ELM_ISA_NEON: return elm_q80_q40_rows_multi_neon(dtype, false);
    case ELM_ISA_NEON_DOTPROD:
    case ELM_ISA_NEON_I8MM: return elm_q80_q40_rows_multi_neon(dtype, true);
    default: return NULL; /* AVX-512BW without VNNI: the one-token kernel per token */
    }
}
