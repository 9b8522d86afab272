/* blocks.c: ggml's block layouts (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K), their
 * dequantization, quantization (ggml's rounding for Q8_0/Q4_0, a scale
 * search of our own for the K-quants), 16-bit float conversion, and dot
 * products of a quantized row with an f32 vector.
 *
 * Layouts, as GGUF files store them (all little-endian, no padding):
 *   Q8_0  [d:f16][q:int8 x32]                       w = d * q
 *   Q4_0  [d:f16][q:u8 x16]                         w[j] = d * ((q[j] & 15) - 8),
 *                                                   w[j + 16] = d * ((q[j] >> 4) - 8)
 *   Q4_K  [d:f16][dmin:f16][scales:u8 x12][q:u8 x128]
 *         8 sub-blocks of 32 with 6-bit scale s and min m packed in scales;
 *         w = d * s * q - dmin * m, q a nibble (64 weights per 32 bytes of q:
 *         low nibbles first, then high nibbles)
 *   Q5_K  [d][dmin][scales x12][qh:u8 x32][q:u8 x128] as Q4_K, plus a fifth
 *         bit from qh (bit 2i for the low half of chunk i, 2i + 1 the high)
 *   Q6_K  [ql:u8 x128][qh:u8 x64][scales:int8 x16][d:f16]
 *         16 sub-blocks of 16, w = d * scale * (q6 - 32)
 * Bytes are read through memcpy: blocks sit at any byte offset.
 */
#include "config.h"

#include "engine/kernels/blocks.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

#include "engine/kernels/cpu.h"
#include "engine/kernels/arch/x86/simd_x86.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_X86_KERNELS 1
#endif

/* ------------------------------------------------------------ sizes */

size_t elm_quant_block_elems(enum elm_dtype dtype)
{
    switch (dtype) {
    case ELM_DTYPE_F32:
    case ELM_DTYPE_F16:
    case ELM_DTYPE_BF16: return 1;
    case ELM_DTYPE_Q8_0:
    case ELM_DTYPE_Q4_0: return 32;
    case ELM_DTYPE_Q4_K:
    case ELM_DTYPE_Q5_K:
    case ELM_DTYPE_Q6_K: return ELM_QK_K;
    }
    return 0;
}

size_t elm_quant_block_bytes(enum elm_dtype dtype)
{
    switch (dtype) {
    case ELM_DTYPE_F32: return 4;
    case ELM_DTYPE_F16:
    case ELM_DTYPE_BF16: return 2;
    case ELM_DTYPE_Q8_0: return ELM_Q8_0_BYTES;
    case ELM_DTYPE_Q4_0: return ELM_Q4_0_BYTES;
    case ELM_DTYPE_Q4_K: return ELM_Q4_K_BYTES;
    case ELM_DTYPE_Q5_K: return ELM_Q5_K_BYTES;
    case ELM_DTYPE_Q6_K: return ELM_Q6_K_BYTES;
    }
    return 0;
}

size_t elm_row_size(enum elm_dtype dtype, int64_t cols)
{
    size_t be = elm_quant_block_elems(dtype);
    if (!be || cols < 0 || (uint64_t)cols % be)
        return 0;
    return (size_t)((uint64_t)cols / be) * elm_quant_block_bytes(dtype);
}

bool elm_dtype_is_quant(enum elm_dtype dtype)
{
    return elm_quant_block_elems(dtype) > 1;
}

/* ----------------------------------------------------- 16-bit floats */

uint16_t elm_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) /* NaN: keep it quiet and NaN */
        return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    if (ax >= 0x477ff000u) /* >= 65520 rounds to infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) { /* below 2^-14: a subnormal half (or zero) */
        float v;
        memcpy(&v, &ax, sizeof v);
        return (uint16_t)(sign | (uint16_t)nearbyintf(v * 0x1p24f));
    }
    uint32_t h = ((((ax >> 23) - 112u) << 10) | ((ax >> 13) & 0x3ffu));
    uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
        h++; /* a carry into the exponent is the right result */
    return (uint16_t)(sign | h);
}

uint16_t elm_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static inline void put_half(uint8_t *p, float f)
{
    uint16_t h = elm_f32_to_f16(f);
    memcpy(p, &h, sizeof h);
}

/* ----------------------------------------------------- dequantization */

static void deq_q8_0(const uint8_t *b, float *y)
{
    float d = elm_f16_at(b);
    for (int i = 0; i < 32; i++)
        y[i] = d * (float)(int8_t)b[2 + i];
}

static void deq_q4_0(const uint8_t *b, float *y)
{
    float d = elm_f16_at(b);
    const uint8_t *q = b + 2;
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)((q[j] & 15) - 8);
        y[j + 16] = d * (float)((q[j] >> 4) - 8);
    }
}

/* Q4_K / Q5_K: the scales and offsets of sub-blocks 2j and 2j + 1. */
static void kquant_pair(const uint8_t *sc, int j, float d, float dmin, float *d1, float *o1,
                        float *d2, float *o2)
{
    int s1, m1, s2, m2;
    elm_kquant_scale_min(2 * j, sc, &s1, &m1);
    elm_kquant_scale_min(2 * j + 1, sc, &s2, &m2);
    *d1 = d * (float)s1;
    *o1 = dmin * (float)m1;
    *d2 = d * (float)s2;
    *o2 = dmin * (float)m2;
}

static void deq_q4_k(const uint8_t *b, float *y)
{
    float d = elm_f16_at(b), dmin = elm_f16_at(b + 2);
    const uint8_t *sc = b + 4, *q = b + 16;
    for (int j = 0; j < 4; j++) {
        float d1, o1, d2, o2;
        kquant_pair(sc, j, d, dmin, &d1, &o1, &d2, &o2);
        for (int l = 0; l < 32; l++) {
            y[64 * j + l] = d1 * (float)(q[32 * j + l] & 15) - o1;
            y[64 * j + 32 + l] = d2 * (float)(q[32 * j + l] >> 4) - o2;
        }
    }
}

static void deq_q5_k(const uint8_t *b, float *y)
{
    float d = elm_f16_at(b), dmin = elm_f16_at(b + 2);
    const uint8_t *sc = b + 4, *qh = b + 16, *q = b + 48;
    for (int j = 0; j < 4; j++) {
        float d1, o1, d2, o2;
        kquant_pair(sc, j, d, dmin, &d1, &o1, &d2, &o2);
        unsigned u1 = 1u << (2 * j), u2 = 2u << (2 * j);
        for (int l = 0; l < 32; l++) {
            int lo = (q[32 * j + l] & 15) + ((qh[l] & u1) ? 16 : 0);
            int hi = (q[32 * j + l] >> 4) + ((qh[l] & u2) ? 16 : 0);
            y[64 * j + l] = d1 * (float)lo - o1;
            y[64 * j + 32 + l] = d2 * (float)hi - o2;
        }
    }
}

static void deq_q6_k(const uint8_t *b, float *y)
{
    float d = elm_f16_at(b + 208);
    const uint8_t *ql = b, *qh = b + 128;
    const int8_t *sc = (const int8_t *)(b + 192);
    for (int n = 0; n < 2; n++) {
        for (int l = 0; l < 32; l++) {
            int is = l / 16;
            int q1 = ((ql[l] & 15) | ((qh[l] & 3) << 4)) - 32;
            int q2 = ((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32;
            int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l] = d * (float)sc[is] * (float)q1;
            y[l + 32] = d * (float)sc[is + 2] * (float)q2;
            y[l + 64] = d * (float)sc[is + 4] * (float)q3;
            y[l + 96] = d * (float)sc[is + 6] * (float)q4;
        }
        y += 128;
        ql += 64;
        qh += 32;
        sc += 8;
    }
}

typedef void (*deq_fn)(const uint8_t *block, float *y);

static deq_fn deq_for(enum elm_dtype dtype)
{
    switch (dtype) {
    case ELM_DTYPE_Q8_0: return deq_q8_0;
    case ELM_DTYPE_Q4_0: return deq_q4_0;
    case ELM_DTYPE_Q4_K: return deq_q4_k;
    case ELM_DTYPE_Q5_K: return deq_q5_k;
    case ELM_DTYPE_Q6_K: return deq_q6_k;
    default: return NULL;
    }
}

void elm_dequantize(const void *src, enum elm_dtype dtype, float *dst, int64_t n)
{
    const uint8_t *p = src;
    switch (dtype) {
    case ELM_DTYPE_F32: memcpy(dst, src, (size_t)n * sizeof *dst); return;
    case ELM_DTYPE_F16:
        for (int64_t i = 0; i < n; i++)
            dst[i] = elm_f16_at(p + 2 * i);
        return;
    case ELM_DTYPE_BF16:
        for (int64_t i = 0; i < n; i++)
            dst[i] = elm_bf16_at(p + 2 * i);
        return;
    default: break;
    }
    deq_fn deq = deq_for(dtype);
    size_t be = elm_quant_block_elems(dtype), bb = elm_quant_block_bytes(dtype);
    if (!deq)
        return;
    for (int64_t i = 0; i < n / (int64_t)be; i++)
        deq(p + (size_t)i * bb, dst + (size_t)i * be);
}

/* ------------------------------------------------------- quantization */

/* ggml's quantize_row_q8_0_ref: d = max|x| / 127, q = round(x / d). */
static void quant_q8_0(const float *x, uint8_t *b)
{
    float amax = 0.0f;
    for (int i = 0; i < 32; i++)
        amax = fmaxf(amax, fabsf(x[i]));
    float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    put_half(b, d);
    for (int i = 0; i < 32; i++)
        b[2 + i] = (uint8_t)(int8_t)roundf(x[i] * id);
}

/* ggml's quantize_row_q4_0_ref: the value of largest magnitude maps to -8,
 * so its sign decides the direction of d. */
static void quant_q4_0(const float *x, uint8_t *b)
{
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < 32; i++) {
        if (amax < fabsf(x[i])) {
            amax = fabsf(x[i]);
            max = x[i];
        }
    }
    float d = max / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    put_half(b, d);
    for (int j = 0; j < 16; j++) {
        int lo = (int)(int8_t)(x[j] * id + 8.5f), hi = (int)(int8_t)(x[j + 16] * id + 8.5f);
        lo = lo > 15 ? 15 : lo;
        hi = hi > 15 ? 15 : hi;
        b[2 + j] = (uint8_t)(lo | (hi << 4));
    }
}

/* The K-quants: not ggml's iterative search, a small exhaustive one over
 * roundings.  The super-block's f16 scales put the largest sub-block scale
 * (and min) at the top of the 6- or 8-bit range; each sub-block then tries
 * the nearest integer scales (and mins) around its own fit and keeps the one
 * with the least squared error, computed exactly as deq_q*_k will compute
 * the weights. */

/* round(v) clamped to [lo, hi]; NaN gives lo (no undefined conversion). */
static inline int round_clamp(float v, int lo, int hi)
{
    float r = nearbyintf(v);
    if (!(r >= (float)lo))
        return lo;
    return r > (float)hi ? hi : (int)r;
}

/* The f16 scale max / steps, rounded up (so that the largest sub-block
 * fits in the steps even when the scale is an f16 subnormal) and kept
 * finite, stored at p and read back. */
static float k_scale_f16(uint8_t *p, float max, float steps)
{
    float v = max / steps;
    uint16_t h = elm_f32_to_f16(v > 65504.0f ? 65504.0f : v);
    if (elm_f16_to_f32(h) < v && h < 0x7bffu)
        h++; /* v >= 0: the next f16 up */
    memcpy(p, &h, sizeof h);
    return elm_f16_to_f32(h);
}

/* Q4_K (nmax 15) and Q5_K (nmax 31): sub-block j spans [min(0, lo), hi]
 * (a min above 0 is not representable) in nmax steps; w = d*sc*q - dmin*m
 * with 6-bit sc and m. */
static void quant_q45_k(const float *x, uint8_t *b, int nmax)
{
    float lo[8], hi[8], smax = 0.0f, mmax = 0.0f;
    for (int j = 0; j < 8; j++) {
        lo[j] = 0.0f;
        hi[j] = x[32 * j];
        for (int l = 0; l < 32; l++) {
            lo[j] = fminf(lo[j], x[32 * j + l]);
            hi[j] = fmaxf(hi[j], x[32 * j + l]);
        }
        smax = fmaxf(smax, (hi[j] - lo[j]) / (float)nmax);
        mmax = fmaxf(mmax, -lo[j]);
    }
    const float d = k_scale_f16(b, smax, 63.0f), dmin = k_scale_f16(b + 2, mmax, 63.0f);
    int sc[8], mn[8];
    uint8_t L[ELM_QK_K];
    for (int j = 0; j < 8; j++) {
        const float *xj = x + 32 * j;
        float best = INFINITY;
        float mf = dmin > 0.0f ? -lo[j] / dmin : 0.0f;
        sc[j] = mn[j] = 0;
        memset(L + 32 * j, 0, 32);
        /* min rounded down or up, then the scale that reaches hi from it,
         * rounded down or up: the up/up pair covers the whole range */
        for (int mi = 0; mi < 2; mi++) {
            int m = round_clamp(mi ? ceilf(mf) : floorf(mf), 0, 63);
            float off = dmin * (float)m;
            float sf = d > 0.0f ? (hi[j] + off) / (float)nmax / d : 0.0f;
            for (int si = 0; si < 2; si++) {
                int s = round_clamp(si ? ceilf(sf) : floorf(sf), 0, 63);
                float d1 = d * (float)s, id = d1 > 0.0f ? 1.0f / d1 : 0.0f, err = 0.0f;
                uint8_t q[32];
                for (int l = 0; l < 32; l++) {
                    q[l] = (uint8_t)round_clamp((xj[l] + off) * id, 0, nmax);
                    float e = d1 * (float)q[l] - off - xj[l];
                    err += e * e;
                }
                if (err < best) {
                    best = err;
                    sc[j] = s;
                    mn[j] = m;
                    memcpy(L + 32 * j, q, 32);
                }
            }
        }
    }
    /* the inverse of k_scale_min */
    for (int j = 0; j < 4; j++) {
        b[4 + j] = (uint8_t)(sc[j] | (sc[j + 4] >> 4) << 6);
        b[8 + j] = (uint8_t)(mn[j] | (mn[j + 4] >> 4) << 6);
        b[12 + j] = (uint8_t)((sc[j + 4] & 15) | (mn[j + 4] & 15) << 4);
    }
    uint8_t *qs = b + (nmax == 15 ? 16 : 48), *qh = b + 16;
    if (nmax == 31)
        memset(qh, 0, 32);
    for (int c = 0; c < 4; c++) {
        for (int l = 0; l < 32; l++) {
            int a = L[64 * c + l], z = L[64 * c + 32 + l];
            qs[32 * c + l] = (uint8_t)((a & 15) | (z & 15) << 4);
            if (nmax == 31)
                qh[l] |= (uint8_t)(((a >> 4) << (2 * c)) | ((z >> 4) << (2 * c + 1)));
        }
    }
}

/* Q6_K: sub-blocks of 16, w = d * sc * (q - 32) with int8 sc.  The value of
 * largest magnitude maps to -32 or to +31, the scale rounded to nearest or
 * one off either way: the least squared error of those six wins. */
static void quant_q6_k(const float *x, uint8_t *b)
{
    float v[16], smax = 0.0f;
    for (int s = 0; s < 16; s++) {
        v[s] = 0.0f;
        for (int l = 0; l < 16; l++)
            if (fabsf(x[16 * s + l]) > fabsf(v[s]))
                v[s] = x[16 * s + l];
        smax = fmaxf(smax, fabsf(v[s]) / 32.0f);
    }
    const float d = k_scale_f16(b + 208, smax, 127.0f);
    int8_t *scales = (int8_t *)(b + 192);
    uint8_t L[ELM_QK_K];
    for (int s = 0; s < 16; s++) {
        const float *xs = x + 16 * s;
        float best = INFINITY;
        scales[s] = 0;
        memset(L + 16 * s, 32, 16);
        for (int c = 0; c < 6 && d > 0.0f; c++) {
            float base = (c < 3 ? v[s] / -32.0f : v[s] / 31.0f) / d;
            int sc = round_clamp(nearbyintf(base) + (float)(c % 3 - 1), -128, 127);
            float ds = d * (float)sc, id = ds != 0.0f ? 1.0f / ds : 0.0f, err = 0.0f;
            uint8_t q[16];
            for (int l = 0; l < 16; l++) {
                int qi = round_clamp(xs[l] * id, -32, 31);
                q[l] = (uint8_t)(qi + 32);
                float e = ds * (float)qi - xs[l];
                err += e * e;
            }
            if (err < best) {
                best = err;
                scales[s] = (int8_t)sc;
                memcpy(L + 16 * s, q, 16);
            }
        }
    }
    /* the inverse of deq_q6_k: four quarters of each half share ql and qh */
    uint8_t *ql = b, *qh = b + 128;
    for (int n = 0; n < 2; n++) {
        for (int l = 0; l < 32; l++) {
            int q1 = L[128 * n + l], q2 = L[128 * n + l + 32];
            int q3 = L[128 * n + l + 64], q4 = L[128 * n + l + 96];
            ql[64 * n + l] = (uint8_t)((q1 & 15) | (q3 & 15) << 4);
            ql[64 * n + l + 32] = (uint8_t)((q2 & 15) | (q4 & 15) << 4);
            qh[32 * n + l] =
                (uint8_t)((q1 >> 4) | (q2 >> 4) << 2 | (q3 >> 4) << 4 | (q4 >> 4) << 6);
        }
    }
}

bool elm_quantize_row(const float *src, enum elm_dtype dtype, void *dst, int64_t n)
{
    uint8_t *p = dst;
    switch (dtype) {
    case ELM_DTYPE_F32: memcpy(dst, src, (size_t)n * sizeof *src); return true;
    case ELM_DTYPE_F16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = elm_f32_to_f16(src[i]);
            memcpy(p + 2 * i, &h, sizeof h);
        }
        return true;
    case ELM_DTYPE_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = elm_f32_to_bf16(src[i]);
            memcpy(p + 2 * i, &h, sizeof h);
        }
        return true;
    case ELM_DTYPE_Q8_0:
        for (int64_t i = 0; i < n / 32; i++)
            quant_q8_0(src + 32 * i, p + ELM_Q8_0_BYTES * i);
        return true;
    case ELM_DTYPE_Q4_0:
        for (int64_t i = 0; i < n / 32; i++)
            quant_q4_0(src + 32 * i, p + ELM_Q4_0_BYTES * i);
        return true;
    case ELM_DTYPE_Q4_K:
    case ELM_DTYPE_Q5_K:
        for (int64_t i = 0; i < n / ELM_QK_K; i++)
            quant_q45_k(src + ELM_QK_K * i, p + elm_quant_block_bytes(dtype) * (size_t)i,
                        dtype == ELM_DTYPE_Q4_K ? 15 : 31);
        return true;
    case ELM_DTYPE_Q6_K:
        for (int64_t i = 0; i < n / ELM_QK_K; i++)
            quant_q6_k(src + ELM_QK_K * i, p + ELM_Q6_K_BYTES * (size_t)i);
        return true;
    default: return false;
    }
}

/* ------------------------------------------------------ dot products */

static float dot_f32(const float *a, const float *b, int n)
{
    float acc[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            acc[k] += a[i + k] * b[i + k];
    for (; i < n; i++)
        acc[0] += a[i] * b[i];
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

static float dot_q8_0_generic(const uint8_t *w, const float *x, int64_t n)
{
    float sum = 0.0f;
    for (int64_t b = 0; b < n / 32; b++, w += ELM_Q8_0_BYTES, x += 32) {
        float s = 0.0f;
        for (int i = 0; i < 32; i++)
            s += (float)(int8_t)w[2 + i] * x[i];
        sum += elm_f16_at(w) * s;
    }
    return sum;
}

static float dot_q4_0_generic(const uint8_t *w, const float *x, int64_t n)
{
    float sum = 0.0f;
    for (int64_t b = 0; b < n / 32; b++, w += ELM_Q4_0_BYTES, x += 32) {
        float s = 0.0f;
        for (int j = 0; j < 16; j++)
            s += (float)((w[2 + j] & 15) - 8) * x[j] + (float)((w[2 + j] >> 4) - 8) * x[j + 16];
        sum += elm_f16_at(w) * s;
    }
    return sum;
}

/* K-quants: widen one super-block at a time (256 floats on the stack). */
static float dot_by_blocks(const uint8_t *w, enum elm_dtype dtype, const float *x, int64_t n)
{
    deq_fn deq = deq_for(dtype);
    size_t be = elm_quant_block_elems(dtype), bb = elm_quant_block_bytes(dtype);
    float buf[ELM_QK_K];
    float sum = 0.0f;
    for (int64_t b = 0; b < n / (int64_t)be; b++) {
        deq(w + (size_t)b * bb, buf);
        sum += dot_f32(buf, x + (size_t)b * be, (int)be);
    }
    return sum;
}

#ifdef HAVE_X86_KERNELS

AVX2 static inline __m256 i8x8(__m128i v)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v));
}

AVX2 static inline float half_avx2(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

/* Sum of 32 int8 weights times 32 floats (two 16-byte loads). */
AVX2 static inline __m256 dot32_i8(__m128i q0, __m128i q1, const float *x)
{
    __m256 s = _mm256_mul_ps(i8x8(q0), _mm256_loadu_ps(x));
    s = _mm256_fmadd_ps(i8x8(_mm_srli_si128(q0, 8)), _mm256_loadu_ps(x + 8), s);
    s = _mm256_fmadd_ps(i8x8(q1), _mm256_loadu_ps(x + 16), s);
    return _mm256_fmadd_ps(i8x8(_mm_srli_si128(q1, 8)), _mm256_loadu_ps(x + 24), s);
}

AVX2 static float dot_q8_0_avx2(const uint8_t *w, const float *x, int64_t n)
{
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0;
    int64_t nb = n / 32, b = 0;
    for (; b + 2 <= nb; b += 2, w += 2 * ELM_Q8_0_BYTES, x += 64) {
        __m256 s0 = dot32_i8(_mm_loadu_si128((const __m128i *)(const void *)(w + 2)),
                             _mm_loadu_si128((const __m128i *)(const void *)(w + 18)), x);
        const uint8_t *w1 = w + ELM_Q8_0_BYTES;
        __m256 s1 = dot32_i8(_mm_loadu_si128((const __m128i *)(const void *)(w1 + 2)),
                             _mm_loadu_si128((const __m128i *)(const void *)(w1 + 18)), x + 32);
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(half_avx2(w)), s0, acc0);
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(half_avx2(w1)), s1, acc1);
    }
    for (; b < nb; b++, w += ELM_Q8_0_BYTES, x += 32) {
        __m256 s = dot32_i8(_mm_loadu_si128((const __m128i *)(const void *)(w + 2)),
                            _mm_loadu_si128((const __m128i *)(const void *)(w + 18)), x);
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(half_avx2(w)), s, acc0);
    }
    return hsum256(_mm256_add_ps(acc0, acc1));
}

AVX2 static float dot_q4_0_avx2(const uint8_t *w, const float *x, int64_t n)
{
    const __m128i mask = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0;
    int64_t nb = n / 32;
    for (int64_t b = 0; b < nb; b++, w += ELM_Q4_0_BYTES, x += 32) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(w + 2));
        __m128i lo = _mm_sub_epi8(_mm_and_si128(v, mask), eight);
        __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(v, 4), mask), eight);
        __m256 s = dot32_i8(lo, hi, x);
        if (b & 1)
            acc1 = _mm256_fmadd_ps(_mm256_set1_ps(half_avx2(w)), s, acc1);
        else
            acc0 = _mm256_fmadd_ps(_mm256_set1_ps(half_avx2(w)), s, acc0);
    }
    return hsum256(_mm256_add_ps(acc0, acc1));
}
#endif

typedef float (*qdot_fn)(const uint8_t *w, const float *x, int64_t n);

static struct {
    qdot_fn q8_0, q4_0;
} kq = {dot_q8_0_generic, dot_q4_0_generic};

static pthread_once_t kq_once = PTHREAD_ONCE_INIT;
static bool kq_generic;

static void kq_pick(void)
{
#ifdef HAVE_X86_KERNELS
    /* by what the CPU runs, not by the set in use (ELM_KERNELS): these are
     * the fallback of every set */
    if (elm_isa_x86(elm_cpu()->isa, ELM_ISA_AVX2)) {
        kq.q8_0 = dot_q8_0_avx2;
        kq.q4_0 = dot_q4_0_avx2;
    }
#endif
}

void elm_quant_force_generic(bool on)
{
    kq_generic = on;
}

float elm_quant_dot(const void *w, enum elm_dtype dtype, const float *x, int64_t n)
{
    pthread_once(&kq_once, kq_pick);
    switch (dtype) {
    case ELM_DTYPE_Q8_0: return (kq_generic ? dot_q8_0_generic : kq.q8_0)(w, x, n);
    case ELM_DTYPE_Q4_0: return (kq_generic ? dot_q4_0_generic : kq.q4_0)(w, x, n);
    case ELM_DTYPE_Q4_K:
    case ELM_DTYPE_Q5_K:
    case ELM_DTYPE_Q6_K: return dot_by_blocks(w, dtype, x, n);
    default: break;
    }
    /* Dense types (not the decode path: the f32 kernels have those). */
    float buf[256], sum = 0.0f;
    size_t es = elm_quant_block_bytes(dtype);
    for (int64_t i = 0; i < n; i += 256) {
        int k = n - i < 256 ? (int)(n - i) : 256;
        elm_dequantize((const uint8_t *)w + (size_t)i * es, dtype, buf, k);
        sum += dot_f32(buf, x + i, k);
    }
    return sum;
}

void elm_quant_matvec_rows(const void *w, enum elm_dtype dtype, int64_t cols, const float *x,
                           float *y, int64_t r0, int64_t r1, bool accumulate)
{
    size_t rs = elm_row_size(dtype, cols);
    const uint8_t *base = w;
    for (int64_t r = r0; r < r1; r++) {
        float v = elm_quant_dot(base + (size_t)r * rs, dtype, x, cols);
        if (accumulate)
            y[r - r0] += v;
        else
            y[r - r0] = v;
    }
}
