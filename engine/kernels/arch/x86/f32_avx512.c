/* f32_avx512.c: the f32 kernels with AVX-512 F, BW, VL, DQ (f32.h). */
#include "config.h"

#include "engine/kernels/f32.h"

#ifdef ELM_F32_X86

#include <math.h>

#include "engine/kernels/blocks.h"
#include "engine/kernels/kernels.h"

#define MM_PF_ROWS 4
#define MM_PF_BYTES 1024

AVX512 static INLINE __m512 w16_f32(const void *p, long i)
{
    return _mm512_loadu_ps((const float *)p + i);
}

AVX512 static INLINE __m512 w16m_f32(const void *p, long i, __mmask16 m)
{
    return _mm512_maskz_loadu_ps(m, (const float *)p + i);
}

AVX512 static INLINE __m512 widen_bf16(__m256i h)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

AVX512 static INLINE __m512 w16_bf16(const void *p, long i)
{
    return widen_bf16(_mm256_loadu_si256((const void *)((const uint16_t *)p + i)));
}

AVX512 static INLINE __m512 w16m_bf16(const void *p, long i, __mmask16 m)
{
    return widen_bf16(_mm256_maskz_loadu_epi16(m, (const uint16_t *)p + i));
}

AVX512 static INLINE __m512 w16_f16(const void *p, long i)
{
    return _mm512_cvtph_ps(_mm256_loadu_si256((const void *)((const uint16_t *)p + i)));
}

AVX512 static INLINE __m512 w16m_f16(const void *p, long i, __mmask16 m)
{
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)p + i));
}

#define MM_BLOCK_AVX512(name, w16, w16m, ESZ)                                                     \
    AVX512 static INLINE void name(const char *w, size_t ldw, long cols, const float *x,     \
                                   long ldx, float *y, long ldy, const int RB, const int TB, \
                                   bool acc)                                                 \
    {                                                                                        \
        __m512 a[4][4];                                                                      \
        _Pragma("GCC unroll 4") for (int r = 0; r < RB; r++)                                                         \
            _Pragma("GCC unroll 4") for (int t = 0; t < TB; t++)                                                     \
                a[r][t] = _mm512_setzero_ps();                                               \
        long k = 0;                                                                          \
        for (; k + 16 <= cols; k += 16) {                                                    \
            __m512 xv[4];                                                                    \
            _Pragma("GCC unroll 4") for (int t = 0; t < TB; t++)                                                     \
                xv[t] = _mm512_loadu_ps(x + t * ldx + k);                                    \
            _Pragma("GCC unroll 4") for (int r = 0; r < RB; r++) {                                                   \
                _mm_prefetch(w + (size_t)(r + MM_PF_ROWS) * ldw + (size_t)k * ESZ + MM_PF_BYTES,    \
                             _MM_HINT_T0); \
                __m512 wv = w16(w + (size_t)r * ldw, k);                                     \
                _Pragma("GCC unroll 4") for (int t = 0; t < TB; t++)                                                 \
                    a[r][t] = _mm512_fmadd_ps(wv, xv[t], a[r][t]);                           \
            }                                                                                \
        }                                                                                    \
        if (k < cols) {                                                                      \
            __mmask16 mk = (__mmask16)((1u << (cols - k)) - 1);                              \
            __m512 xv[4];                                                                    \
            _Pragma("GCC unroll 4") for (int t = 0; t < TB; t++)                                                     \
                xv[t] = _mm512_maskz_loadu_ps(mk, x + t * ldx + k);                          \
            _Pragma("GCC unroll 4") for (int r = 0; r < RB; r++) {                                                   \
                __m512 wv = w16m(w + (size_t)r * ldw, k, mk);                                \
                _Pragma("GCC unroll 4") for (int t = 0; t < TB; t++)                                                 \
                    a[r][t] = _mm512_fmadd_ps(wv, xv[t], a[r][t]);                           \
            }                                                                                \
        }                                                                                    \
        _Pragma("GCC unroll 4") for (int r = 0; r < RB; r++)                                                         \
            _Pragma("GCC unroll 4") for (int t = 0; t < TB; t++) {                                                   \
                float s = _mm512_reduce_add_ps(a[r][t]);                                     \
                float *o = y + t * ldy + r;                                                  \
                *o = acc ? *o + s : s;                                                       \
            }                                                                                \
    }

/* One vector (decode): a row at a time, so the matrix is read as one
 * sequential stream; prefetch a little ahead of it.  One accumulator, in
 * the order of the small-batch blocks below (16 columns at a time, the
 * masked tail last), so that a token's sums are the same bits in a batch
 * that verifies drafts as in decode; four accumulators (the chain of FMAs
 * broken in four) decoded no faster: 3B BF16 3.27 / 3.18 / 3.05 vs 3.21 /
 * 2.96 / 2.70 t/s, 270M F32 17.4 vs 17.6 t/s (2 threads, interleaved). */
#define MV_AVX512(name, w16, w16m, ESZ)                                                      \
    AVX512 static bool name(const char *w, size_t ldw, long cols, const float *x, float *y,  \
                            long nrows, bool acc)                                            \
    {                                                                                        \
        for (long r = 0; r < nrows; r++, w += ldw) {                                         \
            __m512 a = _mm512_setzero_ps();                                                  \
            long k = 0;                                                                      \
            for (; k + 64 <= cols; k += 64) {                                                \
                _Pragma("GCC unroll 4") for (int l = 0; l < ESZ; l++) /* 64 ESZ bytes */     \
                    _mm_prefetch(w + (size_t)k * ESZ + MV_PF_BYTES + 64 * l, _MM_HINT_T0);    \
                a = _mm512_fmadd_ps(w16(w, k), _mm512_loadu_ps(x + k), a);                   \
                a = _mm512_fmadd_ps(w16(w, k + 16), _mm512_loadu_ps(x + k + 16), a);         \
                a = _mm512_fmadd_ps(w16(w, k + 32), _mm512_loadu_ps(x + k + 32), a);         \
                a = _mm512_fmadd_ps(w16(w, k + 48), _mm512_loadu_ps(x + k + 48), a);         \
            }                                                                                \
            for (; k + 16 <= cols; k += 16)                                                  \
                a = _mm512_fmadd_ps(w16(w, k), _mm512_loadu_ps(x + k), a);                   \
            if (k < cols) {                                                                  \
                __mmask16 mk = (__mmask16)((1u << (cols - k)) - 1);                          \
                a = _mm512_fmadd_ps(w16m(w, k, mk), _mm512_maskz_loadu_ps(mk, x + k), a);    \
            }                                                                                \
            float s = _mm512_reduce_add_ps(a);                                               \
            y[r] = acc ? y[r] + s : s;                                                       \
        }                                                                                    \
        return true;                                                                         \
    }

MV_AVX512(mv_f32_avx512, w16_f32, w16m_f32, 4)
MV_AVX512(mv_bf16_avx512, w16_bf16, w16m_bf16, 2)
MV_AVX512(mv_f16_avx512, w16_f16, w16m_f16, 2)

MM_BLOCK_AVX512(blk_f32_avx512, w16_f32, w16m_f32, 4)
MM_BLOCK_AVX512(blk_bf16_avx512, w16_bf16, w16m_bf16, 2)
MM_BLOCK_AVX512(blk_f16_avx512, w16_f16, w16m_f16, 2)
MM_DRIVER(AVX512, mm_f32_avx512, blk_f32_avx512, mv_f32_avx512)
MM_DRIVER(AVX512, mm_bf16_avx512, blk_bf16_avx512, mv_bf16_avx512)
MM_DRIVER(AVX512, mm_f16_avx512, blk_f16_avx512, mv_f16_avx512)

AVX512 static float dot_f32_avx512(const void *wv, const float *x, size_t n)
{
    const float *w = wv;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i), _mm512_loadu_ps(x + i), a0);
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i + 16), _mm512_loadu_ps(x + i + 16), a1);
        a2 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i + 32), _mm512_loadu_ps(x + i + 32), a2);
        a3 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i + 48), _mm512_loadu_ps(x + i + 48), a3);
    }
    for (; i + 16 <= n; i += 16)
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i), _mm512_loadu_ps(x + i), a0);
    if (i < n) {
        __mmask16 mk = (__mmask16)((1u << (n - i)) - 1);
        a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mk, w + i), _mm512_maskz_loadu_ps(mk, x + i),
                             a1);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

AVX512 static void cvt_bf16_avx512(const uint16_t *src, float *dst, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, w16_bf16(src, (long)i));
    for (; i < n; i++)
        dst[i] = elm_bf16_to_f32(src[i]);
}

AVX512 static void cvt_f16_avx512(const uint16_t *src, float *dst, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, w16_f16(src, (long)i));
    for (; i < n; i++)
        dst[i] = elm_f16_to_f32(src[i]);
}

AVX512 static void axpy_avx512(float a, const float *x, float *y, size_t n)
{
    __m512 va = _mm512_set1_ps(a);
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i),
                                                _mm512_loadu_ps(y + i)));
    for (; i < n; i++)
        y[i] += a * x[i];
}

AVX512 static void scale_avx512(float a, float *y, size_t n)
{
    __m512 va = _mm512_set1_ps(a);
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_mul_ps(va, _mm512_loadu_ps(y + i)));
    for (; i < n; i++)
        y[i] *= a;
}

AVX512 static INLINE __m512 exp512(__m512 x)
{
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(EXP_LO)), _mm512_set1_ps(EXP_HI));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(LOG2E)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_HI), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_LO), r);
    __m512 p = _mm512_set1_ps(1.0f / 720);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

AVX512 static void swiglu_avx512(float *g, const float *u, size_t n)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 gv = _mm512_loadu_ps(g + i);
        __m512 e = exp512(_mm512_sub_ps(_mm512_setzero_ps(), gv));
        __m512 s = _mm512_div_ps(gv, _mm512_add_ps(one, e));
        _mm512_storeu_ps(g + i, _mm512_mul_ps(s, _mm512_loadu_ps(u + i)));
    }
    elm_swiglu_generic(g + i, u + i, n - i);
}

/* sc[r][j] = q[r] . keys 16j..16j+15 for j < nv (the rest 0): 4R
 * accumulators, each K^T vector loaded once for the R rows.  R and nv are
 * constants after inlining. */
AVX512 static INLINE void attn_scores512(const int R, const int nv, const float *const *q,
                                         const float *kt, int hd,
                                         __m512 sc[ELM_ATTN_BR][ELM_ATTN_BK / 16],
                                         const float *v, long ldv, int nmax)
{
    _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)
        _Pragma("GCC unroll 4") for (int j = 0; j < ELM_ATTN_BK / 16; j++)
            sc[r][j] = _mm512_setzero_ps();
    for (int d = 0; d < hd; d++) {
        if (d < nmax) /* value row d, ahead of the output loop */
            _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++)
                _mm_prefetch((const char *)(v + d * ldv + 16 * c), _MM_HINT_T0);
        __m512 kv[ELM_ATTN_BK / 16];
        _Pragma("GCC unroll 4") for (int j = 0; j < nv; j++)
            kv[j] = _mm512_loadu_ps(kt + d * ELM_ATTN_BK + 16 * j);
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {
            __m512 qd = _mm512_set1_ps(q[r][d]);
            _Pragma("GCC unroll 4") for (int j = 0; j < nv; j++)
                sc[r][j] = _mm512_fmadd_ps(qd, kv[j], sc[r][j]);
        }
    }
}

/* R rows (a constant after inlining) at once: the scores of 64 keys are
 * 4R registers, every K^T vector loaded serves the R rows; then per row the
 * online softmax; then the output in 64-dimension slices of 4R registers,
 * every V vector loaded serving the R rows.  With R = 4 the inner loops
 * issue two FMAs per load (broadcasts included), one row alone 0.8: the
 * single-row kernel waited on loads, this one on the FMA units. */
AVX512 static INLINE void attn_rows512_n(const int R, const float *const *q, const int *nk,
                                         float scale, const float *kt, const float *v, long ldv,
                                         int hd, float *m, float *l, float *o)
{
    enum { NV = ELM_ATTN_BK / 16 };
    int nmax = 0;
    _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)
        nmax = nk[r] > nmax ? nk[r] : nmax;
    __m512 sc[ELM_ATTN_BR][NV];
    /* keys no row sees (the causal diagonal, decode's last block) cost
     * nothing when they are the upper half */
    if (nmax > ELM_ATTN_BK / 2)
        attn_scores512(R, NV, q, kt, hd, sc, v, ldv, nmax);
    else
        attn_scores512(R, NV / 2, q, kt, hd, sc, v, ldv, nmax);
    _Alignas(64) float p[ELM_ATTN_BR][ELM_ATTN_BK];
    float alpha[ELM_ATTN_BR];
    _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {
        __m512 vmx = _mm512_set1_ps(m[r]);
        __mmask16 valid[NV];
        _Pragma("GCC unroll 4") for (int j = 0; j < NV; j++) {
            int left = nk[r] - 16 * j;
            valid[j] = left >= 16 ? (__mmask16)0xffff
                       : left <= 0 ? (__mmask16)0
                                   : (__mmask16)((1u << left) - 1);
            sc[r][j] = _mm512_mul_ps(sc[r][j], _mm512_set1_ps(scale));
            vmx = _mm512_mask_max_ps(vmx, valid[j], vmx, sc[r][j]);
        }
        float mx = _mm512_reduce_max_ps(vmx);
        __m512 vm = _mm512_set1_ps(mx), sum = _mm512_setzero_ps();
        _Pragma("GCC unroll 4") for (int j = 0; j < NV; j++) {
            /* zero for masked keys (NaN there when mx is still -inf) */
            __m512 e = _mm512_maskz_mov_ps(valid[j], exp512(_mm512_sub_ps(sc[r][j], vm)));
            sum = _mm512_add_ps(sum, e);
            _mm512_store_ps(p[r] + 16 * j, e);
        }
        /* exp512, not expf: a call would spill the other rows' scores */
        alpha[r] = m[r] == -INFINITY
                       ? 0.0f
                       : _mm512_cvtss_f32(exp512(_mm512_set1_ps(m[r] - mx)));
        l[r] = l[r] * alpha[r] + _mm512_reduce_add_ps(sum);
        m[r] = mx;
    }
    for (int d0 = 0; d0 < hd; d0 += 64) {
        __mmask16 md[4];
        _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) {
            int left = hd - d0 - 16 * c;
            md[c] = left >= 16 ? (__mmask16)0xffff
                    : left <= 0 ? (__mmask16)0
                                : (__mmask16)((1u << left) - 1);
        }
        __m512 acc[ELM_ATTN_BR][4];
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {
            __m512 va = _mm512_set1_ps(alpha[r]);
            const float *orow = o + r * hd + d0;
            _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++)
                acc[r][c] = _mm512_mul_ps(_mm512_maskz_loadu_ps(md[c], orow + 16 * c), va);
        }
        for (int s = 0; s < nmax; s++) {
            __m512 vv[4];
            _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++)
                vv[c] = _mm512_maskz_loadu_ps(md[c], v + s * ldv + d0 + 16 * c);
            _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {
                __m512 ps = _mm512_set1_ps(p[r][s]);
                _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++)
                    acc[r][c] = _mm512_fmadd_ps(ps, vv[c], acc[r][c]);
            }
        }
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)
            _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++)
                _mm512_mask_storeu_ps(o + r * hd + d0 + 16 * c, md[c], acc[r][c]);
    }
}

ATTN_ROWS_BY_COUNT(AVX512, attn_rows_avx512, attn_rows512_n)

/* out[i][j] = in[j][i] for a 16 x 16 block of floats (rows of stride ld_in
 * and ld_out): four rounds of shuffles. */
AVX512 static INLINE void transpose16(const float *in, long ld_in, float *out, long ld_out)
{
    __m512 r[16], t[16];
    for (int i = 0; i < 16; i++)
        r[i] = _mm512_loadu_ps(in + i * ld_in);
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    }
    /* r[4q + c] holds, in each 128-bit lane l, column c of rows 4l'...: now
     * gather lanes across the four groups. */
    for (int c = 0; c < 4; c++) {
        __m512 a = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x44);      /* lanes 0,1 | 0,1 */
        __m512 b = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xee);      /* lanes 2,3 | 2,3 */
        __m512 cc = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x44);
        __m512 d = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xee);
        t[c] = _mm512_shuffle_f32x4(a, cc, 0x88);      /* lane 0 of each */
        t[4 + c] = _mm512_shuffle_f32x4(a, cc, 0xdd);  /* lane 1 */
        t[8 + c] = _mm512_shuffle_f32x4(b, d, 0x88);   /* lane 2 */
        t[12 + c] = _mm512_shuffle_f32x4(b, d, 0xdd);  /* lane 3 */
    }
    for (int i = 0; i < 16; i++)
        _mm512_storeu_ps(out + i * ld_out, t[i]);
}

AVX512 static void transpose_avx512(const float *in, long ld_in, int rows, int cols, float *out,
                                    long ld_out)
{
    int r0 = 0;
    for (; r0 + 16 <= rows; r0 += 16) {
        int c0 = 0;
        for (; c0 + 16 <= cols; c0 += 16)
            transpose16(in + r0 * ld_in + c0, ld_in, out + c0 * ld_out + r0, ld_out);
        for (int c = c0; c < cols; c++)
            for (int r = r0; r < r0 + 16; r++)
                out[c * ld_out + r] = in[r * ld_in + c];
    }
    for (int r = r0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            out[c * ld_out + r] = in[r * ld_in + c];
}

/* Squares summed in double, eight lanes a chain, two chains. */
AVX512 static void rmsnorm_avx512(const float *x, const float *w, float *out, size_t n, float eps)
{
    __m512d a0 = _mm512_setzero_pd(), a1 = a0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512d lo = _mm512_cvtps_pd(_mm256_loadu_ps(x + i));
        __m512d hi = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8));
        a0 = _mm512_fmadd_pd(lo, lo, a0);
        a1 = _mm512_fmadd_pd(hi, hi, a1);
    }
    double ss = _mm512_reduce_add_pd(_mm512_add_pd(a0, a1));
    for (; i < n; i++)
        ss += (double)x[i] * x[i];
    float r = (float)(1.0 / sqrt(ss / (double)n + (double)eps));
    __m512 vr = _mm512_set1_ps(r);
    for (i = 0; i + 16 <= n; i += 16)
        _mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i), vr),
                                                _mm512_loadu_ps(w + i)));
    for (; i < n; i++)
        out[i] = (x[i] * r) * w[i];
}

AVX512 static float read_sum_avx512(const float *p, size_t n)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        a0 = _mm512_add_ps(a0, _mm512_loadu_ps(p + i));
        a1 = _mm512_add_ps(a1, _mm512_loadu_ps(p + i + 16));
        a2 = _mm512_add_ps(a2, _mm512_loadu_ps(p + i + 32));
        a3 = _mm512_add_ps(a3, _mm512_loadu_ps(p + i + 48));
    }
    float s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
    return s + elm_read_sum_generic(p + i, n - i);
}

const struct elm_f32_set elm_f32_avx512 = {
    dot_f32_avx512,  {mm_f32_avx512, mm_f16_avx512, mm_bf16_avx512},
    cvt_f16_avx512,  cvt_bf16_avx512, axpy_avx512,
    scale_avx512,    swiglu_avx512, rmsnorm_avx512, read_sum_avx512, attn_rows_avx512,
    transpose_avx512,
};

#endif
