/* int8_neon.h: what the AArch64 int8 kernel files share
 * (engine-internal): the target attributes of the levels above plain NEON
 * (cpu.h's enum elm_isa), compiled per function so that every file builds
 * with the default flags (-march=armv8-a) and its sdot / smmla functions
 * run only where the probe found the feature; and the integer dot
 * products both int8 levels use. */
#ifndef ELMCHAT_ENGINE_KERNELS_INT8_NEON_H
#define ELMCHAT_ENGINE_KERNELS_INT8_NEON_H

#if defined(__aarch64__) && defined(__GNUC__)
#define ELM_KERNELS_ARM 1
#include <arm_neon.h>

#if defined(__clang__)
#define DOTPROD __attribute__((target("dotprod")))
#define I8MM __attribute__((target("dotprod,i8mm")))
#else
#define DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
#define I8MM __attribute__((target("arch=armv8.2-a+dotprod+i8mm")))
#endif
/* Clang before 16 declares the sdot and smmla intrinsics only when the
 * whole file targets the feature (-march=...+dotprod): without that its
 * dotprod level runs the plain NEON dot (the same bits) and neither level
 * has an int8 GEMM. */
#if defined(__clang__) && __clang_major__ < 16 && !defined(__ARM_FEATURE_DOTPROD)
#define ELM_ARM_SDOT 0
#else
#define ELM_ARM_SDOT 1
#endif
#if defined(__clang__) && __clang_major__ < 16 && !defined(__ARM_FEATURE_MATMUL_INT8)
#define ELM_ARM_SMMLA 0
#else
#define ELM_ARM_SMMLA 1
#endif
#define INLINE __attribute__((always_inline)) inline
/* (the plain NEON functions need no attribute: Advanced SIMD is in every
 * AArch64 CPU) */

/* acc plus the sums of 16 products w[i] * a[i] of signed bytes, four
 * consecutive products a lane: sdot with FEAT_DotProd, smull + smlal +
 * sadalp without.  The lanes differ between the two, their total does
 * not (exact: the products of two pairs stay within int16, |w| <= 128 and
 * |a| <= 127 by act_int8.h's rule). */
static INLINE int32x4_t dot16_neon(int32x4_t acc, int8x16_t w, int8x16_t a)
{
    int16x8_t p = vmull_s8(vget_low_s8(w), vget_low_s8(a));
    p = vmlal_s8(p, vget_high_s8(w), vget_high_s8(a));
    return vpadalq_s16(acc, p);
}

DOTPROD static INLINE int32x4_t dot16_sdot(int32x4_t acc, int8x16_t w, int8x16_t a)
{
#if ELM_ARM_SDOT
    return vdotq_s32(acc, w, a);
#else
    return dot16_neon(acc, w, a);
#endif
}

/* The totals of four vectors of partial sums, [sum(a), sum(b), sum(c),
 * sum(d)] (exact). */
static INLINE int32x4_t sum4x4(int32x4_t a, int32x4_t b, int32x4_t c, int32x4_t d)
{
    return vpaddq_s32(vpaddq_s32(a, b), vpaddq_s32(c, d));
}

/* The sum of the four lanes in a fixed order. */
static INLINE float hsum4(float32x4_t v)
{
    return (vgetq_lane_f32(v, 0) + vgetq_lane_f32(v, 1)) +
           (vgetq_lane_f32(v, 2) + vgetq_lane_f32(v, 3));
}
#endif

#endif
