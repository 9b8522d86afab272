/* q8q4_avx2.c: AVX2 Q8_0 / Q4_0 kernels: the int8 rounding of
 * activations (act_int8.h) and rows x int8 activations (decode).
 *
 * One block of 32 weights per 256-bit register: vpmaddubsw (u8 x s8 pairs
 * to int16) then vpmaddwd by ones (to int32), exact.  Q4_0 nibbles are the
 * weight + 8, unsigned; 8 x the activations' pair sums is subtracted in
 * int16 (computed once per block for all rows at hand).  Q8_0 is signed x
 * signed: |w| times x with w's sign (vpsignb), at most 2 x 128 x 127 in
 * int16.  Per block and row one conversion, one FMA by d_w * d_x.  Q4_0 goes
 * four rows at a time, sharing the activation loads and the scale
 * conversion (f16 to f32 and the product with d_x, four rows in one
 * register); a row gets the same operations and roundings in a group of
 * four as alone, so any row range gives the same bits. */
#include "config.h"

#include "engine/kernels/q8q4.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <string.h>

#include "engine/kernels/blocks.h"
#include "engine/kernels/arch/x86/simd_x86.h"

/* Software prefetch per row stream, this many bytes ahead: the hardware
 * prefetchers alone followed four interleaved rows at a third of the
 * bandwidth, and one row at 60-75 % (the distance: q8q4_avx512.c). */
#define PF_BYTES 8192

AVX2 void elm_quantize_act_avx2(const float *x, struct elm_qact *a)
{
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    long nb = (long)(a->n / ELM_QA_BLOCK);
    for (long b = 0; b < nb; b++, x += ELM_QA_BLOCK) {
        __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
        __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
        __m256 m = _mm256_max_ps(
            _mm256_max_ps(_mm256_and_ps(v0, absmask), _mm256_and_ps(v1, absmask)),
            _mm256_max_ps(_mm256_and_ps(v2, absmask), _mm256_and_ps(v3, absmask)));
        __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        h = _mm_max_ps(h, _mm_movehl_ps(h, h));
        h = _mm_max_ss(h, _mm_movehdup_ps(h));
        float amax = _mm_cvtss_f32(h);
        float id; /* act_int8.c's scalar steps, so that the bytes are the same */
        a->d[b] = elm_qact_scale(amax, &id);
        __m256 vid = _mm256_set1_ps(id);
        /* vcvtps2dq rounds as nearbyintf does (MXCSR: to nearest even) */
        __m256i q0 = _mm256_cvtps_epi32(_mm256_mul_ps(v0, vid));
        __m256i q1 = _mm256_cvtps_epi32(_mm256_mul_ps(v1, vid));
        __m256i q2 = _mm256_cvtps_epi32(_mm256_mul_ps(v2, vid));
        __m256i q3 = _mm256_cvtps_epi32(_mm256_mul_ps(v3, vid));
        /* packs work per 128-bit lane: the bytes come out as 4-byte groups
         * of q0 q1 q2 q3 (low lane) then the same (high lane) */
        __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q0, q1), _mm256_packs_epi32(q2, q3));
        _mm256_storeu_si256((__m256i *)(void *)(a->q + ELM_QA_BLOCK * b),
                            _mm256_permutevar8x32_epi32(p, order));
        __m256i s01 = _mm256_add_epi32(q0, q1), s23 = _mm256_add_epi32(q2, q3);
        /* both halves' sums at once: lanes 0-3 from s01, 4-7 from s23 */
        __m256i s = _mm256_hadd_epi32(s01, s23);
        s = _mm256_hadd_epi32(s, s);
        __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
        a->sum16[2 * b] = (int16_t)_mm_cvtsi128_si32(t);
        a->sum16[2 * b + 1] = (int16_t)_mm_extract_epi32(t, 1);
    }
}

AVX2 static INLINE float half(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

AVX2 static INLINE float hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* d_w * d_x for four rows at once: the f16 d_w (word 0 of each row's block)
 * gathered by two word and one dword unpack, one conversion, one multiply;
 * lane i is row i.  Per row, the same product as one_scale's. */
AVX2 static INLINE __m128 scales4(const uint8_t *w, size_t ldw, float dx)
{
    __m128i l0 = _mm_loadu_si128((const __m128i *)(const void *)w);
    __m128i l1 = _mm_loadu_si128((const __m128i *)(const void *)(w + ldw));
    __m128i l2 = _mm_loadu_si128((const __m128i *)(const void *)(w + 2 * ldw));
    __m128i l3 = _mm_loadu_si128((const __m128i *)(const void *)(w + 3 * ldw));
    __m128i h = _mm_unpacklo_epi32(_mm_unpacklo_epi16(l0, l1), _mm_unpacklo_epi16(l2, l3));
    return _mm_mul_ps(_mm_cvtph_ps(h), _mm_set1_ps(dx));
}

AVX2 static INLINE __m256 one_scale(const uint8_t *w, float dx)
{
    return _mm256_set1_ps(half(w) * dx);
}

/* Lane i of s in all eight lanes. */
AVX2 static INLINE __m256 lane(__m128 s, int i)
{
    return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(s), _mm256_set1_epi32(i));
}

/* A block's weights made ready for any number of activations: Q4_0 the
 * nibbles (q in both lanes, the upper one shifted by 4: low nibbles, then
 * high); Q8_0 the signed weights and |w|. */
struct ready {
    __m256i w, aw;
};

AVX2 static INLINE struct ready q4_ready(const uint8_t *blk)
{
    __m256i v = _mm256_broadcastsi128_si256(
        _mm_loadu_si128((const __m128i *)(const void *)(blk + 2)));
    return (struct ready){_mm256_setzero_si256(),
                          _mm256_and_si256(_mm256_srlv_epi64(v, _mm256_setr_epi64x(0, 0, 4, 4)),
                                           _mm256_set1_epi8(15))};
}

AVX2 static INLINE struct ready q8_ready(const uint8_t *blk)
{
    __m256i wq = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 2));
    return (struct ready){wq, _mm256_abs_epi8(wq)};
}

/* The exact int32 lane sums of a ready block times activations qa: Q4_0
 * nibbles (+8) x x minus 8 x x (c16, per pair of activations); Q8_0 |w| x
 * (x with w's sign). */
AVX2 static INLINE __m256i q4_dot_ready(struct ready r, __m256i qa, __m256i c16)
{
    __m256i p16 = _mm256_sub_epi16(_mm256_maddubs_epi16(r.aw, qa), c16);
    return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

AVX2 static INLINE __m256i q8_dot_ready(struct ready r, __m256i qa, __m256i c16)
{
    (void)c16;
    __m256i p16 = _mm256_maddubs_epi16(r.aw, _mm256_sign_epi8(qa, r.w));
    return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

/* What a token's activations give every row's dot (c16 above): Q4_0 the
 * 8 x x correction, Q8_0 nothing. */
AVX2 static INLINE __m256i q4_c16(__m256i qa)
{
    return _mm256_maddubs_epi16(_mm256_set1_epi8(8), qa);
}

AVX2 static INLINE __m256i q8_c16(__m256i qa)
{
    (void)qa;
    return _mm256_setzero_si256();
}

AVX2 static INLINE __m256i q4_dot(const uint8_t *blk, __m256i qa, __m256i c16)
{
    return q4_dot_ready(q4_ready(blk), qa, c16);
}

AVX2 static INLINE __m256i q8_dot(const uint8_t *blk, __m256i qa, __m256i c16)
{
    return q8_dot_ready(q8_ready(blk), qa, c16);
}

/* R rows (constant after inlining) times the activations, a block at a
 * time; PREP is what the rows share per block.  One accumulator per row.
 * GROUP rows at a time: 4 for Q4_0 (compute-bound on one core: sharing the
 * scales measured 5-10 % faster), 1 for Q8_0 (memory-bound: one stream of
 * weights per thread measured 15-25 % faster at 2 threads than four
 * interleaved rows; more DRAM page switches and prefetch streams). */
#define QROWS2(NAME, BYTES, PREP, DOT, GROUP)                                                 \
    AVX2 static INLINE void NAME##_r(const uint8_t *w, size_t ldw, long nb,                   \
                                     const struct elm_qact *x, float *y, bool accumulate,     \
                                     const int R)                                             \
    {                                                                                         \
        __m256 acc[4], sc[4];                                                                 \
        _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) acc[i] = _mm256_setzero_ps();     \
        for (long b = 0; b < nb; b++) {                                                       \
            __m256i qa = _mm256_load_si256((const __m256i *)(const void *)(x->q + 32 * b));   \
            __m256i c16 = PREP;                                                               \
            const uint8_t *wb = w + (size_t)b * BYTES;                                        \
            if (R == 4) {                                                                     \
                __m128 s4 = scales4(wb, ldw, x->d[b]);                                        \
                _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) sc[i] = lane(s4, i);      \
            } else {                                                                          \
                sc[0] = one_scale(wb, x->d[b]);                                               \
            }                                                                                 \
            /* the stream of row slot i goes on in row i + R of the next group */            \
            size_t pf = (size_t)b * BYTES + PF_BYTES < ldw ? PF_BYTES                          \
                                                           : PF_BYTES + (size_t)(R - 1) * ldw; \
            _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) {                             \
                _mm_prefetch((const char *)(wb + (size_t)i * ldw) + pf, _MM_HINT_T0);         \
                acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(DOT(wb + (size_t)i * ldw, qa, c16)), \
                                         sc[i], acc[i]);                                      \
            }                                                                                 \
        }                                                                                     \
        _Pragma("GCC unroll 4") for (int i = 0; i < R; i++)                                   \
        {                                                                                     \
            float s = hsum(acc[i]);                                                           \
            y[i] = accumulate ? y[i] + s : s;                                                 \
        }                                                                                     \
    }                                                                                         \
    AVX2 static void NAME(const uint8_t *w, size_t ldw, int64_t cols, const struct elm_qact *x, \
                          float *y, long nrows, bool accumulate)                              \
    {                                                                                         \
        long nb = (long)(cols / 32), r = 0;                                                   \
        for (; GROUP == 4 && r + 4 <= nrows; r += 4)                                          \
            NAME##_r(w + (size_t)r * ldw, ldw, nb, x, y + r, accumulate, 4);                  \
        for (; r < nrows; r++)                                                                \
            NAME##_r(w + (size_t)r * ldw, ldw, nb, x, y + r, accumulate, 1);                  \
    }

QROWS2(q4_0_avx2, ELM_Q4_0_BYTES, q4_c16(qa), q4_dot, 4)
QROWS2(q8_0_avx2, ELM_Q8_0_BYTES, q8_c16(qa), q8_dot, 1)

/* Several tokens (a pass verifying drafts): each weight block is loaded
 * and made ready once (Q8_0: |w|; Q4_0: the nibbles), its f16 scale
 * converted once, then met by every token's activations through the
 * one-token kernel's own dot (q4_dot_ready, q8_dot_ready), so each token's
 * sums are its bits.  q4 and tb are constants in each instance (ELM_QROWS_MULTI_DISPATCH). */
AVX2 static INLINE void multi_tb(const uint8_t *w, size_t ldw, long nb, const struct elm_qact *x,
                                 float *y, long ldy, long nrows, bool accumulate, const bool q4,
                                 const int tb)
{
    const size_t bytes = q4 ? ELM_Q4_0_BYTES : ELM_Q8_0_BYTES;
    for (long r = 0; r < nrows; r++, w += ldw) {
        __m256 acc[ELM_QROWS_MULTI_MAX];
        for (int t = 0; t < tb; t++)
            acc[t] = _mm256_setzero_ps();
        for (long b = 0; b < nb; b++) {
            const uint8_t *wb = w + (size_t)b * bytes;
            _mm_prefetch((const char *)wb + PF_BYTES, _MM_HINT_T0);
            struct ready rd = q4 ? q4_ready(wb) : q8_ready(wb);
            float hw = half(wb);
            for (int t = 0; t < tb; t++) {
                __m256i qa = _mm256_load_si256((const __m256i *)(const void *)(x[t].q + 32 * b));
                __m256i p = q4 ? q4_dot_ready(rd, qa, q4_c16(qa)) : q8_dot_ready(rd, qa, q8_c16(qa));
                acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(hw * x[t].d[b]),
                                         acc[t]);
            }
        }
        for (int t = 0; t < tb; t++) {
            float v = hsum(acc[t]);
            float *o = y + (size_t)t * (size_t)ldy + r;
            *o = accumulate ? *o + v : v;
        }
    }
}

AVX2 static void q8_0_multi(const uint8_t *w, size_t ldw, int64_t cols, const struct elm_qact *x,
                            int m, float *y, long ldy, long nrows, bool accumulate)
{
    ELM_QROWS_MULTI_DISPATCH(m, multi_tb, w, ldw, (long)(cols / 32), x, y, ldy, nrows, accumulate,
                             false)
}

AVX2 static void q4_0_multi(const uint8_t *w, size_t ldw, int64_t cols, const struct elm_qact *x,
                            int m, float *y, long ldy, long nrows, bool accumulate)
{
    ELM_QROWS_MULTI_DISPATCH(m, multi_tb, w, ldw, (long)(cols / 32), x, y, ldy, nrows, accumulate,
                             true)
}

elm_qrows_fn elm_q80_q40_rows_avx2(enum elm_dtype dtype)
{
    return dtype == ELM_DTYPE_Q8_0 ? q8_0_avx2 : dtype == ELM_DTYPE_Q4_0 ? q4_0_avx2 : NULL;
}

elm_qrows_multi_fn elm_q80_q40_rows_multi_avx2(enum elm_dtype dtype)
{
    return dtype == ELM_DTYPE_Q8_0 ? q8_0_multi : dtype == ELM_DTYPE_Q4_0 ? q4_0_multi : NULL;
}

#else /* not x86-64 GCC/Clang */

void elm_quantize_act_avx2(const float *x, struct elm_qact *a)
{
    elm_quantize_act_ref(x, a);
}

elm_qrows_fn elm_q80_q40_rows_avx2(enum elm_dtype dtype)
{
    (void)dtype;
    return NULL;
}

elm_qrows_multi_fn elm_q80_q40_rows_multi_avx2(enum elm_dtype dtype)
{
    (void)dtype;
    return NULL;
}
#endif
