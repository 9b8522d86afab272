/* q8q4_neon.c: AArch64 Q8_0 / Q4_0 kernels: the int8 rounding of
 * activations (act_int8.h) and rows x int8 activations (decode), with sdot
 * (FEAT_DotProd) or plain NEON (smull / smlal / sadalp).
 *
 * Four blocks of a row at a time: each block's 32 products summed exactly
 * into one int32 (sum4x4), one lane a block; the four f16 scales d_w
 * converted at once and multiplied by the activations' d_x; one FMA into
 * the row's four-lane accumulator; the lanes summed in a fixed order at the
 * end.  Q4_0's nibbles become signed weights (n - 8) first.  Several
 * tokens (verifying drafts): each group of blocks unpacked once, then every
 * token's steps as above, so each token gets the one-token bits.  The two levels
 * differ only in how the int32 block sums are formed, so they give the same
 * bits (the tests compare them); a row's value depends only on cols, not on
 * the row range. */
#include "config.h"

#include "engine/kernels/q8q4.h"

#include "engine/kernels/arch/arm/int8_neon.h"

#ifdef ELM_KERNELS_ARM
#include <string.h>

#include "engine/kernels/blocks.h"

void elm_quantize_act_neon(const float *x, struct elm_qact *a)
{
    long nb = (long)(a->n / ELM_QA_BLOCK);
    for (long b = 0; b < nb; b++, x += ELM_QA_BLOCK) {
        float32x4_t v[8], m = vdupq_n_f32(0.0f);
        for (int i = 0; i < 8; i++) {
            v[i] = vld1q_f32(x + 4 * i);
            m = vmaxq_f32(m, vabsq_f32(v[i]));
        }
        float id; /* act_int8.c's scalar steps, so that the bytes are the same */
        a->d[b] = elm_qact_scale(vmaxvq_f32(m), &id);
        int32x4_t q[8];
        for (int i = 0; i < 8; i++) /* fcvtns: to nearest, ties to even, as nearbyintf */
            q[i] = vcvtnq_s32_f32(vmulq_n_f32(v[i], id));
        for (int h = 0; h < 2; h++) {
            const int32x4_t *p = q + 4 * h;
            int16x8_t lo = vcombine_s16(vqmovn_s32(p[0]), vqmovn_s32(p[1]));
            int16x8_t hi = vcombine_s16(vqmovn_s32(p[2]), vqmovn_s32(p[3]));
            vst1q_s8(a->q + ELM_QA_BLOCK * b + 16 * h, vcombine_s8(vqmovn_s16(lo), vqmovn_s16(hi)));
            a->sum16[2 * b + h] = (int16_t)vaddvq_s32(vaddq_s32(vaddq_s32(p[0], p[1]),
                                                                vaddq_s32(p[2], p[3])));
        }
    }
}

/* One block's weights as signed bytes, in two halves (weights 0-15, 16-31):
 * Q8_0 as stored, Q4_0 the low then the high nibbles, less 8. */
static INLINE void q8_weights(const uint8_t *blk, int8x16_t *w0, int8x16_t *w1)
{
    *w0 = vld1q_s8((const int8_t *)blk + 2);
    *w1 = vld1q_s8((const int8_t *)blk + 18);
}

static INLINE void q4_weights(const uint8_t *blk, int8x16_t *w0, int8x16_t *w1)
{
    uint8x16_t v = vld1q_u8(blk + 2);
    const int8x16_t eight = vdupq_n_s8(8);
    *w0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(15))), eight);
    *w1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), eight);
}

#define NAME(f) f##_neon
#define ATTR
#define DOT16 dot16_neon
#include "engine/kernels/arch/arm/q8q4_neon.inc"
#undef NAME
#undef ATTR
#undef DOT16
#define NAME(f) f##_sdot
#define ATTR DOTPROD
#define DOT16 dot16_sdot
#include "engine/kernels/arch/arm/q8q4_neon.inc"

elm_qrows_fn elm_q80_q40_rows_neon(enum elm_dtype dtype, bool dotprod)
{
    switch (dtype) {
    case ELM_DTYPE_Q8_0: return dotprod ? q8_0_sdot : q8_0_neon;
    case ELM_DTYPE_Q4_0: return dotprod ? q4_0_sdot : q4_0_neon;
    default: return NULL;
    }
}

elm_qrows_multi_fn elm_q80_q40_rows_multi_neon(enum elm_dtype dtype, bool dotprod)
{
    switch (dtype) {
    case ELM_DTYPE_Q8_0: return dotprod ? q8_0_multi_sdot : q8_0_multi_neon;
    case ELM_DTYPE_Q4_0: return dotprod ? q4_0_multi_sdot : q4_0_multi_neon;
    default: return NULL;
    }
}

#else /* not AArch64 GCC/Clang */

void elm_quantize_act_neon(const float *x, struct elm_qact *a)
{
    elm_quantize_act_ref(x, a);
}

elm_qrows_fn elm_q80_q40_rows_neon(enum elm_dtype dtype, bool dotprod)
{
    (void)dtype, (void)dotprod;
    return NULL;
}

elm_qrows_multi_fn elm_q80_q40_rows_multi_neon(enum elm_dtype dtype, bool dotprod)
{
    (void)dtype, (void)dotprod;
    return NULL;
}
#endif
