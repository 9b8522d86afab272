/* test-kquant.c: the Q4_K, Q5_K and Q6_K rows x int8 activations kernels
 * (elm_kquant_rows, every set this CPU runs) and the K-quant quantizers.
 *
 * The kernels are checked against a float64 emulation of what they compute:
 * the weights dequantized by quant.c's elm_dequantize (bit-exact to the
 * NumPy reference's goldens, test-gguf), the activations as q * d, the dot
 * in double.  Bound: |got - want| <= 1e-5 * sum |w_i x_i| (+ |y| when
 * accumulating).  The kernels' integer sums are exact, so only f32 rounding
 * is left: a few operations per sub-block (relative 6e-8 each, times the
 * cancellation between the scale and min parts of Q4_K/Q5_K, at most ~8 for
 * random blocks) and the f32 sum over at most cols / 32 sub-block terms in
 * 8 (or more) partial sums: at 16640 columns, under 4e-6 in the worst case.
 *
 * The quantizers are checked by round trip through elm_dequantize: per
 * sub-block root-mean-square error within the step the sub-block's range
 * calls for (plus one unit of the super-block scale: the 6-bit rounding),
 * and relative RMS error over Gaussian rows below a fixed bound. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/kernels/blocks.h"
#include "engine/kernels/act_int8.h"
#include "engine/kernels/cpu.h"
#include "tests/lib/tap.h"

static const enum elm_dtype types[] = {ELM_DTYPE_Q4_K, ELM_DTYPE_Q5_K, ELM_DTYPE_Q6_K};
#define NTYPES 3
/* by enum elm_isa; avx512bw: the AVX-512 kernels without VNNI, runnable on
 * a VNNI CPU; neon, dotprod (sdot): runnable on an i8mm CPU */
static const char *const sets[] = {"generic", "avx2", "avx512bw", "avx512",
                                   "neon",    "dotprod", "i8mm"};
#define NSETS ELM_ISA_COUNT
_Static_assert(sizeof sets / sizeof sets[0] == NSETS, "a name for every set");

/* The sets of the other architecture (never run here: not listed). */
static bool other_arch(int si)
{
#if defined(__aarch64__)
    return elm_isa_x86((enum elm_isa)si, ELM_ISA_AVX2);
#else
    return elm_isa_arm((enum elm_isa)si, ELM_ISA_NEON);
#endif
}

/* ------------------------------------------------------------ helpers */

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double uniform(void)
{
    return (double)(next() >> 11) * 0x1p-53;
}

static double gauss(void)
{
    double u = uniform() + 1e-300, v = uniform();
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* A random finite f16 (any sign, subnormals included). */
static uint16_t random_f16(void)
{
    uint16_t h;
    do
        h = (uint16_t)next();
    while (((h >> 10) & 31) == 31);
    return h;
}

static void put16(uint8_t *p, uint16_t h)
{
    memcpy(p, &h, 2);
}

/* A block of random bytes with finite f16 scales. */
static void random_block(enum elm_dtype t, uint8_t *b)
{
    size_t n = elm_quant_block_bytes(t);
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)next();
    if (t == ELM_DTYPE_Q6_K) {
        put16(b + 208, random_f16());
    } else {
        put16(b, random_f16());
        put16(b + 2, random_f16());
    }
}

/* rows x cols random blocks of t; *ldw gets the row stride (caller frees). */
static uint8_t *random_matrix(enum elm_dtype t, long rows, int64_t cols, size_t *ldw)
{
    size_t bb = elm_quant_block_bytes(t);
    *ldw = elm_row_size(t, cols);
    uint8_t *w = malloc(*ldw * (size_t)rows);
    for (size_t i = 0; w && i < *ldw * (size_t)rows / bb; i++)
        random_block(t, w + i * bb);
    return w;
}

struct acts {
    struct elm_qact a;
    void *buf;
    double *deq; /* q * d */
};

/* Activations for cols columns: Gaussian, with outliers, scaled per block
 * over a wide range, and some zero blocks. */
static void make_acts(struct acts *s, int64_t cols, const float *given)
{
    float *x = malloc((size_t)cols * sizeof *x);
    for (int64_t i = 0; i < cols; i++) {
        if (given) {
            x[i] = given[i];
            continue;
        }
        int64_t blk = i / 32;
        double scale = ldexp(1.0, (int)((blk * 7) % 21) - 10);
        x[i] = blk % 11 == 5 ? 0.0f : (float)(scale * gauss() * (next() % 50 == 0 ? 20 : 1));
    }
    s->buf = aligned_alloc(64, (elm_qact_bytes(cols) + 63) / 64 * 64);
    elm_qact_init(&s->a, cols, s->buf);
    elm_quantize_act_ref(x, &s->a);
    s->deq = malloc((size_t)cols * sizeof *s->deq);
    for (int64_t i = 0; i < cols; i++)
        s->deq[i] = (double)s->a.q[i] * (double)s->a.d[i / 32];
    free(x);
}

static void free_acts(struct acts *s)
{
    free(s->buf);
    free(s->deq);
}

/* The float64 emulation of row r of w: the dot and sum |w x|. */
static void emulate(const uint8_t *row, enum elm_dtype t, int64_t cols, const struct acts *s,
                    double *dot, double *mag)
{
    float *w = malloc((size_t)cols * sizeof *w);
    elm_dequantize(row, t, w, cols);
    double d = 0, m = 0;
    for (int64_t i = 0; i < cols; i++) {
        d += (double)w[i] * s->deq[i];
        m += fabs((double)w[i] * s->deq[i]);
    }
    free(w);
    *dot = d;
    *mag = m;
}

static const double TOL = 1e-5;

/* ---------------------------------------------------- kernels: random */

struct shape {
    int64_t cols;
    long rows;
};

/* Every set against the emulation on random blocks: each row's error
 * relative to sum |w x| (the worst reported), accumulate on and off. */
static void test_random(enum elm_dtype t, const char *set, elm_qrows_fn fn)
{
    /* 16640: wider than the AVX-512 kernels' per-call stack layout (16384) */
    static const struct shape shapes[] = {{256, 1},  {512, 7},  {1280, 13}, {2816, 5},
                                          {5120, 3}, {8192, 3}, {16640, 2}};
    double worst = 0;
    bool good = true;
    int checked = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        int64_t cols = shapes[si].cols;
        long rows = shapes[si].rows;
        size_t ldw;
        uint8_t *w = random_matrix(t, rows, cols, &ldw);
        struct acts s;
        make_acts(&s, cols, NULL);
        float *y = malloc((size_t)rows * sizeof *y), *y0 = malloc((size_t)rows * sizeof *y0);
        for (int acc = 0; acc < 2; acc++) {
            for (long r = 0; r < rows; r++)
                y[r] = y0[r] = acc ? (float)gauss() : NAN; /* NAN: must be overwritten */
            fn(w, ldw, cols, &s.a, y, rows, acc != 0);
            for (long r = 0; r < rows; r++) {
                double want, mag;
                emulate(w + (size_t)r * ldw, t, cols, &s, &want, &mag);
                double base = acc ? (double)y0[r] : 0.0;
                double err = fabs((double)y[r] - (base + want));
                double scale = mag + fabs(base) + 1e-300;
                worst = fmax(worst, err / scale);
                checked++;
                if (!(err <= TOL * scale)) {
                    if (good)
                        diag("%s %s cols %lld row %ld acc %d: got %.9g want %.9g (sum|wx| %.3g)",
                             set, elm_dtype_name(t), (long long)cols, r, acc, y[r], base + want,
                             mag);
                    good = false;
                }
            }
        }
        free(y);
        free(y0);
        free(w);
        free_acts(&s);
    }
    ok(good, "%s %s: %d random rows (cols 256..16640) vs float64: worst error %.2e of sum|wx|", set,
       elm_dtype_name(t), checked, worst);
}

/* Rows split in any ranges give the bits of the whole-matrix call; cols
 * 16640 is wider than the kernels' per-call tables (generic 8192, x86
 * 16384 columns), whose values are then remade per row. */
static void test_ranges(enum elm_dtype t, const char *set, elm_qrows_fn fn, int64_t cols)
{
    const long rows = 37;
    size_t ldw;
    uint8_t *w = random_matrix(t, rows, cols, &ldw);
    struct acts s;
    make_acts(&s, cols, NULL);
    float all[37], part[37];
    fn(w, ldw, cols, &s.a, all, rows, false);
    bool same = true;
    static const long cuts[][4] = {{0, 1, 2, 37}, {0, 18, 19, 37}, {0, 5, 36, 37}, {0, 13, 26, 37}};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        for (int k = 0; k < 3; k++) {
            long r0 = cuts[c][k], r1 = cuts[c][k + 1];
            fn(w + (size_t)r0 * ldw, ldw, cols, &s.a, part + r0, r1 - r0, false);
        }
        same = same && memcmp(all, part, sizeof all) == 0;
    }
    ok(same, "%s %s: row ranges bit-identical to the whole-matrix call (cols %lld)", set,
       elm_dtype_name(t), (long long)cols);
    free(w);
    free_acts(&s);
}

/* Saturation and sign corners: every quant and scale byte at its extreme,
 * activations at +-127. */
static void test_extremes(enum elm_dtype t, const char *set, elm_qrows_fn fn)
{
    const int64_t cols = 512;
    size_t ldw = elm_row_size(t, cols), bb = elm_quant_block_bytes(t);
    static const uint8_t fills[] = {0xff, 0x00, 0x80, 0x7f, 0x55};
    enum { ROWS = sizeof fills / sizeof fills[0] };
    uint8_t *w = malloc(ldw * ROWS);
    for (int r = 0; r < ROWS; r++) {
        memset(w + r * ldw, fills[r], ldw);
        for (size_t k = 0; k < ldw / bb; k++) {
            uint8_t *b = w + r * ldw + k * bb;
            if (t == ELM_DTYPE_Q6_K) {
                put16(b + 208, elm_f32_to_f16(1.0f));
            } else {
                put16(b, elm_f32_to_f16(1.0f));
                put16(b + 2, elm_f32_to_f16(k ? -0.5f : 0.25f));
            }
        }
    }
    bool good = true;
    double worst = 0;
    for (int sign = 0; sign < 3; sign++) {
        float x[512];
        for (int i = 0; i < 512; i++)
            x[i] = sign == 0 ? 1.0f : sign == 1 ? -1.0f : (i & 1 ? 3.0f : -3.0f);
        struct acts s;
        make_acts(&s, cols, x);
        float y[ROWS];
        fn(w, ldw, cols, &s.a, y, ROWS, false);
        for (int r = 0; r < ROWS; r++) {
            double want, mag;
            emulate(w + r * ldw, t, cols, &s, &want, &mag);
            double err = fabs(y[r] - want);
            worst = fmax(worst, err / (mag + 1e-300));
            if (!(err <= TOL * (mag + 1e-300))) {
                if (good)
                    diag("%s %s fill 0x%02x x %d: got %.9g want %.9g", set, elm_dtype_name(t),
                         fills[r], sign, y[r], want);
                good = false;
            }
        }
        free_acts(&s);
    }
    ok(good, "%s %s: extreme bytes (0xff, 0, 0x80, 0x7f, 0x55) x +-127: worst %.2e", set,
       elm_dtype_name(t), worst);
    free(w);
}

/* The goldens of tests/data/gguf (the NumPy reference's blocks and their
 * dequantized values): the kernels on those blocks, as 4 rows of 256 and one
 * row of 1024, against the golden values times the activations. */
static uint8_t *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long len = ftell(f);
        if (len > 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len)) &&
            fread(buf, 1, (size_t)len, f) == (size_t)len) {
            *n = (size_t)len;
        } else {
            free(buf);
            buf = NULL;
        }
    }
    fclose(f);
    return buf;
}

static void test_goldens(enum elm_dtype t, const char *set, elm_qrows_fn fn)
{
    char name[64], fname[64];
    snprintf(name, sizeof name, "gguf/blocks-%s.bin", elm_dtype_name(t));
    snprintf(fname, sizeof fname, "gguf/blocks-%s.f32", elm_dtype_name(t));
    size_t nb = 0, nf = 0;
    uint8_t *blocks = read_file(tap_data_path(name), &nb);
    float *vals = (float *)(void *)read_file(tap_data_path(fname), &nf);
    size_t bb = elm_quant_block_bytes(t);
    if (!blocks || !vals || nb % bb || nf != nb / bb * 256 * sizeof(float)) {
        ok(false, "%s: golden files %s and %s", elm_dtype_name(t), name, fname);
        free(blocks);
        free(vals);
        return;
    }
    int64_t n = (int64_t)(nb / bb) * 256;
    struct acts s;
    make_acts(&s, n, NULL);
    bool good = true;
    double worst = 0;
    for (int shape = 0; shape < 2; shape++) {
        int64_t cols = shape ? n : 256;
        long rows = (long)(n / cols);
        float y[64];
        fn(blocks, elm_row_size(t, cols), cols, &s.a, y, rows, false);
        for (long r = 0; r < rows; r++) {
            double want = 0, mag = 0;
            for (int64_t i = 0; i < cols; i++) {
                /* every row meets the same activations, x[0..cols) */
                double p = (double)vals[r * cols + i] * s.deq[i];
                want += p;
                mag += fabs(p);
            }
            double err = fabs(y[r] - want);
            worst = fmax(worst, err / (mag + 1e-300));
            good = good && err <= TOL * (mag + 1e-300);
        }
    }
    ok(good, "%s %s: golden blocks (NumPy reference) as rows of 256 and %lld: worst %.2e", set,
       elm_dtype_name(t), (long long)n, worst);
    free_acts(&s);
    free(blocks);
    free(vals);
}

/* VNNI and AVX-512BW, sdot and plain NEON, compute the same exact integers
 * and the same float steps: the same bits. */
static void test_same_bits(enum elm_dtype t, const char *what, elm_qrows_fn a, elm_qrows_fn b)
{
    const int64_t cols = 2560;
    const long rows = 9;
    size_t ldw;
    uint8_t *w = random_matrix(t, rows, cols, &ldw);
    struct acts s;
    make_acts(&s, cols, NULL);
    float ya[9], yb[9];
    a(w, ldw, cols, &s.a, ya, rows, false);
    b(w, ldw, cols, &s.a, yb, rows, false);
    ok(memcmp(ya, yb, sizeof ya) == 0, "%s: %s give the same bits", elm_dtype_name(t), what);
    free(w);
    free_acts(&s);
}

/* The several-token kernel (a pass verifying drafts): for 1 to 8 tokens,
 * each token's sums are the one-token kernel's bits, accumulating or not,
 * over widths up to its limit; wider rows get no such kernel. */
static void test_multi(enum elm_dtype t, const char *set, enum elm_isa isa, elm_qrows_fn one)
{
    static const int64_t widths[] = {256, 1280, 2816, 8192, 16384, 16640};
    bool same = true;
    int checked = 0;
    for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++) {
        int64_t cols = widths[wi];
        const long rows = 11;
        elm_qrows_multi_fn multi = elm_kquant_rows_multi(t, isa, cols);
        if (cols > 16384 && !elm_isa_arm(isa, ELM_ISA_NEON))
            break; /* x86's limit, checked below */
        if (!multi) {
            ok(0, "%s %s: a several-token kernel for %lld columns", set, elm_dtype_name(t),
               (long long)cols);
            return;
        }
        size_t ldw;
        uint8_t *w = random_matrix(t, rows, cols, &ldw);
        struct acts s[ELM_QROWS_MULTI_MAX];
        struct elm_qact xs[ELM_QROWS_MULTI_MAX];
        for (int k = 0; k < ELM_QROWS_MULTI_MAX; k++) {
            make_acts(&s[k], cols, NULL);
            xs[k] = s[k].a;
        }
        float want[ELM_QROWS_MULTI_MAX][11], got[ELM_QROWS_MULTI_MAX][11];
        for (int m = 1; m <= ELM_QROWS_MULTI_MAX; m++)
            for (int acc = 0; acc < 2; acc++) {
                for (int k = 0; k < m; k++)
                    for (long r = 0; r < rows; r++)
                        want[k][r] = got[k][r] = acc ? (float)gauss() : NAN;
                for (int k = 0; k < m; k++)
                    one(w, ldw, cols, &xs[k], want[k], rows, acc != 0);
                multi(w, ldw, cols, xs, m, got[0], 11, rows, acc != 0);
                checked++;
                if (memcmp(want, got, (size_t)m * sizeof want[0]) != 0) {
                    if (same)
                        diag("%s %s cols %lld, %d tokens, acc %d: not the one-token bits", set,
                             elm_dtype_name(t), (long long)cols, m, acc);
                    same = false;
                }
            }
        for (int k = 0; k < ELM_QROWS_MULTI_MAX; k++)
            free_acts(&s[k]);
        free(w);
    }
    ok(same, "%s %s: several tokens (1-8, %d cases, cols 256..16384, AArch64 16640 too) "
       "give the one-token kernel's bits", set, elm_dtype_name(t), checked);
    if (elm_isa_arm(isa, ELM_ISA_NEON)) /* no width limit there */
        ok(elm_kquant_rows_multi(t, isa, 16640) != NULL, "%s %s: a several-token kernel for "
           "rows wider than 16384 too", set, elm_dtype_name(t));
    else
        ok(!elm_kquant_rows_multi(t, isa, 16640), "%s %s: rows wider than 16384: no several-"
           "token kernel", set, elm_dtype_name(t));
}

/* ---------------------------------------------------------- quantizers */

/* Round trips of one row through elm_quantize_row / elm_dequantize: per
 * sub-block RMS error against the step its range calls for; returns the
 * relative RMS error of the whole row. */
static bool round_trip(enum elm_dtype t, const float *x, int64_t n, double *rel, char *why,
                       size_t why_size)
{
    size_t bytes = elm_row_size(t, n);
    uint8_t *q = malloc(bytes);
    float *y = malloc((size_t)n * sizeof *y);
    bool good = elm_quantize_row(x, t, q, n);
    elm_dequantize(q, t, y, n);
    double se = 0, sx = 0;
    int sub = t == ELM_DTYPE_Q6_K ? 16 : 32;
    int nmax = t == ELM_DTYPE_Q4_K ? 15 : t == ELM_DTYPE_Q5_K ? 31 : 0;
    for (int64_t k = 0; good && k < n / 256; k++) {
        const uint8_t *b = q + (size_t)k * elm_quant_block_bytes(t);
        uint16_t h;
        memcpy(&h, t == ELM_DTYPE_Q6_K ? b + 208 : b, 2);
        double d = fabs(elm_f16_to_f32(h)), dmin = 0;
        if (t != ELM_DTYPE_Q6_K) {
            memcpy(&h, b + 2, 2);
            dmin = fabs(elm_f16_to_f32(h));
        }
        for (int64_t j = 256 * k; good && j < 256 * (k + 1); j += sub) {
            double lo = 0, hi = -INFINITY, amax = 0, e2 = 0;
            for (int l = 0; l < sub; l++) {
                double v = x[j + l], e = (double)y[j + l] - v;
                lo = fmin(lo, v);
                hi = fmax(hi, v);
                amax = fmax(amax, fabs(v));
                e2 += e * e;
                se += e * e;
                sx += v * v;
            }
            double rms = sqrt(e2 / sub);
            /* Q4_K/Q5_K: the range plus one unit of the min over nmax steps
             * (rounded scale and min up) and one unit of d; Q6_K: the largest
             * magnitude over 32 steps plus one unit of d; 1 % for the f16
             * rounding of the super-block scales. */
            double bound = nmax ? 0.5 * ((hi - lo + dmin) / nmax + d) : amax / 32 + d;
            if (!(rms <= 1.01 * bound + 1e-30)) {
                snprintf(why, why_size, "sub-block at %lld: rms error %.3g > bound %.3g",
                         (long long)j, rms, bound);
                good = false;
            }
        }
    }
    *rel = sx > 0 ? sqrt(se / sx) : sqrt(se);
    free(q);
    free(y);
    return good;
}

static void test_quantize(enum elm_dtype t)
{
    /* measured relative RMS on Gaussian rows, with margin */
    const double gauss_bound = t == ELM_DTYPE_Q4_K ? 0.12 : t == ELM_DTYPE_Q5_K ? 0.06 : 0.03;
    enum { N = 4096 };
    float *x = malloc(N * sizeof *x);
    char why[160] = "";
    double rel = 0, worst_rel = 0;
    bool good = true;
    for (int trial = 0; trial < 8 && good; trial++) {
        double scale = ldexp(1.0, 4 * trial - 16);
        for (int i = 0; i < N; i++)
            x[i] = (float)(scale * gauss());
        good = round_trip(t, x, N, &rel, why, sizeof why);
        worst_rel = fmax(worst_rel, rel);
    }
    ok(good && worst_rel < gauss_bound,
       "quantize %s: Gaussian rows (scales 2^-16..2^12): per-sub-block bounds, relative RMS "
       "error %.4f (bound %.2f) %s",
       elm_dtype_name(t), worst_rel, gauss_bound, why);

    /* shapes the fit must handle: all positive (min 0), all negative,
     * constant, zero, one outlier per sub-block, tiny (f16 subnormal scales),
     * large (the f16 range's top), per-sub-block scales 2^-8..2^8 */
    static const char *const kinds[] = {"positive", "negative", "constant", "zero",
                                        "outliers", "tiny",     "large",    "mixed scales"};
    for (int kind = 0; kind < 8; kind++) {
        for (int i = 0; i < N; i++) {
            double g = gauss();
            switch (kind) {
            case 0:
                x[i] = (float)fabs(g);
                break;
            case 1:
                x[i] = (float)(-fabs(g) - 1.0);
                break;
            case 2:
                x[i] = 0.375f;
                break;
            case 3:
                x[i] = 0.0f;
                break;
            case 4:
                x[i] = (float)(i % 32 == 7 ? 100.0 * g : g);
                break;
            case 5:
                x[i] = (float)(1e-6 * g);
                break;
            case 6:
                x[i] = (float)(2e5 * g);
                break;
            default:
                x[i] = (float)(ldexp(1.0, (i / 16) % 17 - 8) * g);
                break;
            }
        }
        why[0] = 0;
        bool g1 = round_trip(t, x, N, &rel, why, sizeof why);
        ok(g1, "quantize %s: %s rows round trip within the per-sub-block bounds (rel %.4f) %s",
           elm_dtype_name(t), kinds[kind], rel, why);
    }
    free(x);
}

/* ------------------------------------------------------------- bench */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* By hand, not in make check: `tests/engine/test-kquant --bench [SET...]`: weight
 * bytes per second of each set and type on one 1280 x 2560 matrix (a 270M
 * projection's shape, in cache after the first call), one thread; the best
 * of 7 timed runs of 0.03 s each, so that a busy shared machine shows less. */
static int bench(int argc, char **argv)
{
    const int64_t cols = 2560;
    const long rows = 1280;
    struct acts s;
    make_acts(&s, cols, NULL);
    float *y = malloc((size_t)rows * sizeof *y);
    printf("%-9s %-5s %8s\n", "set", "type", "GB/s");
    for (int si = 0; si < NSETS; si++) {
        bool wanted = argc == 0;
        for (int i = 0; i < argc; i++)
            wanted = wanted || strcmp(argv[i], sets[si]) == 0;
        if (!wanted)
            continue;
        for (int ti = 0; ti < NTYPES; ti++) {
            enum elm_dtype t = types[ti];
            elm_qrows_fn fn = elm_kquant_rows(t, (enum elm_isa)si);
            if (!fn)
                continue;
            size_t ldw;
            uint8_t *w = random_matrix(t, rows, cols, &ldw);
            fn(w, ldw, cols, &s.a, y, rows, false); /* warm the caches */
            double best = 0;
            for (int run = 0; run < 7; run++) {
                long calls = 0;
                double t0 = now(), t1;
                do {
                    fn(w, ldw, cols, &s.a, y, rows, false);
                    calls++;
                } while ((t1 = now()) - t0 < 0.03);
                best = fmax(best, (double)calls * (double)(ldw * (size_t)rows) / (t1 - t0));
            }
            printf("%-9s %-5s %8.2f\n", sets[si], elm_dtype_name(t), best * 1e-9);
            free(w);
        }
    }
    free(y);
    free_acts(&s);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--bench") == 0)
        return bench(argc - 2, argv + 2);
    plan_lazy();
    /* ELM_KERNELS naming a set this CPU runs: that set alone, as in the
     * other kernel tests (elm_cpu_sets; .ci/stage-aarch64 gives each CPU
     * its own set) */
    enum elm_isa cpu_sets[ELM_ISA_COUNT];
    const bool alone = getenv("ELM_KERNELS") && elm_cpu_sets(cpu_sets) == 1;
    if (alone)
        diag("ELM_KERNELS: the %s set alone", elm_isa_name(cpu_sets[0]));
    for (int ti = 0; ti < NTYPES; ti++) {
        enum elm_dtype t = types[ti];
        ok(elm_kquant_rows(t, ELM_ISA_GENERIC) != NULL, "%s: generic kernel exists",
           elm_dtype_name(t));
        for (int si = 0; si < NSETS; si++) {
            elm_qrows_fn fn = elm_kquant_rows(t, (enum elm_isa)si);
            if (!fn) {
                if (!other_arch(si))
                    diag("%s: this CPU has no %s", elm_dtype_name(t), sets[si]);
                continue;
            }
            if (alone && si != (int)cpu_sets[0])
                continue;
            test_random(t, sets[si], fn);
            test_ranges(t, sets[si], fn, 1536);
            test_ranges(t, sets[si], fn, 16640);
            test_extremes(t, sets[si], fn);
            test_goldens(t, sets[si], fn);
        }
        /* the sets with several-token kernels: AVX-512 (both) and every
         * AArch64 level */
        for (int si = ELM_ISA_AVX512; si < NSETS; si++) {
            elm_qrows_fn fn = elm_kquant_rows(t, (enum elm_isa)si);
            if (fn && !(alone && si != (int)cpu_sets[0]))
                test_multi(t, sets[si], (enum elm_isa)si, fn);
        }
        ok(!elm_kquant_rows_multi(t, ELM_ISA_AVX2, 4096) &&
               !elm_kquant_rows_multi(t, ELM_ISA_GENERIC, 4096),
           "%s: no several-token kernel below AVX-512 or in the generic set", elm_dtype_name(t));
        elm_qrows_fn bw = elm_kquant_rows(t, ELM_ISA_AVX512),
                     v = elm_kquant_rows(t, ELM_ISA_AVX512_VNNI);
        if (bw && v && bw != v)
            test_same_bits(t, "avx512 (VNNI) and avx512bw", v, bw);
        elm_qrows_fn neon = elm_kquant_rows(t, ELM_ISA_NEON),
                     sdot = elm_kquant_rows(t, ELM_ISA_NEON_DOTPROD);
        if (neon && sdot && neon != sdot)
            test_same_bits(t, "dotprod (sdot) and neon", sdot, neon);
        ok(elm_kquant_rows(t, (enum elm_isa)ELM_ISA_COUNT) == NULL, "%s: unknown set: no kernel",
           elm_dtype_name(t));
    }
    ok(elm_kquant_rows(ELM_DTYPE_Q8_0, ELM_ISA_GENERIC) == NULL &&
           elm_kquant_rows(ELM_DTYPE_F32, ELM_ISA_AVX512_VNNI) == NULL,
       "other types: no K-quant kernel");
    for (int ti = 0; ti < NTYPES; ti++)
        test_quantize(types[ti]);
    return done_testing();
}
