/* test-gemm-int8.c: batches of block-quantized weights x int8 activations
 * through elm_gemm (engine/kernels/gemm.c, engine/kernels/gemm_int8.c): Q8_0, Q4_0, Q4_K,
 * Q5_K, Q6_K, on every kernel set this CPU runs (the int8 GEMM with AVX2 or
 * AVX-512; the portable set widens the weights to f32 from 12 tokens):
 *  - against a float64 emulation of quant_act.h's rule (activations rounded
 *    by elm_quantize_act_ref, weights dequantized, products summed in
 *    double; the portable set: the exact product), within 1e-5 of the sum
 *    of |products| of each output, at ragged
 *    shapes (tokens not a multiple of the tile, rows not of the panel), with
 *    and without accumulation, also with every weight and activation at
 *    the end of its range (the AVX2 kernel's int16 sums at their largest);
 *  - the same bits for 1 and 2 threads, and for a token whether it comes in
 *    a batch of 100 or of 17 (the order of float additions depends on k
 *    only), and from every int8 GEMM: AVX2 and AVX-512 VNNI on x86, sdot
 *    and smmla on AArch64. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kernels/gemm.h"
#include "engine/kernels/gemm_int8.h"
#include "engine/kernels/kernels.h"
#include "engine/model/model.h"
#include "engine/kernels/blocks.h"
#include "engine/kernels/act_int8.h"
#include "engine/kernels/threadpool.h"
#include "tests/lib/tap.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;

static double uni(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(uint32_t)(rng >> 16) / 2147483648.0 - 1.0;
}

static void *xalloc(size_t n)
{
    void *p = aligned_alloc(64, (n + 63) / 64 * 64);
    if (!p)
        bail_out("out of memory");
    return p;
}

/* rows x cols weights of dtype from random floats whose scale varies by row
 * and by sub-block (so that K-quant scales and mins differ); wf gets them
 * dequantized. */
/* extreme: in every 16 weights one -1 and fifteen 0.97 (a row's sign
 * alternating), so that the unsigned codes sit at the top of their range
 * (Q6_K 63, Q5_K 31, Q4_0 and Q4_K 15, Q8_0 |w| 127), and every activation
 * +-1 (q = +-127): the largest int16 pair sums of the AVX2 kernel. */
static bool extreme;

static void *make_weights(enum elm_dtype dt, long rows, long cols, float *wf)
{
    size_t ldw = elm_row_size(dt, cols);
    uint8_t *w = xalloc(ldw * (size_t)rows);
    float *src = xalloc(sizeof(float) * (size_t)cols);
    for (long r = 0; r < rows; r++) {
        double scale = 0.05 + 2.0 * fabs(uni());
        for (long i = 0; i < cols; i++) {
            double sub = 1.0 + 0.8 * sin((double)(i / 16 + r));
            src[i] = extreme ? (i % 16 ? 0.97f : -1.0f) * (r % 2 ? -1.0f : 1.0f)
                             : (float)(scale * sub * (uni() + (i % 7 == 0 ? 0.5 : 0.0)));
        }
        if (!elm_quantize_row(src, dt, w + (size_t)r * ldw, cols))
            bail_out("quantize %s", elm_dtype_name(dt));
    }
    elm_dequantize(w, dt, wf, rows * cols);
    free(src);
    return w;
}

/* Activations: mostly random, one block of zeros, one large outlier. */
static void make_x(float *x, long m, long cols)
{
    if (extreme) {
        for (long i = 0; i < m * cols; i++)
            x[i] = i / cols % 2 ? -1.0f : 1.0f;
        return;
    }
    for (long i = 0; i < m * cols; i++)
        x[i] = (float)(uni() * (1.0 + 3.0 * fabs(uni())));
    if (cols >= 64)
        memset(x + 32, 0, 32 * sizeof(float));
    x[m * cols / 2] = 40.0f;
}

/* The rule emulated: out[t][r] and bound[t][r] = sum |w q d|; or (int8
 * false) the exact product of the dequantized weights and x. */
static void emulate(const float *wf, long rows, long cols, const float *x, long m, bool int8,
                    double *out, double *bound)
{
    void *buf = xalloc(elm_qact_bytes(cols));
    struct elm_qact a;
    elm_qact_init(&a, cols, buf);
    for (long t = 0; t < m; t++) {
        elm_quantize_act_ref(x + t * cols, &a);
        for (long r = 0; r < rows; r++) {
            double s = 0.0, b = 0.0;
            for (long i = 0; i < cols; i++) {
                double xi = int8 ? (double)a.q[i] * a.d[i / ELM_QA_BLOCK] : x[t * cols + i];
                double p = (double)wf[r * cols + i] * xi;
                s += p;
                b += fabs(p);
            }
            out[t * rows + r] = s;
            bound[t * rows + r] = b;
        }
    }
    free(buf);
}

static bool run_gemm(const float *x, long m, const struct elm_matrix *w, float *c, bool acc,
                     int threads)
{
    struct elm_threadpool *pool = NULL;
    struct elm_gemm_tile tile;
    if (elm_threadpool_new(threads, &pool) != ELM_OK)
        return false;
    bool r = elm_gemm_tile_init(&tile, threads, (size_t)w->cols);
    if (r)
        elm_gemm(x, w->cols, m, w, c, w->rows, acc, pool, &tile);
    elm_gemm_tile_free(&tile);
    elm_threadpool_free(pool);
    return r;
}

/* Returns C from one thread (the caller frees it). */
static float *gemm_case(const char *set, enum elm_dtype dt, long rows, long cols, long m)
{
    rng = 0x2545f4914f6cdd1dull + (uint64_t)(rows * cols + m + dt); /* the same data per set */
    float *wf = xalloc(sizeof(float) * (size_t)(rows * cols));
    void *wq = make_weights(dt, rows, cols, wf);
    float *x = xalloc(sizeof(float) * (size_t)(m * cols));
    make_x(x, m, cols);
    double *ref = xalloc(sizeof(double) * (size_t)(m * rows));
    double *bound = xalloc(sizeof(double) * (size_t)(m * rows));
    bool int8 = elm_gemm_i8_available(dt, cols);
    emulate(wf, rows, cols, x, m, int8, ref, bound);
    struct elm_matrix w = {.data = wq, .dtype = dt, .rows = rows, .cols = cols};
    size_t n = (size_t)(m * rows);
    float *c1 = xalloc(sizeof(float) * n), *c2 = xalloc(sizeof(float) * n);
    float *acc = xalloc(sizeof(float) * n), *part = xalloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++)
        acc[i] = 1.0f;
    bool ran = run_gemm(x, m, &w, c1, false, 1) && run_gemm(x, m, &w, c2, false, 2) &&
               run_gemm(x, m, &w, acc, true, 2) && run_gemm(x, 17, &w, part, false, 2);
    double worst = 0.0, worst_acc = 0.0;
    for (size_t i = 0; ran && i < n; i++) {
        double tol = 1e-5 * bound[i] + 1e-30;
        worst = fmax(worst, fabs(c1[i] - ref[i]) / tol);
        worst_acc = fmax(worst_acc, fabs(acc[i] - (1.0 + ref[i])) / (tol + 1e-6));
    }
    ok(ran && worst <= 1.0,
       "%s %s: %ld rows x %ld cols, %ld tokens (%s) vs float64: worst error %.3f of 1e-5 "
       "sum|products|",
       set, elm_dtype_name(dt), rows, cols, m,
       int8 ? "int8 GEMM vs the rule emulated" : "widened to f32 vs the exact product", worst);
    ok(ran && worst_acc <= 1.0, "%s %s: accumulating into C: worst %.3f", set,
       elm_dtype_name(dt), worst_acc);
    ok(ran && memcmp(c1, c2, sizeof(float) * n) == 0, "%s %s: 1 and 2 threads give the same bits",
       set, elm_dtype_name(dt));
    if (int8) /* (the f32 path may take another GEMM for another batch size) */
        ok(ran && memcmp(c1, part, sizeof(float) * (size_t)(17 * rows)) == 0,
           "%s %s: the first 17 tokens alone give the same bits as in the batch of %ld", set,
           elm_dtype_name(dt), m);
    free(wf);
    free(wq);
    free(x);
    free(ref);
    free(bound);
    free(c2);
    free(acc);
    free(part);
    return c1;
}

int main(void)
{
    plan_lazy();
    static const enum elm_dtype dts[] = {ELM_DTYPE_Q8_0, ELM_DTYPE_Q4_0, ELM_DTYPE_Q4_K,
                                         ELM_DTYPE_Q5_K, ELM_DTYPE_Q6_K};
    /* every set this CPU runs (avx512: with VNNI where the CPU has it, as
     * ELM_KERNELS=avx512) */
    enum elm_isa sets[ELM_ISA_COUNT];
    const int nsets = elm_cpu_sets(sets);
    for (int d = 0; d < 5; d++) {
        bool k32 = dts[d] == ELM_DTYPE_Q8_0 || dts[d] == ELM_DTYPE_Q4_0;
        static const long shapes[3][3] = {{70, 0, 100}, {33, 0, 37}, {40, 0, 20}};
        for (int sh = 0; sh < 3; sh++) {
            long rows = shapes[sh][0], m = shapes[sh][2];
            long cols = sh == 0 ? (k32 ? 96 : 256) : sh == 1 ? (k32 ? 1280 : 768) : 512;
            extreme = sh == 2;
            if (extreme)
                diag("%s: extreme values (codes at the top of their range, q = +-127)", elm_dtype_name(dts[d]));
            float *c[ELM_ISA_COUNT] = {NULL};
            bool i8[ELM_ISA_COUNT] = {false};
            for (int s = 0; s < nsets; s++)
                if (elm_kernels_select(sets[s])) {
                    c[s] = gemm_case(elm_isa_name(sets[s]), dts[d], rows, cols, m);
                    i8[s] = elm_gemm_i8_available(dts[d], cols);
                }
            /* exact integers, the same float steps: every int8 GEMM (AVX2
             * and AVX-512 VNNI; sdot and smmla) gives the first one's bits */
            for (int s = 0, first = -1; s < nsets; s++) {
                if (!c[s] || !i8[s])
                    continue;
                if (first < 0) {
                    first = s;
                    continue;
                }
                ok(memcmp(c[first], c[s], sizeof(float) * (size_t)(m * rows)) == 0,
                   "%s %ld x %ld, %ld tokens: the %s and %s int8 GEMMs give the same bits",
                   elm_dtype_name(dts[d]), rows, cols, m, elm_isa_name(sets[first]),
                   elm_isa_name(sets[s]));
            }
            for (int s = 0; s < nsets; s++)
                free(c[s]);
        }
    }
    return done_testing();
}
