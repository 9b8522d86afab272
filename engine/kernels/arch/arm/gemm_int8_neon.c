/* gemm_int8_neon.c: the int8 GEMM's AArch64 kernels (gemm_int8.c):
 *  - i8mm level, smmla (FEAT_I8MM): each instruction multiplies a 2 x 8 tile
 *    of signed activation bytes (two tokens) by an 8 x 2 tile of signed
 *    weight bytes (two rows) into four int32 sums, 32 multiply-adds;
 *  - dotprod level, sdot by lane (FEAT_DotProd): four rows' 4 bytes against
 *    one token's 4 bytes (a lane of the activations' register), 16
 *    multiply-adds.
 *
 * Layout (gemm_int8_tiles.h), groups of g bytes, g = 8 for smmla, 4 for
 * sdot: A is packed once per call by gemm_int8.c as [k/g][4 tokens][g]
 * (smmla: one 16-byte load holds tokens 0 and 1 of a group, the next tokens
 * 2 and 3; sdot: one load holds the 4 tokens' 4 bytes).  Each thread repacks
 * NR = 32 weight rows at a time into [k/g][32 rows][g] and their float
 * scales into [sub-block][32]: no repacking at load and no extra memory for
 * the weights, only each thread's panel (elm_gemm_i8_wpack_bytes: 2 k NR
 * bytes plus the scales, 160 KiB at k = 2048), as on x86.  The weights go
 * signed: Q8_0 as stored, the others' codes (0..63) fit a signed byte;
 * gemm_int8.c's kind tells the bias (Q4_0 8, Q6_K 32) whose correction the
 * activations' tile carries.
 *
 * Both micro-kernels are 4 tokens x 8 rows (eight int32 accumulators, eight
 * float ones), four passes over a panel.  Per sub-block and output the float
 * steps are the x86 kernels': the exact int32 sum (started at the bias
 * correction) converted, one FMA by s * dx, for Q4_K/Q5_K one more FMA of
 * the offset o by d * sum(q); so the bits are the AVX2 and AVX-512 GEMMs'
 * for the same k, and the two levels' (the tests compare them). */
#include "config.h"

#include "engine/kernels/gemm_int8_tiles.h"

#if defined(__aarch64__) && defined(__GNUC__)
#include <string.h>

#include "engine/kernels/arch/arm/int8_neon.h"
#include "engine/kernels/blocks.h"
#include "engine/kernels/kquant.h"

#define MR ELM_GI8_MR
#define NR ELM_GI8_NR
/* (helpers of kernels a compiler may lack: ELM_ARM_SDOT, ELM_ARM_SMMLA) */
#define UNUSED __attribute__((unused))
/* Full unrolling keeps the 16 accumulators in registers. */
#define UNROLL _Pragma("GCC unroll 4")

/* --------------------------------------------- unpacking weight rows */

/* A row of k weights into bytes u, scales s and (mins) offsets o per
 * sub-block: w = s * (u - bias) or s * u + o (x86's unpackers, in C; the
 * compiler vectorizes the byte loops). */
static void unpack_q8_0(const uint8_t *b, long k, uint8_t *u, float *s, float *o)
{
    (void)o;
    for (long i = 0; i < k / 32; i++, b += ELM_Q8_0_BYTES) {
        s[i] = elm_f16_at(b);
        memcpy(u + 32 * i, b + 2, 32);
    }
}

static void unpack_q4_0(const uint8_t *b, long k, uint8_t *u, float *s, float *o)
{
    (void)o;
    for (long i = 0; i < k / 32; i++, b += ELM_Q4_0_BYTES) {
        s[i] = elm_f16_at(b);
        for (int j = 0; j < 16; j++) {
            u[32 * i + j] = b[2 + j] & 15;
            u[32 * i + 16 + j] = b[2 + j] >> 4;
        }
    }
}

/* Q4_K (five false) and Q5_K: sub-blocks 2c and 2c + 1 are the low and
 * high nibbles of chunk c's 32 bytes (Q5_K: plus bit 2c / 2c + 1 of qh[l]
 * as 16). */
static inline void unpack_q45_k(const uint8_t *b, long k, uint8_t *u, float *s, float *o,
                                bool five)
{
    const size_t bytes = five ? ELM_Q5_K_BYTES : ELM_Q4_K_BYTES;
    for (long sb = 0; sb < k / ELM_QK_K; sb++, b += bytes, u += ELM_QK_K, s += 8, o += 8) {
        float d = elm_f16_at(b), dmin = elm_f16_at(b + 2);
        uint8_t sc[8], mn[8];
        elm_kquant_scales(b + 4, sc, mn);
        for (int j = 0; j < 8; j++) {
            s[j] = d * (float)sc[j];
            o[j] = -(dmin * (float)mn[j]);
        }
        const uint8_t *qs = b + (five ? 48 : 16), *qh = b + 16;
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 32; l++) {
                uint8_t v = qs[32 * c + l];
                u[64 * c + l] = (uint8_t)((v & 15) | (five ? ((qh[l] >> (2 * c)) & 1) << 4 : 0));
                u[64 * c + 32 + l] =
                    (uint8_t)((v >> 4) | (five ? ((qh[l] >> (2 * c + 1)) & 1) << 4 : 0));
            }
    }
}

static void unpack_q4_k(const uint8_t *b, long k, uint8_t *u, float *s, float *o)
{
    unpack_q45_k(b, k, u, s, o, false);
}

static void unpack_q5_k(const uint8_t *b, long k, uint8_t *u, float *s, float *o)
{
    unpack_q45_k(b, k, u, s, o, true);
}

/* Q6_K: weight 128n + 32g + l takes the low (g < 2) or high nibble of
 * ql[64n + 32(g & 1) + l] and bits 2g, 2g + 1 of qh[32n + l]; 16-weight
 * sub-blocks with int8 scales. */
static void unpack_q6_k(const uint8_t *b, long k, uint8_t *u, float *s, float *o)
{
    (void)o;
    for (long sb = 0; sb < k / ELM_QK_K; sb++, b += ELM_Q6_K_BYTES, u += ELM_QK_K, s += 16) {
        float d = elm_f16_at(b + 208);
        const int8_t *sc = (const int8_t *)(b + 192);
        for (int i = 0; i < 16; i++)
            s[i] = d * (float)sc[i];
        for (int n = 0; n < 2; n++)
            for (int g = 0; g < 4; g++)
                for (int l = 0; l < 32; l++) {
                    uint8_t q = b[64 * n + 32 * (g & 1) + l], h = b[128 + 32 * n + l];
                    u[128 * n + 32 * g + l] =
                        (uint8_t)(((g >> 1 ? q >> 4 : q) & 15) | ((h >> (2 * g)) & 3) << 4);
                }
    }
}

typedef void (*unpack_fn)(const uint8_t *b, long k, uint8_t *u, float *s, float *o);

static unpack_fn unpack_for(enum elm_dtype dtype)
{
    switch (dtype) {
    case ELM_DTYPE_Q8_0: return unpack_q8_0;
    case ELM_DTYPE_Q4_0: return unpack_q4_0;
    case ELM_DTYPE_Q4_K: return unpack_q4_k;
    case ELM_DTYPE_Q5_K: return unpack_q5_k;
    case ELM_DTYPE_Q6_K: return unpack_q6_k;
    default: return NULL;
    }
}

/* Rows [r0, r0 + nr) unpacked, then interleaved into the panel's groups
 * of gb bytes and its scales transposed (zeros past nr). */
static void pack_w(const struct elm_matrix *w, const struct elm_gi8_kind *kd, long r0, int nr,
                   const struct elm_gi8_panel *pn, int gb)
{
    long k = (long)w->cols, nsb = k / kd->sb;
    size_t row_bytes = elm_row_size(w->dtype, w->cols);
    unpack_fn unpack = unpack_for(w->dtype);
    uint8_t *q = (uint8_t *)pn->q;
    for (int r = 0; r < NR; r++) {
        uint8_t *u = pn->u + (size_t)r * (size_t)k;
        float *us = pn->us + (size_t)r * (size_t)nsb, *uo = pn->uo + (size_t)r * (size_t)nsb;
        if (r < nr) {
            unpack((const uint8_t *)w->data + (size_t)(r0 + r) * row_bytes, k, u, us, uo);
        } else {
            memset(u, 0, (size_t)k);
            memset(us, 0, (size_t)nsb * sizeof(float));
            memset(uo, 0, (size_t)nsb * sizeof(float));
        }
        for (long g = 0; g < k / gb; g++)
            memcpy(q + ((size_t)g * NR + (size_t)r) * (size_t)gb, u + gb * g, (size_t)gb);
        for (long sb = 0; sb < nsb; sb++) {
            pn->s[sb * NR + r] = us[sb];
            pn->o[sb * NR + r] = uo[sb];
        }
    }
}

/* ------------------------------------------------------- the kernel */

/* [v[0], v[0], v[1], v[1]]: two tokens' values in smmla's lane order. */
UNUSED static INLINE float32x4_t tok_pair(const float *v)
{
    float32x2_t p = vld1_f32(v);
    return vcombine_f32(vdup_lane_f32(p, 0), vdup_lane_f32(p, 1));
}

/* [v[0], v[1], v[0], v[1]]: two rows' values in smmla's lane order. */
UNUSED static INLINE float32x4_t row_pair(const float *v)
{
    float32x2_t p = vld1_f32(v);
    return vcombine_f32(p, p);
}

/* Tokens i < mt, rows j < nr of a 4 x 8 tile into C (added to it when add). */
UNUSED static INLINE void store8(float *c, long ldc, float out[MR][8], int mt, int nr, bool add)
{
    for (int i = 0; i < mt; i++) {
        float *ct = c + i * ldc;
        for (int j = 0; j < nr; j++)
            ct[j] = add ? out[i][j] + ct[j] : out[i][j];
    }
}

#if ELM_ARM_SMMLA
/* C[i][8h + j] for tokens i < mt, rows 8h + j < nr, from one A tile and the
 * panel; sb: the sub-block width (32, or Q6_K's 16). */
I8MM static INLINE void micro_mmla(const char *tile, long k, const struct elm_gi8_panel *pn,
                              const int sb, const bool mins, float *c, long ldc, int mt, int nr,
                              bool add)
{
    const long nsb = k / sb;
    const int groups = sb / 8;
    const struct elm_gi8_atile at = elm_gi8_atile_at(tile, k, sb);
    const int8_t *aq = (const int8_t *)at.q, *wq = (const int8_t *)pn->q;
    for (int h = 0; h < NR / 8 && 8 * h < nr; h++) {
        float32x4_t f[2][4];
        UNROLL for (int tp = 0; tp < 2; tp++)
            UNROLL for (int p = 0; p < 4; p++)
                f[tp][p] = vdupq_n_f32(0.0f);
        for (long s = 0; s < nsb; s++) {
            int32x4_t acc[2][4];
            UNROLL for (int tp = 0; tp < 2; tp++) {
                int32x4_t init = vdupq_n_s32(0);
                if (!mins) { /* the bias correction of tokens 2tp, 2tp + 1 */
                    int32x2_t ci = vld1_s32(at.ci + s * MR + 2 * tp);
                    init = vcombine_s32(vdup_lane_s32(ci, 0), vdup_lane_s32(ci, 1));
                }
                UNROLL for (int p = 0; p < 4; p++)
                    acc[tp][p] = init;
            }
            UNROLL for (int g = 0; g < groups; g++) {
                size_t grp = (size_t)(s * groups + g);
                int8x16_t a0 = vld1q_s8(aq + grp * MR * 8), a1 = vld1q_s8(aq + (grp * MR + 2) * 8);
                UNROLL for (int p = 0; p < 4; p++) {
                    int8x16_t b = vld1q_s8(wq + (grp * NR + (size_t)(8 * h + 2 * p)) * 8);
                    acc[0][p] = vmmlaq_s32(acc[0][p], a0, b);
                    acc[1][p] = vmmlaq_s32(acc[1][p], a1, b);
                }
            }
            UNROLL for (int tp = 0; tp < 2; tp++) {
                float32x4_t dx = tok_pair(at.d + s * MR + 2 * tp);
                UNROLL for (int p = 0; p < 4; p++)
                    f[tp][p] = vfmaq_f32(f[tp][p], vcvtq_f32_s32(acc[tp][p]),
                                         vmulq_f32(row_pair(pn->s + s * NR + 8 * h + 2 * p), dx));
            }
            if (mins)
                UNROLL for (int tp = 0; tp < 2; tp++) {
                    float32x4_t t = tok_pair(at.cf + s * MR + 2 * tp);
                    UNROLL for (int p = 0; p < 4; p++)
                        f[tp][p] = vfmaq_f32(f[tp][p], row_pair(pn->o + s * NR + 8 * h + 2 * p), t);
                }
        }
        float out[MR][8];
        for (int tp = 0; tp < 2; tp++)
            for (int p = 0; p < 4; p++) {
                out[2 * tp][2 * p] = vgetq_lane_f32(f[tp][p], 0);
                out[2 * tp][2 * p + 1] = vgetq_lane_f32(f[tp][p], 1);
                out[2 * tp + 1][2 * p] = vgetq_lane_f32(f[tp][p], 2);
                out[2 * tp + 1][2 * p + 1] = vgetq_lane_f32(f[tp][p], 3);
            }
        store8(c + 8 * h, ldc, out, mt, nr - 8 * h < 8 ? nr - 8 * h : 8, add);
    }
}

#endif

#if ELM_ARM_SDOT
/* The same with sdot by lane: 4 rows x 4 bytes against token i's 4 bytes
 * (lane i of the tokens' register) per instruction. */
DOTPROD static INLINE void micro_sdot(const char *tile, long k, const struct elm_gi8_panel *pn,
                                      const int sb, const bool mins, float *c, long ldc, int mt,
                                      int nr, bool add)
{
    const long nsb = k / sb;
    const int groups = sb / 4;
    const struct elm_gi8_atile at = elm_gi8_atile_at(tile, k, sb);
    const int8_t *aq = (const int8_t *)at.q, *wq = (const int8_t *)pn->q;
    for (int h = 0; h < NR / 8 && 8 * h < nr; h++) {
        float32x4_t f[MR][2];
        UNROLL for (int i = 0; i < MR; i++)
            f[i][0] = f[i][1] = vdupq_n_f32(0.0f);
        for (long s = 0; s < nsb; s++) {
            int32x4_t acc[MR][2];
            UNROLL for (int i = 0; i < MR; i++)
                acc[i][0] = acc[i][1] = vdupq_n_s32(mins ? 0 : at.ci[s * MR + i]);
            _Pragma("GCC unroll 8") for (int g = 0; g < groups; g++) {
                size_t grp = (size_t)(s * groups + g);
                int8x16_t a = vld1q_s8(aq + grp * MR * 4);
                int8x16_t w0 = vld1q_s8(wq + (grp * NR + (size_t)(8 * h)) * 4);
                int8x16_t w1 = vld1q_s8(wq + (grp * NR + (size_t)(8 * h + 4)) * 4);
                acc[0][0] = vdotq_laneq_s32(acc[0][0], w0, a, 0);
                acc[0][1] = vdotq_laneq_s32(acc[0][1], w1, a, 0);
                acc[1][0] = vdotq_laneq_s32(acc[1][0], w0, a, 1);
                acc[1][1] = vdotq_laneq_s32(acc[1][1], w1, a, 1);
                acc[2][0] = vdotq_laneq_s32(acc[2][0], w0, a, 2);
                acc[2][1] = vdotq_laneq_s32(acc[2][1], w1, a, 2);
                acc[3][0] = vdotq_laneq_s32(acc[3][0], w0, a, 3);
                acc[3][1] = vdotq_laneq_s32(acc[3][1], w1, a, 3);
            }
            float32x4_t s0 = vld1q_f32(pn->s + s * NR + 8 * h), s1 = vld1q_f32(pn->s + s * NR + 8 * h + 4);
            UNROLL for (int i = 0; i < MR; i++) {
                float32x4_t dx = vdupq_n_f32(at.d[s * MR + i]);
                f[i][0] = vfmaq_f32(f[i][0], vcvtq_f32_s32(acc[i][0]), vmulq_f32(s0, dx));
                f[i][1] = vfmaq_f32(f[i][1], vcvtq_f32_s32(acc[i][1]), vmulq_f32(s1, dx));
            }
            if (mins) {
                float32x4_t o0 = vld1q_f32(pn->o + s * NR + 8 * h);
                float32x4_t o1 = vld1q_f32(pn->o + s * NR + 8 * h + 4);
                UNROLL for (int i = 0; i < MR; i++) {
                    float32x4_t t = vdupq_n_f32(at.cf[s * MR + i]);
                    f[i][0] = vfmaq_f32(f[i][0], o0, t);
                    f[i][1] = vfmaq_f32(f[i][1], o1, t);
                }
            }
        }
        float out[MR][8];
        for (int i = 0; i < MR; i++) {
            vst1q_f32(out[i], f[i][0]);
            vst1q_f32(out[i] + 4, f[i][1]);
        }
        store8(c + 8 * h, ldc, out, mt, nr - 8 * h < 8 ? nr - 8 * h : 8, add);
    }
}

#endif

/* One copy per kernel and constant combination (sub-block width, mins). */
#define SPECIALIZE(name, attr, kernel, ...)                                                       \
    attr static void name(const char *tile, long k, const struct elm_gi8_panel *pn, float *c,     \
                          long ldc, int mt, int nr, bool add)                                     \
    {                                                                                             \
        kernel(tile, k, pn, __VA_ARGS__, c, ldc, mt, nr, add);                                    \
    }
typedef void (*micro_fn)(const char *tile, long k, const struct elm_gi8_panel *pn, float *c,
                         long ldc, int mt, int nr, bool add);

#if ELM_ARM_SMMLA
SPECIALIZE(mmla_bias32, I8MM, micro_mmla, 32, false)
SPECIALIZE(mmla_mins32, I8MM, micro_mmla, 32, true)
SPECIALIZE(mmla_bias16, I8MM, micro_mmla, 16, false)
#endif
#if ELM_ARM_SDOT
SPECIALIZE(sdot_bias32, DOTPROD, micro_sdot, 32, false)
SPECIALIZE(sdot_mins32, DOTPROD, micro_sdot, 32, true)
SPECIALIZE(sdot_bias16, DOTPROD, micro_sdot, 16, false)
#endif

/* The kernel for the level and the weights' kind, NULL where the compiler
 * has none. */
static micro_fn micro_for(bool i8mm, const struct elm_gi8_kind *kd)
{
#if ELM_ARM_SMMLA
    if (i8mm)
        return kd->sb == 16 ? mmla_bias16 : kd->mins ? mmla_mins32 : mmla_bias32;
#endif
#if ELM_ARM_SDOT
    if (!i8mm)
        return kd->sb == 16 ? sdot_bias16 : kd->mins ? sdot_mins32 : sdot_bias32;
#endif
    (void)i8mm, (void)kd;
    return NULL;
}

bool elm_gemm_i8_neon_built(bool i8mm)
{
    return i8mm ? ELM_ARM_SMMLA : ELM_ARM_SDOT;
}

void elm_gemm_i8_rows_neon(const void *apack, long m, const struct elm_matrix *w,
                           const struct elm_gi8_kind *kd, bool i8mm, long r0, long r1, float *c,
                           long ldc, bool accumulate, void *wp)
{
    long k = (long)w->cols;
    size_t tb = elm_gi8_tile_bytes(k, kd->sb);
    struct elm_gi8_panel pn = elm_gi8_panel_at(wp, k, kd->sb);
    micro_fn kern = micro_for(i8mm, kd);
    if (!kern)
        return;
    for (long n0 = r0; n0 < r1; n0 += NR) {
        int nr = r1 - n0 < NR ? (int)(r1 - n0) : NR;
        pack_w(w, kd, n0, nr, &pn, i8mm ? 8 : 4);
        for (long t0 = 0; t0 < m; t0 += MR) {
            int mt = m - t0 < MR ? (int)(m - t0) : MR;
            kern((const char *)apack + (size_t)(t0 / MR) * tb, k, &pn, c + t0 * ldc + n0, ldc, mt,
                 nr, accumulate);
        }
    }
}

#endif
