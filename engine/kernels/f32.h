/* f32.h: what the files of the f32 kernel family share (engine-internal):
 * f32_generic.c, arch/x86/f32_avx2.c, arch/x86/f32_avx512.c and
 * arch/arm/f32_neon.c each fill one table of the functions below, and
 * kernels.c calls the table of the set in use.  The
 * rest of the engine goes through kernels.h.
 *
 * The family: weight rows (F32, BF16, F16) times 1..n f32 vectors, 16-bit
 * widening, dot/axpy/scale, RMSNorm, SwiGLU, the online-softmax attention
 * step, a transpose, and the bandwidth probe's read loop. */
#ifndef ELMCHAT_ENGINE_KERNELS_F32_H
#define ELMCHAT_ENGINE_KERNELS_F32_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Rows of w (byte stride ldw, nrows of them) times m vectors of x (row
 * stride ldx) into y (row stride ldy), as elm_matmul_rows. */
typedef void (*elm_f32_mm_fn)(const void *w, size_t ldw, long cols, const float *x, long ldx,
                              int m, float *y, long ldy, long nrows, bool acc);

struct elm_f32_set {
    float (*dot_f32)(const void *w, const float *x, size_t n);
    elm_f32_mm_fn mm[3]; /* by elm_dtype: F32, F16, BF16 */
    void (*cvt_f16)(const uint16_t *src, float *dst, size_t n);
    void (*cvt_bf16)(const uint16_t *src, float *dst, size_t n);
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

extern const struct elm_f32_set elm_f32_generic;

/* The portable pieces the SIMD sets reuse (tails, the AVX2 transpose). */
void elm_swiglu_generic(float *g, const float *u, size_t n);
float elm_read_sum_generic(const float *p, size_t n);
void elm_transpose_generic(const float *in, long ld_in, int rows, int cols, float *out,
                           long ld_out);

#if defined(__x86_64__) && defined(__GNUC__)
#define ELM_F32_X86 1
#include "engine/kernels/arch/x86/simd_x86.h"

/* Compiled with per-function target attributes: the files build with the
 * default flags; kernels.c calls a table only on a CPU that runs it. */
extern const struct elm_f32_set elm_f32_avx2;
extern const struct elm_f32_set elm_f32_avx512;

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

#endif

#if defined(__aarch64__) && defined(__ARM_NEON) && defined(__GNUC__)
#define ELM_F32_ARM 1
/* Plain NEON (every AArch64 CPU): arch/arm/f32_neon.c. */
extern const struct elm_f32_set elm_f32_neon;
#endif

#if defined(ELM_F32_X86) || defined(ELM_F32_ARM)
/* exp(x) for x clamped to [-87, 88] (silu needs no more): n = round(x / ln 2),
 * r = x - n ln 2 in two steps, a degree-6 Taylor polynomial (relative error
 * < 2e-7 on |r| <= ln 2 / 2), times 2^n. */
#define EXP_LO -87.0f
#define EXP_HI 88.0f
#define LOG2E 1.44269504088896341f
#define LN2_HI 0.693359375f
#define LN2_LO -2.12194440e-4f

/* name(nr, ...): kernel(R, ...) with R = nr a constant, for 1..4 rows
 * (ELM_ATTN_BR: kernels.h). */
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
#endif

#endif
