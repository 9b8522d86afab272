/* kquant_avx512.c: the AVX-512 Q4_K, Q5_K and Q6_K rows against int8
 * activations, with VNNI and without (kquant_x86.h says how). */
#include "config.h"

#include "engine/kernels/arch/x86/kquant_x86.h"

#ifdef ELM_KQUANT_X86

/* Super-blocks [k0, k0 + n) of the activations for the AVX-512 Q4_K/Q5_K
 * kernels, row-independent work done once per call: per super-block, xp
 * holds the int8 activations of sub-blocks 0 2 | 1 3 | 4 6 | 5 7 (the order
 * of the weights' nibbles in two 64-byte loads) and pre holds dx_j, then
 * -dx_j * (the sum of sub-block j's activations) for the mins. */
AVX512 static void kq_prep_q45(const struct elm_qact *x, int64_t k0, int64_t n, int8_t *xp,
                               float *pre)
{
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t i = 0; i < n; i++, xp += 256, pre += 16) {
        const int64_t k = k0 + i;
        const int8_t *qx = x->q + 256 * k;
        __m512i x0 = _mm512_loadu_si512(qx), x1 = _mm512_loadu_si512(qx + 64);
        __m512i x2 = _mm512_loadu_si512(qx + 128), x3 = _mm512_loadu_si512(qx + 192);
        _mm512_store_si512(xp, _mm512_shuffle_i64x2(x0, x1, _MM_SHUFFLE(1, 0, 1, 0)));
        _mm512_store_si512(xp + 64, _mm512_shuffle_i64x2(x0, x1, _MM_SHUFFLE(3, 2, 3, 2)));
        _mm512_store_si512(xp + 128, _mm512_shuffle_i64x2(x2, x3, _MM_SHUFFLE(1, 0, 1, 0)));
        _mm512_store_si512(xp + 192, _mm512_shuffle_i64x2(x2, x3, _MM_SHUFFLE(3, 2, 3, 2)));
        __m256 dx = _mm256_loadu_ps(x->d + 8 * k);
        __m256 t = _mm256_cvtepi32_ps(_mm256_madd_epi16(LOAD256(x->sum16 + 16 * k), ones));
        _mm256_store_ps(pre, dx);
        _mm256_store_ps(pre + 8, _mm256_mul_ps(_mm256_sub_ps(_mm256_setzero_ps(), dx), t));
    }
}

/* The AVX-512 kernels, twice: with VNNI's vpdpbusd, and with AVX-512BW
 * alone (CPUs without VNNI; the tests run both).  The one body is
 * kquant_avx512.inc, compiled once per target: vpdpbusd cannot be inlined
 * into a function compiled without VNNI, and the BW kernels must not be
 * compiled with it (they run where it is missing). */
AVX512 static INLINE __m512i dot64_bw(__m512i u, __m512i s)
{
    return _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1));
}

AVX512VNNI static INLINE __m512i dot64_vnni(__m512i u, __m512i s)
{
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, s);
}

#define KQ_TARGET AVX512
#define KQ_DOT dot64_bw
#define KQ_NAME(n) n##_avx512bw
#include "engine/kernels/arch/x86/kquant_avx512.inc"
#undef KQ_TARGET
#undef KQ_DOT
#undef KQ_NAME

#define KQ_TARGET AVX512VNNI
#define KQ_DOT dot64_vnni
#define KQ_NAME(n) n##_avx512vnni
#include "engine/kernels/arch/x86/kquant_avx512.inc"
#undef KQ_TARGET
#undef KQ_DOT
#undef KQ_NAME

/* ---------------------------------------------------------------- lookup */

elm_qrows_fn elm_kquant_rows_avx512(enum elm_dtype dtype, bool vnni)
{
    switch (dtype) {
    case ELM_DTYPE_Q4_K: return vnni ? rows_q4_k_avx512vnni : rows_q4_k_avx512bw;
    case ELM_DTYPE_Q5_K: return vnni ? rows_q5_k_avx512vnni : rows_q5_k_avx512bw;
    case ELM_DTYPE_Q6_K: return vnni ? rows_q6_k_avx512vnni : rows_q6_k_avx512bw;
    default: return NULL;
    }
}

elm_qrows_multi_fn elm_kquant_rows_multi_avx512(enum elm_dtype dtype, bool vnni, int64_t cols)
{
    if (cols > KQ_STACK_COLS)
        return NULL; /* the activations' layout lives on the stack */
    switch (dtype) {
    case ELM_DTYPE_Q4_K: return vnni ? multi_q4_k_avx512vnni : multi_q4_k_avx512bw;
    case ELM_DTYPE_Q5_K: return vnni ? multi_q5_k_avx512vnni : multi_q5_k_avx512bw;
    case ELM_DTYPE_Q6_K: return vnni ? multi_q6_k_avx512vnni : multi_q6_k_avx512bw;
    default: return NULL;
    }
}

#endif
