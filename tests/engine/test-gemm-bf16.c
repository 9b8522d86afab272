/* test-gemm-bf16.c: BF16 weights in the prefill GEMM (engine/kernels/gemm.c,
 * engine/kernels/arch/x86/gemm_bf16_avx512.c, arch/arm/gemm_bf16_neon.c)
 * against float64 references:
 *  - on a CPU with AVX512_BF16 or (AArch64) FEAT_BF16: the activations are rounded to bf16, so
 *    each output is within 2^-9 * sum |w x| of the exact product (the
 *    rounding's own bound: |x - bf16(x)| <= 2^-9 |x|), and within 1e-5 of
 *    that sum of the product with bf16-rounded activations (only the f32
 *    sums differ); the error actually seen is printed (diag) and bounded at
 *    twice its expected size, so a kernel that rounded worse would fail;
 *  - with exact (elm_ctx_params.exact) and on other CPUs: the exact
 *    product within 1e-5 of the sum;
 *  - ragged shapes (tokens not a multiple of the tile, rows not of the
 *    panel, odd K, K across panels), with and without accumulation; the
 *    same bits for 1 and 2 threads;
 *  - the bfmmla GEMM's rounding of activations (NEON on AArch64, scalar
 *    elsewhere) gives elm_f32_to_bf16's bits, ties, NaN and infinities
 *    included, in the places its tile layout says. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kernels/blocks.h"
#include "engine/kernels/gemm.h"
#include "engine/kernels/arch/arm/gemm_bf16_neon.h"
#include "engine/kernels/arch/x86/gemm_bf16_avx512.h"
#include "engine/kernels/threadpool.h"
#include "tests/lib/tap.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double uni(void)
{
    return tap_uniform(&rng);
}

#define xalloc tap_alloc64

static float *run(const float *x, long m, const struct elm_matrix *w, const float *c0, bool exact,
                  int threads)
{
    float *c = xalloc(sizeof(float) * (size_t)(m * w->rows));
    if (c0)
        memcpy(c, c0, sizeof(float) * (size_t)(m * w->rows));
    struct elm_threadpool *pool = NULL;
    struct elm_gemm_tile tile;
    if (elm_threadpool_new(threads, &pool) != ELM_OK || !elm_gemm_tile_init(&tile, threads, (size_t)w->cols))
        bail_out("pool or tile");
    tile.exact = exact;
    elm_gemm(x, w->cols, m, w, c, w->rows, c0 != NULL, pool, &tile);
    elm_gemm_tile_free(&tile);
    elm_threadpool_free(pool);
    return c;
}

/* The bf16 dot products in use: "vdpbf16ps", "bfmmla", or NULL (widened). */
static const char *bf16_path(void)
{
    return elm_gemm_bf16_available() ? "vdpbf16ps" : elm_gemm_bf16_neon_available() ? "bfmmla" : NULL;
}

/* The bfmmla packing of 3 tokens x 13 columns (a partial last group of 4,
 * tokens past m zero): each half where [group][token pair][2][4] puts it,
 * with elm_f32_to_bf16's bits. */
static void pack_bits(void)
{
    const uint32_t special[] = {0x3f808000u /* a tie, even: down */, 0x3f818000u /* tie, up */,
                                0x3f80ffffu, 0x7f800000u /* inf */, 0xff800000u, 0x7fc00001u,
                                0x7f800001u /* signalling NaN */, 0x80000000u, 0x00000001u,
                                0x7f7fffffu /* rounds to inf */, 0x3f7fffffu};
    enum { M = 3, K = 13, LDA = 16 };
    float a[M * LDA];
    for (int i = 0; i < M * LDA; i++) {
        uint32_t u = special[i % (int)(sizeof special / sizeof *special)];
        float f;
        memcpy(&f, &u, 4);
        a[i] = i % 5 == 4 ? (float)(uni() * 3.0) : f;
    }
    long kq = (K + 3) / 4;
    size_t n = elm_gemm_bf16_neon_apack_halves(M, K);
    uint16_t *ap = xalloc(n * sizeof *ap);
    memset(ap, 0xa5, n * sizeof *ap);
    elm_gemm_bf16_neon_pack_a(a, LDA, M, K, 0, ap);
    long bad = 0;
    for (int t = 0; t < ELM_GBF16N_MR; t++)
        for (long c = 0; c < 4 * kq; c++) {
            uint16_t want = t < M && c < K ? elm_f32_to_bf16(a[t * LDA + c]) : 0;
            bad += ap[(c / 4) * 32 + (t / 2) * 8 + (t % 2) * 4 + c % 4] != want;
        }
    ok(n == (size_t)ELM_GBF16N_MR * (size_t)kq * 4 && bad == 0,
       "bfmmla packing: %d tokens x %d columns, ties, NaN, inf, zero padding: %ld wrong halves",
       M, K, bad);
    free(ap);
}

static double worst_rel; /* the largest |err| / sum |w x| seen on the bf16 path */

static void shape(long m, long rows, long cols, bool accumulate)
{
    uint16_t *wb = xalloc(sizeof(uint16_t) * (size_t)(rows * cols));
    float *x = xalloc(sizeof(float) * (size_t)(m * cols));
    float *c0 = xalloc(sizeof(float) * (size_t)(m * rows));
    for (long i = 0; i < rows * cols; i++)
        wb[i] = elm_f32_to_bf16((float)(uni() * 0.1));
    for (long i = 0; i < m * cols; i++)
        x[i] = (float)(uni() * (1.0 + 2.0 * fabs(uni())));
    for (long i = 0; i < m * rows; i++)
        c0[i] = (float)uni();
    struct elm_matrix w = {.data = wb, .dtype = ELM_DTYPE_BF16, .rows = rows, .cols = cols};
    bool bf16 = bf16_path() != NULL;
    float *c = run(x, m, &w, accumulate ? c0 : NULL, false, 1);
    float *c2 = run(x, m, &w, accumulate ? c0 : NULL, false, 2);
    float *ce = run(x, m, &w, accumulate ? c0 : NULL, true, 2);
    long bad_exact = 0, bad_rounded = 0, bad_bound = 0;
    double sum_rel = 0.0;
    /* the operands widened and rounded once (the references below are most
     * of this test's time under emulation) */
    float *wf = xalloc(sizeof(float) * (size_t)(rows * cols));
    float *xr = xalloc(sizeof(float) * (size_t)(m * cols));
    for (long i = 0; i < rows * cols; i++)
        wf[i] = elm_bf16_to_f32(wb[i]);
    for (long i = 0; i < m * cols; i++)
        xr[i] = elm_bf16_to_f32(elm_f32_to_bf16(x[i]));
    for (long t = 0; t < m; t++)
        for (long r = 0; r < rows; r++) {
            double exact = accumulate ? c0[t * rows + r] : 0.0, rounded = exact, mag = 0.0;
            const float *wr = wf + r * cols, *xt = x + t * cols, *xrt = xr + t * cols;
            for (long i = 0; i < cols; i++) {
                double wi = wr[i], xi = xt[i];
                exact += wi * xi;
                rounded += wi * xrt[i];
                mag += fabs(wi * xi);
            }
            double got = c[t * rows + r], got_exact = ce[t * rows + r];
            bad_exact += fabs(got_exact - exact) > 1e-5 * mag + 1e-6;
            if (bf16) {
                bad_rounded += fabs(got - rounded) > 1e-5 * mag + 1e-6;
                bad_bound += fabs(got - exact) > ldexp(mag, -9) + 1e-6;
                double rel = fabs(got - exact) / (mag + 1e-30);
                sum_rel += rel;
                worst_rel = rel > worst_rel ? rel : worst_rel;
            } else {
                bad_rounded += fabs(got - exact) > 1e-5 * mag + 1e-6;
            }
        }
    const char *acc = accumulate ? ", accumulating" : "";
    is_int(bad_exact, 0, "%ld x %ld x %ld%s: exact mode == the exact product", m, rows, cols, acc);
    if (bf16) {
        is_int(bad_rounded, 0, "%ld x %ld x %ld%s: == the product of bf16-rounded activations", m,
               rows, cols, acc);
        is_int(bad_bound, 0, "%ld x %ld x %ld%s: within 2^-9 sum|w x| of the exact product "
               "(mean error %.2e of it)", m, rows, cols, acc, sum_rel / (double)(m * rows));
    } else {
        is_int(bad_rounded, 0, "%ld x %ld x %ld%s: no bf16 GEMM: the exact product", m, rows,
               cols, acc);
    }
    ok(memcmp(c, c2, sizeof(float) * (size_t)(m * rows)) == 0, "the same bits with 1 and 2 threads");
    free(c), free(c2), free(ce), free(wb), free(x), free(c0), free(wf), free(xr);
}

int main(void)
{
    plan_lazy();
    /* the kernel, whether or not it is the faster path on this CPU */
    setenv("ELM_GEMM_BF16", "on", 1);
    diag("bf16 GEMM: %s", bf16_path() ? bf16_path() : "none (exact path)");
    pack_bits();
    shape(200, 64, 256, false);
    shape(213, 45, 301, false);  /* ragged tokens and rows, odd K */
    shape(197, 33, 1030, true);  /* K across two panels, accumulating */
    shape(512, 96, 1280, false); /* a 270M-like width */
    if (bf16_path()) {
        /* Random signs: the error is a sum of independent roundings, far
         * below the bound 2^-9 (1.95e-3).  Measured when this was written
         * (Zen 5): the worst output 5.4e-4 of its sum |w x|, the mean
         * 0.5-1.2e-4 (smaller for longer rows); the bound here is twice the
         * worst. */
        diag("worst error: %.3e of sum |w x|", worst_rel);
        ok(worst_rel < 1.1e-3, "the largest error, %.2e of sum |w x|, is as small as measured",
           worst_rel);
    }
    return done_testing();
}
