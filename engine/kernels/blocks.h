/* blocks.h: the block-quantized weight types of GGUF (ggml), 16-bit floats,
 * and the row kernels that read them (engine-internal).
 *
 * A row of a quantized matrix is cols / block_elems blocks stored back to
 * back; the layouts are ggml's (docs in blocks.c).  Q8_0 and Q4_0 hold 32
 * weights a block, the K-quants (Q4_K, Q5_K, Q6_K) 256.  Every function
 * here takes n or cols as a multiple of the block size: the loaders check it.
 */
#ifndef ELMCHAT_ENGINE_QUANT_H
#define ELMCHAT_ENGINE_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine/elm.h"

#define ELM_QK8_0 32
#define ELM_QK4_0 32
#define ELM_QK_K 256
#define ELM_Q8_0_BYTES 34  /* f16 d, int8 q[32] */
#define ELM_Q4_0_BYTES 18  /* f16 d, u8 q[16]: low nibbles 0..15, high 16..31 */
#define ELM_Q4_K_BYTES 144 /* f16 d, f16 dmin, u8 scales[12], u8 q[128] */
#define ELM_Q5_K_BYTES 176 /* f16 d, f16 dmin, u8 scales[12], u8 qh[32], u8 q[128] */
#define ELM_Q6_K_BYTES 210 /* u8 ql[128], u8 qh[64], int8 scales[16], f16 d */

/* Weights per block (1 for F32/F16/BF16) and bytes per block. */
size_t elm_quant_block_elems(enum elm_dtype dtype);
size_t elm_quant_block_bytes(enum elm_dtype dtype);
/* Bytes of one row of cols weights; 0 when cols is not a multiple of the
 * block size (or the dtype is unknown). */
size_t elm_row_size(enum elm_dtype dtype, int64_t cols);
/* True for the block types (Q8_0 .. Q6_K). */
bool elm_dtype_is_quant(enum elm_dtype dtype);

/* IEEE half and bfloat16 to f32: exact.  Inline: the portable kernels
 * convert a scale per block or a weight per element. */
static inline float elm_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    uint32_t bits;
    float f;
    if (exp == 0) {
        f = (float)man * 0x1p-24f; /* zero or subnormal: exact */
        memcpy(&bits, &f, sizeof bits);
        bits |= sign;
    } else if (exp == 31) { /* infinity, NaN: as vcvtph2ps */
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    }
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline float elm_bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* The f16 stored (unaligned) at p, as a block's scale is. */
static inline float elm_f16_at(const void *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return elm_f16_to_f32(h);
}

/* The bf16 stored (unaligned) at p. */
static inline float elm_bf16_at(const void *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return elm_bf16_to_f32(h);
}

/* Q4_K / Q5_K: sub-block j (0..7) of the 12 packed scale bytes: 6-bit scale and min.  The
 * first four keep both in the low 6 bits of bytes j and j + 4; the last four
 * put their low 4 bits in byte j + 4 and their top 2 bits in the spare high
 * bits of bytes j - 4 (scale) and j (min). */
static inline void elm_kquant_scale_min(int j, const uint8_t *s, int *sc, int *m)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* f32 to IEEE half and bfloat16, round to nearest even (NaN stays NaN). */
uint16_t elm_f32_to_f16(float f);
uint16_t elm_f32_to_bf16(float f);

/* n weights of any dtype (n a multiple of its block size) to f32. */
void elm_dequantize(const void *src, enum elm_dtype dtype, float *dst, int64_t n);
/* n f32 weights to F32, F16, BF16, Q8_0 or Q4_0 (ggml's reference
 * rounding), or Q4_K, Q5_K, Q6_K (a per-sub-block scale/min fit of our own:
 * ggml's layout, not its search); false for other types. */
bool elm_quantize_row(const float *src, enum elm_dtype dtype, void *dst, int64_t n);

/* sum over i < n of w[i] * x[i], w a row of a block type, x f32. */
float elm_quant_dot(const void *w, enum elm_dtype dtype, const float *x, int64_t n);
/* y[r - r0] (+)= dot(W[r, :], x) for rows r in [r0, r1) of a [*, cols]
 * block-quantized matrix; AVX2 for Q8_0 and Q4_0 when the CPU has it. */
void elm_quant_matvec_rows(const void *w, enum elm_dtype dtype, int64_t cols, const float *x,
                           float *y, int64_t r0, int64_t r1, bool accumulate);
/* Use the portable kernels only (tests compare the two). */
void elm_quant_force_generic(bool on);

#endif
