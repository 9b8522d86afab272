/* kernels.c: dot products, conversions and matrix-vector rows, in portable C
 * and in AVX2/AVX-512 variants picked at run time. */
#include "config.h"

#include "engine/kernels.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_X86_KERNELS 1
#endif

#include "engine/model.h"
#include "engine/quant.h"

/* ------------------------------------------------------------- portable */

static inline float bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        float f = (float)man * 0x1p-24f; /* zero or subnormal: exact in f32 */
        memcpy(&bits, &f, sizeof bits);
        bits |= sign;
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Eight partial sums: a fixed order, and something gcc can vectorize. */
#define DOT_GENERIC(name, wtype, load)                                \
    static float name(const void *wv, const float *x, size_t n)       \
    {                                                                 \
        const wtype *w = wv;                                          \
        float acc[8] = {0};                                           \
        size_t i = 0;                                                 \
        for (; i + 8 <= n; i += 8)                                    \
            for (int k = 0; k < 8; k++)                               \
                acc[k] += load(w[i + k]) * x[i + k];                  \
        for (; i < n; i++)                                            \
            acc[0] += load(w[i]) * x[i];                              \
        return ((acc[0] + acc[4]) + (acc[1] + acc[5])) +              \
               ((acc[2] + acc[6]) + (acc[3] + acc[7]));               \
    }

static inline float load_f32(float v)
{
    return v;
}

DOT_GENERIC(dot_f32_generic, float, load_f32)
DOT_GENERIC(dot_bf16_generic, uint16_t, bf16_to_f32)
DOT_GENERIC(dot_f16_generic, uint16_t, f16_to_f32)

static void cvt_bf16_generic(const uint16_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = bf16_to_f32(src[i]);
}

static void cvt_f16_generic(const uint16_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = f16_to_f32(src[i]);
}

static void axpy_generic(float a, const float *x, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] += a * x[i];
}

/* ---------------------------------------------------------------- AVX2 */
#ifdef HAVE_X86_KERNELS
#define AVX2 __attribute__((target("avx2,fma,f16c")))

AVX2 static inline float hsum256(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

AVX2 static inline __m256 load8_f32(const void *p)
{
    return _mm256_loadu_ps(p);
}

AVX2 static inline __m256 load8_bf16(const void *p)
{
    __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

AVX2 static inline __m256 load8_f16(const void *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128(p));
}

#define DOT_AVX2(name, wtype, load8, load1)                                           \
    AVX2 static float name(const void *wv, const float *x, size_t n)                  \
    {                                                                                 \
        const wtype *w = wv;                                                          \
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;                   \
        size_t i = 0;                                                                 \
        for (; i + 32 <= n; i += 32) {                                                \
            a0 = _mm256_fmadd_ps(load8(w + i), _mm256_loadu_ps(x + i), a0);           \
            a1 = _mm256_fmadd_ps(load8(w + i + 8), _mm256_loadu_ps(x + i + 8), a1);   \
            a2 = _mm256_fmadd_ps(load8(w + i + 16), _mm256_loadu_ps(x + i + 16), a2); \
            a3 = _mm256_fmadd_ps(load8(w + i + 24), _mm256_loadu_ps(x + i + 24), a3); \
        }                                                                             \
        for (; i + 8 <= n; i += 8)                                                    \
            a0 = _mm256_fmadd_ps(load8(w + i), _mm256_loadu_ps(x + i), a0);           \
        float s = hsum256(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3))); \
        for (; i < n; i++)                                                            \
            s += load1(w[i]) * x[i];                                                  \
        return s;                                                                     \
    }

DOT_AVX2(dot_f32_avx2, float, load8_f32, load_f32)
DOT_AVX2(dot_bf16_avx2, uint16_t, load8_bf16, bf16_to_f32)
DOT_AVX2(dot_f16_avx2, uint16_t, load8_f16, f16_to_f32)

AVX2 static void cvt_bf16_avx2(const uint16_t *src, float *dst, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, load8_bf16(src + i));
    for (; i < n; i++)
        dst[i] = bf16_to_f32(src[i]);
}

AVX2 static void cvt_f16_avx2(const uint16_t *src, float *dst, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, load8_f16(src + i));
    for (; i < n; i++)
        dst[i] = f16_to_f32(src[i]);
}

AVX2 static void axpy_avx2(float a, const float *x, float *y, size_t n)
{
    __m256 va = _mm256_set1_ps(a);
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i),
                                                _mm256_loadu_ps(y + i)));
    for (; i < n; i++)
        y[i] += a * x[i];
}

/* -------------------------------------------------------------- AVX-512 */
#define AVX512 __attribute__((target("avx512f")))

AVX512 static inline __m512 load16_f32(const void *p)
{
    return _mm512_loadu_ps(p);
}

AVX512 static inline __m512 load16_bf16(const void *p)
{
    __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
}

AVX512 static inline __m512 load16_f16(const void *p)
{
    return _mm512_cvtph_ps(_mm256_loadu_si256(p));
}

#define DOT_AVX512(name, wtype, load16, load1)                                          \
    AVX512 static float name(const void *wv, const float *x, size_t n)                  \
    {                                                                                   \
        const wtype *w = wv;                                                            \
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;                     \
        size_t i = 0;                                                                   \
        for (; i + 64 <= n; i += 64) {                                                  \
            a0 = _mm512_fmadd_ps(load16(w + i), _mm512_loadu_ps(x + i), a0);            \
            a1 = _mm512_fmadd_ps(load16(w + i + 16), _mm512_loadu_ps(x + i + 16), a1);  \
            a2 = _mm512_fmadd_ps(load16(w + i + 32), _mm512_loadu_ps(x + i + 32), a2);  \
            a3 = _mm512_fmadd_ps(load16(w + i + 48), _mm512_loadu_ps(x + i + 48), a3);  \
        }                                                                               \
        for (; i + 16 <= n; i += 16)                                                    \
            a0 = _mm512_fmadd_ps(load16(w + i), _mm512_loadu_ps(x + i), a0);            \
        if (i < n) {                                                                    \
            /* masked tail: load1 of zeros would also work, this keeps one path */      \
            float wt[16] = {0}, xt[16] = {0};                                           \
            for (size_t k = 0; i + k < n; k++) {                                        \
                wt[k] = load1(w[i + k]);                                                \
                xt[k] = x[i + k];                                                       \
            }                                                                           \
            a1 = _mm512_fmadd_ps(_mm512_loadu_ps(wt), _mm512_loadu_ps(xt), a1);         \
        }                                                                               \
        return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1),                \
                                                  _mm512_add_ps(a2, a3)));              \
    }

DOT_AVX512(dot_f32_avx512, float, load16_f32, load_f32)
DOT_AVX512(dot_bf16_avx512, uint16_t, load16_bf16, bf16_to_f32)
DOT_AVX512(dot_f16_avx512, uint16_t, load16_f16, f16_to_f32)

AVX512 static void cvt_bf16_avx512(const uint16_t *src, float *dst, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, load16_bf16(src + i));
    for (; i < n; i++)
        dst[i] = bf16_to_f32(src[i]);
}

AVX512 static void cvt_f16_avx512(const uint16_t *src, float *dst, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, load16_f16(src + i));
    for (; i < n; i++)
        dst[i] = f16_to_f32(src[i]);
}
#endif /* HAVE_X86_KERNELS */

/* ------------------------------------------------------------- dispatch */

typedef float (*dot_fn)(const void *w, const float *x, size_t n);
typedef void (*cvt_fn)(const uint16_t *src, float *dst, size_t n);

static struct {
    const char *name;
    dot_fn dot[3]; /* by elm_dtype: F32, F16, BF16 */
    cvt_fn cvt_f16, cvt_bf16;
    void (*axpy)(float a, const float *x, float *y, size_t n);
} k = {
    "generic",
    {dot_f32_generic, dot_f16_generic, dot_bf16_generic},
    cvt_f16_generic,
    cvt_bf16_generic,
    axpy_generic,
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool force_generic;

static void pick(void)
{
#ifdef HAVE_X86_KERNELS
    if (force_generic)
        return;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        k.name = "avx512";
        k.dot[ELM_DTYPE_F32] = dot_f32_avx512;
        k.dot[ELM_DTYPE_F16] = dot_f16_avx512;
        k.dot[ELM_DTYPE_BF16] = dot_bf16_avx512;
        k.cvt_f16 = cvt_f16_avx512;
        k.cvt_bf16 = cvt_bf16_avx512;
        k.axpy = axpy_avx2;
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               __builtin_cpu_supports("f16c")) {
        k.name = "avx2";
        k.dot[ELM_DTYPE_F32] = dot_f32_avx2;
        k.dot[ELM_DTYPE_F16] = dot_f16_avx2;
        k.dot[ELM_DTYPE_BF16] = dot_bf16_avx2;
        k.cvt_f16 = cvt_f16_avx2;
        k.cvt_bf16 = cvt_bf16_avx2;
        k.axpy = axpy_avx2;
    }
#endif
}

void elm_kernels_init(void)
{
    pthread_once(&once, pick);
}

void elm_kernels_force_generic(void)
{
    force_generic = true;
}

const char *elm_kernels_name(void)
{
    elm_kernels_init();
    return k.name;
}

void elm_to_f32(const void *src, enum elm_dtype dtype, float *dst, size_t n)
{
    switch (dtype) {
    case ELM_DTYPE_F32: memcpy(dst, src, n * sizeof *dst); break;
    case ELM_DTYPE_F16: k.cvt_f16(src, dst, n); break;
    case ELM_DTYPE_BF16: k.cvt_bf16(src, dst, n); break;
    default: elm_dequantize(src, dtype, dst, (int64_t)n); break; /* block types: quant.c */
    }
}

float elm_dot_f32(const float *a, const float *b, size_t n)
{
    return k.dot[ELM_DTYPE_F32](a, b, n);
}

void elm_axpy_f32(float a, const float *x, float *y, size_t n)
{
    k.axpy(a, x, y, n);
}

void elm_matvec_rows(const struct elm_matrix *w, const float *x, float *y, int64_t r0, int64_t r1,
                     bool accumulate)
{
    if (elm_dtype_is_quant(w->dtype)) { /* GGUF block types: quant.c */
        elm_quant_matvec_rows(w->data, w->dtype, w->cols, x, y, r0, r1, accumulate);
        return;
    }
    dot_fn dot = k.dot[w->dtype];
    size_t cols = (size_t)w->cols, es = elm_dtype_size(w->dtype);
    const char *base = w->data;
    for (int64_t r = r0; r < r1; r++) {
        float v = dot(base + (size_t)r * cols * es, x, cols);
        if (accumulate)
            y[r - r0] += v;
        else
            y[r - r0] = v;
    }
}
