/* kernels.c: dot products, conversions, matrix rows times a few vectors,
 * SwiGLU, in portable C and in AVX2/AVX-512 variants picked at run time. */
#include "config.h"

#include "engine/kernels/kernels.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_X86_KERNELS 1
#endif

#include "engine/model/model.h"
#include "engine/kernels/blocks.h"

/* ------------------------------------------------------------- portable */

static inline float load_f32(float v)
{
    return v;
}

/* Eight partial sums: a fixed order, and something gcc can vectorize. */
#define DOT_GENERIC(name, wtype, load)                                \
    static float name(const void *wv, const float *x, size_t n)       \
    {                                                                 \
        const wtype *w = wv;                                          \
        float acc[8] = {0};                                           \
        size_t i = 0;                                                 \
        for (; i + 8 <= n; i += 8)                                    \
            for (int k = 0; k < 8; k++)                               \
                acc[k] += load(w[i + k]) * x[i + k];                  \
        for (; i < n; i++)                                            \
            acc[0] += load(w[i]) * x[i];                              \
        return ((acc[0] + acc[4]) + (acc[1] + acc[5])) +              \
               ((acc[2] + acc[6]) + (acc[3] + acc[7]));               \
    }

DOT_GENERIC(dot_f32_generic, float, load_f32)
DOT_GENERIC(dot_bf16_generic, uint16_t, elm_bf16_to_f32)
DOT_GENERIC(dot_f16_generic, uint16_t, elm_f16_to_f32)

typedef float (*dot_fn)(const void *w, const float *x, size_t n);

/* Rows of w (byte stride ldw) times m vectors, one dot at a time. */
#define MM_GENERIC(name, dot)                                                                \
    static void name(const void *w, size_t ldw, long cols, const float *x, long ldx, int m,   \
                     float *y, long ldy, long nrows, bool acc)                                \
    {                                                                                        \
        for (long r = 0; r < nrows; r++)                                                     \
            for (int t = 0; t < m; t++) {                                                    \
                float s = dot((const char *)w + (size_t)r * ldw, x + t * ldx, (size_t)cols); \
                float *o = y + t * ldy + r;                                                  \
                *o = acc ? *o + s : s;                                                       \
            }                                                                                \
    }

MM_GENERIC(mm_f32_generic, dot_f32_generic)
MM_GENERIC(mm_bf16_generic, dot_bf16_generic)
MM_GENERIC(mm_f16_generic, dot_f16_generic)

static void cvt_bf16_generic(const uint16_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = elm_bf16_to_f32(src[i]);
}

static void cvt_f16_generic(const uint16_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = elm_f16_to_f32(src[i]);
}

static void axpy_generic(float a, const float *x, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] += a * x[i];
}

static void scale_generic(float a, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] *= a;
}

static void rmsnorm_generic(const float *x, const float *w, float *out, size_t n, float eps)
{
    double ss = 0.0;
    for (size_t i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    float r = (float)(1.0 / sqrt(ss / (double)n + (double)eps));
    for (size_t i = 0; i < n; i++)
        out[i] = (x[i] * r) * w[i];
}

static void swiglu_generic(float *g, const float *u, size_t n)
{
    for (size_t i = 0; i < n; i++)
        g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

static void transpose_generic(const float *in, long ld_in, int rows, int cols, float *out,
                              long ld_out)
{
    for (int c = 0; c < cols; c++)
        for (int r = 0; r < rows; r++)
            out[c * ld_out + r] = in[r * ld_in + c];
}

static float read_sum_generic(const float *p, size_t n)
{
    float acc[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            acc[k] += p[i + k];
    for (; i < n; i++)
        acc[0] += p[i];
    return acc[0] + acc[1] + acc[2] + acc[3] + acc[4] + acc[5] + acc[6] + acc[7];
}

/* Online-softmax bookkeeping of one row once its scores sc[0..nk) are
 * known: scales them, replaces them by exp(score - new max), returns the
 * factor the old output must be scaled by. */
static float attn_softmax_row(float *sc, int nk, float scale, float *m, float *l)
{
    float mx = *m, sum = 0.0f;
    for (int s = 0; s < nk; s++) {
        sc[s] *= scale;
        mx = sc[s] > mx ? sc[s] : mx;
    }
    for (int s = 0; s < nk; s++)
        sum += (sc[s] = expf(sc[s] - mx));
    /* -INFINITY: nothing accumulated yet (and no NaN when nk is 0 too) */
    float alpha = *m == -INFINITY ? 0.0f : expf(*m - mx);
    *l = *l * alpha + sum;
    *m = mx;
    return alpha;
}

/* Rows share each line of K^T and each row of V while it is in cache; a
 * row's sums run in the same order whatever nr is. */
static void attn_rows_generic(int nr, const float *const *q, const int *nk, float scale,
                              const float *kt, const float *v, long ldv, int hd, float *m, float *l,
                              float *o)
{
    float sc[ELM_ATTN_BR][ELM_ATTN_BK];
    int nmax = 0;
    for (int r = 0; r < nr; r++)
        nmax = nk[r] > nmax ? nk[r] : nmax;
    memset(sc, 0, sizeof sc);
    for (int d = 0; d < hd; d++) {
        const float *kd = kt + (size_t)d * ELM_ATTN_BK;
        for (int r = 0; r < nr; r++) {
            float qd = q[r][d];
            for (int s = 0; s < nmax; s++)
                sc[r][s] += qd * kd[s];
        }
    }
    for (int r = 0; r < nr; r++) {
        float alpha = attn_softmax_row(sc[r], nk[r], scale, &m[r], &l[r]);
        for (int d = 0; d < hd; d++)
            o[(size_t)r * hd + d] *= alpha;
    }
    for (int s = 0; s < nmax; s++) {
        const float *vs = v + s * ldv;
        for (int r = 0; r < nr; r++) {
            if (s >= nk[r])
                continue;
            float p = sc[r][s], *orow = o + (size_t)r * hd;
            for (int d = 0; d < hd; d++)
                orow[d] += p * vs[d];
        }
    }
}

/* exp(x) for x clamped to [-87, 88] (silu needs no more): n = round(x / ln 2),
 * r = x - n ln 2 in two steps, a degree-6 Taylor polynomial (relative error
 * < 2e-7 on |r| <= ln 2 / 2), times 2^n. */
#define EXP_LO -87.0f
#define EXP_HI 88.0f
#define LOG2E 1.44269504088896341f
#define LN2_HI 0.693359375f
#define LN2_LO -2.12194440e-4f

/* ---------------------------------------------------------------- AVX2 */
#ifdef HAVE_X86_KERNELS
#define AVX2 __attribute__((target("avx2,fma,f16c")))

/* Software prefetch distances, measured on Zen 5: the hardware prefetchers
 * alone reach ~75 % of the read bandwidth on 16-bit rows; prefetching 4 KiB
 * ahead in the stream brought it to ~95 %.  Every line 8 KiB ahead (as the
 * quantized kernels do), F32 included, measured against every other 16-bit
 * line 4 KiB ahead and no F32 prefetch, 2 threads, interleaved: decode
 * 270M F32 +12 %, F16 +4 %, 1.1B F32 +7 %, BF16 +3.5 % (probe 44-48 GB/s).
 * The small-batch kernel reads four rows at once and prefetches the next
 * four.  AVX2 reads four rows at a time for one token too: there every
 * line 8 KiB ahead measured (ELM_KERNELS=avx2 here) BF16 decode +28 %,
 * F32 -9 %, so only 16-bit rows prefetch. */
#define MV_PF_BYTES 8192
#define INLINE __attribute__((always_inline)) inline

AVX2 static INLINE float hsum256(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

AVX2 static INLINE __m256 w8_f32(const void *p, long i)
{
    return _mm256_loadu_ps((const float *)p + i);
}

AVX2 static INLINE __m256 w8_bf16(const void *p, long i)
{
    __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

AVX2 static INLINE __m256 w8_f16(const void *p, long i)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i)));
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

/* Rows four at a time, vectors four at a time. */
#define MM_DRIVER(attr, name, block, mv)                                                     \
    attr static void name(const void *w, size_t ldw, long cols, const float *x, long ldx,    \
                          int m, float *y, long ldy, long nrows, bool acc)                   \
    {                                                                                        \
        if (m == 1 && mv(w, ldw, cols, x, y, nrows, acc))                                    \
            return;                                                                          \
        for (long r = 0; r < nrows; r += 4) {                                                \
            int rb = nrows - r < 4 ? (int)(nrows - r) : 4;                                   \
            const char *wr = (const char *)w + (size_t)r * ldw;                              \
            for (int t = 0; t < m; t += 4) {                                                 \
                int tb = m - t < 4 ? m - t : 4;                                              \
                const float *xt = x + t * ldx;                                               \
                float *yt = y + t * ldy + r;                                                 \
                switch ((rb - 1) * 4 + (tb - 1)) {                                           \
                case 0: block(wr, ldw, cols, xt, ldx, yt, ldy, 1, 1, acc); break;            \
                case 1: block(wr, ldw, cols, xt, ldx, yt, ldy, 1, 2, acc); break;            \
                case 2: block(wr, ldw, cols, xt, ldx, yt, ldy, 1, 3, acc); break;            \
                case 3: block(wr, ldw, cols, xt, ldx, yt, ldy, 1, 4, acc); break;            \
                case 4: block(wr, ldw, cols, xt, ldx, yt, ldy, 2, 1, acc); break;            \
                case 5: block(wr, ldw, cols, xt, ldx, yt, ldy, 2, 2, acc); break;            \
                case 6: block(wr, ldw, cols, xt, ldx, yt, ldy, 2, 3, acc); break;            \
                case 7: block(wr, ldw, cols, xt, ldx, yt, ldy, 2, 4, acc); break;            \
                case 8: block(wr, ldw, cols, xt, ldx, yt, ldy, 3, 1, acc); break;            \
                case 9: block(wr, ldw, cols, xt, ldx, yt, ldy, 3, 2, acc); break;            \
                case 10: block(wr, ldw, cols, xt, ldx, yt, ldy, 3, 3, acc); break;           \
                case 11: block(wr, ldw, cols, xt, ldx, yt, ldy, 3, 4, acc); break;           \
                case 12: block(wr, ldw, cols, xt, ldx, yt, ldy, 4, 1, acc); break;           \
                case 13: block(wr, ldw, cols, xt, ldx, yt, ldy, 4, 2, acc); break;           \
                case 14: block(wr, ldw, cols, xt, ldx, yt, ldy, 4, 3, acc); break;           \
                default: block(wr, ldw, cols, xt, ldx, yt, ldy, 4, 4, acc); break;           \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
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
    swiglu_generic(g + i, u + i, n - i);
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

/* name(nr, ...): kernel(R, ...) with R = nr a constant, for 1..4 rows. */
#define ATTN_ROWS_BY_COUNT(attr, name, kernel)                                                \
    attr static void name(int nr, const float *const *q, const int *nk, float scale,         \
                          const float *kt, const float *v, long ldv, int hd, float *m,       \
                          float *l, float *o)                                                \
    {                                                                                        \
        _Static_assert(ELM_ATTN_BR == 4, #name " instantiates 1..4 rows");                  \
        switch (nr) {                                                                        \
        case 1: kernel(1, q, nk, scale, kt, v, ldv, hd, m, l, o); break;                     \
        case 2: kernel(2, q, nk, scale, kt, v, ldv, hd, m, l, o); break;                     \
        case 3: kernel(3, q, nk, scale, kt, v, ldv, hd, m, l, o); break;                     \
        case 4: kernel(4, q, nk, scale, kt, v, ldv, hd, m, l, o); break;                     \
        default: break;                                                                      \
        }                                                                                    \
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
    return s + read_sum_generic(p + i, n - i);
}

/* -------------------------------------------------------------- AVX-512 */
#define MM_PF_ROWS 4
#define MM_PF_BYTES 1024

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))

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
    return widen_bf16(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i)));
}

AVX512 static INLINE __m512 w16m_bf16(const void *p, long i, __mmask16 m)
{
    return widen_bf16(_mm256_maskz_loadu_epi16(m, (const uint16_t *)p + i));
}

AVX512 static INLINE __m512 w16_f16(const void *p, long i)
{
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i)));
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

/* One vector (decode): a row at a time, four accumulators, so the matrix is
 * read as one sequential stream; prefetch a little ahead of it. */
#define MV_AVX512(name, w16, w16m, ESZ)                                                      \
    AVX512 static bool name(const char *w, size_t ldw, long cols, const float *x, float *y,  \
                            long nrows, bool acc)                                            \
    {                                                                                        \
        for (long r = 0; r < nrows; r++, w += ldw) {                                         \
            __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;                      \
            long k = 0;                                                                      \
            for (; k + 64 <= cols; k += 64) {                                                \
                _Pragma("GCC unroll 4") for (int l = 0; l < ESZ; l++) /* 64 ESZ bytes */     \
                    _mm_prefetch(w + (size_t)k * ESZ + MV_PF_BYTES + 64 * l, _MM_HINT_T0);    \
                a0 = _mm512_fmadd_ps(w16(w, k), _mm512_loadu_ps(x + k), a0);                 \
                a1 = _mm512_fmadd_ps(w16(w, k + 16), _mm512_loadu_ps(x + k + 16), a1);       \
                a2 = _mm512_fmadd_ps(w16(w, k + 32), _mm512_loadu_ps(x + k + 32), a2);       \
                a3 = _mm512_fmadd_ps(w16(w, k + 48), _mm512_loadu_ps(x + k + 48), a3);       \
            }                                                                                \
            for (; k + 16 <= cols; k += 16)                                                  \
                a0 = _mm512_fmadd_ps(w16(w, k), _mm512_loadu_ps(x + k), a0);                 \
            if (k < cols) {                                                                  \
                __mmask16 mk = (__mmask16)((1u << (cols - k)) - 1);                          \
                a1 = _mm512_fmadd_ps(w16m(w, k, mk), _mm512_maskz_loadu_ps(mk, x + k), a1);  \
            }                                                                                \
            float s = _mm512_reduce_add_ps(                                                  \
                _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));                \
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
    swiglu_generic(g + i, u + i, n - i);
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
    return s + read_sum_generic(p + i, n - i);
}
#endif /* HAVE_X86_KERNELS */

/* ------------------------------------------------------------- dispatch */

typedef void (*cvt_fn)(const uint16_t *src, float *dst, size_t n);
typedef void (*mm_fn)(const void *w, size_t ldw, long cols, const float *x, long ldx, int m,
                      float *y, long ldy, long nrows, bool acc);

struct kernel_set {
    const char *name;
    dot_fn dot_f32;
    mm_fn mm[3]; /* by elm_dtype: F32, F16, BF16 */
    cvt_fn cvt_f16, cvt_bf16;
    void (*axpy)(float a, const float *x, float *y, size_t n);
    void (*scale)(float a, float *y, size_t n);
    void (*swiglu)(float *g, const float *u, size_t n);
    void (*rmsnorm)(const float *x, const float *w, float *out, size_t n, float eps);
    float (*read_sum)(const float *p, size_t n);
    void (*attn_rows)(int nr, const float *const *q, const int *nk, float scale,
                      const float *kt, const float *v, long ldv, int hd, float *m, float *l,
                      float *o);
    void (*transpose)(const float *in, long ld_in, int rows, int cols, float *out, long ld_out);
};

static const struct kernel_set generic_set = {
    "generic",        dot_f32_generic,  {mm_f32_generic, mm_f16_generic, mm_bf16_generic},
    cvt_f16_generic,  cvt_bf16_generic, axpy_generic,
    scale_generic,    swiglu_generic, rmsnorm_generic, read_sum_generic, attn_rows_generic,
    transpose_generic,
};

#ifdef HAVE_X86_KERNELS
static const struct kernel_set avx2_set = {
    "avx2",        dot_f32_avx2,  {mm_f32_avx2, mm_f16_avx2, mm_bf16_avx2},
    cvt_f16_avx2,  cvt_bf16_avx2, axpy_avx2,
    scale_avx2,    swiglu_avx2, rmsnorm_avx2, read_sum_avx2, attn_rows_avx2,
    transpose_generic,
};

static const struct kernel_set avx512_set = {
    "avx512",        dot_f32_avx512,  {mm_f32_avx512, mm_f16_avx512, mm_bf16_avx512},
    cvt_f16_avx512,  cvt_bf16_avx512, axpy_avx512,
    scale_avx512,    swiglu_avx512, rmsnorm_avx512, read_sum_avx512, attn_rows_avx512,
    transpose_avx512,
};
#endif

static struct kernel_set k = {
    "generic",        dot_f32_generic,  {mm_f32_generic, mm_f16_generic, mm_bf16_generic},
    cvt_f16_generic,  cvt_bf16_generic, axpy_generic,
    scale_generic,    swiglu_generic, rmsnorm_generic, read_sum_generic, attn_rows_generic,
    transpose_generic,
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool force_generic;

static const struct kernel_set *lookup(const char *name)
{
    if (strcmp(name, "generic") == 0)
        return &generic_set;
#ifdef HAVE_X86_KERNELS
    __builtin_cpu_init();
    bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                __builtin_cpu_supports("f16c");
    bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                  __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                  __builtin_cpu_supports("avx512dq");
    if (strcmp(name, "avx2") == 0 && avx2)
        return &avx2_set;
    if (strcmp(name, "avx512") == 0 && avx512)
        return &avx512_set;
#endif
    return NULL;
}

static void pick(void)
{
    const char *env = getenv("ELM_KERNELS");
    const struct kernel_set *s = NULL;
    if (force_generic)
        s = &generic_set;
    else if (env && *env)
        s = lookup(env);
    if (!s)
        s = lookup("avx512");
    if (!s)
        s = lookup("avx2");
    k = s ? *s : generic_set;
}

void elm_kernels_init(void)
{
    pthread_once(&once, pick);
}

void elm_kernels_force_generic(void)
{
    force_generic = true;
    k = generic_set;
}

bool elm_kernels_select(const char *name)
{
    elm_kernels_init();
    const struct kernel_set *s = lookup(name);
    if (s)
        k = *s;
    return s != NULL;
}

const char *elm_kernels_name(void)
{
    elm_kernels_init();
    return k.name;
}

void elm_to_f32(const void *src, enum elm_dtype dtype, float *dst, size_t n)
{
    switch (dtype) {
    case ELM_DTYPE_F32: memcpy(dst, src, n * sizeof *dst); break;
    case ELM_DTYPE_F16: k.cvt_f16(src, dst, n); break;
    case ELM_DTYPE_BF16: k.cvt_bf16(src, dst, n); break;
    default: /* block types: AVX-512 Q8_0/Q4_0 here, the rest (and the fallback) quant.c */
        if (!elm_quant_fast_to_f32(src, dtype, dst, n))
            elm_dequantize(src, dtype, dst, (int64_t)n);
        break;
    }
}

float elm_dot_f32(const float *a, const float *b, size_t n)
{
    return k.dot_f32(a, b, n);
}

void elm_axpy_f32(float a, const float *x, float *y, size_t n)
{
    k.axpy(a, x, y, n);
}

void elm_scale_f32(float a, float *y, size_t n)
{
    k.scale(a, y, n);
}

void elm_rmsnorm(const float *x, const float *w, float *out, size_t n, float eps)
{
    k.rmsnorm(x, w, out, n, eps);
}

void elm_swiglu(float *g, const float *u, size_t n)
{
    k.swiglu(g, u, n);
}

void elm_attn_rows(int nr, const float *const *q, const int *nk, float scale, const float *kt,
                   const float *v, long ldv, int hd, float *m, float *l, float *o)
{
    k.attn_rows(nr, q, nk, scale, kt, v, ldv, hd, m, l, o);
}

void elm_prefetch_rows(const float *p, long ld, int rows, int cols)
{
#ifdef __GNUC__
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c += 16) /* a 64-byte line */
            __builtin_prefetch(p + r * ld + c);
#else
    (void)p, (void)ld, (void)rows, (void)cols;
#endif
}

void elm_transpose(const float *in, long ld_in, int rows, int cols, float *out, long ld_out)
{
    k.transpose(in, ld_in, rows, cols, out, ld_out);
}

float elm_read_sum(const float *p, size_t n)
{
    elm_kernels_init();
    return k.read_sum(p, n);
}

void elm_matmul_rows(const struct elm_matrix *w, const float *x, long ldx, int m, float *y,
                     long ldy, int64_t r0, int64_t r1, bool accumulate)
{
    if (r1 <= r0 || m <= 0)
        return;
    if (elm_dtype_is_quant(w->dtype)) { /* block types: int8 kernels, else quant.c per token */
        if (elm_quant_fast_rows(w, x, ldx, m, y, ldy, r0, r1, accumulate))
            return;
        for (int t = 0; t < m; t++)
            elm_quant_matvec_rows(w->data, w->dtype, w->cols, x + t * ldx, y + t * ldy, r0, r1,
                                  accumulate);
        return;
    }
    size_t ldw = (size_t)w->cols * elm_dtype_size(w->dtype);
    k.mm[w->dtype]((const char *)w->data + (size_t)r0 * ldw, ldw, (long)w->cols, x, ldx, m, y,
                   ldy, (long)(r1 - r0), accumulate);
}

void elm_matvec_rows(const struct elm_matrix *w, const float *x, float *y, int64_t r0, int64_t r1,
                     bool accumulate)
{
    elm_matmul_rows(w, x, 0, 1, y, 0, r0, r1, accumulate);
}
