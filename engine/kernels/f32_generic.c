/* f32_generic.c: the portable f32 kernels (f32.h): plain C in a fixed
 * order of operations, the definition the SIMD sets are tested against. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "engine/kernels/blocks.h"
#include "engine/kernels/kernels.h"
#include "engine/kernels/f32.h"

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

void elm_swiglu_generic(float *g, const float *u, size_t n)
{
    for (size_t i = 0; i < n; i++)
        g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

void elm_transpose_generic(const float *in, long ld_in, int rows, int cols, float *out,
                           long ld_out)
{
    for (int c = 0; c < cols; c++)
        for (int r = 0; r < rows; r++)
            out[c * ld_out + r] = in[r * ld_in + c];
}

float elm_read_sum_generic(const float *p, size_t n)
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

const struct elm_f32_set elm_f32_generic = {
    dot_f32_generic,  {mm_f32_generic, mm_f16_generic, mm_bf16_generic},
    cvt_f16_generic,  cvt_bf16_generic, axpy_generic,
    scale_generic,    elm_swiglu_generic, rmsnorm_generic, elm_read_sum_generic,
    attn_rows_generic, elm_transpose_generic,
};
