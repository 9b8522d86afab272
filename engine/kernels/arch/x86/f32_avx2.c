/* f32_avx2.c: the f32 kernels with AVX2, FMA and F16C (f32.h). */
#include "config.h"

#include "engine/kernels/f32.h"

#ifdef ELM_F32_X86

#include <math.h>

#include "engine/kernels/blocks.h"
#include "engine/kernels/kernels.h"

AVX2 static INLINE __m256 w8_f32(const void *p, long i)
{
    return _mm256_loadu_ps((const float *)p + i);
}

AVX2 static INLINE __m256 w8_bf16(const void *p, long i)
{
    __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const void *)((const uint16_t *)p + i)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

AVX2 static INLINE __m256 w8_f16(const void *p, long i)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const void *)((const uint16_t *)p + i)));
}

static INLINE float w1_f32(const void *p, long i)
{
    return ((const float *)p)[i];
}

static INLINE float w1_bf16(const void *p, long i)
{
    return elm_bf16_to_f32(((const uint16_t *)p)[i]);
}

static INLINE float w1_f16(const void *p, long i)
{
    return elm_f16_to_f32(((const uint16_t *)p)[i]);
}

/* RB rows times TB vectors: one accumulator per (row, vector), so each
 * output is the same chain of operations whatever RB and TB are. */
#define MM_BLOCK_AVX2(name, w8, w1, ESZ)                                                     \
    AVX2 static INLINE void name(const char *w, size_t ldw, long cols, const float *x,       \
                                 long ldx, float *y, long ldy, const int RB, const int TB,   \
                                 bool acc)                                                   \
    {                                                                                        \
        __m256 a[4][4];                                                                      \
        _Pragma("GCC unroll 4") for (int r = 0; r < RB; r++)                                                         \
            _Pragma("GCC unroll 4") for (int t = 0; t < TB; t++)                                                     \
                a[r][t] = _mm256_setzero_ps();                                               \
        long k = 0;                                                                          \
        for (; k + 8 <= cols; k += 8) {                                                      \
            __m256 xv[4];                                                                    \
            _Pragma("GCC unroll 4") for (int t = 0; t < TB; t++)                                                     \
                xv[t] = _mm256_loadu_ps(x + t * ldx + k);                                    \
            _Pragma("GCC unroll 4") for (int r = 0; r < RB; r++) {                                                   \
                if (ESZ == 2 && (k * ESZ) % 64 == 0) /* 16-bit only: see MV_PF_BYTES */     \
                    _mm_prefetch(w + (size_t)r * ldw + (size_t)k * ESZ + MV_PF_BYTES,         \
                                 _MM_HINT_T0);                                               \
                __m256 wv = w8(w + (size_t)r * ldw, k);                                      \
                _Pragma("GCC unroll 4") for (int t = 0; t < TB; t++)                                                 \
                    a[r][t] = _mm256_fmadd_ps(wv, xv[t], a[r][t]);                           \
            }                                                                                \
        }                                                                                    \
        _Pragma("GCC unroll 4") for (int r = 0; r < RB; r++)                                                         \
            _Pragma("GCC unroll 4") for (int t = 0; t < TB; t++) {                                                   \
                float s = hsum256(a[r][t]);                                                  \
                for (long i = k; i < cols; i++)                                              \
                    s += w1(w + (size_t)r * ldw, i) * x[t * ldx + i];                        \
                float *o = y + t * ldy + r;                                                  \
                *o = acc ? *o + s : s;                                                       \
            }                                                                                \
    }

/* No separate one-vector kernel for AVX2: the block kernel does it. */
static inline bool mv_none(const char *w, size_t ldw, long cols, const float *x, float *y,
                           long nrows, bool acc)
{
    (void)w, (void)ldw, (void)cols, (void)x, (void)y, (void)nrows, (void)acc;
    return false;
}
MM_BLOCK_AVX2(blk_f32_avx2, w8_f32, w1_f32, 4)
MM_BLOCK_AVX2(blk_bf16_avx2, w8_bf16, w1_bf16, 2)
MM_BLOCK_AVX2(blk_f16_avx2, w8_f16, w1_f16, 2)
MM_DRIVER(AVX2, mm_f32_avx2, blk_f32_avx2, mv_none)
MM_DRIVER(AVX2, mm_bf16_avx2, blk_bf16_avx2, mv_none)
MM_DRIVER(AVX2, mm_f16_avx2, blk_f16_avx2, mv_none)

AVX2 static float dot_f32_avx2(const void *wv, const float *x, size_t n)
{
    const float *w = wv;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(x + i + 8), a1);
        a2 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 16), _mm256_loadu_ps(x + i + 16), a2);
        a3 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 24), _mm256_loadu_ps(x + i + 24), a3);
    }
    for (; i + 8 <= n; i += 8)
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), a0);
    float s = hsum256(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; i++)
        s += w[i] * x[i];
    return s;
}

AVX2 static void cvt_bf16_avx2(const uint16_t *src, float *dst, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, w8_bf16(src, (long)i));
    for (; i < n; i++)
        dst[i] = elm_bf16_to_f32(src[i]);
}

AVX2 static void cvt_f16_avx2(const uint16_t *src, float *dst, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, w8_f16(src, (long)i));
    for (; i < n; i++)
        dst[i] = elm_f16_to_f32(src[i]);
}

AVX2 static void axpy_avx2(float a, const float *x, float *y, size_t n)
{
    __m256 va = _mm256_set1_ps(a);
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i),
                                                _mm256_loadu_ps(y + i)));
    for (; i < n; i++)
        y[i] += a * x[i];
}

AVX2 static void scale_avx2(float a, float *y, size_t n)
{
    __m256 va = _mm256_set1_ps(a);
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_mul_ps(va, _mm256_loadu_ps(y + i)));
    for (; i < n; i++)
        y[i] *= a;
}

AVX2 static INLINE __m256 exp256(__m256 x)
{
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(EXP_LO)), _mm256_set1_ps(EXP_HI));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(LOG2E)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_HI), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_LO), r);
    __m256 p = _mm256_set1_ps(1.0f / 720);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)),
                                  23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

AVX2 static void swiglu_avx2(float *g, const float *u, size_t n)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 gv = _mm256_loadu_ps(g + i);
        __m256 e = exp256(_mm256_sub_ps(_mm256_setzero_ps(), gv));
        __m256 s = _mm256_div_ps(gv, _mm256_add_ps(one, e));
        _mm256_storeu_ps(g + i, _mm256_mul_ps(s, _mm256_loadu_ps(u + i)));
    }
    elm_swiglu_generic(g + i, u + i, n - i);
}

/* Scores of R rows += q[r][d] x keys kd[0..16). */
AVX2 static INLINE void attn_step_avx2(const int R, const float *const *q, const float *kd, int d,
                                       __m256 a[ELM_ATTN_BR][2])
{
    __m256 k0v = _mm256_loadu_ps(kd), k1v = _mm256_loadu_ps(kd + 8);
    _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {
        __m256 qd = _mm256_broadcast_ss(q[r] + d);
        a[r][0] = _mm256_fmadd_ps(qd, k0v, a[r][0]);
        a[r][1] = _mm256_fmadd_ps(qd, k1v, a[r][1]);
    }
}

/* Scores of R rows for 16 keys at a time (2R accumulators and two key
 * vectors fit the 16 registers), then per row the online softmax, then the
 * output 16 dimensions x R rows at a time: each K^T and V vector loaded
 * serves all R rows.  R is a constant after inlining. */
AVX2 static INLINE void attn_rows_avx2_n(const int R, const float *const *q, const int *nk,
                                         float scale, const float *kt, const float *v, long ldv,
                                         int hd, float *m, float *l, float *o)
{
    _Alignas(32) float p[ELM_ATTN_BR][ELM_ATTN_BK];
    float alpha[ELM_ATTN_BR];
    int nmax = 0;
    for (int r = 0; r < R; r++)
        nmax = nk[r] > nmax ? nk[r] : nmax;
    for (int k0 = 0; k0 < ELM_ATTN_BK; k0 += 16) {
        __m256 a[ELM_ATTN_BR][2];
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)
            a[r][0] = a[r][1] = _mm256_setzero_ps();
        if (k0 < nmax) { /* keys no row sees: scores stay 0, masked below */
            /* the first pass fetches value row d ahead of the output loop:
             * a cold V (decode) then streams while the scores compute */
            int dp = k0 > 0 ? 0 : nmax < hd ? nmax : hd;
            for (int d = 0; d < dp; d++) {
                _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++)
                    _mm_prefetch((const char *)(v + d * ldv + 16 * c), _MM_HINT_T0);
                attn_step_avx2(R, q, kt + d * ELM_ATTN_BK + k0, d, a);
            }
            for (int d = dp; d < hd; d++)
                attn_step_avx2(R, q, kt + d * ELM_ATTN_BK + k0, d, a);
        }
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {
            _mm256_store_ps(p[r] + k0, a[r][0]);
            _mm256_store_ps(p[r] + k0 + 8, a[r][1]);
        }
    }
    const __m256 ninf = _mm256_set1_ps(-INFINITY), vscale = _mm256_set1_ps(scale);
    for (int r = 0; r < R; r++) {
        __m256 sc[ELM_ATTN_BK / 8], vmx = _mm256_set1_ps(m[r]);
        for (int j = 0; j < ELM_ATTN_BK / 8; j++) {
            __m256 lane = _mm256_add_ps(_mm256_set1_ps((float)(8 * j)),
                                        _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7));
            __m256 valid = _mm256_cmp_ps(lane, _mm256_set1_ps((float)nk[r]), _CMP_LT_OQ);
            sc[j] = _mm256_blendv_ps(ninf, _mm256_mul_ps(_mm256_load_ps(p[r] + 8 * j), vscale),
                                     valid);
            vmx = _mm256_max_ps(vmx, sc[j]);
        }
        __m128 h = _mm_max_ps(_mm256_castps256_ps128(vmx), _mm256_extractf128_ps(vmx, 1));
        h = _mm_max_ps(h, _mm_movehl_ps(h, h));
        h = _mm_max_ss(h, _mm_movehdup_ps(h));
        float mx = _mm_cvtss_f32(h);
        __m256 vm = _mm256_set1_ps(mx), sum = _mm256_setzero_ps();
        for (int j = 0; j < ELM_ATTN_BK / 8; j++) {
            /* masked keys (and every key when mx is still -inf) give 0 */
            __m256 valid = _mm256_cmp_ps(sc[j], ninf, _CMP_NEQ_OQ);
            __m256 e = _mm256_and_ps(exp256(_mm256_sub_ps(sc[j], vm)), valid);
            sum = _mm256_add_ps(sum, e);
            _mm256_store_ps(p[r] + 8 * j, e);
        }
        alpha[r] = m[r] == -INFINITY ? 0.0f : expf(m[r] - mx);
        l[r] = l[r] * alpha[r] + hsum256(sum);
        m[r] = mx;
    }
    int d = 0;
    for (; d + 16 <= hd; d += 16) {
        __m256 a[ELM_ATTN_BR][2];
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {
            __m256 va = _mm256_set1_ps(alpha[r]);
            a[r][0] = _mm256_mul_ps(_mm256_loadu_ps(o + r * hd + d), va);
            a[r][1] = _mm256_mul_ps(_mm256_loadu_ps(o + r * hd + d + 8), va);
        }
        for (int s = 0; s < nmax; s++) {
            __m256 v0 = _mm256_loadu_ps(v + s * ldv + d), v1 = _mm256_loadu_ps(v + s * ldv + d + 8);
            _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {
                __m256 ps = _mm256_broadcast_ss(p[r] + s);
                a[r][0] = _mm256_fmadd_ps(ps, v0, a[r][0]);
                a[r][1] = _mm256_fmadd_ps(ps, v1, a[r][1]);
            }
        }
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {
            _mm256_storeu_ps(o + r * hd + d, a[r][0]);
            _mm256_storeu_ps(o + r * hd + d + 8, a[r][1]);
        }
    }
    if (d + 8 <= hd) {
        __m256 a[ELM_ATTN_BR];
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)
            a[r] = _mm256_mul_ps(_mm256_loadu_ps(o + r * hd + d), _mm256_set1_ps(alpha[r]));
        for (int s = 0; s < nmax; s++) {
            __m256 v0 = _mm256_loadu_ps(v + s * ldv + d);
            _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)
                a[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(p[r] + s), v0, a[r]);
        }
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)
            _mm256_storeu_ps(o + r * hd + d, a[r]);
        d += 8;
    }
    for (; d < hd; d++)
        for (int r = 0; r < R; r++) {
            float acc = o[r * hd + d] * alpha[r];
            for (int s = 0; s < nmax; s++)
                acc = fmaf(p[r][s], v[s * ldv + d], acc);
            o[r * hd + d] = acc;
        }
}

ATTN_ROWS_BY_COUNT(AVX2, attn_rows_avx2, attn_rows_avx2_n)

/* Squares summed in double, four lanes a chain, two chains. */
AVX2 static void rmsnorm_avx2(const float *x, const float *w, float *out, size_t n, float eps)
{
    __m256d a0 = _mm256_setzero_pd(), a1 = a0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256d lo = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
        __m256d hi = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4));
        a0 = _mm256_fmadd_pd(lo, lo, a0);
        a1 = _mm256_fmadd_pd(hi, hi, a1);
    }
    __m256d a = _mm256_add_pd(a0, a1);
    __m128d h = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    double ss = _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
    for (; i < n; i++)
        ss += (double)x[i] * x[i];
    float r = (float)(1.0 / sqrt(ss / (double)n + (double)eps));
    __m256 vr = _mm256_set1_ps(r);
    for (i = 0; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vr),
                                                _mm256_loadu_ps(w + i)));
    for (; i < n; i++)
        out[i] = (x[i] * r) * w[i];
}

AVX2 static float read_sum_avx2(const float *p, size_t n)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_add_ps(a0, _mm256_loadu_ps(p + i));
        a1 = _mm256_add_ps(a1, _mm256_loadu_ps(p + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_loadu_ps(p + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_loadu_ps(p + i + 24));
    }
    float s = hsum256(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    return s + elm_read_sum_generic(p + i, n - i);
}

const struct elm_f32_set elm_f32_avx2 = {
    dot_f32_avx2,  {mm_f32_avx2, mm_f16_avx2, mm_bf16_avx2},
    cvt_f16_avx2,  cvt_bf16_avx2, axpy_avx2,
    scale_avx2,    swiglu_avx2, rmsnorm_avx2, read_sum_avx2, attn_rows_avx2,
    elm_transpose_generic,
};

#endif
