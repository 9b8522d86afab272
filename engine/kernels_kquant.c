/* kernels_kquant.c: Q4_K, Q5_K and Q6_K weight rows times int8 activations
 * (quant_act.h), the portable kernels and the lookup of every set.
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

#include <string.h>

#include "engine/kernels_kquant.h"
#include "engine/quant.h"

/* The 6-bit scales and mins of the 8 sub-blocks (layout in quant.c). */
static inline void k_scales(const uint8_t *s, int sc[8], int m[8])
{
    for (int j = 0; j < 4; j++) {
        sc[j] = s[j] & 63;
        m[j] = s[j + 4] & 63;
        sc[j + 4] = (s[j + 8] & 15) | ((s[j] >> 6) << 4);
        m[j + 4] = (s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4);
    }
}

static inline float sum8(const float a[8])
{
    return ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
}

/* One Q4_K (five = false) or Q5_K row of nb super-blocks. */
static inline float row_q45_k(const uint8_t *b, int64_t nb, const struct elm_qact *x, bool five)
{
    const size_t bytes = five ? ELM_Q5_K_BYTES : ELM_Q4_K_BYTES;
    float acc[8] = {0};
    for (int64_t k = 0; k < nb; k++, b += bytes) {
        const float d = elm_f16_at(b), dmin = elm_f16_at(b + 2);
        int sc[8], m[8];
        k_scales(b + 4, sc, m);
        const uint8_t *qh = b + 16, *qs = b + (five ? 48 : 16);
        const int8_t *qx = x->q + 256 * k;
        const float *dx = x->d + 8 * k;
        const int16_t *s16 = x->sum16 + 16 * k;
        for (int j = 0; j < 8; j++) {
            /* sub-block j: nibble j&1 of the 32 bytes of chunk j/2; in Q5_K
             * the fifth bit is bit j of qh[l] */
            const uint8_t *q = qs + 32 * (j / 2);
            const int shift = 4 * (j & 1);
            int32_t s = 0;
            for (int l = 0; l < 32; l++) {
                int v = (q[l] >> shift) & 15;
                if (five)
                    v |= ((qh[l] >> j) & 1) << 4;
                s += v * qx[32 * j + l];
            }
            int32_t t = s16[2 * j] + s16[2 * j + 1];
            acc[j] += dx[j] * (d * (float)sc[j] * (float)s - dmin * (float)m[j] * (float)t);
        }
    }
    return sum8(acc);
}

/* One Q6_K row.  Weights 128n + 32g + l (half n, quarter g, l < 32) take
 * the low (g < 2) or high nibble of ql[64n + 32(g & 1) + l] and bits 2g,
 * 2g + 1 of qh[32n + l]; sub-block s = 8n + 2g + l / 16.  The loops follow
 * that layout, so that the compiler can vectorize the 16-wide sums. */
static float row_q6_k(const uint8_t *b, int64_t nb, const struct elm_qact *x)
{
    float acc[8] = {0};
    for (int64_t k = 0; k < nb; k++, b += ELM_Q6_K_BYTES) {
        const float d = elm_f16_at(b + 208);
        const int8_t *sc = (const int8_t *)(b + 192);
        for (int n = 0; n < 2; n++) {
            const uint8_t *ql = b + 64 * n, *qh = b + 128 + 32 * n;
            for (int g = 0; g < 4; g++) {
                /* activation block a = 4n + g: sub-blocks 2a and 2a + 1; |sc *
                 * sum| <= 128 * 16 * 32 * 127 per sub-block: two fit in int32,
                 * and in a float's 24 bits */
                const int a = 4 * n + g, shift = 4 * (g >> 1);
                const uint8_t *qlg = ql + 32 * (g & 1);
                const int8_t *qx = x->q + 256 * k + 32 * a;
                int32_t i = 0;
                for (int h = 0; h < 2; h++) {
                    int32_t sum = 0;
                    for (int l = 16 * h; l < 16 * h + 16; l++) {
                        int q = ((qlg[l] >> shift) & 15) | (((qh[l] >> (2 * g)) & 3) << 4);
                        sum += (q - 32) * qx[l];
                    }
                    i += sc[2 * a + h] * sum;
                }
                acc[a] += d * x->d[8 * k + a] * (float)i;
            }
        }
    }
    return sum8(acc);
}

ELM_KQUANT_ROWS(rows_q4_k_generic, , row_q45_k(b, nb, x, false))
ELM_KQUANT_ROWS(rows_q5_k_generic, , row_q45_k(b, nb, x, true))
ELM_KQUANT_ROWS(rows_q6_k_generic, , row_q6_k(b, nb, x))

elm_qrows_fn elm_kquant_rows(enum elm_dtype dtype, const char *set)
{
    if ((dtype != ELM_DTYPE_Q4_K && dtype != ELM_DTYPE_Q5_K && dtype != ELM_DTYPE_Q6_K) || !set)
        return NULL;
    if (strcmp(set, "generic") == 0)
        return dtype == ELM_DTYPE_Q4_K   ? rows_q4_k_generic
               : dtype == ELM_DTYPE_Q5_K ? rows_q5_k_generic
                                         : rows_q6_k_generic;
#ifdef ELM_KQUANT_X86
    return elm_kquant_rows_x86(dtype, set);
#else
    return NULL;
#endif
}
