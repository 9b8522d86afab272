/* gemm_bf16_avx512.c: C (+)= A W^T for BF16 weights with vdpbf16ps
 * (gemm_bf16_avx512.h), a micro-kernel of 14 tokens x 32 weight rows (28
 * accumulators), as the f32 one (gemm_f32_avx512.c).
 *
 * Layout: each 32-bit word holds a pair of bf16 of consecutive columns
 * (2c, 2c + 1), the operand vdpbf16ps takes.  A W row already is such
 * words in memory, so packing W is a 32-bit transpose of 32 rows, no
 * conversion; A is rounded once per call into panels [pair][14].  A
 * panel of W is KC columns; every output's summation order depends only
 * on K and KC, not on threads or row ranges.  An odd K gets a zero second
 * half in its last pair. */
#include "config.h"

#include "engine/kernels/arch/x86/gemm_bf16_avx512.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/platform.h"
#include "engine/kernels/blocks.h"
#include "engine/base/test_hooks.h"
#include "engine/kernels/cpu.h"
#include "engine/kernels/kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include "engine/kernels/arch/x86/simd_x86.h"
#define HAVE_GEMM_BF16 1
#define AVX512BF16 \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c,avx512bf16")))
#endif

static long pairs_of(long k)
{
    return (k + 1) / 2;
}

size_t elm_gemm_bf16_apack_words(long m, long k)
{
    return (size_t)((m + ELM_GBF16_MR - 1) / ELM_GBF16_MR) * ELM_GBF16_MR * (size_t)pairs_of(k);
}

static uint32_t pair(float lo, float hi)
{
    return (uint32_t)elm_f32_to_bf16(lo) | (uint32_t)elm_f32_to_bf16(hi) << 16;
}

/* Pairs [p0, kp) of one token's row into its column t of the panel. */
static void pack_row_scalar(const float *row, long k, long p0, long kp, int t, uint32_t *panel)
{
    for (long p = p0; p < kp; p++) {
        float lo = row ? row[2 * p] : 0.0f;
        float hi = row && 2 * p + 1 < k ? row[2 * p + 1] : 0.0f;
        panel[p * ELM_GBF16_MR + t] = pair(lo, hi);
    }
}

#ifdef HAVE_GEMM_BF16
/* 16 pairs at a time: vcvtne2ps2bf16 rounds as elm_f32_to_bf16 does (to
 * nearest even), then the words go to their places 14 apart. */
AVX512BF16 static long pack_row_avx512(const float *row, long k, int t, uint32_t *panel)
{
    const __m512i at = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5,
                                                           4, 3, 2, 1, 0),
                                          _mm512_set1_epi32(ELM_GBF16_MR));
    long p = 0;
    for (; 2 * p + 32 <= k; p += 16) {
        __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(row + 2 * p + 16),
                                         _mm512_loadu_ps(row + 2 * p));
        _mm512_i32scatter_epi32(panel + p * ELM_GBF16_MR + t, at, (__m512i)v, 4);
    }
    return p;
}
#endif

void elm_gemm_bf16_pack_a(const float *a, long lda, long m, long k, long t0, uint32_t *ap)
{
    long kp = pairs_of(k);
    uint32_t *panel = ap + (size_t)t0 * (size_t)kp;
    for (int t = 0; t < ELM_GBF16_MR; t++) {
        const float *row = t0 + t < m ? a + (t0 + t) * lda : NULL;
        long p = 0;
#ifdef HAVE_GEMM_BF16
        if (row && elm_gemm_bf16_available())
            p = pack_row_avx512(row, k, t, panel);
#endif
        pack_row_scalar(row, k, p, kp, t, panel);
    }
}

#ifdef HAVE_GEMM_BF16
/* Rows [r0, r0 + nr) of W (fewer than 32: zeros), pairs [p0, p0 + np),
 * into wp[pair][32]. */
AVX512BF16 static void pack_w(const struct elm_matrix *w, long r0, long nr, long p0, long np,
                              uint32_t *wp)
{
    long k = (long)w->cols;
    size_t row_bytes = elm_row_size(w->dtype, w->cols);
    bool whole = nr == ELM_GBF16_NR && (k % 2 == 0 || p0 + np < pairs_of(k));
    if (whole) {
        /* 16 x 16 word transposes straight from the rows (k even: a row is
         * k / 2 words) */
        const float *src = (const float *)(const void *)((const char *)w->data + (size_t)r0 * row_bytes) + p0;
        long ld = (long)(row_bytes / 4), p = 0;
        if (row_bytes % 4 == 0) {
            for (; p + 16 <= np; p += 16) {
                elm_transpose(src + p, ld, 16, 16, (float *)wp + p * ELM_GBF16_NR, ELM_GBF16_NR);
                elm_transpose(src + 16 * ld + p, ld, 16, 16, (float *)wp + p * ELM_GBF16_NR + 16,
                              ELM_GBF16_NR);
            }
        }
        for (; p < np; p++)
            for (int r = 0; r < ELM_GBF16_NR; r++) {
                uint32_t v;
                memcpy(&v, (const char *)w->data + (size_t)(r0 + r) * row_bytes +
                                (size_t)(p0 + p) * 4, 4);
                wp[p * ELM_GBF16_NR + r] = v;
            }
        return;
    }
    for (long p = 0; p < np; p++) {
        long col = 2 * (p0 + p);
        for (int r = 0; r < ELM_GBF16_NR; r++) {
            uint32_t v = 0;
            if (r < nr) {
                const uint16_t *row =
                    (const uint16_t *)(const void *)((const char *)w->data + (size_t)(r0 + r) * row_bytes);
                uint16_t lo, hi = 0;
                memcpy(&lo, row + col, 2);
                if (col + 1 < k)
                    memcpy(&hi, row + col + 1, 2);
                v = (uint32_t)lo | (uint32_t)hi << 16;
            }
            wp[p * ELM_GBF16_NR + r] = v;
        }
    }
}

AVX512BF16 static void micro(const uint32_t *ap, const uint32_t *wp, long np, float *c, long ldc,
                             int mt, int nr, bool add)
{
    __m512 c0[ELM_GBF16_MR], c1[ELM_GBF16_MR];
    _Pragma("GCC unroll 14") for (int t = 0; t < ELM_GBF16_MR; t++)
        c0[t] = c1[t] = _mm512_setzero_ps();
    for (long p = 0; p < np; p++) {
        __m512bh w0 = (__m512bh)_mm512_load_si512(wp + p * ELM_GBF16_NR);
        __m512bh w1 = (__m512bh)_mm512_load_si512(wp + p * ELM_GBF16_NR + 16);
        const uint32_t *a = ap + p * ELM_GBF16_MR;
        _Pragma("GCC unroll 14") for (int t = 0; t < ELM_GBF16_MR; t++) {
            __m512bh av = (__m512bh)_mm512_set1_epi32((int)a[t]);
            c0[t] = _mm512_dpbf16_ps(c0[t], av, w0);
            c1[t] = _mm512_dpbf16_ps(c1[t], av, w1);
        }
    }
    store_tile32(c, ldc, c0, c1, ELM_GBF16_MR, mt, nr, add);
}

void elm_gemm_bf16_rows(const uint32_t *apack, long m, const struct elm_matrix *w, long r0,
                        long r1, float *c, long ldc, bool accumulate, uint32_t *wp)
{
    long kp = pairs_of((long)w->cols), pc = ELM_GBF16_KC / 2;
    for (long n0 = r0; n0 < r1; n0 += ELM_GBF16_NR) {
        int nr = r1 - n0 < ELM_GBF16_NR ? (int)(r1 - n0) : ELM_GBF16_NR;
        for (long p0 = 0; p0 < kp; p0 += pc) {
            long np = kp - p0 < pc ? kp - p0 : pc;
            pack_w(w, n0, nr, p0, np, wp);
            for (long t0 = 0; t0 < m; t0 += ELM_GBF16_MR) {
                int mt = m - t0 < ELM_GBF16_MR ? (int)(m - t0) : ELM_GBF16_MR;
                const uint32_t *ap = apack + (size_t)t0 * (size_t)kp + (size_t)p0 * ELM_GBF16_MR;
                micro(ap, wp, np, c + t0 * ldc + n0, ldc, mt, nr, accumulate || p0 > 0);
            }
        }
    }
}

/* The calibration: 24 independent chains of vdpbf16ps, then of vfmadd,
 * timed back to back (so that a busy machine slows both alike). */
AVX512BF16 __attribute__((noinline)) static float chains_bf16(long n)
{
    __m512 c[24];
    for (int i = 0; i < 24; i++)
        c[i] = _mm512_setzero_ps();
    __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f803f80);
    for (long k = 0; k < n; k++) {
        _Pragma("GCC unroll 24") for (int i = 0; i < 24; i++) c[i] = _mm512_dpbf16_ps(c[i], a, a);
        __asm__ volatile("" : "+v"(a));
    }
    for (int i = 1; i < 24; i++)
        c[0] = _mm512_add_ps(c[0], c[i]);
    return _mm512_reduce_add_ps(c[0]);
}

AVX512BF16 __attribute__((noinline)) static float chains_fma(long n)
{
    __m512 c[24];
    for (int i = 0; i < 24; i++)
        c[i] = _mm512_setzero_ps();
    __m512 a = _mm512_set1_ps(1.0f);
    for (long k = 0; k < n; k++) {
        _Pragma("GCC unroll 24") for (int i = 0; i < 24; i++) c[i] = _mm512_fmadd_ps(a, a, c[i]);
        __asm__ volatile("" : "+v"(a));
    }
    for (int i = 1; i < 24; i++)
        c[0] = _mm512_add_ps(c[0], c[i]);
    return _mm512_reduce_add_ps(c[0]);
}

static double bf16_ratio = -1.0; /* vdpbf16ps flops / FMA flops, measured */
static bool bf16_pays;

/* Does a vdpbf16ps do more work per second than an FMA here?  Where the
 * CPU runs it at the FMA's rate (Zen 4/5: twice the flops) the bf16 GEMM
 * wins; some (seen: an Intel Xeon VM, a quarter of the FMA's rate, half
 * its flops) it loses to widening.  ~2 ms, once; a test hook
 * decides instead. */
static void calibrate(void)
{
    struct elm_test_hooks hooks; /* a test may decide instead */
    elm_test_hooks(&hooks);
    if (hooks.gemm_bf16 != 0) {
        bf16_pays = hooks.gemm_bf16 > 0;
        return;
    }
    double best_b = 1e9, best_f = 1e9;
    volatile float sink = 0.0f;
    for (int r = 0; r < 3; r++) {
        double t0 = elm_now_seconds();
        sink += chains_bf16(4000);
        double t1 = elm_now_seconds();
        sink += chains_fma(4000);
        double t2 = elm_now_seconds();
        best_b = t1 - t0 < best_b ? t1 - t0 : best_b;
        best_f = t2 - t1 < best_f ? t2 - t1 : best_f;
    }
    (void)sink;
    /* a dpbf16 does twice an FMA's flops */
    bf16_ratio = 2.0 * best_f / best_b;
    bf16_pays = bf16_ratio > 1.15;
}

static pthread_once_t calibrated = PTHREAD_ONCE_INIT;

bool elm_gemm_bf16_available(void)
{
    if (!elm_cpu()->avx512_bf16 || !elm_isa_x86(elm_kernels_isa(), ELM_ISA_AVX512))
        return false;
    pthread_once(&calibrated, calibrate);
    return bf16_pays;
}

double elm_gemm_bf16_measured_ratio(void)
{
    if (!elm_cpu()->avx512_bf16)
        return 0.0;
    pthread_once(&calibrated, calibrate);
    return bf16_ratio;
}
#else
void elm_gemm_bf16_rows(const uint32_t *apack, long m, const struct elm_matrix *w, long r0,
                        long r1, float *c, long ldc, bool accumulate, uint32_t *wp)
{
    (void)apack, (void)m, (void)w, (void)r0, (void)r1, (void)c, (void)ldc, (void)accumulate,
        (void)wp;
}

bool elm_gemm_bf16_available(void)
{
    return false;
}

double elm_gemm_bf16_measured_ratio(void)
{
    return 0.0;
}
#endif
