/* gemm_f32_avx512.c: our own packed SGEMM for prefill, C (+)= A W^T, with an
 * AVX-512 micro-kernel of 14 tokens x 32 weight rows (28 accumulators).
 *
 * BLIS 0.9's best configuration for AVX-512 ('skx') reaches ~60-70 % of a
 * Zen 5 core's FMA peak; this kernel exists to be measured against it (see
 * gemm.c, which picks).  Layout: A (activations) is packed once per call
 * into panels of 14 tokens, [k][14]; each thread packs 32 rows of W at a
 * time into [k][32] (widening 16-bit or quantized weights on the way, so
 * no separate widening pass), KC columns at a time.  KC = 256: a multiple
 * of every block size (K-quants: 256).  The summation order of
 * every output depends only on K and KC: not on threads or row ranges. */
#include "config.h"

#include "engine/kernels/arch/x86/gemm_f32_avx512.h"

#include <string.h>

#include "engine/kernels/kernels.h"
#include "engine/kernels/blocks.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include "engine/kernels/arch/x86/simd_x86.h"
#define HAVE_GEMM_AVX512 1
#endif

size_t elm_gemm512_apack_floats(long m, long k)
{
    return (size_t)((m + ELM_GEMM512_MR - 1) / ELM_GEMM512_MR) * ELM_GEMM512_MR * (size_t)k;
}

size_t elm_gemm512_wpack_floats(void)
{
    return (size_t)ELM_GEMM512_KC * ELM_GEMM512_NR;
}

/* Tokens [t0, t0 + MR) of A into ap[k][MR], zeros past m. */
void elm_gemm512_pack_a(const float *a, long lda, long m, long k, long t0, float *ap)
{
    for (long kk = 0; kk < k; kk++)
        for (int t = 0; t < ELM_GEMM512_MR; t++)
            ap[kk * ELM_GEMM512_MR + t] = t0 + t < m ? a[(t0 + t) * lda + kk] : 0.0f;
}

#ifdef HAVE_GEMM_AVX512
/* 32 rows of W (fewer: zeros), columns [k0, k0 + kc), widened, into
 * wp[k][32].  k0 is a multiple of KC, hence of every block size.  row:
 * scratch of 32 * KC floats for rows that need widening. */
AVX512 static void pack_w(const struct elm_matrix *w, long r0, long nr, long k0, long kc,
                          float *wp, float *row)
{
    size_t row_bytes = elm_row_size(w->dtype, w->cols), skip = elm_row_size(w->dtype, k0);
    const float *src[ELM_GEMM512_NR];
    long ld = 0; /* stride between the rows of src, when uniform */
    for (int r = 0; r < ELM_GEMM512_NR; r++) {
        float *dst = row + (size_t)r * ELM_GEMM512_KC;
        if (r >= nr) {
            memset(dst, 0, (size_t)kc * sizeof *dst);
            src[r] = dst;
            continue;
        }
        const char *p = (const char *)w->data + (size_t)(r0 + r) * row_bytes + skip;
        if (w->dtype == ELM_DTYPE_F32 && nr == ELM_GEMM512_NR) {
            src[r] = (const float *)(const void *)p;
        } else {
            elm_to_f32(p, w->dtype, dst, (size_t)kc);
            src[r] = dst;
        }
    }
    bool uniform = w->dtype == ELM_DTYPE_F32 && nr == ELM_GEMM512_NR;
    ld = uniform ? (long)(row_bytes / sizeof(float)) : ELM_GEMM512_KC;
    long kk = 0;
    for (; kk + 16 <= kc; kk += 16) {
        elm_transpose(src[0] + kk, ld, 16, 16, wp + kk * ELM_GEMM512_NR, ELM_GEMM512_NR);
        elm_transpose(src[16] + kk, ld, 16, 16, wp + kk * ELM_GEMM512_NR + 16, ELM_GEMM512_NR);
    }
    for (; kk < kc; kk++)
        for (int r = 0; r < ELM_GEMM512_NR; r++)
            wp[kk * ELM_GEMM512_NR + r] = src[r][kk];
}

/* Part `part` of `parts` of the bytes that pack_w reads for the panel (n0,
 * k0), fetched into L2 while the micro-kernel works on the current panel:
 * 32 short strided row segments that the hardware prefetchers do not follow
 * (packing f32 weights from DRAM was 11 % of a 512-token prefill; with this,
 * 270M f32 pp512 2-6 % faster; 16-bit and quantized weights: no gain). */
AVX512 static void prefetch_panel(const struct elm_matrix *w, long n0, long nr, long k0, long kc,
                                  long part, long parts)
{
    size_t row_bytes = elm_row_size(w->dtype, w->cols), skip = elm_row_size(w->dtype, k0);
    size_t lines = (elm_row_size(w->dtype, kc) + 63) / 64, total = (size_t)nr * lines;
    size_t b = total * (size_t)part / (size_t)parts, e = total * (size_t)(part + 1) / (size_t)parts;
    if (b >= e)
        return;
    const char *row = (const char *)w->data + ((size_t)n0 + b / lines) * row_bytes + skip;
    for (size_t i = b, l = b % lines; i < e; i++) {
        _mm_prefetch(row + l * 64, _MM_HINT_T1);
        if (++l == lines) {
            l = 0;
            row += row_bytes;
        }
    }
}

/* acc[t] for t < MR tokens, two vectors of 16 rows each. */
AVX512 static void micro(const float *ap, const float *wp, long kc, float *c, long ldc, int mt,
                         int nr, bool add)
{
    __m512 c0[ELM_GEMM512_MR], c1[ELM_GEMM512_MR];
    _Pragma("GCC unroll 14") for (int t = 0; t < ELM_GEMM512_MR; t++)
        c0[t] = c1[t] = _mm512_setzero_ps();
    for (long k = 0; k < kc; k++) {
        __m512 w0 = _mm512_load_ps(wp + k * ELM_GEMM512_NR);
        __m512 w1 = _mm512_load_ps(wp + k * ELM_GEMM512_NR + 16);
        const float *a = ap + k * ELM_GEMM512_MR;
        _Pragma("GCC unroll 14") for (int t = 0; t < ELM_GEMM512_MR; t++) {
            __m512 av = _mm512_set1_ps(a[t]);
            c0[t] = _mm512_fmadd_ps(av, w0, c0[t]);
            c1[t] = _mm512_fmadd_ps(av, w1, c1[t]);
        }
    }
    store_tile32(c, ldc, c0, c1, ELM_GEMM512_MR, mt, nr, add);
}

void elm_gemm512_rows(const float *apack, long m, const struct elm_matrix *w, long r0, long r1,
                      float *c, long ldc, bool accumulate, float *wp, float *row)
{
    long k = (long)w->cols;
    for (long n0 = r0; n0 < r1; n0 += ELM_GEMM512_NR) {
        int nr = r1 - n0 < ELM_GEMM512_NR ? (int)(r1 - n0) : ELM_GEMM512_NR;
        for (long k0 = 0; k0 < k; k0 += ELM_GEMM512_KC) {
            long kc = k - k0 < ELM_GEMM512_KC ? k - k0 : ELM_GEMM512_KC;
            pack_w(w, n0, nr, k0, kc, wp, row);
            /* the next panel of this thread's rows */
            long pn0 = k0 + kc < k ? n0 : n0 + ELM_GEMM512_NR, pk0 = k0 + kc < k ? k0 + kc : 0;
            long pnr = r1 - pn0 < ELM_GEMM512_NR ? r1 - pn0 : ELM_GEMM512_NR;
            long pkc = k - pk0 < ELM_GEMM512_KC ? k - pk0 : ELM_GEMM512_KC;
            long parts = (m + ELM_GEMM512_MR - 1) / ELM_GEMM512_MR;
            for (long t0 = 0; t0 < m; t0 += ELM_GEMM512_MR) {
                int mt = m - t0 < ELM_GEMM512_MR ? (int)(m - t0) : ELM_GEMM512_MR;
                if (pnr > 0 && w->dtype == ELM_DTYPE_F32) /* others: no gain measured */
                    prefetch_panel(w, pn0, pnr, pk0, pkc, t0 / ELM_GEMM512_MR, parts);
                const float *ap = apack + (size_t)t0 * (size_t)k + (size_t)k0 * ELM_GEMM512_MR;
                micro(ap, wp, kc, c + t0 * ldc + n0, ldc, mt, nr, accumulate || k0 > 0);
            }
        }
    }
}

bool elm_gemm512_available(void)
{
    return elm_isa_x86(elm_kernels_isa(), ELM_ISA_AVX512);
}
#else
void elm_gemm512_rows(const float *apack, long m, const struct elm_matrix *w, long r0, long r1,
                      float *c, long ldc, bool accumulate, float *wp, float *row)
{
    (void)apack, (void)m, (void)w, (void)r0, (void)r1, (void)c, (void)ldc, (void)accumulate,
        (void)wp, (void)row;
}

bool elm_gemm512_available(void)
{
    return false;
}
#endif
