/* kquant.c: Q4_K, Q5_K and Q6_K weight rows times int8 activations
 * (act_int8.h), the portable kernels and the lookup of every set.
 *
 * The integer parts are exact: per weight sub-block (32 weights in Q4_K and
 * Q5_K, 16 in Q6_K) an int32 sum of products with the activation's int8 q.
 * Only then come the floats: the block's f16 scales and the activation
 * block's d.  For Q4_K/Q5_K, w = d*sc*q - dmin*m, so a sub-block j meeting
 * activation block j (both 32 long, aligned) gives
 *     dx_j * (d*sc_j * sum(q*qx) - dmin*m_j * sum(qx)),
 * sum(qx) being two of the activations' sum16.  For Q6_K, w = d*sc*(q - 32)
 * with 16-weight sub-blocks: two of them share an activation block, and their
 * int8 scales combine in integers before the one float product.
 *
 * Each row is one sum in a fixed order (eight partial sums, one per
 * sub-block position, added in a fixed tree at the end): the result depends
 * on cols and the set only, never on which rows a call gets. */
#include "config.h"

#include "engine/kernels/blocks.h"
#include "engine/kernels/cpu.h"
#include "engine/kernels/kquant.h"

static inline float sum8(const float a[8])
{
    return ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
}

/* The portable kernels are written for auto-vectorization: per call the
 * int8 activations are widened once to int16 (so that the per-row loops
 * are int16 x int16 -> int32 dot products, pmaddwd on SSE2, smlal on NEON,
 * with no per-row sign extension), and each sub-block's sum is a fixed
 * 16- or 32-long loop with no branch and constant shifts.  The sums are
 * exact integers, so only the float steps per sub-block fix the result; they
 * are those of the scalar loops these replaced, in the same order, and the
 * results the same bits (checked on 600 rows of 256..16640 columns). */

/* Activations widened to int16 on the stack for up to this many columns
 * (16 KiB); wider rows (not OpenELM's) widen per group of super-blocks and
 * row: the same values in the same order, only slower. */
#define KQ_GENERIC_COLS 8192

/* Each type's kernel is its own specialized copy of the shared body (the
 * type's tests fold away); GCC and Clang would otherwise share one. */
#if defined(__GNUC__)
#define KQ_INLINE __attribute__((always_inline)) inline
#else
#define KQ_INLINE inline
#endif

static void widen16(const int8_t *q, int64_t n, int16_t *out)
{
    for (int64_t i = 0; i < n; i++)
        out[i] = q[i];
}

/* Chunk c of a Q4_K (five = false) or Q5_K block against its 64
 * activations: sub-block 2c in the low nibbles of the chunk's 32 bytes,
 * 2c + 1 in the high ones; in Q5_K their fifth bits are bits 2c and 2c + 1
 * of qh[l].  c is a constant after inlining, so are the shifts. */
static KQ_INLINE void q45_chunk(const uint8_t *qs, const uint8_t *qh, int c, const int16_t *qx,
                                bool five, int32_t *s_lo, int32_t *s_hi)
{
    const uint8_t *q = qs + 32 * c;
    const int16_t *xl = qx + 64 * c, *xh = xl + 32;
    int32_t lo = 0, hi = 0;
    if (five) {
        for (int l = 0; l < 32; l++) {
            lo += (int16_t)((q[l] & 15) | (((qh[l] >> (2 * c)) & 1) << 4)) * xl[l];
            hi += (int16_t)((q[l] >> 4) | (((qh[l] >> (2 * c + 1)) & 1) << 4)) * xh[l];
        }
    } else {
        for (int l = 0; l < 32; l++) {
            lo += (int16_t)(q[l] & 15) * xl[l];
            hi += (int16_t)(q[l] >> 4) * xh[l];
        }
    }
    *s_lo = lo;
    *s_hi = hi;
}

/* Super-blocks [k0, k0 + n) of one Q4_K or Q5_K row; x16 is those
 * super-blocks' activations as int16; acc the 8 partial sums. */
static KQ_INLINE void part_q45_k(const uint8_t *b, int64_t k0, int64_t n, const int16_t *x16,
                                 const struct elm_qact *x, bool five, float acc[8])
{
    const size_t bytes = five ? ELM_Q5_K_BYTES : ELM_Q4_K_BYTES;
    for (int64_t i = 0; i < n; i++, b += bytes, x16 += 256) {
        const int64_t k = k0 + i;
        const float d = elm_f16_at(b), dmin = elm_f16_at(b + 2);
        uint8_t sc[8], m[8];
        elm_kquant_scales(b + 4, sc, m);
        const uint8_t *qh = b + 16, *qs = b + (five ? 48 : 16);
        const float *dx = x->d + 8 * k;
        const int16_t *s16 = x->sum16 + 16 * k;
        int32_t s[8];
        q45_chunk(qs, qh, 0, x16, five, &s[0], &s[1]);
        q45_chunk(qs, qh, 1, x16, five, &s[2], &s[3]);
        q45_chunk(qs, qh, 2, x16, five, &s[4], &s[5]);
        q45_chunk(qs, qh, 3, x16, five, &s[6], &s[7]);
        for (int j = 0; j < 8; j++) {
            int32_t t = s16[2 * j] + s16[2 * j + 1];
            acc[j] += dx[j] * (d * (float)sc[j] * (float)s[j] - dmin * (float)m[j] * (float)t);
        }
    }
}

/* Quarter g of a Q6_K half (ql: the half's 64 bytes, qh: its 32) against
 * its 32 activations: weights l < 32 take the low (g < 2) or high nibble of
 * ql[32(g & 1) + l] and bits 2g, 2g + 1 of qh[l]; the two sub-blocks' sums
 * of q * x (q unsigned: the -32 comes later, from the activations' sums).
 * g is a constant after inlining, so are the shifts. */
static KQ_INLINE void q6_quarter(const uint8_t *ql, const uint8_t *qh, int g, const int16_t *qx,
                                 int32_t *s0, int32_t *s1)
{
    const uint8_t *q = ql + 32 * (g & 1);
    const int shift = 4 * (g >> 1), hs = 2 * g;
    int32_t a = 0, b = 0;
    for (int l = 0; l < 16; l++) {
        a += (int16_t)(((q[l] >> shift) & 15) | (((qh[l] >> hs) & 3) << 4)) * qx[l];
        b += (int16_t)(((q[l + 16] >> shift) & 15) | (((qh[l + 16] >> hs) & 3) << 4)) *
             qx[l + 16];
    }
    *s0 = a;
    *s1 = b;
}

/* Super-blocks [k0, k0 + n) of one Q6_K row: w = d * sc * (q - 32), 16
 * weights a sub-block; sub-blocks 2a and 2a + 1 meet activation block a,
 * and their int8 scales combine in integers before the one float product. */
static KQ_INLINE void part_q6_k(const uint8_t *b, int64_t k0, int64_t n, const int16_t *x16,
                                const struct elm_qact *x, float acc[8])
{
    for (int64_t i = 0; i < n; i++, b += ELM_Q6_K_BYTES, x16 += 256) {
        const int64_t k = k0 + i;
        const float d = elm_f16_at(b + 208);
        const int8_t *sc = (const int8_t *)(b + 192);
        const int16_t *s16 = x->sum16 + 16 * k;
        int32_t s[16];
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = b + 64 * h, *qh = b + 128 + 32 * h;
            q6_quarter(ql, qh, 0, x16 + 128 * h, &s[8 * h], &s[8 * h + 1]);
            q6_quarter(ql, qh, 1, x16 + 128 * h + 32, &s[8 * h + 2], &s[8 * h + 3]);
            q6_quarter(ql, qh, 2, x16 + 128 * h + 64, &s[8 * h + 4], &s[8 * h + 5]);
            q6_quarter(ql, qh, 3, x16 + 128 * h + 96, &s[8 * h + 6], &s[8 * h + 7]);
        }
        for (int a = 0; a < 8; a++) {
            /* sum((q - 32) * x) = sum(q * x) - 32 * sum(x), exact; |sc *
             * that| <= 128 * 16 * 32 * 127 per sub-block: two fit in int32,
             * and in a float's 24 bits */
            int32_t v = sc[2 * a] * (s[2 * a] - 32 * s16[2 * a]) +
                        sc[2 * a + 1] * (s[2 * a + 1] - 32 * s16[2 * a + 1]);
            acc[a] += d * x->d[8 * k + a] * (float)v;
        }
    }
}

/* Rows of dtype t: the activations widened once per call (per row and
 * group of super-blocks when wider than the stack buffer). */
static KQ_INLINE void rows_generic(const uint8_t *w, size_t ldw, int64_t cols,
                                const struct elm_qact *x, float *y, long nrows, bool accumulate,
                                enum elm_dtype t)
{
    int16_t x16[KQ_GENERIC_COLS];
    const int64_t nb = cols / ELM_QK_K, group = KQ_GENERIC_COLS / ELM_QK_K;
    const size_t bytes = elm_quant_block_bytes(t);
    if (nb <= group)
        widen16(x->q, cols, x16);
    for (long r = 0; r < nrows; r++) {
        const uint8_t *b = w + (size_t)r * ldw;
        float acc[8] = {0};
        for (int64_t k0 = 0; k0 < nb; k0 += group) {
            int64_t n = nb - k0 < group ? nb - k0 : group;
            if (nb > group)
                widen16(x->q + 256 * k0, 256 * n, x16);
            if (t == ELM_DTYPE_Q6_K)
                part_q6_k(b + (size_t)k0 * bytes, k0, n, x16, x, acc);
            else
                part_q45_k(b + (size_t)k0 * bytes, k0, n, x16, x, t == ELM_DTYPE_Q5_K, acc);
        }
        float v = sum8(acc);
        y[r] = accumulate ? y[r] + v : v;
    }
}

static void rows_q4_k_generic(const uint8_t *w, size_t ldw, int64_t cols, const struct elm_qact *x,
                              float *y, long nrows, bool accumulate)
{
    rows_generic(w, ldw, cols, x, y, nrows, accumulate, ELM_DTYPE_Q4_K);
}

static void rows_q5_k_generic(const uint8_t *w, size_t ldw, int64_t cols, const struct elm_qact *x,
                              float *y, long nrows, bool accumulate)
{
    rows_generic(w, ldw, cols, x, y, nrows, accumulate, ELM_DTYPE_Q5_K);
}

static void rows_q6_k_generic(const uint8_t *w, size_t ldw, int64_t cols, const struct elm_qact *x,
                              float *y, long nrows, bool accumulate)
{
    rows_generic(w, ldw, cols, x, y, nrows, accumulate, ELM_DTYPE_Q6_K);
}

elm_qrows_fn elm_kquant_rows(enum elm_dtype dtype, enum elm_isa isa)
{
    if ((dtype != ELM_DTYPE_Q4_K && dtype != ELM_DTYPE_Q5_K && dtype != ELM_DTYPE_Q6_K) ||
        !elm_cpu_runs(isa))
        return NULL;
    switch (isa) {
    case ELM_ISA_GENERIC:
        return dtype == ELM_DTYPE_Q4_K   ? rows_q4_k_generic
               : dtype == ELM_DTYPE_Q5_K ? rows_q5_k_generic
                                         : rows_q6_k_generic;
#ifdef ELM_KQUANT_X86
    case ELM_ISA_AVX2: return elm_kquant_rows_avx2(dtype);
    case ELM_ISA_AVX512: return elm_kquant_rows_avx512(dtype, false);
    case ELM_ISA_AVX512_VNNI: return elm_kquant_rows_avx512(dtype, true);
#endif
#ifdef ELM_KQUANT_ARM
    case ELM_ISA_NEON: return elm_kquant_rows_neon(dtype, false);
    case ELM_ISA_NEON_DOTPROD:
    case ELM_ISA_NEON_I8MM: return elm_kquant_rows_neon(dtype, true);
#endif
    default: return NULL;
    }
}

elm_qrows_multi_fn elm_kquant_rows_multi(enum elm_dtype dtype, enum elm_isa isa, int64_t cols)
{
    if ((dtype != ELM_DTYPE_Q4_K && dtype != ELM_DTYPE_Q5_K && dtype != ELM_DTYPE_Q6_K) ||
        !elm_cpu_runs(isa))
        return NULL;
#ifdef ELM_KQUANT_X86
    if (isa == ELM_ISA_AVX512 || isa == ELM_ISA_AVX512_VNNI)
        return elm_kquant_rows_multi_avx512(dtype, isa == ELM_ISA_AVX512_VNNI, cols);
#endif
#ifdef ELM_KQUANT_ARM
    if (elm_isa_arm(isa, ELM_ISA_NEON))
        return elm_kquant_rows_multi_neon(dtype, isa >= ELM_ISA_NEON_DOTPROD);
#endif
    (void)cols;
    return NULL;
}
