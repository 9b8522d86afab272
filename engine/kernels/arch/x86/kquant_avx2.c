/* kquant_avx2.c: the AVX2 Q4_K, Q5_K and Q6_K rows against int8
 * activations (kquant_x86.h says how). */
#include "config.h"

#include "engine/kernels/arch/x86/kquant_x86.h"

#ifdef ELM_KQUANT_X86

/* 8 unsigned bytes to 8 floats. */
AVX2 static INLINE __m256 u8x8_ps(uint64_t v)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)v)));
}

/* 32 u8 x s8 products to 16 int16 lanes (pairs; no saturation: pairs stay
 * below 2 * 63 * 127). */
AVX2 static INLINE __m256i dot32_16(__m256i u, const int8_t *s)
{
    return _mm256_maddubs_epi16(u, LOAD256(s));
}

/* The 8 sub-block totals of a Q4_K/Q5_K block from p0..p7, the int16 pair
 * sums of sub-blocks 0..7 (16 lanes of 2 products each; |product| <= 31 *
 * 127).  Two rounds of hadd in int16 (8 products a lane: <= 31496, no
 * wrap), one vpmaddwd to int32, then the two 128-bit halves added: 10
 * shuffle-class operations instead of 8 vpmaddwd and 6 32-bit hadds. */
AVX2 static INLINE __m256i sum8_q45(__m256i p0, __m256i p1, __m256i p2, __m256i p3, __m256i p4,
                                    __m256i p5, __m256i p6, __m256i p7)
{
    const __m256i ones = _mm256_set1_epi16(1);
    /* per 128-bit lane: sub-blocks 0 0 1 1 2 2 3 3 (and 4 .. 7) */
    __m256i a = _mm256_hadd_epi16(_mm256_hadd_epi16(p0, p1), _mm256_hadd_epi16(p2, p3));
    __m256i b = _mm256_hadd_epi16(_mm256_hadd_epi16(p4, p5), _mm256_hadd_epi16(p6, p7));
    a = _mm256_madd_epi16(a, ones); /* per lane: 0 1 2 3 */
    b = _mm256_madd_epi16(b, ones); /* per lane: 4 5 6 7 */
    return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20),
                            _mm256_permute2x128_si256(a, b, 0x31));
}

/* Per call (the activations do not depend on the row): for super-blocks
 * [k0, k0 + n), pre holds dx_j, then -dx_j * (the sum of sub-block j's
 * activations), 16 floats a super-block, for the AVX2 Q4_K/Q5_K rows. */
AVX2 static void kq_prep_q45_avx2(const struct elm_qact *x, int64_t k0, int64_t n, float *pre)
{
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t i = 0; i < n; i++, pre += 16) {
        const int64_t k = k0 + i;
        __m256 dx = _mm256_loadu_ps(x->d + 8 * k);
        __m256 t = _mm256_cvtepi32_ps(_mm256_madd_epi16(LOAD256(x->sum16 + 16 * k), ones));
        _mm256_store_ps(pre, dx);
        _mm256_store_ps(pre + 8, _mm256_mul_ps(_mm256_sub_ps(_mm256_setzero_ps(), dx), t));
    }
}

/* The bits of qh at bit n (n = 0..7) moved to bit 4 (within each byte:
 * the mask drops what the 16-bit shift brought in from the neighbour). */
AVX2 static INLINE __m256i bit_to_4(__m256i qh, int n)
{
    const __m256i bit4 = _mm256_set1_epi8(16);
    if (n < 4)
        qh = _mm256_slli_epi16(qh, 4 - n);
    else if (n > 4)
        qh = _mm256_srli_epi16(qh, n - 4);
    return _mm256_and_si256(qh, bit4);
}

/* Chunk c of a Q4_K/Q5_K block: the 32 bytes' low nibbles (sub-block 2c)
 * against qx[0..32), high nibbles (2c + 1) against qx[32..64), as int16
 * pair sums; for Q5_K, the fifth bits are bits 2c and 2c + 1 of qh[l]. */
AVX2 static INLINE void chunk45_avx2(const uint8_t *q, __m256i qh, int c, const int8_t *qx,
                                     bool five, __m256i *lo_sum, __m256i *hi_sum)
{
    const __m256i m0f = _mm256_set1_epi8(15);
    __m256i w = LOAD256(q);
    __m256i lo = _mm256_and_si256(w, m0f);
    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), m0f);
    if (five) {
        lo = _mm256_or_si256(lo, bit_to_4(qh, 2 * c));
        hi = _mm256_or_si256(hi, bit_to_4(qh, 2 * c + 1));
    }
    *lo_sum = dot32_16(lo, qx);
    *hi_sum = dot32_16(hi, qx + 32);
}

/* Super-blocks [k0, k0 + n) of a Q4_K/Q5_K row (b: block k0) against qx (the
 * activations of block k0) and pre (kq_prep_q45_avx2), added to *acc (scale
 * part) and *accm (min part).  Chunk c's 32 bytes hold sub-block 2c in
 * their low nibbles, 2c + 1 in the high ones, against qx[64c..64c+64) in
 * order: the activations need no reordering.  sc_j * S_j is an exact
 * integer (|S| <= 32 * 31 * 127, times 63 < 2^24: exact in a float too). */
AVX2 static INLINE void part_q45_k_avx2(const uint8_t *b, int64_t n, const int8_t *qx,
                                        const float *pre, bool five, __m256 *acc, __m256 *accm)
{
    const size_t bytes = five ? ELM_Q5_K_BYTES : ELM_Q4_K_BYTES;
    __m256 a = *acc, am = *accm;
    for (int64_t k = 0; k < n; k++, b += bytes, qx += 256, pre += 16) {
        kq_prefetch(b, bytes);
        const uint8_t *qs = b + (five ? 48 : 16);
        const __m256i qh = five ? LOAD256(b + 16) : _mm256_setzero_si256();
        __m256i p0, p1, p2, p3, p4, p5, p6, p7;
        chunk45_avx2(qs, qh, 0, qx, five, &p0, &p1);
        chunk45_avx2(qs + 32, qh, 1, qx + 64, five, &p2, &p3);
        chunk45_avx2(qs + 64, qh, 2, qx + 128, five, &p4, &p5);
        chunk45_avx2(qs + 96, qh, 3, qx + 192, five, &p6, &p7);
        __m256i s = sum8_q45(p0, p1, p2, p3, p4, p5, p6, p7);
        uint64_t sc, mn;
        k_scales(b + 4, &sc, &mn);
        /* d, dmin (and two halves of scale bytes, unused) in one load */
        __m256 dm = _mm256_castps128_ps256(_mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)(const void *)b)));
        __m256 d = _mm256_permutevar8x32_ps(dm, _mm256_setzero_si256());
        __m256 dmin = _mm256_permutevar8x32_ps(dm, _mm256_set1_epi32(1));
        s = _mm256_mullo_epi32(s, _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)sc)));
        a = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_load_ps(pre)), _mm256_cvtepi32_ps(s), a);
        am = _mm256_fmadd_ps(_mm256_mul_ps(dmin, u8x8_ps(mn)), _mm256_load_ps(pre + 8), am);
    }
    *acc = a;
    *accm = am;
}

AVX2 static INLINE void rows_q45_k_avx2(const uint8_t *w, size_t ldw, int64_t cols,
                                        const struct elm_qact *x, float *y, long nrows,
                                        bool accumulate, bool five)
{
    _Alignas(32) float pre[KQ_STACK_COLS / 16];
    const int64_t nb = cols / ELM_QK_K, group = KQ_STACK_COLS / ELM_QK_K;
    const size_t bytes = five ? ELM_Q5_K_BYTES : ELM_Q4_K_BYTES;
    if (nb <= group)
        kq_prep_q45_avx2(x, 0, nb, pre);
    for (long r = 0; r < nrows; r++) {
        const uint8_t *b = w + (size_t)r * ldw;
        __m256 acc = _mm256_setzero_ps(), accm = acc;
        for (int64_t k0 = 0; k0 < nb; k0 += group) {
            int64_t n = nb - k0 < group ? nb - k0 : group;
            if (nb > group)
                kq_prep_q45_avx2(x, k0, n, pre);
            part_q45_k_avx2(b + (size_t)k0 * bytes, n, x->q + 256 * k0, pre, five, &acc, &accm);
        }
        float v = hsum256(_mm256_add_ps(acc, accm));
        y[r] = accumulate ? y[r] + v : v;
    }
}

AVX2 static void rows_q4_k_avx2(const uint8_t *w, size_t ldw, int64_t cols,
                                const struct elm_qact *x, float *y, long nrows, bool accumulate)
{
    rows_q45_k_avx2(w, ldw, cols, x, y, nrows, accumulate, false);
}

AVX2 static void rows_q5_k_avx2(const uint8_t *w, size_t ldw, int64_t cols,
                                const struct elm_qact *x, float *y, long nrows, bool accumulate)
{
    rows_q45_k_avx2(w, ldw, cols, x, y, nrows, accumulate, true);
}

/* Q6_K.  Half h of a block (ql: its 64 bytes, qh: its 32) against its 128
 * activations: weights 0-31, 32-63, 64-95, 96-127 are the low nibbles of
 * ql[0..32), ql[32..64), then the high nibbles, with qh bits 0-1, 2-3, 4-5,
 * 6-7 on top (moved to bits 4-5).  Each 32 weights are two sub-blocks (one
 * per 128-bit lane); p0..p3 get their int16 pair sums. */
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
    *p0 = dot32_16(v0, qx);
    *p1 = dot32_16(v1, qx + 32);
    *p2 = dot32_16(v2, qx + 64);
    *p3 = dot32_16(v3, qx + 96);
}

/* The 16 sub-block totals of a Q6_K half pair: one round of hadd in int16
 * (4 products a lane: <= 4 * 63 * 127 = 32004, no wrap), vpmaddwd to int32,
 * one round of 32-bit hadd.  *q0 gets sub-blocks 0 2 4 6 1 3 5 7 (the
 * 128-bit lanes of p0..p3), *q1 8 10 12 14 9 11 13 15. */
AVX2 static INLINE void sum16_q6(const __m256i p[8], __m256i *q0, __m256i *q1)
{
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i a = _mm256_madd_epi16(_mm256_hadd_epi16(p[0], p[1]), ones);
    __m256i b = _mm256_madd_epi16(_mm256_hadd_epi16(p[2], p[3]), ones);
    __m256i c = _mm256_madd_epi16(_mm256_hadd_epi16(p[4], p[5]), ones);
    __m256i d = _mm256_madd_epi16(_mm256_hadd_epi16(p[6], p[7]), ones);
    *q0 = _mm256_hadd_epi32(a, b);
    *q1 = _mm256_hadd_epi32(c, d);
}

/* Per call, for super-blocks [k0, k0 + n): in the order of sum16_q6's
 * sub-blocks, off = 32 * (the sum of each sub-block's 16 activations) as
 * int32, so that sum((q - 32) * qx) = S - off exactly; and each
 * sub-block's dx.  16 int32 and 16 floats a super-block. */
AVX2 static void kq_prep_q6_avx2(const struct elm_qact *x, int64_t k0, int64_t n, int32_t *off,
                                 float *dxo)
{
    const __m256i order16 = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15,
                                             0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
    for (int64_t i = 0; i < n; i++, off += 16, dxo += 16) {
        const int64_t k = k0 + i;
        __m256i s16 = _mm256_shuffle_epi8(LOAD256(x->sum16 + 16 * k), order16);
        _mm256_store_si256(
            (__m256i *)(void *)off,
            _mm256_slli_epi32(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(s16)), 5));
        _mm256_store_si256(
            (__m256i *)(void *)(off + 8),
            _mm256_slli_epi32(_mm256_cvtepi16_epi32(_mm256_extracti128_si256(s16, 1)), 5));
        /* sub-block s meets activation block s / 2 */
        _mm256_store_ps(dxo, _mm256_broadcast_ps((const __m128 *)(const void *)(x->d + 8 * k)));
        _mm256_store_ps(dxo + 8,
                        _mm256_broadcast_ps((const __m128 *)(const void *)(x->d + 8 * k + 4)));
    }
}

/* Super-blocks [0, n) of a Q6_K row against qx and the tables of
 * kq_prep_q6_avx2.  sc * (S - off) is exact: |S - off| <= 16 * 32 * 127,
 * times 128 < 2^24. */
AVX2 static INLINE __m256 part_q6_k_avx2(const uint8_t *b, int64_t n, const int8_t *qx,
                                         const int32_t *off, const float *dxo, __m256 acc)
{
    /* sum16_q6 leaves sub-blocks in the order 0 2 4 6 1 3 5 7 (| 8 10 ...):
     * the scales are put in that order too */
    const __m128i order8 = _mm_setr_epi8(0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15);
    __m256 acc1 = _mm256_setzero_ps();
    for (int64_t k = 0; k < n; k++, b += ELM_Q6_K_BYTES, qx += 256, off += 16, dxo += 16) {
        kq_prefetch(b, ELM_Q6_K_BYTES);
        __m256i p[8], q0, q1;
        half6_avx2(b, b + 128, qx, &p[0], &p[1], &p[2], &p[3]);
        half6_avx2(b + 64, b + 160, qx + 128, &p[4], &p[5], &p[6], &p[7]);
        sum16_q6(p, &q0, &q1);
        q0 = _mm256_sub_epi32(q0, _mm256_load_si256((const __m256i *)(const void *)off));
        q1 = _mm256_sub_epi32(q1, _mm256_load_si256((const __m256i *)(const void *)(off + 8)));
        __m128i sc =
            _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(b + 192)), order8);
        q0 = _mm256_mullo_epi32(q0, _mm256_cvtepi8_epi32(sc));
        q1 = _mm256_mullo_epi32(q1, _mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8)));
        __m256 d = _mm256_set1_ps(half(b + 208));
        acc = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_load_ps(dxo)), _mm256_cvtepi32_ps(q0), acc);
        acc1 = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_load_ps(dxo + 8)), _mm256_cvtepi32_ps(q1),
                               acc1);
    }
    return _mm256_add_ps(acc, acc1);
}

AVX2 static void rows_q6_k_avx2(const uint8_t *w, size_t ldw, int64_t cols,
                                const struct elm_qact *x, float *y, long nrows, bool accumulate)
{
    _Alignas(32) int32_t off[KQ_STACK_COLS / 16];
    _Alignas(32) float dxo[KQ_STACK_COLS / 16];
    const int64_t nb = cols / ELM_QK_K, group = KQ_STACK_COLS / ELM_QK_K;
    if (nb <= group)
        kq_prep_q6_avx2(x, 0, nb, off, dxo);
    for (long r = 0; r < nrows; r++) {
        const uint8_t *b = w + (size_t)r * ldw;
        __m256 acc = _mm256_setzero_ps();
        for (int64_t k0 = 0; k0 < nb; k0 += group) {
            int64_t n = nb - k0 < group ? nb - k0 : group;
            if (nb > group)
                kq_prep_q6_avx2(x, k0, n, off, dxo);
            acc = part_q6_k_avx2(b + (size_t)k0 * ELM_Q6_K_BYTES, n, x->q + 256 * k0, off, dxo,
                                 acc);
        }
        float v = hsum256(acc);
        y[r] = accumulate ? y[r] + v : v;
    }
}

/* ---------------------------------------------------------------- lookup */

elm_qrows_fn elm_kquant_rows_avx2(enum elm_dtype dtype)
{
    switch (dtype) {
    case ELM_DTYPE_Q4_K: return rows_q4_k_avx2;
    case ELM_DTYPE_Q5_K: return rows_q5_k_avx2;
    case ELM_DTYPE_Q6_K: return rows_q6_k_avx2;
    default: return NULL;
    }
}

#endif
