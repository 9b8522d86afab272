/* gemm_bf16_neon.c: C (+)= A W^T for BF16 weights with bfmmla
 * (gemm_bf16_neon.h), a micro-kernel of 8 tokens x 8 weight rows (16
 * accumulators of 2 x 2 sums).
 *
 * Layout: in groups of 4 columns.  A is rounded to bf16 once per call into
 * panels of 8 tokens, [group][token pair][2 tokens][4]: one 16-byte load is
 * the 2 x 4 tile bfmmla takes.  Each thread packs 32 weight rows at a time
 * (bf16 already: plain 8-byte copies, no conversion) into
 * [group][row pair][2 rows][4], KC columns a panel, and passes every
 * token panel over it, the four 8-row micro-tiles in turn (A's 8 KiB stay in
 * L1 across them).  Every output's summation order depends only on K and
 * KC, not on threads or row ranges; a K not a multiple of 4 gets zeros in
 * its last group.
 *
 * FEAT_BF16 also has bfdot (a token's 2 bf16 products against each of 4
 * rows); every CPU with it has bfmmla, which does twice the products per
 * instruction, so only bfmmla is used.  (The decode kernels keep f32
 * activations: f32_neon.c widens bf16 weights by a shift, exactly.) */
#include "config.h"

#include "engine/kernels/arch/arm/gemm_bf16_neon.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/test_hooks.h"
#include "engine/kernels/blocks.h"
#include "engine/kernels/cpu.h"
#include "engine/kernels/kernels.h"

#define MR ELM_GBF16N_MR
#define NR ELM_GBF16N_NR
#define GROUPS_KC (ELM_GBF16N_KC / 4)

static long groups_of(long k)
{
    return (k + 3) / 4;
}

size_t elm_gemm_bf16_neon_apack_halves(long m, long k)
{
    return (size_t)((m + MR - 1) / MR) * MR * (size_t)groups_of(k) * 4;
}

#if defined(__aarch64__) && defined(__GNUC__)
#include <arm_neon.h>
/* Clang before 16 declares the bf16 types and intrinsics only when the
 * whole file targets FEAT_BF16 (as int8_neon.h's note on sdot says). */
#if defined(__clang__) && __clang_major__ < 16 && !defined(__ARM_FEATURE_BF16_VECTOR_ARITHMETIC)
#define HAVE_BFMMLA 0
#else
#define HAVE_BFMMLA 1
#endif
#else
#define HAVE_BFMMLA 0
#endif

#if HAVE_BFMMLA
#if defined(__clang__)
#define BF16 __attribute__((target("bf16")))
#else
#define BF16 __attribute__((target("arch=armv8.2-a+bf16")))
#endif
#define INLINE __attribute__((always_inline)) inline

/* Four f32 rounded to bf16 as elm_f32_to_bf16 does: to nearest, ties to
 * even; a NaN stays a (quiet) NaN. */
static INLINE uint16x4_t to_bf16x4(float32x4_t v)
{
    uint32x4_t u = vreinterpretq_u32_f32(v);
    uint32x4_t lsb = vandq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(1));
    uint32x4_t r = vaddq_u32(u, vaddq_u32(vdupq_n_u32(0x7fffu), lsb));
    uint32x4_t nan = vcgtq_u32(vandq_u32(u, vdupq_n_u32(0x7fffffffu)), vdupq_n_u32(0x7f800000u));
    r = vbslq_u32(nan, vorrq_u32(u, vdupq_n_u32(0x400000u)), r);
    return vshrn_n_u32(r, 16);
}
#endif

void elm_gemm_bf16_neon_pack_a(const float *a, long lda, long m, long k, long t0, uint16_t *ap)
{
    long kq = groups_of(k);
    uint16_t *panel = ap + (size_t)t0 * (size_t)kq * 4;
    for (int t = 0; t < MR; t++) {
        const float *row = t0 + t < m ? a + (t0 + t) * lda : NULL;
        /* token t's 4 columns of group g go to g * 32 + (t / 2) * 8 + (t % 2) * 4 */
        uint16_t *dst = panel + (t / 2) * 8 + (t % 2) * 4;
        long g = 0;
#if HAVE_BFMMLA
        for (; row && 4 * g + 4 <= k; g++)
            vst1_u16(dst + g * 32, to_bf16x4(vld1q_f32(row + 4 * g)));
#endif
        for (; g < kq; g++)
            for (int i = 0; i < 4; i++)
                dst[g * 32 + i] = row && 4 * g + i < k ? elm_f32_to_bf16(row[4 * g + i]) : 0;
    }
}

#if HAVE_BFMMLA
/* Rows [r0, r0 + nr) of W (fewer than 32: zeros), groups [g0, g0 + ng),
 * into wp[group][16 row pairs][2][4]. */
static void pack_w(const struct elm_matrix *w, long r0, long nr, long g0, long ng, uint16_t *wp)
{
    long k = (long)w->cols;
    size_t row_bytes = elm_row_size(w->dtype, w->cols);
    for (int r = 0; r < NR; r++) {
        const char *row = r < nr ? (const char *)w->data + (size_t)(r0 + r) * row_bytes : NULL;
        uint16_t *dst = wp + (r / 2) * 8 + (r % 2) * 4;
        for (long g = 0; g < ng; g++) {
            long col = 4 * (g0 + g), have = row ? (k - col < 4 ? k - col : 4) : 0;
            memset(dst + g * NR * 4, 0, 8);
            if (have > 0)
                memcpy(dst + g * NR * 4, row + (size_t)col * 2, (size_t)have * 2);
        }
    }
}

/* C[t][r] (+)= the 8 x 8 tile of sums: acc[i][j] holds tokens 2i, 2i + 1 by
 * rows 2j, 2j + 1 as {(2i, 2j), (2i, 2j + 1), (2i + 1, 2j), (2i + 1, 2j + 1)}. */
static INLINE void store8x8(float32x4_t acc[4][4], float *c, long ldc, int mt, int nr, bool add)
{
    float out[MR][8];
    for (int i = 0; i < 4; i++)
        for (int h = 0; h < 2; h++) {
            float32x4_t lo = h ? vcombine_f32(vget_high_f32(acc[i][0]), vget_high_f32(acc[i][1]))
                               : vcombine_f32(vget_low_f32(acc[i][0]), vget_low_f32(acc[i][1]));
            float32x4_t hi = h ? vcombine_f32(vget_high_f32(acc[i][2]), vget_high_f32(acc[i][3]))
                               : vcombine_f32(vget_low_f32(acc[i][2]), vget_low_f32(acc[i][3]));
            vst1q_f32(out[2 * i + h], lo);
            vst1q_f32(out[2 * i + h] + 4, hi);
        }
    for (int t = 0; t < mt; t++) {
        float *ct = c + t * ldc;
        if (nr == 8) {
            float32x4_t v0 = vld1q_f32(out[t]), v1 = vld1q_f32(out[t] + 4);
            if (add) {
                v0 = vaddq_f32(vld1q_f32(ct), v0);
                v1 = vaddq_f32(vld1q_f32(ct + 4), v1);
            }
            vst1q_f32(ct, v0);
            vst1q_f32(ct + 4, v1);
        } else {
            for (int r = 0; r < nr; r++)
                ct[r] = add ? ct[r] + out[t][r] : out[t][r];
        }
    }
}

/* 8 tokens (mt of them real) x 8 rows (nr real) over ng groups: ap the
 * token panel at the first group, wp the micro-tile's first row pair. */
BF16 static void micro(const uint16_t *ap, const uint16_t *wp, long ng, float *c, long ldc, int mt,
                       int nr, bool add)
{
    float32x4_t acc[4][4];
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) acc[i][j] = vdupq_n_f32(0.0f);
    for (long g = 0; g < ng; g++, ap += 32, wp += NR * 4) {
        bfloat16x8_t av[4], wv[4];
        _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
            av[i] = vreinterpretq_bf16_u16(vld1q_u16(ap + 8 * i));
            wv[i] = vreinterpretq_bf16_u16(vld1q_u16(wp + 8 * i));
        }
        _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
            _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)
                acc[i][j] = vbfmmlaq_f32(acc[i][j], av[i], wv[j]);
    }
    store8x8(acc, c, ldc, mt, nr, add);
}

void elm_gemm_bf16_neon_rows(const uint16_t *apack, long m, const struct elm_matrix *w, long r0,
                             long r1, float *c, long ldc, bool accumulate, uint16_t *wp)
{
    long kq = groups_of((long)w->cols);
    for (long n0 = r0; n0 < r1; n0 += NR) {
        int nr = r1 - n0 < NR ? (int)(r1 - n0) : NR;
        for (long g0 = 0; g0 < kq; g0 += GROUPS_KC) {
            long ng = kq - g0 < GROUPS_KC ? kq - g0 : GROUPS_KC;
            pack_w(w, n0, nr, g0, ng, wp);
            for (long t0 = 0; t0 < m; t0 += MR) {
                int mt = m - t0 < MR ? (int)(m - t0) : MR;
                const uint16_t *ap = apack + (size_t)t0 * (size_t)kq * 4 + (size_t)g0 * 32;
                for (int h = 0; 8 * h < nr; h++)
                    micro(ap, wp + 32 * h, ng, c + t0 * ldc + n0 + 8 * h, ldc, mt,
                          nr - 8 * h < 8 ? nr - 8 * h : 8, accumulate || g0 > 0);
            }
        }
    }
}

static bool turned_off;

/* A test may turn it off (tests/lib/test-hooks.c: ELM_GEMM_BF16=off), as
 * on x86; the shipped binary reads no variable for it. */
static void read_env(void)
{
    struct elm_test_hooks hooks;
    elm_test_hooks(&hooks);
    turned_off = hooks.gemm_bf16 < 0;
}

static pthread_once_t env_once = PTHREAD_ONCE_INIT;

/* On wherever FEAT_BF16 is (not measured against widening: no ARM hardware
 * here); a test's ELM_GEMM_BF16=off widens instead. */
bool elm_gemm_bf16_neon_available(void)
{
    if (!elm_cpu()->arm_bf16 || !elm_isa_arm(elm_kernels_isa(), ELM_ISA_NEON))
        return false;
    pthread_once(&env_once, read_env);
    return !turned_off;
}
#else
void elm_gemm_bf16_neon_rows(const uint16_t *apack, long m, const struct elm_matrix *w, long r0,
                             long r1, float *c, long ldc, bool accumulate, uint16_t *wp)
{
    (void)apack, (void)m, (void)w, (void)r0, (void)r1, (void)c, (void)ldc, (void)accumulate,
        (void)wp;
}

bool elm_gemm_bf16_neon_available(void)
{
    return false;
}
#endif
