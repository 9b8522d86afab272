/* f32_neon.c: the f32 kernels with AArch64 NEON (f32.h), for every ARM
 * level (NEON is in every AArch64 CPU; F16 and BF16 weights widen to f32
 * with plain NEON: vcvt and a 16-bit shift, so no FEAT_FP16 or FEAT_BF16
 * is needed).  The same shapes as arch/x86/f32_avx2.c with 4-lane vectors;
 * sums in f32 with fused multiply-adds, in a fixed order per column count. */
#include "config.h"

#include "engine/kernels/f32.h"

#ifdef ELM_F32_ARM

#include <arm_neon.h>
#include <math.h>

#include "engine/kernels/blocks.h"
#include "engine/kernels/kernels.h"

#define INLINE inline __attribute__((always_inline))

/* Four weights as f32. */
static INLINE float32x4_t w4_f32(const void *p, long i)
{
    return vld1q_f32((const float *)p + i);
}

static INLINE float32x4_t w4_bf16(const void *p, long i)
{
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16((const uint16_t *)p + i), 16));
}

static INLINE float32x4_t w4_f16(const void *p, long i)
{
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)p + i)));
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

/* RB rows times TB vectors, two accumulators per (row, vector) over 8
 * columns (the first takes columns k..k+3, the second k+4..k+7; a last
 * group of 4 goes to the first, the rest one by one): each output is the
 * same chain of operations whatever RB and TB are, and one row of one
 * token keeps 8 independent chains.  4 x 2 x 2 accumulators, 4 vectors
 * and 2 weights fit the 32 registers. */
#define MM_BLOCK_NEON(name, w4, w1)                                                          \
    static INLINE void name(const char *w, size_t ldw, long cols, const float *x, long ldx,  \
                            float *y, long ldy, const int RB, const int TB, bool acc)        \
    {                                                                                        \
        float32x4_t a[4][2][2];                                                              \
        for (int r = 0; r < RB; r++)                                                         \
            for (int t = 0; t < TB; t++)                                                     \
                a[r][t][0] = a[r][t][1] = vdupq_n_f32(0.0f);                                 \
        long k = 0;                                                                          \
        for (; k + 8 <= cols; k += 8) {                                                      \
            float32x4_t xv[2][2];                                                            \
            for (int t = 0; t < TB; t++) {                                                   \
                xv[t][0] = vld1q_f32(x + t * ldx + k);                                       \
                xv[t][1] = vld1q_f32(x + t * ldx + k + 4);                                   \
            }                                                                                \
            for (int r = 0; r < RB; r++) {                                                   \
                const char *wr = w + (size_t)r * ldw;                                        \
                float32x4_t w0 = w4(wr, k), w1v = w4(wr, k + 4);                             \
                for (int t = 0; t < TB; t++) {                                               \
                    a[r][t][0] = vfmaq_f32(a[r][t][0], w0, xv[t][0]);                        \
                    a[r][t][1] = vfmaq_f32(a[r][t][1], w1v, xv[t][1]);                       \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
        if (k + 4 <= cols) {                                                                 \
            for (int r = 0; r < RB; r++) {                                                   \
                float32x4_t w0 = w4(w + (size_t)r * ldw, k);                                 \
                for (int t = 0; t < TB; t++)                                                 \
                    a[r][t][0] = vfmaq_f32(a[r][t][0], w0, vld1q_f32(x + t * ldx + k));      \
            }                                                                                \
            k += 4;                                                                          \
        }                                                                                    \
        for (int r = 0; r < RB; r++)                                                         \
            for (int t = 0; t < TB; t++) {                                                   \
                float s = vaddvq_f32(vaddq_f32(a[r][t][0], a[r][t][1]));                     \
                for (long i = k; i < cols; i++)                                              \
                    s += w1(w + (size_t)r * ldw, i) * x[t * ldx + i];                        \
                float *o = y + t * ldy + r;                                                  \
                *o = acc ? *o + s : s;                                                       \
            }                                                                                \
    }

/* Rows four at a time, vectors two at a time (RB and TB constants after
 * inlining). */
#define MM_DRIVER_NEON(name, block)                                                          \
    static void name(const void *w, size_t ldw, long cols, const float *x, long ldx, int m,   \
                     float *y, long ldy, long nrows, bool acc)                                \
    {                                                                                        \
        for (long r = 0; r < nrows; r += 4) {                                                \
            int rb = nrows - r < 4 ? (int)(nrows - r) : 4;                                   \
            const char *wr = (const char *)w + (size_t)r * ldw;                              \
            for (int t = 0; t < m; t += 2) {                                                 \
                int tb = m - t < 2 ? 1 : 2;                                                  \
                const float *xt = x + t * ldx;                                               \
                float *yt = y + t * ldy + r;                                                 \
                switch ((rb - 1) * 2 + (tb - 1)) {                                           \
                case 0: block(wr, ldw, cols, xt, ldx, yt, ldy, 1, 1, acc); break;            \
                case 1: block(wr, ldw, cols, xt, ldx, yt, ldy, 1, 2, acc); break;            \
                case 2: block(wr, ldw, cols, xt, ldx, yt, ldy, 2, 1, acc); break;            \
                case 3: block(wr, ldw, cols, xt, ldx, yt, ldy, 2, 2, acc); break;            \
                case 4: block(wr, ldw, cols, xt, ldx, yt, ldy, 3, 1, acc); break;            \
                case 5: block(wr, ldw, cols, xt, ldx, yt, ldy, 3, 2, acc); break;            \
                case 6: block(wr, ldw, cols, xt, ldx, yt, ldy, 4, 1, acc); break;            \
                default: block(wr, ldw, cols, xt, ldx, yt, ldy, 4, 2, acc); break;           \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
    }

MM_BLOCK_NEON(blk_f32_neon, w4_f32, w1_f32)
MM_BLOCK_NEON(blk_bf16_neon, w4_bf16, w1_bf16)
MM_BLOCK_NEON(blk_f16_neon, w4_f16, w1_f16)
MM_DRIVER_NEON(mm_f32_neon, blk_f32_neon)
MM_DRIVER_NEON(mm_bf16_neon, blk_bf16_neon)
MM_DRIVER_NEON(mm_f16_neon, blk_f16_neon)

static float dot_f32_neon(const void *wv, const float *x, size_t n)
{
    const float *w = wv;
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = vfmaq_f32(a0, vld1q_f32(w + i), vld1q_f32(x + i));
        a1 = vfmaq_f32(a1, vld1q_f32(w + i + 4), vld1q_f32(x + i + 4));
        a2 = vfmaq_f32(a2, vld1q_f32(w + i + 8), vld1q_f32(x + i + 8));
        a3 = vfmaq_f32(a3, vld1q_f32(w + i + 12), vld1q_f32(x + i + 12));
    }
    for (; i + 4 <= n; i += 4)
        a0 = vfmaq_f32(a0, vld1q_f32(w + i), vld1q_f32(x + i));
    float s = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
    for (; i < n; i++)
        s += w[i] * x[i];
    return s;
}

static void cvt_bf16_neon(const uint16_t *src, float *dst, size_t n)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(dst + i, w4_bf16(src, (long)i));
    for (; i < n; i++)
        dst[i] = elm_bf16_to_f32(src[i]);
}

static void cvt_f16_neon(const uint16_t *src, float *dst, size_t n)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(dst + i, w4_f16(src, (long)i));
    for (; i < n; i++)
        dst[i] = elm_f16_to_f32(src[i]);
}

static void axpy_neon(float a, const float *x, float *y, size_t n)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(y + i, vfmaq_n_f32(vld1q_f32(y + i), vld1q_f32(x + i), a));
    for (; i < n; i++)
        y[i] += a * x[i];
}

static void scale_neon(float a, float *y, size_t n)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(y + i, vmulq_n_f32(vld1q_f32(y + i), a));
    for (; i < n; i++)
        y[i] *= a;
}

/* f32.h's exp: the same steps as the x86 sets' (ties to even, two-step
 * reduction, degree-6 polynomial by fused multiply-adds, times 2^n). */
static INLINE float32x4_t exp4(float32x4_t x)
{
    x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(EXP_LO)), vdupq_n_f32(EXP_HI));
    float32x4_t n = vrndnq_f32(vmulq_n_f32(x, LOG2E));
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(LN2_HI));
    r = vfmsq_f32(r, n, vdupq_n_f32(LN2_LO));
    float32x4_t p = vdupq_n_f32(1.0f / 720);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 120), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 24), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 6), p, r);
    p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
    return vmulq_f32(p, vreinterpretq_f32_s32(e));
}

static void swiglu_neon(float *g, const float *u, size_t n)
{
    const float32x4_t one = vdupq_n_f32(1.0f);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        float32x4_t gv = vld1q_f32(g + i);
        float32x4_t s = vdivq_f32(gv, vaddq_f32(one, exp4(vnegq_f32(gv))));
        vst1q_f32(g + i, vmulq_f32(s, vld1q_f32(u + i)));
    }
    elm_swiglu_generic(g + i, u + i, n - i);
}

/* Squares summed in double, two lanes a chain, two chains. */
static void rmsnorm_neon(const float *x, const float *w, float *out, size_t n, float eps)
{
    float64x2_t a0 = vdupq_n_f64(0.0), a1 = a0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        float32x4_t v = vld1q_f32(x + i);
        float64x2_t lo = vcvt_f64_f32(vget_low_f32(v)), hi = vcvt_high_f64_f32(v);
        a0 = vfmaq_f64(a0, lo, lo);
        a1 = vfmaq_f64(a1, hi, hi);
    }
    double ss = vaddvq_f64(vaddq_f64(a0, a1));
    for (; i < n; i++)
        ss += (double)x[i] * x[i];
    float r = (float)(1.0 / sqrt(ss / (double)n + (double)eps));
    for (i = 0; i + 4 <= n; i += 4)
        vst1q_f32(out + i, vmulq_f32(vmulq_n_f32(vld1q_f32(x + i), r), vld1q_f32(w + i)));
    for (; i < n; i++)
        out[i] = (x[i] * r) * w[i];
}

static float read_sum_neon(const float *p, size_t n)
{
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = vaddq_f32(a0, vld1q_f32(p + i));
        a1 = vaddq_f32(a1, vld1q_f32(p + i + 4));
        a2 = vaddq_f32(a2, vld1q_f32(p + i + 8));
        a3 = vaddq_f32(a3, vld1q_f32(p + i + 12));
    }
    float s = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
    return s + elm_read_sum_generic(p + i, n - i);
}

/* Scores of R rows += q[r][d] x keys kd[0..16). */
static INLINE void attn_step_neon(const int R, const float *const *q, const float *kd, int d,
                                  float32x4_t a[ELM_ATTN_BR][4])
{
    float32x4_t k0 = vld1q_f32(kd), k1 = vld1q_f32(kd + 4), k2 = vld1q_f32(kd + 8),
                k3 = vld1q_f32(kd + 12);
    for (int r = 0; r < R; r++) {
        float qd = q[r][d];
        a[r][0] = vfmaq_n_f32(a[r][0], k0, qd);
        a[r][1] = vfmaq_n_f32(a[r][1], k1, qd);
        a[r][2] = vfmaq_n_f32(a[r][2], k2, qd);
        a[r][3] = vfmaq_n_f32(a[r][3], k3, qd);
    }
}

/* As the AVX2 kernel: scores of R rows 16 keys at a time (4R accumulators
 * and four key vectors), per row the online softmax, then the output 16
 * dimensions x R rows at a time: each K^T and V vector loaded serves all R
 * rows.  A row's operations do not depend on R. */
static INLINE void attn_rows_neon_n(const int R, const float *const *q, const int *nk,
                                    float scale, const float *kt, const float *v, long ldv,
                                    int hd, float *m, float *l, float *o)
{
    float p[ELM_ATTN_BR][ELM_ATTN_BK] __attribute__((aligned(16)));
    float alpha[ELM_ATTN_BR];
    int nmax = 0;
    for (int r = 0; r < R; r++)
        nmax = nk[r] > nmax ? nk[r] : nmax;
    for (int k0 = 0; k0 < ELM_ATTN_BK; k0 += 16) {
        float32x4_t a[ELM_ATTN_BR][4];
        for (int r = 0; r < R; r++)
            a[r][0] = a[r][1] = a[r][2] = a[r][3] = vdupq_n_f32(0.0f);
        if (k0 < nmax) /* keys no row sees: scores stay 0, masked below */
            for (int d = 0; d < hd; d++)
                attn_step_neon(R, q, kt + d * ELM_ATTN_BK + k0, d, a);
        for (int r = 0; r < R; r++)
            for (int j = 0; j < 4; j++)
                vst1q_f32(p[r] + k0 + 4 * j, a[r][j]);
    }
    static const float lane0[4] = {0.0f, 1.0f, 2.0f, 3.0f};
    const float32x4_t ninf = vdupq_n_f32(-INFINITY), lanes = vld1q_f32(lane0);
    for (int r = 0; r < R; r++) {
        float32x4_t sc[ELM_ATTN_BK / 4], vmx = vdupq_n_f32(m[r]);
        const float32x4_t lim = vdupq_n_f32((float)nk[r]);
        for (int j = 0; j < ELM_ATTN_BK / 4; j++) {
            uint32x4_t valid = vcltq_f32(vaddq_f32(vdupq_n_f32((float)(4 * j)), lanes), lim);
            sc[j] = vbslq_f32(valid, vmulq_n_f32(vld1q_f32(p[r] + 4 * j), scale), ninf);
            vmx = vmaxq_f32(vmx, sc[j]);
        }
        float mx = vmaxvq_f32(vmx);
        float32x4_t vm = vdupq_n_f32(mx), sum = vdupq_n_f32(0.0f);
        for (int j = 0; j < ELM_ATTN_BK / 4; j++) {
            /* masked keys (and every key when mx is still -inf) give 0 */
            uint32x4_t valid = vmvnq_u32(vceqq_f32(sc[j], ninf));
            float32x4_t e = vreinterpretq_f32_u32(
                vandq_u32(vreinterpretq_u32_f32(exp4(vsubq_f32(sc[j], vm))), valid));
            sum = vaddq_f32(sum, e);
            vst1q_f32(p[r] + 4 * j, e);
        }
        alpha[r] = m[r] == -INFINITY ? 0.0f : expf(m[r] - mx);
        l[r] = l[r] * alpha[r] + vaddvq_f32(sum);
        m[r] = mx;
    }
    int d = 0;
    for (; d + 16 <= hd; d += 16) {
        float32x4_t a[ELM_ATTN_BR][4];
        for (int r = 0; r < R; r++)
            for (int j = 0; j < 4; j++)
                a[r][j] = vmulq_n_f32(vld1q_f32(o + r * hd + d + 4 * j), alpha[r]);
        for (int s = 0; s < nmax; s++) {
            const float *vs = v + s * ldv + d;
            float32x4_t v0 = vld1q_f32(vs), v1 = vld1q_f32(vs + 4), v2 = vld1q_f32(vs + 8),
                        v3 = vld1q_f32(vs + 12);
            for (int r = 0; r < R; r++) {
                float ps = p[r][s];
                a[r][0] = vfmaq_n_f32(a[r][0], v0, ps);
                a[r][1] = vfmaq_n_f32(a[r][1], v1, ps);
                a[r][2] = vfmaq_n_f32(a[r][2], v2, ps);
                a[r][3] = vfmaq_n_f32(a[r][3], v3, ps);
            }
        }
        for (int r = 0; r < R; r++)
            for (int j = 0; j < 4; j++)
                vst1q_f32(o + r * hd + d + 4 * j, a[r][j]);
    }
    for (; d + 4 <= hd; d += 4) {
        float32x4_t a[ELM_ATTN_BR];
        for (int r = 0; r < R; r++)
            a[r] = vmulq_n_f32(vld1q_f32(o + r * hd + d), alpha[r]);
        for (int s = 0; s < nmax; s++) {
            float32x4_t v0 = vld1q_f32(v + s * ldv + d);
            for (int r = 0; r < R; r++)
                a[r] = vfmaq_n_f32(a[r], v0, p[r][s]);
        }
        for (int r = 0; r < R; r++)
            vst1q_f32(o + r * hd + d, a[r]);
    }
    for (; d < hd; d++)
        for (int r = 0; r < R; r++) {
            float acc = o[r * hd + d] * alpha[r];
            for (int s = 0; s < nmax; s++)
                acc = fmaf(p[r][s], v[s * ldv + d], acc);
            o[r * hd + d] = acc;
        }
}

ATTN_ROWS_BY_COUNT(, attn_rows_neon, attn_rows_neon_n)

const struct elm_f32_set elm_f32_neon = {
    dot_f32_neon,  {mm_f32_neon, mm_f16_neon, mm_bf16_neon},
    cvt_f16_neon,  cvt_bf16_neon, axpy_neon,
    scale_neon,    swiglu_neon, rmsnorm_neon, read_sum_neon, attn_rows_neon,
    elm_transpose_generic,
};

#endif
