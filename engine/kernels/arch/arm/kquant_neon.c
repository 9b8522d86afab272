/* kquant_neon.c: the AArch64 Q4_K, Q5_K and Q6_K rows against int8
 * activations (the math: kquant.c), with sdot (FEAT_DotProd) or plain NEON.
 *
 * Per super-block of 256 weights: the weights made signed bytes (nibbles
 * plus their high bits: 0..31, Q6_K 0..63), every sub-block's products with
 * the activations summed exactly into one int32 (one lane a sub-block,
 * sum4x4), the integer scales multiplied in (Q4_K/Q5_K: sc * S and the mins
 * m * sum(qx), each below 2^24; Q6_K: sc * (S - 32 sum(qx)), the two
 * sub-blocks of an activation block added), and only then the floats: one
 * FMA per four sub-blocks with d * dx (and dmin * dx for the mins).  The
 * two levels differ only in how the int32 sums are formed: the same bits
 * (the tests compare them).  Each row is computed alone, in a fixed order:
 * any row range gives the same bits.  Several tokens (verifying drafts):
 * each super-block unpacked once, then every token's steps as for one, so
 * each token gets the one-token bits. */
#include "config.h"

#include "engine/kernels/kquant.h"

#ifdef ELM_KQUANT_ARM
#include "engine/kernels/arch/arm/int8_neon.h"

/* The four int32 lanes of 8 unsigned bytes' low or high half. */
static INLINE int32x4_t u8_lo4(uint8x8_t v)
{
    return vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(vmovl_u8(v))));
}

static INLINE int32x4_t u8_hi4(uint8x8_t v)
{
    return vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(vmovl_u8(v))));
}

/* Bits set in mask of each qh byte, as 16 (Q5_K's fifth bit). */
static INLINE uint8x16_t bit4(uint8x16_t qh, uint8_t mask)
{
    return vandq_u8(vtstq_u8(qh, vdupq_n_u8(mask)), vdupq_n_u8(16));
}

#define NAME(f) f##_neon
#define ATTR
#define DOT16 dot16_neon
#include "engine/kernels/arch/arm/kquant_neon.inc"
#undef NAME
#undef ATTR
#undef DOT16
#define NAME(f) f##_sdot
#define ATTR DOTPROD
#define DOT16 dot16_sdot
#include "engine/kernels/arch/arm/kquant_neon.inc"

elm_qrows_fn elm_kquant_rows_neon(enum elm_dtype dtype, bool dotprod)
{
    switch (dtype) {
    case ELM_DTYPE_Q4_K: return dotprod ? rows_q4_k_sdot : rows_q4_k_neon;
    case ELM_DTYPE_Q5_K: return dotprod ? rows_q5_k_sdot : rows_q5_k_neon;
    case ELM_DTYPE_Q6_K: return dotprod ? rows_q6_k_sdot : rows_q6_k_neon;
    default: return NULL;
    }
}

elm_qrows_multi_fn elm_kquant_rows_multi_neon(enum elm_dtype dtype, bool dotprod)
{
    switch (dtype) {
    case ELM_DTYPE_Q4_K: return dotprod ? multi_q4_k_sdot : multi_q4_k_neon;
    case ELM_DTYPE_Q5_K: return dotprod ? multi_q5_k_sdot : multi_q5_k_neon;
    case ELM_DTYPE_Q6_K: return dotprod ? multi_q6_k_sdot : multi_q6_k_neon;
    default: return NULL;
    }
}

#endif
