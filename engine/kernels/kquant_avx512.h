/* kernels_kquant_avx512.h: the body of the AVX-512 K-quant rows, included
 * twice by kernels_kquant_x86.c (not a normal header: no guard).  The
 * includer defines KQ_TARGET (the target attribute), KQ_DOT (64 u8 x s8
 * products to 16 int32 lanes of 4: vpdpbusd, or vpmaddubsw + vpmaddwd) and
 * KQ_NAME(n) (the name suffix). */

/* Sub-block totals of a Q4_K/Q5_K block: p0 has sub-block 0 in its int32
 * lanes 0-7 and 2 in 8-15, p1 sub-blocks 1 and 3, p2 4 and 6, p3 5 and 7;
 * returns the 8 totals in order. */
KQ_TARGET static INLINE __m256i KQ_NAME(sum_8x8)(__m512i p0, __m512i p1, __m512i p2, __m512i p3)
{
    /* pair the 128-bit lanes: s01's lanes are sub-blocks 0 2 1 3 (4
     * partials each), s23's 4 6 5 7 */
    __m512i s01 = _mm512_add_epi32(_mm512_shuffle_i32x4(p0, p1, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_i32x4(p0, p1, _MM_SHUFFLE(3, 1, 3, 1)));
    __m512i s23 = _mm512_add_epi32(_mm512_shuffle_i32x4(p2, p3, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_i32x4(p2, p3, _MM_SHUFFLE(3, 1, 3, 1)));
    /* in lane k: element 0 = the total of s01's sub-block, element 1 = s23's */
    __m512i c = _mm512_add_epi32(_mm512_unpacklo_epi32(s01, s23), _mm512_unpackhi_epi32(s01, s23));
    c = _mm512_add_epi32(c, _mm512_shuffle_epi32(c, _MM_PERM_BADC));
    const __m512i idx = _mm512_setr_epi32(0, 8, 4, 12, 1, 9, 5, 13, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_castsi512_si256(_mm512_permutexvar_epi32(idx, c));
}

/* Super-blocks [0, nb) of a Q4_K/Q5_K row against the activations as
 * kq_prep_q45 lays them out (xp: 256 bytes, pre: 16 floats a super-block),
 * added to acc.  One 64-byte load is two chunks (sub-blocks 0 and 2 in its
 * low nibbles, 1 and 3 in the high ones); xp has the activations in that
 * order.  The floats: [d*sc_j, dmin*m_j] x [dx_j, -dx_j*sum(qx_j)] x
 * [S_j, 1], one FMA for the 8 sub-blocks and their mins. */
KQ_TARGET static INLINE __m512 KQ_NAME(part_q45_k)(const uint8_t *b, int64_t nb, const int8_t *xp,
                                                   const float *pre, bool five, __m512 acc)
{
    const size_t bytes = five ? ELM_Q5_K_BYTES : ELM_Q4_K_BYTES;
    const __m512i m0f = _mm512_set1_epi8(15), bit4 = _mm512_set1_epi8(16);
    const __m512i d_dmin = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512 ones = _mm512_set1_ps(1.0f);
    for (int64_t k = 0; k < nb; k++, b += bytes, xp += 256, pre += 16) {
        kq_prefetch(b, bytes);
        const uint8_t *qs = b + (five ? 48 : 16);
        __m512i w0 = _mm512_loadu_si512(qs), w1 = _mm512_loadu_si512(qs + 64);
        __m512i l0 = _mm512_and_si512(w0, m0f),
                h0 = _mm512_and_si512(_mm512_srli_epi16(w0, 4), m0f);
        __m512i l1 = _mm512_and_si512(w1, m0f),
                h1 = _mm512_and_si512(_mm512_srli_epi16(w1, 4), m0f);
        if (five) {
            /* the fifth bit of chunk c's low (high) nibbles is bit 2c (2c + 1)
             * of qh[l]: qh in both halves, tested per half */
            __m512i qh = _mm512_broadcast_i64x4(LOAD256(b + 16));
            const __m512i sel = _mm512_inserti64x4(_mm512_set1_epi8(1), _mm256_set1_epi8(4), 1);
            l0 = _mm512_mask_add_epi8(l0, _mm512_test_epi8_mask(qh, sel), l0, bit4);
            h0 = _mm512_mask_add_epi8(h0, _mm512_test_epi8_mask(qh, _mm512_slli_epi64(sel, 1)), h0,
                                      bit4);
            l1 = _mm512_mask_add_epi8(l1, _mm512_test_epi8_mask(qh, _mm512_slli_epi64(sel, 4)), l1,
                                      bit4);
            h1 = _mm512_mask_add_epi8(h1, _mm512_test_epi8_mask(qh, _mm512_slli_epi64(sel, 5)), h1,
                                      bit4);
        }
        __m256i s = KQ_NAME(sum_8x8)(
            KQ_DOT(l0, _mm512_load_si512(xp)), KQ_DOT(h0, _mm512_load_si512(xp + 64)),
            KQ_DOT(l1, _mm512_load_si512(xp + 128)), KQ_DOT(h1, _mm512_load_si512(xp + 192)));
        uint64_t sc, mn;
        uint32_t dd;
        k_scales(b + 4, &sc, &mn);
        memcpy(&dd, b, 4);
        __m512 scm =
            _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_set_epi64x((long long)mn, (long long)sc)));
        __m512 dm = _mm512_permutexvar_ps(
            d_dmin, _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128((int)dd))));
        __m512 h = _mm512_mul_ps(_mm512_mul_ps(dm, scm), _mm512_load_ps(pre));
        __m512 v = _mm512_insertf32x8(ones, _mm256_cvtepi32_ps(s), 0);
        acc = _mm512_fmadd_ps(h, v, acc);
    }
    return acc;
}

/* Rows of Q4_K/Q5_K.  The activations' layout (kq_prep_q45) is made once per
 * call, for all rows, on the stack; rows wider than that buffer (not
 * OpenELM's) remake it per group of super-blocks and row: the same values
 * in the same order, so the same bits, only slower. */
KQ_TARGET static INLINE void KQ_NAME(rows_q45_k)(const uint8_t *w, size_t ldw, int64_t cols,
                                                 const struct elm_qact *x, float *y, long nrows,
                                                 bool accumulate, bool five)
{
    _Alignas(64) int8_t xp[KQ_STACK_COLS];
    _Alignas(64) float pre[KQ_STACK_COLS / 16];
    const int64_t nb = cols / ELM_QK_K, group = KQ_STACK_COLS / ELM_QK_K;
    const size_t bytes = five ? ELM_Q5_K_BYTES : ELM_Q4_K_BYTES;
    if (nb <= group)
        kq_prep_q45(x, 0, nb, xp, pre);
    for (long r = 0; r < nrows; r++) {
        const uint8_t *b = w + (size_t)r * ldw;
        __m512 acc = _mm512_setzero_ps();
        if (nb <= group) {
            acc = KQ_NAME(part_q45_k)(b, nb, xp, pre, five, acc);
        } else {
            for (int64_t k0 = 0; k0 < nb; k0 += group) {
                int64_t n = nb - k0 < group ? nb - k0 : group;
                kq_prep_q45(x, k0, n, xp, pre);
                acc = KQ_NAME(part_q45_k)(b + (size_t)k0 * bytes, n, xp, pre, five, acc);
            }
        }
        float v = _mm512_reduce_add_ps(acc);
        y[r] = accumulate ? y[r] + v : v;
    }
}

KQ_TARGET static void KQ_NAME(rows_q4_k)(const uint8_t *w, size_t ldw, int64_t cols,
                                         const struct elm_qact *x, float *y, long nrows,
                                         bool accumulate)
{
    KQ_NAME(rows_q45_k)(w, ldw, cols, x, y, nrows, accumulate, false);
}

KQ_TARGET static void KQ_NAME(rows_q5_k)(const uint8_t *w, size_t ldw, int64_t cols,
                                         const struct elm_qact *x, float *y, long nrows,
                                         bool accumulate)
{
    KQ_NAME(rows_q45_k)(w, ldw, cols, x, y, nrows, accumulate, true);
}

/* Weights 64g .. 64g + 63 of a Q6_K half h (g = 2h + n) against their
 * activations: n = 0 takes the low nibbles of the half's 64 ql bytes and qh
 * bits 0-1 (weights 0-31) and 2-3 (32-63); n = 1 the high nibbles and bits
 * 4-5, 6-7.  qh (32 bytes) is in both halves of the vector; the shifts bring
 * each half's two bits to bits 4-5.  int32 lane i sums weights 4i..4i+3, so
 * 128-bit lane L is sub-block 4g + L. */
KQ_TARGET static INLINE __m512i KQ_NAME(quarter6)(__m512i ql, __m512i qh, const int8_t *qx, int n)
{
    const __m512i m0f = _mm512_set1_epi8(15), m30 = _mm512_set1_epi8(0x30);
    __m512i v;
    if (n == 0)
        v = _mm512_or_si512(
            _mm512_and_si512(ql, m0f),
            _mm512_and_si512(_mm512_sllv_epi64(qh, _mm512_setr_epi64(4, 4, 4, 4, 2, 2, 2, 2)),
                             m30));
    else
        v = _mm512_or_si512(
            _mm512_and_si512(_mm512_srli_epi16(ql, 4), m0f),
            _mm512_and_si512(_mm512_srlv_epi64(qh, _mm512_setr_epi64(0, 0, 0, 0, 2, 2, 2, 2)),
                             m30));
    return KQ_DOT(v, _mm512_loadu_si512(qx));
}

KQ_TARGET static INLINE float KQ_NAME(row_q6_k)(const uint8_t *b, int64_t nb,
                                                const struct elm_qact *x)
{
    /* after the transposing reduction, sub-block s sits at 4 * (s % 4) + s / 4 */
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    /* activation block s / 2 for sub-block s */
    const __m512i pairs = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t k = 0; k < nb; k++, b += ELM_Q6_K_BYTES) {
        kq_prefetch(b, ELM_Q6_K_BYTES);
        const int8_t *qx = x->q + 256 * k;
        __m512i ql0 = _mm512_loadu_si512(b), ql1 = _mm512_loadu_si512(b + 64);
        __m512i qh0 = _mm512_broadcast_i64x4(LOAD256(b + 128));
        __m512i qh1 = _mm512_broadcast_i64x4(LOAD256(b + 160));
        __m512i p0 = KQ_NAME(quarter6)(ql0, qh0, qx, 0);
        __m512i p1 = KQ_NAME(quarter6)(ql0, qh0, qx + 64, 1);
        __m512i p2 = KQ_NAME(quarter6)(ql1, qh1, qx + 128, 0);
        __m512i p3 = KQ_NAME(quarter6)(ql1, qh1, qx + 192, 1);
        /* 4x4 transpose-add: lane L element g = total of sub-block 4g + L */
        __m512i ab = _mm512_add_epi32(_mm512_unpacklo_epi32(p0, p1), _mm512_unpackhi_epi32(p0, p1));
        __m512i cd = _mm512_add_epi32(_mm512_unpacklo_epi32(p2, p3), _mm512_unpackhi_epi32(p2, p3));
        __m512i s = _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd));
        s = _mm512_permutexvar_epi32(order, s);
        /* sum((q - 32) * qx) = sum(q * qx) - 32 * sum16, exact */
        s = _mm512_sub_epi32(
            s, _mm512_slli_epi32(_mm512_cvtepi16_epi32(LOAD256(x->sum16 + 16 * k)), 5));
        __m512 sc = _mm512_cvtepi32_ps(
            _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(b + 192))));
        __m512 dx =
            _mm512_permutexvar_ps(pairs, _mm512_castps256_ps512(_mm256_loadu_ps(x->d + 8 * k)));
        __m512 g = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(half(b + 208)), sc), dx);
        acc = _mm512_fmadd_ps(g, _mm512_cvtepi32_ps(s), acc);
    }
    return _mm512_reduce_add_ps(acc);
}

ELM_KQUANT_ROWS(KQ_NAME(rows_q6_k), KQ_TARGET, KQ_NAME(row_q6_k)(b, nb, x))
