/* test-quant-int8.c: the int8 path of Q8_0 / Q4_0 decode (engine/kernels/act_int8.h,
 * engine/kernels_quant*.c) on every kernel set this CPU runs:
 *  - elm_quantize_act byte-identical (q, d, sum16) to elm_quantize_act_ref
 *    over more than 10,000 blocks: random ones at every scale, zeros, signed
 *    zeros, denormals, tiny normals on both sides of the 127 / FLT_MAX cut,
 *    huge values, exact .5 ties; and the reference itself against the rule
 *    of quant_act.h, emulated here with a rounding of its own;
 *  - the rows kernels (generic, avx2, avx512 with VNNI and without; neon, sdot) against
 *    a float64 emulation (exact integer block dots times d_w * d_x, summed
 *    in double), within 1e-5 of the sum of |d_w d_x w[i] q[i]|, at odd
 *    shapes, with and without accumulation;
 *  - the same bits for any row range (decode is the same for any thread
 *    count), VNNI == AVX-512BW and sdot == NEON (exact integers, the same
 *    float steps);
 *  - elm_matmul_rows on Q8_0 / Q4_0 matrices: quantize + kernel, a token at
 *    a time. */
#include "config.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kernels/kernels.h"
#include "engine/kernels/q8q4.h"
#include "engine/model/model.h"
#include "engine/kernels/blocks.h"
#include "engine/kernels/act_int8.h"
#include "tests/lib/tap.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t next_u32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* uniform in [-1, 1) */
static double uni(void)
{
    return (double)next_u32() / 2147483648.0 - 1.0;
}

static void *xalloc(size_t n)
{
    void *p = aligned_alloc(64, (n + 63) / 64 * 64);
    if (!p)
        bail_out("out of memory");
    return p;
}

/* ------------------------------------------- the rule, emulated here */

/* Round half to even without the FPU's rounding mode. */
static double round_half_even(double v)
{
    double f = floor(v), diff = v - f;
    if (diff > 0.5)
        return f + 1.0;
    if (diff < 0.5)
        return f;
    return fmod(f, 2.0) == 0.0 ? f : f + 1.0;
}

/* v rounded to the nearest IEEE half, ties to even, in double arithmetic
 * (independent of quant.c's bit manipulation); beyond the half range (the
 * rounding limit 65520) v itself, as the rule says. */
static float round_to_half(float v)
{
    double a = fabs((double)v);
    if (a >= 65520.0)
        return v;
    int e;
    frexp(a, &e); /* a = f * 2^e, f in [0.5, 1) */
    int lsb = e - 11 < -24 ? -24 : e - 11; /* 11 significant bits; subnormals step 2^-24 */
    double r = ldexp(round_half_even(ldexp(a, -lsb)), lsb);
    return (float)(v < 0 ? -r : r);
}

/* quant_act.h's rule for one block, as written there. */
static void emulate_block(const float *x, int8_t *q, float *d, int16_t *s16)
{
    float amax = 0.0f;
    for (int i = 0; i < 32; i++)
        if (fabsf(x[i]) > amax)
            amax = fabsf(x[i]);
    float id = amax > 0.0f ? 127.0f / amax : 0.0f;
    if (id > FLT_MAX) /* 127 / amax overflows: a zero block */
        id = amax = 0.0f;
    *d = round_to_half(amax / 127.0f);
    for (int h = 0; h < 2; h++) {
        int s = 0;
        for (int i = 16 * h; i < 16 * h + 16; i++) {
            float v = x[i] * id; /* an f32 product, as the rule says */
            q[i] = (int8_t)round_half_even(v);
            s += q[i];
        }
        s16[h] = (int16_t)s;
    }
}

/* ------------------------------------------------ activation blocks */

/* Block kinds for the rounding test. */
enum { K_RANDOM, K_ZERO, K_DENORMAL, K_CUT, K_HUGE, K_TIES, K_SPARSE, K_CONST, N_KINDS };

static void fill_block(float *x, int kind)
{
    switch (kind) {
    case K_RANDOM: {
        double scale = ldexp(1.0, (int)(next_u32() % 120) - 60);
        for (int i = 0; i < 32; i++)
            x[i] = (float)(uni() * scale);
        break;
    }
    case K_ZERO:
        for (int i = 0; i < 32; i++)
            x[i] = next_u32() & 1 ? -0.0f : 0.0f;
        break;
    case K_DENORMAL: /* below FLT_MIN, some zeros */
        for (int i = 0; i < 32; i++)
            x[i] = next_u32() % 4 ? (float)(uni() * FLT_MIN) : 0.0f;
        break;
    case K_CUT: { /* amax within a few ulps of 127 / FLT_MAX, either side */
        float cut = 127.0f / FLT_MAX;
        int steps = (int)(next_u32() % 17) - 8;
        float amax = cut;
        for (int k = 0; k < abs(steps); k++)
            amax = nextafterf(amax, steps > 0 ? INFINITY : 0.0f);
        for (int i = 0; i < 32; i++)
            x[i] = (float)(uni() * amax);
        x[next_u32() % 32] = next_u32() & 1 ? amax : -amax;
        break;
    }
    case K_HUGE:
        for (int i = 0; i < 32; i++)
            x[i] = (float)(uni() * FLT_MAX);
        if (next_u32() & 1)
            x[next_u32() % 32] = next_u32() & 1 ? FLT_MAX : -FLT_MAX;
        break;
    case K_TIES: { /* amax = 127 * 2^e: x * (127 / amax) = k + 0.5 exactly */
        int e = (int)(next_u32() % 40) - 20;
        for (int i = 0; i < 32; i++)
            x[i] = ldexpf((float)((int)(next_u32() % 254) - 127) + 0.5f, e);
        x[next_u32() % 32] = ldexpf(next_u32() & 1 ? 127.0f : -127.0f, e);
        break;
    }
    case K_SPARSE: /* one value, the rest zeros */
        for (int i = 0; i < 32; i++)
            x[i] = 0.0f;
        x[next_u32() % 32] = (float)(uni() * 1e3);
        break;
    case K_CONST: {
        float v = (float)uni();
        for (int i = 0; i < 32; i++)
            x[i] = next_u32() & 1 ? v : -v;
        break;
    }
    }
}

static bool same_qact(const struct elm_qact *a, const struct elm_qact *b)
{
    size_t n = (size_t)a->n;
    return memcmp(a->q, b->q, n) == 0 && memcmp(a->d, b->d, n / 32 * sizeof(float)) == 0 &&
           memcmp(a->sum16, b->sum16, n / 16 * sizeof(int16_t)) == 0;
}

/* The reference against the emulated rule, then every set against the
 * reference; calls of 1..64 blocks, every kind of block mixed in. */
static void test_rounding(const enum elm_isa *sets, int nsets)
{
    enum { MAXB = 64, CALLS = 400 };
    float *x = xalloc(sizeof(float) * 32 * MAXB);
    void *b0 = xalloc(elm_qact_bytes(32 * MAXB)), *b1 = xalloc(elm_qact_bytes(32 * MAXB));
    int8_t q[32];
    float d;
    int16_t s16[2];
    long blocks = 0, ref_bad = 0, kinds[N_KINDS] = {0};
    long set_bad[ELM_ISA_COUNT] = {0};
    for (int c = 0; c < CALLS; c++) {
        int nb = 1 + (int)(next_u32() % MAXB);
        for (int b = 0; b < nb; b++) {
            int kind = b % 3 ? K_RANDOM : (int)(next_u32() % N_KINDS);
            fill_block(x + 32 * b, kind);
            kinds[kind]++;
        }
        struct elm_qact ref, got;
        elm_qact_init(&ref, 32 * nb, b0);
        elm_qact_init(&got, 32 * nb, b1);
        elm_quantize_act_ref(x, &ref);
        for (int b = 0; b < nb; b++) {
            emulate_block(x + 32 * b, q, &d, s16);
            bool same = memcmp(q, ref.q + 32 * b, 32) == 0 && memcmp(&d, &ref.d[b], 4) == 0 &&
                        memcmp(s16, ref.sum16 + 2 * b, 4) == 0;
            if (!same && ref_bad++ < 3)
                diag("block %d of call %d: the reference breaks the rule (d %g vs %g)", b, c,
                     (double)ref.d[b], (double)d);
        }
        blocks += nb;
        for (int s = 0; s < nsets; s++) {
            if (!elm_kernels_select(sets[s]))
                continue;
            memset(b1, 0x55, elm_qact_bytes(32 * nb));
            elm_quantize_act(x, &got);
            if (!same_qact(&got, &ref) && set_bad[s]++ < 3)
                diag("%s: call %d (%d blocks) differs from the reference", elm_isa_name(sets[s]),
                     c, nb);
        }
    }
    ok(ref_bad == 0,
       "elm_quantize_act_ref follows quant_act.h's rule over %ld blocks (%ld zero, %ld "
       "denormal, %ld at the 127/FLT_MAX cut, %ld huge, %ld ties, %ld sparse, %ld constant)",
       blocks, kinds[K_ZERO], kinds[K_DENORMAL], kinds[K_CUT], kinds[K_HUGE], kinds[K_TIES],
       kinds[K_SPARSE], kinds[K_CONST]);
    for (int s = 0; s < nsets; s++) {
        if (!elm_kernels_select(sets[s])) {
            skip(1, "the CPU cannot run this set");
            continue;
        }
        ok(set_bad[s] == 0, "%s: elm_quantize_act byte-identical to the reference (q, d, sum16) "
           "over %ld blocks", elm_isa_name(sets[s]), blocks);
    }
    /* The exact ties: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> 0, -1.5 -> -2 */
    for (int i = 0; i < 32; i++)
        x[i] = 0.0f;
    const float ties[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 126.5f, -126.5f, 127.0f};
    const int want[] = {0, 2, 2, 0, -2, -2, 126, -126, 127};
    for (int i = 0; i < 9; i++)
        x[i] = ties[i];
    struct elm_qact ref;
    elm_qact_init(&ref, 32, b0);
    elm_quantize_act_ref(x, &ref);
    bool good = ref.d[0] == 1.0f;
    for (int i = 0; i < 9; i++)
        good = good && ref.q[i] == want[i];
    ok(good, "ties round to even: 0.5 1.5 2.5 126.5 -> 0 2 2 126 (and negated)");
    free(x);
    free(b0);
    free(b1);
}

/* ------------------------------------------------------ rows kernels */

/* A random f16 scale: mostly ordinary, some zero, negative, subnormal. */
static uint16_t rand_scale(void)
{
    uint32_t k = next_u32() % 16;
    if (k == 0)
        return 0;
    if (k == 1)
        return (uint16_t)(1 + next_u32() % 1023); /* subnormal */
    float v = (float)ldexp(0.5 + 0.5 * fabs(uni()), -(int)(next_u32() % 12));
    return elm_f32_to_f16(next_u32() & 1 ? -v : v);
}

/* rows x cols weights: random bytes (all 256 values, -128 too) with random
 * scales, or quant.c's rounding of random floats. */
static uint8_t *make_weights(enum elm_dtype dt, long rows, long cols)
{
    size_t ldw = elm_row_size(dt, cols), bb = elm_quant_block_bytes(dt);
    uint8_t *w = xalloc(ldw * (size_t)rows);
    float *f = xalloc(sizeof(float) * (size_t)cols);
    for (long r = 0; r < rows; r++) {
        uint8_t *row = w + (size_t)r * ldw;
        if (r % 3 == 2) {
            for (long c = 0; c < cols; c++)
                f[c] = (float)uni();
            elm_quantize_row(f, dt, row, cols);
            continue;
        }
        for (size_t i = 0; i < ldw; i++)
            row[i] = (uint8_t)next_u32();
        for (long b = 0; b < cols / 32; b++) {
            uint16_t h = rand_scale();
            memcpy(row + (size_t)b * bb, &h, 2);
        }
    }
    free(f);
    return w;
}

static int weight_at(const uint8_t *blk, enum elm_dtype dt, int i)
{
    if (dt == ELM_DTYPE_Q8_0)
        return (int8_t)blk[2 + i];
    return i < 16 ? (blk[2 + i] & 15) - 8 : (blk[2 + i - 16] >> 4) - 8;
}

/* sum over blocks of d_w * d_x * (exact integer dot), in double; *mag gets
 * the sum of |terms| d_w * d_x * w[i] * q[i] (per weight: the SIMD kernels
 * scale partial sums of 4 or 8 products, so cancellation inside a block
 * does not shrink their rounding errors). */
static double emulate_row(const uint8_t *row, enum elm_dtype dt, long cols,
                          const struct elm_qact *a, double *mag)
{
    size_t bb = elm_quant_block_bytes(dt);
    double s = 0.0, m = 0.0;
    for (long b = 0; b < cols / 32; b++) {
        const uint8_t *blk = row + (size_t)b * bb;
        uint16_t h;
        memcpy(&h, blk, 2);
        long isum = 0, iabs = 0;
        for (int i = 0; i < 32; i++) {
            long p = (long)weight_at(blk, dt, i) * a->q[32 * b + i];
            isum += p;
            iabs += labs(p);
        }
        double scale = (double)elm_f16_to_f32(h) * (double)a->d[b];
        s += scale * (double)isum;
        m += fabs(scale) * (double)iabs;
    }
    *mag = m;
    return s;
}

/* Activations with blocks of very different sizes, some zero. */
static void make_x(float *x, long cols)
{
    for (long b = 0; b < cols / 32; b++) {
        double scale = next_u32() % 7 == 0 ? 0.0 : ldexp(1.0, (int)(next_u32() % 16) - 8);
        for (int i = 0; i < 32; i++)
            x[32 * b + i] = (float)(uni() * scale);
    }
}

struct kernel {
    char name[40];
    elm_qrows_fn fn[2]; /* Q8_0, Q4_0 */
};

static const enum elm_dtype dts[2] = {ELM_DTYPE_Q8_0, ELM_DTYPE_Q4_0};

/* Every kernel on one shape: vs the emulation, row ranges, accumulate. */
static void rows_case(const struct kernel *ks, int nk, long rows, long cols, long *checked,
                      double *worst, bool *bad_split, bool *bad_same)
{
    float *x = xalloc(sizeof(float) * (size_t)cols);
    make_x(x, cols);
    void *buf = xalloc(elm_qact_bytes(cols));
    struct elm_qact a;
    elm_qact_init(&a, cols, buf);
    elm_quantize_act_ref(x, &a);
    float *y0 = xalloc(sizeof(float) * (size_t)rows), *y = xalloc(sizeof(float) * (size_t)rows);
    float *y1 = xalloc(sizeof(float) * (size_t)rows), *first = xalloc(sizeof(float) * (size_t)rows);
    for (int t = 0; t < 2; t++) {
        enum elm_dtype dt = dts[t];
        uint8_t *w = make_weights(dt, rows, cols);
        size_t ldw = elm_row_size(dt, cols);
        for (long r = 0; r < rows; r++)
            y0[r] = (float)uni();
        for (int acc = 0; acc < 2; acc++) {
            for (int k = 0; k < nk; k++) {
                elm_qrows_fn f = ks[k].fn[t];
                if (!f)
                    continue;
                memcpy(y, y0, sizeof(float) * (size_t)rows);
                f(w, ldw, cols, &a, y, rows, acc);
                for (long r = 0; r < rows; r++) {
                    double mag, want = emulate_row(w + (size_t)r * ldw, dt, cols, &a, &mag);
                    if (acc) {
                        want += y0[r];
                        mag += fabs(y0[r]);
                    }
                    double err = fabs(y[r] - want) / (mag > 0 ? mag : 1.0);
                    if (err > worst[k]) {
                        if (err > 1e-5 && worst[k] <= 1e-5)
                            diag("%s %s rows %ld cols %ld row %ld acc %d: %.9g vs %.9g", ks[k].name,
                                 elm_dtype_name(dt), rows, cols, r, acc, y[r], want);
                        worst[k] = err;
                    }
                    checked[k]++;
                }
                /* The same rows in three ranges: the same bits. */
                long s1 = rows > 1 ? 1 + (long)(next_u32() % (uint32_t)(rows - 1)) : rows;
                long s2 = s1 + (rows > s1 ? (long)(next_u32() % (uint32_t)(rows - s1 + 1)) : 0);
                memcpy(y1, y0, sizeof(float) * (size_t)rows);
                f(w, ldw, cols, &a, y1, s1, acc);
                f(w + (size_t)s1 * ldw, ldw, cols, &a, y1 + s1, s2 - s1, acc);
                f(w + (size_t)s2 * ldw, ldw, cols, &a, y1 + s2, rows - s2, acc);
                if (memcmp(y, y1, sizeof(float) * (size_t)rows) != 0 && !bad_split[k]) {
                    diag("%s %s rows %ld cols %ld: ranges [0,%ld) [%ld,%ld) [%ld,%ld) differ",
                         ks[k].name, elm_dtype_name(dt), rows, cols, s1, s1, s2, s2, rows);
                    bad_split[k] = true;
                }
                /* VNNI and AVX-512BW, sdot and plain NEON: the same bits
                 * (kernel 3 vs 2, 5 vs 4). */
                if (k == 2 || k == 4)
                    memcpy(first, y, sizeof(float) * (size_t)rows);
                else if ((k == 3 || k == 5) && ks[k - 1].fn[t] &&
                         memcmp(first, y, sizeof(float) * (size_t)rows) != 0)
                    bad_same[k] = true;
            }
        }
        free(w);
    }
    free(x);
    free(buf);
    free(y0);
    free(y);
    free(y1);
    free(first);
}

static void test_rows(void)
{
    /* 0 generic, 1 avx2, 2 avx512 (VNNI when the CPU has it), 3 avx512 without VNNI,
     * 4 neon, 5 dotprod (sdot) */
    enum { NK = 6 };
    struct kernel ks[NK] = {{"generic", {0}}, {"avx2", {0}},    {"avx512", {0}},
                            {"avx512-bw", {0}}, {"neon", {0}}, {"dotprod", {0}}};
    for (int t = 0; t < 2; t++) {
        ks[0].fn[t] = elm_q80_q40_rows(dts[t], ELM_ISA_GENERIC);
        ks[1].fn[t] = elm_q80_q40_rows(dts[t], ELM_ISA_AVX2);
        ks[2].fn[t] = elm_q80_q40_rows(dts[t], ELM_ISA_AVX512_VNNI);
        ks[3].fn[t] = elm_q80_q40_rows(dts[t], ELM_ISA_AVX512);
        ks[4].fn[t] = elm_q80_q40_rows(dts[t], ELM_ISA_NEON);
        ks[5].fn[t] = elm_q80_q40_rows(dts[t], ELM_ISA_NEON_DOTPROD);
    }
#if defined(__aarch64__) /* the kernels of this architecture, and the generic ones */
    static const int shown[] = {0, 4, 5};
#else
    static const int shown[] = {0, 1, 2, 3};
#endif
    const int nshown = (int)(sizeof shown / sizeof shown[0]);
    ok(ks[0].fn[0] && ks[0].fn[1], "the generic set has Q8_0 and Q4_0 kernels");
    ok(!elm_q80_q40_rows(ELM_DTYPE_Q4_K, ELM_ISA_GENERIC) &&
           !elm_q80_q40_rows(ELM_DTYPE_F32, ELM_ISA_AVX512) &&
           !elm_q80_q40_rows(ELM_DTYPE_Q8_0, (enum elm_isa)ELM_ISA_COUNT),
       "no Q8_0/Q4_0 kernel for other types or unknown sets");
    for (int i = 1; i < nshown; i++)
        if (!ks[shown[i]].fn[0])
            diag("this CPU has no %s kernels", ks[shown[i]].name);
    if (elm_cpu()->isa == ELM_ISA_AVX512_VNNI)
        ok(elm_q80_q40_rows_multi(ELM_DTYPE_Q8_0, ELM_ISA_AVX512_VNNI, 4096) &&
               elm_q80_q40_rows_multi(ELM_DTYPE_Q4_0, ELM_ISA_AVX2, 4096) &&
               !elm_q80_q40_rows_multi(ELM_DTYPE_Q8_0, ELM_ISA_AVX512, 4096) &&
               !elm_q80_q40_rows_multi(ELM_DTYPE_Q8_0, ELM_ISA_GENERIC, 4096),
           "AVX-512 VNNI and AVX2 have several-token Q8_0/Q4_0 kernels (the dispatch tests "
           "below use them), AVX-512BW and the generic set none");
    else if (elm_isa_arm(elm_cpu()->isa, ELM_ISA_NEON))
        ok(elm_q80_q40_rows_multi(ELM_DTYPE_Q8_0, ELM_ISA_NEON, 65536) &&
               elm_q80_q40_rows_multi(ELM_DTYPE_Q4_0, elm_cpu()->isa, 65536) &&
               !elm_q80_q40_rows_multi(ELM_DTYPE_Q8_0, ELM_ISA_GENERIC, 4096),
           "every AArch64 set has several-token Q8_0/Q4_0 kernels, at any width (the dispatch "
           "tests below use them), the generic set none");
    else
        diag("no AVX-512 VNNI: the several-token kernels are not tested here");
    long checked[NK] = {0};
    double worst[NK] = {0};
    bool bad_split[NK] = {false}, bad_same[NK] = {false};
    const long colss[] = {32, 64, 96, 160, 224, 320, 1056, 1280, 2080, 4128, 5120};
    const long rowss[] = {1, 3, 4, 5, 7, 9, 13};
    for (size_t c = 0; c < sizeof colss / sizeof colss[0]; c++)
        for (size_t r = 0; r < sizeof rowss / sizeof rowss[0]; r++)
            rows_case(ks, NK, rowss[r], colss[c], checked, worst, bad_split, bad_same);
    for (int i = 0; i < nshown; i++) {
        int k = shown[i];
        if (!ks[k].fn[0]) {
            skip(2, "the CPU cannot run these kernels");
            continue;
        }
        ok(worst[k] <= 1e-5,
           "%s: %ld Q8_0/Q4_0 rows (cols 32..5120, accumulate or not) vs the float64 emulation: "
           "max error %.2g of the sum of |products|",
           ks[k].name, checked[k], worst[k]);
        ok(!bad_split[k], "%s: any row ranges give identical results", ks[k].name);
    }
    if (ks[2].fn[0] && ks[3].fn[0])
        ok(!bad_same[3], "avx512: VNNI and AVX-512BW kernels give the same bits");
    if (ks[4].fn[0] && ks[5].fn[0])
        ok(!bad_same[5], "neon: sdot and plain NEON kernels give the same bits");
}

/* ----------------------------------------------- elm_matmul_rows */

/* The dispatch: each token's x rounded with the set's elm_quantize_act,
 * then the set's one-token kernel; the same bits as calling those two
 * (also where several tokens go through the several-token kernel).  Shapes reach
 * every path of elm_quant_fast_rows: tokens rounded together on the stack
 * (one row block, several), one at a time (more than 8), the heap (rows too
 * wide for the stack). */
static void dispatch_case(enum elm_isa set, long rows, long cols, int m)
{
    for (int t = 0; t < 2; t++) {
        enum elm_dtype dt = dts[t];
        uint8_t *w = make_weights(dt, rows, cols);
        size_t ldw = elm_row_size(dt, cols);
        float *x = xalloc(sizeof(float) * (size_t)(m * cols));
        float *y = xalloc(sizeof(float) * (size_t)(m * rows));
        float *want = xalloc(sizeof(float) * (size_t)(m * rows));
        for (long i = 0; i < m * cols; i++)
            x[i] = (float)uni();
        struct elm_matrix mat = {.data = w, .dtype = dt, .rows = rows, .cols = cols};
        long split = rows / 3;
        elm_matmul_rows(&mat, x, cols, m, y, rows, 0, split, false);
        elm_matmul_rows(&mat, x, cols, m, y + split, rows, split, rows, false);
        void *buf = xalloc(elm_qact_bytes(cols));
        struct elm_qact a;
        elm_qact_init(&a, cols, buf);
        elm_qrows_fn f = elm_q80_q40_rows(dt, set);
        if (!f) /* a set without its own kernel runs the portable one (kernels.c) */
            f = elm_q80_q40_rows(dt, ELM_ISA_GENERIC);
        for (int k = 0; k < m; k++) {
            elm_quantize_act(x + k * cols, &a);
            f(w, ldw, cols, &a, want + k * rows, rows, false);
        }
        ok(memcmp(y, want, sizeof(float) * (size_t)(m * rows)) == 0,
           "%s %s: elm_matmul_rows = elm_quantize_act + kernel, %ld rows x %ld cols, %d "
           "tokens, two row ranges",
           elm_isa_name(set), elm_dtype_name(dt), rows, cols, m);
        free(buf);
        free(w);
        free(x);
        free(y);
        free(want);
    }
}

static void test_dispatch(enum elm_isa set)
{
    dispatch_case(set, 23, 352, 3);
    dispatch_case(set, 23, 16384, 3); /* row blocks of 15 (Q8_0) and 28 (Q4_0) rows */
    dispatch_case(set, 7, 320, 9);
    dispatch_case(set, 5, 65536, 2);
    /* every count of the several-token kernel (verifying drafts), an odd
     * last block, and more tokens than it takes at once */
    for (int m = 4; m <= 8; m++)
        dispatch_case(set, 9, 1056, m);
    dispatch_case(set, 37, 4128, 11);
}

int main(void)
{
    plan_lazy();
    /* every set this CPU runs (avx512: with VNNI where the CPU has it, as
     * ELM_KERNELS=avx512) */
    enum elm_isa sets[ELM_ISA_COUNT];
    const int nsets = elm_cpu_sets(sets);
    test_rounding(sets, nsets);
    test_rows();
    for (int s = 0; s < nsets; s++)
        if (elm_kernels_select(sets[s]))
            test_dispatch(sets[s]);
    return done_testing();
}
