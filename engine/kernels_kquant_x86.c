/* kernels_kquant_x86.c: the AVX2 and AVX-512 Q4_K, Q5_K and Q6_K rows
 * against int8 activations (the math is in kernels_kquant.c's comment).
 *
 * The integer core is u8 x s8 -> int32: weights as unsigned bytes (nibbles
 * plus high bits, 0..31 or 0..63), activations as signed bytes.  AVX2 and
 * AVX-512BW use vpmaddubsw + vpmaddwd (pairs of products stay below 2 * 63
 * * 127 = 16002: no int16 saturation); AVX512-VNNI does both in one
 * vpdpbusd.  The int32 lanes of each sub-block are then summed into one
 * integer per sub-block (a transposing reduction), and only those meet the
 * float scales: a few float operations per 256 weights.  What does not
 * depend on the row (for AVX-512 Q4_K/Q5_K: the activations reordered to
 * match the weights' nibbles, and each sub-block's -dx * sum(qx) for the
 * mins) is computed once per call, not once per row: the rows then cost
 * about what Q4_0's do per weight (measured in cache: 76 G weights/s on
 * one Zen 5 core, both).
 *
 * Compiled with per-function target attributes (as kernels.c): the file
 * builds with the default flags and runs only on CPUs that have the set. */
#include "config.h"

#include "engine/kernels_kquant.h"

#ifdef ELM_KQUANT_X86

#include <immintrin.h>
#include <string.h>

#include "engine/quant.h"

#define AVX2 __attribute__((target("avx2,fma,f16c")))
#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define AVX512VNNI                                                                                 \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define INLINE __attribute__((always_inline)) inline

/* The 6-bit scales (sc) and mins (m) of the 8 sub-blocks of a Q4_K/Q5_K
 * block as 8 bytes each, from the 12 packed bytes read as three words:
 * sub-blocks 0..3 are the low 6 bits of words 0 and 1; 4..7 take their low
 * 4 bits from word 2 and their top 2 from the spare top bits of words 0
 * (scales) and 1 (mins). */
static INLINE void k_scales(const uint8_t *s, uint64_t *sc, uint64_t *m)
{
    uint32_t a, b, c;
    memcpy(&a, s, 4);
    memcpy(&b, s + 4, 4);
    memcpy(&c, s + 8, 4);
    uint32_t sc_hi = (c & 0x0f0f0f0fu) | ((a >> 2) & 0x30303030u);
    uint32_t m_hi = ((c >> 4) & 0x0f0f0f0fu) | ((b >> 2) & 0x30303030u);
    *sc = (a & 0x3f3f3f3fu) | (uint64_t)sc_hi << 32;
    *m = (b & 0x3f3f3f3fu) | (uint64_t)m_hi << 32;
}

AVX2 static INLINE float half(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

/* 8 unsigned bytes to 8 floats. */
AVX2 static INLINE __m256 u8x8_ps(uint64_t v)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)v)));
}

AVX2 static INLINE float hsum256(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#define LOAD256(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))

/* ------------------------------------------------------------------ AVX2 */

/* 32 u8 x s8 products summed to 8 int32 lanes (4 products each). */
AVX2 static INLINE __m256i dot32(__m256i u, __m256i s)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

/* The totals of 8 vectors of 8 int32 lanes, in the order
 * [p0 l0-3, p1 l0-3, p2 l0-3, p3 l0-3, p0 l4-7, p1 l4-7, p2 l4-7, p3 l4-7]
 * for *q0 (p4..p7 for *q1): hadd adds neighbours within 128-bit lanes. */
AVX2 static INLINE void hadd8(__m256i p0, __m256i p1, __m256i p2, __m256i p3, __m256i p4,
                              __m256i p5, __m256i p6, __m256i p7, __m256i *q0, __m256i *q1)
{
    *q0 = _mm256_hadd_epi32(_mm256_hadd_epi32(p0, p1), _mm256_hadd_epi32(p2, p3));
    *q1 = _mm256_hadd_epi32(_mm256_hadd_epi32(p4, p5), _mm256_hadd_epi32(p6, p7));
}

/* Chunk c of a Q4_K/Q5_K block: the 32 bytes' low nibbles (sub-block 2c)
 * against qx[0..32), high nibbles (2c + 1) against qx[32..64); for Q5_K,
 * qhc is qh shifted right by 2c: its bits 0 and 1 are the fifth bits. */
AVX2 static INLINE void chunk45_avx2(const uint8_t *q, __m256i qhc, const int8_t *qx, bool five,
                                     __m256i *lo_sum, __m256i *hi_sum)
{
    const __m256i m0f = _mm256_set1_epi8(15), bit4 = _mm256_set1_epi8(16);
    __m256i w = LOAD256(q);
    __m256i lo = _mm256_and_si256(w, m0f);
    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), m0f);
    if (five) {
        lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(qhc, 4), bit4));
        hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(qhc, 3), bit4));
    }
    *lo_sum = dot32(lo, LOAD256(qx));
    *hi_sum = dot32(hi, LOAD256(qx + 32));
}

AVX2 static INLINE float row_q45_k_avx2(const uint8_t *b, int64_t nb, const struct elm_qact *x,
                                        bool five)
{
    const size_t bytes = five ? ELM_Q5_K_BYTES : ELM_Q4_K_BYTES;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc = _mm256_setzero_ps(), accm = acc;
    for (int64_t k = 0; k < nb; k++, b += bytes) {
        const uint8_t *qs = b + (five ? 48 : 16);
        const int8_t *qx = x->q + 256 * k;
        __m256i qh = five ? LOAD256(b + 16) : _mm256_setzero_si256();
        __m256i p0, p1, p2, p3, p4, p5, p6, p7, q0, q1;
        chunk45_avx2(qs, qh, qx, five, &p0, &p1);
        chunk45_avx2(qs + 32, _mm256_srli_epi16(qh, 2), qx + 64, five, &p2, &p3);
        chunk45_avx2(qs + 64, _mm256_srli_epi16(qh, 4), qx + 128, five, &p4, &p5);
        chunk45_avx2(qs + 96, _mm256_srli_epi16(qh, 6), qx + 192, five, &p6, &p7);
        hadd8(p0, p1, p2, p3, p4, p5, p6, p7, &q0, &q1);
        __m256i s = _mm256_add_epi32(_mm256_permute2x128_si256(q0, q1, 0x20),
                                     _mm256_permute2x128_si256(q0, q1, 0x31));
        __m256i t = _mm256_madd_epi16(LOAD256(x->sum16 + 16 * k), ones);
        uint64_t sc, mn;
        k_scales(b + 4, &sc, &mn);
        __m256 dx = _mm256_loadu_ps(x->d + 8 * k);
        __m256 f = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(half(b)), u8x8_ps(sc)), dx);
        __m256 fm = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(half(b + 2)), u8x8_ps(mn)), dx);
        acc = _mm256_fmadd_ps(f, _mm256_cvtepi32_ps(s), acc);
        accm = _mm256_fmadd_ps(fm, _mm256_cvtepi32_ps(t), accm);
    }
    return hsum256(_mm256_sub_ps(acc, accm));
}

/* Half of a Q6_K block (ql: its 64 bytes, qh: its 32) against its 128
 * activations: weights 0-31, 32-63, 64-95, 96-127 are the low nibbles of
 * ql[0..32), ql[32..64), then the high nibbles, with qh bits 0-1, 2-3, 4-5,
 * 6-7 on top (moved to bits 4-5). */
AVX2 static INLINE void half6_avx2(const uint8_t *ql, const uint8_t *qhp, const int8_t *qx,
                                   __m256i *p0, __m256i *p1, __m256i *p2, __m256i *p3)
{
    const __m256i m0f = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
    __m256i ql0 = LOAD256(ql), ql1 = LOAD256(ql + 32), qh = LOAD256(qhp);
    __m256i v0 = _mm256_or_si256(_mm256_and_si256(ql0, m0f),
                                 _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
    __m256i v1 = _mm256_or_si256(_mm256_and_si256(ql1, m0f),
                                 _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
    __m256i v2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m0f),
                                 _mm256_and_si256(qh, m30));
    __m256i v3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m0f),
                                 _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
    *p0 = dot32(v0, LOAD256(qx));
    *p1 = dot32(v1, LOAD256(qx + 32));
    *p2 = dot32(v2, LOAD256(qx + 64));
    *p3 = dot32(v3, LOAD256(qx + 96));
}

AVX2 static float row_q6_k_avx2(const uint8_t *b, int64_t nb, const struct elm_qact *x)
{
    /* hadd8 leaves sub-blocks in the order 0 2 4 6 1 3 5 7 (| 8 10 ...): the
     * scales and offsets are put in that order too */
    const __m128i order8 = _mm_setr_epi8(0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15);
    const __m256i order16 = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15,
                                             0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0;
    for (int64_t k = 0; k < nb; k++, b += ELM_Q6_K_BYTES) {
        const int8_t *qx = x->q + 256 * k;
        __m256i p0, p1, p2, p3, p4, p5, p6, p7, q0, q1;
        half6_avx2(b, b + 128, qx, &p0, &p1, &p2, &p3);
        half6_avx2(b + 64, b + 160, qx + 128, &p4, &p5, &p6, &p7);
        hadd8(p0, p1, p2, p3, p4, p5, p6, p7, &q0, &q1);
        /* sum((q - 32) * qx) = sum(q * qx) - 32 * sum16, exact */
        __m256i s16 = _mm256_shuffle_epi8(LOAD256(x->sum16 + 16 * k), order16);
        q0 = _mm256_sub_epi32(
            q0, _mm256_slli_epi32(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(s16)), 5));
        q1 = _mm256_sub_epi32(
            q1, _mm256_slli_epi32(_mm256_cvtepi16_epi32(_mm256_extracti128_si256(s16, 1)), 5));
        __m128i sc =
            _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(b + 192)), order8);
        __m256 d = _mm256_set1_ps(half(b + 208));
        __m256 g0 =
            _mm256_mul_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc))),
                          _mm256_broadcast_ps((const __m128 *)(const void *)(x->d + 8 * k)));
        __m256 g1 = _mm256_mul_ps(
            _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8)))),
            _mm256_broadcast_ps((const __m128 *)(const void *)(x->d + 8 * k + 4)));
        acc0 = _mm256_fmadd_ps(g0, _mm256_cvtepi32_ps(q0), acc0);
        acc1 = _mm256_fmadd_ps(g1, _mm256_cvtepi32_ps(q1), acc1);
    }
    return hsum256(_mm256_add_ps(acc0, acc1));
}

ELM_KQUANT_ROWS(rows_q4_k_avx2, AVX2, row_q45_k_avx2(b, nb, x, false))
ELM_KQUANT_ROWS(rows_q5_k_avx2, AVX2, row_q45_k_avx2(b, nb, x, true))
ELM_KQUANT_ROWS(rows_q6_k_avx2, AVX2, row_q6_k_avx2(b, nb, x))

/* --------------------------------------------------------------- AVX-512 */

/* Activations of up to this many columns are laid out once per call on the
 * stack for the AVX-512 Q4_K/Q5_K kernels (20 KiB). */
#define KQ_STACK_COLS 16384

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
 * alone (CPUs without VNNI; the tests run both). */
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
#include "engine/kernels_kquant_avx512.h"
#undef KQ_TARGET
#undef KQ_DOT
#undef KQ_NAME

#define KQ_TARGET AVX512VNNI
#define KQ_DOT dot64_vnni
#define KQ_NAME(n) n##_avx512vnni
#include "engine/kernels_kquant_avx512.h"
#undef KQ_TARGET
#undef KQ_DOT
#undef KQ_NAME

/* ---------------------------------------------------------------- lookup */

elm_qrows_fn elm_kquant_rows_x86(enum elm_dtype dtype, const char *set)
{
    static const elm_qrows_fn avx2[3] = {rows_q4_k_avx2, rows_q5_k_avx2, rows_q6_k_avx2};
    static const elm_qrows_fn bw[3] = {rows_q4_k_avx512bw, rows_q5_k_avx512bw, rows_q6_k_avx512bw};
    static const elm_qrows_fn vnni[3] = {rows_q4_k_avx512vnni, rows_q5_k_avx512vnni,
                                         rows_q6_k_avx512vnni};
    int i = dtype == ELM_DTYPE_Q4_K ? 0 : dtype == ELM_DTYPE_Q5_K ? 1 : 2;
    __builtin_cpu_init();
    /* the same feature tests as kernels.c's sets */
    bool has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("f16c");
    bool has_avx512 = has_avx2 && __builtin_cpu_supports("avx512f") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512dq");
    if (strcmp(set, "avx2") == 0 && has_avx2)
        return avx2[i];
    if (strcmp(set, "avx512") == 0 && has_avx512)
        return __builtin_cpu_supports("avx512vnni") ? vnni[i] : bw[i];
    if (strcmp(set, "avx512bw") == 0 && has_avx512)
        return bw[i];
    return NULL;
}

#endif
