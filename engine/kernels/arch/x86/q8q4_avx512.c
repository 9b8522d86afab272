/* q8q4_avx512.c: AVX-512 Q8_0 / Q4_0 kernels: the int8 rounding of
 * activations (act_int8.h), rows x int8 activations for decode, and the
 * widening of weights for the prefill GEMM.
 *
 * Rows work on pairs of blocks: 64 weights and 64 int8 activations fill a
 * 512-bit register, and the dot product of each 4 bytes lands in one of 16
 * int32 lanes (lanes 0-7 the first block, 8-15 the second).  Weights are
 * biased to unsigned bytes for vpdpbusd (u8 x s8): Q4_0 nibbles are 0..15
 * (the weight + 8), Q8_0 bytes are xor'ed with 0x80 (the weight + 128); the
 * bias times the activation sums (the same for every row) is the starting
 * value of vpdpbusd.  Without VNNI (or, for Q4_0, GFNI), vpmaddubsw + vpmaddwd
 * compute the same exact integers (Q8_0 then uses |w| and the sign moved to
 * x: biased bytes times 127 would saturate int16).  Per pair and row the
 * float work is one conversion and one FMA by d_w * d_x.
 *
 * A row at a time, two accumulators (even and odd pairs), so any row range
 * (thread split) gives the same bits.  One stream of weights per thread,
 * prefetched far ahead, is what reaches the bandwidth here: four rows
 * sharing their activation loads and scale conversions computed 10-25 %
 * faster in cache but read DRAM 15-30 % slower.  No masked loads: they do
 * not train the hardware prefetchers. */
#include "config.h"

#include "engine/kernels/q8q4.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <string.h>

#include "engine/kernels/blocks.h"
#include "engine/kernels/cpu.h"

#define BW __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define VNNI                                                                                  \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,gfni,avx2,fma,f16c")))
#define INLINE __attribute__((always_inline)) inline
/* Software prefetch, this many bytes ahead of the row being read (into the
 * next rows at the end of one): decode on Zen 5, 270M Q4_0 / Q8_0, measured
 * 8192 ~ 6144 ~ 12288 > 4096 > 2048 > 1024 (1.25x from 1024 to 8192). */
#define PF_BYTES 8192

/* ------------------------------------------------- activation rounding */

/* elm_qact_scale for 16 blocks at once: the same IEEE steps (divisions
 * rounded to nearest, vcvtps2ph rounding to nearest even as
 * elm_f32_to_f16 does), so the same bits; the scalar calls were 4 % of a
 * quantized prefill. */
BW static INLINE __m512 scales16(__m512 amax, __m512 *inv)
{
    const __m512 c127 = _mm512_set1_ps(127.0f), inf = _mm512_set1_ps(__builtin_inff());
    __m512 iv = _mm512_maskz_div_ps(_mm512_cmp_ps_mask(amax, _mm512_setzero_ps(), _CMP_GT_OQ),
                                    c127, amax);
    /* 127 / amax overflows: a zero block (act_int8.h) */
    __mmask16 zero = _mm512_cmp_ps_mask(iv, inf, _CMP_EQ_OQ);
    iv = _mm512_mask_mov_ps(iv, zero, _mm512_setzero_ps());
    __m512 d = _mm512_div_ps(_mm512_mask_mov_ps(amax, zero, _mm512_setzero_ps()), c127);
    __m512 h = _mm512_cvtph_ps(_mm512_cvtps_ph(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    *inv = iv;
    /* beyond the half range the scale stays f32 */
    return _mm512_mask_mov_ps(h, _mm512_cmp_ps_mask(h, inf, _CMP_EQ_OQ), d);
}

/* One block of 32 with its multiplier id. */
BW static INLINE void round_block(const float *x, float id, struct elm_qact *a, long b)
{
    __m512 vid = _mm512_set1_ps(id);
    /* vcvtps2dq rounds as nearbyintf does (MXCSR: to nearest even) */
    __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x), vid));
    __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + 16), vid));
    _mm_storeu_si128((__m128i *)(void *)(a->q + ELM_QA_BLOCK * b), _mm512_cvtepi32_epi8(q0));
    _mm_storeu_si128((__m128i *)(void *)(a->q + ELM_QA_BLOCK * b + 16), _mm512_cvtepi32_epi8(q1));
    a->sum16[2 * b] = (int16_t)_mm512_reduce_add_epi32(q0);
    a->sum16[2 * b + 1] = (int16_t)_mm512_reduce_add_epi32(q1);
}

BW static INLINE float block_amax(const float *x)
{
    const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    return _mm512_reduce_max_ps(_mm512_max_ps(_mm512_and_ps(_mm512_loadu_ps(x), absmask),
                                              _mm512_and_ps(_mm512_loadu_ps(x + 16), absmask)));
}

BW void elm_quantize_act_avx512(const float *x, struct elm_qact *a)
{
    long nb = (long)(a->n / ELM_QA_BLOCK), b = 0;
    for (; b + 16 <= nb; b += 16) {
        _Alignas(64) float amax[16], inv[16];
        for (int j = 0; j < 16; j++)
            amax[j] = block_amax(x + ELM_QA_BLOCK * (b + j));
        __m512 iv;
        _mm512_storeu_ps(a->d + b, scales16(_mm512_load_ps(amax), &iv));
        _mm512_store_ps(inv, iv);
        for (int j = 0; j < 16; j++)
            round_block(x + ELM_QA_BLOCK * (b + j), inv[j], a, b + j);
    }
    for (; b < nb; b++) {
        float id; /* act_int8.c's scalar steps, so that the bytes are the same */
        a->d[b] = elm_qact_scale(block_amax(x + ELM_QA_BLOCK * b), &id);
        round_block(x + ELM_QA_BLOCK * b, id, a, b);
    }
}

/* ------------------------------------------------------------ pieces */

#define WORDS256(...)                                                                         \
    _mm256_loadu_si256((const __m256i *)(const void *)(const int16_t[16]){__VA_ARGS__})
#define DWORDS(...) _mm512_loadu_si512((const void *)(const int32_t[16]){__VA_ARGS__})

BW static INLINE float half(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

/* [dx[0] x8, dx[1] x8]: the activation scales of a pair. */
BW static INLINE __m512 pair_dx(const float *d)
{
    __m128i two = _mm_loadl_epi64((const __m128i *)(const void *)d);
    return _mm512_permutexvar_ps(DWORDS(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
                                 _mm512_zextps128_ps512(_mm_castsi128_ps(two)));
}

/* The last, odd block of a row: d_w * d_x x8 (the same rounding), zeros. */
BW static INLINE __m512 tail_scale(const uint8_t *blk, float dx)
{
    return _mm512_zextps256_ps512(_mm256_set1_ps(half(blk) * dx));
}

/* --------------------------------------------------------------- Q4_0 */

/* A pair is [d0 q0[16] d1 q1[16]] (36 bytes).  Both 16-byte q are
 * broadcast into two lanes each, [q0 q0 q1 q1], and the nibbles taken from
 * lanes 0, 2 (low) and 1, 3 (high): 64 weights + 8 in activation order. */
BW static INLINE __m512i q4_pair_bytes(const uint8_t *w)
{
    return _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_broadcastsi128_si256(
            _mm_loadu_si128((const __m128i *)(const void *)(w + 2)))),
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(w + 20))),
        1);
}

/* The last block alone: [q0 q0 0 0] (its own 18 bytes only). */
BW static INLINE __m512i q4_tail_bytes(const uint8_t *w)
{
    return _mm512_zextsi256_si512(
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(w + 2))));
}

/* One GF(2) affine map per 64-bit lane: the low nibble (x & 15) in lanes
 * 0, 1, 4, 5, the high one (x >> 4) in 2, 3, 6, 7; matrix row 7 - i picks
 * output bit i. */
VNNI static INLINE __m512i q4_nibbles_gfni(__m512i v)
{
    const long long lo = 0x0102040800000000ll, hi = 0x1020408000000000ll;
    return _mm512_gf2p8affine_epi64_epi8(v, _mm512_set_epi64(hi, hi, lo, lo, hi, hi, lo, lo), 0);
}

BW static INLINE __m512i q4_nibbles_bw(__m512i v)
{
    const __m512i shift = _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0);
    return _mm512_and_si512(_mm512_srlv_epi64(v, shift), _mm512_set1_epi8(15));
}

/* A pair's [d_w0 x8, d_w1 x8] (words 0 and 9), then times dx. */
BW static INLINE __m512 q4_wscale(const uint8_t *w)
{
    const __m256i idx = WORDS256(0, 0, 0, 0, 0, 0, 0, 0, 9, 9, 9, 9, 9, 9, 9, 9);
    __m256i l = _mm256_loadu_si256((const __m256i *)(const void *)w);
    return _mm512_cvtph_ps(_mm256_permutexvar_epi16(idx, l));
}

BW static INLINE __m512 q4_scale(const uint8_t *w, __m512 dx)
{
    return _mm512_mul_ps(q4_wscale(w), dx);
}

/* --------------------------------------------------------------- Q8_0 */

/* A pair is [d0 q0[32] d1 q1[32]] (68 bytes): bytes 2..33 and 36..67. */
BW static INLINE __m512i q8_pair_bytes(const uint8_t *w)
{
    return _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(const void *)(w + 2))),
        _mm256_loadu_si256((const __m256i *)(const void *)(w + 36)), 1);
}

BW static INLINE __m512i q8_tail_bytes(const uint8_t *w)
{
    return _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)(const void *)(w + 2)));
}

/* A pair's [d_w0 x8, d_w1 x8] (words 0 and 17), then times dx. */
BW static INLINE __m512 q8_wscale(const uint8_t *w)
{
    const __m512i idx = _mm512_castsi256_si512(
        WORDS256(0, 0, 0, 0, 0, 0, 0, 0, 17, 17, 17, 17, 17, 17, 17, 17));
    __m512i l = _mm512_loadu_si512((const void *)w);
    return _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(idx, l)));
}

BW static INLINE __m512 q8_scale(const uint8_t *w, __m512 dx)
{
    return _mm512_mul_ps(q8_wscale(w), dx);
}

/* ---------------------------------------------------------- the rows */

/* One kernel, a row at a time: one stream of weights per thread, which on
 * Zen 5 decoded at 1.2-1.5x the speed of four interleaved rows sharing
 * their activation loads and scale conversions (more DRAM page switches
 * and prefetch streams for what the sharing saved).  Per pair of blocks:
 * PREP(qa) the row-independent c, DOT(bytes, qa, c) the 16 exact int32 lane
 * sums of the row's pair (PAIRBYTES / TAILBYTES load its weights), SCALE
 * d_w * d_x.  Two accumulators (even and odd pairs). */
#define QROWS(NAME, ATTR, BYTES, PREP, DOT, PAIRBYTES, TAILBYTES, SCALE)                      \
    ATTR static INLINE __m512 NAME##_pair(const uint8_t *wp, const struct elm_qact *x, long p, \
                                          __m512 acc)                                         \
    {                                                                                         \
        __m512i qa = _mm512_load_si512((const void *)(x->q + 64 * p));                        \
        _mm_prefetch((const char *)wp + PF_BYTES, _MM_HINT_T0);                               \
        __m512i dp = DOT(PAIRBYTES(wp), qa, PREP(qa));                                        \
        return _mm512_fmadd_ps(_mm512_cvtepi32_ps(dp), SCALE(wp, pair_dx(x->d + 2 * p)), acc); \
    }                                                                                         \
    ATTR static void NAME(const uint8_t *w, size_t ldw, int64_t cols, const struct elm_qact *x, \
                          float *y, long nrows, bool accumulate)                              \
    {                                                                                         \
        long nb = (long)(cols / 32), np = nb / 2;                                             \
        for (long r = 0; r < nrows; r++, w += ldw) {                                          \
            __m512 a0 = _mm512_setzero_ps(), a1 = a0;                                         \
            long p = 0;                                                                       \
            for (; p + 2 <= np; p += 2) {                                                     \
                a0 = NAME##_pair(w + (size_t)p * 2 * BYTES, x, p, a0);                        \
                a1 = NAME##_pair(w + (size_t)(p + 1) * 2 * BYTES, x, p + 1, a1);              \
            }                                                                                 \
            if (p < np) {                                                                     \
                a0 = NAME##_pair(w + (size_t)p * 2 * BYTES, x, p, a0);                        \
                p++;                                                                          \
            }                                                                                 \
            if (nb & 1) {                                                                     \
                /* the last block: its activations, then zeros (the upper lanes add 0) */    \
                __m512i qa = _mm512_zextsi256_si512(                                          \
                    _mm256_load_si256((const __m256i *)(const void *)(x->q + 64 * p)));       \
                const uint8_t *wp = w + (size_t)p * 2 * BYTES;                                \
                __m512i dp = DOT(TAILBYTES(wp), qa, PREP(qa));                                \
                a1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dp), tail_scale(wp, x->d[2 * p]), a1); \
            }                                                                                 \
            float s = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));                            \
            y[r] = accumulate ? y[r] + s : s;                                                 \
        }                                                                                     \
    }

/* VNNI: c = -(bias x the sums of 4 activations), vpdpbusd's start. */
#define PREP_VNNI(bias, qa)                                                                   \
    _mm512_sub_epi32(_mm512_setzero_si512(),                                                  \
                     _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(bias), qa))
#define PREP_Q4_VNNI(qa) PREP_VNNI(8, qa)
#define PREP_Q8_VNNI(qa) PREP_VNNI(-128, qa)
/* AVX-512BW: c = bias x the pair sums of activations, in int16. */
#define PREP_Q4_BW(qa) _mm512_maddubs_epi16(_mm512_set1_epi8(8), qa)
#define PREP_Q8_BW(qa) ((void)(qa), _mm512_setzero_si512())

#define DOT_Q4_VNNI(v, qa, c) _mm512_dpbusd_epi32(c, q4_nibbles_gfni(v), qa)
#define DOT_Q4_BW(v, qa, c)                                                                   \
    _mm512_madd_epi16(_mm512_sub_epi16(_mm512_maddubs_epi16(q4_nibbles_bw(v), qa), c),          \
                      _mm512_set1_epi16(1))
#define DOT_Q8_VNNI(v, qa, c)                                                                 \
    _mm512_dpbusd_epi32(c, _mm512_xor_si512(v, _mm512_set1_epi8(-128)), qa)
/* |w| x (x with w's sign): at most 2 x 128 x 127 in int16 */
BW static INLINE __m512i dot_q8_bw(__m512i v, __m512i qa)
{
    __m512i sx = _mm512_mask_sub_epi8(qa, _mm512_movepi8_mask(v), _mm512_setzero_si512(), qa);
    return _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_abs_epi8(v), sx), _mm512_set1_epi16(1));
}
#define DOT_Q8_BW(v, qa, c) ((void)(c), dot_q8_bw(v, qa))

QROWS(q4_0_vnni, VNNI, ELM_Q4_0_BYTES, PREP_Q4_VNNI, DOT_Q4_VNNI, q4_pair_bytes, q4_tail_bytes,
      q4_scale)
QROWS(q4_0_bw, BW, ELM_Q4_0_BYTES, PREP_Q4_BW, DOT_Q4_BW, q4_pair_bytes, q4_tail_bytes,
      q4_scale)
QROWS(q8_0_vnni, VNNI, ELM_Q8_0_BYTES, PREP_Q8_VNNI, DOT_Q8_VNNI, q8_pair_bytes, q8_tail_bytes,
      q8_scale)
QROWS(q8_0_bw, BW, ELM_Q8_0_BYTES, PREP_Q8_BW, DOT_Q8_BW, q8_pair_bytes, q8_tail_bytes,
      q8_scale)

/* Several tokens (a batch that verifies drafts): each pair of weight
 * blocks is loaded, made unsigned and its scales converted once, then met
 * by every token's activations; per token the operations and their order
 * are the one-token kernel's (the same even/odd accumulators, the same
 * products), so each token's sums have its bits: a verified draft sees
 * the logits plain decoding would.  Re-reading the rows per token (from
 * L2) cost a Q8_0 3B pass of 2 tokens 1.7 steps, of 4 tokens 2.9. */
#define QROWS_MULTI(NAME, ATTR, BYTES, WT, WSTART, DOTT, PAIRBYTES, TAILBYTES, WSCALE)        \
    ATTR static INLINE void NAME##_pairs(const uint8_t *wp, const struct elm_qact *x,          \
                                         const int tb, long p, __m512 *acc)                    \
    {                                                                                         \
        _mm_prefetch((const char *)wp + PF_BYTES, _MM_HINT_T0);                               \
        __m512i wt = WT(PAIRBYTES(wp)), w0 = WSTART(wt);                                      \
        __m512 ws = WSCALE(wp);                                                               \
        for (int t = 0; t < tb; t++) {                                                        \
            __m512i qa = _mm512_load_si512((const void *)(x[t].q + 64 * p));                  \
            __m512i dp = DOTT(qa, wt, w0);                                                    \
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dp),                                  \
                                     _mm512_mul_ps(ws, pair_dx(x[t].d + 2 * p)), acc[t]);     \
        }                                                                                     \
    }                                                                                         \
    ATTR static INLINE void NAME##_tb(const uint8_t *w, size_t ldw, int64_t cols,             \
                                      const struct elm_qact *x, float *y, long ldy,           \
                                      long nrows, bool accumulate, const int tb)              \
    {                                                                                         \
        long nb = (long)(cols / 32), np = nb / 2;                                             \
        for (long r = 0; r < nrows; r++, w += ldw) {                                          \
            __m512 a0[ELM_QROWS_MULTI_MAX], a1[ELM_QROWS_MULTI_MAX];                          \
            for (int t = 0; t < tb; t++)                                                      \
                a0[t] = a1[t] = _mm512_setzero_ps();                                          \
            long p = 0;                                                                       \
            for (; p + 2 <= np; p += 2) {                                                     \
                NAME##_pairs(w + (size_t)p * 2 * BYTES, x, tb, p, a0);                        \
                NAME##_pairs(w + (size_t)(p + 1) * 2 * BYTES, x, tb, p + 1, a1);              \
            }                                                                                 \
            if (p < np) {                                                                     \
                NAME##_pairs(w + (size_t)p * 2 * BYTES, x, tb, p, a0);                        \
                p++;                                                                          \
            }                                                                                 \
            if (nb & 1) {                                                                     \
                const uint8_t *wp = w + (size_t)p * 2 * BYTES;                                \
                __m512i wt = WT(TAILBYTES(wp)), w0 = WSTART(wt);                              \
                for (int t = 0; t < tb; t++) {                                                \
                    __m512i qa = _mm512_zextsi256_si512(                                      \
                        _mm256_load_si256((const __m256i *)(const void *)(x[t].q + 64 * p))); \
                    __m512i dp = DOTT(qa, wt, w0);                                            \
                    a1[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dp),                           \
                                            tail_scale(wp, x[t].d[2 * p]), a1[t]);            \
                }                                                                             \
            }                                                                                 \
            for (int t = 0; t < tb; t++) {                                                    \
                float s = _mm512_reduce_add_ps(_mm512_add_ps(a0[t], a1[t]));                  \
                float *o = y + (size_t)t * (size_t)ldy + r;                                   \
                *o = accumulate ? *o + s : s;                                                 \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
    ATTR static void NAME(const uint8_t *w, size_t ldw, int64_t cols, const struct elm_qact *x, \
                          int m, float *y, long ldy, long nrows, bool accumulate)             \
    {                                                                                         \
        /* a constant count: the token loops unrolled */                                      \
        ELM_QROWS_MULTI_DISPATCH(m, NAME##_tb, w, ldw, cols, x, y, ldy, nrows, accumulate)    \
    }

/* Q4_0: the nibbles once, the bias term per token as in one-token rows.
 * Q8_0: the other way round from one-token rows, the activations made
 * unsigned (+128) against the weights as they are, so that the bias term,
 * 128 x the sums of 4 weights, is the row's and computed once for every
 * token; the int32 sums are the same exact integers. */
#define WT_Q4_VNNI(v) q4_nibbles_gfni(v)
#define WSTART_Q4_VNNI(wt) ((void)(wt), _mm512_setzero_si512())
#define DOTT_Q4_VNNI(qa, wt, w0) ((void)(w0), _mm512_dpbusd_epi32(PREP_Q4_VNNI(qa), wt, qa))
#define WT_Q8_VNNI(v) (v)
#define WSTART_Q8_VNNI(wt)                                                                    \
    _mm512_sub_epi32(_mm512_setzero_si512(),                                                  \
                     _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(-128), wt))
#define DOTT_Q8_VNNI(qa, wt, w0)                                                              \
    _mm512_dpbusd_epi32(w0, _mm512_xor_si512(qa, _mm512_set1_epi8(-128)), wt)

QROWS_MULTI(q4_0_vnni_multi, VNNI, ELM_Q4_0_BYTES, WT_Q4_VNNI, WSTART_Q4_VNNI, DOTT_Q4_VNNI,
            q4_pair_bytes, q4_tail_bytes, q4_wscale)
QROWS_MULTI(q8_0_vnni_multi, VNNI, ELM_Q8_0_BYTES, WT_Q8_VNNI, WSTART_Q8_VNNI, DOTT_Q8_VNNI,
            q8_pair_bytes, q8_tail_bytes, q8_wscale)

elm_qrows_multi_fn elm_q80_q40_rows_multi_avx512(enum elm_dtype dtype, int64_t cols)
{
    (void)cols; /* any width */
    if (dtype == ELM_DTYPE_Q8_0)
        return q8_0_vnni_multi;
    if (dtype == ELM_DTYPE_Q4_0)
        return elm_cpu()->gfni ? q4_0_vnni_multi : NULL;
    return NULL;
}

/* VNNI for Q8_0; VNNI and GFNI (the nibbles in one instruction) for Q4_0. */
elm_qrows_fn elm_q80_q40_rows_avx512(enum elm_dtype dtype, bool vnni)
{
    if (dtype == ELM_DTYPE_Q8_0)
        return vnni ? q8_0_vnni : q8_0_bw;
    if (dtype == ELM_DTYPE_Q4_0)
        return vnni && elm_cpu()->gfni ? q4_0_vnni : q4_0_bw;
    return NULL;
}

/* ------------------------------------------------------------ widening */

/* Nibbles to floats through a 16-entry table (vpermps reads only the low
 * four bits of each index): no integer subtract or conversion. */
BW static void widen_q4_0(const uint8_t *b, float *dst, long nb)
{
    const __m512 table = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
    for (long i = 0; i < nb; i++, b += ELM_Q4_0_BYTES, dst += 32) {
        __m512 d = _mm512_set1_ps(half(b));
        __m512i z = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(b + 2)));
        _mm512_storeu_ps(dst, _mm512_mul_ps(_mm512_permutexvar_ps(z, table), d));
        _mm512_storeu_ps(dst + 16, _mm512_mul_ps(
                                       _mm512_permutexvar_ps(_mm512_srli_epi32(z, 4), table), d));
    }
}

BW static void widen_q8_0(const uint8_t *b, float *dst, long nb)
{
    for (long i = 0; i < nb; i++, b += ELM_Q8_0_BYTES, dst += 32) {
        __m512 d = _mm512_set1_ps(half(b));
        __m512 lo = _mm512_cvtepi32_ps(
            _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(b + 2))));
        __m512 hi = _mm512_cvtepi32_ps(
            _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(b + 18))));
        _mm512_storeu_ps(dst, _mm512_mul_ps(lo, d));
        _mm512_storeu_ps(dst + 16, _mm512_mul_ps(hi, d));
    }
}

void elm_quant_widen_avx512(const void *src, enum elm_dtype dtype, float *dst, size_t n)
{
    if (dtype == ELM_DTYPE_Q8_0)
        widen_q8_0(src, dst, (long)(n / 32));
    else
        widen_q4_0(src, dst, (long)(n / 32));
}

#else /* not x86-64 GCC/Clang: nothing here (kernels.c never asks) */

void elm_quantize_act_avx512(const float *x, struct elm_qact *a)
{
    elm_quantize_act_ref(x, a);
}

elm_qrows_fn elm_q80_q40_rows_avx512(enum elm_dtype dtype, bool vnni)
{
    (void)dtype, (void)vnni;
    return NULL;
}

elm_qrows_multi_fn elm_q80_q40_rows_multi_avx512(enum elm_dtype dtype, int64_t cols)
{
    (void)dtype, (void)cols;
    return NULL;
}

void elm_quant_widen_avx512(const void *src, enum elm_dtype dtype, float *dst, size_t n)
{
    (void)src, (void)dtype, (void)dst, (void)n;
}
#endif
