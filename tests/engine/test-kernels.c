/* test-kernels.c: every kernel set this CPU can run (generic, avx2,
 * avx512) against float64 references: matrix rows times 1..9 vectors for
 * F32/BF16/F16 at awkward widths, row-range independence (what makes decode
 * bit-identical across thread counts), SwiGLU, tiled attention with an
 * online softmax, the GEMM paths (row kernels and BLIS) and the pool. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kernels/gemm.h"
#include "engine/kernels/kernels.h"
#include "engine/model/model.h"
#include "engine/kernels/blocks.h"
#include "engine/kernels/act_int8.h"
#include "engine/kernels/threadpool.h"
#include "tests/lib/tap.h"

static double frand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return ((*s >> 8) & 0xffff) / 32768.0 - 1.0;
}

/* W[rows, cols] of dtype with values exactly representable in it, and the
 * same values as f32 in wf. */
static void *make_w(enum elm_dtype dt, long rows, long cols, float *wf, unsigned seed)
{
    uint16_t *h = malloc((size_t)rows * (size_t)cols * 2);
    float *f = malloc((size_t)rows * (size_t)cols * 4);
    for (long i = 0; i < rows * cols; i++) {
        float v = (float)frand(&seed);
        if (dt == ELM_DTYPE_BF16) {
            h[i] = elm_f32_to_bf16(v);
            v = elm_bf16_to_f32(h[i]);
        } else if (dt == ELM_DTYPE_F16) {
            h[i] = elm_f32_to_f16(v);
            v = elm_f16_to_f32(h[i]);
        }
        wf[i] = f[i] = v;
    }
    if (dt == ELM_DTYPE_F32) {
        free(h);
        return f;
    }
    free(f);
    return h;
}

static void matmul_case(const char *set, enum elm_dtype dt, long cols)
{
    enum { ROWS = 37, M = 9 };
    float *wf = malloc(sizeof(float) * ROWS * (size_t)cols);
    void *w = make_w(dt, ROWS, cols, wf, (unsigned)(cols * 7 + dt));
    float *x = malloc(sizeof(float) * M * (size_t)cols);
    unsigned s = 99;
    for (long i = 0; i < M * cols; i++)
        x[i] = (float)frand(&s);
    struct elm_matrix mat = {.data = w, .dtype = dt, .rows = ROWS, .cols = cols};
    float y[M * ROWS], y1[M * ROWS];
    double ref[M * ROWS]; /* 1 + the float64 products */
    for (int t = 0; t < M; t++)
        for (int r = 0; r < ROWS; r++) {
            ref[t * ROWS + r] = 1.0;
            for (long k = 0; k < cols; k++)
                ref[t * ROWS + r] += (double)wf[r * cols + k] * x[t * cols + k];
        }
    double worst = 0.0;
    bool split_same = true;
    for (int m = 1; m <= M; m++) {
        for (int i = 0; i < M * ROWS; i++)
            y[i] = 1.0f; /* accumulate onto 1 */
        elm_matmul_rows(&mat, x, cols, m, y, ROWS, 0, ROWS, true);
        for (int i = 0; i < m * ROWS; i++) {
            double e = fabs(y[i] - ref[i]) / (1.0 + fabs(ref[i]));
            worst = e > worst ? e : worst;
        }
        /* The same rows computed in three odd ranges: bit-identical. */
        elm_matmul_rows(&mat, x, cols, m, y1, ROWS, 0, 5, false);
        elm_matmul_rows(&mat, x, cols, m, y1 + 5, ROWS, 5, 22, false);
        elm_matmul_rows(&mat, x, cols, m, y1 + 22, ROWS, 22, ROWS, false);
        for (int t = 0; t < m; t++)
            for (int r = 0; r < ROWS; r++)
                split_same = split_same && y1[t * ROWS + r] + 1.0f == y[t * ROWS + r];
    }
    ok(worst < 1e-5, "%s %s cols %ld: rows x 1..%d vectors vs float64 (max rel err %.2g)", set,
       elm_dtype_name(dt), cols, M, worst);
    ok(split_same, "%s %s cols %ld: any row ranges give identical results", set,
       elm_dtype_name(dt), cols);
    free(w);
    free(wf);
    free(x);
}

/* Q8_0 / Q4_0 rows (kernels_quant*.c: int8 activations) against float64
 * over the dequantized weights and the activations rounded as quant_act.h
 * says (elm_quantize_act_ref; tests/engine/test-quant-int8.c pins that and the
 * kernels in detail), and widening against quant.c. */
static void quant_case(const char *set, enum elm_dtype dt)
{
    enum { ROWS = 21, COLS = 320, M = 3 };
    float *src = malloc(sizeof(float) * ROWS * COLS), *wf = malloc(sizeof(float) * ROWS * COLS);
    float *wf2 = malloc(sizeof(float) * ROWS * COLS);
    size_t rs = elm_row_size(dt, COLS);
    uint8_t *q = malloc(rs * ROWS);
    unsigned s = 3u + dt;
    for (int i = 0; i < ROWS * COLS; i++)
        src[i] = (float)frand(&s);
    for (int r = 0; r < ROWS; r++)
        elm_quantize_row(src + r * COLS, dt, q + r * rs, COLS);
    elm_dequantize(q, dt, wf, ROWS * COLS);
    elm_to_f32(q, dt, wf2, ROWS * COLS);
    ok(memcmp(wf, wf2, sizeof(float) * ROWS * COLS) == 0, "%s %s: widening == quant.c's", set,
       elm_dtype_name(dt));
    float x[M * COLS], y[M * ROWS], y1[M * ROWS];
    for (int i = 0; i < M * COLS; i++)
        x[i] = (float)frand(&s);
    struct elm_matrix mat = {.data = q, .dtype = dt, .rows = ROWS, .cols = COLS};
    elm_matmul_rows(&mat, x, COLS, M, y, ROWS, 0, ROWS, false);
    elm_matmul_rows(&mat, x, COLS, M, y1, ROWS, 0, 8, false);
    elm_matmul_rows(&mat, x, COLS, M, y1 + 8, ROWS, 8, ROWS, false);
    static _Alignas(64) unsigned char abuf[COLS + COLS / 8 + 256];
    if (elm_qact_bytes(COLS) > sizeof abuf)
        bail_out("quant_case: activation buffer too small");
    struct elm_qact a;
    elm_qact_init(&a, COLS, abuf);
    double worst = 0.0;
    for (int t = 0; t < M; t++) {
        elm_quantize_act_ref(x + t * COLS, &a);
        for (int r = 0; r < ROWS; r++) {
            double ref = 0.0, mag = 0.0;
            for (int k = 0; k < COLS; k++) {
                double p = (double)wf[r * COLS + k] * a.q[k] * a.d[k / 32];
                ref += p;
                mag += fabs(p);
            }
            double e = fabs(y[t * ROWS + r] - ref) / (mag > 0 ? mag : 1.0);
            worst = e > worst ? e : worst;
        }
    }
    ok(worst < 1e-5 && memcmp(y, y1, sizeof y) == 0,
       "%s %s: rows x %d vectors (int8 activations) vs float64 (max err %.2g of the sum of "
       "|products|), row ranges identical",
       set, elm_dtype_name(dt), M, worst);
    free(src);
    free(wf);
    free(wf2);
    free(q);
}

static void transpose_case(const char *set)
{
    enum { R = 37, C = 70, LDI = 75, LDO = 41 };
    static float in[R * LDI], out[C * LDO];
    for (int i = 0; i < R * LDI; i++)
        in[i] = (float)i;
    memset(out, 0, sizeof out);
    elm_transpose(in, LDI, R, C, out, LDO);
    bool good = true;
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++)
            good = good && out[c * LDO + r] == in[r * LDI + c];
    ok(good, "%s: transpose %d x %d (strided)", set, R, C);
}

static void swiglu_case(const char *set)
{
    enum { N = 203 };
    float g[N], u[N];
    double worst = 0.0;
    for (int i = 0; i < N; i++) {
        g[i] = (float)((i - 100) * 0.45); /* -45 .. 46: both tails */
        u[i] = (float)(0.5 + i * 0.01);
    }
    float g0[N];
    memcpy(g0, g, sizeof g);
    elm_swiglu(g, u, N);
    for (int i = 0; i < N; i++) {
        double ref = g0[i] / (1.0 + exp(-(double)g0[i])) * u[i];
        double e = fabs(g[i] - ref) / (1e-30 + fabs(ref) > 1.0 ? fabs(ref) : 1.0);
        worst = e > worst ? e : worst;
    }
    ok(worst < 1e-6, "%s: swiglu vs float64 (max err %.2g)", set, worst);
}

/* RMSNorm vs float64, in place and not, with and without a SIMD tail. */
static void rmsnorm_case(const char *set, int n)
{
    float *x = malloc((size_t)n * sizeof *x), *w = malloc((size_t)n * sizeof *w);
    float *out = malloc((size_t)n * sizeof *out);
    double ss = 0.0, worst = 0.0;
    for (int i = 0; i < n; i++) {
        x[i] = (float)(((i * 37) % 101 - 50) * 0.03);
        w[i] = (float)(0.5 + (i % 7) * 0.1);
        ss += (double)x[i] * x[i];
    }
    double r = 1.0 / sqrt(ss / n + 1e-6);
    elm_rmsnorm(x, w, out, (size_t)n, 1e-6f);
    for (int i = 0; i < n; i++) {
        double ref = x[i] * r * w[i];
        double e = fabs(out[i] - ref) / (fabs(ref) > 1.0 ? fabs(ref) : 1.0);
        worst = e > worst ? e : worst;
    }
    elm_rmsnorm(x, w, x, (size_t)n, 1e-6f);
    ok(worst < 1e-6 && memcmp(x, out, (size_t)n * sizeof *x) == 0,
       "%s: rmsnorm n=%d vs float64 (max err %.2g), in place identical", set, n, worst);
    free(x);
    free(w);
    free(out);
}

/* Online softmax over blocks == softmax over all keys at once. */
/* Attention as forward.c tiles it: n_tok query tokens at the last of
 * n_keys positions (causal: a token sees the keys up to its own position),
 * grp query heads per token sharing the keys (GQA), key blocks of
 * ELM_ATTN_BK transposed with zero columns past the block, rows handed to
 * elm_attn_rows nr at a time (crossing tokens when grp is not nr, with a
 * different key count each; rows before a block's first key get nk 0).
 * Every row vs a float64 softmax over its own keys: |error| of the output
 * < 2e-6 (scores of |q| <= 3, |k| <= 1 summed in f32 over hd, exp to 2e-7
 * relative; outputs are averages of |v| <= 1; measured <= 5.3e-7, hd 128);
 * and every row bit-identical
 * to the same row computed alone (nr 1): grouping must not change results. */
static void attn_case(const char *set, int hd, int n_keys, int n_tok, int grp, int nr)
{
    int rows = n_tok * grp, ldv = hd + 3;
    float *q = malloc(sizeof(float) * (size_t)rows * (size_t)hd);
    float *kk = malloc(sizeof(float) * (size_t)n_keys * (size_t)hd);
    float *v = malloc(sizeof(float) * (size_t)n_keys * (size_t)ldv);
    float *kt = calloc((size_t)hd * ELM_ATTN_BK, sizeof(float));
    float *o = calloc((size_t)rows * (size_t)hd, sizeof(float));
    float *o1 = calloc((size_t)rows * (size_t)hd, sizeof(float));
    float *m = malloc(sizeof(float) * (size_t)rows), *l = calloc((size_t)rows, sizeof(float));
    float *m1 = malloc(sizeof(float) * (size_t)rows), *l1 = calloc((size_t)rows, sizeof(float));
    double *sc = malloc(sizeof(double) * (size_t)n_keys);
    unsigned s = (unsigned)(hd * 31 + n_keys * 7 + grp * 3 + nr);
    for (int i = 0; i < rows * hd; i++)
        q[i] = (float)(3.0 * frand(&s));
    for (int i = 0; i < n_keys * hd; i++)
        kk[i] = (float)frand(&s);
    for (int i = 0; i < n_keys * ldv; i++)
        v[i] = (float)frand(&s);
    for (int i = 0; i < rows; i++)
        m[i] = m1[i] = -INFINITY;
    float scale = 1.0f / sqrtf((float)hd);
    const float *qp[ELM_ATTN_BR];
    int nk[ELM_ATTN_BR] = {0};
    /* nothing seen yet and no keys: must stay the start state (no NaN) */
    for (int r = 0; r < nr; r++)
        qp[r] = q;
    elm_attn_rows(nr, qp, nk, scale, kt, v, ldv, hd, m, l, o);
    bool start = true;
    for (int r = 0; r < nr; r++)
        start = start && m[r] == -INFINITY && l[r] == 0.0f && o[(size_t)r * hd] == 0.0f;
    for (int kb = 0; kb < n_keys; kb += ELM_ATTN_BK) {
        int nkb = n_keys - kb < ELM_ATTN_BK ? n_keys - kb : ELM_ATTN_BK;
        for (int d = 0; d < hd; d++)
            for (int j = 0; j < ELM_ATTN_BK; j++)
                kt[d * ELM_ATTN_BK + j] = j < nkb ? kk[(kb + j) * hd + d] : 0.0f;
        for (int i0 = 0; i0 < rows; i0 += nr) {
            int n = rows - i0 < nr ? rows - i0 : nr;
            for (int r = 0; r < n; r++) {
                int pos = n_keys - n_tok + (i0 + r) / grp, lim = pos + 1 - kb;
                nk[r] = lim < 0 ? 0 : lim < nkb ? lim : nkb;
                qp[r] = q + (size_t)(i0 + r) * hd;
            }
            elm_attn_rows(n, qp, nk, scale, kt, v + (size_t)kb * ldv, ldv, hd, m + i0, l + i0,
                          o + (size_t)i0 * hd);
            for (int r = 0; r < n; r++)
                elm_attn_rows(1, &qp[r], &nk[r], scale, kt, v + (size_t)kb * ldv, ldv, hd,
                              m1 + i0 + r, l1 + i0 + r, o1 + (size_t)(i0 + r) * hd);
        }
    }
    double worst = 0.0;
    for (int i = 0; i < rows; i++) {
        int keys = n_keys - n_tok + i / grp + 1;
        double mx = -INFINITY, sum = 0.0;
        for (int j = 0; j < keys; j++) {
            double dot = 0.0;
            for (int d = 0; d < hd; d++)
                dot += (double)q[(size_t)i * hd + d] * kk[j * hd + d];
            sc[j] = dot * scale;
            mx = sc[j] > mx ? sc[j] : mx;
        }
        for (int j = 0; j < keys; j++)
            sum += (sc[j] = exp(sc[j] - mx));
        for (int d = 0; d < hd; d++) {
            double ref = 0.0;
            for (int j = 0; j < keys; j++)
                ref += sc[j] / sum * v[j * ldv + d];
            double e = fabs(o[(size_t)i * hd + d] / l[i] - ref);
            worst = e > worst || isnan(e) ? e : worst;
        }
    }
    bool same = memcmp(o, o1, sizeof(float) * (size_t)rows * (size_t)hd) == 0 &&
                memcmp(m, m1, sizeof(float) * (size_t)rows) == 0 &&
                memcmp(l, l1, sizeof(float) * (size_t)rows) == 0;
    ok(start && worst < 2e-6 && same,
       "%s: attention hd %d, %d keys, %d causal tokens x %d heads, %d rows a call vs float64 "
       "(max err %.2g), == rows alone",
       set, hd, n_keys, n_tok, grp, nr, worst);
    free(q);
    free(kk);
    free(v);
    free(kt);
    free(o);
    free(o1);
    free(m);
    free(l);
    free(m1);
    free(l1);
    free(sc);
}

/* elm_gemm on every path (row kernels below elm_gemm_min_blis_m, then our
 * GEMM or BLIS), with 1 and 3 threads, 16-bit weights widened tile by tile;
 * ragged row, token and column blocks. */
static void gemm_case(enum elm_dtype dt, long COLS)
{
    enum { ROWS = 300, MMAX = 200 };
    float *wf = malloc(sizeof(float) * ROWS * COLS);
    void *w = make_w(dt, ROWS, COLS, wf, 5u + dt);
    float *a = malloc(sizeof(float) * MMAX * COLS), *c = malloc(sizeof(float) * MMAX * ROWS);
    unsigned s = 7;
    for (int i = 0; i < MMAX * COLS; i++)
        a[i] = (float)frand(&s);
    struct elm_matrix mat = {.data = w, .dtype = dt, .rows = ROWS, .cols = COLS};
    /* the float64 products, once for every m and thread count (computing
     * them per call was most of this test's time under emulation) */
    double *ref = malloc(sizeof(double) * MMAX * ROWS);
    for (int t = 0; t < MMAX; t++)
        for (int row = 0; row < ROWS; row++) {
            double sum = 0.0;
            for (int k = 0; k < COLS; k++)
                sum += (double)wf[row * COLS + k] * a[t * COLS + k];
            ref[t * ROWS + row] = sum;
        }
    for (int nt = 1; nt <= 3; nt += 2) {
        struct elm_threadpool *pool = NULL;
        struct elm_gemm_tile tile;
        bool r = elm_threadpool_new(nt, &pool) == ELM_OK && elm_gemm_tile_init(&tile, nt, COLS);
        /* a tiny tile: several widening steps per range; f32 activations
         * (the bf16 products: test-gemm-bf16) */
        tile.floats = 40 * COLS;
        tile.exact = true;
        double worst = 0.0;
        for (int m = 1; r && m <= MMAX; m += m < 8 ? 3 : 23) {
            elm_gemm(a, COLS, m, &mat, c, ROWS, false, pool, &tile);
            for (int t = 0; t < m * ROWS; t++) {
                double e = fabs(c[t] - ref[t]);
                worst = e > worst ? e : worst;
            }
        }
        ok(r && worst < 1e-4, "gemm %s, k %ld, %d threads, m 1..%d (all paths): max err %.2g",
           elm_dtype_name(dt), COLS, nt, MMAX, worst);
        elm_gemm_tile_free(&tile);
        elm_threadpool_free(pool);
    }
    free(ref);
    free(w);
    free(wf);
    free(a);
    free(c);
}

struct count_job {
    int *hits;
};

static void count_task(void *arg, long b, long e, int ith)
{
    (void)ith;
    struct count_job *j = arg;
    for (long i = b; i < e; i++)
        j->hits[i]++;
}

/* Every item exactly once, for many jobs in a row (the join/close protocol). */
static void pool_case(void)
{
    enum { N = 1000, JOBS = 2000 };
    static int hits[N];
    struct elm_threadpool *pool = NULL;
    if (!ok(elm_threadpool_new(3, &pool) == ELM_OK, "pool of 3 threads"))
        return;
    struct count_job j = {.hits = hits};
    bool good = true;
    for (int k = 0; k < JOBS && good; k++) {
        memset(hits, 0, sizeof hits);
        long chunk = 1 + k % 17;
        elm_threadpool_for(pool, N - k % 7, chunk, count_task, &j);
        for (int i = 0; i < N; i++)
            good = good && hits[i] == (i < N - k % 7 ? 1 : 0);
    }
    ok(good, "pool: %d jobs, every item done exactly once", JOBS);
    elm_threadpool_free(pool);
}

int main(void)
{
    plan_lazy();
    /* every set this CPU runs (avx512: with VNNI where the CPU has it, as
     * ELM_KERNELS=avx512; on AArch64 neon, dotprod, i8mm) */
    enum elm_isa isas[ELM_ISA_COUNT];
    const int nisas = elm_cpu_sets(isas);
    diag("this CPU: %s", elm_cpu_features());
    for (int i = 0; i < nisas; i++) {
        const char *set = elm_isa_name(isas[i]);
        if (!elm_kernels_select(isas[i])) {
            diag("this CPU cannot run the %s kernels", set);
            continue;
        }
        ok(elm_kernels_isa() == isas[i], "kernel set %s selected", set);
        const long widths[] = {1, 15, 16, 33, 64, 203, 1280};
        for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++) {
            matmul_case(set, ELM_DTYPE_F32, widths[wi]);
            matmul_case(set, ELM_DTYPE_BF16, widths[wi]);
            matmul_case(set, ELM_DTYPE_F16, widths[wi]);
        }
        swiglu_case(set);
        rmsnorm_case(set, 1280);
        rmsnorm_case(set, 67);
        transpose_case(set);
        quant_case(set, ELM_DTYPE_Q8_0);
        quant_case(set, ELM_DTYPE_Q4_0);
        /* decode: one token, its 4 heads in one call */
        const int keys[] = {1, 63, 64, 65, 200};
        for (size_t ki = 0; ki < sizeof keys / sizeof keys[0]; ki++) {
            attn_case(set, 64, keys[ki], 1, 4, 4);
            if (keys[ki] > 1)
                attn_case(set, 64, keys[ki], keys[ki], 4, 4); /* prefill, causal */
        }
        attn_case(set, 64, 200, 1, 1, 1);  /* one row alone */
        attn_case(set, 64, 200, 70, 3, 4); /* groups span tokens, nk 0 rows */
        attn_case(set, 64, 130, 130, 2, 3);
        attn_case(set, 24, 130, 130, 1, 4); /* head dims not a multiple of 16 */
        attn_case(set, 24, 65, 65, 4, 2);
        attn_case(set, 20, 200, 9, 4, 4);
        attn_case(set, 17, 64, 64, 3, 4);
        attn_case(set, 128, 65, 65, 4, 4); /* two 64-wide output slices */
        gemm_case(ELM_DTYPE_F32, 96);
        gemm_case(ELM_DTYPE_F32, 300); /* two column panels, a ragged one */
        gemm_case(ELM_DTYPE_BF16, 96);
    }
    pool_case();
    return done_testing();
}
