/* gemm_int8.c: block-quantized weights x int8 activations for batches, with
 * an AVX-512 VNNI micro-kernel of 4 tokens x 32 weight rows (and an AVX2
 * one of 4 x 8 that gives the same bits); on AArch64 the smmla (FEAT_I8MM)
 * and sdot (FEAT_DotProd) kernels of arch/arm/gemm_int8_neon.c (4 x 8, the
 * same float steps).
 *
 * Prefill used to widen the weights to f32 and run the f32 GEMM: about
 * BLIS's speed, which llama.cpp's int8 GEMM beats by 1.2-1.4x for Q4_0 and
 * Q4_K.  Here one vpdpbusd does 64 multiply-adds where an FMA does 16.
 *
 * Layout (gemm_int8_tiles.h).  A (the activations, already rounded by
 * act_int8.c) is packed once per call into tiles of MR tokens: the int8
 * values as [k/4][MR] 32-bit words (one 32-bit broadcast feeds a vpdpbusd;
 * smmla: [k/8][MR] groups of 8 bytes, two tokens a register), then per
 * weight sub-block the activation block's scale d and its correction (bias
 * types: -bias * sum(q), an integer that makes the int32 sum exact; Q4_K and
 * Q5_K: d * sum(q), which meets the weight's float min).  Each thread
 * repacks NR = 32 weight rows at a time, all k columns (at most a few
 * hundred KiB, it stays in L2), into unsigned bytes [k/4][NR] and float
 * scales [sub-block][NR].  Per sub-block and output the float work is one
 * conversion and one FMA (two with mins), after 8 vpdpbusd in two chains
 * (4 for Q6_K's 16-weight sub-blocks).
 *
 * Every output is one float sum over the sub-blocks in order, so the
 * result depends only on k: not on the threads, the row ranges or m. */
#include "config.h"

#include "engine/kernels/gemm_int8.h"

#include <stdint.h>
#include <string.h>

#include "engine/kernels/kernels.h"
#include "engine/kernels/blocks.h"
#include "engine/kernels/gemm_int8_tiles.h"

#define MR ELM_GI8_MR
#define NR ELM_GI8_NR

/* ----------------------------------------------------- weight kinds */

static bool vnni_kernel(void);
/* Bytes per group of the packed layouts: 4 (x86's 32-bit broadcasts), 8
 * (smmla's 2x8 operands). */
static int group_bytes(void);

static bool kind_of(enum elm_dtype dtype, struct elm_gi8_kind *k)
{
    switch (dtype) {
    /* AVX2 multiplies |w| by the activation with w's sign (no bias: 255 x
     * 127 x 2 would saturate vpmaddubsw's int16); smmla multiplies signed
     * bytes */
    case ELM_DTYPE_Q8_0: *k = (struct elm_gi8_kind){32, vnni_kernel() ? 128 : 0, false}; return true;
    case ELM_DTYPE_Q4_0: *k = (struct elm_gi8_kind){32, 8, false}; return true;
    case ELM_DTYPE_Q4_K:
    case ELM_DTYPE_Q5_K: *k = (struct elm_gi8_kind){32, 0, true}; return true;
    case ELM_DTYPE_Q6_K: *k = (struct elm_gi8_kind){16, 32, false}; return true;
    default: return false;
    }
}

size_t elm_gemm_i8_apack_bytes(enum elm_dtype dtype, long m, long k)
{
    struct elm_gi8_kind kd;
    if (!kind_of(dtype, &kd))
        return 0;
    return (size_t)((m + MR - 1) / MR) * elm_gi8_tile_bytes(k, kd.sb);
}

/* The panel: q words [k/4][NR], s [nsb][NR], o [nsb][NR]; then its rows
 * unpacked, u [NR][k], us and uo [NR][nsb], before the transposition. */
size_t elm_gemm_i8_wpack_bytes(enum elm_dtype dtype, long k)
{
    struct elm_gi8_kind kd;
    if (!kind_of(dtype, &kd))
        return 0;
    return elm_gi8_panel_bytes(k, kd.sb);
}

void elm_gemm_i8_pack_a(enum elm_dtype dtype, const struct elm_qact *qa, long m, long t0,
                        void *ap)
{
    struct elm_gi8_kind kd;
    if (!kind_of(dtype, &kd))
        return;
    long k = (long)qa[0].n, nsb = k / kd.sb;
    const int gb = group_bytes();
    struct elm_gi8_atile at = elm_gi8_atile_at(
        (char *)ap + (size_t)(t0 / MR) * elm_gi8_tile_bytes(k, kd.sb), k, kd.sb);
    int8_t *q = (int8_t *)at.q;
    int32_t *ci = at.ci;
    float *d = at.d, *cf = at.cf;
    for (int i = 0; i < MR; i++) {
        const struct elm_qact *a = t0 + i < m ? &qa[t0 + i] : NULL;
        for (long g = 0; g < k / gb; g++) {
            int8_t *dst = q + ((size_t)g * MR + (size_t)i) * (size_t)gb;
            if (a)
                memcpy(dst, a->q + (size_t)gb * (size_t)g, (size_t)gb);
            else
                memset(dst, 0, (size_t)gb);
        }
        for (long s = 0; s < nsb; s++) {
            long blk = s * kd.sb / ELM_QA_BLOCK; /* the activation block holding it */
            int32_t sum = 0;
            if (a) {
                for (long h = s * kd.sb / 16; h < (s + 1) * kd.sb / 16; h++)
                    sum += a->sum16[h];
            }
            float dx = a ? a->d[blk] : 0.0f;
            d[s * MR + i] = dx;
            if (kd.mins)
                cf[s * MR + i] = dx * (float)sum;
            else
                ci[s * MR + i] = -kd.bias * sum;
        }
    }
}

/* ------------------------------------------------------- the kernel */

#if defined(__x86_64__) && defined(__GNUC__)
#include "engine/kernels/arch/x86/simd_x86.h"
#define VNNI                                                                                      \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
/* Full unrolling keeps the 16 accumulators in registers. */
#define UNROLL_MR _Pragma("GCC unroll 4")

/* ---------------------------------------------- unpacking weight rows */

/* A row of k weights into unsigned bytes u, scales s and (mins) offsets o
 * per sub-block: w = s * (u - bias) or s * u + o.  AVX2 on 32 bytes at a
 * time (the scalar loops were 60 % of a 32-token prefill), for both
 * kernels. */
#define LOAD128(p) _mm_loadu_si128((const __m128i *)(const void *)(p))
#define LOAD256(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define STORE128(p, v) _mm_storeu_si128((__m128i *)(void *)(p), v)
#define STORE256(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), v)

VNNI static void unpack_q8_0(const uint8_t *b, long k, uint8_t *u, float *s, float *o)
{
    (void)o;
    const __m256i bias = _mm256_set1_epi8((char)0x80); /* two's complement + 128 */
    for (long i = 0; i < k / 32; i++, b += ELM_Q8_0_BYTES) {
        s[i] = elm_f16_at(b);
        STORE256(u + 32 * i, _mm256_xor_si256(LOAD256(b + 2), bias));
    }
}

/* The AVX2 kernel's Q8_0: the signed bytes as stored. */
AVX2 static void unpack_q8_0_signed(const uint8_t *b, long k, uint8_t *u, float *s, float *o)
{
    (void)o;
    for (long i = 0; i < k / 32; i++, b += ELM_Q8_0_BYTES) {
        s[i] = elm_f16_at(b);
        STORE256(u + 32 * i, LOAD256(b + 2));
    }
}

AVX2 static void unpack_q4_0(const uint8_t *b, long k, uint8_t *u, float *s, float *o)
{
    (void)o;
    const __m128i lo = _mm_set1_epi8(15);
    for (long i = 0; i < k / 32; i++, b += ELM_Q4_0_BYTES) {
        s[i] = elm_f16_at(b);
        __m128i v = LOAD128(b + 2);
        STORE128(u + 32 * i, _mm_and_si128(v, lo));
        STORE128(u + 32 * i + 16, _mm_and_si128(_mm_srli_epi16(v, 4), lo));
    }
}

/* Q4_K (five = false) and Q5_K: sub-blocks 2c and 2c + 1 are the low and
 * high nibbles of the 32 bytes of chunk c (plus, Q5_K, bit j of qh[l] as
 * 16 for sub-block j). */
AVX2 static INLINE void unpack_q45_k(const uint8_t *b, long k, uint8_t *u, float *s, float *o,
                                     bool five)
{
    const size_t bytes = five ? ELM_Q5_K_BYTES : ELM_Q4_K_BYTES;
    const __m256i lo = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
    for (long sb = 0; sb < k / ELM_QK_K; sb++, b += bytes, u += ELM_QK_K, s += 8, o += 8) {
        float d = elm_f16_at(b), dmin = elm_f16_at(b + 2);
        for (int j = 0; j < 8; j++) {
            int sc, mn;
            elm_kquant_scale_min(j, b + 4, &sc, &mn);
            s[j] = d * (float)sc;
            o[j] = -(dmin * (float)mn);
        }
        const uint8_t *qs = b + (five ? 48 : 16);
        __m256i qh = five ? LOAD256(b + 16) : _mm256_setzero_si256();
        for (int c = 0; c < 4; c++) {
            __m256i v = LOAD256(qs + 32 * c);
            __m256i l = _mm256_and_si256(v, lo), h = _mm256_and_si256(_mm256_srli_epi16(v, 4), lo);
            if (five) { /* bit j of each byte to bit 4 (16-bit shifts, masked per byte) */
                __m256i bl = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), one);
                __m256i bh = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * c + 1), one);
                l = _mm256_or_si256(l, _mm256_slli_epi16(bl, 4));
                h = _mm256_or_si256(h, _mm256_slli_epi16(bh, 4));
            }
            STORE256(u + 64 * c, l);
            STORE256(u + 64 * c + 32, h);
        }
    }
}

AVX2 static void unpack_q4_k(const uint8_t *b, long k, uint8_t *u, float *s, float *o)
{
    unpack_q45_k(b, k, u, s, o, false);
}

AVX2 static void unpack_q5_k(const uint8_t *b, long k, uint8_t *u, float *s, float *o)
{
    unpack_q45_k(b, k, u, s, o, true);
}

/* Q6_K: weight 128n + 32g + l takes the low (g < 2) or high nibble of
 * ql[64n + 32(g & 1) + l] and bits 2g, 2g + 1 of qh[32n + l]; 16-weight
 * sub-blocks with int8 scales. */
AVX2 static void unpack_q6_k(const uint8_t *b, long k, uint8_t *u, float *s, float *o)
{
    (void)o;
    const __m256i lo = _mm256_set1_epi8(15), three = _mm256_set1_epi8(3);
    for (long sb = 0; sb < k / ELM_QK_K; sb++, b += ELM_Q6_K_BYTES, u += ELM_QK_K, s += 16) {
        float d = elm_f16_at(b + 208);
        const int8_t *sc = (const int8_t *)(b + 192);
        for (int i = 0; i < 16; i++)
            s[i] = d * (float)sc[i];
        for (int n = 0; n < 2; n++) {
            __m256i qh = LOAD256(b + 128 + 32 * n);
            for (int g = 0; g < 4; g++) {
                __m256i v = LOAD256(b + 64 * n + 32 * (g & 1));
                __m256i l = _mm256_and_si256(g >> 1 ? _mm256_srli_epi16(v, 4) : v, lo);
                __m256i h = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * g), three);
                STORE256(u + 128 * n + 32 * g, _mm256_or_si256(l, _mm256_slli_epi16(h, 4)));
            }
        }
    }
}

typedef void (*unpack_fn)(const uint8_t *b, long k, uint8_t *u, float *s, float *o);

static unpack_fn unpack_for(enum elm_dtype dtype)
{
    switch (dtype) {
    case ELM_DTYPE_Q8_0: return vnni_kernel() ? unpack_q8_0 : unpack_q8_0_signed;
    case ELM_DTYPE_Q4_0: return unpack_q4_0;
    case ELM_DTYPE_Q4_K: return unpack_q4_k;
    case ELM_DTYPE_Q5_K: return unpack_q5_k;
    case ELM_DTYPE_Q6_K: return unpack_q6_k;
    default: return NULL;
    }
}

/* Unpack each row, then transpose its 32-bit words (four columns) and its
 * scales into the panel; elm_transpose moves 32-bit patterns, floats or
 * not (the AVX-512 set's, as this GEMM runs only there). */
static void pack_w(const struct elm_matrix *w, const struct elm_gi8_kind *kd, long r0, int nr,
                   const struct elm_gi8_panel *pn)
{
    long k = (long)w->cols, nsb = k / kd->sb;
    size_t row_bytes = elm_row_size(w->dtype, w->cols);
    unpack_fn unpack = unpack_for(w->dtype);
    for (int r = 0; r < NR; r++) {
        uint8_t *u = pn->u + (size_t)r * (size_t)k;
        float *us = pn->us + (size_t)r * (size_t)nsb, *uo = pn->uo + (size_t)r * (size_t)nsb;
        if (r < nr) {
            unpack((const uint8_t *)w->data + (size_t)(r0 + r) * row_bytes, k, u, us, uo);
        } else {
            memset(u, 0, (size_t)k);
            memset(us, 0, (size_t)nsb * sizeof(float));
            memset(uo, 0, (size_t)nsb * sizeof(float));
        }
    }
    elm_transpose((const float *)(const void *)pn->u, k / 4, NR, (int)(k / 4),
                  (float *)(void *)pn->q, NR);
    elm_transpose(pn->us, nsb, NR, (int)nsb, pn->s, NR);
    if (kd->mins)
        elm_transpose(pn->uo, nsb, NR, (int)nsb, pn->o, NR);
}


/* C[t0 + i][n0 + 16h + l] for i < mt, 16h + l < nr, from one A tile and the
 * panel; sbw = sub-block width / 4 (words). */
VNNI static INLINE void micro(const char *tile, long k, const struct elm_gi8_panel *pn, const int sbw,
                              const bool mins, float *c, long ldc, int mt, int nr, bool add)
{
    const long nsb = k / (4 * sbw);
    const struct elm_gi8_atile at = elm_gi8_atile_at(tile, k, 4 * sbw);
    const int32_t *aq = at.q, *ci = at.ci;
    const float *ad = at.d, *cf = at.cf;
    __m512 f[MR][2];
    UNROLL_MR for (int i = 0; i < MR; i++)
        f[i][0] = f[i][1] = _mm512_setzero_ps();
    for (long s = 0; s < nsb; s++) {
        /* Two chains per output (even and odd words): vpdpbusd's latency,
         * not its throughput, bounded 8 chains (measured 2.8 vs 3.9 per ns
         * for 12 and 24 chains). */
        __m512i acc[MR][2], odd[MR][2];
        UNROLL_MR for (int i = 0; i < MR; i++) {
            acc[i][0] = acc[i][1] = mins ? _mm512_setzero_si512() : _mm512_set1_epi32(ci[s * MR + i]);
            odd[i][0] = odd[i][1] = _mm512_setzero_si512();
        }
        const uint32_t *wq = pn->q + (size_t)s * (size_t)sbw * NR;
        const int32_t *aw = aq + (size_t)s * (size_t)sbw * MR;
        _Pragma("GCC unroll 8") for (int g = 0; g < sbw; g += 2) {
            __m512i w0 = _mm512_load_si512((const void *)(wq + g * NR));
            __m512i w1 = _mm512_load_si512((const void *)(wq + g * NR + 16));
            __m512i v0 = _mm512_load_si512((const void *)(wq + (g + 1) * NR));
            __m512i v1 = _mm512_load_si512((const void *)(wq + (g + 1) * NR + 16));
            UNROLL_MR for (int i = 0; i < MR; i++) {
                __m512i a = _mm512_set1_epi32(aw[g * MR + i]);
                __m512i b = _mm512_set1_epi32(aw[(g + 1) * MR + i]);
                acc[i][0] = _mm512_dpbusd_epi32(acc[i][0], w0, a);
                acc[i][1] = _mm512_dpbusd_epi32(acc[i][1], w1, a);
                odd[i][0] = _mm512_dpbusd_epi32(odd[i][0], v0, b);
                odd[i][1] = _mm512_dpbusd_epi32(odd[i][1], v1, b);
            }
        }
        UNROLL_MR for (int i = 0; i < MR; i++) {
            acc[i][0] = _mm512_add_epi32(acc[i][0], odd[i][0]);
            acc[i][1] = _mm512_add_epi32(acc[i][1], odd[i][1]);
        }
        __m512 s0 = _mm512_load_ps(pn->s + s * NR), s1 = _mm512_load_ps(pn->s + s * NR + 16);
        UNROLL_MR for (int i = 0; i < MR; i++) {
            __m512 dx = _mm512_set1_ps(ad[s * MR + i]);
            f[i][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[i][0]), _mm512_mul_ps(s0, dx), f[i][0]);
            f[i][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[i][1]), _mm512_mul_ps(s1, dx), f[i][1]);
        }
        if (mins) {
            __m512 o0 = _mm512_load_ps(pn->o + s * NR), o1 = _mm512_load_ps(pn->o + s * NR + 16);
            UNROLL_MR for (int i = 0; i < MR; i++) {
                __m512 t = _mm512_set1_ps(cf[s * MR + i]);
                f[i][0] = _mm512_fmadd_ps(o0, t, f[i][0]);
                f[i][1] = _mm512_fmadd_ps(o1, t, f[i][1]);
            }
        }
    }
    __mmask16 m0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1);
    __mmask16 m1 = nr >= 32 ? 0xffff : nr <= 16 ? 0 : (__mmask16)((1u << (nr - 16)) - 1);
    UNROLL_MR for (int i = 0; i < MR; i++) {
        if (i >= mt)
            break;
        float *ct = c + i * ldc;
        if (add) {
            f[i][0] = _mm512_add_ps(f[i][0], _mm512_maskz_loadu_ps(m0, ct));
            f[i][1] = _mm512_add_ps(f[i][1], _mm512_maskz_loadu_ps(m1, ct + 16));
        }
        _mm512_mask_storeu_ps(ct, m0, f[i][0]);
        _mm512_mask_storeu_ps(ct + 16, m1, f[i][1]);
    }
}

/* The same with AVX2 (and AVX-512 without VNNI): 8 rows a vector, so the
 * panel goes in four passes of 8 rows x 4 tokens (16 registers).  u8 x s8
 * products by vpmaddubsw (pairs into int16: at most 2 x 63 x 127 for
 * Q4_0 and the K-quants, 2 x 128 x 127 for Q8_0's |w| with the sign moved
 * to the activation), then vpmaddwd by ones into int32.  The int8 rule
 * keeps |q| <= 127 (act_int8.h), which these bounds need.  The integers are
 * exact and the float steps those of the VNNI kernel: the same bits. */
AVX2 static INLINE void micro8(const char *tile, long k, const struct elm_gi8_panel *pn, const int sbw,
                               const bool mins, const bool sgn, float *c, long ldc, int mt,
                               int nr, bool add)
{
    const long nsb = k / (4 * sbw);
    const struct elm_gi8_atile at = elm_gi8_atile_at(tile, k, 4 * sbw);
    const int32_t *aq = at.q, *ci = at.ci;
    const float *ad = at.d, *cf = at.cf;
    const __m256i ones = _mm256_set1_epi16(1);
    for (int h = 0; h < NR / 8 && 8 * h < nr; h++) {
        __m256 f[MR];
        UNROLL_MR for (int i = 0; i < MR; i++)
            f[i] = _mm256_setzero_ps();
        for (long s = 0; s < nsb; s++) {
            __m256i acc[MR];
            UNROLL_MR for (int i = 0; i < MR; i++)
                acc[i] = mins ? _mm256_setzero_si256() : _mm256_set1_epi32(ci[s * MR + i]);
            const uint32_t *wq = pn->q + (size_t)s * (size_t)sbw * NR + 8 * h;
            const int32_t *aw = aq + (size_t)s * (size_t)sbw * MR;
            if (sgn) {
                _Pragma("GCC unroll 8") for (int g = 0; g < sbw; g++) {
                    __m256i w = _mm256_load_si256((const __m256i *)(const void *)(wq + g * NR));
                    __m256i wu = _mm256_abs_epi8(w);
                    UNROLL_MR for (int i = 0; i < MR; i++) {
                        __m256i a = _mm256_sign_epi8(_mm256_set1_epi32(aw[g * MR + i]), w);
                        acc[i] = _mm256_add_epi32(
                            acc[i], _mm256_madd_epi16(_mm256_maddubs_epi16(wu, a), ones));
                    }
                }
            } else {
                /* u <= 63: two words' int16 pair sums add without overflow
                 * (2 x 2 x 63 x 127 = 32004), one vpmaddwd for both */
                _Pragma("GCC unroll 8") for (int g = 0; g < sbw; g += 2) {
                    __m256i w0 = _mm256_load_si256((const __m256i *)(const void *)(wq + g * NR));
                    __m256i w1 =
                        _mm256_load_si256((const __m256i *)(const void *)(wq + (g + 1) * NR));
                    UNROLL_MR for (int i = 0; i < MR; i++) {
                        __m256i p = _mm256_add_epi16(
                            _mm256_maddubs_epi16(w0, _mm256_set1_epi32(aw[g * MR + i])),
                            _mm256_maddubs_epi16(w1, _mm256_set1_epi32(aw[(g + 1) * MR + i])));
                        acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(p, ones));
                    }
                }
            }
            __m256 sv = _mm256_loadu_ps(pn->s + s * NR + 8 * h);
            UNROLL_MR for (int i = 0; i < MR; i++)
                f[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[i]),
                                       _mm256_mul_ps(sv, _mm256_set1_ps(ad[s * MR + i])), f[i]);
            if (mins) {
                __m256 ov = _mm256_loadu_ps(pn->o + s * NR + 8 * h);
                UNROLL_MR for (int i = 0; i < MR; i++)
                    f[i] = _mm256_fmadd_ps(ov, _mm256_set1_ps(cf[s * MR + i]), f[i]);
            }
        }
        int left = nr - 8 * h;
        __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(left),
                                          _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        UNROLL_MR for (int i = 0; i < MR; i++) {
            if (i >= mt)
                break;
            float *ct = c + i * ldc + 8 * h;
            if (add)
                f[i] = _mm256_add_ps(f[i], _mm256_maskload_ps(ct, mask));
            _mm256_maskstore_ps(ct, mask, f[i]);
        }
    }
}

/* One copy of a kernel per constant combination (sub-block words, mins,
 * signed Q8_0), each compiled with its loops fully known. */
#define SPECIALIZE(name, attr, kernel, ...)                                                       \
    attr static void name(const char *tile, long k, const struct elm_gi8_panel *pn, float *c, long ldc,  \
                          int mt, int nr, bool add)                                               \
    {                                                                                             \
        kernel(tile, k, pn, __VA_ARGS__, c, ldc, mt, nr, add);                                    \
    }
SPECIALIZE(micro_bias32, VNNI, micro, 8, false)
SPECIALIZE(micro_mins32, VNNI, micro, 8, true)
SPECIALIZE(micro_bias16, VNNI, micro, 4, false)
SPECIALIZE(micro8_bias32, AVX2, micro8, 8, false, false)
SPECIALIZE(micro8_signed32, AVX2, micro8, 8, false, true)
SPECIALIZE(micro8_mins32, AVX2, micro8, 8, true, false)
SPECIALIZE(micro8_bias16, AVX2, micro8, 4, false, false)

typedef void (*micro_fn)(const char *tile, long k, const struct elm_gi8_panel *pn, float *c, long ldc,
                         int mt, int nr, bool add);

static micro_fn micro_for(enum elm_dtype dtype, const struct elm_gi8_kind *kd)
{
    if (vnni_kernel())
        return kd->sb == 16 ? micro_bias16 : kd->mins ? micro_mins32 : micro_bias32;
    if (dtype == ELM_DTYPE_Q8_0)
        return micro8_signed32;
    return kd->sb == 16 ? micro8_bias16 : kd->mins ? micro8_mins32 : micro8_bias32;
}

void elm_gemm_i8_rows(const void *apack, long m, const struct elm_matrix *w, long r0, long r1,
                      float *c, long ldc, bool accumulate, void *wp)
{
    struct elm_gi8_kind kd;
    if (!kind_of(w->dtype, &kd))
        return;
    long k = (long)w->cols;
    size_t tb = elm_gi8_tile_bytes(k, kd.sb);
    struct elm_gi8_panel pn = elm_gi8_panel_at(wp, k, kd.sb);
    micro_fn kern = micro_for(w->dtype, &kd);
    for (long n0 = r0; n0 < r1; n0 += NR) {
        int nr = r1 - n0 < NR ? (int)(r1 - n0) : NR;
        pack_w(w, &kd, n0, nr, &pn);
        for (long t0 = 0; t0 < m; t0 += MR) {
            int mt = m - t0 < MR ? (int)(m - t0) : MR;
            kern((const char *)apack + (size_t)(t0 / MR) * tb, k, &pn, c + t0 * ldc + n0, ldc,
                 mt, nr, accumulate);
        }
    }
}

static bool vnni_kernel(void)
{
    return elm_kernels_isa() == ELM_ISA_AVX512_VNNI;
}

const char *elm_gemm_i8_name(void)
{
    return vnni_kernel() ? "AVX-512 VNNI 4x32"
           : elm_gemm_i8_available(ELM_DTYPE_Q4_0, ELM_QA_BLOCK) ? "AVX2 4x8"
                                                                  : NULL;
}

/* The avx2 set, and the avx512 one without VNNI, take the AVX2 kernel. */
bool elm_gemm_i8_available(enum elm_dtype dtype, long k)
{
    struct elm_gi8_kind kd;
    return kind_of(dtype, &kd) && k > 0 && k % ELM_QA_BLOCK == 0 &&
           elm_isa_x86(elm_kernels_isa(), ELM_ISA_AVX2);
}

static int group_bytes(void)
{
    return 4;
}
#elif defined(__aarch64__) && defined(__GNUC__)
/* AArch64: smmla on the i8mm level, sdot by lane on the dotprod level
 * (arch/arm/gemm_int8_neon.c; the group widths: gemm_int8_tiles.h); plain
 * NEON widens the weights from I8_GEMM_MIN_M tokens, as the portable set
 * does. */
static bool vnni_kernel(void)
{
    return false;
}

static bool i8mm_kernel(void)
{
    return elm_kernels_isa() == ELM_ISA_NEON_I8MM;
}

static int group_bytes(void)
{
    return i8mm_kernel() ? 8 : 4;
}

bool elm_gemm_i8_available(enum elm_dtype dtype, long k)
{
    struct elm_gi8_kind kd;
    return kind_of(dtype, &kd) && k > 0 && k % ELM_QA_BLOCK == 0 &&
           elm_isa_arm(elm_kernels_isa(), ELM_ISA_NEON_DOTPROD) &&
           elm_gemm_i8_neon_built(i8mm_kernel());
}

const char *elm_gemm_i8_name(void)
{
    return !elm_gemm_i8_available(ELM_DTYPE_Q4_0, ELM_QA_BLOCK) ? NULL
           : i8mm_kernel() ? "NEON i8mm (smmla) 4x8"
                           : "NEON dotprod (sdot) 4x8";
}

void elm_gemm_i8_rows(const void *apack, long m, const struct elm_matrix *w, long r0, long r1,
                      float *c, long ldc, bool accumulate, void *wp)
{
    struct elm_gi8_kind kd;
    if (kind_of(w->dtype, &kd))
        elm_gemm_i8_rows_neon(apack, m, w, &kd, i8mm_kernel(), r0, r1, c, ldc, accumulate, wp);
}
#else
static bool vnni_kernel(void)
{
    return false;
}

static int group_bytes(void)
{
    return 4;
}

const char *elm_gemm_i8_name(void)
{
    return NULL;
}

void elm_gemm_i8_rows(const void *apack, long m, const struct elm_matrix *w, long r0, long r1,
                      float *c, long ldc, bool accumulate, void *wp)
{
    (void)apack, (void)m, (void)w, (void)r0, (void)r1, (void)c, (void)ldc, (void)accumulate,
        (void)wp;
}

bool elm_gemm_i8_available(enum elm_dtype dtype, long k)
{
    (void)dtype, (void)k;
    return false;
}
#endif
