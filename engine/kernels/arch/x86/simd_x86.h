/* simd_x86.h: what the x86 kernel files of every family share
 * (engine-internal): the target attributes of the sets (cpu.h's enum
 * elm_isa), compiled per function so that every file builds with the
 * default flags, and the AVX2 helpers more than one family uses. */
#ifndef ELMCHAT_ENGINE_KERNELS_SIMD_X86_H
#define ELMCHAT_ENGINE_KERNELS_SIMD_X86_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma,f16c")))
#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define INLINE __attribute__((always_inline)) inline

/* The sum of the 8 lanes, in a fixed order. */
AVX2 static INLINE float hsum256(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* The packed GEMMs' micro-tile (tokens x 32 rows, two vectors a token)
 * into C: tokens [0, mt), rows [0, nr), added to C's values when add. */
AVX512 static INLINE void store_tile32(float *c, long ldc, __m512 *c0, __m512 *c1, int n_tok,
                                       int mt, int nr, bool add)
{
    __mmask16 m0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1);
    __mmask16 m1 = nr >= 32 ? 0xffff : nr <= 16 ? 0 : (__mmask16)((1u << (nr - 16)) - 1);
    _Pragma("GCC unroll 16") for (int t = 0; t < n_tok; t++) {
        if (t >= mt)
            break;
        float *ct = c + t * ldc;
        if (add) {
            c0[t] = _mm512_add_ps(c0[t], _mm512_maskz_loadu_ps(m0, ct));
            c1[t] = _mm512_add_ps(c1[t], _mm512_maskz_loadu_ps(m1, ct + 16));
        }
        _mm512_mask_storeu_ps(ct, m0, c0[t]);
        _mm512_mask_storeu_ps(ct + 16, m1, c1[t]);
    }
}
#endif

#endif
