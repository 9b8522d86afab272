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
#endif

#endif
