/* kernels_quant.c: AVX-512 row kernels and widening for the Q8_0 and Q4_0
 * block types (decode at the memory bandwidth; prefill tiles).  quant.c
 * (the GGUF side) keeps the reference and portable versions of these and
 * every other block type; the kernels here only run with the avx512 set and
 * fall back to quant.c otherwise.
 *
 * Activations stay f32 (no int8 rounding of x): per block, the 32 weights
 * widen to f32, one dot with x, then times the block's scale, so results
 * match quant.c's up to the order of the additions. */
#include "config.h"

#include <string.h>

#include "engine/kernels.h"
#include "engine/model.h"
#include "engine/quant.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define INLINE __attribute__((always_inline)) inline

AVX512 static INLINE float half(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

/* The 32 weights of a block as two vectors of 16 floats (unscaled). */
AVX512 static INLINE void q8_0_block(const uint8_t *b, __m512 *lo, __m512 *hi)
{
    *lo = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(b + 2))));
    *hi = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(b + 18))));
}

/* Nibbles to floats through a 16-entry table (vpermps reads only the low
 * four bits of each index): no integer subtract or conversion. */
AVX512 static INLINE void q4_0_block(const uint8_t *b, __m512 *lo, __m512 *hi)
{
    const __m512 table = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
    __m512i z = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(b + 2)));
    *lo = _mm512_permutexvar_ps(z, table);
    *hi = _mm512_permutexvar_ps(_mm512_srli_epi32(z, 4), table);
}

/* Rows times one vector, a row at a time; two accumulators per row (even
 * and odd blocks), a fixed order for each row whatever the row range. */
#define QROWS(name, block, BYTES)                                                            \
    AVX512 static void name(const uint8_t *w, size_t ldw, long nb, const float *x, float *y,  \
                            long nrows, bool acc)                                            \
    {                                                                                        \
        for (long r = 0; r < nrows; r++, w += ldw) {                                         \
            __m512 a0 = _mm512_setzero_ps(), a1 = a0;                                        \
            const uint8_t *b = w;                                                            \
            long i = 0;                                                                      \
            for (; i + 2 <= nb; i += 2, b += 2 * BYTES) {                                    \
                _mm_prefetch((const char *)b + 1024, _MM_HINT_T0);                           \
                __m512 l0, h0, l1, h1;                                                       \
                block(b, &l0, &h0);                                                          \
                block(b + BYTES, &l1, &h1);                                                  \
                const float *xb = x + 32 * i;                                                \
                __m512 t0 = _mm512_fmadd_ps(h0, _mm512_loadu_ps(xb + 16),                    \
                                            _mm512_mul_ps(l0, _mm512_loadu_ps(xb)));         \
                __m512 t1 = _mm512_fmadd_ps(h1, _mm512_loadu_ps(xb + 48),                    \
                                            _mm512_mul_ps(l1, _mm512_loadu_ps(xb + 32)));    \
                a0 = _mm512_fmadd_ps(_mm512_set1_ps(half(b)), t0, a0);                       \
                a1 = _mm512_fmadd_ps(_mm512_set1_ps(half(b + BYTES)), t1, a1);               \
            }                                                                                \
            if (i < nb) {                                                                    \
                __m512 l0, h0;                                                               \
                block(b, &l0, &h0);                                                          \
                const float *xb = x + 32 * i;                                                \
                __m512 t0 = _mm512_fmadd_ps(h0, _mm512_loadu_ps(xb + 16),                    \
                                            _mm512_mul_ps(l0, _mm512_loadu_ps(xb)));         \
                a0 = _mm512_fmadd_ps(_mm512_set1_ps(half(b)), t0, a0);                       \
            }                                                                                \
            float s = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));                           \
            y[r] = acc ? y[r] + s : s;                                                       \
        }                                                                                    \
    }

QROWS(rows_q8_0, q8_0_block, ELM_Q8_0_BYTES)
QROWS(rows_q4_0, q4_0_block, ELM_Q4_0_BYTES)

#define QDEQ(name, block, BYTES)                                                             \
    AVX512 static void name(const uint8_t *w, float *dst, long nb)                           \
    {                                                                                        \
        for (long i = 0; i < nb; i++, w += BYTES, dst += 32) {                               \
            __m512 lo, hi, d = _mm512_set1_ps(half(w));                                      \
            block(w, &lo, &hi);                                                              \
            _mm512_storeu_ps(dst, _mm512_mul_ps(lo, d));                                     \
            _mm512_storeu_ps(dst + 16, _mm512_mul_ps(hi, d));                                \
        }                                                                                    \
    }

QDEQ(deq_q8_0, q8_0_block, ELM_Q8_0_BYTES)
QDEQ(deq_q4_0, q4_0_block, ELM_Q4_0_BYTES)

static bool usable(enum elm_dtype dtype)
{
    return (dtype == ELM_DTYPE_Q8_0 || dtype == ELM_DTYPE_Q4_0) &&
           strcmp(elm_kernels_name(), "avx512") == 0;
}

bool elm_quant_fast_rows(const struct elm_matrix *w, const float *x, long ldx, int m, float *y,
                         long ldy, int64_t r0, int64_t r1, bool accumulate)
{
    if (!usable(w->dtype) || w->cols % 32 != 0)
        return false;
    size_t ldw = elm_row_size(w->dtype, w->cols);
    const uint8_t *base = (const uint8_t *)w->data + (size_t)r0 * ldw;
    long nb = (long)(w->cols / 32), nrows = (long)(r1 - r0);
    for (int t = 0; t < m; t++) {
        if (w->dtype == ELM_DTYPE_Q8_0)
            rows_q8_0(base, ldw, nb, x + t * ldx, y + t * ldy, nrows, accumulate);
        else
            rows_q4_0(base, ldw, nb, x + t * ldx, y + t * ldy, nrows, accumulate);
    }
    return true;
}

bool elm_quant_fast_to_f32(const void *src, enum elm_dtype dtype, float *dst, size_t n)
{
    if (!usable(dtype) || n % 32 != 0)
        return false;
    if (dtype == ELM_DTYPE_Q8_0)
        deq_q8_0(src, dst, (long)(n / 32));
    else
        deq_q4_0(src, dst, (long)(n / 32));
    return true;
}

#else /* no x86 SIMD: quant.c does everything */

bool elm_quant_fast_rows(const struct elm_matrix *w, const float *x, long ldx, int m, float *y,
                         long ldy, int64_t r0, int64_t r1, bool accumulate)
{
    (void)w, (void)x, (void)ldx, (void)m, (void)y, (void)ldy, (void)r0, (void)r1,
        (void)accumulate;
    return false;
}

bool elm_quant_fast_to_f32(const void *src, enum elm_dtype dtype, float *dst, size_t n)
{
    (void)src, (void)dtype, (void)dst, (void)n;
    return false;
}
#endif
