/* kernels.h: the inner loops of the forward pass (engine-internal).
 *
 * Each kernel has a portable C version and, chosen once at run time with
 * __builtin_cpu_supports, AVX2+FMA+F16C and AVX-512 versions.  All read
 * weights as stored (F32, BF16, F16) and compute in f32.
 */
#ifndef ELMCHAT_ENGINE_KERNELS_H
#define ELMCHAT_ENGINE_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/elm.h"

struct elm_matrix;

/* Pick the kernels for this CPU; idempotent, thread-safe. */
void elm_kernels_init(void);
/* "avx512", "avx2" or "generic". */
const char *elm_kernels_name(void);
/* Force the portable kernels (tests), before any model is loaded. */
void elm_kernels_force_generic(void);

/* Widen n elements of dtype to f32 (exact). */
void elm_to_f32(const void *src, enum elm_dtype dtype, float *dst, size_t n);
/* sum a[i] * b[i] over f32 */
float elm_dot_f32(const float *a, const float *b, size_t n);
/* y[i] += a * x[i] */
void elm_axpy_f32(float a, const float *x, float *y, size_t n);
/* y[r - r0] (+)= dot(W[r, :], x) for rows r in [r0, r1). */
void elm_matvec_rows(const struct elm_matrix *w, const float *x, float *y, int64_t r0, int64_t r1,
                     bool accumulate);

#endif
